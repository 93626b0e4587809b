//! Recording one call: the workspace scanned before and after it, the changes kept as a
//! checkpoint, and the oldest dropped past the limits.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use tool_runtime::{ToolContext, ToolOutput};

use super::scan::{Snapshot, diff, diff_paths};
use super::store::{BlobId, blob_of};
use super::{Checkpoint, Checkpoints, Inner, lock};
use crate::Workspace;
use crate::text::plural;

impl Checkpoints {
    /// Records the workspace before a call; the checkpoint is kept when the returned guard is
    /// finished or dropped, with what the call changed. `None` when checkpoints are off or the
    /// scan failed (see [`last_error`](Self::last_error)).
    pub fn begin(self: &Arc<Self>, root: &Path, call_id: &str, tool: &str) -> Option<CallGuard> {
        self.begin_in_turn(root, call_id, None, tool)
    }

    /// [`begin`](Self::begin) for a call of turn `turn`, which an undo of the turn
    /// ([`UndoTarget::Turn`](super::UndoTarget::Turn)) then undoes with the turn's other calls.
    pub fn begin_in_turn(
        self: &Arc<Self>,
        root: &Path,
        call_id: &str,
        turn: Option<&str>,
        tool: &str,
    ) -> Option<CallGuard> {
        self.start(root, call_id, turn, tool).ok().flatten()
    }

    /// [`begin_in_turn`](Self::begin_in_turn), with the error when the workspace could not be
    /// recorded; `Ok(None)` when checkpoints are off.
    fn start(
        self: &Arc<Self>,
        root: &Path,
        call_id: &str,
        turn: Option<&str>,
        tool: &str,
    ) -> Result<Option<CallGuard>, String> {
        if !self.enabled {
            return Ok(None);
        }
        let time = SystemTime::now();
        let mut inner = lock(&self.inner);
        match self.scan_locked(&mut inner, root) {
            Ok(before) => Ok(Some(CallGuard {
                checkpoints: self.clone(),
                root: root.to_path_buf(),
                before: Some(before),
                call_id: call_id.to_owned(),
                turn: turn.map(str::to_owned),
                tool: tool.to_owned(),
                time,
                not_read: inner.not_read,
            })),
            Err(e) => {
                let error = format!("Cannot record a checkpoint of {}: {e}", root.display());
                inner.error = Some(error.clone());
                Err(error)
            }
        }
    }

    /// Records what the call of `guard` changed: its checkpoint's number, `None` when it
    /// changed nothing, or the error when the workspace could not be scanned again.
    /// `keep_empty` records the call even when it changed nothing (an undo that found its files
    /// already put back still undid its checkpoints).
    pub(super) fn finish(&self, guard: &mut CallGuard, keep_empty: bool) -> Result<Option<u64>, String> {
        let Some(before) = guard.before.take() else { return Ok(None) };
        let mut inner = lock(&self.inner);
        let after = match self.scan_locked(&mut inner, &guard.root) {
            Ok(after) => after,
            Err(e) => {
                let error = format!("Cannot record a checkpoint of {}: {e}", guard.root.display());
                inner.error = Some(error.clone());
                return Err(error);
            }
        };
        let changes = match &inner.last_partial {
            _ if Arc::ptr_eq(&before, &after) => Vec::new(),
            // One partial scan since `before`: only the paths it looked at can differ.
            Some((base, made, touched))
                if std::ptr::eq(base.as_ptr(), Arc::as_ptr(&before)) && Arc::ptr_eq(made, &after) =>
            {
                diff_paths(&before, &after, touched)
            }
            _ => diff(&before, &after),
        };
        if changes.is_empty() && !keep_empty {
            return Ok(None);
        }
        inner.next += 1;
        let id = inner.next;
        inner.list.push_back(Checkpoint {
            id,
            call_id: guard.call_id.clone(),
            turn: guard.turn.clone(),
            tool: guard.tool.clone(),
            time: guard.time,
            changes,
            undone_by: None,
            undoes: Vec::new(),
        });
        self.retain(&mut inner);
        Ok(Some(id))
    }

    /// Drops the oldest checkpoints past the limits, and the stored files nothing needs.
    fn retain(&self, inner: &mut Inner) {
        while inner.list.len() > self.config.max_checkpoints {
            inner.list.pop_front();
        }
        loop {
            let mut keep: BTreeSet<BlobId> = inner.cache.values().filter_map(|c| blob_of(&c.state)).collect();
            for checkpoint in &inner.list {
                for change in &checkpoint.changes {
                    keep.extend(change.before.as_ref().and_then(blob_of));
                    keep.extend(change.after.as_ref().and_then(blob_of));
                }
            }
            let Some(store) = inner.store.as_mut() else { return };
            store.collect(&keep);
            if store.bytes <= self.config.max_store_bytes || inner.list.is_empty() {
                return;
            }
            inner.list.pop_front();
        }
    }
}

