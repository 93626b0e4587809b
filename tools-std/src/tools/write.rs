//! The `write` tool: create or replace a whole file, atomically.

use std::io;

use serde_json::json;
use tool_runtime::{Dep, ToolContext, ToolError, ToolOutput, tool};

use std::io::Read as _;

use crate::Workspace;
use crate::editing::file_versions::FileVersions;
use crate::editing::text_file::{MAX_EDIT_BYTES, io_error};
use crate::fs::ops::{FileChanged, FileKind, Precondition, Written, content_hash};
use crate::text::{hard_links_note, plural};

/// Write a file in the workspace, creating it (and its missing parent directories) or replacing
/// all of its content.
///
/// `path` is relative to the workspace root (a path outside it needs the user's permission).
/// The write is atomic: the content goes to a temporary file that then replaces the old one, so
/// the file never holds a mix of old and new content; an existing file keeps its permissions.
/// The result says how many bytes were written. To change part of an existing file, `edit` is
/// safer and cheaper than rewriting it whole.
#[tool(destructive, idempotent, permission = "path", timeout = "1m")]
pub async fn write(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The file to write, relative to the workspace root.
    #[arg(alias = "file_path", alias = "filePath")]
    path: String,
    /// The complete new content of the file.
    content: String,
) -> Result<ToolOutput, ToolError> {
    let resolved = ws.resolve_to_change(ctx, &path, "write to").await?;
    let checkpoint = crate::checkpoint::begin(&ws, ctx, "write").await;
    let display = resolved.display.clone();
    let target = resolved.target.clone();
    let versions = FileVersions::of(ctx);
    let (previous, written) = ws
        .blocking(move |ops| -> Result<(Option<u64>, Written), ToolError> {
            let previous = match ops.metadata(&target) {
                Ok(info) if info.kind == FileKind::Dir => {
                    return Err(ToolError::invalid_arguments(format!(
                        "{display} is a directory; give the path of a file inside it."
                    )));
                }
                Ok(info) => Some(info.len),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => return Err(write_error(&display, e)),
            };
            // A file this session has seen must still hold what it held then.
            let mut check = Precondition::None;
            if previous.is_some() && versions.knows(&target) {
                let mut current = Vec::new();
                let read = ops
                    .open(&target)
                    .and_then(|file| file.take(MAX_EDIT_BYTES + 1).read_to_end(&mut current));
                if read.is_ok() && current.len() as u64 <= MAX_EDIT_BYTES {
                    versions.check(&target, &display, &current, "write")?;
                    check = Precondition::Unchanged(content_hash(&current));
                }
            }
            if let Some(parent) = target.parent() {
                ops.create_dir_all(&parent).map_err(|e| write_error(&display, e))?;
            }
            let written = ops.write_atomic(&target, content.as_bytes(), check).map_err(|e| {
                if FileChanged::is(&e) { io_error("write", &display, e) } else { write_error(&display, e) }
            })?;
            versions.saw(&target, content.as_bytes());
            Ok((previous, written))
        })
        .await??;
    let display = resolved.display;
    let what = match previous {
        None => "new file".to_owned(),
        Some(old) => format!("replaced {}", plural(old, "byte")),
    };
    let mut text = format!("Wrote {} to {display} ({what}).", plural(written.bytes, "byte"));
    text.push_str(&hard_links_note(written.other_links));
    let output = ToolOutput::text(text)
        .with_title(display.clone())
        .with_metadata("bytes", json!(written.bytes))
        .with_metadata("created", json!(previous.is_none()));
    let output = crate::editing::verify::after_edit(
        &ws,
        &FileVersions::of(ctx),
        &[(resolved.target, display)],
        true,
        output,
    )
    .await;
    Ok(checkpoint.finish_into(output).await)
}

