//! Without `--settings`, `tools call|turn|serve` load Claude Code's settings files (user,
//! project, local) merged as Claude Code merges them, and name them at start; `--settings FILE`
//! joins them, `--no-settings` sets them aside. A project's `.mcp.json` is named, and its servers start only
//! once approved. Each test has a home directory of its own (`HOME`).

use crate::common;

use common::{Fixture, Run, TOOLS};
use serde_json::json;

fn write(path: &std::path::Path, value: serde_json::Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, value.to_string()).unwrap();
}

/// `tools ARGS` in the fixture's workspace with `home` as HOME.
fn run(fx: &Fixture, home: &std::path::Path, args: &[&str]) -> Run {
    let mut command = fx.command(args);
    command.env("HOME", home).env_remove("CLAUDE_CONFIG_DIR");
    common::run(command, None)
}

#[test]
fn the_user_project_and_local_files_merge_as_in_claude_code() {
    let fx = Fixture::new();
    let (home, ws) = (fx.dir.path().join("home"), fx.ws());
    std::fs::write(ws.join("secret.txt"), "s\n").unwrap();
    let edit = json!({"path": "hello.txt", "old_string": "hello", "new_string": "howdy"}).to_string();
    let read_secret = json!({"path": "secret.txt"}).to_string();

    // No file anywhere: nothing changes, nothing is said.
    let plain = run(&fx, &home, &["call", "read", &read_secret]);
    assert_eq!((plain.code, plain.stderr.as_str()), (0, ""), "{}", plain.stdout);

    let user = home.join(".claude/settings.json");
    let project = ws.join(".claude/settings.json");
    let local = ws.join(".claude/settings.local.json");
    write(&user, json!({"permissions": {"defaultMode": "plan", "allow": ["Bash(ls:*)"]}}));
    write(&project, json!({"permissions": {"deny": ["Read(./secret.txt)"], "allow": ["Bash(ls:*)"]}}));
    write(&local, json!({"permissions": {"defaultMode": "acceptEdits"}}));
    let [user, project, local] = [user, project, local].map(|path| std::fs::canonicalize(path).unwrap());
    let (user, project, local) = (user.display(), project.display(), local.display());
    let loaded = format!("tools: settings: loaded {user} (user), {project} (project), {local} (local)\n");

    // The local file's mode wins over the user's; the project's deny rule holds.
    let edited = run(&fx, &home, &["call", "edit", &edit]);
    assert_eq!(edited.code, 0, "{}{}", edited.stdout, edited.stderr);
    assert_eq!(edited.stderr, loaded);
    let refused = run(&fx, &home, &["call", "read", &read_secret]);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    let output = refused.json()["output"].as_str().unwrap().to_owned();
    assert!(
        output.contains(&format!(
            "`deny Read(./secret.txt)` in {user} + {project} + {local} (permissions.deny)"
        )),
        "{output}"
    );

    // `--no-settings` loads none of them; `--settings FILE` joins them as Claude Code's own
    // `--settings` does (its mode above the local file's, their deny rule still holding), and
    // with `--no-settings` is alone.
    let none = run(&fx, &home, &["call", "read", &read_secret, "--no-settings"]);
    assert_eq!((none.code, none.stderr.as_str()), (0, ""), "{}", none.stdout);
    let extra = fx.dir.path().join("extra.json");
    write(&extra, json!({"permissions": {"defaultMode": "plan"}}));
    let extra_shown = std::fs::canonicalize(&extra).unwrap();
    let joined = run(&fx, &home, &["call", "read", &read_secret, "--settings", extra.to_str().unwrap()]);
    assert_eq!(joined.code, 1, "the project's deny rule was dropped: {}", joined.stdout);
    assert!(
        joined.stderr.contains(&format!("{} (command line)", extra_shown.display())),
        "{}",
        joined.stderr
    );
    let write_args = json!({"path": "new.txt", "content": "x"}).to_string();
    let planned = run(&fx, &home, &["call", "write", &write_args, "--settings", extra.to_str().unwrap()]);
    assert!(
        planned.json()["output"].as_str().unwrap().contains("permission mode `plan`"),
        "{}",
        planned.stdout
    );
    let alone = run(
        &fx,
        &home,
        &["call", "read", &read_secret, "--no-settings", "--settings", extra.to_str().unwrap()],
    );
    assert_eq!((alone.code, alone.stderr.as_str()), (0, ""), "{}", alone.stdout);

    // `CLAUDE_CONFIG_DIR` moves the user's file, as in Claude Code.
    let config_dir = fx.dir.path().join("config");
    write(&config_dir.join("settings.json"), json!({"permissions": {"deny": ["Read(./hello.txt)"]}}));
    let mut command = fx.command(&["call", "read", r#"{"path": "hello.txt"}"#]);
    command.env("HOME", &home).env("CLAUDE_CONFIG_DIR", &config_dir);
    let moved = common::run(command, None);
    assert!(
        moved.json()["output"].as_str().unwrap().contains("`deny Read(./hello.txt)`"),
        "{}",
        moved.stdout
    );
    let user = std::fs::canonicalize(config_dir.join("settings.json")).unwrap();
    assert!(
        moved.stderr.starts_with(&format!("tools: settings: loaded {} (user), ", user.display())),
        "{}",
        moved.stderr
    );
}

#[test]
fn a_projects_mcp_servers_start_once_approved() {
    let fx = Fixture::new();
    let (home, ws) = (fx.dir.path().join("home"), fx.ws());
    // The mounted server serves the same workspace, without its settings (which would mount it
    // again).
    let args = ["serve", "--sandbox", "off", "--no-settings", "--root", ws.to_str().unwrap()];
    let server = json!({"command": TOOLS, "args": args});
    write(&ws.join(".mcp.json"), json!({"mcpServers": {"inner": server}}));
    let mcp_json = std::fs::canonicalize(ws.join(".mcp.json")).unwrap();
    let read = json!({"path": "hello.txt"}).to_string();

    let unapproved = run(&fx, &home, &["call", "inner__read", &read]);
    assert_eq!(unapproved.code, 2, "{}", unapproved.stderr);
    let first = unapproved.stderr.lines().next().unwrap().to_owned();
    assert_eq!(
        first.replace(&mcp_json.display().to_string(), "MCP"),
        "tools: MCP: not starting inner (a project's servers start once approved: enabledMcpjsonServers or \
         enableAllProjectMcpServers in the settings, or --mcp-config MCP)"
            .replace(&mcp_json.display().to_string(), "MCP")
    );

    write(
        &ws.join(".claude/settings.local.json"),
        json!({"enabledMcpjsonServers": ["inner"], "permissions": {"allow": ["mcp__inner"]}}),
    );
    let approved = run(&fx, &home, &["call", "inner__read", &read]);
    assert_eq!(approved.code, 0, "{}{}", approved.stdout, approved.stderr);
    assert!(approved.stderr.contains(": starting inner\n"), "{}", approved.stderr);
    assert_eq!(approved.json()["output"], "     1\thello\n     2\tworld\n");
}

/// A settings file that is not a regular file (a FIFO, a link to a device) is an error naming
/// it, not a file quietly left out with its rules; nothing waits on the FIFO.
#[test]
fn a_settings_name_that_is_no_regular_file_is_an_error() {
    let fx = Fixture::new();
    let (home, ws) = (fx.dir.path().join("home"), fx.ws());
    let project = ws.join(".claude/settings.json");
    std::fs::create_dir_all(project.parent().unwrap()).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&project).status().unwrap().success());
    let run_ls = || run(&fx, &home, &["call", "ls", "{}"]);
    let fifo = run_ls();
    assert!(fifo.usage_error().ends_with(".claude/settings.json: not a regular file"), "{}", fifo.stderr);
    std::fs::remove_file(&project).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &project).unwrap();
    let device = run_ls();
    assert!(device.usage_error().ends_with(".claude/settings.json: not a regular file"), "{}", device.stderr);
}

