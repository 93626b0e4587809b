//! The built-in tools cannot reach outside the workspace, block on special files, or be pushed
//! past their limits: attacks on real files, links, FIFOs and sockets, no mocks.
#![cfg(unix)]

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tool_runtime::{ErrorKind, Registry, ToolContext, ToolError, ToolOutput, context::Dependencies};
use tool_tests::{TempDir, snapshot};
use tools_std::ops::Precondition;
use tools_std::{Target, Workspace};

const SECRET: &str = "TOP-SECRET outside the workspace";

/// `base/ws` is the workspace; `base/outside/secret.txt` must stay out of reach.
struct Setup {
    dir: TempDir,
    registry: Registry,
    deps: Arc<Dependencies>,
}

impl Setup {
    fn new(tag: &str) -> Self {
        let dir = TempDir::new(tag);
        let base = dir.path();
        std::fs::create_dir_all(base.join("ws/sub")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret.txt"), SECRET).unwrap();
        std::fs::write(base.join("ws/in.txt"), "inside\n").unwrap();
        symlink("../outside", base.join("ws/link")).unwrap();
        symlink(base.join("outside"), base.join("ws/abslink")).unwrap();
        symlink("../outside/secret.txt", base.join("ws/filelink")).unwrap();
        let mut deps = Dependencies::new();
        deps.insert(Workspace::new(base.join("ws")).unwrap());
        let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
        Setup { dir, registry, deps: Arc::new(deps) }
    }

    fn base(&self) -> &Path {
        self.dir.path()
    }

    fn ws(&self) -> PathBuf {
        self.base().join("ws")
    }

    /// A call with the default permissions (outside the root: denied).
    async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let ctx = ToolContext::builder(tool).dependencies(self.deps.clone()).build();
        // A guard against hangs, not a timing assertion: every call here returns at once.
        tokio::time::timeout(Duration::from_secs(30), self.registry.call(tool, &args.to_string(), ctx))
            .await
            .unwrap_or_else(|_| panic!("{tool} {args} hung"))
    }

    fn outside_untouched(&self) {
        let outside = snapshot(&self.base().join("outside"));
        assert_eq!(outside, vec![(self.base().join("outside/secret.txt"), SECRET.as_bytes().to_vec())]);
        let names: Vec<_> = std::fs::read_dir(self.base()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "nothing new beside the workspace: {names:?}");
    }
}

/// Paths a model might build to get out: through a missing name, through a file, through links
/// relative and absolute, with `..`, absolute, with odd separators.
fn hostile_paths(base: &Path) -> Vec<String> {
    vec![
        "nope/../link/secret.txt".into(),
        "in.txt/x/../../link/secret.txt".into(),
        "nope/nope/../../link/secret.txt".into(),
        "link/secret.txt".into(),
        "abslink/secret.txt".into(),
        "filelink".into(),
        "./link/./secret.txt".into(),
        "link//secret.txt".into(),
        "sub/../link/secret.txt".into(),
        "../outside/secret.txt".into(),
        "sub/../../outside/secret.txt".into(),
        format!("{}/outside/secret.txt", base.display()),
        format!("{}/ws/../outside/secret.txt", base.display()),
        format!("{}/ws/link/secret.txt", base.display()),
    ]
}

fn refused(result: &Result<ToolOutput, ToolError>, what: &str) {
    match result {
        Ok(out) => {
            let text = out.text_content();
            panic!("{what} succeeded: {text}");
        }
        Err(e) => {
            assert!(!e.message().contains("TOP-SECRET"), "{what}: {}", e.message());
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::PermissionDenied | ErrorKind::NotFound | ErrorKind::InvalidArguments
                ),
                "{what}: {:?} {}",
                e.kind(),
                e.message()
            );
        }
    }
}

#[tokio::test]
async fn no_path_a_model_builds_reads_writes_or_edits_outside_the_root() {
    let s = Setup::new("paths");
    for path in hostile_paths(s.base()) {
        refused(&s.call("read", json!({"path": path})).await, &format!("read {path}"));
        refused(&s.call("write", json!({"path": path, "content": "PWNED"})).await, &format!("write {path}"));
        let edit = json!({"path": path, "old_string": "TOP", "new_string": "PWNED"});
        refused(&s.call("edit", edit).await, &format!("edit {path}"));
        if path != "filelink" {
            // A new file beside the secret (`filelink.new` is a plain name inside).
            let create = json!({"path": format!("{path}.new"), "old_string": "", "new_string": "PWNED"});
            refused(&s.call("edit", create).await, &format!("edit-create {path}.new"));
        }
    }
    s.outside_untouched();
}