fn write_error(display: &str, error: io::Error) -> ToolError {
    let message = format!("Cannot write {display}: {error}");
    ToolError::from_io(error).with_message(message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::ErrorKind;

    use crate::testing::Fixture;

    #[tokio::test]
    async fn creates_parents_and_reports_bytes() {
        let fx = Fixture::new();
        let text = fx.text("write", json!({"path": "a/b/c.txt", "content": "héllo\n"})).await;
        assert_eq!(text, "Wrote 7 bytes to a/b/c.txt (new file).");
        assert_eq!(fx.read("a/b/c.txt"), "héllo\n".as_bytes());
        let text = fx.text("write", json!({"path": "a/b/c.txt", "content": "x"})).await;
        assert_eq!(text, "Wrote 1 byte to a/b/c.txt (replaced 7 bytes).");
        let text = fx.text("write", json!({"path": "empty", "content": ""})).await;
        assert_eq!(text, "Wrote 0 bytes to empty (new file).");
    }

    /// A command may make `sub` a link to `.git/hooks` (it cannot write there itself) to have the
    /// host write a hook for it: a change led by a link into a protected name is refused; named
    /// outright, the path is the model's choice.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_link_into_a_protected_name_does_not_lead_a_change_there() {
        use std::os::unix::fs::symlink;
        let fx = Fixture::new();
        std::fs::create_dir_all(fx.root().join(".git/hooks")).unwrap();
        fx.write("AGENTS.md", "Be brief.\n");
        symlink(".git/hooks", fx.root().join("sub")).unwrap();
        std::fs::create_dir(fx.root().join("notes")).unwrap();
        symlink("../AGENTS.md", fx.root().join("notes/agents.md")).unwrap();
        let hook = json!({"path": "sub/pre-commit", "content": "#!/bin/sh\necho pwned\n"});
        let err = fx.error("write", hook).await;
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        assert_eq!(
            err.message(),
            "sub/pre-commit leads through a symbolic link to .git/hooks/pre-commit, inside `.git`, which commands \
             may not change (a command may have made the link to have it written); nothing was changed. If \
             .git/hooks/pre-commit is what you mean to change, name it as it is"
        );
        assert!(!fx.root().join(".git/hooks/pre-commit").exists());
        let edit = json!({"path": "notes/agents.md", "old_string": "brief", "new_string": "long"});
        assert_eq!(fx.error("edit", edit).await.kind(), ErrorKind::PermissionDenied);
        let patch = json!({"patch": "*** Begin Patch\n*** Add File: sub/post-checkout\n+x\n*** End Patch\n"});
        assert_eq!(fx.error("apply_patch", patch).await.kind(), ErrorKind::PermissionDenied);
        assert_eq!(fx.read("AGENTS.md"), b"Be brief.\n");
        // Reading through the link is a read; naming the file itself is the model's choice.
        assert_eq!(fx.text("read", json!({"path": "notes/agents.md"})).await, "     1\tBe brief.\n");
        fx.text("write", json!({"path": ".git/hooks/pre-commit", "content": "x"})).await;
        assert_eq!(fx.read(".git/hooks/pre-commit"), b"x");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn keeps_permissions_and_writes_through_links_inside() {
        use std::os::unix::fs::PermissionsExt;
        let fx = Fixture::new();
        let script = fx.write("run.sh", "old");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("run.sh", fx.root().join("link.sh")).unwrap();
        fx.text("write", json!({"path": "link.sh", "content": "#!/bin/sh\n"})).await;
        assert_eq!(fx.read("run.sh"), b"#!/bin/sh\n");
        let link = std::fs::symlink_metadata(fx.root().join("link.sh")).unwrap();
        assert!(link.file_type().is_symlink(), "the link is kept, its target written");
        assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o755);
    }

    #[tokio::test]
    async fn refuses_directories_and_outside_paths() {
        let fx = Fixture::new();
        std::fs::create_dir_all(fx.root().join("dir")).unwrap();
        let err = fx.error("write", json!({"path": "dir", "content": "x"})).await;
        assert_eq!(err.message(), "dir is a directory; give the path of a file inside it.");
        let err = fx.error("write", json!({"path": "../escape.txt", "content": "x"})).await;
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        assert!(!fx.dir.path().join("escape.txt").exists());
        let err = fx.error("write", json!({"path": "/tmp/../etc/x", "content": "x"})).await;
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    }

    #[tokio::test]
    async fn a_file_in_the_way_of_a_parent_is_a_clear_error() {
        let fx = Fixture::new();
        fx.write("file", "x");
        let err = fx.error("write", json!({"path": "file/inner.txt", "content": "x"})).await;
        assert!(err.message().starts_with("Cannot write file/inner.txt: "), "{}", err.message());
    }
}
