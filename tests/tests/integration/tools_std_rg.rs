//! `grep` and `glob` against `rg` on a generated tree: the same files, the same matching lines.
//!
//! Skipped, with a message, where `rg` is not installed (`.ci/run` installs it).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::{Registry, ToolContext, context::Dependencies};
use tool_tests::TempDir;
use tools_std::Workspace;

/// Whether `rg` runs; skips the test (see [`tool_tests::skip`]) when it does not.
fn rg_available() -> bool {
    match Command::new("rg").arg("--version").output() {
        Ok(out) if out.status.success() => true,
        _ => {
            tool_tests::skip("rg (ripgrep) is not installed, so there is nothing to compare with");
            false
        }
    }
}

/// A small deterministic generator, so a failure can be reproduced.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() as usize) % items.len()]
    }
}

fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// A tree with nested and negated ignore rules, hidden entries, binary, CRLF, UTF-16, invalid
/// UTF-8, long lines, odd names and symbolic links.
fn generate(root: &Path) {
    let mut rng = Lcg(0x5EED);
    let dirs = [
        "",
        "src",
        "src/core",
        "src/core/deep",
        "sub dir",
        "sub dir/ünï",
        "build",
        "logs",
        ".hidden",
        "src/.cache",
        "vendor",
        "vendor/lib",
        "docs",
    ];
    let stems = ["main", "lib", "util", "read me", "données", "gen_a", "test_x", "keep", "rooted", "Alpha"];
    let exts = ["rs", "txt", "md", "log", "json", "py", "RS"];
    let words = [
        "fn main() {",
        "fn helper(x: u32)",
        "TODO: fix",
        "todo later",
        "foo",
        "bar",
        "foobar",
        "123",
        "4567",
        "café é",
        "a.c",
        "abc",
        "ABC DEF",
        "",
        "    indented",
        "\tTabbed",
        "let x = 1;",
        "// comment",
        "end",
    ];
    for dir in dirs {
        let count = 3 + rng.next() % 6;
        for _ in 0..count {
            let name = format!("{}.{}", rng.pick(&stems), rng.pick(&exts));
            let rel = if dir.is_empty() { name } else { format!("{dir}/{name}") };
            let crlf = rng.next().is_multiple_of(4);
            let mut text = String::new();
            for _ in 0..(rng.next() % 30) {
                let mut line = rng.pick(&words).to_owned();
                if rng.next().is_multiple_of(7) {
                    line.push(' ');
                    line.push_str(rng.pick(&words));
                }
                if rng.next().is_multiple_of(40) {
                    line.push_str(&"x".repeat(3000));
                    line.push_str(" foo");
                }
                text.push_str(&line);
                text.push_str(if crlf { "\r\n" } else { "\n" });
            }
            if rng.next().is_multiple_of(5) {
                text.push_str("no newline at the end foo");
            }
            write(root, &rel, text);
        }
    }
    write(root, ".gitignore", "*.log\n!keep.log\nbuild/\n/rooted.txt\n# comment\n");
    write(root, "src/.gitignore", "gen_*\n!gen_a.RS\n");
    write(root, ".ignore", "vendor/lib/\n");
    write(root, "docs/.rgignore", "*.md\n");
    write(root, "keep.log", "foo in a kept log\n");
    write(root, "rooted.txt", "foo rooted\n");
    write(root, "src/rooted.txt", "foo not rooted\n");
    write(root, "src/gen_b.rs", "foo generated\n");
    write(root, ".hidden.rs", "fn main() { foo }\n");
    write(root, "bin/early.bin", b"foo\0bar\nfoo\n");
    let mut late = b"foo early\n".repeat(20_000);
    late.extend_from_slice(b"\0 binary tail\nfoo late\n");
    write(root, "bin/late.dat", late);
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain("foo in utf-16\nbar\n".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    write(root, "enc/utf16.txt", utf16);
    write(root, "enc/latin1.txt", b"caf\xe9 foo\nbar \xff\xfe\n");
    write(root, "empty.txt", "");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("src/main.rs", root.join("link-to-file.rs")).unwrap();
        std::os::unix::fs::symlink("src", root.join("link-to-dir")).unwrap();
    }
}

