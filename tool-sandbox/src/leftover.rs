//! Placeholders left behind. Each placeholder is marked, in an extended attribute, with the
//! process that made it (the boot, its pid namespace, its pid and start time). A process killed
//! before it could remove its placeholders (SIGKILL, a crash, the machine's end) leaves empty
//! directories such as `CLAUDE.md` or `.mcp.json` in the workspace, and a process leaves one
//! that another process's command still has a mount on; the next command that wants such a
//! name removes one that is still as it was made, once its maker is gone (or is the process of
//! that command, which no longer holds it; with the [lock](crate::placeholder_lock) held, any
//! process of this pid namespace) and no other mount namespace has a mount on it (a command
//! that outlived its maker is still protected by it). On a file system without user extended
//! attributes nothing is marked, and such leftovers stay until removed by hand.

use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::OnceLock;

use rustix::fs::XattrFlags;

/// The attribute's name (`user.`: the owner of a file may set it).
const ATTRIBUTE: &str = "user.tools.placeholder";

/// The process a marker names.
#[derive(Debug, PartialEq, Eq)]
struct Maker {
    /// The start of `/proc/sys/kernel/random/boot_id` (32 random bits).
    boot: String,
    /// The inode of its pid namespace: pids of another one cannot be looked up here.
    pid_namespace: u64,
    pid: i32,
    /// Clock ticks after boot: with the pid, the process's identity.
    start: u64,
}

impl Maker {
    /// This process, when it can be named.
    fn this() -> Option<&'static Maker> {
        static THIS: OnceLock<Option<Maker>> = OnceLock::new();
        THIS.get_or_init(|| {
            // In a pid namespace without a `/proc` of its own, `/proc` names other processes.
            let pid = std::process::id();
            if std::fs::read_link("/proc/self").ok()? != Path::new(&pid.to_string()) {
                return None;
            }
            // Short enough for the marker to fit in the inode (ext4 keeps about 90 bytes of
            // attributes there; beyond, each placeholder would cost a block of its own).
            let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
            let boot = boot.get(..8)?.to_owned();
            let pid_namespace = std::fs::metadata("/proc/self/ns/pid").ok()?.ino();
            let start = crate::process_tree::start_of(pid as i32)?;
            Some(Maker { boot, pid_namespace, pid: pid as i32, start })
        })
        .as_ref()
    }

    fn text(&self) -> String {
        format!("{} {} {} {}", self.boot, self.pid_namespace, self.pid, self.start)
    }

    fn parse(text: &str) -> Option<Maker> {
        let mut fields = text.split(' ');
        let maker = Maker {
            boot: fields.next()?.to_owned(),
            pid_namespace: fields.next()?.parse().ok()?,
            pid: fields.next()?.parse().ok()?,
            start: fields.next()?.parse().ok()?,
        };
        fields.next().is_none().then_some(maker)
    }

    /// Whether the process is gone (of an earlier boot, or of this pid namespace and not
    /// running), or is this one: a placeholder this process left while another's command had a
    /// mount on it, and that no command of this process holds now (the caller knows). With the
    /// [lock](crate::placeholder_lock) held, any process of this pid namespace: none can be
    /// about to bind it then.
    fn let_go(&self, locked: bool) -> bool {
        let Some(this) = Maker::this() else { return false };
        self == this
            || self.boot != this.boot
            || (self.pid_namespace == this.pid_namespace
                && (locked || !crate::process_tree::is_running(self.pid, self.start)))
    }
}

/// Marks `entry`, a placeholder this process has just made (where the file system keeps no
/// such attribute, it stays unmarked).
pub(crate) fn mark(entry: impl AsFd) {
    if let Some(this) = Maker::this() {
        let _ = rustix::fs::fsetxattr(entry, ATTRIBUTE, this.text().as_bytes(), XattrFlags::empty());
    }
}

/// Whether `entry` (open, not through a link) is marked as a placeholder left behind: owned by
/// this user, and marked by a process that is gone (or by this one, no longer holding it; with
/// the lock held, `locked`, by any process of this pid namespace). Nothing
/// the marker says is trusted beyond whether to look further (a command may write it, through a
/// second path to the workspace where its own mounts do not make it read-only): the caller
/// removes it only if no mount is made on it in another mount namespace
/// ([`MountsElsewhere`](crate::process_tree::MountsElsewhere)), which makes its removal as safe
/// as its maker's, whoever wrote the marker.
pub(crate) fn is_left_behind(entry: impl AsFd, locked: bool) -> bool {
    let Ok(stat) = rustix::fs::fstat(&entry) else { return false };
    if stat.st_uid != rustix::process::geteuid().as_raw() {
        return false;
    }
    let mut value = [0u8; 160];
    let Ok(len) = rustix::fs::fgetxattr(&entry, ATTRIBUTE, &mut value[..]) else { return false };
    let maker = std::str::from_utf8(&value[..len]).ok().and_then(Maker::parse);
    maker.is_some_and(|maker| maker.let_go(locked))
}

#[cfg(test)]
mod tests {
    use super::Maker;

    #[test]
    fn a_marker_names_this_process_and_is_read_back() {
        let this = Maker::this().expect("this process can be named");
        assert_eq!(Maker::parse(&this.text()).as_ref(), Some(this));
        assert!(this.let_go(false), "this process's own, no longer held");
        // A process of another boot is gone; of another pid namespace, it cannot be told.
        let other_boot = Maker { boot: "another".into(), ..Maker::parse(&this.text()).unwrap() };
        assert!(other_boot.let_go(false));
        let elsewhere = Maker {
            pid_namespace: this.pid_namespace + 1,
            pid: i32::MAX,
            ..Maker::parse(&this.text()).unwrap()
        };
        assert!(!elsewhere.let_go(false) && !elsewhere.let_go(true));
        // This pid with another start is a process that ended (and whose pid was taken again).
        let ended = Maker { start: this.start + 1, ..Maker::parse(&this.text()).unwrap() };
        assert!(ended.let_go(false));
        // Another process that runs: only with the lock held.
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let pid = child.id() as i32;
        let running = Maker {
            pid,
            start: crate::process_tree::start_of(pid).unwrap(),
            ..Maker::parse(&this.text()).unwrap()
        };
        let (unlocked, locked) = (running.let_go(false), running.let_go(true));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!unlocked && locked);
        for bad in ["", "a b c", "a 1 2 3 4", "a x 2 3", "a 1 -x 3"] {
            assert!(Maker::parse(bad).is_none(), "{bad}");
        }
    }
}