/// The checkpoint of one call in progress: kept, with the call's changes, when finished or
/// dropped.
#[derive(Debug)]
pub struct CallGuard {
    checkpoints: Arc<Checkpoints>,
    root: PathBuf,
    before: Option<Arc<Snapshot>>,
    call_id: String,
    turn: Option<String>,
    tool: String,
    time: SystemTime,
    /// How many files had not been read when the call began: a change to them cannot be undone.
    not_read: usize,
}

impl CallGuard {
    /// Records what the call changed; returns the checkpoint's number, or `None` when the call
    /// changed nothing.
    pub fn finish(self) -> Option<u64> {
        self.finish_checked().ok().flatten()
    }

    /// [`finish`](Self::finish), with the error when the workspace could not be scanned again.
    fn finish_checked(mut self) -> Result<Option<u64>, String> {
        let checkpoints = self.checkpoints.clone();
        checkpoints.finish(&mut self, false)
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if self.before.is_some() {
            let checkpoints = self.checkpoints.clone();
            let _ = checkpoints.finish(self, false);
        }
    }
}

/// The checkpoint of a built-in tool's call, from [`begin`]: kept when dropped (a call that
/// failed), or by [`finish_into`](Self::finish_into) with the call's output, which then says
/// when the checkpoint could not be recorded.
#[derive(Debug)]
pub(crate) struct Recording {
    guard: Option<CallGuard>,
    /// Why the workspace could not be recorded before the call.
    error: Option<String>,
}

impl Recording {
    /// No checkpoint: checkpoints are off, or the workspace is not local.
    pub(crate) fn none() -> Recording {
        Recording { guard: None, error: None }
    }

    /// Records what the call changed; when it could not be recorded, says so at the end of
    /// `output`'s text and in its metadata (`checkpoint`: `{"recorded": false, "error": ...}`):
    /// the call cannot be undone.
    pub(crate) async fn finish_into(mut self, output: ToolOutput) -> ToolOutput {
        let not_read = self.guard.as_ref().map_or(0, |guard| guard.not_read);
        let error = match (self.error.take(), self.guard.take()) {
            (Some(error), _) => Some(error),
            (None, Some(guard)) => tokio::task::spawn_blocking(move || guard.finish_checked())
                .await
                .map_err(|e| format!("The checkpoint stopped: {e}"))
                .and_then(|finished| finished)
                .err(),
            (None, None) => None,
        };
        match error {
            // In the text too: metadata is for the host's UI, and the model should not count on
            // an undo of this call.
            Some(error) => {
                let error = format!("{error}. This call cannot be undone.");
                output
                    .with_content(tool_runtime::Content::text(format!("[{error}]")))
                    .with_metadata("checkpoint", serde_json::json!({"recorded": false, "error": error}))
            }
            None if not_read > 0 => output.with_metadata(
                "checkpoint",
                serde_json::json!({
                    "recorded": true,
                    "not_read": not_read,
                    "note": format!(
                        "{} of the workspace had not been read yet when the call began (the first \
                         checkpoint reads for a limited time): an undo leaves a change to them as it is.",
                        plural(not_read as u64, "file")
                    ),
                }),
            ),
            None => output,
        }
    }
}

/// Records a checkpoint before a mutating call of `tool` on `ws`, when the session has
/// checkpoints on and the workspace is local; keep it until the call ends, then hand it the
/// call's output ([`Recording::finish_into`]).
pub(crate) async fn begin(ws: &Workspace, ctx: &ToolContext, tool: &str) -> Recording {
    if !ws.is_local() {
        return Recording::none();
    }
    let checkpoints = Checkpoints::of_call(ctx);
    if !checkpoints.is_enabled() {
        return Recording::none();
    }
    let root = ws.root().to_path_buf();
    let call_id = ctx.call_id().to_owned();
    let turn = ctx.turn_id().map(str::to_owned);
    let tool = tool.to_owned();
    let started =
        tokio::task::spawn_blocking(move || checkpoints.start(&root, &call_id, turn.as_deref(), &tool)).await;
    match started {
        Ok(Ok(guard)) => Recording { guard, error: None },
        Ok(Err(error)) => Recording { guard: None, error: Some(error) },
        Err(e) => Recording { guard: None, error: Some(format!("The checkpoint stopped: {e}")) },
    }
}
