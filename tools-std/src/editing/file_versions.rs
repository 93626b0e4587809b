//! The stale-write guard: what each file held when `read`, `edit`, `multi_edit`, `write` or `apply_patch` last saw or wrote it, per session, so that a change of a file changed since is refused.
//!
//! The guard compares contents (a hash), not modification times: a file rewritten with the same
//! bytes is not stale, and a change within the same second is still seen. A file the session
//! has never seen is not refused (nothing is known about it); one it has seen must hold what it
//! held then. Small files are remembered whole too, so that the refusal can show what changed.
//!
//! It lives in the dispatcher's session state and is on by default. An application turns it off
//! by putting its own in the session state before the first call:
//! `state.get_or_insert_with(tools_std::file_versions::FileVersions::off);`

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tool_runtime::{SessionState, ToolContext, ToolError};

use crate::editing::text_file::unified_diff;
use crate::fs::ops::{ContentHash, Target};
use crate::text::plural;

/// How many files a session remembers; past it, the one seen longest ago is forgotten.
const MAX_FILES: usize = 4096;
/// Files up to this size are remembered whole, to show what changed.
const MAX_KEPT_FILE: usize = 256 * 1024;
/// How many bytes of remembered contents a session keeps in all; past it, the oldest contents
/// are dropped (their hashes stay).
const MAX_KEPT_TOTAL: usize = 16 * 1024 * 1024;
/// How many lines of the difference a refusal shows.
const SHOWN_DIFF_LINES: usize = 20;

/// The contents each file of one session was last seen with (see the module documentation).
#[derive(Debug)]
pub struct FileVersions {
    enabled: bool,
    seen: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    files: HashMap<Target, Version>,
    /// Increases with every record: the smallest is the oldest.
    clock: u64,
    kept_bytes: usize,
}

#[derive(Debug)]
struct Version {
    hash: u64,
    len: usize,
    at: u64,
    content: Option<Arc<[u8]>>,
}

impl Default for FileVersions {
    fn default() -> Self {
        FileVersions { enabled: true, seen: Mutex::new(Seen::default()) }
    }
}

/// The hash the guard compares: the same for the same bytes however they were read in pieces.
#[derive(Default)]
pub(crate) struct ContentHasher {
    hasher: ContentHash,
    len: usize,
    /// The bytes, while they fit in [`MAX_KEPT_FILE`].
    kept: Option<Vec<u8>>,
}

impl ContentHasher {
    pub(crate) fn new() -> Self {
        ContentHasher { kept: Some(Vec::new()), ..ContentHasher::default() }
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.len += bytes.len();
        if self.len > MAX_KEPT_FILE {
            self.kept = None;
        } else if let Some(kept) = &mut self.kept {
            kept.extend_from_slice(bytes);
        }
    }
}

fn hash_of(bytes: &[u8]) -> ContentHasher {
    let mut hasher = ContentHasher::new();
    hasher.update(bytes);
    hasher
}

impl FileVersions {
    /// A guard that remembers nothing and refuses nothing.
    pub fn off() -> Self {
        FileVersions { enabled: false, seen: Mutex::new(Seen::default()) }
    }

    /// Whether the guard is on.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The session's guard (on unless the application put one that is off).
    pub(crate) fn of(ctx: &ToolContext) -> Arc<FileVersions> {
        Self::in_state(ctx.session())
    }

    pub(crate) fn in_state(state: &SessionState) -> Arc<FileVersions> {
        state.get_or_insert_with(FileVersions::default)
    }

    /// Records that `target` holds `bytes`, as just read or written.
    pub(crate) fn saw(&self, target: &Target, bytes: &[u8]) {
        self.record(target, hash_of(bytes));
    }

