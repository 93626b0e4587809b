//! What commands may write besides the root (their own temporary directory, not the system's),
//! the host's state they cannot reach, and protected names, present or not.

use std::path::{Path, PathBuf};

use tool_sandbox::{Sandbox, SessionDir};

use super::{dir, fixture, layers, mounts, run, run_in};

#[test]
fn commands_write_their_own_temporary_directory_and_not_the_systems() {
    if !layers() {
        return;
    }
    let fx = fixture("temp");
    let session = SessionDir::create().unwrap();
    let policy = fx.policy.clone().with_session_dir(&session);
    let system = std::env::temp_dir().join(format!("tool-sandbox-system-tmp-{}", std::process::id()));
    let script = format!(
        "echo $TMPDIR $TMP $TEMP; echo t > $TMPDIR/t && cat $TMPDIR/t; echo x > {s} || echo refused; \
         echo x > /tmp/tool-sandbox-tmp-$$ || echo refused; ls /tmp > /dev/null && echo readable",
        s = system.display()
    );
    let (_, out) = run(&policy, &fx.root, &script);
    let tmp = session.tmp();
    assert_eq!(
        out.lines().filter(|l| !l.starts_with("bash:")).collect::<Vec<_>>(),
        [format!("{t} {t} {t}", t = tmp.display()).as_str(), "t", "refused", "refused", "readable"],
        "{out}"
    );
    assert!(!system.exists());
    assert_eq!(std::fs::read_to_string(tmp.join("t")).unwrap(), "t\n");
    // A sandbox made without a session directory gets a temporary directory of its own.
    let own = Sandbox::new(fx.policy.clone()).unwrap();
    let mine = own.policy().temp_dir.clone().unwrap();
    let (code, out) = run_in(&own, &fx.root, "echo x > $TMPDIR/x && echo $TMPDIR");
    assert_eq!((code, out.trim()), (0, mine.to_str().unwrap()));
    assert_ne!(mine, tmp);
    drop(own);
    assert!(!mine.exists(), "the sandbox's own temporary directory outlived it");
}

#[test]
fn the_hosts_state_is_neither_writable_nor_readable() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("state");
    let session = SessionDir::create().unwrap();
    std::fs::write(session.state().join("secret"), "host").unwrap();
    let other = SessionDir::create().unwrap();
    std::fs::write(other.state().join("secret"), "other").unwrap();
    let policy = fx.policy.clone().with_session_dir(&session);
    for state in [session.state(), other.state()] {
        let s = state.display();
        let (_, out) = run(
            &policy,
            &fx.root,
            &format!(
                "cat {s}/secret; ls {s}; echo x > {s}/planted; rm -f {s}/secret; ln -s /etc {s}/link; echo done"
            ),
        );
        assert!(!out.contains("host") && !out.contains("other"), "{s}: {out}");
        assert!(out.ends_with("done\n"), "{out}");
        assert!(!state.join("planted").exists() && !state.join("link").exists(), "{s}: {out}");
        assert!(state.join("secret").exists(), "{s}: {out}");
    }
    // Another session's temporary directory is not writable either.
    let (code, out) = run(&policy, &fx.root, &format!("echo x > {}/x", other.tmp().display()));
    assert_ne!(code, 0, "{out}");
}

#[test]
fn state_inside_the_root_is_hidden_and_read_only_and_the_report_says_so() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("state-inside");
    let state = fx.root.join(".local/share/tool-runtime/outputs");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("out_1"), "stored").unwrap();
    let sandbox = Sandbox::new(fx.policy.clone().with_hidden(&state)).unwrap();
    assert!(
        sandbox.report().to_string().contains("hidden from commands and read-only"),
        "{}",
        sandbox.report()
    );
    let (_, out) = run_in(
        &sandbox,
        &fx.root,
        "cat .local/share/tool-runtime/outputs/out_1; echo forged > .local/share/tool-runtime/outputs/out_2; \
         rm -r .local/share/tool-runtime/outputs; echo done",
    );
    assert!(!out.contains("stored"), "{out}");
    assert!(!state.join("out_2").exists() && state.join("out_1").exists(), "{out}");
}