#[tokio::test]
async fn no_directory_a_model_names_is_listed_or_searched_outside_the_root() {
    let s = Setup::new("dirs");
    let dirs = ["nope/../link", "in.txt/../link", "link", "abslink", "../outside", "sub/../../outside"];
    for dir in dirs {
        for (tool, args) in [
            ("ls", json!({"path": dir})),
            ("glob", json!({"pattern": "**/*", "path": dir})),
            ("grep", json!({"pattern": "SECRET", "path": dir})),
        ] {
            let result = s.call(tool, args).await;
            refused(&result, &format!("{tool} {dir}"));
        }
    }
    // Searching the root finds nothing behind its links: they are listed, never followed.
    let out = s.call("grep", json!({"pattern": "SECRET"})).await.unwrap();
    assert!(!out.text_content().contains("TOP-SECRET"), "{}", out.text_content());
    let out = s.call("glob", json!({"pattern": "**/secret.txt"})).await.unwrap();
    assert!(out.text_content().starts_with("No files match"), "{}", out.text_content());
    s.outside_untouched();
}

/// The check (resolution) and the use (the kernel's open) are separate steps; a directory
/// swapped for a link to the outside between them must not let the use escape.
#[test]
fn a_target_checked_inside_stays_inside_when_its_directory_becomes_a_link() {
    let s = Setup::new("swap-once");
    let ws = s.ws();
    std::fs::create_dir(ws.join("d")).unwrap();
    std::fs::write(ws.join("d/secret.txt"), "inside copy\n").unwrap();
    let workspace = Workspace::new(&ws).unwrap();
    let ops = workspace.operations();
    let target = Target::root().join("d/secret.txt");
    // Checked: `d` is a real directory inside. Now swap it.
    std::fs::remove_dir_all(ws.join("d")).unwrap();
    symlink(s.base().join("outside"), ws.join("d")).unwrap();

    let read = ops.open(&target).map(|_| ());
    let err = read.expect_err("read through the swapped link");
    assert!(err.to_string().contains("outside the workspace root"), "{err}");
    let err = ops.write_atomic(&target, b"PWNED", Precondition::None).expect_err("write through the link");
    assert!(err.to_string().contains("outside the workspace root"), "{err}");
    let err = ops.create_dir_all(&Target::root().join("d/new")).expect_err("mkdir through the link");
    assert!(err.to_string().contains("outside the workspace root"), "{err}");
    let mut seen = Vec::new();
    let walked = ops.walk(&Target::root().join("d"), &Default::default(), &mut |e| {
        seen.push(e.path);
        true
    });
    assert!(walked.is_err() && seen.is_empty(), "{walked:?} {seen:?}");
    s.outside_untouched();
}

/// A thread swaps a directory for a link to the outside and back, as fast as it can, while
/// tools write, edit and read inside it. Whatever interleaving happens, nothing is written or
/// read outside.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_a_directory_swap_never_lets_a_tool_out() {
    let s = Arc::new(Setup::new("swap-race"));
    let ws = s.ws();
    std::fs::create_dir(ws.join("d")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (ws, outside, stop, swaps) = (ws.clone(), s.base().join("outside"), stop.clone(), swaps.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let d = ws.join("d");
                let _ = std::fs::remove_dir_all(&d).or_else(|_| std::fs::remove_file(&d));
                let _ = symlink(&outside, &d);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&d);
                let _ = std::fs::create_dir(&d);
                std::fs::write(d.join("secret.txt"), "inside copy\n").ok();
                swaps.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let mut tasks = Vec::new();
    for worker in 0..4 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            // Succeeded inside, refused by the resolution, refused by the kernel (the race won).
            let mut outcomes = [0usize; 3];
            for i in 0..150 {
                let results = [
                    s.call("write", json!({"path": format!("d/w{worker}-{i}.txt"), "content": "PWNED"}))
                        .await,
                    s.call(
                        "edit",
                        json!({"path": "d/secret.txt", "old_string": "inside", "new_string": "x"}),
                    )
                    .await,
                    s.call("read", json!({"path": "d/secret.txt"})).await,
                    s.call("grep", json!({"pattern": "SECRET", "path": "d"})).await,
                ];
                for result in results {
                    match result {
                        Ok(out) => {
                            assert!(!out.text_content().contains("TOP-SECRET"), "{}", out.text_content());
                            outcomes[0] += 1;
                        }
                        Err(e) => {
                            assert!(!e.message().contains("TOP-SECRET"), "{}", e.message());
                            let by_kernel = e.message().contains("leads outside the workspace root");
                            outcomes[1 + usize::from(by_kernel)] += 1;
                        }
                    }
                }
            }
            outcomes
        }));
    }
    let mut totals = [0usize; 3];
    for task in tasks {
        for (total, n) in totals.iter_mut().zip(task.await.unwrap()) {
            *total += n;
        }
    }
    stop.store(true, Ordering::SeqCst);
    swapper.join().unwrap();
    eprintln!(
        "{} swaps; {} calls succeeded inside, {} were refused by the resolution, {} by the kernel",
        swaps.load(Ordering::SeqCst),
        totals[0],
        totals[1],
        totals[2]
    );
    assert!(swaps.load(Ordering::SeqCst) > 0);
    s.outside_untouched();
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success());
}

