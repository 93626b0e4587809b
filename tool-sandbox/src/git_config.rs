//! What git reads to decide which programs to run in a repository, as git itself reads it: the
//! hooks directory `core.hooksPath` names (set in the repository's configuration, the user's,
//! the system's, or a file one of them includes) and the configuration files themselves.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long `git config` may take before the answer is looked for without it.
const TIME_LIMIT: Duration = Duration::from_secs(2);

/// How long git may be asked, in all, within [`WINDOW`]: past it, the repositories left are
/// read without git (and asked again later), so that many repositories a command made with a
/// FIFO where a file they include should be cannot hold the host up for two seconds each.
const BUDGET: Duration = Duration::from_secs(3);
const WINDOW: Duration = Duration::from_secs(10);

/// The most of its output read, and of `.git/config` read without it.
const MAX_OUTPUT: u64 = 1 << 20;

/// `ask(deadline)` within what is left of git's time in the current window of [`BUDGET`] (a
/// window starts anew once past), the time it took counted; `None` when nothing is left.
fn within_budget<T>(ask: impl FnOnce(Instant) -> Option<T>) -> Option<T> {
    static SPENT: std::sync::OnceLock<Mutex<Option<(Instant, Duration)>>> = std::sync::OnceLock::new();
    let spent = SPENT.get_or_init(Default::default);
    let left = {
        let mut spent = spent.lock().unwrap_or_else(|p| p.into_inner());
        match *spent {
            Some((start, used)) if start.elapsed() < WINDOW => BUDGET.saturating_sub(used),
            _ => {
                *spent = Some((Instant::now(), Duration::ZERO));
                BUDGET
            }
        }
    };
    if left.is_zero() {
        return None;
    }
    let started = Instant::now();
    let answer = ask(started + left.min(TIME_LIMIT));
    if let Some((_, used)) = spent.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        *used += started.elapsed();
    }
    answer
}

/// A file's identity and last change, to tell that it changed (`None`: absent).
type Stamp = Option<(u64, u64, u64, i64, i64, i64, i64)>;

/// Per repository root: the files an answer came from, as they were, and the answer.
type Answers = HashMap<PathBuf, (Vec<(PathBuf, Stamp)>, GitReads)>;

std::thread_local! {
    /// The answers given within [`one_start`] on this thread.
    static THIS_START: std::cell::RefCell<Option<HashMap<PathBuf, GitReads>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `start` (a command's start, on this thread) with each repository's answer kept for its
/// duration: git is asked once per repository, first, and the answer serves what follows. A
/// command's start asks before it takes the lock around placeholders
/// ([`placeholder_lock`](crate::placeholder_lock)), which no git made slow (a FIFO a command put
/// where an included file should be) may then hold up.
pub(crate) fn one_start<T>(start: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            THIS_START.with(|answers| *answers.borrow_mut() = None);
        }
    }
    THIS_START.with(|answers| *answers.borrow_mut() = Some(HashMap::new()));
    let _reset = Reset;
    start()
}

/// What git reads in a repository to decide which programs to run.
#[derive(Debug, Clone, Default)]
pub(crate) struct GitReads {
    /// The directory git runs hooks from: the one `core.hooksPath` names, or the git
    /// directory's own `hooks` (for a work tree whose git directory is elsewhere: `.bare/hooks`,
    /// a submodule's `.git/modules/NAME/hooks`); for husky's `.husky/_`, `.husky`, whose scripts
    /// those in `_` run.
    pub(crate) hooks: Option<PathBuf>,
    /// The configuration files, with those they include (present or not).
    pub(crate) files: Vec<PathBuf>,
    /// The git directories a `.git` file names (a worktree's, `.bare`, a submodule's), and the
    /// common directory theirs names (`commondir`): git reads its configuration, hooks and
    /// objects there, so they are the repository's metadata as `.git` is.
    pub(crate) git_dirs: Vec<PathBuf>,
}

