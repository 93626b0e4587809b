//! The cost the sandbox adds to starting a command: `bash -c true` started and waited for, with
//! and without the sandbox, runs interleaved. Run with `cargo bench -p tool-sandbox --bench spawn`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tool_sandbox::{Network, NetworkNamespace, Probe, Sandbox, SandboxPolicy};

const RUNS: usize = 300;

fn once(sandbox: Option<&Sandbox>, cwd: &Path) -> Duration {
    let started = Instant::now();
    let mut command = Command::new("bash");
    command.arg("-c").arg("true").current_dir(cwd);
    if let Some(sandbox) = sandbox {
        sandbox.apply(&mut command, cwd).expect("the sandbox applies");
    }
    let status = command.status().expect("bash runs");
    assert!(status.success());
    started.elapsed()
}

/// As [`once`], holding the placeholders of the protected names absent at `cwd` while the command
/// runs (as `bash` does), removed after it.
fn once_holding(sandbox: &Sandbox, cwd: &Path) -> Duration {
    let started = Instant::now();
    let mut command = Command::new("bash");
    command.arg("-c").arg("true").current_dir(cwd);
    let held = sandbox.apply_holding(&mut command, cwd).expect("the sandbox applies");
    let status = command.status().expect("bash runs");
    drop(held);
    assert!(status.success());
    started.elapsed()
}

/// What a command with a proxy pays: a network namespace with a listener made for it, its
/// sandbox built for the listener's port and joined to the namespace, then `bash -c true`.
fn proxied(root: &Path, namespace: bool) -> (Duration, Duration) {
    let started = Instant::now();
    let (namespace, port) = if namespace {
        let (namespace, listener) = NetworkNamespace::with_listener().expect("a network namespace");
        let port = listener.local_addr().unwrap().port();
        (Some((namespace, listener)), port)
    } else {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        (None, listener.local_addr().unwrap().port())
    };
    let made = started.elapsed();
    let policy = SandboxPolicy { protected: Vec::new(), ..SandboxPolicy::workspace_write(root) }
        .with_network(Network::Proxy { port });
    let mut sandbox = Sandbox::new(policy).expect("the kernel has the sandbox's layers");
    if let Some((namespace, _listener)) = namespace {
        sandbox = sandbox.in_network_namespace(namespace);
    }
    once(Some(&sandbox), root);
    (made, started.elapsed())
}

/// CPU time this process and its waited-for children used so far (user and system).
fn cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    let used = |who| {
        let usage = getrusage(who).expect("getrusage");
        let time = |t: nix::sys::time::TimeVal| {
            Duration::new(t.tv_sec().unsigned_abs(), u32::try_from(t.tv_usec()).unwrap_or(0) * 1000)
        };
        time(usage.user_time()) + time(usage.system_time())
    };
    used(UsageWho::RUSAGE_SELF) + used(UsageWho::RUSAGE_CHILDREN)
}