/// A hidden directory inside a writable root cannot be moved away by one command, to have the
/// next command's mount hide a decoy put in its place while the real one is read elsewhere: the
/// directories above it are pinned, as an unreadable path's are.
#[test]
fn hidden_state_inside_a_writable_root_cannot_be_moved_for_a_decoy() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("state-moved");
    // The session's directory made inside the workspace (as with `--writable-root /tmp`).
    let session = SessionDir::create_in(&fx.root).unwrap();
    std::fs::write(session.state().join("blob"), "CHECKPOINTED").unwrap();
    let sandbox = Sandbox::new(fx.policy.clone().with_session_dir(&session)).unwrap();
    let name = session.path().file_name().unwrap().to_string_lossy().into_owned();
    let (_, out) =
        run_in(&sandbox, &fx.root, &format!("mv {name} moved; mv {name}/state state-moved; echo done"));
    assert!(out.contains("done"), "{out}");
    let (_, out) = run_in(&sandbox, &fx.root, "cat moved/state/blob state-moved/blob 2>&1; echo done");
    assert!(!out.contains("CHECKPOINTED"), "{out}");
    assert!(session.state().join("blob").exists(), "{out}");
}

/// Runs `script` as [`run_in`] does, holding the placeholders of absent protected names while
/// it runs (as `bash` does).
fn run_holding(sandbox: &Sandbox, cwd: &Path, script: &str) -> (i32, String) {
    let mut command = std::process::Command::new("bash");
    command.arg("-c").arg(format!("exec 2>&1; {script}")).current_dir(cwd);
    let held = sandbox.apply_holding(&mut command, cwd).unwrap();
    let out = command.output().unwrap();
    drop(held);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether `path` exists (as anything, a link included).
fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

#[test]
fn absent_protected_names_cannot_be_created_and_nothing_is_left_behind() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("absent");
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    for script in [
        "mkdir -p .claude/hooks && echo evil > .claude/hooks/x",
        "echo '{}' > .mcp.json",
        "echo evil > CLAUDE.md",
        "rmdir CLAUDE.md && echo evil > CLAUDE.md",
        "mv CLAUDE.md gone",
        "echo evil > AGENTS.md",
        "mkdir -p .gemini && echo '{\"mcpServers\":{}}' > .gemini/settings.json",
        "mkdir -p .codex && echo 'notify = [\"evil\"]' > .codex/config.toml",
        "mkdir -p .opencode/plugin && echo evil > .opencode/plugin/x.js",
        "mkdir -p .cursor && echo '{}' > .cursor/mcp.json",
        "echo '{\"mcp\":{}}' > opencode.json",
        "rmdir opencode.jsonc; echo '{}' > opencode.jsonc",
        "echo evil > GEMINI.md",
        "git init -q . 2>&1 || mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit",
        "echo '[core] fsmonitor = evil' > .git/config",
    ] {
        let (code, out) = run_holding(&sandbox, &fx.root, script);
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
    }
    for name in [
        ".claude/hooks",
        ".mcp.json/x",
        "AGENTS.md/x",
        ".git/config",
        ".git/hooks",
        ".gemini/settings.json",
        ".codex/config.toml",
        ".opencode/plugin",
        ".cursor/mcp.json",
        "opencode.json/x",
        "GEMINI.md/x",
    ] {
        assert!(!exists(&fx.root.join(name)), "{name}");
    }
    // A placeholder two commands hold stays while either runs.
    let mut first = std::process::Command::new("bash");
    first.arg("-c").arg("sleep 0.5").current_dir(&fx.root);
    let first_held = sandbox.apply_holding(&mut first, &fx.root).unwrap();
    let mut first = first.spawn().unwrap();
    let mut second = std::process::Command::new("bash");
    second
        .arg("-c")
        .arg("sleep 0.2; echo evil > CLAUDE.md/x 2>/dev/null || echo refused")
        .current_dir(&fx.root)
        .stdout(std::process::Stdio::piped());
    let second_held = sandbox.apply_holding(&mut second, &fx.root).unwrap();
    let second = second.spawn().unwrap();
    first.wait().unwrap();
    drop(first_held);
    assert!(fx.root.join("CLAUDE.md").is_dir(), "the placeholder went while a command held it");
    let out = second.wait_with_output().unwrap();
    drop(second_held);
    assert!(!exists(&fx.root.join("CLAUDE.md")));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "refused\n");
    // The root stays writable beside them.
    let (code, out) = run_holding(&sandbox, &fx.root, "echo ok > notes.md && mkdir build && cat notes.md");
    assert_eq!((code, out.as_str()), (0, "ok\n"));
    // The placeholders go with the command that held them.
    drop(sandbox);
    let mut left: Vec<_> = std::fs::read_dir(&fx.root).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    assert_eq!(left, ["build", "notes.md"], "placeholders were left behind");
}

