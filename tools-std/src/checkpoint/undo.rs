//! Undoing calls: which checkpoints a target selects, the checks that refuse an undo, and
//! the files put back.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::fs::Dir;

use super::scan::Cached;
use super::store::{BlobId, blob_of};
use super::{Checkpoint, Checkpoints, FileState, lock, shown_id};
use crate::fs::host;
use crate::fs::stop::commit;
use crate::text::plural;

/// Which calls to undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UndoTarget {
    /// The latest call with this id.
    Call(String),
    /// Every call of the turn with this id that is not undone, newest first (their changes
    /// are undone together, as one).
    Turn(String),
    /// The last `n` calls that changed files and are not undone, undos left out: undoing the
    /// last call twice undoes the two last calls. (An undo is undone by its call id.)
    Last(usize),
}

/// What an undo did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UndoReport {
    /// The checkpoints undone, oldest first.
    pub undone: Vec<u64>,
    /// Files written back.
    pub restored: Vec<PathBuf>,
    /// Files and directories the calls created, removed.
    pub removed: Vec<PathBuf>,
    /// Directories the calls removed, made again.
    pub recreated: Vec<PathBuf>,
    /// Files over the size limit before the calls, left as they are (their content then was
    /// not kept).
    pub too_large: Vec<PathBuf>,
    /// Files the calls changed that had not been read when they began (the first checkpoint of
    /// a large workspace reads for a limited time), left as they are.
    pub not_read: Vec<PathBuf>,
    /// Files put back (in `restored` or `removed`) whose content after the calls was not kept
    /// (over the size limit, or not read yet): undoing this undo cannot bring that content
    /// back.
    pub discarded: Vec<PathBuf>,
    /// Directories the calls created that are not empty now (they hold ignored files), kept.
    pub kept_dirs: Vec<PathBuf>,
}

/// Why an undo did nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UndoError {
    /// Checkpoints are off, or the workspace is not on the local file system.
    Off,
    /// No checkpoint matches.
    NotFound(String),
    /// Files changed since the calls: `(path, what happened)`. Nothing was written.
    Conflicts(Vec<(PathBuf, String)>),
    /// The checkpoint store lost or damaged what it kept of these files: `(path, what
    /// happened)`. Nothing was written.
    StoreDamaged(Vec<(PathBuf, String)>),
    /// What the files the calls changed held before them was not kept (over the size limit,
    /// sparse, or not read yet), and the others hold it already: there is nothing to put back.
    /// Nothing was written.
    NothingKept(Vec<PathBuf>),
    /// Reading or writing failed (after the checks: some files may be restored).
    Io(String),
}

impl std::fmt::Display for UndoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UndoError::Off => f.write_str(
                "Checkpoints are off in this session (or the workspace is not on the local file system), so there is \
                 nothing to undo.",
            ),
            UndoError::NotFound(message) | UndoError::Io(message) => f.write_str(message),
            UndoError::Conflicts(conflicts) => {
                write!(
                    f,
                    "Undo refused: {} changed after the call{}, and undoing would discard that later change. Nothing \
                     was written. Conflicting:",
                    plural(conflicts.len() as u64, "file"),
                    if conflicts.len() == 1 { "" } else { "s" }
                )?;
                for (path, what) in conflicts {
                    write!(f, "\n- {} ({what})", path.display())?;
                }
                f.write_str(
                    "\nUndo the later calls first (newest first), or change these files back by hand with the \
                     file tools.",
                )
            }
            UndoError::NothingKept(paths) => {
                write!(
                    f,
                    "Undo refused: what {} held before the call was not kept (over the size limit, sparse, or not \
                     read yet when the call began), so there is nothing to put back. Nothing was written:",
                    plural(paths.len() as u64, "file"),
                )?;
                for path in paths {
                    write!(f, "\n- {}", path.display())?;
                }
                f.write_str("\nChange them back by hand with the file tools.")
            }
            UndoError::StoreDamaged(lost) => {
                write!(
                    f,
                    "Undo refused: the checkpoint store no longer holds the earlier content of {}, so the call \
                     cannot be undone whole. Nothing was written. Missing:",
                    plural(lost.len() as u64, "file"),
                )?;
                for (path, what) in lost {
                    write!(f, "\n- {} ({what})", path.display())?;
                }
                f.write_str("\nThe files are as they are now; change them back by hand with the file tools.")
            }
        }
    }
}

