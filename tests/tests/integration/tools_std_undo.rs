//! Checkpoints and `undo` on real files: a `bash` call's `sed -i`, `rm`, `mv` and new files
//! undone exactly, an `edit` undone byte for byte (a property), conflicts refused, ignored and
//! large files left alone, and retention.

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};
use tool_runtime::{
    BoxFuture, PermissionKind, PermissionRequest, Registry, SessionState, ToolContext, ToolOutput,
    context::Dependencies,
    hooks::{AllowAll, PermissionDecision, PermissionHook},
};
use tool_tests::{TempDir, snapshot};
use tools_std::Workspace;
use tools_std::checkpoint::{CheckpointConfig, Checkpoints};

struct Session {
    _dir: TempDir,
    root: std::path::PathBuf,
    deps: Arc<Dependencies>,
    state: SessionState,
    registry: Registry,
    calls: std::sync::atomic::AtomicUsize,
}

impl Session {
    fn new(config: Option<CheckpointConfig>) -> Session {
        let dir = TempDir::new("undo");
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let ws = Workspace::new(&root).unwrap();
        let root = ws.root().to_path_buf();
        let mut deps = Dependencies::new();
        deps.insert(ws);
        let state = SessionState::new();
        if let Some(config) = config {
            state.get_or_insert_with(|| Checkpoints::new(config));
        }
        let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
        Session { _dir: dir, root, deps: Arc::new(deps), state, registry, calls: Default::default() }
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Calls `tool` with a new call id `c1`, `c2`, ...; returns the id and the output.
    async fn call(&self, tool: &str, args: Value) -> (String, ToolOutput) {
        self.call_with(tool, args, Arc::new(AllowAll)).await
    }

    async fn call_with(
        &self,
        tool: &str,
        args: Value,
        hook: Arc<dyn PermissionHook>,
    ) -> (String, ToolOutput) {
        self.call_in(None, tool, args, hook).await
    }

    /// Calls `tool` as a call of `turn`.
    async fn call_in(
        &self,
        turn: Option<&str>,
        tool: &str,
        args: Value,
        hook: Arc<dyn PermissionHook>,
    ) -> (String, ToolOutput) {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let id = format!("c{n}");
        let mut ctx = ToolContext::builder(tool)
            .call_id(id.clone())
            .dependencies(self.deps.clone())
            .session(self.state.clone())
            .permissions(hook);
        if let Some(turn) = turn {
            ctx = ctx.turn(turn);
        }
        let ctx = ctx.build();
        let out = match self.registry.call(tool, &args.to_string(), ctx).await {
            Ok(out) => out,
            Err(e) => ToolOutput::error(e.message().to_owned()),
        };
        (id, out)
    }

    async fn ok(&self, tool: &str, args: Value) -> (String, String) {
        let (id, out) = self.call(tool, args.clone()).await;
        assert!(!out.is_error, "{tool} {args}: {}", out.text_content());
        (id, out.text_content())
    }

    /// Calls `tool` in `turn`, and expects it to succeed.
    async fn ok_in(&self, turn: &str, tool: &str, args: Value) -> (String, String) {
        let (id, out) = self.call_in(Some(turn), tool, args.clone(), Arc::new(AllowAll)).await;
        assert!(!out.is_error, "{tool} {args}: {}", out.text_content());
        (id, out.text_content())
    }

    fn tree(&self) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        snapshot(&self.root)
    }

    fn checkpoints(&self) -> Arc<Checkpoints> {
        Checkpoints::in_state(&self.state)
    }
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode()
}

#[tokio::test]
async fn undo_of_a_bash_call_restores_the_tree_exactly_and_can_itself_be_undone() {
    let s = Session::new(None);
    s.write("src/lib.rs", "fn old() {}\nfn keep() {}\n");
    s.write("gone.txt", "to be removed\n");
    s.write("docs/moved.md", "# title\n");
    s.write("docs/deep/only.txt", "only file of its directory\n");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(s.root.join("src/lib.rs"), std::fs::Permissions::from_mode(0o754)).unwrap();
    }
    std::os::unix::fs::symlink("src/lib.rs", s.root.join("link")).unwrap();
    let before = s.tree();
    let lib_mode = mode(&s.root.join("src/lib.rs"));

    let (bash_id, _) = s
        .ok(
            "bash",
            json!({"command": "sed -i 's/old/new/' src/lib.rs && rm gone.txt && mv docs/moved.md moved.md \
                   && rm -r docs/deep && mkdir -p made/inner && echo new > made/inner/file.txt && echo x > fresh \
                   && ln -sf fresh link"}),
        )
        .await;
    let after = s.tree();
    assert_ne!(before, after);
    let listing = s.ok("checkpoints", json!({})).await.1;
    assert!(listing.contains(&format!("call_id={bash_id} bash")), "{listing}");
    assert!(
        listing.contains("~src/lib.rs") && listing.contains("-gone.txt") && listing.contains("+fresh"),
        "{listing}"
    );

    let (undo_id, text) = s.ok("undo", json!({"call_id": bash_id})).await;
    assert_eq!(s.tree(), before, "{text}");
    assert_eq!(mode(&s.root.join("src/lib.rs")), lib_mode);
    assert_eq!(std::fs::read_link(s.root.join("link")).unwrap(), Path::new("src/lib.rs"));
    assert!(text.contains("Removed (created by the calls)"), "{text}");

    // Undone already: said so, nothing written.
    let (_, again) = s.call("undo", json!({"call_id": bash_id})).await;
    assert!(again.is_error && again.text_content().contains("already undone"), "{}", again.text_content());
    assert_eq!(s.tree(), before);

    // Undoing the undo brings the command's changes back.
    s.ok("undo", json!({"call_id": undo_id})).await;
    assert_eq!(s.tree(), after);
    assert_eq!(std::fs::read_link(s.root.join("link")).unwrap(), Path::new("fresh"));
}