/// Marks `path` as a placeholder made by `pid` started at `start`, of this boot and pid
/// namespace, as the sandbox marks its own.
fn mark_made_by(path: &Path, pid: u32, start: u64) {
    use std::os::unix::fs::MetadataExt;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let namespace = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    let value = format!("{} {namespace} {pid} {start}", &boot[..8]);
    rustix::fs::setxattr(path, "user.tools.placeholder", value.as_bytes(), rustix::fs::XattrFlags::empty())
        .unwrap();
}

/// When process `pid` started, in clock ticks after boot.
fn start_of(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit_once(')').unwrap().1.split_ascii_whitespace().nth(19).unwrap().parse().unwrap()
}

/// A protected name that is a link to what does not exist (`CLAUDE.md` -> `docs/CLAUDE.md`), or
/// beneath a link to a directory that does not exist (`.claude` -> `config/claude`): the
/// command cannot create it through the link, nor by moving a directory on the way, replacing
/// a link on the way, or making a missing directory a `..` climbs out of a link; and nothing is
/// left behind.
#[test]
fn a_protected_name_cannot_be_created_through_a_link_to_what_does_not_exist() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("dangling");
    let link = |target: &str, name: &str| std::os::unix::fs::symlink(target, fx.root.join(name)).unwrap();
    for dir in ["docs", "config", "realdocs", ".git"] {
        std::fs::create_dir(fx.root.join(dir)).unwrap();
    }
    link("docs/CLAUDE.md", "CLAUDE.md");
    link(fx.root.join("notes/AGENTS.md").to_str().unwrap(), "AGENTS.md");
    link("config/./claude", ".claude");
    link("GEMINI.md", "GEMINI.md");
    link("d/CLAUDE.local.md", "CLAUDE.local.md");
    link("realdocs", "d");
    link("docs/missing/../opencode.json", "opencode.json");
    link(".git/index.lock", ".mcp.json");
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    for script in [
        "echo evil > CLAUDE.md",
        "echo evil > docs/CLAUDE.md",
        "mv docs docs2 && mkdir docs && echo evil > docs/CLAUDE.md",
        "echo evil > AGENTS.md",
        "mkdir -p notes && echo evil > notes/AGENTS.md",
        "mkdir -p config/claude/hooks && echo evil > config/claude/hooks/x",
        "mv config config2 && mkdir -p config/claude && echo evil > config/claude/settings.json",
        "rm CLAUDE.md && echo evil > CLAUDE.md",
        "echo evil > CLAUDE.local.md",
        "rm d && mkdir d && echo evil > d/CLAUDE.local.md",
        "mkdir -p other/sub && ln -s ../other/sub docs/missing && echo evil > opencode.json",
        "echo evil > docs/opencode.json",
    ] {
        let (code, out) = run_holding(&sandbox, &fx.root, script);
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
        assert!(
            !["CLAUDE.md", "AGENTS.md", "CLAUDE.local.md", "opencode.json"]
                .iter()
                .any(|name| std::fs::read(fx.root.join(name)).is_ok_and(|c| c == b"evil\n")),
            "`{script}` wrote a protected name through its link"
        );
    }
    // A link into a protected directory gets its placeholder there too, while commands run.
    let (_, out) = run_holding(&sandbox, &fx.root, "ls -A .git; echo listed");
    assert_eq!(out, "index.lock\nlisted\n");
    for made in [
        "docs/CLAUDE.md",
        "notes",
        "config/claude",
        "realdocs/CLAUDE.local.md",
        "docs/missing",
        ".git/index.lock",
    ] {
        assert!(!exists(&fx.root.join(made)), "{made} left behind");
    }
    for name in ["CLAUDE.md", "AGENTS.md", ".claude", "GEMINI.md", "CLAUDE.local.md", "d", "opencode.json"] {
        assert!(std::fs::symlink_metadata(fx.root.join(name)).unwrap().is_symlink(), "{name}");
    }
    // What does not touch the links is written as before.
    let (code, out) =
        run_holding(&sandbox, &fx.root, "mkdir -p docs/more && echo ok > docs/more/x && echo ok");
    assert_eq!((code, out.as_str()), (0, "ok\n"));
}

