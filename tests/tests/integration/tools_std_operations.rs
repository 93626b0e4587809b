//! The tools reach files and processes only through `Operations`: a workspace at `/sandbox`,
//! a path that exists nowhere on this machine, served by an implementation that maps it onto a
//! temporary directory, works for every tool. Recording what the tools ask of it also checks
//! each tool's annotations against what the tool does.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_runtime::{
    Registry, SessionState, ToolContext, ToolOutput, context::Dependencies, output_store::OutputStore,
};
use tool_tests::{TempDir, snapshot};
use tools_std::LocalOperations;
use tools_std::Workspace;
use tools_std::ops::{
    DirEntry, FileInfo, Operations, Precondition, Scope, ShellProcess, ShellRequest, Target, WalkEntry,
    WalkOptions, Written,
};
use tools_std::todo_write::TodoList;

const SANDBOX: &str = "/sandbox-that-does-not-exist";

/// Serves `SANDBOX` from a local directory, as a remote sandbox client would serve its paths:
/// targets are relative to the sandbox's root, link targets and the command's directory are
/// translated between the two names.
struct Remapped {
    real: PathBuf,
    local: LocalOperations,
    calls: AtomicUsize,
    commands: Mutex<Vec<String>>,
    /// The targets of every write and directory creation, in order.
    changes: Mutex<Vec<PathBuf>>,
}

impl Remapped {
    fn count(&self, target: &Target) -> io::Result<()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match target.scope() {
            Scope::Workspace => Ok(()),
            Scope::Outside => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is not in the sandbox", target.path().display()),
            )),
        }
    }

    fn to_sandbox(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.real) {
            Ok(rest) => Path::new(SANDBOX).join(rest),
            Err(_) => path.to_path_buf(),
        }
    }
}

impl Operations for Remapped {
    fn metadata(&self, path: &Target) -> io::Result<FileInfo> {
        self.count(path)?;
        self.local.metadata(path)
    }
    fn symlink_metadata(&self, path: &Target) -> io::Result<FileInfo> {
        self.count(path)?;
        self.local.symlink_metadata(path)
    }
    fn read_link(&self, path: &Target) -> io::Result<PathBuf> {
        self.count(path)?;
        self.local.read_link(path).map(|target| self.to_sandbox(&target))
    }
    fn open(&self, path: &Target) -> io::Result<Box<dyn Read + Send>> {
        self.count(path)?;
        self.local.open(path)
    }
    fn read_dir(&self, path: &Target) -> io::Result<Vec<DirEntry>> {
        self.count(path)?;
        self.local.read_dir(path)
    }
    fn create_dir_all(&self, path: &Target) -> io::Result<()> {
        self.count(path)?;
        self.changes.lock().unwrap().push(path.path().to_path_buf());
        self.local.create_dir_all(path)
    }
    fn write_atomic(&self, path: &Target, contents: &[u8], check: Precondition) -> io::Result<Written> {
        self.count(path)?;
        self.changes.lock().unwrap().push(path.path().to_path_buf());
        self.local.write_atomic(path, contents, check)
    }
    fn walk(
        &self,
        root: &Target,
        options: &WalkOptions,
        visit: &mut dyn FnMut(WalkEntry) -> bool,
    ) -> io::Result<()> {
        self.count(root)?;
        self.local.walk(root, options, visit)
    }
    fn spawn_shell(&self, request: &ShellRequest) -> io::Result<ShellProcess> {
        self.commands.lock().unwrap().push(request.command.clone());
        let rest = request.cwd.strip_prefix(SANDBOX).map_err(|_| io::Error::from(io::ErrorKind::NotFound))?;
        self.local.spawn_shell(&ShellRequest { cwd: self.real.join(rest), ..request.clone() })
    }
}

struct Setup {
    /// The directory the sandbox is served from.
    dir: PathBuf,
    /// Holds `dir` (`sandbox`) and the output store (`outputs`), outside the sandbox.
    temp: TempDir,
    ops: Arc<Remapped>,
    registry: Registry,
    deps: Arc<Dependencies>,
    session: SessionState,
}

