//! The repeat guard: the same call many times in a row is refused or asked about, except for a
//! tool that waits for work in progress (`#[tool(polls)]`), whose identical calls are polls.

use serde_json::json;
use tool_runtime::dispatch::{RepeatAction, RepeatGuard};
use tool_runtime::{CancellationToken, Dispatcher, Registry, Tool, ToolCall, ToolError, tool};

/// Read what came since the last read.
#[tool(polls, read_only)]
async fn poll(
    /// The job.
    id: String,
) -> Result<String, ToolError> {
    Ok(format!("nothing new from {id}"))
}

/// Look something up.
#[tool(read_only)]
async fn look(
    /// What.
    id: String,
) -> Result<String, ToolError> {
    Ok(format!("found {id}"))
}

#[tokio::test]
async fn a_polling_tools_identical_calls_run_and_the_others_are_refused_past_the_threshold() {
    assert!(PollTool.spec().polls && !LookTool.spec().polls);
    let registry = Registry::builder().tool(PollTool).tool(LookTool).build().unwrap();
    let dispatcher =
        Dispatcher::builder(registry).repeat_guard(RepeatGuard::new(2, RepeatAction::Refuse)).build();
    let call = |tool: &str, n: usize| ToolCall::new(format!("c{n}"), tool, json!({"id": "job-1"}));
    for n in 0..5 {
        let result = dispatcher.run(call("poll", n), CancellationToken::new()).await;
        assert!(!result.output.is_error, "poll {n}: {}", result.output.text_content());
    }
    assert!(!dispatcher.run(call("look", 5), CancellationToken::new()).await.output.is_error);
    let again = dispatcher.run(call("look", 6), CancellationToken::new()).await;
    assert!(again.output.is_error && again.output.text_content().contains("2 times in a row"));
}