/// A protected name that is a link to what exists: what it leads to stays where it is and
/// read-only (the directories above it cannot be renamed away, a directory a `..` in the link
/// climbs out of cannot be replaced by a link), also where it leads to a protected name that
/// gets no placeholder; and a long chain of links costs no more than the 40 the kernel follows.
#[test]
fn what_a_protected_link_leads_to_cannot_be_moved_or_replaced() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("links-to");
    let link = |target: &str, name: &str| std::os::unix::fs::symlink(target, fx.root.join(name)).unwrap();
    for dir in ["docs", "config/claude", "d2", "sub"] {
        std::fs::create_dir_all(fx.root.join(dir)).unwrap();
    }
    std::fs::write(fx.root.join("docs/ai.md"), "mine\n").unwrap();
    std::fs::write(fx.root.join("docs/gemini.md"), "mine\n").unwrap();
    link("docs/ai.md", "CLAUDE.md");
    link("config/claude", ".claude");
    link("d2/../docs/gemini.md", "GEMINI.md");
    link("AGENT.md", "AGENTS.md");
    // A file on the way: the kernel stops there, and it must stay a file.
    std::fs::write(fx.root.join("docsfile"), "a file\n").unwrap();
    link("docsfile/opencode.json", "opencode.json");
    link("docsfile/../docs/local.md", "CLAUDE.local.md");
    // `sub/CLAUDE.md` (found below the top) leads into a chain of 300 links.
    for i in 0..300 {
        link(&format!("l{}", i + 1), &format!("sub/l{i}"));
    }
    link("../docs/ai.md", "sub/l300");
    link("l0", "sub/CLAUDE.md");
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    for script in [
        "echo evil > CLAUDE.md",
        "mv docs docs2 && mkdir docs && echo evil > docs/ai.md",
        "mv config config2 && mkdir -p config/claude && echo evil > config/claude/settings.json",
        "echo evil > .claude/settings.json",
        "mv d2 d3 && mkdir -p deep/x/docs && ln -s deep/x d2 && echo evil > deep/x/docs/gemini.md",
        "echo evil > AGENT.md",
        "rm docsfile && mkdir docsfile && echo evil > docsfile/opencode.json",
        "mv docsfile x && mkdir docsfile && echo evil > docs/local.md && cat CLAUDE.local.md",
        // Past the 40th the kernel follows no link: the first 40 are held.
        "rm sub/l10 && ln -s ../docs/gemini.md sub/l10",
    ] {
        let (code, out) = run_holding(&sandbox, &fx.root, script);
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
    }
    for name in ["CLAUDE.md", "GEMINI.md"] {
        assert_eq!(std::fs::read_to_string(fx.root.join(name)).unwrap(), "mine\n", "{name}");
    }
    assert!(!exists(&fx.root.join("AGENT.md")) && !exists(&fx.root.join(".claude/settings.json")));
    assert_eq!(std::fs::read_to_string(fx.root.join("docsfile")).unwrap(), "a file\n");
    // One mount per link passed, up to the kernel's 40 of a chain, not one per link of it.
    let (code, out) = run_holding(&sandbox, &fx.root, "wc -l < /proc/self/mountinfo");
    let mounts: usize = out.trim().parse().unwrap_or(usize::MAX);
    assert!(code == 0 && mounts < 200, "{mounts} mounts: {out}");
    // A protected name leading to the workspace itself protects all of it.
    let fx = fixture("link-to-root");
    std::os::unix::fs::symlink(".", fx.root.join(".claude")).unwrap();
    let (code, out) =
        run_holding(&Sandbox::new(fx.policy.clone()).unwrap(), &fx.root, "echo {} > settings.json");
    assert_ne!(code, 0, "{out}");
    assert!(!exists(&fx.root.join("settings.json")));
}

