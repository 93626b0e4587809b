//! Path resolution: arbitrary path strings against a tree with links inside, links out, loops and
//! a FIFO, through the file tools with the default permissions.
//!
//! Paths are built from the tree's own names, `..`, `.`, empty components, the absolute prefix
//! of the tree and raw bytes, so they reach the interesting places. Checks: no panic, no hang;
//! the secret outside the root never appears in any output or error; `edit` (whose old_string
//! only the secret contains) never changes it.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use tool_runtime::{Registry, ToolContext, context::Dependencies};
use tools_std::Workspace;

const MARKER: &str = "FUZZ-SECRET-7f3a";

struct Setup {
    registry: Registry,
    deps: Arc<Dependencies>,
    runtime: tokio::runtime::Runtime,
    base: PathBuf,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let tmp =
            if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
        for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("tool-fuzz-paths-")
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let base = tmp.join(format!("tool-fuzz-paths-{}", std::process::id()));
        let ws = base.join("ws");
        std::fs::create_dir_all(ws.join("a/b")).expect("tree");
        std::fs::create_dir_all(base.join("outside/deeper")).expect("outside");
        std::fs::write(base.join("outside/secret.txt"), MARKER).expect("secret");
        std::fs::write(base.join("outside/deeper/secret.txt"), MARKER).expect("secret");
        std::fs::write(ws.join("file.txt"), "inside\n").expect("file");
        std::fs::write(ws.join("a/b/c.txt"), "inside\n").expect("file");
        let links: [(&str, PathBuf); 8] = [
            ("in_link", PathBuf::from("a")),
            ("a/up", PathBuf::from("..")),
            ("a/b/deep_up", PathBuf::from("../../..")),
            ("out_rel", PathBuf::from("../outside")),
            ("out_abs", base.join("outside")),
            ("a/out_file", PathBuf::from("../../outside/secret.txt")),
            ("loop1", PathBuf::from("loop2")),
            ("loop2", PathBuf::from("loop1")),
        ];
        for (name, target) in links {
            std::os::unix::fs::symlink(target, ws.join(name)).expect("link");
        }
        let _ = std::process::Command::new("mkfifo").arg(ws.join("pipe")).status();
        let mut deps = Dependencies::new();
        deps.insert(Workspace::new(&ws).expect("workspace"));
        Setup {
            registry: Registry::builder()
                .tools(tools_std::all())
                .allow(["read", "edit", "ls", "grep", "glob"])
                .build()
                .expect("registry"),
            deps: Arc::new(deps),
            runtime: tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime"),
            base,
        }
    })
}

fn path(u: &mut Unstructured<'_>, base: &Path) -> Result<String> {
    const PARTS: [&str; 20] = [
        "a",
        "b",
        "c.txt",
        "file.txt",
        "in_link",
        "up",
        "deep_up",
        "out_rel",
        "out_abs",
        "out_file",
        "loop1",
        "pipe",
        "outside",
        "secret.txt",
        "deeper",
        "ws",
        "..",
        ".",
        "",
        "nope",
    ];
    let mut out = String::new();
    match u.int_in_range(0..=3)? {
        0 => out.push_str(&base.join("ws").display().to_string()),
        1 => out.push_str(&base.display().to_string()),
        2 => out.push('/'),
        _ => {}
    }
    for _ in 0..u.int_in_range(0..=10)? {
        if !out.is_empty() && !out.ends_with('/') {
            out.push('/');
        }
        if u.ratio(1, 12)? {
            let len = u.int_in_range(0..=4)?;
            let raw: &[u8] = u.bytes(len)?;
            out.push_str(&String::from_utf8_lossy(raw));
        } else {
            out.push_str(u.choose(&PARTS)?);
        }
    }
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    let s = setup();
    let mut u = Unstructured::new(data);
    let Ok(path) = path(&mut u, &s.base) else { return };
    let Ok(tool) = u.int_in_range(0..=4u8) else { return };
    let (name, args) = match tool {
        0 => ("read", json!({"path": path})),
        1 => ("edit", json!({"path": path, "old_string": MARKER, "new_string": "PWNED"})),
        2 => ("ls", json!({"path": path})),
        3 => ("grep", json!({"pattern": "SECRET", "path": path})),
        _ => ("glob", json!({"pattern": "**/secret.txt", "path": path})),
    };
    let ctx = ToolContext::builder(name).dependencies(s.deps.clone()).build();
    let text = s.runtime.block_on(async {
        match s.registry.call(name, &args.to_string(), ctx).await {
            Ok(out) => out.text_content(),
            Err(e) => e.message().to_owned(),
        }
    });
    assert!(!text.contains(MARKER), "{name} {path:?} reached the secret: {text}");
    if name == "glob" || name == "ls" {
        // A listed path is a line of its own (the "no files match" notice repeats the pattern).
        let listed = text.lines().any(|line| line.trim_end().ends_with("secret.txt"));
        assert!(!listed, "{name} {path:?} listed outside: {text}");
    }
    for secret in ["outside/secret.txt", "outside/deeper/secret.txt"] {
        let content = std::fs::read_to_string(s.base.join(secret)).expect("the secret is still there");
        assert_eq!(content, MARKER, "{name} {path:?} changed {secret}");
    }
});
