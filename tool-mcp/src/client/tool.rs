//! A server's tool as one of ours: its spec from `tools/list`, its calls sent to the server.

use std::sync::Arc;

use serde_json::Value;

use super::naming::Naming;
use tool_core::BoxFuture;
use tool_core::Tool;
use tool_core::ToolContext;
use tool_core::ToolError;
use tool_core::ToolOutput;
use tool_core::ToolSpec;
use tool_providers::{DefinitionOptions, Provider};

/// Where a mounted tool's calls go: its server's connection.
pub(crate) trait Server: Send + Sync + 'static {
    /// One `tools/call` of the server's tool `remote`.
    fn call_tool<'a>(
        &'a self,
        remote: &'a str,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// A tool of a mounted server.
pub(crate) struct MountedTool {
    spec: ToolSpec,
    /// The server's own name for it.
    remote: String,
    server: Arc<dyn Server>,
}

impl Tool for MountedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, ctx: ToolContext, args: Value) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.server.call_tool(&self.remote, args, ctx)
    }
}

/// The tools of one `tools/list` answer, and those of its tools that cannot be used, each with
/// the reason (a sentence naming the tool), so that one bad definition costs that tool only.
#[derive(Default)]
pub(crate) struct Listed {
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    pub(crate) skipped: Vec<String>,
}

/// Builds the tools of one `tools/list` answer of the server `name` (named by `naming`, deferred
/// when `defer`), whose calls go to `server`. Each input and output schema must compile and
/// lower to every provider; a tool whose schema does not, that has no name, or whose name
/// another of its tools already takes, is left out with the reason.
pub(crate) fn mounted_tools(
    name: &str,
    naming: &Naming,
    defer: bool,
    server: &Arc<dyn Server>,
    listed: &[rmcp::model::Tool],
) -> Listed {
    let mount_name = name;
    let mut out = Listed { tools: Vec::with_capacity(listed.len()), skipped: Vec::new() };
    let mut seen: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for listed in listed {
        let remote = listed.name.to_string();
        if remote.is_empty() {
            out.skipped.push("it listed a tool without a name".to_owned());
            continue;
        }
        let name = naming.name(mount_name, &remote);
        if let Some(first) = seen.get(&name) {
            out.skipped.push(format!(
                "its tools `{first}` and `{remote}` would both be named `{name}`; `{remote}` is left out (give the \
                 server another naming rule to have both)"
            ));
            continue;
        }
        let mut spec = crate::wire::tool_spec(listed, name.clone());
        // Only a server's own word that the tool changes nothing lets calls of it overlap.
        spec.parallel = spec.annotations.read_only;
        spec.tags = vec!["mcp".to_owned(), format!("mcp:{mount_name}")];
        spec.defer = defer;
        if let Err(reason) = check_schemas(&spec, &remote) {
            out.skipped.push(format!("{reason}; that tool is left out, the others are mounted"));
            continue;
        }
        seen.insert(name, remote.clone());
        out.tools.push(Arc::new(MountedTool { spec, remote, server: server.clone() }));
    }
    out
}

fn check_schemas(spec: &ToolSpec, remote: &str) -> Result<(), String> {
    if let Err(reason) = tool_core::check_input_schema(&spec.name, &spec.input_schema) {
        return Err(format!("the input schema of its tool `{remote}` cannot be used: {reason}"));
    }
    for provider in Provider::ALL {
        if let Err(error) = provider.definition(spec, &DefinitionOptions::default()) {
            let place =
                if error.location.is_empty() { String::new() } else { format!(" at `{}`", error.location) };
            return Err(format!(
                "its tool `{remote}` cannot be described to {}{place}: {}",
                provider.display_name(),
                error.reason
            ));
        }
    }
    Ok(())
}