/// The CPU time `run` takes, in this process and the children it waits for.
fn cpu_of(run: impl FnOnce()) -> Duration {
    let before = cpu();
    run();
    cpu().saturating_sub(before)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let root = std::env::temp_dir().join(format!("tool-sandbox-bench-{}", std::process::id()));
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "").unwrap();
    let root = root.canonicalize().unwrap();
    let prepared = Instant::now();
    let sandbox =
        Sandbox::new(SandboxPolicy::workspace_write(&root)).expect("the kernel has the sandbox's layers");
    let prepare = prepared.elapsed();
    let without_mounts =
        Sandbox::new(SandboxPolicy { protected: Vec::new(), ..SandboxPolicy::workspace_write(&root) })
            .expect("the kernel has the sandbox's layers");
    // The same, where no network namespace can be made (the network is off by seccomp alone).
    let no_namespace = Probe { network_namespace: false, ..Probe::get() };
    let without_namespace = Sandbox::with_probe(
        SandboxPolicy { protected: Vec::new(), ..SandboxPolicy::workspace_write(&root) },
        no_namespace,
    )
    .expect("the kernel has the sandbox's layers");
    // With what the settings keep from reading: a directory outside with one directory read
    // back in it, a directory and a file inside the workspace.
    let outside = root.with_extension("home");
    std::fs::create_dir_all(outside.join("src")).unwrap();
    std::fs::create_dir_all(root.join("private")).unwrap();
    std::fs::write(root.join(".env"), "KEY=1").unwrap();
    let unreadable = Sandbox::new(
        SandboxPolicy::workspace_write(&root)
            .with_unreadable(&outside)
            .with_readable(outside.join("src"))
            .with_unreadable(root.join("private"))
            .with_unreadable(root.join(".env")),
    )
    .expect("the kernel has the sandbox's layers");
    let (mut hidden, mut cpu_on, mut cpu_hidden) = (Vec::new(), Vec::new(), Vec::new());
    let (mut holding, mut cpu_holding) = (Vec::new(), Vec::new());
    let namespaces = Probe::get().network_namespace;
    let (mut off, mut on, mut no_mounts, mut no_netns) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut make, mut proxy, mut proxy_bare) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..10 {
        once(None, &root);
        once(Some(&sandbox), &root);
    }
    // As a workspace's sandbox has it: the session's temporary directory, made once.
    let temp = root.join(".tmp-session");
    std::fs::create_dir_all(&temp).unwrap();
    // The CPU a command costs with every layer the `tools` binary uses by default: the protected
    // paths' mounts, and the egress proxy's port in a network namespace of its own, made ahead
    // (as `bash` keeps one ready) or made for it.
    let (mut cpu_off, mut cpu_cli, mut cpu_cli_made) = (Vec::new(), Vec::new(), Vec::new());
    // A namespace with the proxy's listener, and the sandbox of a command using that proxy.
    let cli = || {
        let (namespace, listener) = NetworkNamespace::with_listener().expect("a network namespace");
        let port = listener.local_addr().unwrap().port();
        let policy =
            SandboxPolicy::workspace_write(&root).with_temp_dir(&temp).with_network(Network::Proxy { port });
        let sandbox = Sandbox::new(policy)
            .expect("the kernel has the sandbox's layers")
            .in_network_namespace(namespace);
        (sandbox, listener)
    };
    if namespaces {
        for _ in 0..RUNS {
            cpu_off.push(cpu_of(|| {
                once(None, &root);
            }));
            let made = cli();
            cpu_cli.push(cpu_of(|| {
                once(Some(&made.0), &root);
            }));
            drop(made);
            cpu_cli_made.push(cpu_of(|| {
                let made = cli();
                once(Some(&made.0), &root);
            }));
        }
    }
    for _ in 0..RUNS {
        off.push(once(None, &root));
        on.push(once(Some(&sandbox), &root));
        no_mounts.push(once(Some(&without_mounts), &root));
        no_netns.push(once(Some(&without_namespace), &root));
        hidden.push(once(Some(&unreadable), &root));
        cpu_on.push(cpu_of(|| {
            once(Some(&sandbox), &root);
        }));
        cpu_hidden.push(cpu_of(|| {
            once(Some(&unreadable), &root);
        }));
        holding.push(once_holding(&sandbox, &root));
        cpu_holding.push(cpu_of(|| {
            once_holding(&sandbox, &root);
        }));
        proxy_bare.push(proxied(&root, false).1);
        if namespaces {
            let (made, total) = proxied(&root, true);
            make.push(made);
            proxy.push(total);
        }
    }
    let (off, on, no_mounts, no_netns) = (median(off), median(on), median(no_mounts), median(no_netns));
    println!("{}", sandbox.report());
    println!("preparing the sandbox once:                  {:>8.3} ms", prepare.as_secs_f64() * 1e3);
    println!("bash -c true, unconfined (median of {RUNS}):     {:>8.3} ms", off.as_secs_f64() * 1e3);
    println!("bash -c true, sandboxed (median of {RUNS}):      {:>8.3} ms", on.as_secs_f64() * 1e3);
    println!("bash -c true, sandboxed without mounts:      {:>8.3} ms", no_mounts.as_secs_f64() * 1e3);
    println!("bash -c true, without the network namespace: {:>8.3} ms", no_netns.as_secs_f64() * 1e3);
    println!(
        "added: {:.3} ms (with the read-only mounts), {:.3} ms (without mounts), {:.3} ms (Landlock and seccomp alone)",
        (on.as_secs_f64() - off.as_secs_f64()) * 1e3,
        (no_mounts.as_secs_f64() - off.as_secs_f64()) * 1e3,
        (no_netns.as_secs_f64() - off.as_secs_f64()) * 1e3
    );
    let (hidden, cpu_on, cpu_hidden) = (median(hidden), median(cpu_on), median(cpu_hidden));
    println!(
        "bash -c true, sandboxed, 3 paths unreadable (1 read back): {:>8.3} ms (added {:.3} ms; CPU {:.3} ms \
         against {:.3} ms)",
        hidden.as_secs_f64() * 1e3,
        (hidden.as_secs_f64() - on.as_secs_f64()) * 1e3,
        cpu_hidden.as_secs_f64() * 1e3,
        cpu_on.as_secs_f64() * 1e3
    );
    let absent = tool_sandbox::PLACEHOLDERS.iter().filter(|name| !root.join(name).exists()).count();
    let (holding, cpu_holding) = (median(holding), median(cpu_holding));
    println!(
        "bash -c true, sandboxed, {absent} placeholders held: {:>8.3} ms (added {:.3} ms; CPU {:.3} ms against \
         {:.3} ms)",
        holding.as_secs_f64() * 1e3,
        (holding.as_secs_f64() - on.as_secs_f64()) * 1e3,
        cpu_holding.as_secs_f64() * 1e3,
        cpu_on.as_secs_f64() * 1e3
    );
    let _ = std::fs::remove_dir_all(&outside);
    let proxy_bare = median(proxy_bare);
    println!(
        "bash -c true with a proxy's port, the sandbox built (no namespace): {:>8.3} ms (added {:.3} ms)",
        proxy_bare.as_secs_f64() * 1e3,
        (proxy_bare.as_secs_f64() - off.as_secs_f64()) * 1e3
    );
    if namespaces {
        let (make, proxy) = (median(make), median(proxy));
        println!("a network namespace with a listener, made:   {:>8.3} ms", make.as_secs_f64() * 1e3);
        println!(
            "bash -c true with a proxy's namespace made, the sandbox built and joined: {:>8.3} ms (added {:.3} ms)",
            proxy.as_secs_f64() * 1e3,
            (proxy.as_secs_f64() - off.as_secs_f64()) * 1e3
        );
    }
    // Building the sandbox for a proxy's port, as a command with the proxy does.
    let building: Vec<Duration> = (0..RUNS)
        .map(|_| {
            cpu_of(|| {
                let policy = SandboxPolicy::workspace_write(&root)
                    .with_temp_dir(&temp)
                    .with_network(Network::Proxy { port: 1 });
                drop(Sandbox::new(policy).expect("the kernel has the sandbox's layers"));
            })
        })
        .collect();
    println!(
        "CPU of building a sandbox for a proxy's port:  {:>8.3} ms",
        median(building).as_secs_f64() * 1e3
    );
    if namespaces {
        let (off, cli, made) = (median(cpu_off), median(cpu_cli), median(cpu_cli_made));
        println!("CPU of bash -c true, unconfined (median of {RUNS}): {:>8.3} ms", off.as_secs_f64() * 1e3);
        println!(
            "CPU with every layer of the CLI, namespace made ahead: {:>8.3} ms (added {:.3} ms)",
            cli.as_secs_f64() * 1e3,
            (cli.as_secs_f64() - off.as_secs_f64()) * 1e3
        );
        println!(
            "CPU with every layer of the CLI, namespace and sandbox made for it: {:>8.3} ms (added {:.3} ms)",
            made.as_secs_f64() * 1e3,
            (made.as_secs_f64() - off.as_secs_f64()) * 1e3
        );
    }
    let _ = std::fs::remove_dir_all(&root);
    below_the_top();
}

