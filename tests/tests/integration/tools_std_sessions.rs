//! Background sessions of `bash`, with real processes: a command that goes on in the
//! background, read in polls; answered through its input (a pipe or a terminal); interrupted
//! with Ctrl-C; stopped; limited; and killed, with everything it started, when the session
//! state is dropped (checked in `/proc`).
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_runtime::permissions::{Policy, Rules, RulesBuilder};
use tool_runtime::{
    BoxFuture, PermissionKind, PermissionRequest, Registry, SessionState, ToolContext, ToolOutput,
    context::Dependencies,
    hooks::{PermissionDecision, PermissionHook},
    output_store::OutputStore,
};
use tool_tests::{TempDir, runs, skip};
use tools_std::Workspace;
use tools_std::session::Sessions;

/// Fields drop in order: the sessions (and their processes) before the directory they use.
struct Fx {
    state: Option<SessionState>,
    registry: Registry,
    deps: Arc<Dependencies>,
    dir: TempDir,
}

impl Fx {
    fn new(tag: &str) -> Self {
        let dir = TempDir::new(tag);
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let mut deps = Dependencies::new();
        deps.insert(Workspace::new(dir.path().join("ws")).unwrap());
        deps.insert(
            OutputStore::builder()
                .dir(dir.path().join("outputs"))
                .read_hint(tools_std::read_hint())
                .open()
                .unwrap(),
        );
        let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
        Fx { state: Some(SessionState::new()), registry, deps: Arc::new(deps), dir }
    }

    fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path().join("ws")).unwrap()
    }

    fn state(&self) -> &SessionState {
        self.state.as_ref().expect("the session state is there")
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        let ctx =
            ToolContext::builder(tool).dependencies(self.deps.clone()).session(self.state().clone()).build();
        match self.registry.call(tool, &args.to_string(), ctx).await {
            Ok(out) => out,
            Err(e) => panic!("{tool} {args} failed: {}", e.message()),
        }
    }

    async fn error(&self, tool: &str, args: Value) -> String {
        let ctx =
            ToolContext::builder(tool).dependencies(self.deps.clone()).session(self.state().clone()).build();
        match self.registry.call(tool, &args.to_string(), ctx).await {
            Ok(out) => panic!("{tool} {args} succeeded: {}", out.text_content()),
            Err(e) => e.message().to_owned(),
        }
    }

    /// Starts `command` in the background and returns its session id.
    async fn start(&self, args: Value) -> u64 {
        self.start_with_output(args).await.0
    }

    /// Starts `command` in the background and returns its session id and the result, which
    /// shows what it printed until its yield time.
    async fn start_with_output(&self, args: Value) -> (u64, ToolOutput) {
        let out = self.call("bash", args).await;
        assert_eq!(out.metadata["running"], json!(true), "{}", out.text_content());
        (out.metadata["session_id"].as_u64().expect("a session id"), out)
    }
}

/// The pid written to `path`, once it is there.
async fn pid_in(path: &Path) -> i32 {
    for _ in 0..2000 {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse().ok()) {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} was never written", path.display());
}

