//! A walk holds open a few directories at a time, however wide the tree: `glob`, `grep` and `ls`
//! find every file of a directory with more subdirectories than the process may open files. The
//! open-file limit is the whole process's, so the test runs itself again under `ulimit -n`, in a
//! process of its own.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::{Registry, ToolContext, context::Dependencies};
use tools_std::Workspace;

/// Subdirectories of the tree's root, each holding one subdirectory with one file.
const SUBDIRS: usize = 300;
/// The open-file limit of the process that walks the tree: well below `SUBDIRS`.
const LIMIT: usize = 100;
/// Set, to the tree's path, in the process that walks it.
const CHILD: &str = "TOOLS_STD_WALK_OPEN_FILES_TREE";
const NAME: &str = "a_tree_wider_than_the_open_file_limit_is_walked_whole";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_wider_than_the_open_file_limit_is_walked_whole() {
    if let Some(tree) = std::env::var_os(CHILD) {
        walk_whole(Path::new(&tree)).await;
        return;
    }
    let tree = tempfile::tempdir().unwrap();
    for i in 0..SUBDIRS {
        let dir = tree.path().join(format!("d{i:03}/sub"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f.rs"), "fn found() {}\n").unwrap();
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {LIMIT} && exec \"$0\" \"$@\""))
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD, tree.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the walk under `ulimit -n {LIMIT}` failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs in the process with the low limit.
async fn walk_whole(tree: &Path) {
    let limit = std::fs::read_to_string("/proc/self/limits").unwrap();
    let open_files = limit.lines().find(|l| l.starts_with("Max open files")).unwrap();
    assert_eq!(open_files.split_whitespace().nth(3), Some(LIMIT.to_string().as_str()), "{open_files}");

    let glob = call(tree, "glob", json!({"pattern": "**/*.rs", "limit": 10_000})).await;
    assert_eq!(glob["count"], json!(SUBDIRS), "glob: {glob}");
    let grep = call(tree, "grep", json!({"pattern": "fn found", "limit": 10_000})).await;
    assert_eq!(grep["matches"], json!(SUBDIRS), "grep: {grep}");
    // `ls` walks on one thread, depth first: each directory, its `sub` and the file.
    let ls = call(tree, "ls", json!({})).await;
    assert_eq!(ls["entries"], json!(3 * SUBDIRS), "ls: {ls}");
}

/// The metadata of a call of `tool`, which must succeed.
async fn call(root: &Path, tool: &str, args: Value) -> Value {
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
    let mut deps = Dependencies::new();
    deps.insert(Workspace::new(root).unwrap());
    let ctx = ToolContext::builder(tool).dependencies(Arc::new(deps)).build();
    let output = match registry.call(tool, &args.to_string(), ctx).await {
        Ok(output) => output,
        Err(e) => panic!("{tool} {args} failed: {}", e.message()),
    };
    assert!(!output.is_error, "{tool} {args}: {}", output.text_content());
    json!(output.metadata)
}
