//! Paged lists both ways: `McpServer` cuts `tools/list`, `resources/list`,
//! `resources/templates/list` and `prompts/list` into pages with opaque cursors (and refuses a
//! cursor it did not give with `-32602`); a mount follows `nextCursor` through every page of a
//! server's lists, and stops a server whose pages go in a circle.

use rmcp::model::{ErrorCode, PaginatedRequestParams, Resource, ResourceContents};
use rmcp::{ServiceError, ServiceExt};
use serde_json::json;
use tool_runtime::mcp_client::{McpMount, ServerConfig};
use tool_runtime::mcp_server::{McpServer, Prompt};
use tool_runtime::spec::FnTool;
use tool_runtime::{Dispatcher, Registry, ToolOutput, ToolSpec};

const RESOURCES_FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-resources-server");
const TOOLS_FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

fn server(page_size: usize) -> McpServer {
    let mut registry = Registry::builder();
    for n in 0..5 {
        let spec = ToolSpec::new(format!("t{n}"), "A tool.", json!({"type": "object"}));
        registry = registry.tool(FnTool::new(spec, |_, _| async { Ok(ToolOutput::text("ok")) }));
    }
    let mut builder = McpServer::builder(Dispatcher::builder(registry.build().unwrap())).page_size(page_size);
    for n in 0..4 {
        builder = builder
            .resource(Resource::new(format!("test://r{n}"), format!("r{n}")), |uri| async move {
                Ok(vec![ResourceContents::text("x", uri)])
            })
            .prompt(Prompt::new(format!("p{n}"), Some("A prompt."), None), |_| async { Ok(Vec::new()) });
    }
    builder.build().unwrap()
}

fn cursor(cursor: Option<String>) -> Option<PaginatedRequestParams> {
    Some(PaginatedRequestParams::default().with_cursor(cursor))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_come_in_pages_with_cursors_the_server_checks() {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(server(2).serve(ours));
    let client = ().serve(theirs).await.unwrap();

    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>(), ["t0", "t1"]);
    let second = client.list_tools(cursor(first.next_cursor.clone())).await.unwrap();
    assert_eq!(second.tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>(), ["t2", "t3"]);
    let third = client.list_tools(cursor(second.next_cursor.clone())).await.unwrap();
    assert_eq!((third.tools.len(), third.next_cursor.clone()), (1, None));
    assert_eq!(client.list_all_tools().await.unwrap().len(), 5);

    let resources = client.list_resources(None).await.unwrap();
    assert_eq!(resources.resources.len(), 2);
    assert_eq!(client.list_all_resources().await.unwrap().len(), 4);
    assert_eq!(client.list_all_prompts().await.unwrap().len(), 4);
    let prompts = client.list_prompts(None).await.unwrap();
    assert_eq!(prompts.prompts.len(), 2);

    // A cursor from another list, an edited one and a made-up one are invalid params.
    let other_list = resources.next_cursor.clone();
    let mut edited = first.next_cursor.clone().unwrap();
    edited.insert(0, '1');
    for (bad, method) in
        [(other_list, "tools/list"), (Some(edited), "tools/list"), (Some("2".to_owned()), "tools/list")]
    {
        let error = client.list_tools(cursor(bad.clone())).await.unwrap_err();
        let ServiceError::McpError(error) = error else { panic!("{bad:?}: {error:?}") };
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{bad:?}");
        assert!(error.message.contains(&format!("Invalid cursor for `{method}`")), "{}", error.message);
    }
    let error = client.list_prompts(cursor(first.next_cursor)).await.unwrap_err();
    assert!(error.to_string().contains("Invalid cursor for `prompts/list`"), "{error}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mount_follows_every_page_of_a_servers_lists() {
    let config = ServerConfig::stdio("fx", RESOURCES_FIXTURE).env("FIXTURE_PAGE_SIZE", "1");
    let mount = McpMount::connect(config).await.unwrap();
    let uris: Vec<String> = mount.resources().into_iter().map(|r| r.uri).collect();
    assert_eq!(uris, ["test://static-text", "test://static-binary", "test://watched-resource"]);
    assert_eq!(mount.resource_templates().len(), 1);
    assert_eq!(mount.prompts().len(), 4);
    // touch_watched, add_note, ask_colour, ask_model and the conformance suite's twelve.
    assert_eq!(mount.tools().len(), 16);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_pages_go_in_a_circle_is_not_mounted() {
    let config = ServerConfig::stdio("loop", TOOLS_FIXTURE).env("FIXTURE_LOOPING_PAGES", "1");
    let error = McpMount::connect(config).await.unwrap_err().to_string();
    assert!(error.contains("it did not list its tools: its tools/list pages in a circle"), "{error}");
    assert!(error.contains("`loop`") || error.contains("loop"), "{error}");
}
