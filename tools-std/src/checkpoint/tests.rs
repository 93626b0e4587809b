use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::scan::{Cached, Stamp, diff, diff_paths};
use super::store::STORE_PREFIX;
use super::*;
use crate::fs::host;

/// A workspace in a new temporary directory, removed at the end.
struct Tree(PathBuf);

impl Tree {
    fn new(name: &str) -> Tree {
        let root = std::env::temp_dir().join(format!("checkpoint-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Tree(std::fs::canonicalize(&root).unwrap())
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn counts(checkpoints: &Checkpoints) -> ScanCounts {
    lock(&checkpoints.inner).scans
}

/// What a scan that walks everything finds, with no notifications involved.
fn truth(root: &Path) -> BTreeMap<PathBuf, FileState> {
    let config = CheckpointConfig { max_watched_dirs: 0, ..CheckpointConfig::default() };
    Checkpoints::new(config).scan(root).unwrap()
}

fn state(checkpoints: &Checkpoints, root: &Path, rel: &str) -> Option<FileState> {
    checkpoints.scan(root).unwrap().remove(Path::new(rel))
}

/// A file the host cannot open (here a write lease another process holds, so the host's
/// non-blocking open fails with EWOULDBLOCK, as root too; a command's `chmod 000` does the same
/// for an ordinary user) is recorded by its metadata, and the scan goes on: it used to fail
/// the scan, and with it every checkpoint and undo of the session.
#[test]
fn a_file_the_host_cannot_open_is_recorded_unread_and_the_scan_goes_on() {
    use std::io::BufRead;
    let tree = Tree::new("unopenable");
    tree.write("a.txt", "a\n");
    tree.write("held.txt", "held\n");
    let holder = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import fcntl, os, signal, sys, time\n\
             signal.signal(signal.SIGIO, signal.SIG_IGN)\n\
             fd = os.open(sys.argv[1], os.O_WRONLY)\n\
             fcntl.fcntl(fd, 1024, fcntl.F_WRLCK)\n\
             print('held', flush=True)\n\
             time.sleep(30)\n",
        )
        .arg(tree.0.join("held.txt"))
        .stdout(std::process::Stdio::piped())
        .spawn();
    let Ok(mut holder) = holder else {
        return eprintln!("skipped: python3 is not installed");
    };
    let mut line = String::new();
    std::io::BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    if line.trim() != "held" {
        let _ = holder.kill();
        return eprintln!("skipped: this file system takes no lease");
    }
    let scanned = truth(&tree.0);
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(matches!(scanned.get(Path::new("a.txt")), Some(FileState::File { .. })), "{scanned:?}");
    assert!(
        matches!(scanned.get(Path::new("held.txt")), Some(FileState::NotRead { size: 5, .. })),
        "{scanned:?}"
    );
}

#[test]
#[cfg(target_os = "linux")]
fn a_change_in_a_deep_directory_is_caught_by_listing_that_directory_only() {
    let tree = Tree::new("deep");
    for i in 0..20 {
        tree.write(&format!("src/m{i}/f.rs"), "fn f() {}\n");
    }
    tree.write("a/b/c/d/e/deep.txt", "one\n");
    let checkpoints = Checkpoints::default();
    let first = state(&checkpoints, &tree.0, "a/b/c/d/e/deep.txt");
    assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 0 });

    tree.write("a/b/c/d/e/deep.txt", "two\n");
    let scan = checkpoints.scan(&tree.0).unwrap();
    assert_ne!(scan.get(Path::new("a/b/c/d/e/deep.txt")), first.as_ref());
    assert_eq!(scan, truth(&tree.0));
    assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 1 });

    // Nothing since: the last scan holds, nothing is walked.
    assert_eq!(checkpoints.scan(&tree.0).unwrap(), scan);
    assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 1 });
}

