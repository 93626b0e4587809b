//! `code_output` and `code_stop`: the tools that read and stop a script that runs on past its
//! call's yield time (named after the script tool: `NAME_output`, `NAME_stop`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_core::{
    BoxFuture, CancellationToken, Tool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolSpec,
};

use crate::held::{Held, OnCancel, Running, Waited};
use crate::limits::Limits;
use crate::tool::{BOTH_ENDS, result, yielded};

/// The longest a `code_output` call waits (`yield_ms`).
const MAX_WAIT: Duration = Duration::from_secs(600);

/// `NAME_output` and `NAME_stop` for the script tool `name`.
pub(crate) fn pair(name: &str, held: Arc<Held>, limits: Limits) -> (Companion, Companion) {
    let id = json!({"type": "string", "description": "The script's id, from the result of the call that started it."});
    let output = ToolSpec::new(
        format!("{name}_output"),
        format!(
            "Reads a script that `{name}` left running (its result named the script's id): returns what it \
             printed since the last read, once it ends or after `yield_ms`, and its end (what it printed, its \
             final value, or why it failed)."
        ),
        json!({
            "type": "object",
            "properties": {
                "id": id,
                "yield_ms": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_WAIT.as_millis() as u64,
                    "description": "How long to wait for the script's end before returning what it printed so \
                                    far (default: the script tool's yield time).",
                },
            },
            "required": ["id"],
            "additionalProperties": false,
        }),
    )
    .with_polls(true)
    // No turn at the gate: it waits for a script whose calls take turns with the model's, and
    // must not wait behind a model's call that waits for them.
    .with_ungated(true)
    .with_truncation(BOTH_ENDS)
    .with_annotations(ToolAnnotations {
        title: Some("Read a running script".into()),
        read_only: true,
        ..ToolAnnotations::default()
    });
    let stop = ToolSpec::new(
        format!("{name}_stop"),
        format!(
            "Stops a script that `{name}` left running, and the tool calls it is making; returns what it \
             printed since the last read."
        ),
        json!({
            "type": "object",
            "properties": {"id": id},
            "required": ["id"],
            "additionalProperties": false,
        }),
    )
    .with_ungated(true)
    .with_truncation(BOTH_ENDS)
    .with_annotations(ToolAnnotations {
        title: Some("Stop a running script".into()),
        destructive: true,
        ..ToolAnnotations::default()
    });
    (
        Companion { spec: output, held: held.clone(), limits, stops: false },
        Companion { spec: stop, held, limits, stops: true },
    )
}

/// `code_output` (`stops` false) or `code_stop`.
#[derive(Debug)]
pub(crate) struct Companion {
    spec: ToolSpec,
    held: Arc<Held>,
    limits: Limits,
    stops: bool,
}

impl Companion {
    async fn run(&self, ctx: ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let id = args.get("id").and_then(Value::as_str).ok_or_else(|| {
            ToolError::invalid_arguments(
                "`id` must be the script's id (`script-1`), from the call that started it",
            )
        })?;
        let session = ctx.session_id();
        let running = self.held.get(session, id).ok_or_else(|| self.unknown(session, id))?;
        if self.stops {
            return Ok(self.stop(session, id, &running).await);
        }
        let wait = match args.get("yield_ms").and_then(Value::as_u64) {
            Some(ms) => Duration::from_millis(ms).min(MAX_WAIT),
            None => self.limits.yield_time.unwrap_or(MAX_WAIT),
        };
        let until = Instant::now() + wait;
        let waited = running.wait(Some(until), ctx.cancellation_token(), OnCancel::Return).await;
        Ok(match waited {
            Waited::Running { unread } => yielded(unread, id, &running, self.tool_name()),
            ended => {
                self.held.release(session, id);
                result(ended, &self.limits, true)
            }
        })
    }

    async fn stop(&self, session: &str, id: &str, running: &Running) -> ToolOutput {
        let already = running.ended();
        running.stop.cancel();
        let waited = running.wait(None, &CancellationToken::new(), OnCancel::Return).await;
        self.held.release(session, id);
        if already {
            return result(waited, &self.limits, true);
        }
        let (Waited::Ended { unread, .. } | Waited::Running { unread }) = waited;
        let mut text = unread;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("The script `{id}` was stopped, with the tool calls it was making."));
        ToolOutput::text(text)
    }

    /// The script tool's name.
    fn tool_name(&self) -> &str {
        let name = &self.spec.name;
        name.strip_suffix("_output").or_else(|| name.strip_suffix("_stop")).unwrap_or(name)
    }

    fn unknown(&self, session: &str, id: &str) -> ToolError {
        let ids = self.held.ids(session);
        let held = match ids.as_slice() {
            [] => "none is running now".to_owned(),
            ids => format!("the ones running or ended and not read yet: {}", ids.join(", ")),
        };
        ToolError::not_found(format!(
            "No script `{id}` is held in this session ({held}). A script's end is returned once: by the call \
             that started it, or by the {}_output call that saw it end (one nobody read is forgotten {} \
             minutes after the script ended).",
            self.tool_name(),
            crate::held::UNREAD_END_KEPT.as_secs() / 60
        ))
    }
}

impl Tool for Companion {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, ctx: ToolContext, args: Value) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.run(ctx, args))
    }
}
