//! `shut_in`: a helper process (a script's interpreter) that keeps no descriptor but its three,
//! opens no file and connects nowhere.

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
    let report = serde_json::json!({
        "enforced": enforced,
        "kept": kept,
        "read": format!("{read:?}"),
        "made": format!("{made:?}"),
        "tcp": format!("{tcp:?}"),
    });
    println!("{REPORT}{report}");
}

#[test]
fn a_process_shut_in_keeps_no_descriptor_opens_no_file_and_connects_nowhere() {
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
    let refused = format!("{:?}", Err::<(), _>(Some(nix::libc::EACCES)));
    assert_eq!(report["read"], refused.as_str(), "{report}");
    assert_eq!(report["made"], refused.as_str(), "{report}");
    assert_eq!(report["tcp"], refused.as_str(), "{report}");
}