/// Links planted to make each command's mounts many (a protected name leading through more
/// `..` than are followed, or many protected names each through many links): no command
/// starts, with an error that says why, rather than one that takes minutes to start.
#[test]
fn links_that_would_take_too_many_mounts_stop_commands_with_a_clear_error() {
    if !layers() || !mounts() {
        return;
    }
    let link = |target: &str, at: PathBuf| std::os::unix::fs::symlink(target, at).unwrap();
    let fx = fixture("many-climbs");
    std::fs::create_dir_all(fx.root.join("sub/a")).unwrap();
    link(&format!("{}../docs/ai.md", "a/../".repeat(50)), fx.root.join("sub/CLAUDE.md"));
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    let mut command = std::process::Command::new("true");
    let refused = sandbox.apply_holding(&mut command, &fx.root).err().map(|e| e.to_string());
    assert!(refused.as_deref().is_some_and(|e| e.contains("more than 40 `..`")), "{refused:?}");
    let fx = fixture("many-links");
    for i in 0..60 {
        let dir = fx.root.join(format!("s{i}"));
        std::fs::create_dir(&dir).unwrap();
        for j in 0..40 {
            link(&format!("l{}", j + 1), dir.join(format!("l{j}")));
        }
        link("l0", dir.join("CLAUDE.md"));
    }
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    let mut command = std::process::Command::new("true");
    let refused = sandbox.apply_holding(&mut command, &fx.root).err().map(|e| e.to_string());
    assert!(refused.as_deref().is_some_and(|e| e.contains("more than the 2048")), "{refused:?}");
}

/// A process killed before it removed its placeholders leaves them in the workspace (empty
/// directories named `CLAUDE.md`, `.mcp.json`): the next sandbox that wants such a name removes
/// one still as it was made once no other mount namespace has a mount on it, and nothing else.
/// Its maker may still run (a process that left it to another's command): with the lock around
/// placeholders held, no process can be about to bind it.
#[test]
fn a_placeholder_left_behind_by_a_process_that_is_gone_is_removed() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("left-behind");
    let probe = fx.root.join("probe");
    std::fs::create_dir(&probe).unwrap();
    if rustix::fs::setxattr(&probe, "user.probe", b"1", rustix::fs::XattrFlags::empty()).is_err() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI's file system keeps user extended attributes"
        );
        eprintln!("skipped: this file system keeps no user extended attributes");
        return;
    }
    std::fs::remove_dir(&probe).unwrap();
    // A process that has ended: its pid, and a start that is not the pid's now.
    let mut ended = std::process::Command::new("true").spawn().unwrap();
    ended.wait().unwrap();
    let gone = ended.id();
    for name in ["CLAUDE.md", "GEMINI.md", ".mcp.json", "opencode.json"] {
        std::fs::create_dir(fx.root.join(name)).unwrap();
    }
    mark_made_by(&fx.root.join("CLAUDE.md"), gone, 1);
    // Something was put in it since: the user's now.
    mark_made_by(&fx.root.join("GEMINI.md"), gone, 1);
    std::fs::write(fx.root.join("GEMINI.md/notes"), "kept").unwrap();
    // Its maker runs (another process), and no command has a mount on it.
    let mut maker = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    mark_made_by(&fx.root.join(".mcp.json"), maker.id(), start_of(maker.id()));
    // Not marked: the user's own empty directory.
    std::fs::create_dir(fx.root.join("AGENTS.md")).unwrap();
    // Marked by a process that is gone, but a process that outlived it has a mount on it, made
    // through another path to the workspace (a bind mount of it, in that process's namespace).
    let opencode = fx.root.join("opencode.json");
    mark_made_by(&opencode, gone, 1);
    let ready = fx.root.join("ready");
    let alias = dir("left-behind-alias");
    let mut outlived = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c"])
        .arg(format!(
            "mount --bind {root} {a} && mount --bind {a}/opencode.json {a}/opencode.json && touch {r} && \
             exec sleep 30",
            root = fx.root.display(),
            a = alias.display(),
            r = ready.display()
        ))
        .spawn()
        .unwrap();
    while !ready.exists() {
        assert!(outlived.try_wait().unwrap().is_none(), "unshare failed");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    let (_, out) = run_holding(&sandbox, &fx.root, "ls -A; echo evil > CLAUDE.md || echo refused");
    assert!(out.contains("refused"), "{out}");
    // The left one was removed, then held for the command (made again) and removed after it.
    assert!(!exists(&fx.root.join("CLAUDE.md")), "{out}");
    assert!(fx.root.join("GEMINI.md/notes").exists());
    assert!(!exists(&fx.root.join(".mcp.json")), "{out}");
    assert!(fx.root.join("AGENTS.md").is_dir());
    assert!(opencode.is_dir(), "removed while a mount namespace had a mount on it");
    // Once that process ends, the next command's sandbox removes it.
    outlived.kill().unwrap();
    outlived.wait().unwrap();
    let (code, _) = run_holding(&sandbox, &fx.root, "true");
    assert_eq!(code, 0);
    assert!(!exists(&opencode));
    assert!(fx.root.join("AGENTS.md").is_dir());
    maker.kill().unwrap();
    maker.wait().unwrap();
}

