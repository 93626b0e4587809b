//! MCP tasks (the `io.modelcontextprotocol/tasks` extension) of one session: a call whose tool
//! hands the rest of its work over ([`tool_core::handoff`]: a `bash` command that goes to the
//! background) is answered with a task, which `tasks/get` reports and `tasks/cancel` stops.
//!
//! The tasks of a session end with it: when its last handle is dropped (the client went away),
//! every task still running is cancelled, so that what it runs (a command and every process it
//! started) is stopped as the session's own background commands are.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::model::{CallToolResult, DetailedTask, ErrorData, GetTaskResult, JsonObject, Task, TaskPayload};
use tokio_util::sync::CancellationToken;

use tool_core::ToolOutput;
use tool_core::handoff::{Remainder, TaskTaker};

/// How often a client is asked to poll a task, in milliseconds.
pub(crate) const POLL_INTERVAL_MS: u64 = 1000;
/// How many ended tasks a session keeps for `tasks/get`; the oldest is forgotten past that.
pub(crate) const MAX_ENDED_KEPT: usize = 256;

/// The tasks of one session.
#[derive(Debug, Default)]
pub(crate) struct SessionTasks {
    state: Mutex<Store>,
    /// Cancelled when the session ends: every task's token is a child of it.
    ended: CancellationToken,
}

#[derive(Debug, Default)]
struct Store {
    next: u64,
    tasks: BTreeMap<u64, Entry>,
}

#[derive(Debug)]
struct Entry {
    created_at: String,
    updated_at: String,
    status_message: String,
    payload: TaskPayload,
    cancel: CancellationToken,
}

impl Drop for SessionTasks {
    fn drop(&mut self) {
        self.ended.cancel();
    }
}

impl SessionTasks {
    fn store(&self) -> MutexGuard<'_, Store> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `rest` as a new task; the seed state for the `CreateTaskResult`.
    fn start(self: &Arc<Self>, rest: Remainder) -> Task {
        let now = now_iso8601();
        let cancel = self.ended.child_token();
        let (id, task) = {
            let mut store = self.store();
            store.next += 1;
            let id = store.next;
            let entry = Entry {
                created_at: now.clone(),
                updated_at: now,
                status_message: rest.status,
                payload: TaskPayload::Working,
                cancel: cancel.clone(),
            };
            let task = entry.task(id);
            store.tasks.insert(id, entry);
            store.forget_oldest_ended();
            (id, task)
        };
        let tasks = Arc::downgrade(self);
        let work = (rest.work)(cancel.clone());
        tokio::spawn(async move {
            let output = work.await;
            finish(&tasks, id, output, cancel.is_cancelled());
        });
        task
    }

    /// Cancels every task still running, as the session's end does.
    pub(crate) fn end(&self) {
        self.ended.cancel();
    }

    /// `tasks/get`: the task with its payload.
    pub(crate) fn get(&self, task_id: &str) -> Result<GetTaskResult, ErrorData> {
        let store = self.store();
        let (id, entry) = store.find(task_id)?;
        Ok(GetTaskResult::new(DetailedTask::new(entry.task(id), entry.payload.clone())))
    }

    /// `tasks/cancel`: asks the task's work to stop. Its status turns `cancelled` once the work
    /// stopped (what it ran is then killed).
    pub(crate) fn cancel(&self, task_id: &str) -> Result<(), ErrorData> {
        let store = self.store();
        let (_, entry) = store.find(task_id)?;
        entry.cancel.cancel();
        Ok(())
    }

    /// `tasks/update`: the tasks of this server never wait for input, so there is nothing to
    /// deliver; the answer is an acknowledgement for a known task, as the extension asks.
    pub(crate) fn update(&self, task_id: &str) -> Result<(), ErrorData> {
        self.store().find(task_id).map(|_| ())
    }
}

impl Store {
    fn find(&self, task_id: &str) -> Result<(u64, &Entry), ErrorData> {
        let entry = parse_id(task_id).and_then(|id| self.tasks.get(&id).map(|entry| (id, entry)));
        entry.ok_or_else(|| {
            let known: Vec<String> = self.tasks.keys().map(|id| task_name(*id)).collect();
            let known = if known.is_empty() {
                "This session has no tasks.".to_owned()
            } else {
                format!("This session's tasks are {}.", known.join(", "))
            };
            ErrorData::invalid_params(
                format!(
                    "Failed to retrieve task: there is no task `{task_id}` in this session (tasks belong to the \
                     session that created them, and the oldest ended ones are forgotten past {MAX_ENDED_KEPT}). \
                     {known}"
                ),
                None,
            )
        })
    }

    fn forget_oldest_ended(&mut self) {
        let ended: Vec<u64> =
            self.tasks.iter().filter(|(_, e)| e.payload.status().is_terminal()).map(|(id, _)| *id).collect();
        for id in ended.iter().take(ended.len().saturating_sub(MAX_ENDED_KEPT)) {
            self.tasks.remove(id);
        }
    }
}

impl Entry {
    fn task(&self, id: u64) -> Task {
        let mut task = Task::new(task_name(id), self.payload.status(), &self.created_at, &self.updated_at)
            .with_status_message(&self.status_message)
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        task.ttl_ms = None;
        task
    }
}