/// What git reads, for the repository at `root`, to decide what to run: the directory
/// `core.hooksPath` names, and the configuration files read (the files they include too,
/// present or not). Git is asked (`git config --list --show-origin`), as found in `PATH`
/// outside the `writable` roots, so that its own rules apply (includes, the user's and the
/// system's files, comments, quoting), and the repository's `.git/config` is read here as well
/// (git may give no answer: not installed, a repository it refuses, slower than 2 s). The
/// answer is kept until one of the files it came from changes. Past the time git may take
/// ([`BUDGET`]), git is not asked: the last answer stands, or one read without git, which is
/// not kept.
pub(crate) fn git_reads(root: &Path, writable: &[PathBuf]) -> GitReads {
    let given = THIS_START.with(|answers| answers.borrow().as_ref().map(|a| a.get(root).cloned()));
    match given {
        Some(Some(reads)) => reads,
        Some(None) => {
            let reads = git_reads_now(root, writable);
            THIS_START.with(|answers| {
                if let Some(answers) = answers.borrow_mut().as_mut() {
                    answers.insert(root.to_path_buf(), reads.clone());
                }
            });
            reads
        }
        None => git_reads_now(root, writable),
    }
}

/// [`git_reads`], outside [`one_start`]'s answers.
fn git_reads_now(root: &Path, writable: &[PathBuf]) -> GitReads {
    static ANSWERS: std::sync::OnceLock<Mutex<Answers>> = std::sync::OnceLock::new();
    let answers = ANSWERS.get_or_init(Default::default);
    let mut answers = answers.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((read, reads)) = answers.get(root)
        && read.iter().all(|(file, stamp)| stamp_of(file) == *stamp)
    {
        return reads.clone();
    }
    let mut asked_in_time = false;
    let asked = within_budget(|deadline| {
        asked_in_time = true;
        ask_git(root, writable, deadline)
    });
    // Past git's time, the last answer, as it was, rather than none from git.
    if !asked_in_time && let Some((_, reads)) = answers.get(root) {
        return reads.clone();
    }
    let keep = asked_in_time;
    let git_dirs = linked_git_dirs(root);
    // When git does not take the directory for a repository (a `HEAD` a command spoiled, an
    // owner git distrusts), the configuration file is still read by git, with its includes.
    let config = git_dirs.first().map_or_else(|| root.join(".git/config"), |dir| dir.join("config"));
    let asked = asked.or_else(|| {
        let git = crate::resolve_program("git", &std::env::var_os("PATH")?, writable)?;
        let config = config.as_os_str().to_str()?;
        let args = ["config", "--file", config, "--includes", "--list", "--show-origin", "-z"];
        within_budget(|deadline| run_git(&git, root, &args, deadline)).map(|out| parse(root, &out))
    });
    let mut reads = asked.unwrap_or_default();
    reads.git_dirs = git_dirs;
    // As read here when git said nothing of it (git does not read a `.git` it does not take for
    // a repository, which later files may make one).
    if reads.hooks.is_none() {
        reads.hooks = read_hooks_path(&config).map(|value| hooks_dir(root, &value));
    }
    if !reads.files.contains(&config) {
        reads.files.push(config);
    }
    let mut read: Vec<PathBuf> = candidates(root);
    read.extend(reads.files.iter().cloned());
    read.sort();
    read.dedup();
    let stamped = read
        .into_iter()
        .map(|file| {
            let stamp = stamp_of(&file);
            (file, stamp)
        })
        .collect();
    if keep {
        answers.insert(root.to_path_buf(), (stamped, reads.clone()));
    }
    reads
}