#[tokio::test]
async fn fifos_and_sockets_are_refused_without_blocking() {
    let s = Setup::new("special");
    let ws = s.ws();
    std::fs::create_dir(ws.join("special")).unwrap();
    mkfifo(&ws.join("special/pipe"));
    let _listener = std::os::unix::net::UnixListener::bind(ws.join("special/sock")).unwrap();
    std::fs::write(ws.join("special/plain.txt"), "findme\n").unwrap();
    for name in ["special/pipe", "special/sock"] {
        let err = s.call("read", json!({"path": name})).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArguments, "{}", err.message());
        assert!(err.message().contains("not a regular file"), "{}", err.message());
        let err = s.call("grep", json!({"pattern": "x", "path": name})).await.unwrap_err();
        assert!(err.message().contains("not a regular file"), "grep {name}: {}", err.message());
        let edit = json!({"path": name, "old_string": "a", "new_string": "b"});
        let err = s.call("edit", edit).await.unwrap_err();
        assert!(err.message().contains("not a regular file"), "edit {name}: {}", err.message());
        let err = s.call("write", json!({"path": name, "content": "x"})).await.unwrap_err();
        assert!(err.message().contains("not a regular file"), "write {name}: {}", err.message());
    }
    // A search over the directory skips them and finds the rest.
    let out = s.call("grep", json!({"pattern": "findme"})).await.unwrap();
    assert_eq!(out.text_content(), "special/plain.txt\n  1: findme\n");
    let out = s.call("glob", json!({"pattern": "special/*"})).await.unwrap();
    assert_eq!(out.text_content(), "special/plain.txt\n");
    // Nothing was replaced: the FIFO is still a FIFO.
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(ws.join("special/pipe")).unwrap().file_type().is_fifo());
}

#[tokio::test]
async fn every_built_in_tool_has_a_time_limit() {
    for tool in tools_std::all() {
        let spec = tool.spec();
        assert!(spec.timeout.is_some_and(|t| t <= Duration::from_secs(660)), "{}", spec.name);
    }
}

#[tokio::test]
async fn replace_all_cannot_grow_a_file_past_the_edit_limit() {
    let s = Setup::new("growth");
    let original = "a".repeat(100_000);
    std::fs::write(s.ws().join("big.txt"), &original).unwrap();
    let edit =
        json!({"path": "big.txt", "old_string": "a", "new_string": "b".repeat(20_000), "replace_all": true});
    let err = s.call("edit", edit).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    assert_eq!(
        err.message(),
        "Replacing 100000 occurrences in big.txt would make it 2000000000 bytes, more than the 64 MiB edit \
         writes; nothing was written. Replace fewer occurrences (a longer old_string, or replace_all set to \
         false), or use bash."
    );
    assert_eq!(std::fs::read_to_string(s.ws().join("big.txt")).unwrap(), original);

    // The tolerant tiers are bounded the same way: a re-indented replacement per indentation.
    let lines: String = (0..2000).map(|i| format!("{}x\n", " ".repeat(i % 500))).collect();
    std::fs::write(s.ws().join("indented.txt"), &lines).unwrap();
    let edit = json!({"path": "indented.txt", "old_string": "x \n", "new_string": "y\n".repeat(100_000), "replace_all": true});
    let err = s.call("edit", edit).await.unwrap_err();
    assert!(err.message().contains("more than the 64 MiB edit writes"), "{}", err.message());
    assert_eq!(std::fs::read_to_string(s.ws().join("indented.txt")).unwrap(), lines);
}

#[tokio::test]
async fn a_huge_argument_is_not_echoed_whole() {
    let s = Setup::new("echo");
    let long = "a".repeat(2 * 1024 * 1024);
    for (tool, args) in [
        ("read", json!({"path": long})),
        ("write", json!({"path": long, "content": "x"})),
        ("ls", json!({"path": long})),
        ("grep", json!({"pattern": format!("({long}"), "path": "."})),
    ] {
        let err = s.call(tool, args).await.unwrap_err();
        assert!(err.message().len() < 3000, "{tool}: {} bytes", err.message().len());
    }
    let out = s.call("grep", json!({"pattern": "b".repeat(100_000)})).await.unwrap();
    assert!(out.text_content().len() < 1000, "{} bytes", out.text_content().len());
}

