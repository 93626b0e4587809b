//! Paths commands may not read (`denyRead`), and what is read back within them (`allowRead`,
//! the writable roots).

use tool_sandbox::Sandbox;

use super::{dir, layers, mounts, run_in};

#[test]
fn an_unreadable_path_is_empty_to_commands_and_what_is_read_back_is_whole() {
    if !layers() || !mounts() {
        return;
    }
    let home = dir("unreadable-home");
    let project = home.join("project");
    for sub in [".ssh", "src/secret", "project/.git"] {
        std::fs::create_dir_all(home.join(sub)).unwrap();
    }
    let write = |path: &str, text: &str| std::fs::write(home.join(path), text).unwrap();
    write(".ssh/id_ed25519", "PRIVATE-KEY");
    write(".netrc", "machine example.com password NETRC");
    write("src/main.rs", "fn main() {}");
    write("src/secret/token", "TOKEN");
    write("project/.env", "API_KEY=ENV");
    write("project/data.txt", "data");
    write("project/.git/config", "[core]");
    write(".gitconfig", "[user] name = GITCONFIG");
    let policy = tool_sandbox::SandboxPolicy::workspace_write(&project)
        .with_unreadable(&home)
        .with_unreadable(home.join(".ssh"))
        .with_readable(home.join("src"))
        .with_readable(home.join(".gitconfig"))
        .with_unreadable(home.join("src/secret"))
        .with_unreadable(project.join(".env"));
    let sandbox = Sandbox::new(policy).unwrap();
    assert!(sandbox.report().to_string().contains("commands cannot read"), "{}", sandbox.report());
    let h = home.display();
    let script = format!(
        "cat {h}/.ssh/id_ed25519 {h}/.netrc; ls -A {h} {h}/.ssh; cat /proc/self/root{h}/.netrc; \
         cat {h}/.gitconfig; echo; echo x >> {h}/.gitconfig; \
         cat {h}/src/main.rs; echo; cat {h}/src/secret/token; ls {h}/src/secret; cat .env; \
         echo overwritten > .env; mv .env moved; ln .env linked; rm -f .env; \
         mv {h}/src/secret {h}/src/s2; umount {h}; \
         cat data.txt; echo; echo made > made.txt; echo evil > .git/config; echo done"
    );
    let (_, out) = run_in(&sandbox, &project, &script);
    for secret in ["PRIVATE-KEY", "NETRC", "TOKEN", "API_KEY"] {
        assert!(!out.contains(secret), "{secret} was read: {out}");
    }
    assert!(out.contains("fn main() {}") && out.contains("data") && out.ends_with("done\n"), "{out}");
    assert!(out.contains("GITCONFIG"), "{out}");
    assert_eq!(std::fs::read_to_string(home.join(".gitconfig")).unwrap(), "[user] name = GITCONFIG");
    assert_eq!(std::fs::read_to_string(project.join(".env")).unwrap(), "API_KEY=ENV", "{out}");
    assert_eq!(std::fs::read_to_string(project.join(".git/config")).unwrap(), "[core]", "{out}");
    assert_eq!(std::fs::read_to_string(project.join("made.txt")).unwrap(), "made\n", "{out}");
    assert!(!project.join("moved").exists() && !project.join("linked").exists(), "{out}");
    assert!(home.join("src/secret/token").exists(), "{out}");
    // What was hidden is not listed: only the names on the way to what is read back.
    let (_, out) = run_in(&sandbox, &project, &format!("ls -A {h}"));
    assert_eq!(out.lines().collect::<Vec<_>>(), [".gitconfig", "project", "src"], "{out}");
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn an_unreadable_directory_inside_the_workspace_cannot_be_moved_out_from_under_its_mount() {
    if !layers() || !mounts() {
        return;
    }
    let root = dir("unreadable-inside");
    std::fs::create_dir_all(root.join("deep/private")).unwrap();
    std::fs::write(root.join("deep/private/key"), "SECRET").unwrap();
    let policy =
        tool_sandbox::SandboxPolicy::workspace_write(&root).with_unreadable(root.join("deep/private"));
    let sandbox = Sandbox::new(policy).unwrap();
    // Each command tries to move the directory (or one above it) away, and a later command
    // reads where it went.
    for (mover, reader) in [
        ("mv deep/private p2", "cat p2/key"),
        ("mv deep d2", "cat d2/private/key"),
        ("cp -r deep/private copy", "cat copy/key"),
        ("ln -s deep/private/key link", "cat link"),
    ] {
        let (_, out) = run_in(&sandbox, &root, &format!("{mover}; {reader}; echo done"));
        assert!(!out.contains("SECRET"), "{mover}: {out}");
        let (_, out) = run_in(&sandbox, &root, &format!("{reader}; echo done"));
        assert!(!out.contains("SECRET"), "{mover}, then {reader}: {out}");
    }
    assert_eq!(std::fs::read_to_string(root.join("deep/private/key")).unwrap(), "SECRET");
    // A writable root within it is read back, and stays writable.
    std::fs::create_dir_all(root.join("deep/private/out")).unwrap();
    let policy = tool_sandbox::SandboxPolicy::workspace_write(&root)
        .with_unreadable(root.join("deep/private"))
        .with_writable_root(root.join("deep/private/out"));
    let sandbox = Sandbox::new(policy).unwrap();
    let (_, out) = run_in(
        &sandbox,
        &root,
        "cat deep/private/key; echo made > deep/private/out/f && cat deep/private/out/f",
    );
    assert!(!out.contains("SECRET") && out.ends_with("made\n"), "{out}");
    assert_eq!(std::fs::read_to_string(root.join("deep/private/out/f")).unwrap(), "made\n");
}

#[test]
fn the_root_directory_cannot_be_made_unreadable() {
    if !layers() || !mounts() {
        return;
    }
    let root = dir("unreadable-root");
    let err =
        Sandbox::new(tool_sandbox::SandboxPolicy::workspace_write(&root).with_unreadable("/")).unwrap_err();
    assert!(err.to_string().contains("name the root directory"), "{err}");
}

#[test]
fn too_many_paths_read_back_in_one_directory_are_refused_with_the_reason() {
    if !layers() || !mounts() {
        return;
    }
    let home = dir("unreadable-many");
    let mut policy = tool_sandbox::SandboxPolicy::read_only().with_unreadable(&home);
    for n in 0..17 {
        std::fs::create_dir_all(home.join(format!("d{n}"))).unwrap();
        policy = policy.with_readable(home.join(format!("d{n}")));
    }
    let sandbox = Sandbox::new(policy).unwrap();
    let mut command = std::process::Command::new("true");
    let err = sandbox.apply(&mut command, &home).unwrap_err();
    assert!(err.to_string().contains("17 paths are readable again within the unreadable"), "{err}");
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn a_link_a_command_makes_at_a_hidden_name_hides_nothing_outside_the_workspace() {
    if !layers() || !mounts() {
        return;
    }
    let fx = super::fixture("unreadable-link");
    let policy =
        fx.policy.clone().with_unreadable(fx.root.join(".env")).with_unreadable(fx.root.join(".env.*"));
    let sandbox = Sandbox::new(policy).unwrap();
    let o = fx.outside.display();
    let (_, out) = run_in(&sandbox, &fx.root, &format!("ln -s {o} .env && ln -s /usr .env.x && echo made"));
    assert_eq!(out, "made\n");
    // The next command still runs, and reads what lies outside as before.
    let (code, out) =
        run_in(&sandbox, &fx.root, &format!("cat {o}/existing; ls /usr/bin > /dev/null && echo runs"));
    assert_eq!((code, out.as_str()), (0, "beforeruns\n"), "{out}");
}

#[test]
fn a_workspace_inside_another_writable_root_cannot_be_moved_for_a_link_to_an_unreadable_directory() {
    if !layers() || !mounts() {
        return;
    }
    let base = dir("nested-roots");
    let (outer, secret) = (base.join("home"), base.join("secret"));
    let workspace = outer.join("p/ws");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("key"), "SECRET-KEY").unwrap();
    let policy = tool_sandbox::SandboxPolicy::workspace_write(&workspace)
        .with_writable_root(&outer)
        .with_unreadable(&secret);
    let sandbox = Sandbox::new(policy).unwrap();
    let (o, s) = (outer.display(), secret.display());
    // The directory above the workspace, and the workspace itself, stay where they are.
    let (_, out) = run_in(
        &sandbox,
        &workspace,
        &format!(
            "cd /; mv {o}/p {o}/p.real; mv {o}/p/ws {o}/p/ws2; mkdir {o}/p2 && echo made; \
             rm -rf {o}/p; ln -s {s} {o}/p/ws; echo done"
        ),
    );
    assert!(out.contains("made") && out.ends_with("done\n"), "{out}");
    assert!(workspace.is_dir() && !outer.join("p.real").exists() && !outer.join("p/ws2").exists(), "{out}");
    assert!(!std::fs::symlink_metadata(&workspace).unwrap().file_type().is_symlink(), "{out}");
    let (_, out) = run_in(&sandbox, &workspace, &format!("pwd; cat {s}/key; cat key; echo done"));
    assert!(!out.contains("SECRET-KEY") && out.starts_with(&format!("{}\n", workspace.display())), "{out}");
    std::fs::remove_dir_all(&base).unwrap();
}