/// The configuration files git may read for `root` whether or not they exist now: a change to
/// any of them (made, removed, edited) means asking again.
fn candidates(root: &Path) -> Vec<PathBuf> {
    let env = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let mut files = vec![root.join(".git/config"), root.join(".git/config.worktree"), root.join(".git")];
    files.push(env("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    files.extend(env("GIT_CONFIG_GLOBAL"));
    if let Some(home) = env("HOME") {
        files.push(home.join(".gitconfig"));
        files.push(env("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config")).join("git/config"));
    }
    files
}

fn stamp_of(file: &Path) -> Stamp {
    let m = std::fs::metadata(file).ok()?;
    Some((m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()))
}

/// `git config --list --show-origin` in `root`: the files it read (with the includes they name),
/// and `git rev-parse --git-path hooks`: the hooks directory, relative to the working tree's top
/// where hooks run (`root` may be below it).
fn ask_git(root: &Path, writable: &[PathBuf], deadline: Instant) -> Option<GitReads> {
    use std::os::unix::ffi::OsStrExt;
    let git = crate::resolve_program("git", &std::env::var_os("PATH")?, writable)?;
    // Outside a repository this fails, and the configuration has no file of one. Without a work
    // tree (a bare repository a `.git` file names) `--show-toplevel` fails: the hooks are asked
    // about alone.
    let located = run_git(&git, root, &["rev-parse", "--git-path", "hooks", "--show-toplevel"], deadline)
        .or_else(|| run_git(&git, root, &["rev-parse", "--git-path", "hooks"], deadline));
    // A `.git` that git does not take for a repository (a `HEAD` a command spoiled): the
    // configuration is read from its file instead (see [`git_reads`]).
    if located.is_none() && std::fs::symlink_metadata(root.join(".git")).is_ok() {
        return None;
    }
    let located = located.unwrap_or_default();
    let mut lines = located.split(|&b| b == b'\n').map(std::ffi::OsStr::from_bytes);
    let (hooks, top) = (lines.next().filter(|l| !l.is_empty()), lines.next().filter(|l| !l.is_empty()));
    // The files of a repository's configuration are named from its top.
    let top = top.map_or_else(|| root.to_path_buf(), PathBuf::from);
    let mut reads =
        parse(&top, &run_git(&git, root, &["config", "--list", "--show-origin", "-z"], deadline)?);
    if let Some(hooks) = hooks {
        reads.hooks = Some(husky(crate::lexically_normal(&root.join(hooks))));
    }
    Some(reads)
}

/// The git directory the `.git` file at `top` names, if it is one (`gitdir: PATH`, taken from
/// `top`), and the common directory that one's `commondir` names (taken from it).
fn linked_git_dirs(top: &Path) -> Vec<PathBuf> {
    let read = |path: &Path| read_regular(path, 4096);
    let mut dirs = Vec::new();
    let Some(named) = read(&top.join(".git")) else { return dirs };
    let Some(git_dir) = named.lines().next().and_then(|line| line.strip_prefix("gitdir:")) else {
        return dirs;
    };
    let git_dir = crate::lexically_normal(&top.join(git_dir.trim()));
    if let Some(common) = read(&git_dir.join("commondir")) {
        dirs.push(git_dir.clone());
        let common = common.lines().next().unwrap_or_default().trim();
        if !common.is_empty() {
            dirs.push(crate::lexically_normal(&git_dir.join(common)));
        }
    } else {
        dirs.push(git_dir);
    }
    dirs
}

/// `git -C root args...`'s output, if it succeeds by `deadline`. A repository's owner is not
/// checked (`safe.directory`): git only reads here, and one owned by another user is read as
/// that user's git would read it.
fn run_git(git: &Path, root: &Path, args: &[&str], deadline: Instant) -> Option<Vec<u8>> {
    let mut command = std::process::Command::new(git);
    // Git reads what a command may have written (an `include.path` of `/proc/<this process>/fd/0`
    // would have it read this process's input, a client's requests): it runs in a Landlock domain
    // of its own, which may not open another process's descriptors through `/proc`, with none
    // of this process's but its standard ones, and writes nothing.
    if let Some(ruleset) = crate::landlock_rules::reader_ruleset() {
        crate::child::run_in_domain(&mut command, ruleset);
    }
    let mut child = command
        .arg("-c")
        .arg("safe.directory=*")
        .arg("-C")
        .arg(root)
        .args(args)
        // What the commands of this process were told, not what the user's own git will be.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_COMMON_DIR")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.take(MAX_OUTPUT).read_to_end(&mut out).map(|_| out)
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            // Too slow (a FIFO where an included file should be), or gone: killed, and the
            // reader ends with the pipe.
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = reader.join();
                return None;
            }
        }
    };
    let out = reader.join().ok()?.ok()?;
    status.success().then_some(out)
}