impl std::error::Error for UndoError {}

/// Whether `now` is what the calls left, `expected`: for a file whose content was not kept, by
/// its size, times and inode (a later scan may have read it since).
fn unchanged(expected: Option<&FileState>, now: Option<&Cached>) -> bool {
    match (expected, now) {
        (
            Some(
                FileState::TooLarge { size, mtime, ctime, ino }
                | FileState::NotRead { size, mtime, ctime, ino },
            ),
            Some(Cached { stamp: Some(stamp), .. }),
        ) => (stamp.size, stamp.mtime, stamp.ctime, stamp.ino) == (*size, *mtime, *ctime, *ino),
        (expected, now) => expected == now.map(|c| &c.state),
    }
}

impl Checkpoints {
    /// the module documentation. `call_id` and `tool` name the undo's own call, recorded as a
    /// checkpoint so that it can be undone in turn.
    pub fn undo(
        self: &Arc<Self>,
        root: &Path,
        target: &UndoTarget,
        call_id: &str,
        tool: &str,
    ) -> Result<UndoReport, UndoError> {
        self.undo_in_turn(root, target, call_id, None, tool)
    }

    /// [`undo`](Self::undo) by a call of turn `turn` (the undo's own checkpoint records it).
    pub fn undo_in_turn(
        self: &Arc<Self>,
        root: &Path,
        target: &UndoTarget,
        call_id: &str,
        turn: Option<&str>,
        tool: &str,
    ) -> Result<UndoReport, UndoError> {
        if !self.enabled {
            return Err(UndoError::Off);
        }
        let selected = self.select(target)?;
        let mut guard = self.begin_in_turn(root, call_id, turn, tool);
        let report = self.apply(root, &selected);
        if let Some(guard) = guard.as_mut()
            && let Ok(Some(id)) = self.finish(guard, report.is_ok())
            && report.is_ok()
        {
            let mut inner = lock(&self.inner);
            for checkpoint in inner.list.iter_mut() {
                if checkpoint.id == id {
                    checkpoint.undoes = selected.iter().map(|s| s.id).collect();
                } else if selected.iter().any(|s| s.id == checkpoint.id) {
                    checkpoint.undone_by = Some(id);
                } else if checkpoint.undone_by.is_some_and(|by| selected.iter().any(|s| s.id == by)) {
                    // Undoing an undo brings that change back.
                    checkpoint.undone_by = None;
                }
            }
        }
        report
    }

    /// The paths an undo of `target` would put back (relative to the root), for a host or a
    /// permission hook to check first.
    pub fn paths(&self, target: &UndoTarget) -> Result<Vec<PathBuf>, UndoError> {
        if !self.enabled {
            return Err(UndoError::Off);
        }
        let paths: BTreeSet<PathBuf> =
            self.select(target)?.iter().flat_map(|c| c.changes.iter().map(|ch| ch.path.clone())).collect();
        Ok(paths.into_iter().collect())
    }