impl Setup {
    fn new() -> Self {
        let temp = TempDir::new("operations");
        let dir = temp.path().join("sandbox");
        std::fs::create_dir_all(&dir).unwrap();
        let ops = Arc::new(Remapped {
            real: dir.clone(),
            local: LocalOperations::open(&dir).unwrap(),
            calls: AtomicUsize::new(0),
            commands: Mutex::new(Vec::new()),
            changes: Mutex::new(Vec::new()),
        });
        // Commands run in `dir`, where the remapped operations start them: the sandbox lets them
        // write there.
        let workspace = Workspace::with_operations(SANDBOX, ops.clone()).unwrap().with_sandbox(
            tools_std::tool_sandbox::SandboxPolicy::workspace_write(SANDBOX).with_writable_root(&dir),
        );
        assert_eq!(workspace.root(), Path::new(SANDBOX));
        let mut deps = Dependencies::new();
        deps.insert(workspace);
        deps.insert(OutputStore::open_dir(temp.path().join("outputs")).unwrap());
        let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
        Setup { dir, temp, ops, registry, deps: Arc::new(deps), session: SessionState::new() }
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        let ctx =
            ToolContext::builder(tool).dependencies(self.deps.clone()).session(self.session.clone()).build();
        match self.registry.call(tool, &args.to_string(), ctx).await {
            Ok(out) => out,
            Err(e) => panic!("{tool} {args}: {}", e.message()),
        }
    }
}

#[tokio::test]
async fn every_tool_works_through_the_operations() {
    let s = Setup::new();
    let out =
        s.call("write", json!({"path": "src/main.rs", "content": "fn main() {\n    old();\n}\n"})).await;
    assert_eq!(out.text_content(), "Wrote 25 bytes to src/main.rs (new file).");
    assert_eq!(std::fs::read_to_string(s.dir.join("src/main.rs")).unwrap(), "fn main() {\n    old();\n}\n");

    let out =
        s.call("edit", json!({"path": "src/main.rs", "old_string": "old();", "new_string": "new();"})).await;
    assert_eq!(
        out.text_content(),
        "Edited src/main.rs: replaced 1 occurrence at line 2 (1 line removed, 1 line added)."
    );

    let out = s.call("read", json!({"path": format!("{SANDBOX}/src/main.rs")})).await;
    assert_eq!(out.text_content(), "     1\tfn main() {\n     2\t    new();\n     3\t}\n");

    assert_eq!(s.call("glob", json!({"pattern": "**/*.rs"})).await.text_content(), "src/main.rs\n");
    assert_eq!(
        s.call("grep", json!({"pattern": "new"})).await.text_content(),
        "src/main.rs\n  2:     new();\n"
    );
    assert_eq!(s.call("ls", json!({})).await.text_content(), "./\n  src/\n    main.rs\n");

    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(s.dir.join("src"), s.dir.join("link")).unwrap();
        let out = s.call("read", json!({"path": "link/main.rs"})).await;
        assert_eq!(out.text_content(), "     1\tfn main() {\n     2\t    new();\n     3\t}\n");
        let ctx = ToolContext::builder("read").dependencies(s.deps.clone()).build();
        let err = s.registry.call("read", r#"{"path": "../etc/passwd"}"#, ctx).await.unwrap_err();
        assert_eq!(err.kind(), tool_runtime::ErrorKind::PermissionDenied);
    }

    let out = s.call("bash", json!({"command": "ls src"})).await;
    assert_eq!(out.text_content(), "main.rs\n");
    assert_eq!(*s.ops.commands.lock().unwrap(), ["ls src"]);
    assert!(s.ops.calls.load(Ordering::SeqCst) > 10);
}

/// Everything a tool call can change: files (the sandbox and the output store), what was asked of
/// the operations, the session's todo list.
#[derive(Debug, PartialEq)]
struct World {
    files: Vec<(PathBuf, Vec<u8>)>,
    changes: usize,
    commands: usize,
    todos: Option<String>,
    /// Background sessions running.
    sessions: usize,
}

impl World {
    /// What `s` holds, but for the stored copy named `live` (a background session's capture,
    /// which its command writes to whenever it prints, whichever tool is called meanwhile).
    fn of(s: &Setup, live: &str) -> World {
        let mut files = snapshot(s.temp.path());
        files.retain(|(path, _)| path.file_name().is_none_or(|name| name != live));
        World {
            files,
            changes: s.ops.changes.lock().unwrap().len(),
            commands: s.ops.commands.lock().unwrap().len(),
            todos: s.session.get::<TodoList>().map(|list| format!("{:?}", list.items())),
            sessions: s
                .session
                .get::<tools_std::session::Sessions>()
                .map_or(0, |sessions| sessions.running()),
        }
    }

    /// Whether a file that existed in `self` holds other content (or is gone) in `after`.
    fn overwritten_in(&self, after: &World) -> bool {
        self.files.iter().any(|(path, content)| {
            !content.is_empty() && after.files.iter().all(|(p, c)| p != path || c != content)
        })
    }
}

