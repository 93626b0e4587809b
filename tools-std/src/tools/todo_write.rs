//! The `todo_write` tool: replace the session's task list.

use std::sync::Mutex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tool_runtime::{SessionState, ToolOutput, tool};

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on now.
    InProgress,
    /// Done.
    Completed,
    /// Dropped.
    Cancelled,
}

/// One task of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What to do, as a short imperative sentence.
    #[schemars(length(min = 1))]
    pub content: String,
    /// `pending`, `in_progress`, `completed` or `cancelled`.
    pub status: TodoStatus,
    /// The task as it is being done (`Running the tests`), optional: kept with the item, not
    /// shown in the list. Claude Code's `activeForm` is taken as this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
}

/// The task list of one session, kept in its [`SessionState`].
#[derive(Debug, Default)]
pub struct TodoList(Mutex<Vec<TodoItem>>);

impl TodoList {
    /// The current items.
    pub fn items(&self) -> Vec<TodoItem> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Replaces the items.
    pub fn set(&self, items: Vec<TodoItem>) {
        *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = items;
    }
}

/// The list as the model reads it: a count line, then one `[x]`/`[>]`/`[ ]`/`[-]` line per item.
pub(crate) fn render(items: &[TodoItem]) -> String {
    if items.is_empty() {
        return "The todo list is empty.".to_owned();
    }
    let done = items.iter().filter(|i| i.status == TodoStatus::Completed).count();
    let mut text = format!("Todo list ({done} of {} completed):\n", items.len());
    for item in items {
        let (mark, note) = match item.status {
            TodoStatus::Completed => ("[x]", ""),
            TodoStatus::InProgress => ("[>]", " (in progress)"),
            TodoStatus::Pending => ("[ ]", ""),
            TodoStatus::Cancelled => ("[-]", " (cancelled)"),
        };
        text.push_str(&format!("{mark} {}{note}\n", item.content.trim()));
    }
    text
}

/// Replace the task list of this session with `todos`.
///
/// Use it to plan work of three or more steps and to show progress: send the whole list each
/// time, with every item's status (`pending`, `in_progress`, `completed`, `cancelled`). Keep one
/// item `in_progress` at a time and mark items `completed` as soon as they are done. An empty
/// list clears it. The list lives as long as the session; `todo_read` shows it.
#[tool(timeout = "10s")]
pub async fn todo_write(
    session: SessionState,
    /// The complete new list, in order.
    todos: Vec<TodoItem>,
) -> ToolOutput {
    let list = session.get_or_insert_with(TodoList::default);
    let text = render(&todos);
    let value = json!(todos);
    list.set(todos);
    ToolOutput::text(text).with_metadata("todos", value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::ErrorKind;

    use crate::testing::Fixture;

    #[tokio::test]
    async fn write_then_read_in_the_same_session_only() {
        let fx = Fixture::new();
        assert_eq!(fx.text("todo_read", json!({})).await, "The todo list is empty.");
        let todos = json!({"todos": [
            {"content": "Parse the input", "status": "completed"},
            {"content": "Write tests", "status": "in_progress"},
            {"content": "Document", "status": "pending"},
            {"content": "Old idea", "status": "cancelled"}
        ]});
        let expected = "Todo list (1 of 4 completed):\n[x] Parse the input\n[>] Write tests (in progress)\n[ ] Document\n[-] Old idea (cancelled)\n";
        assert_eq!(fx.text("todo_write", todos).await, expected);
        assert_eq!(fx.text("todo_read", json!({})).await, expected);
        let other = Fixture::new();
        assert_eq!(other.text("todo_read", json!({})).await, "The todo list is empty.");
        assert_eq!(fx.text("todo_write", json!({"todos": []})).await, "The todo list is empty.");
        assert_eq!(fx.text("todo_read", json!({})).await, "The todo list is empty.");
    }

    #[tokio::test]
    async fn claude_codes_active_form_is_kept_with_the_item() {
        let fx = Fixture::new();
        let out = fx
            .dispatch(
                "todo_write",
                r#"{"todos": [{"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"}]}"#,
            )
            .await;
        assert_eq!(out.text_content(), "Todo list (0 of 1 completed):\n[>] Run the tests (in progress)\n");
        assert_eq!(
            Fixture::coercions(&out),
            [("/todos/0/activeForm".to_owned(), "/todos/0/active_form".to_owned())]
        );
        assert_eq!(out.metadata["todos"][0]["active_form"], json!("Running the tests"));
        let items = fx.session.get::<super::TodoList>().unwrap().items();
        assert_eq!(items[0].active_form.as_deref(), Some("Running the tests"));
    }

    #[tokio::test]
    async fn invalid_items_are_rejected_by_the_schema() {
        let fx = Fixture::new();
        let err = fx.error("todo_write", json!({"todos": [{"content": "x", "status": "doing"}]})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        let err = fx.error("todo_write", json!({"todos": [{"content": "", "status": "pending"}]})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    }
}