/// A placeholder this process made is found by another process's command, which holds it as an
/// existing protected name (a mount on it in its namespace): when this process's command ends,
/// the placeholder stays as long as that command runs (removed, it would stop being protected
/// there), and goes with this process's next command after that. Also when that command's first
/// thread has ended while another runs on (its process's own `/proc` entries then answer
/// nothing).
#[test]
fn a_placeholder_another_processs_command_holds_stays_until_it_ends() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("held-elsewhere");
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    let ready = fx.root.join("ready");
    let claude = fx.root.join("CLAUDE.md");
    let first_thread_ends = format!(
        "exec python3 -c 'import threading, ctypes, time, pathlib\n\
         def run():\n    time.sleep(0.3); pathlib.Path(\"{r}\").touch(); time.sleep(30)\n\
         threading.Thread(target=run).start(); ctypes.CDLL(None).pthread_exit(None)'",
        r = ready.display()
    );
    let python = std::process::Command::new("python3").arg("--version").output().is_ok();
    if !python {
        eprintln!("skipped in part: python3 is not installed (a command whose first thread ends)");
    }
    let then = [format!("touch {} && exec sleep 30", ready.display()), first_thread_ends];
    for then in then.iter().take(if python { 2 } else { 1 }) {
        let _ = std::fs::remove_file(&ready);
        let mut command = std::process::Command::new("bash");
        command.arg("-c").arg("while [ ! -e ready ]; do sleep 0.01; done").current_dir(&fx.root);
        let held = sandbox.apply_holding(&mut command, &fx.root).unwrap();
        let mut first = command.spawn().unwrap();
        assert!(claude.is_dir(), "no placeholder");
        // Another process's command, started meanwhile, binds the name it found.
        let mut other = std::process::Command::new("unshare")
            .args(["-rm", "sh", "-c"])
            .arg(format!("mount --bind {c} {c} && {then}", c = claude.display()))
            .spawn()
            .unwrap();
        first.wait().unwrap();
        drop(held);
        assert!(claude.is_dir(), "removed while another process's command had a mount on it: {then}");
        other.kill().unwrap();
        other.wait().unwrap();
        let (code, _) = run_holding(&sandbox, &fx.root, "true");
        assert_eq!(code, 0);
        assert!(!exists(&claude), "left after the command that held it ended");
    }
}