fn registry_and_ctx(root: &Path, tool: &str) -> (Registry, ToolContext) {
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
    let mut deps = Dependencies::new();
    deps.insert(Workspace::new(root).unwrap());
    let ctx = ToolContext::builder(tool).dependencies(Arc::new(deps)).build();
    (registry, ctx)
}

async fn call(root: &Path, tool: &str, args: Value) -> String {
    let (registry, ctx) = registry_and_ctx(root, tool);
    match registry.call(tool, &args.to_string(), ctx).await {
        Ok(out) => out.text_content(),
        Err(e) => panic!("{tool} {args} failed: {}", e.message()),
    }
}

fn rg(root: &Path, args: &[&str]) -> String {
    let out = Command::new("rg")
        .current_dir(root)
        .args(["--no-require-git", "--color", "never"])
        .args(args)
        .output()
        .unwrap();
    // Exit 1 means no match; 2 an error (rg still prints what it found, with warnings on stderr).
    assert!(
        out.status.code() != Some(2) || !out.stdout.is_empty(),
        "rg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// (file, line) pairs from the `grep` tool's output.
fn parse_grep(text: &str) -> BTreeSet<(String, u64)> {
    let mut found = BTreeSet::new();
    let mut file = String::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with("No matches") || line.starts_with("[showing") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("  ")
            && let Some((number, _)) = rest.split_once(": ")
            && let Ok(number) = number.parse()
        {
            found.insert((file.clone(), number));
        } else {
            file = line.to_owned();
        }
    }
    found
}

/// (file, line) pairs from `rg --null --line-number`.
fn parse_rg(text: &str) -> BTreeSet<(String, u64)> {
    text.lines()
        .filter_map(|line| {
            let (file, rest) = line.split_once('\0')?;
            let (number, _) = rest.split_once(':')?;
            Some((file.strip_prefix("./").unwrap_or(file).to_owned(), number.parse().ok()?))
        })
        .collect()
}

#[tokio::test]
async fn grep_finds_exactly_what_rg_finds() {
    if !rg_available() {
        return;
    }
    let dir = TempDir::new("grep");
    generate(dir.path());
    let cases: &[(&str, Option<&str>, bool)] = &[
        ("foo", None, false),
        ("fn \\w+", None, false),
        ("todo", None, true),
        ("(?i)abc|def", None, false),
        ("\\d{3,}", None, false),
        ("é", None, false),
        ("a.c", None, false),
        ("^\\s*$", None, false),
        ("foo$", None, false),
        ("^foo", None, false),
        ("[[:upper:]]{3}", None, false),
        ("foo", Some("*.rs"), false),
        ("foo", Some("src/**"), false),
        ("foo", Some("!*.txt"), false),
        ("foo", Some("*.{md,json}"), true),
        ("x{3000}", None, false),
        ("bar", Some("enc/*"), false),
    ];
    let mut total = 0;
    for &(pattern, glob, ignore_case) in cases {
        let mut args = json!({"pattern": pattern, "limit": 1_000_000, "ignore_case": ignore_case});
        let mut rg_args = vec!["--line-number", "--with-filename", "--no-heading", "--null"];
        if let Some(glob) = glob {
            args["glob"] = json!(glob);
            rg_args.extend(["--glob", glob]);
        }
        if ignore_case {
            rg_args.push("--ignore-case");
        }
        rg_args.extend(["-e", pattern]);
        let ours = parse_grep(&call(dir.path(), "grep", args).await);
        let theirs = parse_rg(&rg(dir.path(), &rg_args));
        assert!(!theirs.is_empty(), "{pattern:?} {glob:?}: the case should match something");
        assert_eq!(
            ours,
            theirs,
            "{pattern:?} glob={glob:?} -i={ignore_case}: only ours {:?}, only rg {:?}",
            ours.difference(&theirs).collect::<Vec<_>>(),
            theirs.difference(&ours).collect::<Vec<_>>()
        );
        total += ours.len();
    }
    assert!(total > 500, "the cases compared {total} matches");
}

#[tokio::test]
async fn glob_lists_exactly_the_files_rg_lists() {
    if !rg_available() {
        return;
    }
    let dir = TempDir::new("glob");
    generate(dir.path());
    let lines = |text: &str| -> BTreeSet<String> {
        text.lines()
            .take_while(|l| !l.is_empty())
            .map(|l| l.strip_prefix("./").unwrap_or(l).to_owned())
            .collect()
    };
    for hidden in [false, true] {
        let hidden_flag: &[&str] = if hidden { &["--hidden"] } else { &[] };
        let unfiltered = lines(&rg(dir.path(), &[&["--files"], hidden_flag].concat()));
        assert!(unfiltered.len() > 30, "{}", unfiltered.len());
        for pattern in [
            "*",
            "**/*",
            "*.rs",
            "**/*.txt",
            "src/**/*.rs",
            "src/*",
            "*.{md,json}",
            "**/deep/*",
            "sub dir/**",
            "[A-Z]*",
            "gen_?.*",
        ] {
            // rg's globs override ignore rules; `glob` only filters what the ignore rules keep.
            let globbed = lines(&rg(dir.path(), &[&["--files", "--glob", pattern], hidden_flag].concat()));
            let theirs: BTreeSet<String> = globbed.intersection(&unfiltered).cloned().collect();
            let ours = lines(
                &call(dir.path(), "glob", json!({"pattern": pattern, "hidden": hidden, "limit": 1_000_000}))
                    .await,
            );
            let ours: BTreeSet<String> =
                ours.into_iter().filter(|l| !l.starts_with("No files match")).collect();
            assert_eq!(
                ours,
                theirs,
                "{pattern:?} hidden={hidden}: only ours {:?}, only rg {:?}",
                ours.difference(&theirs).collect::<Vec<_>>(),
                theirs.difference(&ours).collect::<Vec<_>>()
            );
        }
    }
}

/// (file, line, whether it matched) from the `grep` tool's output in content mode, context lines
/// (`  12- text`) included.
fn parse_grep_lines(text: &str) -> BTreeSet<(String, u64, bool)> {
    let mut found = BTreeSet::new();
    let mut file = String::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with("No matches") || line.starts_with('[') || line == "  --" {
            continue;
        }
        if let Some(rest) = line.strip_prefix("  ") {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let number = rest[..digits].parse().expect("a line number");
            let matched = match &rest[digits..digits + 2] {
                ": " => true,
                "- " => false,
                other => panic!("unexpected separator {other:?} in {line:?}"),
            };
            found.insert((file.clone(), number, matched));
        } else {
            file = line.to_owned();
        }
    }
    found
}

