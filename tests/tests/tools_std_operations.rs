//! The tools reach files and processes only through `Operations`: a workspace at `/sandbox`,
//! a path that exists nowhere on this machine, served by an implementation that maps it onto a
//! temporary directory, works for every tool.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_runtime::{Dependencies, Registry, ToolContext, ToolOutput};
use tools_std::LocalOperations;
use tools_std::Workspace;
use tools_std::ops::{
    DirEntry, FileInfo, Operations, Precondition, Scope, ShellProcess, ShellRequest, Target, WalkEntry,
    WalkOptions, Written,
};

const SANDBOX: &str = "/sandbox-that-does-not-exist";

/// Serves `SANDBOX` from a local directory, as a remote sandbox client would serve its paths:
/// targets are relative to the sandbox's root, link targets and the command's directory are
/// translated between the two names.
struct Remapped {
    real: PathBuf,
    local: LocalOperations,
    calls: AtomicUsize,
    commands: Mutex<Vec<String>>,
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
        self.local.create_dir_all(path)
    }
    fn write_atomic(&self, path: &Target, contents: &[u8], check: Precondition) -> io::Result<Written> {
        self.count(path)?;
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
    dir: PathBuf,
    ops: Arc<Remapped>,
    registry: Registry,
    deps: Arc<Dependencies>,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Setup {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("tools-std-ops-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = std::fs::canonicalize(dir).unwrap();
        let ops = Arc::new(Remapped {
            real: dir.clone(),
            local: LocalOperations::open(&dir).unwrap(),
            calls: AtomicUsize::new(0),
            commands: Mutex::new(Vec::new()),
        });
        let workspace = Workspace::with_operations(SANDBOX, ops.clone()).unwrap();
        assert_eq!(workspace.root(), Path::new(SANDBOX));
        let mut deps = Dependencies::new();
        deps.insert(workspace);
        let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
        Setup { dir, ops, registry, deps: Arc::new(deps) }
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        let ctx = ToolContext::builder(tool).dependencies(self.deps.clone()).build();
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
