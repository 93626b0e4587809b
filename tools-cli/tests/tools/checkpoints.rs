//! End-to-end tests of checkpoints under `tools serve`: what commands leave in the workspace
//! (FIFOs and device links at ignore files, a file swapped for a link to the host's
//! environment) never steers the host's scan, and `--checkpoints off`.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{Fixture, TOOLS};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

/// Every call answers within this (the old scan hung for good on a FIFO).
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// `tools serve EXTRA...` in the fixture's workspace, with its temporary, data and state
/// directories inside the fixture, and `env` added to its environment.
async fn connect(fx: &Fixture, extra: &[&str], env: &[(&str, &str)]) -> RunningService<RoleClient, ()> {
    let (ws, root) = (fx.ws(), fx.dir.path().to_path_buf());
    let temp = root.join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let extra: Vec<String> = extra.iter().map(|s| (*s).to_owned()).collect();
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let command = tokio::process::Command::new(TOOLS).configure(|cmd| {
        cmd.arg("serve")
            .args(&extra)
            .current_dir(&ws)
            .env("XDG_DATA_HOME", root.join("data"))
            .env("XDG_STATE_HOME", root.join("state"))
            .env("TMPDIR", &temp)
            .envs(env.iter().map(|(k, v)| (k, v)));
    });
    let transport = TokioChildProcess::new(command).expect("spawn tools serve");
    ().serve(transport).await.expect("initialize")
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, arguments: Value) -> (bool, String) {
    let Value::Object(arguments) = arguments else { panic!("arguments must be an object") };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    let result: CallToolResult = tokio::time::timeout(ANSWER_WITHIN, client.call_tool(params))
        .await
        .unwrap_or_else(|_| panic!("{name} did not answer within {ANSWER_WITHIN:?}"))
        .unwrap();
    let value = serde_json::to_value(&result).unwrap();
    let text = value["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n");
    (result.is_error == Some(true), text)
}

/// Every regular file beneath `dir`, not following links.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => stack.push(entry.path()),
                Ok(kind) if kind.is_file() => found.push(entry.path()),
                _ => {}
            }
        }
    }
    found
}

