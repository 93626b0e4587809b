use super::*;
use crate::spec::{TruncationDirection, TruncationPolicy};
use crate::testing::TempDir;
use crate::truncate::{TruncationLimits, cut_output};

fn age(path: &Path, age: Duration) {
    let file = fs::OpenOptions::new().write(true).open(path).expect("open for set_modified");
    file.set_modified(SystemTime::now() - age).expect("set_modified");
}

const DAY: Duration = Duration::from_secs(86_400);
const HOUR: Duration = Duration::from_secs(3_600);

#[test]
fn data_dir_follows_xdg_then_home() {
    let os = |s: &str| Some(OsString::from(s));
    assert_eq!(data_dir_from(os("/x/data"), os("/home/u"), false), Some(PathBuf::from("/x/data")));
    assert_eq!(
        data_dir_from(os("relative"), os("/home/u"), false),
        Some(PathBuf::from("/home/u/.local/share"))
    );
    assert_eq!(data_dir_from(None, os("/home/u"), false), Some(PathBuf::from("/home/u/.local/share")));
    assert_eq!(
        data_dir_from(os("/x/data"), os("/Users/u"), true),
        Some(PathBuf::from("/Users/u/Library/Application Support"))
    );
    assert_eq!(data_dir_from(None, None, false), None);
    assert_eq!(data_dir_from(None, os(""), false), None);
}

#[test]
fn save_then_read_back() {
    let tmp = TempDir::new("save");
    let store = OutputStore::open_dir(tmp.path().join("store")).expect("open");
    let text = "one\r\ntwo\nthree \u{1F600}\nfour";
    let r = store.save(text).expect("save").reference;
    assert!(OutputRef::is_valid(r.as_str()));
    assert!(tmp.path().join("store").join(r.as_str()).is_file());
    assert_eq!(store.read_to_string(r.as_str()).expect("read"), text);
    let page = store.read_lines(r.as_str(), 2, 2).expect("lines");
    assert_eq!(
        page,
        OutputLines {
            text: "two\nthree \u{1F600}\n".into(),
            first_line: 2,
            lines: 2,
            total_lines: 4,
            total_bytes: text.len()
        }
    );
    let first = store.read_lines(r.as_str(), 0, 1).expect("lines");
    assert_eq!((first.text.as_str(), first.first_line, first.lines), ("one\r\n", 1, 1));
    let last = store.read_lines(r.as_str(), 4, 10).expect("lines");
    assert_eq!((last.text.as_str(), last.lines), ("four", 1));
    let past = store.read_lines(r.as_str(), 5, 10).expect("lines");
    assert_eq!((past.text.as_str(), past.lines, past.total_lines), ("", 0, 4));
    let none = store.read_lines(r.as_str(), 2, 0).expect("lines");
    assert_eq!((none.text.as_str(), none.lines), ("", 0));
}

#[test]
fn line_pages_with_trailing_newline() {
    let page = lines_page("a\nb\n", 2, 5);
    assert_eq!((page.text.as_str(), page.lines, page.total_lines), ("b\n", 1, 2));
    let past = lines_page("a\nb\n", 3, 5);
    assert_eq!((past.text.as_str(), past.lines), ("", 0));
    let empty = lines_page("", 1, 5);
    assert_eq!((empty.text.as_str(), empty.lines, empty.total_lines), ("", 0, 0));
}

#[test]
fn invalid_and_unknown_references_are_rejected() {
    let tmp = TempDir::new("invalid");
    let store = OutputStore::open_dir(tmp.path()).expect("open");
    fs::write(tmp.path().parent().expect("parent").join("secret.txt"), "secret").ok();
    for bad in ["../secret.txt", "/etc/passwd", "out_x", "", "out_20261121T163000_ab12cd34/../x"] {
        assert!(matches!(store.open(bad), Err(OutputStoreError::InvalidReference(_))), "{bad}");
        assert!(matches!(store.read_to_string(bad), Err(OutputStoreError::InvalidReference(_))), "{bad}");
        assert!(matches!(store.read_lines(bad, 1, 1), Err(OutputStoreError::InvalidReference(_))), "{bad}");
    }
    let missing = "out_20261121T163000_ab12cd34";
    let error = store.read_to_string(missing).expect_err("missing");
    assert!(matches!(&error, OutputStoreError::NotFound(r) if r.as_str() == missing));
    assert_eq!(
        error.to_string(),
        "no stored output out_20261121T163000_ab12cd34: it has expired or was saved elsewhere; run the \
         original request again"
    );
    let tool_error = ToolError::from(OutputStoreError::InvalidReference("../x".into()));
    assert_eq!(tool_error.kind(), crate::error::ErrorKind::InvalidArguments);
    assert_eq!(
        tool_error.message(),
        "\"../x\" is not an output reference: use the reference from a truncation notice, such as \
         out_20261121T163000_ab12cd34"
    );
    assert_eq!(ToolError::from(error).kind(), crate::error::ErrorKind::NotFound);
}