/// Names a command made that are not text (a line break, bytes that are not UTF-8) are listed
/// escaped, one per line, and an undo of them reports what it did rather than failing after it.
#[tokio::test]
async fn names_that_are_not_text_are_listed_escaped_and_undone() {
    let s = Session::new(None);
    s.write("keep.txt", "kept\n");
    let (bash_id, _) = s
        .ok(
            "bash",
            json!({"command": "touch \"$(printf 'bad\\377name')\" \"$(printf 'a\\n#9 call_id=x write')\""}),
        )
        .await;
    let listing = s.ok("checkpoints", json!({})).await.1;
    assert_eq!(listing.lines().count(), 1, "{listing}");
    assert!(
        listing.contains(r#"+"bad\xFFname""#) && listing.contains(r#"+"a\n#9 call_id=x write""#),
        "{listing}"
    );
    let (_, out) = s.call("undo", json!({"call_id": bash_id})).await;
    assert!(!out.is_error, "{}", out.text_content());
    assert!(out.text_content().contains(r#""bad\xFFname""#), "{}", out.text_content());
    assert_eq!(out.metadata["removed"].as_array().map(Vec::len), Some(2), "{:?}", out.metadata);
    assert_eq!(std::fs::read_dir(&s.root).unwrap().count(), 1, "only keep.txt is left");
}

/// `apply_patch` removes a symbolic link itself (on a delete, and as the source of a move), and
/// an undo brings back the link, pointing where it pointed, not a file with its target's content.
#[tokio::test]
async fn undo_of_a_patch_that_removed_a_link_brings_back_the_link() {
    let s = Session::new(None);
    s.write("src/a.txt", "one\ntwo\n");
    std::os::unix::fs::symlink("src/a.txt", s.root.join("link")).unwrap();
    std::os::unix::fs::symlink("src/a.txt", s.root.join("moved")).unwrap();
    std::os::unix::fs::symlink("nowhere.txt", s.root.join("dangling")).unwrap();
    let before = s.tree();
    let patch = "*** Begin Patch\n*** Delete File: link\n*** Delete File: dangling\n*** Update File: moved\n\
                 *** Move to: b.txt\n@@\n-one\n+uno\n*** End Patch\n";
    let (id, _) = s.ok("apply_patch", json!({ "patch": patch })).await;
    for name in ["link", "dangling", "moved"] {
        assert!(std::fs::symlink_metadata(s.root.join(name)).is_err(), "{name} was removed");
    }
    assert_eq!(std::fs::read_to_string(s.root.join("src/a.txt")).unwrap(), "one\ntwo\n");
    assert_eq!(std::fs::read_to_string(s.root.join("b.txt")).unwrap(), "uno\ntwo\n");

    let (_, text) = s.ok("undo", json!({ "call_id": id })).await;
    assert_eq!(s.tree(), before, "{text}");
    for (name, to) in [("link", "src/a.txt"), ("moved", "src/a.txt"), ("dangling", "nowhere.txt")] {
        let meta = std::fs::symlink_metadata(s.root.join(name)).unwrap();
        assert!(meta.file_type().is_symlink(), "{name} is a link again, not a file: {text}");
        assert_eq!(std::fs::read_link(s.root.join(name)).unwrap(), Path::new(to));
    }
    assert!(!s.root.join("b.txt").exists());
    assert_eq!(std::fs::read_to_string(s.root.join("src/a.txt")).unwrap(), "one\ntwo\n");
}

#[tokio::test]
async fn undo_of_the_last_calls_restores_their_first_state() {
    let s = Session::new(None);
    s.write("a.txt", "one\n");
    let before = s.tree();
    s.ok("edit", json!({"path": "a.txt", "old_string": "one", "new_string": "two"})).await;
    s.ok("write", json!({"path": "b.txt", "content": "b\n"})).await;
    s.ok(
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+three\n*** End Patch\n"}),
    )
    .await;
    s.ok("multi_edit", json!({"path": "b.txt", "edits": [{"old_string": "b", "new_string": "c"}]})).await;
    // A call that changed nothing has no checkpoint.
    s.ok("bash", json!({"command": "true"})).await;
    assert_eq!(s.checkpoints().list().len(), 4);
    let text = s.ok("undo", json!({"last": 3})).await.1;
    assert!(text.starts_with("Undid checkpoints #2, #3, #4."), "{text}");
    // Again: further back, not the undo just made.
    let text = s.ok("undo", json!({})).await.1;
    assert!(text.starts_with("Undid checkpoint #1."), "{text}");
    assert_eq!(s.tree(), before, "{text}");
    let (_, out) = s.call("undo", json!({})).await;
    assert!(out.is_error && out.text_content().contains("undone already"), "{}", out.text_content());
}

#[tokio::test]
async fn a_file_changed_since_the_call_is_a_conflict_and_nothing_is_written() {
    let s = Session::new(None);
    s.write("a.txt", "one\n");
    s.write("b.txt", "bee\n");
    let (id, _) =
        s.ok("bash", json!({"command": "echo two > a.txt; echo buzz > b.txt; echo n > new.txt"})).await;
    // Later work, outside any call: a.txt and new.txt changed, b.txt removed.
    s.write("a.txt", "later work\n");
    s.write("new.txt", "later work\n");
    std::fs::remove_file(s.root.join("b.txt")).unwrap();
    let tree = s.tree();
    let (_, out) = s.call("undo", json!({"call_id": id})).await;
    let text = out.text_content();
    assert!(out.is_error, "{text}");
    assert!(text.contains("3 files changed after the call"), "{text}");
    assert!(text.contains("- a.txt (changed since)") && text.contains("- b.txt (deleted since)"), "{text}");
    assert!(text.contains("- new.txt (changed since)"), "{text}");
    assert_eq!(s.tree(), tree, "a refused undo writes nothing");
    // Put back as the call left it, the undo goes through.
    s.write("a.txt", "two\n");
    s.write("new.txt", "n\n");
    s.write("b.txt", "buzz\n");
    s.ok("undo", json!({"call_id": id})).await;
    assert_eq!(std::fs::read_to_string(s.root.join("a.txt")).unwrap(), "one\n");
    assert_eq!(std::fs::read_to_string(s.root.join("b.txt")).unwrap(), "bee\n");
    assert!(!s.root.join("new.txt").exists());
}

#[tokio::test]
async fn undo_never_writes_through_a_parent_made_a_link_since() {
    let s = Session::new(None);
    s.write("sub/f.txt", "secret\n");
    let (id, _) = s.ok("bash", json!({"command": "rm sub/f.txt"})).await;
    let outside = s.root.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::remove_dir(s.root.join("sub")).unwrap();
    std::os::unix::fs::symlink(&outside, s.root.join("sub")).unwrap();
    let (_, out) = s.call("undo", json!({"call_id": id})).await;
    let text = out.text_content();
    assert!(out.is_error && text.contains("- sub/f.txt (its parent sub is a symbolic link)"), "{text}");
    assert!(!outside.join("f.txt").exists(), "written outside the workspace");
}

#[tokio::test]
async fn a_change_between_calls_belongs_to_no_call() {
    let s = Session::new(None);
    s.write("deep/er/a.txt", "a\n");
    s.write("b.txt", "b\n");
    s.ok("write", json!({"path": "c.txt", "content": "c\n"})).await;
    // Outside any call: an in-place write deep down, of the same size.
    std::fs::write(s.root.join("deep/er/a.txt"), "A\n").unwrap();
    s.ok("bash", json!({"command": "true"})).await;
    let (id, _) = s.ok("edit", json!({"path": "b.txt", "old_string": "b", "new_string": "B"})).await;
    let list = s.checkpoints().list();
    assert_eq!(list.len(), 2, "{list:?}");
    let paths: Vec<_> = list[1].changes.iter().map(|c| c.path.clone()).collect();
    assert_eq!(list[1].call_id, id);
    assert_eq!(paths, [std::path::PathBuf::from("b.txt")]);
    // And a command's in-place write deep down is its own.
    let (id, _) = s.ok("bash", json!({"command": "printf 'Z\\n' > deep/er/a.txt"})).await;
    s.ok("undo", json!({"call_id": id})).await;
    assert_eq!(std::fs::read_to_string(s.root.join("deep/er/a.txt")).unwrap(), "A\n");
}

/// Past the limit of watched directories every checkpoint is a full scan, and still sees
/// every change.
#[tokio::test]
async fn without_change_notifications_changes_are_still_seen() {
    for limit in [0, 2] {
        let s =
            Session::new(Some(CheckpointConfig { max_watched_dirs: limit, ..CheckpointConfig::default() }));
        s.write("a/b/c.txt", "c\n");
        s.write("a/d.txt", "d\n");
        s.ok("write", json!({"path": "x.txt", "content": "x\n"})).await;
        std::fs::write(s.root.join("a/b/c.txt"), "C\n").unwrap();
        let (id, _) = s.ok("bash", json!({"command": "echo D > a/d.txt"})).await;
        let list = s.checkpoints().list();
        let paths: Vec<_> = list[1].changes.iter().map(|c| c.path.clone()).collect();
        assert_eq!(paths, [std::path::PathBuf::from("a/d.txt")], "limit {limit}");
        s.ok("undo", json!({"call_id": id})).await;
        assert_eq!(std::fs::read_to_string(s.root.join("a/d.txt")).unwrap(), "d\n");
        assert_eq!(std::fs::read_to_string(s.root.join("a/b/c.txt")).unwrap(), "C\n");
    }
}

/// Denies the paths whose name is `.0`.
struct DenyName(&'static str);

impl PermissionHook for DenyName {
    fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
        let denied = matches!(&request.kind, PermissionKind::Path { path, .. } if path.ends_with(self.0));
        Box::pin(std::future::ready(if denied {
            PermissionDecision::Deny { reason: format!("{} is protected", self.0) }
        } else {
            PermissionDecision::Allow
        }))
    }
}

#[tokio::test]
async fn undo_asks_the_permission_hook_for_every_path_first() {
    let s = Session::new(None);
    s.write("a.txt", "a\n");
    s.write(".env", "KEY=1\n");
    let (id, _) = s.ok("bash", json!({"command": "echo A > a.txt; echo KEY=2 > .env"})).await;
    let (_, out) = s.call_with("undo", json!({"call_id": id}), Arc::new(DenyName(".env"))).await;
    assert!(out.is_error && out.text_content().contains(".env is protected"), "{}", out.text_content());
    assert_eq!(std::fs::read_to_string(s.root.join("a.txt")).unwrap(), "A\n", "nothing written");
    assert_eq!(std::fs::read_to_string(s.root.join(".env")).unwrap(), "KEY=2\n");
}

/// `undo` changes files as the tools that edit do, so the deny and ask rules on editing a path
/// hold for it too (a `bash` call's checkpoint records what any program changed meanwhile).
#[tokio::test]
async fn undo_meets_the_rules_on_editing_the_paths_it_would_change() {
    use tool_runtime::permissions::{Policy, Rules};
    let s = Session::new(None);
    s.write("secret/a.txt", "a\n");
    let (id, _) = s.ok("bash", json!({"command": "echo A > secret/a.txt; echo new > secret/b.txt"})).await;
    for rule in ["Edit(./secret/**)", "Write(./secret/**)", "apply_patch(./secret/**)"] {
        let rules =
            Rules::builder(&s.root).catalog(tools_std::permission_catalog()).deny(rule).build().unwrap();
        let (_, out) = s.call_with("undo", json!({"call_id": id}), Arc::new(Policy::new(rules))).await;
        let text = out.text_content();
        assert!(out.is_error && text.contains(&format!("`deny {rule}`")), "{rule}: {text}");
        assert_eq!(std::fs::read_to_string(s.root.join("secret/a.txt")).unwrap(), "A\n", "{rule}");
        assert!(s.root.join("secret/b.txt").exists(), "{rule}");
    }
    // A rule on other paths leaves it be.
    let rules = Rules::builder(&s.root)
        .catalog(tools_std::permission_catalog())
        .deny("Edit(./other/**)")
        .build()
        .unwrap();
    let (_, out) = s.call_with("undo", json!({"call_id": id}), Arc::new(Policy::new(rules))).await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(std::fs::read_to_string(s.root.join("secret/a.txt")).unwrap(), "a\n");
}

#[tokio::test]
async fn ignored_and_large_files_are_left_alone_and_the_result_says_so() {
    let s = Session::new(Some(CheckpointConfig { max_file_bytes: 64, ..CheckpointConfig::default() }));
    s.write(".gitignore", "ignored.txt\nbuild/\n");
    s.write("ignored.txt", "ignored before\n");
    s.write("big.bin", vec![b'a'; 100]);
    s.write("small.txt", "small before\n");
    let (id, _) = s
        .ok(
            "bash",
            json!({"command": "echo after > ignored.txt; printf '%0100d' 0 > big.bin; echo after > small.txt; \
                   mkdir build; echo out > build/out.o"}),
        )
        .await;
    let cp = &s.checkpoints().list()[0];
    assert!(cp.changes.iter().all(|c| !c.path.starts_with("ignored.txt") && !c.path.starts_with("build")));
    let store = s.checkpoints().store_dir().unwrap();
    assert!(!store.starts_with(&s.root), "the store is outside the workspace");
    let text = s.ok("undo", json!({"call_id": id})).await.1;
    assert_eq!(std::fs::read_to_string(s.root.join("small.txt")).unwrap(), "small before\n");
    assert_eq!(std::fs::read_to_string(s.root.join("ignored.txt")).unwrap(), "after\n");
    assert_eq!(std::fs::read(s.root.join("big.bin")).unwrap(), format!("{:0100}", 0).into_bytes());
    assert!(s.root.join("build/out.o").exists());
    assert!(
        text.contains("over the size limit before the calls (their content then was not kept) (1): big.bin"),
        "{text}"
    );
    assert!(text.contains(".gitignore ignores are not recorded"), "{text}");
}

#[tokio::test]
async fn a_file_kept_before_is_put_back_though_what_the_call_left_was_too_large_or_sparse() {
    let s = Session::new(Some(CheckpointConfig { max_file_bytes: 64, ..CheckpointConfig::default() }));
    s.write("grown.txt", "small before\n");
    s.write("sparse.txt", "sparse before\n");
    let (id, _) = s
        .ok(
            "bash",
            json!({"command": "printf '%0100d' 0 > grown.txt; truncate -s 1000000 sparse.txt; \
                   printf '%0100d' 0 > new.bin"}),
        )
        .await;
    let (undo, out) = s.call("undo", json!({"call_id": id})).await;
    let text = out.text_content();
    assert!(!out.is_error, "{text}");
    assert_eq!(std::fs::read_to_string(s.root.join("grown.txt")).unwrap(), "small before\n", "{text}");
    assert_eq!(std::fs::read_to_string(s.root.join("sparse.txt")).unwrap(), "sparse before\n", "{text}");
    assert!(!s.root.join("new.bin").exists(), "{text}");
    assert!(
        text.contains("undoing this undo cannot bring it back (3): grown.txt, new.bin, sparse.txt"),
        "{text}"
    );
    assert_eq!(out.metadata["discarded"], json!(["grown.txt", "new.bin", "sparse.txt"]));
    assert!(!text.contains("No file needed to change"), "{text}");
    // Undoing the undo cannot make the large content again: refused, and not marked as done.
    let out = s.call("undo", json!({"call_id": undo})).await.1;
    let text = out.text_content();
    assert!(out.is_error && text.contains("so there is nothing to put back. Nothing was written"), "{text}");
    assert!(
        text.contains("- grown.txt") && text.contains("- new.bin") && text.contains("- sparse.txt"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(s.root.join("grown.txt")).unwrap(), "small before\n");
    let listed = s.ok("checkpoints", json!({})).await.1;
    assert!(!listed.lines().any(|l| l.starts_with("#2 ") && l.contains("undone by")), "{listed}");

    // A file changed after the call is a conflict, as any other: by its size, or by its status
    // change time when its size and modification time were put back as they were.
    s.write("later.txt", "before\n");
    let (id, _) = s.ok("bash", json!({"command": "printf '%0100d' 0 > later.txt"})).await;
    s.write("later.txt", vec![b'b'; 200]);
    let out = s.call("undo", json!({"call_id": id})).await.1;
    assert!(
        out.is_error && out.text_content().contains("later.txt (changed since)"),
        "{}",
        out.text_content()
    );
    assert_eq!(std::fs::read(s.root.join("later.txt")).unwrap(), vec![b'b'; 200]);
    s.write("kept.txt", "before\n");
    let (id, _) = s.ok("bash", json!({"command": "printf '%0100d' 0 > kept.txt; sleep 0.05"})).await;
    let command = "M=$(stat -c %y kept.txt); printf '%0100d' 7 > kept.txt; touch -d \"$M\" kept.txt";
    s.ok("bash", json!({ "command": command })).await;
    let out = s.call("undo", json!({"call_id": id})).await.1;
    assert!(
        out.is_error && out.text_content().contains("kept.txt (changed since)"),
        "{}",
        out.text_content()
    );
    assert_eq!(std::fs::read(s.root.join("kept.txt")).unwrap(), format!("{:0100}", 7).into_bytes());
}

/// A file made sparse (under the size limit, but mostly holes) by a call is not kept either,
/// and is put back as one made too large is.
#[tokio::test]
async fn a_file_kept_before_is_put_back_though_the_call_made_it_sparse() {
    let s = Session::new(None);
    s.write("holes.bin", "kept before\n");
    let (id, _) = s.ok("bash", json!({"command": "truncate -s 900000 holes.bin"})).await;
    let after = &s.checkpoints().list()[0].changes[0].after;
    assert!(
        matches!(after, Some(tools_std::checkpoint::FileState::TooLarge { size: 900000, .. })),
        "{after:?}"
    );
    let (_, out) = s.call("undo", json!({"call_id": id})).await;
    assert_eq!(out.metadata["discarded"], json!(["holes.bin"]), "{}", out.text_content());
    assert_eq!(std::fs::read_to_string(s.root.join("holes.bin")).unwrap(), "kept before\n");
}

#[tokio::test]
async fn a_file_left_unread_by_a_scan_and_read_by_the_next_is_no_conflict() {
    // The scan after the call reads 64 bytes at most: the rest is read by the next one.
    let s = Session::new(Some(CheckpointConfig { max_read_bytes: 64, ..CheckpointConfig::default() }));
    s.write("a.txt", "a\n");
    let (id, _) = s
        .ok("bash", json!({"command": "mkdir d; for i in 1 2 3 4; do printf '%040d' $i > d/$i; done"}))
        .await;
    let changes = s.checkpoints().list()[0].changes.clone();
    let not_read = changes
        .iter()
        .filter(|c| matches!(c.after, Some(tools_std::checkpoint::FileState::NotRead { .. })))
        .count();
    assert!(not_read >= 2, "{changes:?}");
    s.ok("bash", json!({"command": "true"})).await;
    s.ok("bash", json!({"command": "true"})).await;
    let text = s.ok("undo", json!({"call_id": id})).await.1;
    assert!(text.contains("Removed (created by the calls) (5)"), "{text}");
    assert!(!s.root.join("d").exists());
}

#[tokio::test]
async fn a_file_the_call_made_that_is_ignored_now_is_a_conflict_not_undone() {
    let s = Session::new(None);
    let (id, _) = s.ok("write", json!({"path": ".env", "content": "API_KEY=made-by-the-call\n"})).await;
    s.ok("write", json!({"path": ".gitignore", "content": ".env\n"})).await;
    let out = s.call("undo", json!({"call_id": id})).await.1;
    let text = out.text_content();
    assert!(
        out.is_error && text.contains(".env (there now but not recorded: an ignore file names it"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(s.root.join(".env")).unwrap(), "API_KEY=made-by-the-call\n");
    let listed = s.ok("checkpoints", json!({})).await.1;
    assert!(!listed.contains("undone by"), "{listed}");
}

#[tokio::test]
async fn an_undo_with_nothing_kept_to_put_back_is_refused_and_the_call_stays_to_undo() {
    let s = Session::new(Some(CheckpointConfig { max_file_bytes: 64, ..CheckpointConfig::default() }));
    s.write("s.dat", "kept small\n");
    s.ok("bash", json!({"command": "printf '%0100d' 0 > s.dat"})).await;
    s.ok("bash", json!({"command": "echo more >> s.dat"})).await;
    let out = s.call("undo", json!({"last": 1})).await.1;
    assert!(out.is_error && out.text_content().contains("nothing to put back"), "{}", out.text_content());
    let listed = s.ok("checkpoints", json!({})).await.1;
    assert!(!listed.contains("undone by"), "{listed}");
    // Nor when the call's other file is back already: the large one's change is still there.
    s.ok("bash", json!({"command": "echo other > o.txt; echo more >> s.dat"})).await;
    s.write("o.txt", "");
    std::fs::remove_file(s.root.join("o.txt")).unwrap();
    let out = s.call("undo", json!({"last": 1})).await.1;
    assert!(out.is_error && out.text_content().contains("nothing to put back"), "{}", out.text_content());
    s.write("o.txt", "other\n");
    // The calls together: the content kept before the first is put back.
    let text = s.ok("undo", json!({"last": 3})).await.1;
    assert!(text.contains("Restored (1): s.dat"), "{text}");
    assert_eq!(std::fs::read_to_string(s.root.join("s.dat")).unwrap(), "kept small\n");
}

#[tokio::test]
async fn undoing_the_last_call_twice_undoes_two_calls_even_when_the_first_undo_wrote_nothing() {
    let s = Session::new(None);
    s.write("a.txt", "a before\n");
    s.write("b.txt", "b before\n");
    s.ok("bash", json!({"command": "echo a after > a.txt"})).await;
    s.ok("bash", json!({"command": "echo b after > b.txt"})).await;
    // Put back by something other than a call: the last call's undo has nothing to write.
    s.write("b.txt", "b before\n");
    let text = s.ok("undo", json!({"last": 1})).await.1;
    assert!(text.contains("No file needed to change"), "{text}");
    let listed = s.ok("checkpoints", json!({})).await.1;
    assert!(listed.contains("#2 call_id=c2 bash") && listed.contains("(undone by #3)"), "{listed}");
    assert!(listed.contains("#3 call_id=c3 undo") && listed.contains("no file changed"), "{listed}");
    let text = s.ok("undo", json!({"last": 1})).await.1;
    assert!(text.contains("Restored (1): a.txt"), "{text}");
    assert_eq!(std::fs::read_to_string(s.root.join("a.txt")).unwrap(), "a before\n");
}

#[tokio::test]
async fn retention_drops_the_oldest_checkpoints_and_their_stored_files() {
    let s = Session::new(Some(CheckpointConfig { max_checkpoints: 2, ..CheckpointConfig::default() }));
    let mut ids = Vec::new();
    for n in 0..4 {
        ids.push(
            s.ok("write", json!({"path": "f.txt", "content": format!("version {n} {}", "x".repeat(1000))}))
                .await
                .0,
        );
    }
    let kept: Vec<String> = s.checkpoints().list().iter().map(|c| c.call_id.clone()).collect();
    assert_eq!(kept, ids[2..]);
    // Versions 0 and 1 are needed by no checkpoint left: only 2 and 3 (and the current file) stay.
    assert_eq!(s.checkpoints().store_bytes(), 3 * 1010);
    let (_, out) = s.call("undo", json!({"call_id": ids[0]})).await;
    assert!(out.is_error && out.text_content().contains("No checkpoint of a call"), "{}", out.text_content());

    // By size: a store smaller than two versions keeps one checkpoint.
    let s = Session::new(Some(CheckpointConfig { max_store_bytes: 2500, ..CheckpointConfig::default() }));
    for n in 0..4 {
        s.ok("write", json!({"path": "f.txt", "content": format!("version {n} {}", "x".repeat(1000))})).await;
    }
    assert_eq!(s.checkpoints().list().len(), 1);
    assert!(s.checkpoints().store_bytes() <= 2500);
}

/// A store a killed process left behind is removed by the next session's first checkpoint made
/// in the same directory; a link planted under such a name is left alone, never followed.
#[tokio::test]
async fn stores_of_processes_gone_are_removed() {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let places = TempDir::new("stores");
    let left = places.path().join(format!("tools-checkpoints-{gone}-0-1"));
    std::fs::create_dir_all(left.join("objects/ab")).unwrap();
    let mine = places.path().join(format!("tools-checkpoints-{}-999-1", std::process::id()));
    std::fs::create_dir_all(mine.join("objects")).unwrap();
    let outside = places.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("kept"), "kept").unwrap();
    let planted = places.path().join(format!("tools-checkpoints-{gone}-planted"));
    std::os::unix::fs::symlink(&outside, &planted).unwrap();
    let dir = Some(places.path().to_path_buf());
    let s = Session::new(Some(CheckpointConfig { dir, ..CheckpointConfig::default() }));
    s.ok("write", json!({"path": "f.txt", "content": "x"})).await;
    assert!(!left.exists(), "a store of a process gone is removed");
    assert!(mine.exists(), "a store of a running process is kept");
    assert!(std::fs::symlink_metadata(&planted).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(outside.join("kept")).unwrap(), "kept", "not followed");
}

#[tokio::test]
async fn checkpoints_off_record_nothing() {
    let s = Session::new(None);
    s.state.get_or_insert_with(Checkpoints::off);
    s.ok("write", json!({"path": "f.txt", "content": "x"})).await;
    assert!(s.checkpoints().list().is_empty());
    let (_, out) = s.call("undo", json!({})).await;
    assert!(out.is_error && out.text_content().contains("Checkpoints are off"), "{}", out.text_content());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any file edited through `edit`, then undone, is byte-identical to the original.
    #[test]
    fn an_edit_undone_is_byte_identical(
        prefix in "[ -~\t\r\n\u{e9}\u{4e2d}\u{1f600}]{0,300}",
        suffix in "[ -~\t\r\n\u{e9}\u{4e2d}\u{1f600}]{0,300}",
        new in "[ -~\t\n\u{e9}]{0,60}",
        exec in any::<bool>(),
        crlf in any::<bool>(),
    ) {
        let marker = "\u{2603}MARK\u{2603}";
        prop_assume!(!prefix.contains(marker) && !suffix.contains(marker) && !new.contains(marker));
        let fix = |t: String| if crlf { t.replace('\n', "\r\n") } else { t };
        let original = fix(format!("{prefix}{marker}{suffix}"));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let s = Session::new(None);
            s.write("f.txt", &original);
            let file = s.root.join("f.txt");
            if exec {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            let mode_before = mode(&file);
            let (id, _) = s.ok("edit", json!({"path": "f.txt", "old_string": marker, "new_string": new})).await;
            assert_ne!(std::fs::read(&file).unwrap(), original.as_bytes());
            s.ok("undo", json!({"call_id": id})).await;
            assert_eq!(std::fs::read(&file).unwrap(), original.as_bytes());
            assert_eq!(mode(&file), mode_before);
        });
    }
}

#[tokio::test]
async fn undo_of_a_turn_undoes_all_of_its_calls_and_no_other() {
    let s = Session::new(None);
    s.write("a.txt", "one\n");
    s.write("keep.txt", "keep\n");
    let before = s.tree();
    s.ok_in("turn-1", "edit", json!({"path": "a.txt", "old_string": "one", "new_string": "two"})).await;
    s.ok_in("turn-1", "write", json!({"path": "b.txt", "content": "b\n"})).await;
    s.ok_in(
        "turn-1",
        "bash",
        json!({"command": "sed -i s/two/three/ a.txt && mkdir -p d/e && echo x > d/e/x && rm keep.txt"}),
    )
    .await;
    s.ok_in("turn-2", "write", json!({"path": "c.txt", "content": "c\n"})).await;
    let after_turn_2 = s.tree();

    let listing = s.ok("checkpoints", json!({})).await.1;
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 4, "{listing}");
    assert!(lines[0].starts_with("#1 call_id=c1 turn=turn-1 edit at "), "{listing}");
    assert!(lines[3].starts_with("#4 call_id=c4 turn=turn-2 write at "), "{listing}");

    // Turn 2's file stays; turn 1's three calls are undone together.
    let text = s.ok("undo", json!({"turn": "turn-1"})).await.1;
    assert!(text.starts_with("Undid checkpoints #1, #2, #3."), "{text}");
    let mut expected = before.clone();
    expected.extend(after_turn_2.iter().filter(|(p, _)| *p == s.root.join("c.txt")).cloned());
    expected.sort();
    assert_eq!(s.tree(), expected, "{text}");

    let (_, out) = s.call("undo", json!({"turn": "turn-1"})).await;
    assert!(out.is_error, "{}", out.text_content());
    assert!(
        out.text_content()
            .contains("Every call of turn turn-1 that changed files was already undone (by checkpoint #5)"),
        "{}",
        out.text_content()
    );
    // Undoing the undo brings the whole turn back.
    let undo_id = s.checkpoints().list().last().unwrap().call_id.clone();
    s.ok("undo", json!({"call_id": undo_id})).await;
    assert_eq!(s.tree(), after_turn_2);

    let (_, out) = s.call("undo", json!({"turn": "turn-9"})).await;
    assert!(out.is_error, "{}", out.text_content());
    assert!(
        out.text_content().contains("No checkpoint of a call in turn turn-9")
            && out.text_content().contains("The latest turns with calls that changed files: turn-2, turn-1."),
        "{}",
        out.text_content()
    );
    let (_, out) = s.call("undo", json!({"turn": "turn-1", "call_id": "c1"})).await;
    assert!(
        out.is_error && out.text_content().starts_with("Give one of `call_id`, `turn` and `last`"),
        "{}",
        out.text_content()
    );
}

/// What an undo writes is what the session knows of the files: they can be edited at once,
/// and a change made to them afterwards by another program is still caught.
#[tokio::test]
async fn files_an_undo_restored_are_known_to_the_stale_write_guard() {
    let s = Session::new(None);
    s.write("a.txt", "one\n");
    s.ok("read", json!({"path": "a.txt"})).await;
    s.ok("edit", json!({"path": "a.txt", "old_string": "one", "new_string": "two"})).await;
    s.ok("undo", json!({})).await;
    assert_eq!(std::fs::read_to_string(s.root.join("a.txt")).unwrap(), "one\n");
    s.ok("edit", json!({"path": "a.txt", "old_string": "one", "new_string": "three"})).await;
    s.ok("undo", json!({})).await;
    s.write("a.txt", "changed outside\n");
    let (_, out) = s.call("edit", json!({"path": "a.txt", "old_string": "changed", "new_string": "x"})).await;
    assert!(
        out.is_error && out.text_content().contains("has changed since it was last read"),
        "{}",
        out.text_content()
    );
}

#[tokio::test]
async fn a_turn_that_undid_its_own_call_is_undone_to_its_start() {
    let s = Session::new(None);
    s.write("a.txt", "one\n");
    let before = s.tree();
    let (first, _) =
        s.ok_in("t", "edit", json!({"path": "a.txt", "old_string": "one", "new_string": "two"})).await;
    s.ok_in("t", "undo", json!({"call_id": first})).await;
    s.ok_in("t", "write", json!({"path": "a.txt", "content": "three\n"})).await;
    s.ok_in("t", "write", json!({"path": "new.txt", "content": "new\n"})).await;
    s.ok("undo", json!({"turn": "t"})).await;
    assert_eq!(s.tree(), before);
}

#[tokio::test]
async fn a_turn_changed_by_a_later_call_is_a_conflict() {
    let s = Session::new(None);
    s.write("a.txt", "one\n");
    s.ok_in("t1", "write", json!({"path": "a.txt", "content": "two\n"})).await;
    s.ok_in("t2", "write", json!({"path": "a.txt", "content": "three\n"})).await;
    let (_, out) = s.call("undo", json!({"turn": "t1"})).await;
    assert!(out.is_error && out.text_content().contains("- a.txt (changed since)"), "{}", out.text_content());
    assert_eq!(std::fs::read_to_string(s.root.join("a.txt")).unwrap(), "three\n");
}

#[tokio::test]
async fn a_turn_id_cannot_pass_for_more_lines_of_the_listing() {
    let s = Session::new(None);
    let odd = "t\n#9 call_id=forged turn=x write at 00:00:00 UTC: ~secret";
    s.ok_in(odd, "write", json!({"path": "a.txt", "content": "a\n"})).await;
    let listing = s.ok("checkpoints", json!({})).await.1;
    assert_eq!(listing.lines().count(), 1, "{listing}");
    assert!(listing.contains(r#"turn="t\n#9 call_id=forged"#), "{listing}");
    // The id as given undoes the turn.
    s.ok("undo", json!({"turn": odd})).await;
    assert!(!s.root.join("a.txt").exists());
}

/// The host's turn id travels from `CallOptions` to each call's context, and from there into its
/// checkpoint: a dispatcher's batch undone as one turn.
#[tokio::test]
async fn the_dispatcher_gives_each_call_the_turn_of_its_options() {
    use tool_runtime::{CallOptions, CancellationToken, Dispatcher, ToolCall};
    let dir = TempDir::new("undo-turn");
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("keep.txt"), "keep\n").unwrap();
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
    let dispatcher = Dispatcher::builder(registry).dependency(Workspace::new(&root).unwrap()).build();
    let write = |id: &str, path: &str| ToolCall::new(id, "write", json!({"path": path, "content": "x\n"}));
    let turn = |calls: Vec<ToolCall>, turn: &str| {
        let options = CallOptions::default().turn(turn);
        calls.into_iter().map(move |call| (call, options.clone())).collect::<Vec<_>>()
    };
    let results = dispatcher
        .run_batch_with(
            turn(vec![write("a", "a.txt"), write("b", "b.txt")], "turn-1"),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(results.iter().all(|r| !r.output.is_error), "{results:?}");
    dispatcher
        .run_batch_with(turn(vec![write("c", "c.txt")], "turn-2"), CancellationToken::new())
        .await
        .unwrap();
    let listed = Checkpoints::in_state(dispatcher.session()).list();
    let turns: Vec<(&str, Option<&str>)> =
        listed.iter().map(|c| (c.call_id.as_str(), c.turn.as_deref())).collect();
    assert_eq!(turns, [("a", Some("turn-1")), ("b", Some("turn-1")), ("c", Some("turn-2"))]);

    let undo = ToolCall::new("u", "undo", json!({"turn": "turn-1"}));
    let result = dispatcher.run(undo, CancellationToken::new()).await;
    assert!(!result.output.is_error, "{}", result.output.text_content());
    let mut left: Vec<String> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    assert_eq!(left, ["c.txt", "keep.txt"]);
}

/// A command plants a link at the name undo once wrote through (`.NAME.undo-<host pid>`): the
/// undo writes beneath the workspace only, through a new name of its own.
#[tokio::test]
async fn undo_never_writes_through_a_link_planted_at_its_temporary_name() {
    let s = Session::new(None);
    s.write("f.txt", "one\n");
    let (id, _) = s.ok("write", json!({"path": "f.txt", "content": "two\n"})).await;
    let outside = s.root.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim"), "untouched\n").unwrap();
    let planted = s.root.join(format!(".f.txt.undo-{}", std::process::id()));
    std::os::unix::fs::symlink(outside.join("victim"), &planted).unwrap();
    s.ok("undo", json!({"call_id": id})).await;
    assert_eq!(std::fs::read_to_string(s.root.join("f.txt")).unwrap(), "one\n");
    assert_eq!(std::fs::read_to_string(outside.join("victim")).unwrap(), "untouched\n");
    assert_eq!(mode(&outside.join("victim")) & 0o777, 0o644);
    assert!(std::fs::symlink_metadata(&planted).unwrap().file_type().is_symlink());
}

/// A command deletes or overwrites the stored copies: undo names what is missing and refuses
/// before it writes anything (it used to fail half way).
#[tokio::test]
async fn a_store_that_lost_its_copies_refuses_undo_before_writing_anything() {
    for damage in ["removed", "overwritten"] {
        let s = Session::new(None);
        s.write("a.txt", "one\n");
        s.write("b.txt", "bee\n");
        let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** Delete File: b.txt\n*** Add File: \
                     c.txt\n+new\n*** End Patch\n";
        let (id, _) = s.ok("apply_patch", json!({"patch": patch})).await;
        let store = s.checkpoints().store_dir().unwrap();
        let mut stack = vec![store.join("objects")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                if entry.file_type().unwrap().is_dir() {
                    stack.push(entry.path());
                } else if damage == "removed" {
                    std::fs::remove_file(entry.path()).unwrap();
                } else {
                    std::fs::write(entry.path(), "forged\n").unwrap();
                }
            }
        }
        let tree = s.tree();
        let (_, out) = s.call("undo", json!({"call_id": id})).await;
        let text = out.text_content();
        assert!(out.is_error, "{damage}: {text}");
        assert!(text.starts_with("Undo refused: the checkpoint store no longer holds"), "{damage}: {text}");
        assert!(text.contains("\n- a.txt (") && text.contains("\n- b.txt ("), "{damage}: {text}");
        assert!(text.contains("Nothing was written"), "{text}");
        assert_eq!(s.tree(), tree, "{damage}: nothing written");
    }
}

/// A call whose checkpoint could not be recorded (no store can be made, or the store was
/// removed meanwhile) says so in its own result, not only in `checkpoints`.
#[tokio::test]
async fn a_call_whose_checkpoint_failed_says_so_in_its_result() {
    let dir = TempDir::new("no-store");
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let s =
        Session::new(Some(CheckpointConfig { dir: Some(file.join("store")), ..CheckpointConfig::default() }));
    let (_, out) = s.call("write", json!({"path": "f.txt", "content": "x"})).await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(out.metadata["checkpoint"]["recorded"], json!(false), "{:?}", out.metadata);
    let error = out.metadata["checkpoint"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("Cannot record a checkpoint of ") && error.ends_with("cannot be undone."),
        "{error}"
    );
    assert!(out.text_content().ends_with(&format!("\n[{error}]")), "{}", out.text_content());

    let s = Session::new(None);
    let (_, out) = s.call("write", json!({"path": "f.txt", "content": "x"})).await;
    assert!(out.metadata.get("checkpoint").is_none(), "{:?}", out.metadata);
    std::fs::remove_dir_all(s.checkpoints().store_dir().unwrap()).unwrap();
    let (_, out) = s.call("write", json!({"path": "f.txt", "content": "y"})).await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(out.metadata["checkpoint"]["recorded"], json!(false), "{:?}", out.metadata);
}

/// The first checkpoint of a session reads for a limited time (none here): a call that changed a
/// file not read by then says so in its result, and its undo leaves that file alone.
#[tokio::test]
async fn a_call_that_began_before_a_file_was_read_says_so() {
    let config =
        CheckpointConfig { first_read_time: std::time::Duration::ZERO, ..CheckpointConfig::default() };
    let s = Session::new(Some(config));
    s.write("a.txt", "one\n");
    let (id, out) = s.call("write", json!({"path": "a.txt", "content": "two\n"})).await;
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(out.metadata["checkpoint"]["not_read"], json!(1), "{:?}", out.metadata);
    // Nothing else to put back: refused, the call left to undo.
    let out = s.call("undo", json!({"call_id": id})).await.1;
    let text = out.text_content();
    assert!(
        out.is_error && text.contains("not read yet when the call began") && text.contains("- a.txt"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(s.root.join("a.txt")).unwrap(), "two\n");
}