    /// Records what a hasher fed with the whole file computed.
    pub(crate) fn record(&self, target: &Target, hashed: ContentHasher) {
        if !self.enabled {
            return;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        seen.clock += 1;
        let at = seen.clock;
        if let Some(old) = seen.files.remove(target) {
            seen.kept_bytes -= old.content.map_or(0, |c| c.len());
        }
        if seen.files.len() >= MAX_FILES
            && let Some(oldest) = seen.files.iter().min_by_key(|(_, v)| v.at).map(|(t, _)| t.clone())
            && let Some(old) = seen.files.remove(&oldest)
        {
            seen.kept_bytes -= old.content.map_or(0, |c| c.len());
        }
        let content: Option<Arc<[u8]>> = hashed.kept.map(Arc::from);
        seen.kept_bytes += content.as_ref().map_or(0, |c| c.len());
        seen.files
            .insert(target.clone(), Version { hash: hashed.hasher.finish(), len: hashed.len, at, content });
        while seen.kept_bytes > MAX_KEPT_TOTAL {
            let Some(oldest) = seen
                .files
                .iter()
                .filter(|(_, v)| v.content.is_some())
                .min_by_key(|(_, v)| v.at)
                .map(|(t, _)| t.clone())
            else {
                break;
            };
            if let Some(version) = seen.files.get_mut(&oldest) {
                seen.kept_bytes -= version.content.take().map_or(0, |c| c.len());
            }
        }
    }

    /// Whether the session has seen `target` (and the guard is on).
    pub(crate) fn knows(&self, target: &Target) -> bool {
        self.enabled
            && self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).files.contains_key(target)
    }

    /// Forgets `target` (a file deleted).
    pub(crate) fn forget(&self, target: &Target) {
        let mut seen = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(old) = seen.files.remove(target) {
            seen.kept_bytes -= old.content.map_or(0, |c| c.len());
        }
    }