/// Each tool's annotations, checked against a typical call: a read-only tool changes no file, runs
/// no command and leaves the session as it was, and every other tool changes one of them; an
/// open-world tool runs a command and no other tool does; a destructive tool replaces content that
/// was there; an idempotent tool called twice leaves what one call left; and a tool that runs in
/// parallel with others is read-only.
#[tokio::test]
async fn annotations_match_what_each_tool_does() {
    let s = Setup::new();
    std::fs::create_dir_all(s.dir.join("src")).unwrap();
    std::fs::write(s.dir.join("src/main.rs"), "fn main() {\n    old();\n}\n").unwrap();
    std::fs::write(s.dir.join("notes.txt"), "first\n").unwrap();
    let store = s.deps.get::<OutputStore>().unwrap();
    let stored = store.save("line 1\nline 2\n").unwrap().reference.to_string();
    s.session.get_or_insert_with(TodoList::default);
    // A background session that answers its input by writing a file.
    let started = s
        .call("bash", json!({"command": "read -r line; echo \"$line\" > answer.txt; echo written; sleep 300", "interactive": true, "background": true}))
        .await;
    let session = started.metadata["session_id"].as_u64().expect("a background session");
    // Listing waits until the session's stored copy exists, which the cases must find in place.
    let listed = s.call("bash_list", json!({})).await;
    let live = listed.metadata["sessions"][0]["output_ref"].as_str().map(str::to_owned);
    let live = live.unwrap_or_else(|| panic!("{:?}", listed.metadata));

    let cases = [
        ("read", json!({"path": "src/main.rs"})),
        ("glob", json!({"pattern": "**/*"})),
        ("grep", json!({"pattern": "main"})),
        ("ls", json!({})),
        ("tool_output_read", json!({"ref": stored})),
        ("tool_output_grep", json!({"ref": stored, "pattern": "line"})),
        ("todo_read", json!({})),
        ("bash_list", json!({})),
        ("bash_output", json!({"session_id": session})),
        ("bash_input", json!({"session_id": session, "text": "yes\n", "wait_ms": 60000, "until": "written"})),
        ("bash_stop", json!({"session_id": session, "grace_ms": 0})),
        ("write", json!({"path": "notes.txt", "content": "second\n"})),
        ("edit", json!({"path": "src/main.rs", "old_string": "old();", "new_string": "new();"})),
        (
            "multi_edit",
            json!({"path": "src/main.rs", "edits": [{"old_string": "new();", "new_string": "newer();"}]}),
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: src/main.rs\n@@\n-    newer();\n+    newest();\n*** End Patch\n"}),
        ),
        // `bash` may destroy: its typical call here replaces a file's content.
        ("bash", json!({"command": "printf 'third\\n' > notes.txt"})),
        ("todo_write", json!({"todos": [{"content": "Check the annotations", "status": "in_progress"}]})),
    ];
    let covered: Vec<&str> = cases.iter().map(|(tool, _)| *tool).collect();
    // `undo` and `checkpoints` work on a local workspace's files and store only, never through
    // the operations: `tools_std_undo.rs` tests them. `ask_user` asks a person, not the
    // operations (its own tests and the MCP tests cover it).
    for name in s.registry.names().filter(|n| !["undo", "checkpoints", "ask_user"].contains(n)) {
        assert!(covered.contains(&name), "add a typical call of `{name}` to this test");
    }

    for (tool, args) in cases {
        let spec = s.registry.get(tool).unwrap().spec();
        let annotations = &spec.annotations;
        assert!(!spec.parallel || annotations.read_only, "`{tool}` runs in parallel but is not read-only");
        assert!(!annotations.destructive || !annotations.read_only, "`{tool}` is destructive and read-only");

        let before = World::of(&s, &live);
        let out = s.call(tool, args.clone()).await;
        assert!(!out.is_error, "{tool} {args}: {}", out.text_content());
        let after = World::of(&s, &live);
        if annotations.read_only {
            assert_eq!(before, after, "`{tool}` is read-only but its call changed something");
        } else {
            assert_ne!(before, after, "`{tool}` is not read-only, yet its call changed nothing");
        }
        let ran_a_command = after.commands > before.commands;
        assert_eq!(
            ran_a_command, annotations.open_world,
            "`{tool}`: open_world, and whether it ran a command"
        );
        if annotations.destructive {
            assert!(before.overwritten_in(&after), "`{tool}` is destructive but replaced nothing");
        }
        if annotations.idempotent {
            s.call(tool, args.clone()).await;
            let again = World::of(&s, &live);
            assert_eq!(
                after.files, again.files,
                "`{tool}` is idempotent, but a second call changed the files"
            );
            assert_eq!(
                after.todos, again.todos,
                "`{tool}` is idempotent, but a second call changed the todos"
            );
        }
    }
}