#[cfg(unix)]
#[test]
fn directory_is_0700_and_files_0600() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = TempDir::new("perms");
    let dir = tmp.path().join("a").join("store");
    let store = OutputStore::open_dir(&dir).expect("open");
    assert_eq!(fs::metadata(&dir).expect("dir").permissions().mode() & 0o777, 0o700);
    let r = store.save("x").expect("save").reference;
    let file = dir.join(r.as_str());
    assert_eq!(fs::metadata(&file).expect("file").permissions().mode() & 0o777, 0o600);

    // An existing directory with looser permissions is made private when opened.
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
    OutputStore::open_dir(&dir).expect("reopen");
    assert_eq!(fs::metadata(&dir).expect("dir").permissions().mode() & 0o777, 0o700);
}

#[test]
fn opening_a_store_deletes_only_expired_outputs() {
    let tmp = TempDir::new("retention");
    let dir = tmp.path().join("store");
    let store = OutputStore::open_dir(&dir).expect("open");
    let old = store.save("old").expect("save").reference;
    let fresh = store.save("fresh").expect("save").reference;
    let almost = store.save("almost").expect("save").reference;
    age(&dir.join(old.as_str()), 8 * DAY);
    age(&dir.join(almost.as_str()), 6 * DAY);
    // Old files not named like a reference are not ours.
    let foreign = dir.join("notes.txt");
    fs::write(&foreign, "keep").expect("write");
    age(&foreign, 30 * DAY);
    // A directory named like a reference is not a regular file.
    let subdir = dir.join("out_20000101T000000_00000000");
    fs::create_dir(&subdir).expect("mkdir");

    // The sweep on the first open was an hour ago.
    age(&dir.join(SWEEP_STAMP), HOUR);
    let reopened = OutputStore::open_dir(&dir).expect("reopen");
    assert!(!dir.join(old.as_str()).exists());
    assert_eq!(reopened.read_to_string(fresh.as_str()).expect("fresh"), "fresh");
    assert_eq!(reopened.read_to_string(almost.as_str()).expect("almost"), "almost");
    assert!(foreign.exists());
    assert!(subdir.is_dir());
    assert!(matches!(reopened.read_to_string(old.as_str()), Err(OutputStoreError::NotFound(_))));
    assert_eq!(
        reopened.cleanup().expect("cleanup"),
        CleanupReport { removed: 0, trimmed: 0, kept: 2, skipped: 2 }
    );
}

#[cfg(unix)]
#[test]
fn a_removed_directory_is_recreated_private() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = TempDir::new("recreate");
    let dir = tmp.path().join("store");
    let store = OutputStore::open_dir(&dir).expect("open");
    fs::remove_dir_all(&dir).expect("remove");
    let r = store.save("again").expect("save").reference;
    assert_eq!(store.read_to_string(r.as_str()).expect("read"), "again");
    assert_eq!(fs::metadata(&dir).expect("dir").permissions().mode() & 0o777, 0o700);
}

#[test]
fn custom_retention_and_periodic_cleanup_on_save() {
    let tmp = TempDir::new("periodic");
    let store = OutputStore::builder()
        .dir(tmp.path())
        .retention(Duration::from_secs(60))
        .cleanup_interval(Duration::ZERO)
        .open()
        .expect("open");
    assert_eq!(store.retention(), Duration::from_secs(60));
    let first = store.save("first").expect("save").reference;
    age(&tmp.path().join(first.as_str()), Duration::from_secs(120));
    let second = store.save("second").expect("save").reference;
    assert!(!tmp.path().join(first.as_str()).exists());
    assert!(tmp.path().join(second.as_str()).exists());
}

