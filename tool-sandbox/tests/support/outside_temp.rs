// Included by the tests that check what sandboxed commands may not write (`include!`): they need
// a directory that is neither the temporary directory nor beneath it, which the sandbox lets
// commands write. Cargo's test directory is used unless the target directory itself is beneath
// the temporary directory (a clone in `/tmp`, say); then `/var/tmp`, then the home directory.

/// A base directory for test directories outside every directory sandboxed commands may write
/// besides the workspace (`$TMPDIR` or `/tmp`, and `/dev/shm`): one of this test process's own,
/// made on first use, when the directories of test processes that have ended are removed (a
/// failed test's are kept until then, to be looked at).
fn outside_temp_base() -> std::path::PathBuf {
    static OWN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    OWN.get_or_init(|| {
        let base = shared_outside_temp_base();
        for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ended = name
                .strip_prefix("run-")
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(|pid| !std::path::Path::new("/proc").join(pid.to_string()).exists());
            if ended {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let own = base.join(format!("run-{}", std::process::id()));
        std::fs::create_dir_all(&own).expect("a test directory of this process's own");
        own
    })
    .clone()
}

/// Where [`outside_temp_base`] makes the directories of test processes.
fn shared_outside_temp_base() -> std::path::PathBuf {
    let temp: Vec<std::path::PathBuf> = [std::env::temp_dir(), std::path::PathBuf::from("/dev/shm")]
        .iter()
        .filter_map(|dir| std::fs::canonicalize(dir).ok())
        .collect();
    let candidates = [
        Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some(std::path::PathBuf::from("/var/tmp/tools-sandbox-tests")),
        std::env::var_os("HOME").map(|home| std::path::Path::new(&home).join(".cache/tools-sandbox-tests")),
    ];
    for candidate in candidates.into_iter().flatten() {
        if std::fs::create_dir_all(&candidate).is_err() {
            continue;
        }
        let Ok(real) = std::fs::canonicalize(&candidate) else { continue };
        if !temp.iter().any(|dir| real.starts_with(dir)) {
            return real;
        }
    }
    panic!("no directory outside the temporary directory can be made for the sandbox tests")
}