/// Records the end of task `id`: `cancelled` when it was cancelled, else `completed` with the
/// work's output as a `tools/call` result (a tool error included, as the extension asks).
fn finish(tasks: &Weak<SessionTasks>, id: u64, output: ToolOutput, cancelled: bool) {
    let Some(tasks) = tasks.upgrade() else { return };
    let mut store = tasks.store();
    let Some(entry) = store.tasks.get_mut(&id) else { return };
    entry.updated_at = now_iso8601();
    if cancelled {
        entry.payload = TaskPayload::Cancelled;
        entry.status_message = "cancelled: the command was stopped".to_owned();
        return;
    }
    let is_error = output.is_error;
    let result: CallToolResult = crate::wire::call_tool_result(output);
    match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(result)) => {
            entry.status_message =
                if is_error { "completed with an error result" } else { "completed" }.to_owned();
            entry.payload = TaskPayload::Completed { result };
        }
        Ok(_) | Err(_) => {
            let mut error = JsonObject::new();
            error.insert("code".into(), (-32603).into());
            error.insert("message".into(), "the task's result could not be written as JSON".into());
            entry.status_message = "failed: the result could not be written as JSON".to_owned();
            entry.payload = TaskPayload::Failed { error };
        }
    }
}

fn task_name(id: u64) -> String {
    format!("task-{id}")
}

fn parse_id(task_id: &str) -> Option<u64> {
    let digits = task_id.strip_prefix("task-")?;
    if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Takes the remainder of one `tools/call`, at most once: the call then answers with the task.
pub(crate) struct CallTaker {
    tasks: Arc<SessionTasks>,
    created: Mutex<Option<Task>>,
}

impl CallTaker {
    pub(crate) fn new(tasks: Arc<SessionTasks>) -> Self {
        CallTaker { tasks, created: Mutex::new(None) }
    }

    /// The task this call became, if it did.
    pub(crate) fn created(&self) -> Option<Task> {
        self.created.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl TaskTaker for CallTaker {
    fn take(&self, rest: Remainder) -> Result<(), Remainder> {
        let mut created = self.created.lock().unwrap_or_else(|p| p.into_inner());
        if created.is_some() {
            return Err(rest);
        }
        *created = Some(self.tasks.start(rest));
        Ok(())
    }
}

/// Now, as ISO 8601 in UTC with milliseconds (`2026-11-27T09:30:00.123Z`).
fn now_iso8601() -> String {
    tool_core::words::utc_time(SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::TaskStatus;

    #[test]
    fn dates_are_iso_8601() {
        let now = now_iso8601();
        assert_eq!(now.len(), "2026-11-27T09:30:00.123Z".len(), "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
    }

    #[test]
    fn task_ids_are_read_exactly() {
        assert_eq!(parse_id("task-12"), Some(12));
        for bad in ["task-", "task-012", "task-1x", "12", "task--1", "task-+1", "task-99999999999999999999"] {
            assert_eq!(parse_id(bad), None, "{bad}");
        }
    }

    fn rest(output: &'static str) -> Remainder {
        Remainder {
            status: "running".to_owned(),
            work: Box::new(move |cancel: CancellationToken| {
                Box::pin(async move {
                    if output == "wait" {
                        cancel.cancelled().await;
                    }
                    ToolOutput::text(output)
                })
            }),
        }
    }

    async fn status_of(tasks: &SessionTasks, id: &str) -> TaskStatus {
        for _ in 0..200 {
            let status = tasks.get(id).unwrap().task.status();
            if status.is_terminal() {
                return status;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        tasks.get(id).unwrap().task.status()
    }

    #[tokio::test]
    async fn a_task_completes_with_its_output_and_a_cancelled_one_is_cancelled() {
        let tasks = Arc::new(SessionTasks::default());
        let taker = CallTaker::new(tasks.clone());
        assert!(taker.take(rest("done")).is_ok());
        assert!(taker.take(rest("again")).is_err(), "one task per call");
        let id = taker.created().unwrap().task_id;
        assert_eq!(status_of(&tasks, &id).await, TaskStatus::Completed);
        let got = serde_json::to_value(tasks.get(&id).unwrap()).unwrap();
        assert_eq!(got["result"]["content"][0]["text"], "done", "{got}");

        let taker = CallTaker::new(tasks.clone());
        assert!(taker.take(rest("wait")).is_ok());
        let id = taker.created().unwrap().task_id;
        assert_eq!(tasks.get(&id).unwrap().task.status(), TaskStatus::Working);
        tasks.cancel(&id).unwrap();
        assert_eq!(status_of(&tasks, &id).await, TaskStatus::Cancelled);
        let error = tasks.get("task-99").unwrap_err();
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("task-1, task-2"), "{}", error.message);
    }

    #[tokio::test]
    async fn the_end_of_the_session_cancels_its_tasks() {
        let tasks = Arc::new(SessionTasks::default());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let taker = CallTaker::new(tasks.clone());
        let work = Remainder {
            status: String::new(),
            work: Box::new(move |cancel: CancellationToken| {
                Box::pin(async move {
                    cancel.cancelled().await;
                    let _ = tx.send(());
                    ToolOutput::text("stopped")
                })
            }),
        };
        assert!(taker.take(work).is_ok());
        drop(taker);
        drop(tasks);
        tokio::time::timeout(std::time::Duration::from_secs(5), rx).await.unwrap().unwrap();
    }
}