#[cfg(unix)]
#[test]
fn cleanup_never_follows_symlinks() {
    use std::os::unix::fs::symlink;
    let tmp = TempDir::new("symlink");
    let dir = tmp.path().join("store");
    let outside_dir = tmp.path().join("outside");
    fs::create_dir_all(&outside_dir).expect("mkdir");
    let outside_file = tmp.path().join("outside.txt");
    fs::write(&outside_file, "precious").expect("write");
    age(&outside_file, 30 * DAY);
    let outside_nested = outside_dir.join("out_20000101T000000_00000001");
    fs::write(&outside_nested, "precious too").expect("write");
    age(&outside_nested, 30 * DAY);

    let store = OutputStore::open_dir(&dir).expect("open");
    let link = dir.join("out_20000101T000000_00000002");
    symlink(&outside_file, &link).expect("symlink");
    let dir_link = dir.join("out_20000101T000000_00000003");
    symlink(&outside_dir, &dir_link).expect("symlink");

    let report = store.cleanup().expect("cleanup");
    assert_eq!(report, CleanupReport { removed: 0, trimmed: 0, kept: 0, skipped: 2 });
    assert_eq!(fs::read_to_string(&outside_file).expect("outside file"), "precious");
    assert_eq!(fs::read_to_string(&outside_nested).expect("outside nested"), "precious too");
    assert!(fs::symlink_metadata(&link).expect("link kept").file_type().is_symlink());
    assert!(fs::symlink_metadata(&dir_link).expect("link kept").file_type().is_symlink());

    // Reading through a symlink is refused as well.
    assert!(matches!(
        store.read_to_string(link.file_name().and_then(|n| n.to_str()).expect("name")),
        Err(OutputStoreError::NotFound(_))
    ));
    assert!(matches!(store.open("out_20000101T000000_00000002"), Err(OutputStoreError::NotFound(_))));
}

#[test]
fn a_writer_streams_one_output() {
    let tmp = TempDir::new("writer");
    let store = OutputStore::open_dir(tmp.path()).expect("open");
    let mut writer = store.create().expect("create");
    let reference = writer.reference().clone();
    for chunk in ["one\n", "two ", "\u{1F600}\n", "three"] {
        writer.write_str(chunk).expect("write");
    }
    let stored = writer.finish().expect("finish");
    assert_eq!(
        stored,
        StoredOutput {
            reference: reference.clone(),
            stored_bytes: 18,
            total_bytes: 18,
            limit: DEFAULT_MAX_OUTPUT_BYTES
        }
    );
    assert!(!stored.is_cut());
    assert_eq!(store.read_to_string(reference.as_str()).expect("read"), "one\ntwo \u{1F600}\nthree");
}

#[test]
fn the_stored_copy_stops_at_the_size_limit_on_a_character_boundary() {
    let tmp = TempDir::new("cap");
    let store = OutputStore::builder().dir(tmp.path()).max_output_bytes(10).open().expect("open");
    assert_eq!(store.max_output_bytes(), 10);
    let mut writer = store.create().expect("create");
    writer.write_str("abcdefgh").expect("write");
    // Two bytes of room, a four-byte character: nothing of it is stored, nor anything after it.
    writer.write_str("\u{1F600}").expect("write");
    writer.write_str("z").expect("write");
    let stored = writer.finish().expect("finish");
    assert_eq!((stored.stored_bytes, stored.total_bytes, stored.limit), (8, 13, 10));
    assert!(stored.is_cut());
    assert_eq!(store.read_to_string(stored.reference.as_str()).expect("read"), "abcdefgh");
    assert_eq!(fs::metadata(tmp.path().join(stored.reference.as_str())).expect("file").len(), 8);

    let exact = store.save("0123456789").expect("save");
    assert_eq!((exact.stored_bytes, exact.total_bytes), (10, 10));
    assert!(!exact.is_cut());
    let over = store.save("0123456789\n").expect("save");
    assert_eq!(store.read_to_string(over.reference.as_str()).expect("read"), "0123456789");

    // Bytes given as UTF-8, and text counted without being given: the copy ends there.
    let mut writer = store.create().expect("create");
    writer.write_utf8(b"ab\xffc").expect("write");
    writer.skip(100);
    writer.write_utf8(b"d").expect("write");
    let stored = writer.finish().expect("finish");
    assert_eq!((stored.stored_bytes, stored.total_bytes), (6, 107));
    assert_eq!(store.read_to_string(stored.reference.as_str()).expect("read"), "ab\u{FFFD}c");
}

