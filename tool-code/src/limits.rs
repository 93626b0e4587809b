//! What one script may use: wall time, memory, nested calls, output; and the sentence that
//! tells the model which limit stopped its script.

use std::fmt;
use std::time::Duration;

/// The limits of one script. Each refusal is a sentence the model can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How long a script may run, its tools' calls included (default 60 s).
    pub wall_time: Duration,
    /// How much memory the interpreter may allocate (default 64 MiB).
    pub memory_bytes: usize,
    /// How many tool calls one script may make (default 1000).
    pub nested_calls: u32,
    /// How many bytes of `console.log` / `print` output and final value one script may produce
    /// (default 1 MiB). What the model then reads is cut further by the ordinary truncation.
    pub output_bytes: usize,
    /// How many tool calls of one script may run at once (default 16); the others wait.
    pub concurrent_calls: usize,
    /// When a script still runs this long after its call started, the call returns what it
    /// printed so far with the script's id, and the script runs on until its wall time:
    /// `code_output` reads what it prints next, `code_stop` stops it (default 20 s; `None`: a
    /// call waits for its script's end, as where nothing could read it later).
    pub yield_time: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall_time: Duration::from_secs(60),
            memory_bytes: 64 << 20,
            nested_calls: 1000,
            output_bytes: 1 << 20,
            concurrent_calls: 16,
            yield_time: Some(Duration::from_secs(20)),
        }
    }
}

impl Limits {
    /// These limits with another wall time.
    pub fn with_wall_time(mut self, wall_time: Duration) -> Self {
        self.wall_time = wall_time;
        self
    }

    /// These limits with another memory limit.
    pub fn with_memory_bytes(mut self, bytes: usize) -> Self {
        self.memory_bytes = bytes;
        self
    }

    /// These limits with another number of tool calls per script.
    pub fn with_nested_calls(mut self, calls: u32) -> Self {
        self.nested_calls = calls;
        self
    }

    /// These limits with another output limit.
    pub fn with_output_bytes(mut self, bytes: usize) -> Self {
        self.output_bytes = bytes;
        self
    }

    /// These limits with another yield time (`None`: never yield).
    pub fn with_yield_time(mut self, yield_time: Option<Duration>) -> Self {
        self.yield_time = yield_time;
        self
    }

    /// These limits with another number of tool calls running at once (at least 1).
    pub fn with_concurrent_calls(mut self, calls: usize) -> Self {
        self.concurrent_calls = calls.max(1);
        self
    }
}

/// Why a script was stopped before it ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    WallTime,
    Memory,
    NestedCalls,
    Output,
    Cancelled,
    /// The script's call reached its own time limit (the dispatcher's, or the caller's).
    CallTimeLimit,
}

impl Stop {
    pub(crate) fn as_u8(self) -> u8 {
        match self {
            Stop::WallTime => 1,
            Stop::Memory => 2,
            Stop::NestedCalls => 3,
            Stop::Output => 4,
            Stop::Cancelled => 5,
            Stop::CallTimeLimit => 6,
        }
    }

    pub(crate) fn from_u8(value: u8) -> Option<Stop> {
        Some(match value {
            1 => Stop::WallTime,
            2 => Stop::Memory,
            3 => Stop::NestedCalls,
            4 => Stop::Output,
            5 => Stop::Cancelled,
            6 => Stop::CallTimeLimit,
            _ => return None,
        })
    }

    /// The sentence the model reads.
    pub(crate) fn message(self, limits: &Limits) -> StopMessage<'_> {
        StopMessage { stop: self, limits }
    }
}

pub(crate) struct StopMessage<'a> {
    stop: Stop,
    limits: &'a Limits,
}

impl fmt::Display for StopMessage<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let limits = self.limits;
        match self.stop {
            Stop::WallTime => write!(
                f,
                "The script was stopped after {}, its time limit. Do less per script (fewer or narrower tool \
                 calls, run independent calls together with Promise.all) and continue in another script.",
                seconds(limits.wall_time)
            ),
            Stop::Memory => write!(
                f,
                "The script was stopped: it used more than {}, its memory limit. Keep less in memory (process \
                 results as they come, keep only what you report) and run it again.",
                bytes(limits.memory_bytes)
            ),
            Stop::NestedCalls => write!(
                f,
                "The script was stopped: it made more than {} tool calls, the limit per script. Narrow the \
                 calls (one search over a directory rather than one per file) or split the work into several \
                 scripts.",
                limits.nested_calls
            ),
            Stop::Output => write!(
                f,
                "The script was stopped: its output passed {}, the limit per script. Print less (counts, the \
                 lines that matter, a summary) and run it again.",
                bytes(limits.output_bytes)
            ),
            Stop::Cancelled => f.write_str("The script was cancelled before it finished."),
            Stop::CallTimeLimit => write!(
                f,
                "The script was stopped: its call reached its time limit before the script ended (a script \
                 alone may run {}). Do less in one script (fewer or narrower calls, independent calls together \
                 with Promise.all), or split the work into several scripts.",
                seconds(limits.wall_time)
            ),
        }
    }
}

pub(crate) fn seconds(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis.is_multiple_of(1000) { format!("{} s", millis / 1000) } else { format!("{millis} ms") }
}

pub(crate) fn bytes(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stop_names_its_limit() {
        let limits = Limits::default();
        assert!(Stop::WallTime.message(&limits).to_string().contains("after 60 s, its time limit"));
        assert!(Stop::Memory.message(&limits).to_string().contains("more than 64 MiB"));
        assert!(Stop::NestedCalls.message(&limits).to_string().contains("more than 1000 tool calls"));
        assert!(Stop::Output.message(&limits).to_string().contains("passed 1 MiB"));
        let short = Limits::default().with_wall_time(Duration::from_millis(250)).with_output_bytes(100);
        assert!(Stop::WallTime.message(&short).to_string().contains("after 250 ms"));
        assert!(Stop::Output.message(&short).to_string().contains("passed 100 bytes"));
    }

    #[test]
    fn stops_round_trip_through_their_number() {
        for stop in [Stop::WallTime, Stop::Memory, Stop::NestedCalls, Stop::Output, Stop::Cancelled] {
            assert_eq!(Stop::from_u8(stop.as_u8()), Some(stop));
        }
        assert_eq!(Stop::from_u8(0), None);
    }
}