/// What `git config --list --show-origin -z`'s output `out` says of the repository whose top
/// is `root` (where a relative hooks directory and a relative file name are taken from).
fn parse(root: &Path, out: &[u8]) -> GitReads {
    use std::os::unix::ffi::OsStrExt;
    let home = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.is_absolute());
    let mut files: Vec<PathBuf> = Vec::new();
    let mut hooks = None;
    let mut fields = out.split(|&b| b == 0);
    while let (Some(origin), Some(entry)) = (fields.next(), fields.next()) {
        let Some(file) = origin.strip_prefix(b"file:") else { continue };
        let file = crate::lexically_normal(&root.join(std::ffi::OsStr::from_bytes(file)));
        let (key, value) = match entry.iter().position(|&b| b == b'\n') {
            Some(at) => (&entry[..at], std::ffi::OsStr::from_bytes(&entry[at + 1..])),
            None => (entry, std::ffi::OsStr::new("")),
        };
        let key = String::from_utf8_lossy(key).to_ascii_lowercase();
        let tilde = |value: &std::ffi::OsStr| -> Option<PathBuf> {
            let text = value.as_bytes();
            match text.strip_prefix(b"~/") {
                Some(rest) => Some(home.as_ref()?.join(std::ffi::OsStr::from_bytes(rest))),
                None => Some(PathBuf::from(value)),
            }
        };
        if key == "core.hookspath" {
            hooks = tilde(value).filter(|_| !value.is_empty());
        } else if (key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path")))
            && let Some(path) = tilde(value)
        {
            // Relative to the file that includes it.
            let dir = file.parent().unwrap_or(root);
            files.push(crate::lexically_normal(&dir.join(path)));
        }
        files.push(file);
    }
    files.sort();
    files.dedup();
    GitReads { hooks: hooks.map(|value| hooks_dir(root, value.as_os_str())), files, git_dirs: Vec::new() }
}

/// The directory the hooks of the repository at `root` run from, for `core.hooksPath` =
/// `value`: relative to the working tree's top, where git runs hooks.
fn hooks_dir(root: &Path, value: &std::ffi::OsStr) -> PathBuf {
    husky(crate::lexically_normal(&root.join(value)))
}

/// Husky's `.husky` for its `.husky/_` (husky 9 points `core.hooksPath` there, and the scripts
/// in `_` run those of `.husky`); any other directory as it is.
fn husky(hooks: PathBuf) -> PathBuf {
    match (hooks.file_name(), hooks.parent()) {
        (Some(name), Some(parent)) if name == "_" && parent.file_name().is_some_and(|p| p == ".husky") => {
            parent.to_path_buf()
        }
        _ => hooks,
    }
}

/// The text of the file at `path`, at most `max` bytes of it, if it is a regular file: opened
/// without following a link, and without waiting on a FIFO.
fn read_regular(path: &Path, max: u64) -> Option<String> {
    let mut text = String::new();
    let file = std::os::unix::fs::OpenOptionsExt::custom_flags(
        std::fs::OpenOptions::new().read(true),
        libc::O_NOFOLLOW | libc::O_NONBLOCK,
    )
    .open(path)
    .ok()
    .filter(|f| f.metadata().is_ok_and(|m| m.is_file()))?;
    file.take(max).read_to_string(&mut text).ok()?;
    Some(text)
}