async fn gone(pid: i32) -> bool {
    for _ in 0..1000 {
        if !runs(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// The output's own lines, without the bracketed notes at its end.
fn lines(out: &ToolOutput) -> Vec<String> {
    out.text_content()
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('[') && *l != "(no new output)")
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_server_printing_every_100_ms_is_read_in_three_polls_with_nothing_lost_or_repeated() {
    let fx = Fx::new("sessions-server");
    let (id, first) = fx
        .start_with_output(
            json!({"command": "for i in $(seq 1 30); do echo line $i; sleep 0.1; done", "background": true}),
        )
        .await;
    // What it printed before `bash` returned is in `bash`'s result.
    let mut seen = lines(&first);
    // Two polls while it runs, each waiting for a line it has not seen yet...
    for poll in 1..=2 {
        let until = format!("line {}", poll * 5);
        let out = fx.call("bash_output", json!({"session_id": id, "wait_ms": 60000, "until": until})).await;
        assert_eq!(out.metadata["running"], json!(true), "{}", out.text_content());
        let got = lines(&out);
        assert!(!got.is_empty(), "poll {poll} read nothing");
        assert!(out.text_content().contains(&format!("[session {id} is still running")));
        seen.extend(got);
    }
    // ...and one that waits for the end.
    let out = fx.call("bash_output", json!({"session_id": id, "wait_ms": 60000})).await;
    assert_eq!(out.metadata["running"], json!(false));
    assert_eq!(out.metadata["exit_code"], json!(0));
    assert!(out.text_content().ends_with("it is closed now.]"), "{}", out.text_content());
    seen.extend(lines(&out));
    let expected: Vec<String> = (1..=30).map(|i| format!("line {i}")).collect();
    assert_eq!(seen, expected);
    // Its end was read: the session is gone.
    let error = fx.error("bash_output", json!({"session_id": id})).await;
    assert!(error.contains(&format!("There is no session {id}")), "{error}");
}

#[tokio::test]
async fn a_short_command_is_not_a_session() {
    let fx = Fx::new("sessions-short");
    let out = fx.call("bash", json!({"command": "echo hi; exit 3"})).await;
    assert_eq!(out.text_content(), "hi\n\n[exit code 3]");
    assert!(out.metadata.get("session_id").is_none());
    assert_eq!(fx.call("bash_list", json!({})).await.text_content().lines().count(), 1);
}

#[tokio::test]
async fn read_p_is_answered_through_stdin() {
    let fx = Fx::new("sessions-read");
    let id = fx
        .start(json!({
            "command": "read -r -p 'Continue? [y/N] ' answer; echo \"answer=$answer\"; exit 4",
            "interactive": true,
            "yield_ms": 300
        }))
        .await;
    let out = fx.call("bash_input", json!({"session_id": id, "text": "y\n", "wait_ms": 60000})).await;
    assert_eq!(lines(&out), ["answer=y"]);
    assert_eq!(out.metadata["exit_code"], json!(4));
    assert!(out.is_error);
    assert!(out.text_content().contains("[exit code 4]"), "{}", out.text_content());
}

#[tokio::test]
async fn a_command_without_input_says_how_to_get_one() {
    let fx = Fx::new("sessions-no-input");
    let id = fx.start(json!({"command": "sleep 300", "background": true})).await;
    let error = fx.error("bash_input", json!({"session_id": id, "text": "y\n"})).await;
    assert!(error.contains("interactive=true"), "{error}");
    fx.call("bash_stop", json!({"session_id": id})).await;
}

#[tokio::test]
async fn ctrl_c_through_stdin_stops_a_foreground_loop() {
    let fx = Fx::new("sessions-ctrl-c");
    let id = fx
        .start(json!({
            "command": "echo looping; while true; do sleep 1; done",
            "interactive": true,
            "background": true
        }))
        .await;
    let out = fx.call("bash_input", json!({"session_id": id, "keys": ["ctrl_c"], "wait_ms": 60000})).await;
    assert_eq!(out.metadata["running"], json!(false), "{}", out.text_content());
    assert_eq!(out.metadata["signal"], json!(2), "{}", out.text_content());
    assert!(out.text_content().contains("[killed by signal 2 (SIGINT)]"), "{}", out.text_content());
}

/// A terminal, or a skip message where none can be opened.
async fn terminal(fx: &Fx) -> bool {
    let ctx = ToolContext::builder("bash").dependencies(fx.deps.clone()).session(fx.state().clone()).build();
    let args = json!({"command": "tty; test -t 0 && test -t 1 && echo both-are-terminals", "tty": true});
    match fx.registry.call("bash", &args.to_string(), ctx).await {
        Ok(out) => {
            let text = out.text_content();
            assert!(text.starts_with("/dev/pts/"), "{text}");
            assert!(text.contains("\nboth-are-terminals\n"), "{text}");
            assert!(!text.contains('\r'), "carriage returns are removed: {text:?}");
            true
        }
        Err(e) if e.message().contains("Cannot start bash in a terminal") => {
            skip(&format!("no terminal can be opened here: {}", e.message()));
            false
        }
        Err(e) => panic!("{}", e.message()),
    }
}

#[tokio::test]
async fn python_is_driven_through_its_terminal() {
    let fx = Fx::new("sessions-python");
    if !terminal(&fx).await {
        return;
    }
    if std::process::Command::new("python3").arg("--version").output().is_err() {
        return skip("python3 is not installed");
    }
    let id = fx.start(json!({"command": "python3 -i -q", "tty": true, "yield_ms": 100})).await;
    let out = fx
        .call(
            "bash_input",
            json!({"session_id": id, "text": "print(6 * 7)\n", "until": "42", "wait_ms": 60000}),
        )
        .await;
    assert!(out.text_content().contains("42\n"), "{}", out.text_content());
    // Line editing works: a mistake typed, erased with backspace, and the line finished.
    fx.call(
        "bash_input",
        json!({"session_id": id, "text": "print(1 + 23", "keys": ["backspace"], "wait_ms": 300}),
    )
    .await;
    let out = fx
        .call("bash_input", json!({"session_id": id, "text": ")\n", "until": "\n>>> ", "wait_ms": 60000}))
        .await;
    let answer = out.text_content();
    // `24` had the backspace been lost (not "24" anywhere: the note may say "424ms").
    assert!(answer.lines().any(|l| l == "3") && !answer.lines().any(|l| l == "24"), "{answer:?}");
    let out = fx
        .call("bash_input", json!({"session_id": id, "text": "import sys; sys.stdout.isatty()\n", "until": "True", "wait_ms": 60000}))
        .await;
    assert!(out.text_content().contains("True"), "{}", out.text_content());
    // Ctrl-C interrupts the running statement, and the REPL goes on. (Short sleeps in a loop:
    // Python checks for a signal between them, while one that lands between the `print` and a
    // single long `time.sleep` would wait for the sleep's end.)
    let out = fx
        .call(
            "bash_input",
            json!({"session_id": id, "text": "import time; print('sl' + 'eeping'); [time.sleep(0.05) for _ in range(6000)]\n", "until": "\nsleeping\n", "wait_ms": 60000}),
        )
        .await;
    assert_eq!(out.metadata["running"], json!(true), "{}", out.text_content());
    let out = fx
        .call(
            "bash_input",
            // Up to the next prompt: keys typed before the line editor is back may be discarded.
            json!({"session_id": id, "keys": ["ctrl_c"], "until": "\n>>> ", "wait_ms": 60000}),
        )
        .await;
    assert!(out.text_content().contains("KeyboardInterrupt"), "{}", out.text_content());
    assert_eq!(out.metadata["running"], json!(true));
    // Ctrl-D at the prompt ends it. (Python 3.11 ends a REPL that printed a KeyboardInterrupt
    // with SIGINT, so that its parent knows it was interrupted; the result reports either.)
    let out = fx.call("bash_input", json!({"session_id": id, "keys": ["ctrl_d"], "wait_ms": 60000})).await;
    assert_eq!(out.metadata["running"], json!(false), "{}", out.text_content());
    let how = (out.metadata["exit_code"].clone(), out.metadata["signal"].clone());
    assert!(
        how == (json!(0), json!(null)) || how == (json!(null), json!(2)),
        "{:?} {:?}",
        out.text_content(),
        out.metadata
    );
    assert!(out.text_content().contains(&format!("[session {id} ended after ")), "{}", out.text_content());
}

#[tokio::test]
async fn a_prompt_in_a_terminal_is_shown_and_answered() {
    let fx = Fx::new("sessions-tty-read");
    if !terminal(&fx).await {
        return;
    }
    let out = fx
        .call(
            "bash",
            json!({
                "command": "read -r -p 'Continue? [y/N] ' answer; printf '\\033[1;32manswer=%s\\033[0m\\n' \"$answer\"",
                "tty": true,
                "yield_ms": 100
            }),
        )
        .await;
    let id = out.metadata["session_id"].as_u64().expect("a session");
    let mut prompt = out.text_content();
    if !prompt.contains("[y/N]") {
        // Not printed yet at the yield time: it is the next read's.
        prompt = fx
            .call("bash_output", json!({"session_id": id, "until": "[y/N]", "wait_ms": 60000}))
            .await
            .text_content();
    }
    assert!(prompt.starts_with("Continue? [y/N] \n\n[session"), "{prompt}");
    let out = fx.call("bash_input", json!({"session_id": id, "text": "y\n", "wait_ms": 60000})).await;
    // The echo of the typed line, then the answer without its colour codes.
    assert!(out.text_content().starts_with("y\nanswer=y\n"), "{:?}", out.text_content());
    assert_eq!(out.metadata["exit_code"], json!(0));
}

#[tokio::test]
async fn a_full_screen_program_does_not_hang_the_tool() {
    let fx = Fx::new("sessions-full-screen");
    if !terminal(&fx).await {
        return;
    }
    if std::process::Command::new("less").arg("--version").output().is_err() {
        return skip("less is not installed");
    }
    std::fs::write(fx.root().join("file.txt"), (1..=500).map(|n| format!("row {n}\n")).collect::<String>())
        .unwrap();
    let id = fx.start(json!({"command": "less file.txt", "tty": true, "yield_ms": 1000})).await;
    let out = fx.call("bash_input", json!({"session_id": id, "text": "q", "wait_ms": 60000})).await;
    assert_eq!(out.metadata["running"], json!(false), "{}", out.text_content());
}

#[tokio::test]
async fn background_sessions_survive_later_calls_and_die_with_the_session_state() {
    let mut fx = Fx::new("sessions-drop");
    let root = fx.root();
    // A plain background job, one in a new session (`setsid`), and a double-forked daemon that
    // also left the group: all still found through the shell (a subreaper) and the marker.
    let id = fx
        .start(json!({
            "command": "echo $$ > shell.pid; sleep 300 & echo $! > job.pid; \
                        setsid sleep 300 > /dev/null 2>&1 & echo $! > setsid.pid; \
                        (setsid sh -c 'sleep 300 & echo $! > daemon.pid' > /dev/null 2>&1 &); wait",
            "background": true
        }))
        .await;
    let pids: Vec<i32> = {
        let mut pids = Vec::new();
        for name in ["shell.pid", "job.pid", "setsid.pid", "daemon.pid"] {
            pids.push(pid_in(&root.join(name)).await);
        }
        pids
    };
    // Later calls of the same session state leave it running.
    assert_eq!(fx.call("bash", json!({"command": "echo later"})).await.text_content(), "later\n");
    let listed = fx.call("bash_list", json!({})).await;
    assert!(
        listed.text_content().starts_with(&format!("session {id}: running, ")),
        "{}",
        listed.text_content()
    );
    assert_eq!(Sessions::running(&fx.state().get::<Sessions>().unwrap()), 1);
    for pid in &pids {
        assert!(runs(*pid), "{pid} died before its session state was dropped");
    }
    fx.state = None;
    for pid in pids {
        assert!(gone(pid).await, "{pid} outlived its session state");
    }
}

#[tokio::test]
async fn bash_stop_terms_then_kills_and_says_what_it_killed() {
    let fx = Fx::new("sessions-stop");
    let root = fx.root();
    let id = fx
        .start(json!({"command": "trap 'echo got TERM' TERM; echo $$ > shell.pid; (trap '' TERM; sh -c 'echo $$ > job.pid; exec sleep 300') & \
                                  while true; do sleep 0.05; done", "background": true}))
        .await;
    let shell = pid_in(&root.join("shell.pid")).await;
    let job = pid_in(&root.join("job.pid")).await;
    let out = fx.call("bash_stop", json!({"session_id": id, "grace_ms": 300})).await;
    let text = out.text_content();
    assert!(text.contains("got TERM"), "{text}");
    assert!(text.contains("[stopped with bash_stop"), "{text}");
    // The shell ignored SIGTERM (it ran its trap), and so did the job: both needed SIGKILL.
    assert!(text.contains("[killed the command and "), "{text}");
    assert!(gone(shell).await && gone(job).await);
    assert!(fx.error("bash_output", json!({"session_id": id})).await.contains("There is no session"));
}

#[tokio::test]
async fn timeout_secs_still_kills_a_background_session() {
    let fx = Fx::new("sessions-timeout");
    let (id, first) = fx
        .start_with_output(
            json!({"command": "echo started; sleep 300", "background": true, "timeout_secs": 1}),
        )
        .await;
    let out = fx.call("bash_output", json!({"session_id": id, "wait_ms": 60000})).await;
    let text = out.text_content();
    let mut printed = lines(&first);
    printed.extend(lines(&out));
    assert_eq!(printed, ["started"]);
    assert!(text.contains("[timed out after 1s: the session was killed at its timeout_secs"), "{text}");
    assert_eq!(out.metadata["timed_out"], json!(true));
    assert!(out.is_error);
}

#[tokio::test]
async fn the_number_of_running_sessions_is_limited_with_a_clear_error() {
    let fx = Fx::new("sessions-limit");
    fx.state().get_or_insert_with(|| Sessions::with_limit(2));
    let a = fx.start(json!({"command": "sleep 300", "background": true})).await;
    let b = fx.start(json!({"command": "sleep 300", "background": true})).await;
    let error = fx.error("bash", json!({"command": "sleep 300", "background": true})).await;
    assert_eq!(
        error,
        format!(
            "2 commands are already running in the background (sessions {a}, {b}), the most allowed at once. Stop \
             one with bash_stop, or wait for one to finish with bash_output, then run this command again."
        )
    );
    // A command that needs no session still runs.
    assert_eq!(
        fx.call("bash", json!({"command": "echo ok", "timeout_secs": 5})).await.text_content(),
        "ok\n"
    );
    fx.call("bash_stop", json!({"session_id": a, "grace_ms": 0})).await;
    fx.start(json!({"command": "sleep 300", "background": true})).await;
}

#[tokio::test]
async fn long_output_of_a_session_is_cut_and_stored_whole() {
    let fx = Fx::new("sessions-long");
    // It prints once told to, so that all of it is in one read.
    let id = fx
        .start(
            json!({"command": "read -r go; seq 1 5000; sleep 300", "interactive": true, "background": true}),
        )
        .await;
    let out = fx
        .call("bash_input", json!({"session_id": id, "text": "go\n", "until": "\n5000\n", "wait_ms": 60000}))
        .await;
    let text = out.text_content();
    assert!(text.starts_with("1\n2\n"), "{}", &text[..20]);
    let reference = out.metadata["truncation"]["output_ref"].as_str().expect("stored").to_owned();
    assert!(
        text.contains(&format!(
            "[Output truncated: this part of the output is lines 1-5000 (5000 lines); showing lines 1-995 and \
             lines 4006-5000 (8847 of 23893 bytes). The full output is saved as {reference}; read the cut lines \
             with tool_output_read(ref=\"{reference}\", offset=996)"
        )),
        "{text}"
    );
    let read = fx.call("tool_output_read", json!({"ref": reference, "offset": 996, "limit": 2})).await;
    assert!(
        read.text_content().contains("996") && read.text_content().contains("997"),
        "{}",
        read.text_content()
    );
    fx.call("bash_stop", json!({"session_id": id, "grace_ms": 0})).await;
}

/// Calls `tool` with `permissions` answering its asks; the error message when it fails.
async fn call_with(
    fx: &Fx,
    permissions: Arc<dyn PermissionHook>,
    tool: &str,
    args: Value,
) -> Result<ToolOutput, String> {
    let ctx = ToolContext::builder(tool)
        .dependencies(fx.deps.clone())
        .session(fx.state().clone())
        .permissions(permissions)
        .build();
    fx.registry.call(tool, &args.to_string(), ctx).await.map_err(|e| e.message().to_owned())
}

/// Records every request, then answers with the policy's rules (or allows, with `allow_asks`).
struct Recorder {
    policy: Policy,
    seen: std::sync::Mutex<Vec<PermissionRequest>>,
}

impl PermissionHook for Recorder {
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        self.seen.lock().unwrap().push(request.clone());
        self.policy.decide(request)
    }
}

fn policy(fx: &Fx, rules: impl FnOnce(RulesBuilder) -> RulesBuilder) -> Policy {
    let base = Rules::builder(fx.root()).catalog(tools_std::permission_catalog());
    Policy::new(rules(base).build().unwrap())
}

#[tokio::test]
async fn typing_into_an_allowed_python_session_is_asked_and_the_deny_rules_read_it() {
    if !std::process::Command::new("python3").arg("-c").arg("pass").status().is_ok_and(|s| s.success()) {
        return skip("python3 is not installed");
    }
    let fx = Fx::new("sessions-input-rules");
    std::fs::create_dir_all(fx.root().join("x")).unwrap();
    let rules = |b: RulesBuilder| b.allow("Bash(python3:*)").deny("Bash(rm -rf:*)");
    let nobody: Arc<dyn PermissionHook> = Arc::new(policy(&fx, rules));
    let started = call_with(
        &fx,
        nobody.clone(),
        "bash",
        json!({"command": "python3 -u -i", "interactive": true, "background": true}),
    )
    .await
    .unwrap();
    let id = started.metadata["session_id"].as_u64().unwrap();
    // The python session was allowed; what is typed into it is another matter.
    let asked = call_with(
        &fx,
        nobody.clone(),
        "bash_input",
        json!({"session_id": id, "text": "import os; os.system('rm -rf x')\n"}),
    )
    .await
    .unwrap_err();
    assert!(asked.contains("refused by the rule `deny Bash(rm -rf:*)`"), "{asked}");
    let asked = call_with(
        &fx,
        nobody.clone(),
        "bash_input",
        json!({"session_id": id, "text": "import shutil; shutil.rmtree('x')\n"}),
    )
    .await
    .unwrap_err();
    assert!(
        asked.contains("the default for typing into `python3 -u -i`, which may run what it reads as commands or code, while rules about commands are in force says to ask first, and nobody is here to answer"),
        "{asked}"
    );
    // Typed in two parts, the line is read whole.
    let yes = Arc::new(Recorder {
        policy: policy(&fx, rules).asker(tool_runtime::hooks::AllowAll),
        seen: Default::default(),
    });
    let first = call_with(
        &fx,
        yes.clone(),
        "bash_input",
        json!({"session_id": id, "text": "os.system('rm -r", "wait_ms": 0}),
    )
    .await;
    assert!(first.is_ok(), "{first:?}");
    let second = call_with(&fx, yes.clone(), "bash_input", json!({"session_id": id, "text": "f x')\n"}))
        .await
        .unwrap_err();
    assert!(second.contains("refused by the rule `deny Bash(rm -rf:*)`"), "{second}");
    let seen = yes.seen.lock().unwrap().clone();
    // (Where `python3` is a launcher, `readers` names the processes it runs.)
    let PermissionKind::Input { session_id, command, text, line_so_far, keys_changed, .. } =
        &seen.last().unwrap().kind
    else {
        panic!("{:?}", seen.last())
    };
    assert_eq!(
        (*session_id, command.as_str(), text.as_str(), line_so_far.as_str(), *keys_changed),
        (id, "python3 -u -i", "f x')\n", "os.system('rm -r", false)
    );
    // Ending the half line as it is (a syntax error for python), then an allowed line runs.
    let out = call_with(
        &fx,
        yes.clone(),
        "bash_input",
        json!({"session_id": id, "keys": ["enter"], "wait_ms": 200}),
    )
    .await;
    assert!(out.is_ok(), "{out:?}");
    let out =
        call_with(&fx, yes, "bash_input", json!({"session_id": id, "text": "print(6 * 7)\n", "until": "42"}))
            .await
            .unwrap();
    assert!(out.text_content().contains("42"), "{}", out.text_content());
    assert!(fx.root().join("x").is_dir(), "the directory was removed through the session");
    fx.call("bash_stop", json!({"session_id": id, "grace_ms": 0})).await;
}

#[tokio::test]
async fn a_shell_session_runs_the_lines_the_bash_rules_allow_and_no_other() {
    let fx = Fx::new("sessions-input-shell");
    std::fs::create_dir_all(fx.root().join("x")).unwrap();
    let nobody: Arc<dyn PermissionHook> =
        Arc::new(policy(&fx, |b| b.allow("Bash(bash)").allow("Bash(read-only)").deny("Bash(rm -rf:*)")));
    let started = call_with(
        &fx,
        nobody.clone(),
        "bash",
        json!({"command": "bash", "interactive": true, "background": true}),
    )
    .await
    .unwrap();
    let id = started.metadata["session_id"].as_u64().unwrap();
    let out = call_with(
        &fx,
        nobody.clone(),
        "bash_input",
        json!({"session_id": id, "text": "ls -d x\necho done\n", "until": "done"}),
    )
    .await
    .unwrap();
    assert!(out.text_content().starts_with("x\ndone\n"), "{}", out.text_content());
    // History expansion and completion: what runs is not what was typed.
    for text in [
        "rm -rf x\n",
        "/bin/rm -rf x\n",
        "touch y\n",
        "ls; rm -fr x\n",
        "r\\\nm -rf x\n",
        "^ls^rm\n",
        "!!:s/ls/rm/\n",
        "rm -r\t x\n",
        // Lines that set up what later lines or keys run.
        "history -s rm -rf x\n",
        "fc -s ls=rm\n",
        "bind -x '\"Q\": rm -rf x'\n",
    ] {
        let refused =
            call_with(&fx, nobody.clone(), "bash_input", json!({"session_id": id, "text": text})).await;
        assert!(refused.is_err(), "{text:?} was typed: {refused:?}");
    }
    // Half a line is not a way around the rules either, nor a line continued in the next call.
    let half = call_with(&fx, nobody.clone(), "bash_input", json!({"session_id": id, "text": "rm -r"})).await;
    assert!(half.is_err(), "{half:?}");
    let most: Arc<dyn PermissionHook> = Arc::new(policy(&fx, |b| b.allow("Bash").deny("Bash(rm -rf:*)")));
    let first = call_with(&fx, most.clone(), "bash_input", json!({"session_id": id, "text": "ec\\\n"})).await;
    assert!(first.is_ok(), "{first:?}");
    let rest =
        call_with(&fx, most, "bash_input", json!({"session_id": id, "text": "ho ok; rm -rf x\n"})).await;
    assert!(rest.is_err_and(|e| e.contains("`deny Bash(rm -rf:*)`")), "the continued line was typed");
    assert!(fx.root().join("x").is_dir());
    assert!(!fx.root().join("y").exists());
    fx.call("bash_stop", json!({"session_id": id, "grace_ms": 0})).await;
}

#[tokio::test]
async fn a_megabyte_typed_into_a_command_that_does_not_read_never_blocks_the_session() {
    let fx = Fx::new("sessions-input-full");
    let id = fx.start(json!({"command": "sleep 300", "interactive": true, "background": true})).await;
    let line = format!("{}\n", "y".repeat(99));
    let megabyte = line.repeat(10_000);
    let limit = Duration::from_secs(20);
    let out = tokio::time::timeout(
        limit,
        fx.call("bash_input", json!({"session_id": id, "text": megabyte, "wait_ms": 0})),
    )
    .await
    .expect("bash_input came back");
    let accepted = out.metadata["input_sent_bytes"].as_u64().expect("says how much was sent") as usize;
    assert!(accepted > 0 && accepted < 1_000_000 && accepted.is_multiple_of(100), "{accepted}");
    assert!(
        out.text_content().contains(&format!(
            "[only {accepted} of the 1000000 bytes were sent (the lines that fit); the rest, from byte {accepted}"
        )),
        "{}",
        out.text_content()
    );
    // Every other call still answers at once.
    let read =
        tokio::time::timeout(limit, fx.call("bash_output", json!({"session_id": id, "wait_ms": 0}))).await;
    assert!(read.is_ok(), "bash_output blocked");
    let list = tokio::time::timeout(limit, fx.call("bash_list", json!({}))).await;
    assert!(list.is_ok(), "bash_list blocked");
    // Once the pipe is full too, nothing more is taken.
    let mut refused = None;
    for _ in 0..4 {
        let ctx = ToolContext::builder("bash_input")
            .dependencies(fx.deps.clone())
            .session(fx.state().clone())
            .build();
        let args = json!({"session_id": id, "text": megabyte, "wait_ms": 0}).to_string();
        let sent =
            tokio::time::timeout(limit, fx.registry.call("bash_input", &args, ctx)).await.expect("came back");
        if let Err(e) = sent {
            refused = Some(e.message().to_owned());
            break;
        }
    }
    let refused = refused.expect("refused once full");
    assert!(refused.starts_with(&format!("Nothing was sent: session {id} has not read the ")), "{refused}");
    let stop =
        tokio::time::timeout(limit, fx.call("bash_stop", json!({"session_id": id, "grace_ms": 0}))).await;
    assert!(stop.is_ok(), "bash_stop blocked");
}

#[tokio::test]
async fn a_window_past_the_stores_limit_says_what_is_saved() {
    let mut fx = Fx::new("sessions-store-limit");
    let mut deps = (*fx.deps).clone();
    deps.insert(
        OutputStore::builder()
            .dir(fx.dir.path().join("small"))
            .max_output_bytes(30_000)
            .read_hint(tools_std::read_hint())
            .open()
            .unwrap(),
    );
    fx.deps = Arc::new(deps);
    let id = fx
        .start(json!({"command": "read -r go; seq 1 5000; read -r go; seq 5001 10000; read -r go; seq 10001 13000; sleep 300", "interactive": true, "background": true}))
        .await;
    // The first 23893 bytes are all saved.
    let out = fx
        .call("bash_input", json!({"session_id": id, "text": "go\n", "until": "\n5000\n", "wait_ms": 60000}))
        .await;
    let text = out.text_content();
    assert!(text.contains(" The full output is saved as "), "{text}");
    // These 29 KB cross the limit at 30000 bytes.
    let out = fx
        .call("bash_input", json!({"session_id": id, "text": "go\n", "until": "\n10000\n", "wait_ms": 60000}))
        .await;
    let text = out.text_content();
    let reference = out.metadata["truncation"]["output_ref"].as_str().expect("stored").to_owned();
    assert!(
        text.contains(&format!(
            "Only the first 30000 bytes of the output are saved, as {reference} (the store's limit for one \
             output): this part is saved up to its byte 6107; read the cut lines"
        )),
        "{text}"
    );
    assert!(!text.contains("The full output is saved"), "{text}");
    assert_eq!(out.metadata["truncation"]["stored_bytes"], json!(30000));
    // This one lies wholly past it.
    let out = fx
        .call("bash_input", json!({"session_id": id, "text": "go\n", "until": "\n13000\n", "wait_ms": 60000}))
        .await;
    let text = out.text_content();
    assert!(
        text.contains(&format!(
            "This part is not saved: the output store keeps only the first 30000 bytes of an output, and this \
             part starts after them ({reference} holds the beginning of the output).]"
        )),
        "{text}"
    );
    fx.call("bash_stop", json!({"session_id": id, "grace_ms": 0})).await;
}

/// Leaves the group (`setsid`), clears the environment (`env -i`) and double-forks, then the
/// session's shell exits: neither the shell, nor the group, nor the marker leads to it.
const ESCAPE: &str = "env -i setsid sh -c 'sleep 300 > /dev/null 2>&1 < /dev/null & echo $! > escaped.pid' \
                      > /dev/null 2>&1 < /dev/null & while [ ! -s escaped.pid ]; do sleep 0.01; done; echo started";

/// Starts [`ESCAPE`] in the background and waits until its shell has exited.
async fn escaped(fx: &Fx) -> (u64, i32) {
    let id = fx.start(json!({"command": format!("sleep 0.3; {ESCAPE}"), "background": true})).await;
    let pid = pid_in(&fx.root().join("escaped.pid")).await;
    for _ in 0..100 {
        let list = fx.call("bash_list", json!({})).await;
        if list.metadata["sessions"][0]["running"] == json!(false) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(runs(pid), "the escaped process {pid} runs");
    (id, pid)
}

#[tokio::test]
async fn bash_stop_kills_what_escaped_a_shell_that_has_exited() {
    let fx = Fx::new("sessions-escape-stop");
    let (id, pid) = escaped(&fx).await;
    let out = fx.call("bash_stop", json!({"session_id": id, "grace_ms": 0})).await;
    let survived = !gone(pid).await;
    let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    assert!(!survived, "the escaped process {pid} survived bash_stop: {}", out.text_content());
}

#[tokio::test]
async fn dropping_the_session_state_kills_what_escaped_a_shell_that_has_exited() {
    let mut fx = Fx::new("sessions-escape-drop");
    let (_, pid) = escaped(&fx).await;
    fx.state = None;
    let survived = !gone(pid).await;
    let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    assert!(!survived, "the escaped process {pid} survived the end of its session state");
}

#[tokio::test]
async fn what_escaped_a_session_whose_end_was_read_dies_with_the_session_state() {
    let mut fx = Fx::new("sessions-escape-read");
    let (id, pid) = escaped(&fx).await;
    let out = fx.call("bash_output", json!({"session_id": id, "wait_ms": 10000})).await;
    assert!(out.text_content().contains("it is closed now"), "{}", out.text_content());
    fx.state = None;
    let survived = !gone(pid).await;
    let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    assert!(!survived, "the escaped process {pid} survived the end of its session state");
}

#[tokio::test]
async fn in_a_terminal_backspaces_and_history_keys_do_not_get_around_a_deny_rule() {
    let fx = Fx::new("sessions-input-tty");
    if !terminal(&fx).await {
        return;
    }
    std::fs::create_dir_all(fx.root().join("x")).unwrap();
    let rules = policy(&fx, |b| b.allow("Bash(bash --norc)").allow("bash_input").deny("Bash(rm -rf:*)"));
    let rules: Arc<dyn PermissionHook> = Arc::new(rules);
    let started = call_with(
        &fx,
        rules.clone(),
        "bash",
        json!({"command": "bash --norc", "tty": true, "background": true}),
    )
    .await
    .unwrap();
    let id = started.metadata["session_id"].as_u64().unwrap();
    // `allow bash_input` lets ordinary lines through.
    let out = call_with(
        &fx,
        rules.clone(),
        "bash_input",
        json!({"session_id": id, "text": "echo fine\n", "until": "fine"}),
    )
    .await;
    assert!(out.is_ok(), "{out:?}");
    // The line editor turns `rm -rg<DEL>f x` into `rm -rf x`.
    let refused =
        call_with(&fx, rules.clone(), "bash_input", json!({"session_id": id, "text": "rm -rg\u{7f}f x\n"}))
            .await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("deny Bash(rm -rf:*)")), "{refused:?}");
    // Arrows move the cursor: `rm -f x`, three to the left, then `r`.
    let refused = call_with(
        &fx,
        rules.clone(),
        "bash_input",
        json!({"session_id": id, "text": "rm -f x", "keys": ["left", "left", "left"]}),
    )
    .await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("deny Bash(rm -rf:*)")), "{refused:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(fx.root().join("x").is_dir());
    fx.call("bash_stop", json!({"session_id": id, "grace_ms": 0})).await;
}