#[test]
fn a_cut_output_is_saved_and_its_notice_says_where_and_how_much() {
    let tmp = TempDir::new("savecut");
    let hint = ReadHint::new("Full output saved as {ref}; {read} from line {offset}.").expect("hint");
    let store =
        OutputStore::builder().dir(tmp.path()).max_output_bytes(12).read_hint(hint).open().expect("open");
    let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    let mut output = ToolOutput::text(text.clone());
    let limits = TruncationLimits::new(2, 1000, TruncationDirection::Head);
    let cut = cut_output(&mut output, &TruncationPolicy::default(), &limits).expect("over the limits");
    assert_eq!(cut.document(), text);
    let info = store.save_cut(cut, &mut output);
    let reference = info.output_ref.clone().expect("saved");
    assert_eq!((info.stored_bytes, info.store_limit), (Some(12), Some(12)));
    assert_eq!(store.read_to_string(&reference).expect("stored"), "line 1\nline ");
    assert_eq!(
        output.text_content(),
        format!(
            "line 1\nline 2\n\n[Output truncated: showing the first 2 of 10 lines (14 of 71 bytes). Full output saved as \
             {reference}; read more from line 3. The saved copy stops at the store's limit of 12 bytes.]"
        )
    );
    let metadata = &output.metadata[crate::truncate::METADATA_KEY];
    assert_eq!((metadata["stored_bytes"].as_u64(), metadata["store_limit"].as_u64()), (Some(12), Some(12)));
}

#[cfg(unix)]
#[test]
fn open_refuses_a_symlink_or_a_fifo_planted_in_the_store() {
    use std::os::unix::fs::symlink;
    let tmp = TempDir::new("planted");
    let dir = tmp.path().join("store");
    let store = OutputStore::open_dir(&dir).expect("open");
    let secret = tmp.path().join("secret.txt");
    fs::write(&secret, "secret").expect("write");
    let real = store.save("mine").expect("save").reference;

    // A link to a file outside, and a link to an output inside: neither is followed.
    let outside = "out_20000101T000000_0000000a";
    symlink(&secret, dir.join(outside)).expect("symlink");
    let inside = "out_20000101T000000_0000000b";
    symlink(dir.join(real.as_str()), dir.join(inside)).expect("symlink");
    for link in [outside, inside] {
        assert!(
            matches!(store.open(link), Err(OutputStoreError::NotFound(r)) if r.as_str() == link),
            "{link}"
        );
        assert!(matches!(store.read_to_string(link), Err(OutputStoreError::NotFound(_))), "{link}");
        assert!(matches!(store.read_lines(link, 1, 1), Err(OutputStoreError::NotFound(_))), "{link}");
    }
    // A FIFO would block a plain open until a writer came; it is refused at once.
    let fifo = "out_20000101T000000_0000000c";
    let made = std::process::Command::new("mkfifo").arg(dir.join(fifo)).status().expect("mkfifo");
    assert!(made.success());
    assert!(matches!(store.open(fifo), Err(OutputStoreError::NotFound(_))));
    // A directory named like a reference is not an output either.
    let subdir = "out_20000101T000000_0000000d";
    fs::create_dir(dir.join(subdir)).expect("mkdir");
    assert!(matches!(store.open(subdir), Err(OutputStoreError::NotFound(_))));
    assert_eq!(store.read_to_string(real.as_str()).expect("the real output"), "mine");
}

#[cfg(unix)]
#[test]
fn the_store_directory_swapped_for_a_link_is_not_followed() {
    use std::os::unix::fs::symlink;
    let tmp = TempDir::new("swapped");
    let dir = tmp.path().join("store");
    let store = OutputStore::open_dir(&dir).expect("open");
    let real = store.save("mine").expect("save").reference;
    // Someone moves the store away and points its path at a directory of their own with a file
    // of the same name: reads still go to the directory the store opened.
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).expect("mkdir");
    fs::write(elsewhere.join(real.as_str()), "theirs").expect("write");
    fs::rename(&dir, tmp.path().join("moved")).expect("move");
    symlink(&elsewhere, &dir).expect("symlink");
    assert_eq!(store.read_to_string(real.as_str()).expect("read"), "mine");
}