#[tokio::test]
async fn checkpoints_off_records_nothing_and_undo_says_so() {
    let fx = Fixture::new();
    let client = connect(&fx, &["--sandbox", "off", "--checkpoints", "off"], &[]).await;
    let (error, text) = call(&client, "write", json!({"path": "hello.txt", "content": "changed\n"})).await;
    assert!(!error, "{text}");
    let (error, text) = call(&client, "undo", json!({})).await;
    assert!(error && text.contains("Checkpoints are off"), "{text}");
    assert_eq!(std::fs::read_to_string(fx.ws().join("hello.txt")).unwrap(), "changed\n");
    let (_, text) = call(&client, "checkpoints", json!({})).await;
    assert!(text.starts_with("Checkpoints are off"), "{text}");
    client.cancel().await.unwrap();

    // On by default: the same call is undone.
    let client = connect(&fx, &["--sandbox", "off"], &[]).await;
    call(&client, "write", json!({"path": "hello.txt", "content": "again\n"})).await;
    let (error, text) = call(&client, "undo", json!({})).await;
    assert!(!error, "{text}");
    assert_eq!(std::fs::read_to_string(fx.ws().join("hello.txt")).unwrap(), "changed\n");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_settings_file_turns_checkpoints_off_and_the_flag_wins() {
    let fx = Fixture::new();
    let settings = fx.dir.path().join("settings.json");
    let text = r#"{"checkpoints": {"enabled": false}, "permissions": {"defaultMode": "acceptEdits"}}"#;
    std::fs::write(&settings, text).unwrap();
    let settings = settings.to_str().unwrap();
    let client = connect(&fx, &["--sandbox", "off", "--settings", settings], &[]).await;
    call(&client, "write", json!({"path": "hello.txt", "content": "changed\n"})).await;
    let (error, text) = call(&client, "undo", json!({})).await;
    assert!(error && text.contains("Checkpoints are off"), "{text}");
    client.cancel().await.unwrap();
    let client =
        connect(&fx, &["--sandbox", "off", "--settings", settings, "--checkpoints", "on"], &[]).await;
    call(&client, "write", json!({"path": "hello.txt", "content": "again\n"})).await;
    let (error, text) = call(&client, "undo", json!({})).await;
    assert!(!error, "{text}");
    client.cancel().await.unwrap();

    std::fs::write(fx.dir.path().join("bad.json"), r#"{"checkpoints": {"enabled": "no"}}"#).unwrap();
    let bad = fx.dir.path().join("bad.json");
    let run =
        fx.run(&["call", "read", r#"{"path": "hello.txt"}"#, "--settings", bad.to_str().unwrap()], None);
    let error = run.usage_error();
    assert!(
        error.contains("`checkpoints.enabled`: invalid type: string \"no\", expected a boolean"),
        "{error}"
    );
}

/// A command makes every ignore file a FIFO or a link to `/dev/zero`: every later call still
/// answers (the scan used to block on the FIFO for good, or read `/dev/zero` until memory ran
/// out), and can still be undone.
#[tokio::test]
async fn fifos_and_device_links_at_ignore_files_do_not_stop_the_host() {
    let fx = Fixture::new();
    let client = connect(&fx, &["--sandbox", "off"], &[]).await;
    let plant = "mkdir -p .git/info sub && mkfifo .gitignore sub/.ignore .git/info/exclude \
                 && ln -s /dev/zero .ignore && ln -s /dev/zero sub/.gitignore && echo planted";
    let (error, text) = call(&client, "bash", json!({"command": plant})).await;
    assert!(!error && text.starts_with("planted"), "{text}");
    let (error, text) = call(&client, "write", json!({"path": "hello.txt", "content": "changed\n"})).await;
    assert!(!error, "{text}");
    let (error, text) = call(&client, "undo", json!({})).await;
    assert!(!error, "{text}");
    assert_eq!(std::fs::read_to_string(fx.ws().join("hello.txt")).unwrap(), "hello\nworld\n");
    client.cancel().await.unwrap();
}

/// A background command keeps replacing a workspace file with a link to `/proc/self/environ`
/// (the host's environment, when the host reads it) and to a file outside the workspace, while
/// 60 calls make the host scan: neither the host's environment nor the outside file ever
/// reaches a file of the fixture (the store included, which a command could read).
#[tokio::test]
async fn a_file_swapped_for_links_never_brings_the_hosts_environment_into_the_store() {
    let fx = Fixture::new();
    let marker = "host-secret-5f1c9e0a7b3d";
    let outside_marker = "outside-secret-8d2e4c6a";
    std::fs::write(fx.dir.path().join("outside-secret"), outside_marker).unwrap();
    let client = connect(&fx, &["--sandbox", "off"], &[("TOOLS_TEST_HOST_SECRET", marker)]).await;
    let outside = fx.dir.path().join("outside-secret");
    let swap = format!(
        "nohup sh -c 'while [ -d \"$PWD\" ] && [ ! -e stop ]; do ln -sfn /proc/self/environ .l1 && mv -fT .l1 swapped.txt; printf inside > .f1 && mv -fT .f1 \
         swapped.txt; ln -sfn {} .l2 && mv -fT .l2 swapped.txt; printf inside > .f2 && mv -fT .f2 swapped.txt; \
         done' > /dev/null 2>&1 &",
        outside.display()
    );
    let (error, text) = call(&client, "bash", json!({"command": swap})).await;
    assert!(!error, "{text}");
    for n in 0..60 {
        let (error, text) =
            call(&client, "write", json!({"path": "hello.txt", "content": format!("{n}\n")})).await;
        assert!(!error, "{text}");
    }
    let checkpoints = call(&client, "checkpoints", json!({})).await.1;
    assert!(checkpoints.contains("swapped.txt"), "the swaps raced the scans: {checkpoints}");
    for file in files(fx.dir.path()) {
        if file.ends_with("outside-secret") {
            continue;
        }
        // The command still swaps files for links: read only the regular file listed, not what a
        // link swapped in since leads to.
        use std::os::unix::fs::MetadataExt;
        let Ok(listed) = std::fs::symlink_metadata(&file) else { continue };
        let Ok(mut opened) = std::fs::File::open(&file) else { continue };
        let same = opened.metadata().is_ok_and(|m| (m.dev(), m.ino()) == (listed.dev(), listed.ino()));
        if !listed.is_file() || !same {
            continue;
        }
        let mut bytes = Vec::new();
        if std::io::Read::read_to_end(&mut opened, &mut bytes).is_err() {
            continue;
        }
        let holds = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
        assert!(!holds(marker), "{} holds the host's environment", file.display());
        assert!(!holds(outside_marker), "{} holds the outside file", file.display());
    }
    std::fs::write(fx.ws().join("stop"), "").unwrap();
    client.cancel().await.unwrap();
}