#[test]
#[cfg(target_os = "linux")]
fn lost_notifications_fall_back_to_a_full_scan() {
    let tree = Tree::new("overflow");
    tree.write("noisy/a", "");
    tree.write("noisy/b", "");
    tree.write("deep/x/y/z.txt", "before\n");
    let checkpoints = Checkpoints::default();
    checkpoints.scan(&tree.0).unwrap();
    // More notifications than the kernel queues: the later ones are lost, the change to
    // z.txt among them, and only an overflow notice says so.
    let queued: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(16384);
    let mut files = [tree.0.join("noisy/a"), tree.0.join("noisy/b")]
        .map(|p| std::fs::OpenOptions::new().append(true).open(p).unwrap());
    for n in 0..queued + 10 {
        // Alternating, so that the kernel does not merge them into one.
        std::io::Write::write_all(&mut files[n % 2], b"x").unwrap();
    }
    tree.write("deep/x/y/z.txt", "after\n");
    let scan = checkpoints.scan(&tree.0).unwrap();
    assert_eq!(scan, truth(&tree.0), "the change to deep/x/y/z.txt is seen");
    assert_eq!(counts(&checkpoints), ScanCounts { full: 2, partial: 0 });
    // The queue was emptied: the next change is back to the cheap scan.
    tree.write("deep/x/y/z.txt", "later\n");
    assert_eq!(checkpoints.scan(&tree.0).unwrap(), truth(&tree.0));
    assert_eq!(counts(&checkpoints), ScanCounts { full: 2, partial: 1 });
}

#[test]
#[cfg(target_os = "linux")]
fn a_directory_a_call_created_is_watched_from_then_on() {
    let tree = Tree::new("newdir");
    tree.write("README", "hello\n");
    let checkpoints = Arc::new(Checkpoints::default());
    let call = checkpoints.begin(&tree.0, "call_1", "bash").unwrap();
    tree.write("made/by/the/call.txt", "1\n");
    assert_eq!(call.finish(), Some(1));
    assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 1 });
    let changes: Vec<PathBuf> = checkpoints.list()[0].changes.iter().map(|c| c.path.clone()).collect();
    assert_eq!(changes, ["made", "made/by", "made/by/the", "made/by/the/call.txt"].map(PathBuf::from));

    // Changed between calls, beneath the new directory only.
    tree.write("made/by/the/call.txt", "changed outside\n");
    tree.write("made/by/the/other.txt", "new outside\n");
    assert_eq!(checkpoints.scan(&tree.0).unwrap(), truth(&tree.0));
    assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 2 });
}

#[test]
#[cfg(target_os = "linux")]
fn a_directory_moved_within_the_tree_is_followed_under_its_new_name() {
    let tree = Tree::new("moved");
    tree.write("a/sub/inner/f.txt", "1\n");
    tree.write("b/keep.txt", "k\n");
    let checkpoints = Checkpoints::default();
    checkpoints.scan(&tree.0).unwrap();
    std::fs::rename(tree.0.join("a/sub"), tree.0.join("b/sub")).unwrap();
    assert_eq!(checkpoints.scan(&tree.0).unwrap(), truth(&tree.0));
    // Its old watch now speaks for its new place.
    tree.write("b/sub/inner/f.txt", "2\n");
    assert_eq!(checkpoints.scan(&tree.0).unwrap(), truth(&tree.0));
    // A directory put where another was moved from is a new one, walked in full.
    tree.write("a/sub/inner/g.txt", "g\n");
    assert_eq!(checkpoints.scan(&tree.0).unwrap(), truth(&tree.0));
    assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 3 });
}