#[test]
fn a_sweep_by_one_store_spares_the_next_opened_within_the_interval() {
    let tmp = TempDir::new("stamp");
    let dir = tmp.path().join("store");
    let first = OutputStore::open_dir(&dir).expect("open");
    let expired = first.save("expired").expect("save").reference;
    age(&dir.join(expired.as_str()), 8 * DAY);

    // Another process opening the store a minute after the first one's sweep does not sweep.
    age(&dir.join(SWEEP_STAMP), Duration::from_secs(60));
    OutputStore::open_dir(&dir).expect("open within the interval");
    assert!(dir.join(expired.as_str()).exists());

    // Once the interval has passed since that sweep, the next store opened sweeps, and dates
    // the stamp anew.
    age(&dir.join(SWEEP_STAMP), HOUR);
    OutputStore::open_dir(&dir).expect("open after the interval");
    assert!(!dir.join(expired.as_str()).exists());
    let stamp = fs::symlink_metadata(dir.join(SWEEP_STAMP)).expect("stamp");
    assert!(stamp.modified().expect("mtime").elapsed().unwrap_or_default() < Duration::from_secs(60));
    // The stamp is the store's own: not reported, not readable as an output.
    assert_eq!(first.cleanup().expect("cleanup"), CleanupReport::default());
    assert!(matches!(first.read_to_string(SWEEP_STAMP), Err(OutputStoreError::InvalidReference(_))));
}

#[test]
fn a_retention_shorter_than_the_interval_bounds_the_time_between_sweeps() {
    let tmp = TempDir::new("short");
    let open =
        || OutputStore::builder().dir(tmp.path()).retention(Duration::from_secs(60)).open().expect("open");
    let store = open();
    let first = store.save("first").expect("save").reference;
    age(&tmp.path().join(first.as_str()), Duration::from_secs(120));
    age(&tmp.path().join(SWEEP_STAMP), Duration::from_secs(61));
    open();
    assert!(!tmp.path().join(first.as_str()).exists());
}

#[test]
fn a_stamp_from_the_future_does_not_stop_the_sweep() {
    let tmp = TempDir::new("future");
    let store = OutputStore::open_dir(tmp.path()).expect("open");
    let expired = store.save("expired").expect("save").reference;
    age(&tmp.path().join(expired.as_str()), 8 * DAY);
    let stamp = fs::OpenOptions::new().write(true).open(tmp.path().join(SWEEP_STAMP)).expect("stamp");
    stamp.set_modified(SystemTime::now() + DAY).expect("set_modified");
    OutputStore::open_dir(tmp.path()).expect("reopen");
    assert!(!tmp.path().join(expired.as_str()).exists());
}

#[cfg(unix)]
#[test]
fn a_stamp_that_is_not_a_regular_file_does_not_stop_the_sweep_and_is_replaced() {
    use std::os::unix::fs::symlink;
    let tmp = TempDir::new("planted");
    let dir = tmp.path().join("store");
    let store = OutputStore::open_dir(&dir).expect("open");
    let outside = tmp.path().join("outside.txt");
    fs::write(&outside, "recent").expect("write");
    let outside_modified = fs::metadata(&outside).expect("outside").modified().expect("mtime");

    // A link to a recent file, a FIFO (which would block an open for writing) and a directory.
    type Plant<'a> = (&'a str, &'a dyn Fn(&Path));
    let plant: [Plant<'_>; 3] = [
        ("link", &|stamp| symlink(&outside, stamp).expect("symlink")),
        ("fifo", &|stamp| {
            let status = std::process::Command::new("mkfifo").arg(stamp).status().expect("mkfifo");
            assert!(status.success());
        }),
        ("directory", &|stamp| fs::create_dir(stamp).expect("mkdir")),
    ];
    for (what, plant) in plant {
        let expired = store.save("expired").expect("save").reference;
        age(&dir.join(expired.as_str()), 8 * DAY);
        fs::remove_file(dir.join(SWEEP_STAMP)).expect("remove stamp");
        plant(&dir.join(SWEEP_STAMP));
        OutputStore::open_dir(&dir).expect("reopen");
        assert!(!dir.join(expired.as_str()).exists(), "a {what} as the stamp stopped the sweep");
        let stamp = fs::symlink_metadata(dir.join(SWEEP_STAMP)).expect("stamp");
        if what == "directory" {
            // Not removable as a file: left alone, and every open sweeps.
            assert!(stamp.is_dir());
            fs::remove_dir(dir.join(SWEEP_STAMP)).expect("rmdir");
            store.cleanup().expect("cleanup");
        } else {
            assert!(stamp.is_file(), "the {what} was not replaced by a stamp");
        }
    }
    assert_eq!(fs::read_to_string(&outside).expect("outside"), "recent");
    assert_eq!(fs::metadata(&outside).expect("outside").modified().expect("mtime"), outside_modified);
}