    fn select(&self, target: &UndoTarget) -> Result<Vec<Checkpoint>, UndoError> {
        let inner = lock(&self.inner);
        if inner.list.is_empty() {
            return Err(UndoError::NotFound(
                "There is nothing to undo: no call has changed a file in this session (or its checkpoints were \
                 dropped)."
                    .to_owned(),
            ));
        }
        let selected: Vec<Checkpoint> = match target {
            UndoTarget::Call(id) => {
                let Some(found) = inner.list.iter().rev().find(|c| &c.call_id == id) else {
                    let known: Vec<String> =
                        inner.list.iter().rev().take(10).map(|c| shown_id(&c.call_id)).collect();
                    return Err(UndoError::NotFound(format!(
                        "No checkpoint of a call with id {id:?} (a call that changed no file has none). The latest \
                         calls that changed files: {}. The checkpoints tool lists them all.",
                        known.join(", ")
                    )));
                };
                vec![found.clone()]
            }
            UndoTarget::Turn(turn) => {
                let of_turn: Vec<&Checkpoint> =
                    inner.list.iter().filter(|c| c.turn.as_deref() == Some(turn.as_str())).collect();
                if of_turn.is_empty() {
                    let mut turns: Vec<String> = Vec::new();
                    for c in inner.list.iter().rev() {
                        if let Some(t) = &c.turn
                            && !turns.contains(&shown_id(t))
                            && turns.len() < 10
                        {
                            turns.push(shown_id(t));
                        }
                    }
                    let known = if turns.is_empty() {
                        "No call kept has a turn id.".to_owned()
                    } else {
                        format!("The latest turns with calls that changed files: {}.", turns.join(", "))
                    };
                    return Err(UndoError::NotFound(format!(
                        "No checkpoint of a call in turn {} (a call that changed no file has none). {known} The \
                         checkpoints tool lists them all.",
                        shown_id(turn)
                    )));
                }
                let ids: BTreeSet<u64> = of_turn.iter().map(|c| c.id).collect();
                // A call undone within the turn is undone again with its undo (together they
                // changed nothing); one undone by a call of another turn is left out.
                let selected: Vec<Checkpoint> = of_turn
                    .iter()
                    .filter(|c| c.undone_by.is_none_or(|by| ids.contains(&by)))
                    .map(|c| (*c).clone())
                    .collect();
                if selected.is_empty() {
                    let by: BTreeSet<String> =
                        of_turn.iter().filter_map(|c| c.undone_by).map(|id| format!("#{id}")).collect();
                    return Err(UndoError::NotFound(format!(
                        "Every call of turn {} that changed files was already undone (by checkpoint {}); undo \
                         that undo, by its call id, to bring the change back.",
                        shown_id(turn),
                        by.into_iter().collect::<Vec<_>>().join(", ")
                    )));
                }
                selected
            }
            UndoTarget::Last(0) => {
                return Err(UndoError::NotFound("`last` must be at least 1.".to_owned()));
            }
            UndoTarget::Last(n) => {
                let mut last: Vec<Checkpoint> = inner
                    .list
                    .iter()
                    .rev()
                    .filter(|c| c.undone_by.is_none() && c.undoes.is_empty())
                    .take(*n)
                    .cloned()
                    .collect();
                if last.is_empty() {
                    return Err(UndoError::NotFound(
                        "Every call kept has been undone already; undo an undo by its call id (see checkpoints) to \
                         bring its change back."
                            .to_owned(),
                    ));
                }
                last.reverse();
                last
            }
        };
        if let [one] = selected.as_slice()
            && let Some(by) = one.undone_by
        {
            let undo = inner
                .list
                .iter()
                .find(|c| c.id == by)
                .map_or(String::new(), |c| format!(" ({:?})", c.call_id));
            return Err(UndoError::NotFound(format!(
                "Call {:?} was already undone by checkpoint #{by}{undo}; undo that call to bring its change back.",
                one.call_id
            )));
        }
        Ok(selected)
    }