#[test]
#[cfg(target_os = "linux")]
fn an_ignore_file_changed_rescans_everything() {
    let tree = Tree::new("ignore");
    tree.write("deep/er/build/out.o", "object\n");
    tree.write("deep/er/.gitignore", "build/\n");
    let checkpoints = Checkpoints::default();
    assert!(!checkpoints.scan(&tree.0).unwrap().contains_key(Path::new("deep/er/build/out.o")));
    tree.write("deep/er/.gitignore", "");
    let scan = checkpoints.scan(&tree.0).unwrap();
    assert!(scan.contains_key(Path::new("deep/er/build/out.o")));
    assert_eq!(scan, truth(&tree.0));
    assert_eq!(counts(&checkpoints).full, 2);
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Every file in the store's directory, with its bytes.
fn stored_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                files.push((entry.path(), std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    files
}

#[test]
fn the_default_store_is_a_new_private_directory_with_private_files() {
    let tree = Tree::new("private");
    tree.write("secret.env", "KEY=1\n");
    let checkpoints = Checkpoints::default();
    checkpoints.scan(&tree.0).unwrap();
    let dir = checkpoints.store_dir().unwrap();
    let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
    let prefix = format!("{STORE_PREFIX}{}-", std::process::id());
    assert!(name.starts_with(&prefix) && name.len() == prefix.len() + 16, "{name}");
    assert_eq!(mode_of(&dir), 0o700);
    assert_eq!(mode_of(&dir.join("objects")), 0o700);
    let files = stored_files(&dir);
    assert_eq!(files.len(), 1);
    assert_eq!(mode_of(&files[0].0), 0o600);
    assert_eq!(mode_of(files[0].0.parent().unwrap()), 0o700);
    drop(checkpoints);
    assert!(std::fs::symlink_metadata(&dir).is_err(), "removed with the session");
}

/// A command that can write the store plants links at the names the host writes: the blob's
/// temporary name of old (`<hash>.tmp`), its final name, and a blob directory.
#[test]
fn links_planted_in_the_store_are_never_written_through() {
    let tree = Tree::new("planted");
    let outside = Tree::new("planted-outside");
    let state = Tree::new("planted-state");
    outside.write("existing", "untouched\n");
    tree.write("first.txt", "first\n");
    let checkpoints =
        Checkpoints::new(CheckpointConfig { dir: Some(state.0.clone()), ..CheckpointConfig::default() });
    checkpoints.scan(&tree.0).unwrap();
    let store = checkpoints.store_dir().unwrap();
    assert_eq!(store.parent(), Some(state.0.as_path()));
    let payload = b"written by a command\n";
    let other = b"another file\n";
    let (sub, name) = Store::place(&BlobId::of(payload));
    let (other_sub, _) = Store::place(&BlobId::of(other));
    assert_ne!(sub, other_sub, "the test needs two blob directories");
    let objects = store.join("objects");
    std::fs::create_dir_all(objects.join(&sub)).unwrap();
    std::os::unix::fs::symlink(outside.0.join("created"), objects.join(&sub).join(format!("{name}.tmp")))
        .unwrap();
    std::os::unix::fs::symlink(outside.0.join("existing"), objects.join(&sub).join(&name)).unwrap();
    std::os::unix::fs::symlink(&outside.0, objects.join(&other_sub)).unwrap();
    tree.write("f.txt", std::str::from_utf8(payload).unwrap());
    tree.write("g.txt", std::str::from_utf8(other).unwrap());

    let scan = checkpoints.scan(&tree.0).unwrap();
    assert!(matches!(scan.get(Path::new("f.txt")), Some(FileState::File { .. })), "{scan:?}");
    assert!(matches!(scan.get(Path::new("g.txt")), Some(FileState::File { .. })), "{scan:?}");
    let names: Vec<_> = std::fs::read_dir(&outside.0).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(names, ["existing"], "nothing made outside the store");
    assert_eq!(std::fs::read_to_string(outside.0.join("existing")).unwrap(), "untouched\n");
    // The store holds its own copies, which read back.
    let inner = lock(&checkpoints.inner);
    let kept = inner.store.as_ref().unwrap();
    assert_eq!(kept.get(&BlobId::of(payload)).unwrap(), payload);
    assert_eq!(kept.get(&BlobId::of(other)).unwrap(), other);
    assert!(std::fs::symlink_metadata(objects.join(&other_sub)).unwrap().is_dir());
}

/// A background command swaps a listed regular file with links to a file outside the
/// workspace and to `/proc/self/environ` (the host's environment) while the host scans:
/// neither is ever read, so neither reaches the store.
#[test]
#[cfg(target_os = "linux")]
fn a_file_swapped_for_a_link_while_scanned_is_never_read_through_it() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let tree = Tree::new("swap");
    let outside = Tree::new("swap-outside");
    let secret = "SECRET-OUTSIDE-THE-WORKSPACE";
    outside.write("secret", secret);
    tree.write("a.txt", "inside\n");
    std::os::unix::fs::symlink(outside.0.join("secret"), tree.0.join("to-secret")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", tree.0.join("to-environ")).unwrap();
    let environ = std::fs::read("/proc/self/environ").unwrap();
    let first_variable = environ.split(|b| *b == 0).find(|v| v.len() > 8).unwrap_or(b"").to_vec();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, root) = (stop.clone(), tree.0.clone());
        std::thread::spawn(move || {
            use rustix::fs::{RenameFlags, renameat_with};
            let dir = host::open_dir_path(&root).unwrap();
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let link = if swaps.is_multiple_of(2) { "to-secret" } else { "to-environ" };
                renameat_with(&dir, "a.txt", &dir, link, RenameFlags::EXCHANGE).unwrap();
                renameat_with(&dir, "a.txt", &dir, link, RenameFlags::EXCHANGE).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let checkpoints =
        Checkpoints::new(CheckpointConfig { max_watched_dirs: 0, ..CheckpointConfig::default() });
    let mut read = 0;
    for _ in 0..200 {
        let scan = checkpoints.scan(&tree.0).unwrap();
        let inner = lock(&checkpoints.inner);
        let store = inner.store.as_ref().unwrap();
        for (path, state) in &scan {
            if let FileState::File { blob, .. } = state {
                // (Compared without printing: the other content would be the environment.)
                assert!(store.get(blob).unwrap() == b"inside\n", "{} held other content", path.display());
                read += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 200 && read > 0, "the swaps ({swaps}) raced the scans (files read {read})");
    for (path, bytes) in stored_files(&checkpoints.store_dir().unwrap()) {
        let holds = |needle: &[u8]| !needle.is_empty() && bytes.windows(needle.len()).any(|w| w == needle);
        assert!(!holds(secret.as_bytes()) && !holds(&first_variable), "{} holds it", path.display());
    }
}

/// A FIFO and links to `/dev/zero` at every ignore file's name: the scan neither blocks nor
/// reads without end.
#[test]
#[cfg(target_os = "linux")]
fn ignore_files_that_are_fifos_or_links_to_devices_are_not_read() {
    use nix::sys::stat::Mode;
    let tree = Tree::new("fifo");
    tree.write("kept.txt", "k\n");
    tree.write("sub/x.txt", "x\n");
    std::fs::create_dir_all(tree.0.join(".git/info")).unwrap();
    nix::unistd::mkfifo(&tree.0.join(".gitignore"), Mode::from_bits_truncate(0o644)).unwrap();
    nix::unistd::mkfifo(&tree.0.join("sub/.ignore"), Mode::from_bits_truncate(0o644)).unwrap();
    nix::unistd::mkfifo(&tree.0.join(".git/info/exclude"), Mode::from_bits_truncate(0o644)).unwrap();
    std::os::unix::fs::symlink("/dev/zero", tree.0.join(".ignore")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", tree.0.join("sub/.gitignore")).unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    let root = tree.0.clone();
    std::thread::spawn(move || {
        let _ =
            sender.send(Checkpoints::default().scan(&root).map(|scan| scan.into_keys().collect::<Vec<_>>()));
    });
    let scanned = receiver.recv_timeout(Duration::from_secs(30)).expect("the scan returns").unwrap();
    for path in ["kept.txt", "sub/x.txt", ".ignore", "sub/.gitignore"] {
        assert!(scanned.contains(&PathBuf::from(path)), "{path}: {scanned:?}");
    }
}

/// The first scan reads for a limited time (none here): the files it did not read are
/// recorded by their metadata; a call that changes one records the change, and its undo
/// leaves that file alone and says so.
#[test]
fn files_the_first_scan_had_no_time_to_read_are_left_alone_by_undo() {
    let tree = Tree::new("not-read");
    for i in 0..20 {
        tree.write(&format!("d{}/f{i}.txt", i % 3), &format!("{i}\n"));
    }
    let config = CheckpointConfig { first_read_time: Duration::ZERO, ..CheckpointConfig::default() };
    let checkpoints = Arc::new(Checkpoints::new(config));
    let scan = checkpoints.scan(&tree.0).unwrap();
    assert_eq!(scan.values().filter(|s| matches!(s, FileState::NotRead { .. })).count(), 20);
    let call = checkpoints.begin(&tree.0, "c1", "bash").unwrap();
    tree.write("d1/f1.txt", "changed\n");
    tree.write("new.txt", "new\n");
    assert_eq!(call.finish(), Some(1));
    let changes: Vec<PathBuf> = checkpoints.list()[0].changes.iter().map(|c| c.path.clone()).collect();
    assert_eq!(changes, ["d1/f1.txt", "new.txt"].map(PathBuf::from));
    let report = checkpoints.undo(&tree.0, &UndoTarget::Call("c1".into()), "u1", "undo").unwrap();
    assert_eq!(report.not_read, [PathBuf::from("d1/f1.txt")]);
    assert_eq!(report.removed, [PathBuf::from("new.txt")]);
    assert_eq!(std::fs::read_to_string(tree.0.join("d1/f1.txt")).unwrap(), "changed\n");
}

/// A file not read by the first scan and read by a later one, unchanged, is no change.
#[test]
fn a_file_read_after_the_first_scan_is_no_change() {
    let tree = Tree::new("read-later");
    tree.write("a.txt", "a\n");
    let mut before = Snapshot::default();
    let stamp = Stamp { size: 2, mtime: 1, ctime: 1, ino: 7, mode: 0o100644 };
    let not_read = FileState::NotRead { size: 2, mtime: 1, ctime: 1, ino: 7 };
    before.insert(PathBuf::from("a.txt"), Cached { stamp: Some(stamp.clone()), state: not_read });
    let mut after = Snapshot::default();
    let read = FileState::File { blob: BlobId::of(b"a\n"), mode: 0o644 };
    after.insert(PathBuf::from("a.txt"), Cached { stamp: Some(stamp.clone()), state: read.clone() });
    assert_eq!(diff(&before, &after), []);
    assert_eq!(diff_paths(&before, &after, &[PathBuf::from("a.txt")]), []);
    let changed = Stamp { mtime: 2, ..stamp };
    after.insert(PathBuf::from("a.txt"), Cached { stamp: Some(changed), state: read });
    assert_eq!(diff(&before, &after).len(), 1);
}

/// Random changes between scans (files written, removed and renamed, directories made,
/// removed and moved, links): each scan that lists only the directories notifications
/// named finds what a full walk finds.
#[test]
#[cfg(target_os = "linux")]
fn partial_scans_find_what_a_full_walk_finds() {
    let tree = Tree::new("random");
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let names = ["a", "b", "c", "d"];
    let checkpoints = Arc::new(Checkpoints::default());
    checkpoints.scan(&tree.0).unwrap();
    let mut known = truth(&tree.0);
    for step in 0..300 {
        // Some changes are a call's (recorded as its checkpoint), some made between calls.
        let call = next(2) == 0;
        let guard = call.then(|| checkpoints.begin(&tree.0, &format!("call{step}"), "test").unwrap());
        let depth = next(4);
        let dir: PathBuf = (0..depth).map(|_| names[next(names.len())]).collect();
        let path = tree.0.join(&dir).join(format!("{}{}", names[next(4)], next(3)));
        let _ = match next(7) {
            0 | 1 => std::fs::create_dir_all(path.parent().unwrap())
                .and_then(|()| std::fs::write(&path, format!("step {step}\n"))),
            2 => std::fs::remove_file(&path),
            3 => std::fs::create_dir_all(&path),
            4 if depth > 0 => std::fs::remove_dir_all(tree.0.join(&dir))
                .and_then(|()| std::fs::create_dir_all(tree.0.join(&dir))),
            4 => Ok(()),
            5 => {
                let to: PathBuf = (0..next(3)).map(|_| names[next(names.len())]).collect();
                std::fs::rename(&path, tree.0.join(to).join(format!("moved{step}")))
            }
            _ => std::os::unix::fs::symlink(format!("target{step}"), &path),
        };
        let now = truth(&tree.0);
        if let Some(guard) = guard {
            let expected: Vec<PathBuf> = known
                .keys()
                .chain(now.keys())
                .filter(|p| known.get(*p) != now.get(*p))
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            match guard.finish() {
                None => assert!(expected.is_empty(), "after step {step}: {expected:?}"),
                Some(id) => {
                    let listed = checkpoints.list();
                    let recorded = listed.iter().find(|c| c.id == id).unwrap();
                    let paths: Vec<PathBuf> = recorded.changes.iter().map(|c| c.path.clone()).collect();
                    assert_eq!(paths, expected, "after step {step}");
                    for change in &recorded.changes {
                        assert_eq!(change.before.as_ref(), known.get(&change.path), "{step}");
                        assert_eq!(change.after.as_ref(), now.get(&change.path), "{step}");
                    }
                }
            }
        } else if next(3) != 0 {
            assert_eq!(checkpoints.scan(&tree.0).unwrap(), now, "after step {step}");
        }
        known = now;
    }
    let scans = counts(&checkpoints);
    assert_eq!(scans.full, 1, "every later scan listed only what changed");
    assert!(scans.partial > 100, "{scans:?}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_directory_is_watched_through_its_handle_not_through_a_link_swapped_in_on_its_path() {
    let tree = Tree::new("watch-handle");
    let outside = Tree::new("watch-handle-outside");
    tree.write("a/b/kept", "");
    outside.write("b/there", "");
    let watch = watch::Watch::new(&tree.0, 100).unwrap();
    let a = host::open_dir_path(&tree.0.join("a")).unwrap();
    // A command swaps `a` for a link leading out of the root, between the listing and the watch.
    std::fs::rename(tree.0.join("a"), tree.0.join("a-old")).unwrap();
    std::os::unix::fs::symlink(&outside.0, tree.0.join("a")).unwrap();
    let _ = watch.changes();
    watch.add(&a, "b".as_ref(), Path::new("a/b"));
    assert!(watch.complete());
    // What happens outside is not watched; the directory that was listed is.
    std::fs::write(outside.0.join("b/new"), "").unwrap();
    assert_eq!(watch.changes(), watch::Changes::None);
    std::fs::write(tree.0.join("a-old/b/new"), "").unwrap();
    match watch.changes() {
        watch::Changes::Dirs { dirty, .. } => assert!(dirty.contains(Path::new("a/b")), "{dirty:?}"),
        other => panic!("{other:?}"),
    }
}

/// An undo whose call was stopped (its future dropped while the blocking work runs) puts back
/// nothing more: every change goes through the call's stop switch.
#[test]
fn an_undo_of_a_stopped_call_changes_nothing() {
    use crate::fs::stop::{StopSwitch, under};
    let tree = Tree::new("undo-stopped");
    tree.write("a.txt", "before\n");
    let checkpoints = Arc::new(Checkpoints::new(CheckpointConfig::default()));
    checkpoints.scan(&tree.0).unwrap();
    let call = checkpoints.begin(&tree.0, "c1", "bash").unwrap();
    tree.write("a.txt", "after\n");
    tree.write("new.txt", "new\n");
    assert_eq!(call.finish(), Some(1));
    let switch = Arc::new(StopSwitch::default());
    switch.stop();
    let undone = under(switch, || checkpoints.undo(&tree.0, &UndoTarget::Call("c1".into()), "u1", "undo"));
    let Err(err) = undone else { panic!("the stopped undo ran") };
    assert!(err.to_string().contains("the call was stopped before this change was made"), "{err}");
    assert_eq!(std::fs::read_to_string(tree.0.join("a.txt")).unwrap(), "after\n");
    assert!(tree.0.join("new.txt").exists());
}

/// A workspace past the scan's bounds (too many entries, too many bytes of paths, one path longer
/// than a path can be, which a command makes by nesting directories) is not checkpointed, with a
/// sentence saying why, in a full scan and in a partial one alike; back within them, it is again.
#[test]
fn a_workspace_past_the_scans_bounds_is_not_checkpointed_and_says_why() {
    let tree = Tree::new("bounds");
    for i in 0..8 {
        tree.write(&format!("d/f{i}.txt"), "x\n");
    }
    let config = CheckpointConfig { max_entries: 12, max_path_bytes: 400, ..CheckpointConfig::default() };
    let checkpoints = Arc::new(Checkpoints::new(config));
    let refused = |checkpoints: &Arc<Checkpoints>, call: &str| -> String {
        assert!(checkpoints.begin(&tree.0, call, "bash").is_none(), "{call} was recorded");
        checkpoints.last_error().expect("the reason")
    };
    assert!(
        checkpoints.begin(&tree.0, "c1", "bash").expect("9 entries, 64 bytes of paths").finish().is_none()
    );
    // A partial scan (only `d` changed) counts what it kept too.
    for i in 8..12 {
        tree.write(&format!("d/f{i}.txt"), "x\n");
    }
    let error = refused(&checkpoints, "c2");
    assert!(error.contains("more than 12 files and directories"), "{error}");
    for i in 8..12 {
        std::fs::remove_file(tree.0.join(format!("d/f{i}.txt"))).unwrap();
    }
    assert!(checkpoints.begin(&tree.0, "c3", "bash").is_some(), "back within the bounds");
    tree.write(&format!("{}/f.txt", "n".repeat(200)), "x\n");
    tree.write(&format!("{}/g.txt", "m".repeat(200)), "x\n");
    let error = refused(&checkpoints, "c4");
    assert!(error.contains("add up to more than"), "{error}");
    std::fs::remove_dir_all(tree.0.join("n".repeat(200))).unwrap();
    std::fs::remove_dir_all(tree.0.join("m".repeat(200))).unwrap();
    // Directories nested past what a path can name, each name well within a name's length.
    let mut deep = tree.0.join("deep");
    for _ in 0..20 {
        deep.push("d".repeat(250));
    }
    let (base, rest) = (tree.0.join("deep"), deep.strip_prefix(&tree.0).unwrap().to_path_buf());
    std::fs::create_dir(&base).unwrap();
    let mut at = std::fs::File::open(&base).unwrap();
    for name in rest.components().skip(1) {
        nix::sys::stat::mkdirat(&at, name.as_os_str(), nix::sys::stat::Mode::from_bits_truncate(0o755))
            .unwrap();
        at = std::fs::File::from(
            nix::fcntl::openat(
                &at,
                name.as_os_str(),
                nix::fcntl::OFlag::O_RDONLY,
                nix::sys::stat::Mode::empty(),
            )
            .unwrap(),
        );
    }
    let error = refused(&Arc::new(Checkpoints::new(CheckpointConfig::default())), "c5");
    assert!(error.contains("a path longer than 4096 bytes"), "{error}");
    std::process::Command::new("rm").arg("-rf").arg(&base).status().unwrap();
}

/// A command's hard links to one file, or its many files, cost a scan what it reads: another
/// link to a file read already is not read again, and past
/// [`CheckpointConfig::max_read_bytes`] a new or changed file is recorded by its metadata and
/// read by a later scan.
#[test]
fn a_scan_reads_each_file_once_and_no_more_bytes_than_its_bound() {
    let tree = Tree::new("read-bound");
    tree.write("big", &"x".repeat(1000));
    let config =
        CheckpointConfig { max_read_bytes: 2500, max_watched_dirs: 0, ..CheckpointConfig::default() };
    let checkpoints = Checkpoints::new(config);
    checkpoints.scan(&tree.0).unwrap();
    std::fs::create_dir(tree.0.join("h")).unwrap();
    for i in 0..50 {
        std::fs::hard_link(tree.0.join("big"), tree.0.join(format!("h/{i}"))).unwrap();
    }
    // The file changes: its 51 names are read as one.
    std::fs::write(tree.0.join("big"), "y".repeat(1000)).unwrap();
    let scan = checkpoints.scan(&tree.0).unwrap();
    let blobs: BTreeSet<_> = scan
        .iter()
        .filter(|(_, state)| **state != FileState::Dir)
        .map(|(path, state)| match state {
            FileState::File { blob, .. } => *blob,
            other => panic!("{} was not read: {other:?}", path.display()),
        })
        .collect();
    assert_eq!(blobs.len(), 1);
    // Five files of 1000 bytes: two are read, the rest by the next scans (once the files are
    // no longer modified so recently that a scan reads them again).
    let tree = Tree::new("read-bound-files");
    for i in 0..5 {
        tree.write(&format!("n/{i}"), &format!("{i:01000}"));
    }
    let checkpoints =
        Checkpoints::new(CheckpointConfig { max_read_bytes: 2500, ..CheckpointConfig::default() });
    let unread = |scan: &BTreeMap<PathBuf, FileState>| {
        scan.values().filter(|state| matches!(state, FileState::NotRead { .. })).count()
    };
    assert_eq!(unread(&checkpoints.scan(&tree.0).unwrap()), 3);
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(unread(&checkpoints.scan(&tree.0).unwrap()), 1);
    assert_eq!(unread(&checkpoints.scan(&tree.0).unwrap()), 0);
}

/// A sparse file (its size far past the storage it holds: a command makes thousands at no cost)
/// is recorded by its metadata, as a file too large is, not read into the store.
#[test]
fn a_sparse_file_is_not_read() {
    let tree = Tree::new("sparse");
    let file = std::fs::File::create(tree.0.join("sparse")).unwrap();
    file.set_len(1024 * 1024).unwrap();
    tree.write("small", "kept\n");
    let scan = Checkpoints::new(CheckpointConfig::default()).scan(&tree.0).unwrap();
    let (mtime, ctime, ino) = host_times(&tree.0.join("sparse"));
    assert_eq!(scan[Path::new("sparse")], FileState::TooLarge { size: 1024 * 1024, mtime, ctime, ino });
    assert!(matches!(scan[Path::new("small")], FileState::File { .. }));
}

/// Modification and status change times (nanoseconds) and inode.
fn host_times(path: &Path) -> (i128, i128, u64) {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).unwrap();
    let nanos = |secs: i64, nsec: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsec);
    (nanos(meta.mtime(), meta.mtime_nsec()), nanos(meta.ctime(), meta.ctime_nsec()), meta.ino())
}

/// A command that may write above the workspace moves the directory above it away and puts a
/// link to another directory at the root's path: no change notification comes from the
/// workspace, and the host, opening the root by its path, would put files back in the other
/// directory (or read it into the store). The root is checked to be the directory the first
/// scan opened, and the other directory is left alone.
#[test]
fn a_root_moved_away_and_replaced_by_a_link_is_refused_not_followed() {
    let tree = Tree::new("moved-root");
    let (parent, victim) = (tree.0.join("p"), tree.0.join("victim"));
    let root = parent.join("ws");
    tree.write("p/ws/passwd", "first\n");
    tree.write("victim/passwd", "VICTIM\n");
    let checkpoints = Arc::new(Checkpoints::default());
    let call = checkpoints.begin(&root, "call_1", "write").unwrap();
    std::fs::write(root.join("passwd"), "second\n").unwrap();
    assert_eq!(call.finish(), Some(1));
    std::fs::rename(&parent, tree.0.join("p.real")).unwrap();
    std::fs::create_dir(&parent).unwrap();
    std::os::unix::fs::symlink(&victim, &root).unwrap();
    let error = checkpoints.scan(&root).unwrap_err().to_string();
    assert!(error.contains("is no longer the directory this session's checkpoints began with"), "{error}");
    let undo = checkpoints.undo(&root, &UndoTarget::Last(1), "call_2", "undo").unwrap_err().to_string();
    assert!(undo.contains("no longer the directory"), "{undo}");
    assert_eq!(std::fs::read_to_string(victim.join("passwd")).unwrap(), "VICTIM\n");
    // Put back, the undo goes on.
    std::fs::remove_file(&root).unwrap();
    std::fs::remove_dir(&parent).unwrap();
    std::fs::rename(tree.0.join("p.real"), &parent).unwrap();
    checkpoints.undo(&root, &UndoTarget::Last(1), "call_3", "undo").unwrap();
    assert_eq!(std::fs::read_to_string(root.join("passwd")).unwrap(), "first\n");
    assert_eq!(std::fs::read_to_string(victim.join("passwd")).unwrap(), "VICTIM\n");
}
