//! `bash` in the kernel sandbox, through the tools: writes outside the workspace refused in the
//! foreground, in a background session and in a terminal; the result names the sandbox and
//! explains the refusal; escalation asks a Rust asker, and is refused when nobody answers.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_runtime::{
    PermissionKind, PermissionRequest, Registry, SessionState, ToolContext, ToolOutput,
    context::Dependencies,
    hooks::{PermissionDecision, PermissionFn},
    output_store::OutputStore,
};
use tool_sandbox::{Probe, SandboxPolicy};
use tool_tests::skip;
use tools_std::Workspace;

/// Whether the kernel has the layers; under CI it must.
fn layers() -> bool {
    let probe = Probe::get();
    if probe.landlock_abi.is_some() && probe.seccomp {
        return true;
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must have Landlock and seccomp: {probe}");
    skip(&format!("the kernel lacks Landlock or seccomp ({probe})"));
    false
}

/// A directory outside the temporary directory, which sandboxed commands may write.
fn dir(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = outside_temp_base().join(format!("sandbox-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).unwrap();
    path.canonicalize().unwrap()
}

struct Fx {
    state: SessionState,
    registry: Registry,
    deps: Arc<Dependencies>,
    outside: PathBuf,
}

impl Fx {
    fn new(tag: &str, policy: impl FnOnce(&Path) -> SandboxPolicy) -> Fx {
        let root = dir(&format!("{tag}-root"));
        let outside = dir(&format!("{tag}-outside"));
        let mut deps = Dependencies::new();
        deps.insert(Workspace::new(&root).unwrap().with_sandbox(policy(&root)));
        deps.insert(OutputStore::builder().dir(dir(&format!("{tag}-store"))).open().unwrap());
        let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
        Fx { state: SessionState::new(), registry, deps: Arc::new(deps), outside }
    }

    fn ctx(&self) -> tool_runtime::context::ContextBuilder {
        ToolContext::builder("bash").dependencies(self.deps.clone()).session(self.state.clone())
    }

    async fn bash(&self, args: Value) -> ToolOutput {
        self.call(self.ctx().build(), "bash", args).await
    }

    async fn call(&self, ctx: ToolContext, tool: &str, args: Value) -> ToolOutput {
        match self.registry.call(tool, &args.to_string(), ctx).await {
            Ok(out) => out,
            Err(e) => panic!("{tool} {args} failed: {}", e.message()),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_write_says_it_was_the_sandbox_and_the_result_names_the_sandbox() {
    if !layers() {
        return;
    }
    let fx = Fx::new("refused", |root| SandboxPolicy::workspace_write(root));
    let target = fx.outside.join("evil");
    let out = fx.bash(json!({"command": format!("echo x > {}", target.display())})).await;
    assert!(out.is_error);
    assert!(!target.exists());
    let text = out.text_content();
    assert!(
        text.contains(&format!(
            "[sandbox: writing to {} was refused: commands may only write inside the workspace",
            target.display()
        )),
        "{text}"
    );
    assert!(text.contains("`sandbox: \"escalated\"`"), "{text}");
    assert_eq!(out.metadata["sandbox_violations"][0]["path"], json!(target));
    let sandbox = &out.metadata["sandbox"];
    assert_eq!(sandbox["mode"], json!("workspace-write"));
    assert_eq!(sandbox["landlock_abi"], json!(Probe::get().landlock_abi));
    assert!(sandbox["layers"].as_array().unwrap().contains(&json!("seccomp")), "{sandbox}");
    // With the network off, an empty network namespace too, wherever one can be made.
    assert_eq!(
        sandbox["layers"].as_array().unwrap().contains(&json!("network-namespace")),
        Probe::get().network_namespace,
        "{sandbox}"
    );
    // Inside the workspace, the same command works, and the metadata is there too.
    let out = fx.bash(json!({"command": "echo x > inside && cat inside"})).await;
    assert_eq!(out.text_content(), "x\n");
    assert_eq!(out.metadata["sandbox"]["mode"], json!("workspace-write"));
}

#[tokio::test(flavor = "multi_thread")]
async fn background_sessions_and_terminals_are_confined_too() {
    if !layers() {
        return;
    }
    let fx = Fx::new("sessions", |root| SandboxPolicy::workspace_write(root));
    let o = fx.outside.display();
    let out = fx
        .bash(json!({"command": format!("sleep 0.2; echo x > {o}/background; echo status $?"), "background": true}))
        .await;
    let id = out.metadata["session_id"].as_u64().expect("a session id");
    assert_eq!(out.metadata["sandbox"]["mode"], json!("workspace-write"));
    let out = fx.call(fx.ctx().build(), "bash_output", json!({"session_id": id, "wait_ms": 60000})).await;
    assert!(out.text_content().contains("status 1"), "{}", out.text_content());
    // The session's output explains the refusal, as a foreground result does.
    assert!(out.text_content().contains("[sandbox: writing to"), "{}", out.text_content());
    assert_eq!(out.metadata["sandbox_violations"].as_array().map(Vec::len), Some(1), "{:?}", out.metadata);
    let out = fx.bash(json!({"command": format!("tty >/dev/null && echo x > {o}/terminal; echo status $?"), "tty": true})).await;
    assert!(out.text_content().contains("status 1"), "{}", out.text_content());
    assert_eq!(std::fs::read_dir(&fx.outside).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn off_runs_unconfined() {
    let fx = Fx::new("off", |_| SandboxPolicy::off());
    let target = fx.outside.join("written");
    let out = fx.bash(json!({"command": format!("echo x > {}", target.display())})).await;
    assert!(!out.is_error, "{}", out.text_content());
    assert!(target.exists());
    assert_eq!(out.metadata["sandbox"]["summary"], json!("sandbox off (commands run unconfined)"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_the_kernel_cannot_enforce_is_refused() {
    let fx = Fx::new("refusal", |root| SandboxPolicy::workspace_write(root).require_landlock_abi(999));
    let ctx = fx.ctx().build();
    let err = fx.registry.call("bash", &json!({"command": "true"}).to_string(), ctx).await.unwrap_err();
    assert!(err.message().contains("Landlock ABI 999 is required"), "{}", err.message());
    assert!(err.message().contains("`--sandbox off`"), "{}", err.message());
}

#[tokio::test(flavor = "multi_thread")]
async fn escalation_asks_the_asker_and_is_refused_when_nobody_answers() {
    if !layers() {
        return;
    }
    let fx = Fx::new("escalation", |root| SandboxPolicy::workspace_write(root));
    let target = fx.outside.join("escalated");
    let args = json!({
        "command": format!("echo x > {}", target.display()),
        "sandbox": "escalated",
        "justification": "the build writes its cache there",
    });
    // The default policy: nobody is here to answer.
    let err = fx.registry.call("bash", &args.to_string(), fx.ctx().build()).await.unwrap_err();
    assert!(
        err.message().contains("needs a person's approval, and nobody is here to answer"),
        "{}",
        err.message()
    );
    assert!(!target.exists());
    // An asker that refuses, then one that allows; each sees the command, the rights and the reason.
    let asked = Arc::new(Mutex::new(Vec::new()));
    for allow in [false, true] {
        let seen = asked.clone();
        let hook = PermissionFn(move |request: PermissionRequest| {
            let seen = seen.clone();
            async move {
                if let PermissionKind::SandboxEscalation { command, rights, justification } = &request.kind {
                    seen.lock().unwrap().push((command.clone(), rights.clone(), justification.clone()));
                    return if allow {
                        PermissionDecision::Allow
                    } else {
                        PermissionDecision::Deny { reason: "not today".into() }
                    };
                }
                PermissionDecision::Allow
            }
        });
        let ctx = fx.ctx().permissions(Arc::new(hook)).build();
        let result = fx.registry.call("bash", &args.to_string(), ctx).await;
        assert_eq!(result.is_ok(), allow, "{result:?}");
        assert_eq!(target.exists(), allow);
    }
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 2);
        assert_eq!(asked[0].1, "no sandbox (every right of the user)");
        assert_eq!(asked[0].2, "the build writes its cache there");
    }
    // Without a justification the call is refused before anyone is asked.
    let err = fx
        .registry
        .call("bash", &json!({"command": "true", "sandbox": "network"}).to_string(), fx.ctx().build())
        .await
        .unwrap_err();
    assert!(err.message().contains("give a `justification`"), "{}", err.message());
}

#[tokio::test(flavor = "multi_thread")]
async fn excluded_commands_run_unsandboxed_and_escalation_can_be_turned_off() {
    if !layers() {
        return;
    }
    let root = dir("excluded-root");
    let outside = dir("excluded-outside");
    let mut deps = Dependencies::new();
    let ws = Workspace::new(&root)
        .unwrap()
        .with_sandbox(SandboxPolicy::workspace_write(&root))
        .with_unsandboxed_commands(vec!["touch".into()], false);
    deps.insert(ws);
    let fx = Fx {
        state: SessionState::new(),
        registry: Registry::builder().tools(tools_std::all()).build().unwrap(),
        deps: Arc::new(deps),
        outside: outside.clone(),
    };
    let out = fx.bash(json!({"command": format!("touch {}/excluded", outside.display())})).await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(out.metadata["sandbox"]["mode"], json!("off"));
    assert!(outside.join("excluded").exists());
    // A compound command is not a simple `touch`: sandboxed.
    let out = fx
        .bash(json!({"command": format!("touch {o}/compound; touch {o}/compound2", o = outside.display())}))
        .await;
    assert!(out.is_error);
    assert!(!outside.join("compound").exists());
    // allowUnsandboxedCommands: false refuses escalation before anyone is asked.
    let args = json!({"command": "true", "sandbox": "escalated", "justification": "because"});
    let ctx = fx.ctx().permissions(Arc::new(tool_runtime::hooks::AllowAll)).build();
    let err = fx.registry.call("bash", &args.to_string(), ctx).await.unwrap_err();
    assert!(err.message().contains("allowUnsandboxedCommands: false"), "{}", err.message());
}

/// `sandbox.networkCommands`: a simple command starting with a listed prefix runs sandboxed with
/// the network granted, without asking, through the egress proxy: every host the settings do
/// not deny, but not a denied host, not loopback, and nothing directly. Any other command, or
/// the same one in a compound line, gets no grant.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread")]
async fn networked_commands_get_every_host_not_denied_through_the_proxy() {
    use tools_std::tool_egress::{Egress, EgressPolicy};
    if !layers() {
        return;
    }
    if !std::process::Command::new("python3").arg("-c").arg("pass").status().is_ok_and(|s| s.success()) {
        return tool_tests::skip("python3 is not installed");
    }
    let root = dir("networked-root");
    let outside = dir("networked-outside");
    std::fs::write(
        root.join("connect.sh"),
        "exec python3 -c \"import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5); print('connected')\" \"$1\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("fetch.sh"),
        "exec python3 -c \"import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())\" \"$1\"\n",
    )
    .unwrap();
    // A web server on 127.0.0.2, which the egress lets names resolve to (as a public address
    // would be); 127.0.0.1 stays loopback, refused.
    let web = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let web_port = web.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in web.incoming().take(8) {
            let Ok(mut stream) = stream else { continue };
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\nConnection: close\r\n\r\nhello from web",
            );
        }
    });
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let web_address = std::net::IpAddr::from([127, 0, 0, 2]);
    let policy = EgressPolicy::new()
        .deny_host("denied.test", "the settings' deniedDomains")
        .unwrap()
        .allow_address("127.0.0.2", "the test")
        .unwrap()
        .resolve("web.test", [web_address])
        .resolve("denied.test", [web_address])
        .resolve("loop.test", [std::net::IpAddr::from([127, 0, 0, 1])]);
    let mut deps = Dependencies::new();
    let ws = Workspace::new(&root)
        .unwrap()
        .with_sandbox(SandboxPolicy::workspace_write(&root))
        .with_networked_commands(vec!["sh connect.sh".into(), "sh fetch.sh".into(), "touch".into()])
        .with_egress(Egress::new(policy, None));
    deps.insert(ws);
    let fx = Fx {
        state: SessionState::new(),
        registry: Registry::builder().tools(tools_std::all()).build().unwrap(),
        deps: Arc::new(deps),
        outside: outside.clone(),
    };
    let out = fx.bash(json!({"command": format!("sh fetch.sh http://web.test:{web_port}/")})).await;
    assert!(out.text_content().contains("hello from web"), "{}", out.text_content());
    assert_eq!(out.metadata["sandbox"]["mode"], json!("workspace-write"));
    for denied in [format!("http://denied.test:{web_port}/"), format!("http://loop.test:{port}/")] {
        let out = fx.bash(json!({"command": format!("sh fetch.sh {denied}")})).await;
        assert!(!out.text_content().contains("hello from web"), "{denied}: {}", out.text_content());
        assert!(out.text_content().contains("Traceback"), "{denied}: {}", out.text_content());
    }
    // Nothing directly, not even a listed command's.
    let out = fx.bash(json!({"command": format!("sh connect.sh {port}")})).await;
    assert!(!out.text_content().contains("connected"), "{}", out.text_content());
    // Only the network is granted: files stay confined.
    let out = fx.bash(json!({"command": format!("touch {}/x", outside.display())})).await;
    assert!(out.is_error, "{}", out.text_content());
    assert!(!outside.join("x").exists());
    for command in [
        format!("bash fetch.sh http://web.test:{web_port}/"),
        format!("sh fetch.sh http://web.test:{web_port}/; true"),
    ] {
        let out = fx.bash(json!({ "command": command })).await;
        assert!(!out.text_content().contains("hello from web"), "{command}: {}", out.text_content());
    }
    drop(listener);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_check_after_an_edit_runs_in_the_workspace_sandbox() {
    if !layers() {
        return;
    }
    use tools_std::verify::Verify;
    let root = dir("verify-root");
    let outside = dir("verify-outside");
    let target = outside.join("evil");
    let script = format!("echo x > '{}'", target.display());
    let mut deps = Dependencies::new();
    let ws = Workspace::new(&root).unwrap().with_verifiers(vec![Verify::new(["txt"], ["sh", "-c", &script])]);
    deps.insert(ws);
    deps.insert(OutputStore::builder().dir(dir("verify-store")).open().unwrap());
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
    let ctx = ToolContext::builder("write").dependencies(Arc::new(deps)).session(SessionState::new()).build();
    let out =
        registry.call("write", &json!({"path": "a.txt", "content": "x"}).to_string(), ctx).await.unwrap();
    assert_eq!(out.metadata["verification"]["status"], json!("failed"), "{}", out.text_content());
    assert!(!target.exists());
    assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"x");
}

include!("../../../tool-sandbox/tests/support/outside_temp.rs");

/// Each workspace keeps its state in a session directory of its own: its commands write their
/// own temporary directory (`TMPDIR`), not the system's, and cannot reach another workspace's
/// state or temporary files.
#[tokio::test(flavor = "multi_thread")]
async fn commands_write_their_sessions_temporary_directory_and_not_another_sessions_state() {
    if !layers() {
        return;
    }
    let fx = Fx::new("session-a", |root| SandboxPolicy::workspace_write(root));
    let other = Workspace::new(dir("session-b-root")).unwrap();
    let (ours, theirs) = {
        let ws = fx.deps.get::<Workspace>().unwrap();
        (ws.session_dir().unwrap().clone(), other.session_dir().unwrap().clone())
    };
    std::fs::write(theirs.state().join("store"), "their secret").unwrap();
    let system = std::env::temp_dir().join(format!("tools-session-test-{}", std::process::id()));
    let out = fx
        .bash(json!({"command": format!(
            "echo \"$TMPDIR\"; echo t > \"$TMPDIR/t\"; echo x > {system}; cat {s}/store; echo x > {s}/planted; \
             echo x > {t}/planted; true",
            system = system.display(),
            s = theirs.state().display(),
            t = theirs.tmp().display(),
        )}))
        .await;
    let text = out.text_content();
    assert_eq!(text.lines().next(), Some(ours.tmp().to_str().unwrap()), "{text}");
    assert_eq!(std::fs::read_to_string(ours.tmp().join("t")).unwrap(), "t\n");
    assert!(!system.exists(), "the system's temporary directory was written: {text}");
    if Probe::get().can_protect_paths() {
        assert!(!text.contains("their secret"), "{text}");
    }
    assert!(!theirs.state().join("planted").exists() && !theirs.tmp().join("planted").exists(), "{text}");
    // The session directory goes with the last clone of its workspace.
    let path = theirs.path();
    drop((theirs, other));
    assert!(!path.exists());
}