/// The look for protected names below each root's top, on a real tree (`SPAWN_TREE`, else this
/// repository, its build directory included): the CPU of planning a command's mounts
/// (`Sandbox::apply`, no process started) looking three levels down (the default) and at the
/// top alone, interleaved; the first look lists the tree, the later ones find it unchanged.
fn below_the_top() {
    let tree = std::env::var_os("SPAWN_TREE").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the repository").to_path_buf(),
        std::path::PathBuf::from,
    );
    let sandbox = |depth| {
        let policy = SandboxPolicy { protected_depth: depth, ..SandboxPolicy::workspace_write(&tree) };
        Sandbox::new(policy).expect("the kernel has the sandbox's layers")
    };
    let (deep, top) = (sandbox(3), sandbox(1));
    let plan = |sandbox: &Sandbox| {
        cpu_of(|| {
            let mut command = Command::new("true");
            sandbox.apply(&mut command, &tree).expect("the sandbox applies");
        })
    };
    // Git is asked about the root once, by either; then the first look lists the tree.
    let top_first = plan(&top);
    let first = plan(&deep);
    println!(
        "CPU of planning a command's mounts in {}, the first time looking 3 levels down (the tree listed): \
         {:.3} ms (git asked before, at the top alone: {:.3} ms)",
        tree.display(),
        first.as_secs_f64() * 1e3,
        top_first.as_secs_f64() * 1e3
    );
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        with.push(plan(&deep));
        without.push(plan(&top));
    }
    let (with, without) = (median(with), median(without));
    println!(
        "CPU of planning a command's mounts in {}: {:.3} ms looking 3 levels down, {:.3} ms at the top alone \
         (added {:.3} ms)",
        tree.display(),
        with.as_secs_f64() * 1e3,
        without.as_secs_f64() * 1e3,
        (with.as_secs_f64() - without.as_secs_f64()) * 1e3
    );
}