/// As in Claude Code, a `/path` rule of the user's file is taken from Claude Code's
/// configuration directory (`~/.claude`, where the file is), not from each project:
/// `deny Read(/notes.txt)` there keeps `~/.claude/notes.txt` from being read and leaves
/// `~/notes.txt` and a project's `notes.txt` alone; one of a project's file, or of the file
/// `--settings` names, is taken from the project.
#[test]
fn a_slash_rule_is_taken_from_the_place_of_its_file() {
    let fx = Fixture::new();
    let (home, ws) = (fx.dir.path().join("home"), fx.ws());
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(home.join("notes.txt"), "home\n").unwrap();
    std::fs::write(home.join(".claude/notes.txt"), "config\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "project\n").unwrap();
    write(&home.join(".claude/settings.json"), json!({"permissions": {"deny": ["Read(/notes.txt)"]}}));
    let config_notes = std::fs::canonicalize(home.join(".claude/notes.txt")).unwrap();
    let home_notes = std::fs::canonicalize(home.join("notes.txt")).unwrap();
    let read = |path: &str, more: &[&str]| {
        let args = json!({"path": path}).to_string();
        let mut all = vec!["call", "read", &args, "--allow-outside-root"];
        all.extend(more);
        run(&fx, &home, &all)
    };
    assert_eq!(read("notes.txt", &[]).code, 0, "the project's notes.txt was refused");
    assert_eq!(read(home_notes.to_str().unwrap(), &[]).code, 0, "~/notes.txt was refused");
    let refused = read(config_notes.to_str().unwrap(), &[]);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(refused.json()["output"].as_str().unwrap().contains("deny Read(//"), "{}", refused.stdout);
    let elsewhere = fx.dir.path().join("elsewhere/settings.json");
    write(&elsewhere, json!({"permissions": {"deny": ["Read(/notes.txt)"]}}));
    std::fs::write(fx.dir.path().join("elsewhere/notes.txt"), "elsewhere\n").unwrap();
    assert_eq!(
        read("notes.txt", &["--settings", elsewhere.to_str().unwrap()]).code,
        1,
        "--settings: the project's"
    );
    std::fs::remove_file(&elsewhere).unwrap();
    write(&ws.join(".claude/settings.json"), json!({"permissions": {"deny": ["Read(/notes.txt)"]}}));
    assert_eq!(read("notes.txt", &[]).code, 1, "a project's rule is taken from the project");
}

/// As in Claude Code, `./name` is `name` (gitignore's rule): `deny Read(./.env)` covers every
/// `.env`, `./src/*.rs` only the root's `src`; and an `allow Edit` rule allows reading too.
#[test]
fn a_dot_slash_rule_matches_as_gitignore_does_and_an_edit_allow_allows_reading() {
    let fx = Fixture::new();
    let (home, ws) = (fx.dir.path().join("home"), fx.ws());
    for (path, text) in [
        (".env", "ROOT"),
        ("app/.env", "NESTED"),
        ("app/.env.local", "LOCAL"),
        ("src/a.rs", "a"),
        ("app/src/b.rs", "b"),
    ] {
        std::fs::create_dir_all(ws.join(path).parent().unwrap()).unwrap();
        std::fs::write(ws.join(path), text).unwrap();
    }
    let deny = json!({"permissions": {"deny": ["Read(./.env)", "Read(./.env.*)", "Read(./src/*.rs)"]}});
    write(&ws.join(".claude/settings.json"), deny);
    let read = |path: &str| run(&fx, &home, &["call", "read", &json!({"path": path}).to_string()]).code;
    assert_eq!([read(".env"), read("app/.env"), read("app/.env.local")], [1, 1, 1]);
    assert_eq!([read("src/a.rs"), read("app/src/b.rs")], [1, 0]);
    let cat = run(&fx, &home, &["call", "bash", &json!({"command": "cat app/.env"}).to_string()]);
    assert!(cat.code == 1 && !cat.stdout.contains("NESTED"), "{}", cat.stdout);
    // The root's `.env` is hidden from commands too, however they reach it, with or without `./`.
    for rule in ["Read(./.env)", "Read(.env)", "Read(.//.env)"] {
        write(&ws.join(".claude/settings.json"), json!({"permissions": {"allow": ["Bash"], "deny": [rule]}}));
        let loop_ = json!({"command": "for f in .e*; do cat \"$f\"; done; echo done"}).to_string();
        let out = run(&fx, &home, &["call", "bash", &loop_]);
        assert!(out.stdout.contains("done") && !out.stdout.contains("ROOT"), "{rule}: {}", out.stdout);
        assert_eq!([read(".env"), read("app/.env")], [1, 1], "{rule}");
    }

    // Outside the workspace, reading is refused by default; an allow rule on editing allows it,
    // a deny rule on reading still wins.
    let outside = fx.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("notes.txt"), "notes").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    let outside = std::fs::canonicalize(&outside).unwrap();
    let o = outside.display();
    std::fs::write(outside.join("locked.txt"), "locked").unwrap();
    let rules = json!({"permissions": {
        "allow": [format!("Edit(/{o}/**)")],
        "deny": [format!("Read(/{o}/secret.txt)"), format!("Edit(/{o}/locked.txt)")]
    }});
    write(&ws.join(".claude/settings.json"), rules);
    let read_outside =
        |name: &str| run(&fx, &home, &["call", "read", &json!({"path": format!("{o}/{name}")}).to_string()]);
    let notes = read_outside("notes.txt");
    assert!(notes.code == 0 && notes.stdout.contains("notes"), "{}", notes.stdout);
    assert_eq!(read_outside("secret.txt").code, 1);
    // Only where editing is allowed: a deny rule on editing it leaves reading to its default.
    assert_eq!(read_outside("locked.txt").code, 1);
    // So does one without a pattern.
    let rules = json!({"permissions": {"allow": [format!("Edit(/{o}/**)")], "deny": ["Edit"]}});
    write(&ws.join(".claude/settings.json"), rules);
    assert_eq!(read_outside("notes.txt").code, 1);
}
