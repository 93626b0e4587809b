//! `apply_patch` on a 100,000-line file with a 1,000-hunk patch, against `patch(1)` applying
//! the same change as a unified diff, in the same run.
//!
//! The file and the change are generated once; the change is written both in the apply_patch
//! format and as a unified diff, and both results are checked to be byte-identical to the
//! expected file before anything is timed. Each repetition restores the original file (not
//! timed). Measured: the `apply_patch` tool through `Registry::call` (parse, read, match, atomic
//! write with fsync, the `diff` metadata), the in-memory part alone (`parse_patch` +
//! `update_text`), the `diff` metadata alone, and
//! `patch -p1 -s` as a child process (which does not fsync).
//!
//! Run: `cargo bench -p tools-std --bench apply_patch` (`REPS=N` to change the 15 repetitions).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tool_runtime::{Registry, ToolContext, context::Dependencies};
use tools_std::Workspace;
use tools_std::apply_patch::{FileChange, parse_patch, update_text};

const LINES: usize = 100_000;
const HUNKS: usize = 1_000;
const CONTEXT: usize = 3;

fn line(i: usize) -> String {
    format!("    let value_{i} = compute({i}, \"row {i}\") + offset; // line {}\n", i + 1)
}

struct Change {
    original: String,
    expected: String,
    ours: String,
    unified: String,
}

/// Every 100 lines, line 50 is replaced by two lines, with three lines of context each side.
fn change() -> Change {
    let lines: Vec<String> = (0..LINES).map(line).collect();
    let original: String = lines.concat();
    let mut expected = String::with_capacity(original.len() + HUNKS * 200);
    let mut ours = String::from("*** Begin Patch\n*** Update File: big.rs\n");
    let mut unified = String::from("--- a/big.rs\n+++ b/big.rs\n");
    let mut next = 0;
    for h in 0..HUNKS {
        let target = h * (LINES / HUNKS) + 50;
        let new = [
            format!("    let value_{target} = compute_checked({target}, \"row {target}\")?;"),
            format!("    let value_{target} = value_{target} + offset; // changed in hunk {h}"),
        ];
        for l in &lines[next..target] {
            expected.push_str(l);
        }
        for n in &new {
            expected.push_str(n);
            expected.push('\n');
        }
        next = target + 1;
        let before = &lines[target - CONTEXT..target];
        let after = &lines[target + 1..target + 1 + CONTEXT];
        ours.push_str("@@\n");
        // Unified ranges: old start (1-based), old count; new start shifts by one per hunk.
        let old_start = target - CONTEXT + 1;
        let _ = writeln!(
            unified,
            "@@ -{old_start},{} +{},{} @@",
            2 * CONTEXT + 1,
            old_start + h,
            2 * CONTEXT + 2
        );
        for l in before {
            ours.push(' ');
            ours.push_str(l);
            unified.push(' ');
            unified.push_str(l);
        }
        ours.push('-');
        ours.push_str(&lines[target]);
        unified.push('-');
        unified.push_str(&lines[target]);
        for n in &new {
            let _ = writeln!(ours, "+{n}");
            let _ = writeln!(unified, "+{n}");
        }
        for l in after {
            ours.push(' ');
            ours.push_str(l);
            unified.push(' ');
            unified.push_str(l);
        }
    }
    for l in &lines[next..] {
        expected.push_str(l);
    }
    ours.push_str("*** End Patch\n");
    Change { original, expected, ours, unified }
}

fn median(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[0])
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is expected.
    let reps: usize = std::env::var("REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(15);
    let change = change();
    let dir = std::env::temp_dir().join(format!("apply-patch-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big.rs");
    let diff_file = dir.join("change.diff");
    std::fs::write(&diff_file, &change.unified).unwrap();

    let mut deps = Dependencies::new();
    deps.insert(Workspace::new(&dir).unwrap());
    let deps = Arc::new(deps);
    let registry = Registry::builder().tools(tools_std::all()).allow(["apply_patch"]).build().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let args = json!({ "patch": change.ours }).to_string();
    let run_ours = || {
        let ctx = ToolContext::builder("apply_patch").dependencies(deps.clone()).build();
        let out =
            runtime.block_on(registry.call("apply_patch", args.as_str(), ctx)).expect("the patch applies");
        assert!(out.text_content().starts_with("Success."), "{}", out.text_content());
    };
    let run_patch = |file: &Path| {
        let status = Command::new("patch")
            .current_dir(&dir)
            .args(["-p1", "-s", "--no-backup-if-mismatch", "-i"])
            .arg(&diff_file)
            .status()
            .expect("patch(1) runs");
        assert!(status.success());
        let _ = file;
    };

    // Both produce exactly the expected file.
    std::fs::write(&file, &change.original).unwrap();
    run_ours();
    assert!(std::fs::read_to_string(&file).unwrap() == change.expected, "apply_patch result differs");
    std::fs::write(&file, &change.original).unwrap();
    run_patch(&file);
    assert!(std::fs::read_to_string(&file).unwrap() == change.expected, "patch(1) result differs");

    let mut tool = Vec::new();
    let mut memory = Vec::new();
    let mut parse = Vec::new();
    let mut gnu = Vec::new();
    let mut diff = Vec::new();
    for _ in 0..reps {
        std::fs::write(&file, &change.original).unwrap();
        let start = Instant::now();
        run_ours();
        tool.push(start.elapsed());

        let start = Instant::now();
        let patch = parse_patch(&change.ours).unwrap();
        parse.push(start.elapsed());
        let FileChange::Update { hunks, .. } = &patch.files[0] else { unreachable!() };
        let updated = update_text(change.original.as_bytes(), hunks, "big.rs").unwrap();
        memory.push(start.elapsed());
        assert_eq!(updated.len(), change.expected.len());

        // The unified diff the tool returns as UI metadata, alone.
        let start = Instant::now();
        let text = similar::TextDiff::from_lines(&change.original, &change.expected)
            .unified_diff()
            .context_radius(3)
            .to_string();
        diff.push(start.elapsed());
        assert!(text.len() > HUNKS);

        std::fs::write(&file, &change.original).unwrap();
        let start = Instant::now();
        run_patch(&file);
        gnu.push(start.elapsed());
    }
    std::fs::remove_dir_all(&dir).unwrap();

    println!(
        "file: {LINES} lines, {} bytes; change: {HUNKS} hunks ({} bytes as apply_patch, {} bytes as a unified diff); {reps} repetitions",
        change.original.len(),
        change.ours.len(),
        change.unified.len()
    );
    println!("| what | median | best |");
    println!("| --- | --- | --- |");
    for (name, times) in [
        ("`apply_patch` tool (parse, read, match, atomic write + fsync)", tool),
        ("`parse_patch` + `update_text` in memory", memory),
        ("`parse_patch` alone", parse),
        ("the `diff` metadata alone (`similar`, unified, 3 lines of context)", diff),
        ("`patch -p1 -s` (GNU patch, a child process)", gnu),
    ] {
        let (median, best) = median(times);
        println!("| {name} | {} | {} |", ms(median), ms(best));
    }
}
