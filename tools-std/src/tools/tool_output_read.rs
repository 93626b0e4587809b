//! The `tool_output_read` tool: page through the full text of a truncated result.

use std::io::BufReader;

use tool_runtime::output_store::OutputStore;
use tool_runtime::{Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::tools::read::{Lines, Page, read_lines};

/// Read the full output of an earlier tool call that was truncated.
///
/// When a result is cut, its notice names a reference (such as
/// `out_20261121T163000_ab12cd34`) under which the whole output was saved. This shows its lines
/// numbered like `read` does: at most `limit` lines (default 2000) from line `offset` (default
/// 1), at most 47 KB per call, long lines cut (`char_offset` reads on in one), and a
/// `[showing lines a-b of N; use offset=c to continue]` notice while there is more. To find
/// something in it, `tool_output_grep` is faster. Saved outputs expire after a while.
#[tool(parallel, read_only, truncate = false, timeout = "1m")]
pub async fn tool_output_read(
    store: Dep<OutputStore>,
    ctx: &ToolContext,
    /// The reference from the truncation notice.
    r#ref: String,
    /// The 1-based line number to start at.
    #[arg(default = 1)]
    #[schemars(range(min = 1))]
    offset: u64,
    /// How many lines to show at most.
    #[arg(default = 2000)]
    #[schemars(range(min = 1))]
    limit: u64,
    /// Characters of the first line shown (the line at `offset`) to skip: reads on in a line
    /// longer than 2000 characters, from where its cut mark says.
    #[arg(default = 0)]
    char_offset: u64,
) -> Result<ToolOutput, ToolError> {
    let reference = r#ref.trim().to_owned();
    let file = store.open(&reference)?;
    let cancel = ctx.cancellation_token().clone();
    let (offset, limit) = (offset.max(1), limit.max(1));
    let lines = Lines { offset, limit, char_offset: usize::try_from(char_offset).unwrap_or(usize::MAX) };
    let page: Page = tokio::task::spawn_blocking(move || {
        read_lines(&mut BufReader::with_capacity(64 * 1024, file), lines, &cancel)
    })
    .await
    .map_err(|e| ToolError::execution("reading the stored output failed unexpectedly").with_source(e))?
    .map_err(|e| {
        let message = format!("Cannot read the stored output {reference}: {e}");
        ToolError::from_io(e).with_message(message)
    })?;
    page.into_output(&reference, offset)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::ErrorKind;

    use super::*;
    use crate::testing::Fixture;

    #[tokio::test]
    async fn pages_through_a_stored_output() {
        let fx = Fixture::new();
        let store = fx.deps.get::<OutputStore>().unwrap();
        let text: String = (1..=10).map(|n| format!("row {n}\n")).collect();
        let reference = store.save(&text).unwrap().reference.to_string();
        assert_eq!(
            fx.text("tool_output_read", json!({"ref": reference, "offset": 4, "limit": 2})).await,
            format!("     4\trow 4\n     5\trow 5\n\n[showing lines 4-5 of 10; use offset=6 to continue]")
        );
        assert_eq!(
            fx.text("tool_output_read", json!({"ref": reference, "offset": 9})).await,
            "     9\trow 9\n    10\trow 10\n"
        );
        let err = fx.error("tool_output_read", json!({"ref": reference, "offset": 11})).await;
        assert_eq!(
            err.message(),
            format!(
                "offset 11 is past the end of {reference}, which has 10 lines; use an offset from 1 to 10."
            )
        );
    }

    #[tokio::test]
    async fn bad_and_unknown_references() {
        let fx = Fixture::new();
        let err = fx.error("tool_output_read", json!({"ref": "../../etc/passwd"})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        assert!(err.message().contains("is not an output reference"), "{}", err.message());
        let long = format!("out_{}", "0".repeat(10_000_000));
        let err = fx.error("tool_output_read", json!({"ref": long})).await;
        assert_eq!(
            err.message(),
            format!(
                "{:?}… (9999804 more characters) is not an output reference: use the reference from a truncation \
                 notice, such as out_20261121T163000_ab12cd34",
                &long[..200]
            )
        );
        let err = fx.error("tool_output_read", json!({"ref": "out_20200101T000000_00000000"})).await;
        assert_eq!(err.kind(), ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn reads_back_what_bash_spilled() {
        let fx = Fixture::new();
        let out = fx.call("bash", json!({"command": "seq 1 300000"})).await.unwrap();
        let reference = out.metadata["truncation"]["output_ref"].as_str().unwrap().to_owned();
        let text = fx.text("tool_output_read", json!({"ref": reference, "offset": 150000, "limit": 2})).await;
        assert_eq!(
            text,
            "150000\t150000\n150001\t150001\n\n[showing lines 150000-150001 of 300000; use offset=150002 to continue]"
        );
    }
}