#[tokio::test]
async fn grep_skips_a_line_too_long_to_hold_and_says_so() {
    let s = Setup::new("long-line");
    let mut huge = "x".repeat(20 * 1024 * 1024);
    huge.push_str("needle\n");
    std::fs::write(s.ws().join("huge.txt"), huge).unwrap();
    std::fs::write(s.ws().join("small.txt"), "needle\n").unwrap();
    let out = s.call("grep", json!({"pattern": "needle"})).await.unwrap();
    assert_eq!(
        out.text_content(),
        "small.txt\n  1: needle\n\n[1 file not searched to the end (a line longer than 16 MiB, or a read error): huge.txt]"
    );
}

#[tokio::test]
async fn writes_keep_modes_and_owners_refuse_read_only_files_and_never_write_through_hard_links() {
    let s = Setup::new("writes");
    let ws = s.ws();
    let private = ws.join("private.txt");
    std::fs::write(&private, "old").unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    s.call("write", json!({"path": "private.txt", "content": "new"})).await.unwrap();
    assert_eq!(std::fs::metadata(&private).unwrap().permissions().mode() & 0o777, 0o600);

    let read_only = ws.join("ro.txt");
    std::fs::write(&read_only, "keep me").unwrap();
    std::fs::set_permissions(&read_only, std::fs::Permissions::from_mode(0o444)).unwrap();
    let err = s.call("write", json!({"path": "ro.txt", "content": "x"})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    assert!(err.message().contains("read-only (mode 444)"), "{}", err.message());
    let edit = json!({"path": "ro.txt", "old_string": "keep", "new_string": "lose"});
    assert_eq!(s.call("edit", edit).await.unwrap_err().kind(), ErrorKind::PermissionDenied);
    assert_eq!(std::fs::read_to_string(&read_only).unwrap(), "keep me");

    // A hard link from outside into the workspace: a write replaces the name inside, the file
    // outside keeps its content.
    std::fs::hard_link(s.base().join("outside/secret.txt"), ws.join("hard.txt")).unwrap();
    let out = s.call("write", json!({"path": "hard.txt", "content": "replaced"})).await.unwrap();
    assert_eq!(
        out.text_content(),
        "Wrote 8 bytes to hard.txt (replaced 32 bytes). The old file had 1 other hard link elsewhere; it keeps \
         the old content (a write replaces the file, it never writes through a hard link)."
    );
    assert_eq!(std::fs::read_to_string(ws.join("hard.txt")).unwrap(), "replaced");
    std::fs::remove_file(ws.join("hard.txt")).unwrap();
    s.outside_untouched();

    // Ownership is kept where the process may keep it (as root).
    if nix_is_root() {
        use std::os::unix::fs::MetadataExt;
        let owned = ws.join("owned.txt");
        std::fs::write(&owned, "a").unwrap();
        std::os::unix::fs::chown(&owned, Some(4321), Some(4321)).unwrap();
        s.call("write", json!({"path": "owned.txt", "content": "b"})).await.unwrap();
        let meta = std::fs::metadata(&owned).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (4321, 4321));
    } else {
        eprintln!("not root: the ownership check is skipped");
    }
}

fn nix_is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Writers with their own workspace handles (as separate processes have) edit one file at once:
/// every edit either lands or is refused with "read it again"; none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_never_lose_an_update() {
    let s = Setup::new("concurrent");
    std::fs::write(s.ws().join("log.txt"), "END\n").unwrap();
    let registry = Arc::new(Registry::builder().tools(tools_std::all()).build().unwrap());
    let mut tasks = Vec::new();
    for writer in 0..6 {
        let ws = s.ws();
        let registry = registry.clone();
        tasks.push(tokio::spawn(async move {
            let mut deps = Dependencies::new();
            deps.insert(Workspace::new(&ws).unwrap());
            let deps = Arc::new(deps);
            let (mut landed, mut refused) = (Vec::new(), 0);
            for i in 0..25 {
                let line = format!("w{writer}-{i}");
                let args =
                    json!({"path": "log.txt", "old_string": "END\n", "new_string": format!("{line}\nEND\n")});
                let ctx = ToolContext::builder("edit").dependencies(deps.clone()).build();
                match registry.call("edit", &args.to_string(), ctx).await {
                    Ok(_) => landed.push(line),
                    Err(e) => {
                        assert!(e.message().contains("Read the file again"), "{}", e.message());
                        refused += 1;
                    }
                }
            }
            (landed, refused)
        }));
    }
    let mut landed = Vec::new();
    let mut refused = 0;
    for task in tasks {
        let (lines, n) = task.await.unwrap();
        landed.extend(lines);
        refused += n;
    }
    let content = std::fs::read_to_string(s.ws().join("log.txt")).unwrap();
    let mut lines: Vec<&str> = content.lines().filter(|l| *l != "END").collect();
    lines.sort_unstable();
    landed.sort_unstable();
    assert_eq!(lines, landed, "{refused} edits were refused");
    assert_eq!(landed.len() + refused, 150);
}
