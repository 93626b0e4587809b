//! What a command's end says to the model: its exit, what killing it killed (in words and as
//! metadata), and how long it ran.

use std::fmt::Write as _;

use serde_json::json;

use crate::shell::process::{KillReport, KillScope, ShellExit};

/// The note of a command whose network stayed off although it was to have some.
pub(crate) fn off_note(reason: &str) -> String {
    format!("[the network stayed off for this command: {reason}]")
}

/// How an exit is reported, `None` for success.
pub(crate) fn exit_note(exit: ShellExit) -> Option<String> {
    match (exit.code, exit.signal) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("[exit code {code}]")),
        (None, Some(signal)) => Some(format!("[killed by signal {signal}{}]", signal_name(signal))),
        (None, None) => Some("[the command ended without an exit code]".to_owned()),
    }
}

/// What stopping the command killed, in one bracketed line.
pub(crate) fn kill_note(report: &KillReport) -> String {
    let mut note = match report.scope {
        KillScope::ProcessGroup => {
            "[killed the command's process group; processes that had left it were not looked for on \
             this system"
                .to_owned()
        }
        KillScope::ProcessTree => {
            let started = match (report.started, report.outside_group) {
                (0, _) => String::new(),
                (1, 1) => "1 process it started (it had left the command's process group)".to_owned(),
                (n, 0) => format!("{} it started", processes(n)),
                (n, out) => {
                    format!(
                        "{} it started ({out} of them had left the command's process group)",
                        processes(n)
                    )
                }
            };
            match (report.shell, started.is_empty()) {
                (true, true) => "[killed the command; no process it started was still running".to_owned(),
                (true, false) => format!("[killed the command and {started}"),
                (false, false) => format!("[the command had already exited; killed {started}"),
                (false, true) => "[nothing was left to kill: the command had already exited".to_owned(),
            }
        }
    };
    if !report.not_killed.is_empty() {
        let who: Vec<String> =
            report.not_killed.iter().map(|n| format!("pid {} ({})", n.pid, n.reason)).collect();
        let _ = write!(
            note,
            "; could not kill {}: {}; check with `ps -p PID` and stop it as its owner",
            processes(report.not_killed.len()),
            who.join(", ")
        );
    }
    note.push(']');
    note
}

fn processes(n: usize) -> String {
    if n == 1 { "1 process".to_owned() } else { format!("{n} processes") }
}

pub(crate) fn kill_metadata(report: &KillReport) -> serde_json::Value {
    let not_killed: Vec<serde_json::Value> =
        report.not_killed.iter().map(|n| json!({"pid": n.pid, "reason": n.reason})).collect();
    json!({
        "scope": match report.scope {
            KillScope::ProcessTree => "process_tree",
            KillScope::ProcessGroup => "process_group",
        },
        "command": report.shell,
        "started": report.started,
        "outside_group": report.outside_group,
        "not_killed": not_killed,
    })
}

pub(crate) fn signal_name(signal: i32) -> &'static str {
    match signal {
        1 => " (SIGHUP)",
        2 => " (SIGINT)",
        6 => " (SIGABRT)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        13 => " (SIGPIPE)",
        15 => " (SIGTERM)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::shell::process::NotKilled;

    #[test]
    fn the_kill_note_says_what_was_killed_and_what_was_not() {
        let tree = |shell, started, outside_group, not_killed| KillReport {
            scope: KillScope::ProcessTree,
            shell,
            started,
            outside_group,
            not_killed,
        };
        assert_eq!(
            kill_note(&tree(true, 0, 0, vec![])),
            "[killed the command; no process it started was still running]"
        );
        assert_eq!(kill_note(&tree(true, 2, 0, vec![])), "[killed the command and 2 processes it started]");
        assert_eq!(
            kill_note(&tree(false, 1, 1, vec![])),
            "[the command had already exited; killed 1 process it started (it had left the command's process group)]"
        );
        assert_eq!(
            kill_note(&tree(false, 0, 0, vec![])),
            "[nothing was left to kill: the command had already exited]"
        );
        let refused = NotKilled { pid: 4242, reason: "not permitted: it runs as another user".to_owned() };
        assert_eq!(
            kill_note(&tree(true, 3, 2, vec![refused.clone()])),
            "[killed the command and 3 processes it started (2 of them had left the command's process group); \
             could not kill 1 process: pid 4242 (not permitted: it runs as another user); check with `ps -p PID` \
             and stop it as its owner]"
        );
        assert_eq!(
            kill_metadata(&tree(true, 3, 2, vec![refused]))["not_killed"],
            json!([{"pid": 4242, "reason": "not permitted: it runs as another user"}])
        );
        let group = KillReport { scope: KillScope::ProcessGroup, ..KillReport::default() };
        assert_eq!(
            kill_note(&group),
            "[killed the command's process group; processes that had left it were not looked for on this system]"
        );
        assert_eq!(kill_metadata(&group)["scope"], json!("process_group"));
    }
}