/// What runs in a shell session when text is typed decides who reads it: an interpreter started
/// in the shell reads code (its string literals are read by the rules), a program reading part
/// of a line (`head -c 5`) leaves the rest to the shell (so the rest is read as a command line
/// too), and keys changed by a program (`stty kill Q`, here through `termios`) make every line
/// unknowable.
#[tokio::test]
async fn what_a_shell_session_runs_meanwhile_decides_how_what_is_typed_is_read() {
    let fx = Fx::new("sessions-input-readers");
    if !terminal(&fx).await {
        return;
    }
    std::fs::write(fx.root().join("b1"), "keep").unwrap();
    let (rules, id) = guarded_session(&fx, "bash --norc", true).await;
    let typed = |text: &str| {
        call_with(&fx, rules.clone(), "bash_input", json!({"session_id": id, "text": text, "wait_ms": 500}))
    };
    // At the prompt, a line is read as it is.
    assert!(typed("echo rm b1\n").await.is_ok());
    // Python started in the shell reads the next line.
    assert!(typed("python3 -q\n").await.is_ok());
    let refused = typed("import os; os.system('rm b1')\n").await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("deny Bash(rm:*)")), "{refused:?}");
    let out =
        call_with(&fx, rules.clone(), "bash_input", json!({"session_id": id, "keys": ["ctrl_d"]})).await;
    assert!(out.is_ok(), "{out:?}");
    // `head -c 5` would take `echo ` and leave `rm b1` to the shell.
    assert!(typed("head -c 5\n").await.is_ok());
    let refused = typed("echo rm b1\n").await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("deny Bash(rm:*)") && e.contains("another program of the session")),
        "{refused:?}"
    );
    assert!(typed("y\n").await.is_ok(), "an answer with no command in it");
    let out =
        call_with(&fx, rules.clone(), "bash_input", json!({"session_id": id, "keys": ["ctrl_c"]})).await;
    assert!(out.is_ok(), "{out:?}");
    // Lines after the first of one call: the first may start a program that reads the next.
    let refused = typed("head -c 5\necho rm b1\n").await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("in a call of its own")), "{refused:?}");
    // The shell waits for a job, then starts what reads the next line: busy, it has each end of
    // a line read too.
    assert!(typed("sleep 2 & wait; head -c 3 > /dev/null\n").await.is_ok());
    let refused = typed("xx rm b1\n").await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("another program of the session")), "{refused:?}");
    let out =
        call_with(&fx, rules.clone(), "bash_input", json!({"session_id": id, "keys": ["ctrl_c"]})).await;
    assert!(out.is_ok(), "{out:?}");
    // A kill key of `Q` would end `echo x` and run `rm b1`.
    let keys = "python3 -c 'import termios as t; a = t.tcgetattr(0); a[6][t.VKILL] = b\"Q\"; t.tcsetattr(0, 0, a)'\n";
    assert!(typed(keys).await.is_ok());
    let refused = typed("echo xQrm b1\n").await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("line-editing keys")), "{refused:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(std::fs::read_to_string(fx.root().join("b1")).unwrap(), "keep");
    fx.call("bash_stop", json!({"session_id": id, "grace_ms": 0})).await;
}

