//! `apply_patch` against real files, table-driven: every case of `tests/data/apply_patch_cases.json`
//! (the same patches `scripts/check-apply-patch-grammar.py` parses with Lark) runs in a fresh
//! workspace, and the whole tree is compared afterwards: what a failed patch leaves must be exactly
//! what was there.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;
use tool_runtime::{ErrorKind, Registry, ToolContext, context::Dependencies};
use tool_tests::{TempDir, snapshot};
use tools_std::Workspace;

#[derive(Deserialize)]
struct Case {
    name: String,
    before: BTreeMap<String, String>,
    patch: String,
    /// The whole tree afterwards; absent for a patch that must fail.
    after: Option<BTreeMap<String, String>>,
    /// The exact result text, where the case pins it.
    output: Option<String>,
    /// Texts the error message must contain, for a patch that must fail.
    error: Option<Vec<String>>,
}

const CASES: &str = include_str!("../../data/apply_patch_cases.json");

fn tree(root: &Path) -> BTreeMap<String, String> {
    snapshot(root)
        .into_iter()
        .filter(|(path, _)| !path.is_dir())
        .map(|(path, bytes)| {
            let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned();
            (rel, String::from_utf8(bytes).expect("the cases hold UTF-8 text"))
        })
        .collect()
}

struct Run {
    dir: TempDir,
    result: Result<tool_runtime::ToolOutput, tool_runtime::ToolError>,
}

