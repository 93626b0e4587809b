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
/// when `defer`), whose calls go to `server`. A tool whose input schema does not compile or
/// cannot be described over MCP, that has no name, or whose name another of its tools already
/// takes, is left out with the reason.
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

/// Whether the tool can be served: its input schema compiles (so its arguments can be
/// validated) and it can be described over MCP (`tools serve` serves it as it was given). What
/// another provider cannot take only leaves the tool out of that provider's definitions
/// (`tools list --format`), with a warning there.
fn check_schemas(spec: &ToolSpec, remote: &str) -> Result<(), String> {
    if let Err(reason) = tool_core::check_input_schema(&spec.name, &spec.input_schema) {
        return Err(format!("the input schema of its tool `{remote}` cannot be used: {reason}"));
    }
    if let Err(error) = Provider::Mcp.definition(spec, &DefinitionOptions::default()) {
        let place =
            if error.location.is_empty() { String::new() } else { format!(" at `{}`", error.location) };
        return Err(format!(
            "its tool `{remote}` cannot be described to {}{place}: {}",
            Provider::Mcp.display_name(),
            error.reason
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nowhere;

    impl Server for Nowhere {
        fn call_tool<'a>(
            &'a self,
            _remote: &'a str,
            _args: Value,
            _ctx: ToolContext,
        ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async { Ok(ToolOutput::text("")) })
        }
    }

    fn listed(name: &str, input: Value, output: Option<Value>) -> rmcp::model::Tool {
        let mut value = serde_json::json!({"name": name, "inputSchema": input});
        if let Some(output) = output {
            value["outputSchema"] = output;
        }
        serde_json::from_value(value).unwrap()
    }

    /// One tool that cannot be served costs that tool alone, with a reason naming it; a schema
    /// only some providers cannot take (an `allOf` at the root) is kept.
    #[test]
    fn a_tool_that_cannot_be_served_is_left_out_with_its_reason() {
        let object = serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let all_of = serde_json::json!({"type": "object", "allOf": [{"required": ["a"]}],
            "if": {"required": ["a"]}, "then": {"properties": {"a": {"minLength": 1}}}});
        let tools = [
            listed("fine", object.clone(), None),
            listed("rooted", all_of, None),
            listed("broken", serde_json::json!({"type": "object", "properties": {"a": {"type": 5}}}), None),
            listed("texty", object.clone(), Some(serde_json::json!({"type": "string"}))),
            listed("", object.clone(), None),
        ];
        let server: Arc<dyn Server> = Arc::new(Nowhere);
        let out = mounted_tools("srv", &Naming::default(), false, &server, &tools);
        let names: Vec<&str> = out.tools.iter().map(|tool| tool.spec().name.as_str()).collect();
        assert_eq!(names, ["srv__fine", "srv__rooted"]);
        assert_eq!(out.skipped.len(), 3, "{:?}", out.skipped);
        assert!(
            out.skipped[0].starts_with("the input schema of its tool `broken` cannot be used: "),
            "{:?}",
            out.skipped
        );
        assert!(
            out.skipped[1].starts_with("its tool `texty` cannot be described to MCP: "),
            "{:?}",
            out.skipped
        );
        assert_eq!(out.skipped[2], "it listed a tool without a name");
    }
}
