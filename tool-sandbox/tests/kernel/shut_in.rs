//! `shut_in`: a helper process (a script's interpreter) that keeps no descriptor but its three,
//! opens no file, makes no socket and starts no process, and still makes threads.

use std::os::fd::AsRawFd;
use std::process::Command;

use super::layers;

/// Set in the process [`shut_in_probe`] runs in: the descriptor it inherited and a TCP port that
/// listens, as `FD:PORT`.
const PROBE: &str = "TOOL_SANDBOX_TEST_SHUT_IN";
/// The line of the probe's output that holds its report.
const REPORT: &str = "shut-in report: ";

/// Run alone in a process of its own by the test below: shuts itself in, then tries.
#[test]
fn shut_in_probe() {
    let Ok(probe) = std::env::var(PROBE) else { return };
    let (fd, port) = probe.split_once(':').unwrap();
    let (fd, port): (i32, u16) = (fd.parse().unwrap(), port.parse().unwrap());
    let enforced = tool_sandbox::shut_in().unwrap();
    // Closing a descriptor that is not open fails (`EBADF`).
    let kept = nix::unistd::close(fd).is_ok();
    let read = std::fs::read("/etc/hostname").map(|_| ()).map_err(|e| e.raw_os_error());
    let made = std::fs::write(std::env::temp_dir().join("shut-in-probe"), "x").map_err(|e| e.raw_os_error());
    let tcp = std::net::TcpStream::connect(("127.0.0.1", port)).map(|_| ()).map_err(|e| e.raw_os_error());
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").map(|_| ()).map_err(|e| e.raw_os_error());
    let unix = std::os::unix::net::UnixDatagram::unbound().map(|_| ()).map_err(|e| e.raw_os_error());
    let spawned = Command::new("/bin/true").status().map(|_| ()).map_err(|e| e.raw_os_error());
    let looked = std::fs::metadata("/etc/hostname").map(|_| ()).map_err(|e| e.raw_os_error());
    // What it may still do: threads, time, random bytes, its own memory.
    let thread = std::thread::spawn(|| 6 * 7).join().ok();
    let report = serde_json::json!({
        "enforced": enforced,
        "kept": kept,
        "read": format!("{read:?}"),
        "made": format!("{made:?}"),
        "tcp": format!("{tcp:?}"),
        "udp": format!("{udp:?}"),
        "unix": format!("{unix:?}"),
        "spawned": format!("{spawned:?}"),
        "looked": format!("{looked:?}"),
        "thread": thread,
        "vector": vec![0u8; 64 << 20].len(),
    });
    println!("{REPORT}{report}");
}

#[test]
fn a_process_shut_in_keeps_no_descriptor_opens_no_file_connects_nowhere_and_starts_nothing() {
    if !layers() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // A descriptor the process inherits (no close-on-exec), as one its parent left open.
    let file = std::fs::File::open("/etc/hostname").unwrap();
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty())).unwrap();
    let inherited = file.as_raw_fd();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "shut_in::shut_in_probe", "--nocapture", "--test-threads=1", "-q"])
        .env(PROBE, format!("{inherited}:{port}"))
        .output()
        .unwrap();
    drop(file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Some(line) = stdout.lines().find_map(|l| l.strip_prefix(REPORT)) else {
        panic!("the probe said nothing: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    };
    let report: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(report["enforced"], true, "{report}");
    assert_eq!(report["kept"], false, "the inherited descriptor is still open: {report}");
    // Seccomp refuses each of these (`EPERM`) before Landlock is asked (which would refuse the
    // files and TCP too: it was entered, `enforced`).
    let refused = format!("{:?}", Err::<(), _>(Some(nix::libc::EPERM)));
    for what in ["read", "made", "tcp", "udp", "unix", "spawned", "looked"] {
        assert_eq!(report[what], refused.as_str(), "{what}: {report}");
    }
    assert_eq!(report["thread"], 42, "{report}");
    assert_eq!(report["vector"], 64 << 20, "{report}");
}
