//! The cost of a checkpoint on a workspace of 10,000 files: the first one (files read and stored
//! for at most `CheckpointConfig::first_read_time`), the first call (before and after), and how
//! many scans read the rest; a call where nothing changed (no change notification arrived: the last scan holds);
//! an ignored file changed (its directory is listed again, nothing else); a full scan (after an ignore file changed: every directory walked, every file's metadata
//! read, no file read); and a call that changed one file (after it, only that file's directory
//! is listed again, as the change notification names it).
//!
//! The files are 200-byte text files in 100 directories, with a `.gitignore`, and are dated an
//! hour back, and left alone for two seconds before the first checkpoint (a file modified or
//! changed in the last two seconds is read again at every scan, as its times could hide a
//! second write in the same clock tick).
//!
//! Run: `cargo bench -p tools-std --bench checkpoint` (`FILES=N`, `REPS=N` to change the
//! 10,000 files and 30 repetitions).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tools_std::checkpoint::{CheckpointConfig, Checkpoints, FileState};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The CPU time this process has used (user and system), from `/proc/self/stat`, in clock
/// ticks of 10 ms; `None` off Linux. Less sensitive than wall time to a busy machine.
fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn cpu_per(start: Option<u64>, reps: usize) -> String {
    match (start, cpu_ticks()) {
        (Some(a), Some(b)) => format!("{:.2} ms CPU", (b - a) as f64 * 10.0 / reps as f64),
        _ => "CPU time unknown".to_owned(),
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let files = env("FILES", 10_000);
    let reps = env("REPS", 30);
    let root = std::env::temp_dir().join(format!("tools-checkpoint-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    for i in 0..files {
        let dir = root.join(format!("src/m{:03}", i % 100));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("f{i:05}.rs"));
        std::fs::write(&path, format!("// file {i}\n{}\n", "x".repeat(186))).unwrap();
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(hour_ago).unwrap();
    }
    std::fs::write(root.join(".gitignore"), "target/\n*.o\n").unwrap();
    let root = std::fs::canonicalize(&root).unwrap();
    // Setting the modification time changed the change time: let it age past the two seconds.
    std::thread::sleep(Duration::from_millis(2100));

    let checkpoints = Arc::new(Checkpoints::new(CheckpointConfig::default()));
    let started = Instant::now();
    let first = checkpoints.begin(&root, "first", "bench").expect("a checkpoint");
    let first_scan = started.elapsed();
    drop(first);
    let first_call = started.elapsed();
    let unread = |checkpoints: &Checkpoints| {
        let scan = checkpoints.scan(&root).expect("a scan");
        scan.values().filter(|state| matches!(state, FileState::NotRead { .. })).count()
    };
    let left = unread(&checkpoints);
    let mut scans_to_read_all = 1;
    while unread(&checkpoints) > 0 {
        scans_to_read_all += 1;
    }

    let mut scans = Vec::new();
    let mut calls = Vec::new();
    let cpu = cpu_ticks();
    for n in 0..reps {
        let started = Instant::now();
        let guard = checkpoints.begin(&root, &format!("idle{n}"), "bench").expect("a checkpoint");
        scans.push(started.elapsed());
        assert_eq!(guard.finish(), None, "nothing changed");
        calls.push(started.elapsed());
    }
    let idle_cpu = cpu_per(cpu, reps);
    let mut full = Vec::new();
    let cpu = cpu_ticks();
    for n in 0..reps {
        // A change to an ignore file can change what is recorded anywhere: a full scan.
        std::fs::write(root.join(".gitignore"), format!("target/\n*.o\n# {n}\n")).unwrap();
        let started = Instant::now();
        let guard = checkpoints.begin(&root, &format!("full{n}"), "bench").expect("a checkpoint");
        full.push(started.elapsed());
        assert_eq!(guard.finish(), None, "nothing recorded changed");
    }
    let full_cpu = cpu_per(cpu, reps);
    let mut ignored = Vec::new();
    let cpu = cpu_ticks();
    for n in 0..reps {
        std::fs::write(root.join("src/m003/build.o"), format!("{n}")).unwrap();
        let started = Instant::now();
        let guard = checkpoints.begin(&root, &format!("ignored{n}"), "bench").expect("a checkpoint");
        ignored.push(started.elapsed());
        assert_eq!(guard.finish(), None, "nothing recorded changed");
    }
    let ignored_cpu = cpu_per(cpu, reps);
    let mut changed = Vec::new();
    let cpu = cpu_ticks();
    for n in 0..reps {
        let started = Instant::now();
        let guard = checkpoints.begin(&root, &format!("edit{n}"), "bench").expect("a checkpoint");
        std::fs::write(root.join("src/m007/f00007.rs"), format!("// changed {n}\n")).unwrap();
        assert!(guard.finish().is_some(), "one file changed");
        changed.push(started.elapsed());
    }
    let changed_cpu = cpu_per(cpu, reps);
    println!("checkpoint of {files} files ({} KB stored):", checkpoints.store_bytes() / 1024);
    println!(
        "  first checkpoint (files read for at most {:?}): {:.2} ms",
        CheckpointConfig::default().first_read_time,
        first_scan.as_secs_f64() * 1e3
    );
    println!(
        "  first call (its checkpoint before and after): {:.2} ms; {left} files still not read after one more \
         scan, none after {scans_to_read_all} scans",
        first_call.as_secs_f64() * 1e3
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("  medians of {reps}:");
    println!("  checkpoint before a call, nothing changed:      {:.3} ms", ms(median(scans)));
    println!("  a call that changed nothing (before and after): {:.3} ms ({idle_cpu})", ms(median(calls)));
    println!("  full scan (an ignore file changed):             {:.1} ms ({full_cpu})", ms(median(full)));
    println!(
        "  an ignored file changed (its directory listed): {:.2} ms ({ignored_cpu})",
        ms(median(ignored))
    );
    println!(
        "  a call that changed one file (before and after): {:.2} ms ({changed_cpu})",
        ms(median(changed))
    );
    let _ = std::fs::remove_dir_all(&root);
}