fn run(tag: &str, before: &BTreeMap<String, String>, patch: &str) -> Run {
    let dir = TempDir::new(tag);
    let ws_root = dir.path().join("ws");
    std::fs::create_dir_all(&ws_root).unwrap();
    for (path, content) in before {
        let path = ws_root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let mut deps = Dependencies::new();
    deps.insert(Workspace::new(&ws_root).unwrap());
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
    let ctx = ToolContext::builder("apply_patch").dependencies(Arc::new(deps)).build();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
    let args = json!({ "patch": patch }).to_string();
    let result = runtime.block_on(registry.call("apply_patch", &args, ctx));
    Run { dir, result }
}

#[test]
fn every_case_of_the_table() {
    let cases: Vec<Case> = serde_json::from_str(CASES).expect("valid case table");
    assert!(cases.len() >= 20, "the table holds the cases");
    let mut failures = Vec::new();
    for case in &cases {
        let outcome = run("apply-patch", &case.before, &case.patch);
        let ws_root = outcome.dir.path().join("ws");
        let now = tree(&ws_root);
        let mut problems = Vec::new();
        match (&case.after, &outcome.result) {
            (Some(after), Ok(output)) => {
                if &now != after {
                    problems.push(format!("tree {now:?}, expected {after:?}"));
                }
                if let Some(expected) = &case.output
                    && output.text_content() != *expected
                {
                    problems.push(format!("output {:?}, expected {expected:?}", output.text_content()));
                }
            }
            (Some(_), Err(error)) => problems.push(format!("failed: {}", error.message())),
            (None, Ok(output)) => problems.push(format!("succeeded: {}", output.text_content())),
            (None, Err(error)) => {
                if now != case.before {
                    problems.push(format!("a failed patch changed the tree: {now:?}"));
                }
                for wanted in case.error.iter().flatten() {
                    if !error.message().contains(wanted.as_str()) {
                        problems.push(format!("error {:?} lacks {wanted:?}", error.message()));
                    }
                }
            }
        }
        // Nothing escaped the workspace, and no temporary file was left beside the tree.
        let outside: Vec<_> =
            std::fs::read_dir(outcome.dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        if outside != ["ws"] {
            problems.push(format!("files beside the workspace: {outside:?}"));
        }
        if !problems.is_empty() {
            failures.push(format!("{}: {}", case.name, problems.join("; ")));
        }
    }
    assert!(!std::path::Path::new("/tmp/apply-patch-escape.txt").exists());
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn escapes_are_permission_errors() {
    let before = BTreeMap::from([("in.txt".to_owned(), "in\n".to_owned())]);
    let outcome =
        run("apply-patch-escape", &before, "*** Begin Patch\n*** Add File: ../x.txt\n+x\n*** End Patch\n");
    assert_eq!(outcome.result.unwrap_err().kind(), ErrorKind::PermissionDenied);
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_out_of_the_root_is_refused_for_every_operation() {
    for patch in [
        "*** Begin Patch\n*** Update File: link/secret.txt\n@@\n-secret\n+stolen\n*** End Patch\n",
        "*** Begin Patch\n*** Delete File: link/secret.txt\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: in.txt\n*** Move to: link/moved.txt\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: link/new.txt\n+x\n*** End Patch\n",
    ] {
        let before = BTreeMap::from([("in.txt".to_owned(), "in\n".to_owned())]);
        let dir = TempDir::new("apply-patch-link");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
        let ws_root = dir.path().join("ws");
        std::fs::create_dir_all(&ws_root).unwrap();
        std::fs::write(ws_root.join("in.txt"), &before["in.txt"]).unwrap();
        std::os::unix::fs::symlink("../outside", ws_root.join("link")).unwrap();
        let mut deps = Dependencies::new();
        deps.insert(Workspace::new(&ws_root).unwrap());
        let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
        let ctx = ToolContext::builder("apply_patch").dependencies(Arc::new(deps)).build();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let result =
            runtime.block_on(registry.call("apply_patch", &json!({ "patch": patch }).to_string(), ctx));
        let error = result.expect_err(patch);
        assert_eq!(error.kind(), ErrorKind::PermissionDenied, "{patch}: {}", error.message());
        assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "secret\n");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1, "{patch}");
        assert_eq!(std::fs::read_to_string(ws_root.join("in.txt")).unwrap(), "in\n", "{patch}");
    }
}

/// A write that fails after others succeeded: the files already written get their old content
/// back, a file already deleted comes back, and the result says so. (A read-only file is refused
/// by the atomic write even for root, which makes the failure reliable.)
#[cfg(unix)]
#[test]
fn a_failed_write_midway_restores_the_files_already_written() {
    use std::os::unix::fs::PermissionsExt;
    let before = BTreeMap::from([
        ("a.txt".to_owned(), "a\n".to_owned()),
        ("gone.txt".to_owned(), "still here\n".to_owned()),
        ("locked.txt".to_owned(), "locked\n".to_owned()),
    ]);
    let dir = TempDir::new("apply-patch-rollback");
    let ws_root = dir.path().join("ws");
    std::fs::create_dir_all(&ws_root).unwrap();
    for (path, content) in &before {
        std::fs::write(ws_root.join(path), content).unwrap();
    }
    std::fs::set_permissions(ws_root.join("locked.txt"), std::fs::Permissions::from_mode(0o444)).unwrap();
    let mut deps = Dependencies::new();
    deps.insert(Workspace::new(&ws_root).unwrap());
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
    let ctx = ToolContext::builder("apply_patch").dependencies(Arc::new(deps)).build();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    std::fs::create_dir_all(ws_root.join("old")).unwrap();
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: new/deeper/b.txt\n+b\n\
                 *** Add File: old/new/c.txt\n+c\n*** Delete File: gone.txt\n*** Update File: locked.txt\n@@\n\
                 -locked\n+open\n*** End Patch\n";
    let result = runtime.block_on(registry.call("apply_patch", &json!({ "patch": patch }).to_string(), ctx));
    let error = result.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::PermissionDenied, "{}", error.message());
    assert!(
        error.message().starts_with("Cannot write locked.txt: the file is read-only"),
        "{}",
        error.message()
    );
    assert!(
        error.message().ends_with(
            " Nothing was changed (4 files already written were restored). Fix the cause and call apply_patch again."
        ),
        "{}",
        error.message()
    );
    assert_eq!(tree(&ws_root), before);
    // The directories made for the new files are gone; the one that was there stays.
    assert!(!ws_root.join("new").exists());
    assert!(ws_root.join("old").is_dir() && !ws_root.join("old/new").exists());
}

/// The manual's example patch (tools-std's "Editing with patches"), applied to the tree it
/// assumes, gives the manual's result text.
#[test]
fn the_manual_example_is_real() {
    let manual = include_str!("../../../tools-std/docs/tools.md");
    let block = |after: &str| -> String {
        let start = manual.find(after).expect("the manual's section");
        let from = start + manual[start..].find("```text\n").expect("code block") + "```text\n".len();
        let to = from + manual[from..].find("```").expect("closing fence");
        manual[from..to].to_owned()
    };
    let patch = block("# Editing with patches");
    let result = block("The result the model reads");
    let before = BTreeMap::from([
        ("src/main.rs".to_owned(), "fn main() {\n    println!(\"hi\");\n}\n".to_owned()),
        ("NOTES.txt".to_owned(), "notes\n".to_owned()),
    ]);
    let outcome = run("apply-patch-manual", &before, &patch);
    let output = outcome.result.expect("the manual's patch applies");
    assert_eq!(output.text_content(), result.trim_end());
    assert_eq!(
        tree(&outcome.dir.path().join("ws")),
        BTreeMap::from([
            (
                "src/bin/hello.rs".to_owned(),
                "fn main() {\n    println!(\"{}\", app::greeting());\n}\n".to_owned()
            ),
            (
                "src/greeting.rs".to_owned(),
                "pub fn greeting() -> &'static str {\n    \"hello\"\n}\n".to_owned()
            ),
        ])
    );
}
