//! The tools reach files and processes only through `Operations`: a workspace at `/sandbox`,
//! a path that exists nowhere on this machine, served by an implementation that maps it onto a
//! temporary directory, works for every tool.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_runtime::{Dependencies, Registry, ToolContext, ToolOutput};
use tools_std::Workspace;
use tools_std::ops::{
    DirEntry, FileInfo, LocalOperations, Operations, ShellProcess, ShellRequest, WalkEntry, WalkOptions,
};

const SANDBOX: &str = "/sandbox-that-does-not-exist";

/// Serves `SANDBOX` from a local directory, as a remote sandbox client would serve its paths.
struct Remapped {
    real: PathBuf,
    calls: AtomicUsize,
    commands: Mutex<Vec<String>>,
}

impl Remapped {
    fn to_real(&self, path: &Path) -> io::Result<PathBuf> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match path.strip_prefix(SANDBOX) {
            Ok(rest) => Ok(self.real.join(rest)),
            Err(_) if path == Path::new("/") => Ok(PathBuf::from("/")),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is not in the sandbox", path.display()),
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
    fn metadata(&self, path: &Path) -> io::Result<FileInfo> {
        if path == Path::new("/") {
            return LocalOperations.metadata(path);
        }
        LocalOperations.metadata(&self.to_real(path)?)
    }
    fn symlink_metadata(&self, path: &Path) -> io::Result<FileInfo> {
        LocalOperations.symlink_metadata(&self.to_real(path)?)
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        LocalOperations.read_link(&self.to_real(path)?).map(|target| self.to_sandbox(&target))
    }
    fn open(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        LocalOperations.open(&self.to_real(path)?)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        LocalOperations.read_dir(&self.to_real(path)?)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        LocalOperations.create_dir_all(&self.to_real(path)?)
    }
    fn write_atomic(&self, path: &Path, contents: &[u8]) -> io::Result<u64> {
        LocalOperations.write_atomic(&self.to_real(path)?, contents)
    }
    fn walk(
        &self,
        root: &Path,
        options: &WalkOptions,
        visit: &mut dyn FnMut(WalkEntry) -> bool,
    ) -> io::Result<()> {
        let real = self.to_real(root)?;
        LocalOperations.walk(&real, options, &mut |entry| {
            visit(WalkEntry { path: self.to_sandbox(&entry.path), ..entry })
        })
    }
    fn spawn_shell(&self, request: &ShellRequest) -> io::Result<ShellProcess> {
        self.commands.lock().unwrap().push(request.command.clone());
        LocalOperations.spawn_shell(&ShellRequest { cwd: self.to_real(&request.cwd)?, ..request.clone() })
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
