//! A server's tool as one of ours: its spec from `tools/list`, its calls sent to the server.

use std::sync::Arc;

use serde_json::Value;

use super::mount::MountInner;
use tool_core::BoxFuture;
use tool_core::Tool;
use tool_core::ToolContext;
use tool_core::ToolError;
use tool_core::ToolOutput;
use tool_core::{ToolAnnotations, ToolSpec};
use tool_providers::{DefinitionOptions, Provider};

/// A tool of a mounted server.
pub(crate) struct MountedTool {
    spec: ToolSpec,
    /// The server's own name for it.
    remote: String,
    mount: Arc<MountInner>,
}

impl Tool for MountedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, ctx: ToolContext, args: Value) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.mount.call(&self.remote, args, ctx))
    }
}

/// Builds the tools of one `tools/list` answer (in wire form). Each input and output schema must
/// compile and lower to every provider; the error names the tool and the place in its schema.
pub(crate) fn mounted_tools(mount: &Arc<MountInner>, listed: &[Value]) -> Result<Vec<Arc<dyn Tool>>, String> {
    let server = &mount.config.name;
    let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(listed.len());
    let mut seen: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for entry in listed {
        let field = |key: &str| entry.get(key).and_then(Value::as_str);
        let remote = field("name").ok_or("it listed a tool without a name")?.to_owned();
        let name = mount.config.naming.name(server, &remote);
        if let Some(first) = seen.insert(name.clone(), remote.clone()) {
            return Err(format!(
                "its tools `{first}` and `{remote}` would both be named `{name}`; give the server another naming rule"
            ));
        }
        let input_schema = entry.get("inputSchema").cloned().unwrap_or(Value::Null);
        let mut spec = ToolSpec::new(name, field("description").unwrap_or_default(), input_schema);
        if let Some(output_schema) = entry.get("outputSchema").filter(|s| !s.is_null()) {
            spec.output_schema = Some(output_schema.clone());
        }
        spec.annotations = annotations(entry);
        // Only a server's own word that the tool changes nothing lets calls of it overlap.
        spec.parallel = spec.annotations.read_only;
        spec.tags = vec!["mcp".to_owned(), format!("mcp:{server}")];
        spec.defer = mount.config.defer;
        check_schemas(&spec, &remote)?;
        tools.push(Arc::new(MountedTool { spec, remote, mount: mount.clone() }));
    }
    Ok(tools)
}

fn annotations(entry: &Value) -> ToolAnnotations {
    let hints = entry.get("annotations");
    let hint = |key: &str| hints.and_then(|h| h.get(key)).and_then(Value::as_bool) == Some(true);
    let title = entry
        .get("title")
        .or_else(|| hints.and_then(|h| h.get("title")))
        .and_then(Value::as_str)
        .map(str::to_owned);
    ToolAnnotations {
        title,
        read_only: hint("readOnlyHint"),
        destructive: hint("destructiveHint"),
        idempotent: hint("idempotentHint"),
        open_world: hint("openWorldHint"),
    }
}

fn check_schemas(spec: &ToolSpec, remote: &str) -> Result<(), String> {
    if let Err(reason) = tool_core::schema::check_input_schema(&spec.name, &spec.input_schema) {
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