    fn apply(&self, root: &Path, selected: &[Checkpoint]) -> Result<UndoReport, UndoError> {
        // For each path: what it held before the first selected call that changed it, and what
        // it should hold now (after the last one).
        let mut plan: BTreeMap<PathBuf, (Option<FileState>, Option<FileState>)> = BTreeMap::new();
        for checkpoint in selected {
            for change in &checkpoint.changes {
                plan.entry(change.path.clone())
                    .and_modify(|(_, expected)| *expected = change.after.clone())
                    .or_insert((change.before.clone(), change.after.clone()));
            }
        }
        // A path a running command's sandbox holds is not changed (see `tool_sandbox::is_held`);
        // a placeholder the sandbox made is no call's change.
        if plan.keys().any(|path| tool_sandbox::is_held(&root.join(path))) {
            crate::shell::process::forget_ended_jobs();
        }
        plan.retain(|path, _| !tool_sandbox::is_held_placeholder(&root.join(path)));
        if let Some(path) = plan.keys().find(|path| tool_sandbox::is_held(&root.join(path))) {
            return Err(UndoError::Io(format!(
                "Undo refused, nothing was written: {} cannot be restored now: {}.",
                path.display(),
                crate::fs::local::HELD
            )));
        }
        let mut inner = lock(&self.inner);
        let current = self
            .scan_locked(&mut inner, root)
            .map_err(|e| UndoError::Io(format!("Cannot scan the workspace: {e}")))?;
        let mut report =
            UndoReport { undone: selected.iter().map(|c| c.id).collect(), ..UndoReport::default() };
        let mut conflicts = Vec::new();
        // Paths that hold their earlier state already: nothing to write.
        let mut already = BTreeSet::new();
        // Every path is reached through the root's handle, one directory at a time, never
        // through a link: a parent made a link since would lead a write out of the workspace.
        let root_dir = super::scan::open_root(&mut inner, root)
            .map_err(|e| UndoError::Io(format!("Cannot open the workspace root {}: {e}", root.display())))?;
        for (path, (before, expected)) in &plan {
            let (parent, name) = match host::split(path) {
                Ok(split) => split,
                Err(e) => {
                    conflicts.push((path.clone(), e.to_string()));
                    continue;
                }
            };
            let parent_dir = match host::open_beneath(&root_dir, parent, false) {
                Ok(dir) => Some(dir),
                Err(host::Beneath::Missing(_)) => None,
                Err(e @ host::Beneath::NotDir { .. }) => {
                    conflicts.push((path.clone(), e.to_string()));
                    continue;
                }
                Err(host::Beneath::Io(e)) => {
                    return Err(UndoError::Io(format!(
                        "Cannot open the directory of {}: {e}",
                        path.display()
                    )));
                }
            };
            let cached = current.get(path);
            let now = cached.map(|c| &c.state);
            // What it held before was not kept: there is nothing to put back.
            match before {
                Some(FileState::TooLarge { .. }) => {
                    report.too_large.push(path.clone());
                    continue;
                }
                Some(FileState::NotRead { .. }) => {
                    report.not_read.push(path.clone());
                    continue;
                }
                _ => {}
            }
            // Something the scan does not record is there now: not the calls' to replace or remove.
            if now.is_none() && parent_dir.as_ref().is_some_and(|dir| host::stat_at(dir, name).is_ok()) {
                conflicts.push((
                    path.clone(),
                    "there now but not recorded: an ignore file names it, or it is not a regular file, link or \
                     directory"
                        .to_owned(),
                ));
                continue;
            }
            if before.as_ref() == now {
                already.insert(path.clone());
                continue;
            }
            if unchanged(expected.as_ref(), cached) {
                if matches!(now, Some(FileState::TooLarge { .. } | FileState::NotRead { .. })) {
                    report.discarded.push(path.clone());
                }
                continue;
            }
            // A directory the calls created may hold ignored files now: not a conflict.
            let is_dir = |dir: &Dir| host::stat_at(dir, name).is_ok_and(|s| s.kind == host::Kind::Dir);
            if matches!(expected, Some(FileState::Dir)) && parent_dir.as_ref().is_some_and(is_dir) {
                continue;
            }
            let what = match (expected, now) {
                (Some(_), None) => "deleted since".to_owned(),
                (None, Some(_)) => "created since".to_owned(),
                _ => "changed since".to_owned(),
            };
            conflicts.push((path.clone(), what));
        }
        if !conflicts.is_empty() {
            return Err(UndoError::Conflicts(conflicts));
        }
        let left: Vec<PathBuf> = report.too_large.iter().chain(&report.not_read).cloned().collect();
        // Nothing to write but files left as they are: the change is still there.
        if !left.is_empty() && left.len() + already.len() == plan.len() {
            return Err(UndoError::NothingKept(left));
        }
        let store = inner.store.as_ref().ok_or(UndoError::Off)?;
        let todo: Vec<(&PathBuf, &Option<FileState>)> = plan
            .iter()
            .filter(|(p, _)| {
                !report.too_large.contains(p) && !report.not_read.contains(p) && !already.contains(*p)
            })
            .map(|(p, (b, _))| (p, b))
            .collect();
        // Every stored copy the undo needs, read and checked against its hash before anything is
        // written: a store that lost or damaged one refuses the undo whole.
        let mut copies: HashMap<BlobId, Vec<u8>> = HashMap::new();
        let mut lost = Vec::new();
        for (path, before) in &todo {
            let Some(blob) = before.as_ref().and_then(blob_of) else { continue };
            if copies.contains_key(&blob) {
                continue;
            }
            match store.get(&blob) {
                Ok(bytes) => {
                    copies.insert(blob, bytes);
                }
                Err(e) => lost.push(((*path).clone(), e.to_string())),
            }
        }
        if !lost.is_empty() {
            return Err(UndoError::StoreDamaged(lost));
        }
        let io = |path: &Path, e: io::Error| {
            UndoError::Io(format!(
                "Cannot restore {}: {e}. The files before it in this list may already be restored; run checkpoints \
                 to see the state.",
                path.display()
            ))
        };
        // The directory holding `path`, and its name there (`None` when the directory is gone).
        let parent_of = |path: &Path, create: bool| -> io::Result<Option<(Dir, OsString)>> {
            let (parent, name) = host::split(path)?;
            match host::open_beneath(&root_dir, parent, create) {
                Ok(dir) => Ok(Some((dir, name.to_os_string()))),
                Err(host::Beneath::Missing(_)) if !create => Ok(None),
                Err(e) => Err(e.into()),
            }
        };
        // 1. Files and links that must go (gone before, or a directory there before).
        for (path, before) in &todo {
            let Some((dir, name)) = parent_of(path, false).map_err(|e| io(path, e))? else { continue };
            let Ok(stat) = host::stat_at(&dir, &name) else { continue };
            if stat.kind == host::Kind::Dir {
                continue;
            }
            if matches!(before, None | Some(FileState::Dir)) || matches!(before, Some(FileState::Link { .. }))
            {
                commit(|| host::remove_file(&dir, &name)).map_err(|e| io(path, e))?;
                if before.is_none() {
                    report.removed.push((*path).clone());
                }
            }
        }
        // 2. Directories the calls created, deepest first.
        for (path, before) in todo.iter().rev() {
            let Some((dir, name)) = parent_of(path, false).map_err(|e| io(path, e))? else { continue };
            let is_dir = host::stat_at(&dir, &name).is_ok_and(|s| s.kind == host::Kind::Dir);
            if is_dir && !matches!(before, Some(FileState::Dir)) {
                match commit(|| host::remove_dir(&dir, &name)) {
                    Ok(()) => report.removed.push((*path).clone()),
                    Err(_) => report.kept_dirs.push((*path).clone()),
                }
            }
        }
        // 3. Directories the calls removed, then files and links.
        for (path, before) in &todo {
            match before {
                Some(FileState::Dir) => {
                    let existed = host::open_beneath(&root_dir, path, false).is_ok();
                    if !existed {
                        commit(|| host::open_beneath(&root_dir, path, true).map_err(io::Error::from))
                            .map_err(|e| io(path, e))?;
                        report.recreated.push((*path).clone());
                    }
                }
                Some(FileState::File { blob, mode }) => {
                    let Some((dir, name)) = commit(|| parent_of(path, true)).map_err(|e| io(path, e))? else {
                        continue;
                    };
                    // A directory the calls put there and left empty; one that is not is an error.
                    if host::stat_at(&dir, &name).is_ok_and(|s| s.kind == host::Kind::Dir) {
                        commit(|| host::remove_dir(&dir, &name)).map_err(|e| io(path, e))?;
                    }
                    let bytes = copies.get(blob).map_or(&[][..], Vec::as_slice);
                    host::replace_file(&dir, &name, bytes, Some(*mode), ".tools-undo")
                        .map_err(|e| io(path, e))?;
                    report.restored.push((*path).clone());
                }
                Some(FileState::Link { blob }) => {
                    let Some((dir, name)) = commit(|| parent_of(path, true)).map_err(|e| io(path, e))? else {
                        continue;
                    };
                    if host::stat_at(&dir, &name).is_ok_and(|s| s.kind != host::Kind::Dir) {
                        commit(|| host::remove_file(&dir, &name)).map_err(|e| io(path, e))?;
                    }
                    let target = copies.get(blob).map_or(&[][..], Vec::as_slice);
                    commit(|| host::make_link(&dir, &name, target)).map_err(|e| io(path, e))?;
                    report.restored.push((*path).clone());
                }
                Some(FileState::TooLarge { .. } | FileState::NotRead { .. }) | None => {}
            }
        }
        Ok(report)
    }
}