#[test]
fn git_metadata_is_read_only_by_default() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("git");
    std::fs::create_dir_all(fx.root.join(".git/objects")).unwrap();
    std::fs::create_dir_all(fx.root.join(".git/refs")).unwrap();
    std::fs::write(fx.root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(fx.root.join(".git/index"), "index").unwrap();
    std::fs::write(fx.root.join(".git/config"), "[core]\n").unwrap();
    for script in [
        "echo /elsewhere > .git/commondir",
        "mkdir .git/hooks && echo evil > .git/hooks/x",
        "echo evil > .git/index",
        "echo evil > .git/config",
    ] {
        let (code, out) = run(&fx.policy, &fx.root, script);
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
    }
    assert_eq!(std::fs::read_to_string(fx.root.join(".git/index")).unwrap(), "index");
    for name in ["commondir", "hooks"] {
        assert!(!exists(&fx.root.join(".git").join(name)), "{name}");
    }
    assert_eq!(std::fs::read_to_string(fx.root.join(".git/config")).unwrap(), "[core]\n");
    // With git writes allowed, git's own files are writable, what it runs is not, even absent.
    let git = fx.policy.clone().with_git_writes(true);
    let sandbox = Sandbox::new(git).unwrap();
    let (code, out) = run_holding(&sandbox, &fx.root, "echo new > .git/index && echo ok");
    assert_eq!((code, out.as_str()), (0, "ok\n"));
    // A `commondir` would have git take its configuration and hooks from where it names, a
    // `config.worktree` settings of its own: neither can be made, renamed over or removed.
    for script in [
        "echo evil > .git/hooks/x",
        "echo evil > .git/config",
        "mkdir -p .git/info && echo x > .git/info/exclude",
        "echo /tmp/evil > .git/commondir",
        "rm -f .git/commondir",
        "echo /tmp/evil > x && mv -f x .git/commondir",
        "printf '[core]\\n\\thooksPath = /tmp/evil\\n' > .git/config.worktree",
        "rm -f .git/config.worktree",
    ] {
        let (code, out) = run_holding(&sandbox, &fx.root, script);
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
    }
    // The placeholders mean what their absence meant: git works as before.
    let common = "cat .git/commondir; echo; cd \"$(git rev-parse --git-common-dir)\" && pwd -P";
    let (code, out) = run_holding(&sandbox, &fx.root, common);
    let git_dir = fx.root.join(".git").canonicalize().unwrap();
    assert_eq!((code, out), (0, format!(".\n{}\n", git_dir.display())));
    drop(sandbox);
    // Kept once made, as `git init` keeps `hooks/` and `info/`: another process's commands, which
    // started before and hold no placeholder of their own, keep finding them there, protected.
    assert_eq!(std::fs::read(fx.root.join(".git/commondir")).unwrap(), b".");
    assert_eq!(std::fs::read(fx.root.join(".git/config.worktree")).unwrap(), b"");
    assert!(fx.root.join(".git/hooks").is_dir() && fx.root.join(".git/info").is_dir());
    let other = Sandbox::new(fx.policy.clone().with_git_writes(true)).unwrap();
    for script in
        ["echo /tmp/evil > .git/commondir", "echo '[core]' > .git/config.worktree", "rm -f .git/commondir"]
    {
        let (code, out) = run_holding(&other, &fx.root, script);
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
    }
    assert_eq!(std::fs::read(fx.root.join(".git/commondir")).unwrap(), b".");
}

#[test]
fn a_protected_name_that_is_a_link_protects_that_name_only() {
    if !layers() || !mounts() {
        return;
    }
    let fx = fixture("link");
    let real = dir("link-target");
    std::fs::create_dir_all(fx.root.join("config")).unwrap();
    std::os::unix::fs::symlink("config", fx.root.join(".claude")).unwrap();
    std::os::unix::fs::symlink(&real, fx.root.join("CLAUDE.md")).unwrap();
    let sandbox = Sandbox::new(fx.policy.clone()).unwrap();
    let (code, out) = run_in(&sandbox, &fx.root, "echo evil > config/settings.json");
    assert_ne!(code, 0, "{out}");
    // The links themselves: not removed, not replaced, not renamed over, not moved away.
    for script in [
        "rm -f CLAUDE.md",
        "rm -f .claude",
        "ln -sfn /tmp CLAUDE.md",
        "echo evil > new && mv -f new CLAUDE.md",
        "mkdir -p d/settings.json && mv -T d .claude",
        "mv CLAUDE.md moved",
    ] {
        let (code, out) = run_in(&sandbox, &fx.root, script);
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
    }
    let link = |name: &str| std::fs::read_link(fx.root.join(name)).unwrap();
    assert_eq!((link(".claude"), link("CLAUDE.md")), (PathBuf::from("config"), real.clone()));
    let (code, out) = run_in(&sandbox, &fx.root, "echo ok > elsewhere && cat elsewhere");
    assert_eq!((code, out.as_str()), (0, "ok\n"), "the root became read-only");
    // The mounts were the command's own: outside its namespace the link is an ordinary one.
    drop(sandbox);
    std::fs::remove_file(fx.root.join("CLAUDE.md")).unwrap();
}
