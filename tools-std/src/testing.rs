//! Test fixtures: temporary directories and a workspace with the tools registered.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tool_runtime::{
    Registry, SessionState, ToolContext, ToolError, ToolOutput,
    context::Dependencies,
    hooks::{AllowAll, PermissionHook},
};

use crate::Workspace;

/// A directory under the system's temporary directory (canonical), removed on drop.
///
/// `tool-tests`'s, which this mirrors, is out of reach: `tool-tests` depends on this crate.
pub(crate) struct TempDir {
    /// Removes the directory when dropped.
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl TempDir {
    pub(crate) fn new() -> Self {
        let dir =
            tempfile::Builder::new().prefix("tools-std-").tempdir().expect("create a temporary directory");
        let path = std::fs::canonicalize(dir.path()).expect("canonical temporary directory");
        TempDir { _dir: dir, path }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// A workspace in a temporary directory (`dir/ws`, so `dir` itself is outside it), its
/// dependencies, one session, and a registry of every tool.
pub(crate) struct Fixture {
    pub(crate) dir: TempDir,
    pub(crate) ws: Workspace,
    pub(crate) deps: Arc<Dependencies>,
    pub(crate) session: SessionState,
    registry: Registry,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        Fixture::with_workspace(|ws| ws)
    }

    /// A fixture whose workspace is `configure`d first.
    pub(crate) fn with_workspace(configure: impl FnOnce(Workspace) -> Workspace) -> Self {
        let dir = TempDir::new();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).expect("create the workspace");
        let ws = configure(Workspace::new(&root).expect("workspace"));
        let mut deps = Dependencies::new();
        deps.insert(ws.clone());
        let store = tool_runtime::output_store::OutputStore::builder()
            .dir(dir.path().join("outputs"))
            .read_hint(crate::read_hint());
        deps.insert(store.open().expect("output store"));
        let registry = Registry::builder().tools(crate::all()).build().expect("no duplicate tools");
        Fixture { dir, ws, deps: Arc::new(deps), session: SessionState::new(), registry }
    }

    pub(crate) fn root(&self) -> &Path {
        self.ws.root()
    }

    /// Writes `content` to `rel` under the workspace root, creating parents.
    pub(crate) fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parents");
        }
        std::fs::write(&path, content).expect("write a fixture file");
        path
    }

    pub(crate) fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root().join(rel)).expect("read a fixture file")
    }

    pub(crate) fn ctx(&self, tool: &str) -> ToolContext {
        self.ctx_with(tool, Arc::new(tool_runtime::hooks::DefaultPermissions))
    }

    pub(crate) fn ctx_allow_all(&self, tool: &str) -> ToolContext {
        self.ctx_with(tool, Arc::new(AllowAll))
    }

    pub(crate) fn ctx_with(&self, tool: &str, permissions: Arc<dyn PermissionHook>) -> ToolContext {
        ToolContext::builder(tool)
            .call_id("call_1")
            .dependencies(self.deps.clone())
            .session(self.session.clone())
            .permissions(permissions)
            .build()
    }

    /// Calls `tool` with the JSON text `raw` through a dispatcher over every tool (lenient
    /// validation, the default permissions, this fixture's dependencies): the result as the
    /// model gets it, with `metadata.coercions`.
    pub(crate) async fn dispatch(&self, tool: &str, raw: &str) -> ToolOutput {
        let registry = Registry::builder().tools(crate::all()).build().expect("no duplicate tools");
        let dispatcher = tool_runtime::Dispatcher::builder(registry)
            .dependencies((*self.deps).clone())
            .session_state(self.session.clone())
            .build();
        let call = tool_runtime::ToolCall::new("call_1", tool, tool_runtime::Arguments::Text(raw.to_owned()));
        dispatcher.run(call, tool_runtime::CancellationToken::new()).await.output
    }

    /// The `(path, to)` pairs of a result's `metadata.coercions`.
    pub(crate) fn coercions(out: &ToolOutput) -> Vec<(String, String)> {
        out.metadata
            .get("coercions")
            .and_then(Value::as_array)
            .map(|all| {
                all.iter()
                    .map(|c| {
                        (
                            c["path"].as_str().unwrap_or("").to_owned(),
                            c["to"].as_str().unwrap_or("").to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Calls `tool` through the registry (validation included) with the default permissions.
    pub(crate) async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        self.call_with(self.ctx(tool), tool, args).await
    }

    pub(crate) async fn call_with(
        &self,
        ctx: ToolContext,
        tool: &str,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        self.registry.call(tool, &args.to_string(), ctx).await
    }

    /// The text of a successful call.
    pub(crate) async fn text(&self, tool: &str, args: Value) -> String {
        match self.call(tool, args).await {
            Ok(out) => out.text_content(),
            Err(e) => panic!("{tool} failed: {} ({:?})", e.message(), e.kind()),
        }
    }

    /// The message of a failed call.
    pub(crate) async fn error(&self, tool: &str, args: Value) -> ToolError {
        match self.call(tool, args).await {
            Ok(out) => panic!("{tool} succeeded: {}", out.text_content()),
            Err(e) => e,
        }
    }
}