    /// Refuses to change `target`, which holds `current` now, when the session last saw it
    /// holding something else. `tool` names the tool in the message.
    pub(crate) fn check(
        &self,
        target: &Target,
        display: &str,
        current: &[u8],
        tool: &str,
    ) -> Result<(), ToolError> {
        if !self.enabled {
            return Ok(());
        }
        let seen = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(version) = seen.files.get(target) else { return Ok(()) };
        let now = hash_of(current);
        if now.hasher.finish() == version.hash && now.len == version.len {
            return Ok(());
        }
        let mut message = format!(
            "{display} has changed since it was last read or written in this session (another program or a command \
             changed it), so {tool} could undo that change; nothing was written."
        );
        match &version.content {
            Some(before) => {
                let before = String::from_utf8_lossy(before);
                let after = String::from_utf8_lossy(current);
                let diff = unified_diff(display, &before, &after, 64 * 1024);
                let lines: Vec<&str> = diff.text.lines().collect();
                message.push_str(" What changed since:\n");
                for line in lines.iter().take(SHOWN_DIFF_LINES) {
                    message.push_str(&crate::text::cut_line(line, 200, 0));
                    message.push('\n');
                }
                if lines.len() > SHOWN_DIFF_LINES || diff.cut {
                    message.push_str("... (the rest of the difference is left out)\n");
                }
            }
            None => {
                message.push_str(&format!(
                    " It held {} then and holds {} now.\n",
                    plural(version.len as u64, "byte"),
                    plural(current.len() as u64, "byte")
                ));
            }
        }
        message.push_str(&format!("Read {display} again, then make the change against its current text."));
        Err(ToolError::execution(message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(name: &str) -> Target {
        Target::root().join(name)
    }

    #[test]
    fn the_hash_does_not_depend_on_the_pieces() {
        let mut pieces = ContentHasher::new();
        for piece in [&b"ab"[..], b"", b"cde", b"f"] {
            pieces.update(piece);
        }
        assert_eq!(pieces.hasher.finish(), hash_of(b"abcdef").hasher.finish());
    }

    #[test]
    fn a_changed_file_is_refused_with_what_changed() {
        let versions = FileVersions::default();
        let a = target("a.txt");
        assert!(versions.check(&a, "a.txt", b"anything", "edit").is_ok(), "never seen: allowed");
        versions.saw(&a, b"one\ntwo\n");
        assert!(versions.check(&a, "a.txt", b"one\ntwo\n", "edit").is_ok());
        let err = versions.check(&a, "a.txt", b"one\n2\n", "edit").unwrap_err();
        assert_eq!(
            err.message(),
            "a.txt has changed since it was last read or written in this session (another program or a command \
             changed it), so edit could undo that change; nothing was written. What changed since:\n--- a/a.txt\n\
             +++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\nRead a.txt again, then make the change against its \
             current text."
        );
        versions.forget(&a);
        assert!(versions.check(&a, "a.txt", b"one\n2\n", "edit").is_ok());
        let off = FileVersions::off();
        off.saw(&a, b"x");
        assert!(off.check(&a, "a.txt", b"y", "edit").is_ok());
    }

    #[tokio::test]
    async fn an_edit_after_an_outside_change_is_refused_until_the_file_is_read_again() {
        use serde_json::json;
        let fx = crate::testing::Fixture::new();
        fx.write("a.txt", "x = 1\n");
        fx.text("read", json!({"path": "a.txt"})).await;
        fx.text("edit", json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"})).await;
        // Our own writes are what the session last saw: a second edit goes through.
        fx.text("edit", json!({"path": "a.txt", "old_string": "x = 2", "new_string": "x = 3"})).await;
        // Another program changes it.
        fx.write("a.txt", "x = 3\ny = 4\n");
        let edit = json!({"path": "a.txt", "old_string": "x = 3", "new_string": "x = 5"});
        let err = fx.error("edit", edit.clone()).await;
        assert!(
            err.message().starts_with("a.txt has changed since it was last read or written in this session")
                && err.message().contains("@@ -1 +1,2 @@\n x = 3\n+y = 4\n")
                && err
                    .message()
                    .ends_with("Read a.txt again, then make the change against its current text."),
            "{}",
            err.message()
        );
        for (tool, args) in [
            (
                "multi_edit",
                json!({"path": "a.txt", "edits": [{"old_string": "x = 3", "new_string": "x = 5"}]}),
            ),
            ("write", json!({"path": "a.txt", "content": "new\n"})),
            (
                "apply_patch",
                json!({"patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n-x = 3\n+x = 5\n*** End Patch\n"}),
            ),
            ("apply_patch", json!({"patch": "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n"})),
        ] {
            let err = fx.error(tool, args).await;
            assert!(
                err.message().contains("has changed since it was last read"),
                "{tool}: {}",
                err.message()
            );
        }
        assert_eq!(fx.read("a.txt"), b"x = 3\ny = 4\n", "nothing was written");
        // Read again: accepted.
        fx.text("read", json!({"path": "a.txt", "limit": 1})).await;
        fx.text("edit", edit).await;
        assert_eq!(fx.read("a.txt"), b"x = 5\ny = 4\n");
        // The same bytes written again by another program are no change.
        fx.write("a.txt", "x = 5\ny = 4\n");
        fx.text("write", json!({"path": "a.txt", "content": "w\n"})).await;
        // After apply_patch wrote it, the session knows its content.
        fx.text(
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n-w\n+p\n*** End Patch\n"}),
        )
        .await;
        fx.text("edit", json!({"path": "a.txt", "old_string": "p", "new_string": "q"})).await;
        // A file never seen in the session is edited as it is.
        fx.write("b.txt", "b\n");
        fx.text("edit", json!({"path": "b.txt", "old_string": "b", "new_string": "c"})).await;
    }

    /// A file reached through a symbolic link inside the workspace is one file: what the session
    /// saw through one name guards a change through the other, and a link pointed elsewhere
    /// since is not taken for the file it pointed at.
    #[tokio::test]
    #[cfg(unix)]
    async fn a_file_and_a_link_to_it_are_guarded_as_one_file() {
        use serde_json::json;
        let fx = crate::testing::Fixture::new();
        fx.write("src/a.txt", "x = 1\n");
        fx.write("b.txt", "b = 1\n");
        std::os::unix::fs::symlink("src/a.txt", fx.root().join("link.txt")).unwrap();
        std::os::unix::fs::symlink("src", fx.root().join("dir")).unwrap();
        for (seen_as, changed_as) in
            [("link.txt", "src/a.txt"), ("src/a.txt", "link.txt"), ("dir/a.txt", "link.txt")]
        {
            fx.write("src/a.txt", "x = 1\n");
            fx.text("read", json!({"path": seen_as})).await;
            fx.write("src/a.txt", "x = 1\ny = 2\n");
            let err = fx
                .error("edit", json!({"path": changed_as, "old_string": "x = 1", "new_string": "x = 3"}))
                .await;
            assert!(
                err.message()
                    .starts_with("src/a.txt has changed since it was last read or written in this session"),
                "{seen_as} then {changed_as}: {}",
                err.message()
            );
            let err = fx.error("write", json!({"path": changed_as, "content": "w\n"})).await;
            assert!(err.message().contains("has changed since"), "{}", err.message());
        }
        assert_eq!(fx.read("src/a.txt"), b"x = 1\ny = 2\n", "nothing was written");
        // Our own write through the link is what the session saw of the file.
        fx.text("read", json!({"path": "src/a.txt"})).await;
        fx.text("write", json!({"path": "link.txt", "content": "w\n"})).await;
        fx.text("edit", json!({"path": "src/a.txt", "old_string": "w", "new_string": "v"})).await;
        assert!(std::fs::symlink_metadata(fx.root().join("link.txt")).unwrap().is_symlink(), "still a link");
        // The link swapped to another file between calls: the file it names now was never seen
        // under any name, so nothing is known to be lost; the one it named is still guarded.
        fx.write("src/a.txt", "changed outside\n");
        std::fs::remove_file(fx.root().join("link.txt")).unwrap();
        std::os::unix::fs::symlink("b.txt", fx.root().join("link.txt")).unwrap();
        fx.text("edit", json!({"path": "link.txt", "old_string": "b = 1", "new_string": "b = 2"})).await;
        assert_eq!(fx.read("b.txt"), b"b = 2\n");
        let err = fx.error("write", json!({"path": "src/a.txt", "content": "w\n"})).await;
        assert!(err.message().contains("has changed since"), "{}", err.message());
    }

    #[tokio::test]
    async fn the_guard_can_be_turned_off() {
        use serde_json::json;
        let fx = crate::testing::Fixture::new();
        fx.session.get_or_insert_with(FileVersions::off);
        fx.write("a.txt", "x\n");
        fx.text("read", json!({"path": "a.txt"})).await;
        fx.write("a.txt", "y\n");
        fx.text("edit", json!({"path": "a.txt", "old_string": "y", "new_string": "z"})).await;
        assert_eq!(fx.read("a.txt"), b"z\n");
    }

    #[test]
    fn memory_is_bounded() {
        let versions = FileVersions::default();
        let big = vec![b'x'; MAX_KEPT_FILE];
        for i in 0..(MAX_KEPT_TOTAL / MAX_KEPT_FILE + 8) {
            versions.saw(&target(&format!("{i}")), &big);
        }
        let seen = versions.seen.lock().unwrap();
        assert!(seen.kept_bytes <= MAX_KEPT_TOTAL, "{}", seen.kept_bytes);
        assert!(
            seen.files.get(&target("0")).is_some_and(|v| v.content.is_none()),
            "hash kept, content dropped"
        );
        drop(seen);
        // A file too large to keep is still checked, by its hash and size.
        let huge = vec![b'y'; MAX_KEPT_FILE + 1];
        versions.saw(&target("huge"), &huge);
        let err = versions.check(&target("huge"), "huge", b"z", "write").unwrap_err();
        assert!(
            err.message().contains("It held 262145 bytes then and holds 1 byte now."),
            "{}",
            err.message()
        );
    }
}