#[test]
fn past_the_total_size_the_oldest_outputs_go_first() {
    let tmp = TempDir::new("total");
    // Written by a store of the default total size, then swept by one of 250 bytes.
    let writing = OutputStore::builder().dir(tmp.path()).open().expect("open");
    let text = "x".repeat(100);
    let saved: Vec<OutputRef> = (0..4).map(|_| writing.save(&text).expect("save").reference).collect();
    let store = OutputStore::builder().dir(tmp.path()).max_total_bytes(250).open().expect("open");
    // Written an hour, a minute and a second apart, the first the oldest; the last is newest.
    age(&tmp.path().join(saved[0].as_str()), 3 * HOUR);
    age(&tmp.path().join(saved[1].as_str()), HOUR);
    age(&tmp.path().join(saved[2].as_str()), Duration::from_secs(60));
    let report = store.cleanup().expect("cleanup");
    assert_eq!(report, CleanupReport { removed: 0, trimmed: 2, kept: 2, skipped: 0 });
    assert!(!tmp.path().join(saved[0].as_str()).exists());
    assert!(!tmp.path().join(saved[1].as_str()).exists());
    assert_eq!(store.read_to_string(saved[2].as_str()).expect("third"), text);
    assert_eq!(store.read_to_string(saved[3].as_str()).expect("fourth"), text);
    // Under the limit, nothing more goes.
    assert_eq!(
        store.cleanup().expect("cleanup"),
        CleanupReport { removed: 0, trimmed: 0, kept: 2, skipped: 0 }
    );
}

#[test]
fn a_store_that_stored_its_total_size_sweeps_before_its_next_output() {
    let tmp = TempDir::new("volume");
    // No sweep is due by the time for an hour: only the volume written triggers one.
    let store = OutputStore::builder().dir(tmp.path()).max_total_bytes(250).open().expect("open");
    let text = "x".repeat(100);
    let saved: Vec<OutputRef> = (0..3).map(|_| store.save(&text).expect("save").reference).collect();
    // Written a minute apart, the first the oldest (outputs of the same instant have no order).
    for (n, reference) in saved.iter().enumerate() {
        age(&tmp.path().join(reference.as_str()), Duration::from_secs(60 * (3 - n as u64)));
    }
    // 300 bytes stored since the last sweep: the next output is created after one, which brings
    // the store under 250 bytes by deleting the oldest.
    let fourth = store.save(&text).expect("save").reference;
    assert!(!tmp.path().join(saved[0].as_str()).exists());
    for kept in [&saved[1], &saved[2], &fourth] {
        assert_eq!(store.read_to_string(kept.as_str()).expect("kept"), text);
    }
}

/// A link planted at the store's own name (to a directory of someone else's, a system one) is
/// refused: the store is neither opened there nor made private there.
#[cfg(unix)]
#[test]
fn a_link_planted_at_the_stores_name_is_refused_and_its_target_left_alone() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let tmp = TempDir::new("planted");
    let target = tmp.path().join("cron.d");
    fs::create_dir(&target).expect("mkdir");
    fs::set_permissions(&target, fs::Permissions::from_mode(0o755)).expect("chmod");
    let dir = tmp.path().join("outputs");
    symlink(&target, &dir).expect("symlink");
    let error = OutputStore::open_dir(&dir).expect_err("a link is not the store");
    assert!(error.to_string().contains("is not a directory"), "{error}");
    let mode = fs::metadata(&target).expect("target").permissions().mode() & 0o777;
    assert_eq!(mode, 0o755, "the link's target was made private");
    assert_eq!(fs::read_dir(&target).expect("list").count(), 0, "something was written there");
    // A store made by name where nothing was is private.
    let made = tmp.path().join("made/store");
    OutputStore::open_dir(&made).expect("open");
    assert_eq!(fs::metadata(&made).expect("store").permissions().mode() & 0o777, 0o700);
}