/// (file, line, whether it matched) from `rg --null --line-number` with context (`--` lines
/// between groups, and a line about each binary file that stopped a search).
fn parse_rg_lines(text: &str) -> BTreeSet<(String, u64, bool)> {
    text.lines()
        .filter_map(|line| {
            let (file, rest) = line.split_once('\0')?;
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let matched = rest.as_bytes()[digits] == b':';
            Some((file.strip_prefix("./").unwrap_or(file).to_owned(), rest[..digits].parse().ok()?, matched))
        })
        .collect()
}

/// The file lines of the `grep` tool's output outside content mode, up to its notice.
fn grep_files(text: &str) -> Vec<String> {
    text.lines().take_while(|l| !l.is_empty() && !l.starts_with('[')).map(str::to_owned).collect()
}

#[tokio::test]
async fn grep_modes_find_what_rg_finds() {
    if !rg_available() {
        return;
    }
    let dir = TempDir::new("grep-modes");
    generate(dir.path());
    let root = dir.path();
    let all = 1_000_000;
    for pattern in ["foo", "fn \\w+", "(?i)abc|def", "x{3000}"] {
        // `rg -l`: the same files.
        let ours: BTreeSet<String> = grep_files(
            &call(
                root,
                "grep",
                json!({"pattern": pattern, "output_mode": "files_with_matches", "limit": all}),
            )
            .await,
        )
        .into_iter()
        .collect();
        let theirs: BTreeSet<String> = rg(root, &["--files-with-matches", "-e", pattern])
            .lines()
            .map(|l| l.strip_prefix("./").unwrap_or(l).to_owned())
            .collect();
        assert!(!theirs.is_empty(), "{pattern:?} should match something");
        assert_eq!(ours, theirs, "-l {pattern:?}");
        // `rg -c`: the same count in each file.
        let ours: BTreeSet<(String, u64)> = grep_files(
            &call(root, "grep", json!({"pattern": pattern, "output_mode": "count", "limit": all})).await,
        )
        .iter()
        .map(|l| {
            let (file, count) = l.rsplit_once(": ").expect("file: count");
            (file.to_owned(), count.parse().unwrap())
        })
        .collect();
        let theirs: BTreeSet<(String, u64)> =
            rg(root, &["--count", "--with-filename", "--null", "-e", pattern])
                .lines()
                .map(|l| {
                    let (file, count) = l.split_once('\0').expect("file\\0count");
                    (file.strip_prefix("./").unwrap_or(file).to_owned(), count.parse().unwrap())
                })
                .collect();
        assert_eq!(ours, theirs, "-c {pattern:?}");
        // `rg -C 2`: the same matching and context lines.
        let ours = parse_grep_lines(
            &call(root, "grep", json!({"pattern": pattern, "context": 2, "limit": all})).await,
        );
        let theirs = parse_rg_lines(&rg(
            root,
            &["--context", "2", "--line-number", "--with-filename", "--no-heading", "--null", "-e", pattern],
        ));
        assert!(theirs.iter().any(|(_, _, matched)| !matched), "{pattern:?}: some context lines");
        assert_eq!(
            ours,
            theirs,
            "-C 2 {pattern:?}: only ours {:?}, only rg {:?}",
            ours.difference(&theirs).collect::<Vec<_>>(),
            theirs.difference(&ours).collect::<Vec<_>>()
        );
    }
    // `rg --type rust` (and `py`): the same lines of the same files, except that rg lets a
    // file of the type through even when it is hidden, and `grep` still skips hidden files.
    for file_type in ["rust", "py", "markdown"] {
        let ours =
            parse_grep(&call(root, "grep", json!({"pattern": "foo", "type": file_type, "limit": all})).await);
        let hidden = |file: &str| file.split('/').any(|part| part.starts_with('.'));
        let theirs: BTreeSet<(String, u64)> = parse_rg(&rg(
            root,
            &["--type", file_type, "--line-number", "--with-filename", "--no-heading", "--null", "-e", "foo"],
        ))
        .into_iter()
        .filter(|(file, _)| !hidden(file))
        .collect();
        assert!(!theirs.is_empty(), "--type {file_type} should match something");
        assert_eq!(ours, theirs, "--type {file_type}");
    }
    // `rg -U --multiline-dotall`: every line of every match.
    for pattern in
        ["foo\\r?\\nbar", "\\d+\\r?\\n\\w", "(?i)abc\\s+def", "TODO.{0,12}fix", "\\n\\r?\\n\\s*\\w+"]
    {
        let ours = parse_grep_lines(
            &call(root, "grep", json!({"pattern": pattern, "multiline": true, "limit": all})).await,
        );
        let theirs = parse_rg_lines(&rg(
            root,
            &[
                "--multiline",
                "--multiline-dotall",
                "--line-number",
                "--with-filename",
                "--no-heading",
                "--null",
                "-e",
                pattern,
            ],
        ));
        assert!(!theirs.is_empty(), "-U {pattern:?} should match something");
        assert_eq!(
            ours,
            theirs,
            "-U {pattern:?}: only ours {:?}, only rg {:?}",
            ours.difference(&theirs).collect::<Vec<_>>(),
            theirs.difference(&ours).collect::<Vec<_>>()
        );
    }
}