/// `core.hooksPath` in the git configuration file `config`, read here: sections and keys in
/// any case, a key on its section's line, comments (`#`, `;`) and quotes; the last one wins.
fn read_hooks_path(config: &Path) -> Option<std::ffi::OsString> {
    let text = read_regular(config, MAX_OUTPUT)?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut core = false;
    let mut found = None;
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let Some((section, after)) = rest.split_once(']') else { continue };
            core = section.trim().eq_ignore_ascii_case("core");
            line = after.trim();
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if core && key.trim().eq_ignore_ascii_case("hookspath") {
            found = Some(unquote(value));
        }
    }
    let value = found.filter(|v| !v.is_empty())?;
    match value.strip_prefix("~/") {
        Some(rest) => Some(home?.join(rest).into_os_string()),
        None => Some(value.into()),
    }
}

/// A git configuration value as git reads it: quotes removed, `\` escapes taken, and a comment
/// outside quotes left out.
fn unquote(value: &str) -> String {
    let mut out = String::new();
    let (mut quoted, mut chars) = (false, value.trim().chars());
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    if quoted { out } else { out.trim_end().to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hooks_path_is_read_with_comments_quotes_and_a_key_on_its_sections_line() {
        let dir = std::env::temp_dir().join(format!("git-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("config");
        for (text, expected) in [
            ("[core]\n\thooksPath = .hooks\n", Some(".hooks")),
            ("[core]\n\thooksPath = .hooks ; shared hooks\n", Some(".hooks")),
            ("[core]\n\thooksPath = .hooks # shared\n", Some(".hooks")),
            ("[core] hooksPath = one-line\n", Some("one-line")),
            ("[CORE]\n\tHOOKSPATH = \"with ; semicolon\"\n", Some("with ; semicolon")),
            ("[core]\n\thooksPath = a\n[user]\n\thooksPath = b\n[core]\n\thooksPath = c\n", Some("c")),
            ("[user]\n\thooksPath = b\n", None),
            ("[core]\n\thooksPath =\n", None),
        ] {
            std::fs::write(&config, text).unwrap();
            assert_eq!(read_hooks_path(&config).as_deref(), expected.map(std::ffi::OsStr::new), "{text:?}");
        }
        // A FIFO or a link there is not read (nor waited on).
        std::fs::remove_file(&config).unwrap();
        nix::unistd::mkfifo(&config, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert_eq!(read_hooks_path(&config), None);
        std::fs::remove_file(&config).unwrap();
        std::fs::write(dir.join("real"), "[core]\n\thooksPath = x\n").unwrap();
        std::os::unix::fs::symlink(dir.join("real"), &config).unwrap();
        assert_eq!(read_hooks_path(&config), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A workspace below the top of its repository: a relative `core.hooksPath` is taken from
    /// the top, where git runs hooks, and the repository's configuration above is read.
    #[test]
    fn the_hooks_of_a_workspace_below_its_repositorys_top_are_found_from_the_top() {
        let top = std::env::temp_dir().join(format!("git-config-top-{}", std::process::id()));
        std::fs::create_dir_all(top.join("sub")).unwrap();
        let git = |args: &[&str]| std::process::Command::new("git").args(args).current_dir(&top).status();
        if !git(&["init", "-q"]).is_ok_and(|s| s.success()) {
            eprintln!("skipped: git is not installed");
            return;
        }
        assert!(git(&["config", "core.hooksPath", "sub/.hooks"]).unwrap().success());
        let reads = git_reads(&top.join("sub"), &[]);
        assert_eq!(reads.hooks, Some(top.join("sub/.hooks")));
        assert!(reads.files.contains(&top.join(".git/config")), "{:?}", reads.files);
        std::fs::remove_dir_all(&top).unwrap();
    }

    /// Within one command's start git is asked once per repository: what it answered first
    /// stands (the start asks before it takes the lock around placeholders, and plans its mounts
    /// under the lock from that answer), and a later start asks again.
    #[test]
    fn within_one_start_git_is_asked_once_per_repository() {
        let top = std::env::temp_dir().join(format!("git-config-once-{}", std::process::id()));
        std::fs::create_dir_all(&top).unwrap();
        let git = |args: &[&str]| std::process::Command::new("git").args(args).current_dir(&top).status();
        if !git(&["init", "-q"]).is_ok_and(|s| s.success()) {
            eprintln!("skipped: git is not installed");
            return;
        }
        assert!(git(&["config", "core.hooksPath", "first"]).unwrap().success());
        let (before, after) = one_start(|| {
            let before = git_reads(&top, &[]).hooks;
            assert!(git(&["config", "core.hooksPath", "second"]).unwrap().success());
            (before, git_reads(&top, &[]).hooks)
        });
        let later = git_reads(&top, &[]).hooks;
        std::fs::remove_dir_all(&top).unwrap();
        assert_eq!((before, after), (Some(top.join("first")), Some(top.join("first"))));
        assert_eq!(later, Some(top.join("second")));
    }

    /// Git reads what a command wrote, as this process's child: a configuration that includes
    /// `/proc/<this process>/fd/N` (its input, where a client's requests come in) does not have
    /// git read from that descriptor, which its own Landlock domain keeps it out of.
    #[test]
    fn git_cannot_read_this_process_descriptors_that_a_configuration_includes() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let top = std::env::temp_dir().join(format!("git-config-proc-{}", std::process::id()));
        std::fs::create_dir_all(&top).unwrap();
        let git = |args: &[&str]| std::process::Command::new("git").args(args).current_dir(&top).status();
        if !git(&["init", "-q"]).is_ok_and(|s| s.success()) {
            eprintln!("skipped: git is not installed");
            return;
        }
        if crate::landlock_rules::reader_ruleset().is_none() {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI has Landlock");
            eprintln!("skipped: no Landlock here");
            return;
        }
        let sent = "[core]\n\thooksPath = taken\n";
        let (input, mut sender) = std::io::pipe().unwrap();
        sender.write_all(sent.as_bytes()).unwrap();
        // And one that whatever started this process left inheritable, which git would find as
        // its own.
        let (inherited, mut to_inherited) = std::io::pipe().unwrap();
        to_inherited.write_all(sent.as_bytes()).unwrap();
        // (Git stops at an include it may not open, and goes past one that does not exist.)
        let included = format!(
            "[include]\n\tpath = /dev/fd/{}\n\tpath = /proc/{}/fd/{}\n",
            inherited.as_raw_fd(),
            std::process::id(),
            input.as_raw_fd()
        );
        let mut config = std::fs::OpenOptions::new().append(true).open(top.join(".git/config")).unwrap();
        config.write_all(included.as_bytes()).unwrap();
        rustix::io::fcntl_setfd(&inherited, rustix::io::FdFlags::empty()).unwrap();
        let reads = git_reads(&top, &[]);
        rustix::io::fcntl_setfd(&inherited, rustix::io::FdFlags::CLOEXEC).unwrap();
        // What was sent is all still there for this process to read.
        drop((sender, to_inherited));
        let mut left = (String::new(), String::new());
        std::io::Read::read_to_string(&mut &input, &mut left.0).unwrap();
        std::io::Read::read_to_string(&mut &inherited, &mut left.1).unwrap();
        std::fs::remove_dir_all(&top).unwrap();
        assert_eq!(left, (sent.to_owned(), sent.to_owned()));
        assert_ne!(reads.hooks, Some(top.join("taken")));
    }

    #[test]
    fn gits_answer_names_the_hooks_the_files_and_what_they_include() {
        let root = Path::new("/w");
        let out = b"file:/home/u/.gitconfig\0core.hookspath\n.githooks\0file:.git/config\0core.bare\nfalse\0\
                    file:.git/config\0include.path\n../team.cfg\0file:.git/config\0includeif.onbranch:x.path\n/abs/x.cfg\0\
                    command line:\0core.hookspath\nignored\0file:.git/config\0core.fsmonitor\0";
        let reads = parse(root, out);
        let expected: Vec<PathBuf> = ["/abs/x.cfg", "/home/u/.gitconfig", "/w/.git/config", "/w/team.cfg"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(reads.files, expected);
        assert_eq!(reads.hooks, Some(PathBuf::from("/w/.githooks")));
    }
}