/// Starts `command` in a session (in a terminal where `tty`) under rules that allow it and
/// typing, and deny `rm`: the rules, and the session's id.
async fn guarded_session(fx: &Fx, command: &str, tty: bool) -> (Arc<dyn PermissionHook>, u64) {
    let rules = policy(fx, |b| b.allow(format!("Bash({command})")).allow("bash_input").deny("Bash(rm:*)"));
    let rules: Arc<dyn PermissionHook> = Arc::new(rules);
    let start = json!({"command": command, "tty": tty, "interactive": !tty, "background": true});
    let started = call_with(fx, rules.clone(), "bash", start).await.unwrap();
    let id = started.metadata["session_id"].as_u64().unwrap();
    // Once the shell waits at its prompt (until then it is busy, and what is typed is read as
    // if something else might take part of it).
    let ready = json!({"session_id": id, "text": "echo re''ady\n", "until": "ready", "wait_ms": 10000});
    assert!(call_with(fx, rules.clone(), "bash_input", ready).await.is_ok());
    (rules, id)
}

/// Into a pipe, what is typed is read both as a line editor makes it (`bash -i` uses readline
/// there too) and as it is: a carriage return, Ctrl-U or a backspace may be a character of the
/// line the shell reads, not a line end or an edit that hides the rest.
#[tokio::test]
async fn what_is_typed_into_a_pipe_is_read_as_the_shell_reads_it() {
    let fx = Fx::new("sessions-input-pipe");
    std::fs::write(fx.root().join("v1"), "keep").unwrap();
    let (rules, id) = guarded_session(&fx, "bash --norc -i", false).await;
    let typed = |text: &str| {
        call_with(&fx, rules.clone(), "bash_input", json!({"session_id": id, "text": text, "wait_ms": 300}))
    };
    // `echo x\r# ; rm v1` is one line to bash: `x\r#` is a word, not a comment.
    assert!(typed("echo x\r").await.is_ok());
    let refused = typed("# ; rm v1\n").await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("deny Bash(rm:*)")), "{refused:?}");
    let refused = typed("\necho \u{15}# ; rm v1\n").await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("deny Bash(rm:*)")), "{refused:?}");
    assert!(typed("\necho fine\n").await.is_ok());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(std::fs::read_to_string(fx.root().join("v1")).unwrap(), "keep");
    fx.call("bash_stop", json!({"session_id": id, "grace_ms": 0})).await;
}
