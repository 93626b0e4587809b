//! The permission screen over the paths a search or a walk finds by itself, and what a result says of those it stopped.

use std::sync::Arc;

use tool_runtime::hooks::{PathScreen, Screened};

use crate::Workspace;
use crate::fs::ops::Target;
use crate::text::plural;

/// The paths one call stopped, counted by the rule that stopped them.
pub(crate) struct Screening {
    screen: PathScreen,
    workspace: Arc<Workspace>,
    stopped: Vec<(Screened, usize)>,
}

impl Screening {
    pub(crate) fn new(screen: PathScreen, workspace: Arc<Workspace>) -> Self {
        Screening { screen, workspace, stopped: Vec::new() }
    }

    /// Whether `target` passes the screen; one that does not is counted.
    pub(crate) fn passes(&mut self, target: &Target) -> bool {
        if self.screen.is_empty() {
            return true;
        }
        let Some(screened) = self.screen.check(&self.workspace.absolute(target)) else { return true };
        match self.stopped.iter_mut().find(|(seen, _)| *seen == screened) {
            Some((_, count)) => *count += 1,
            None => self.stopped.push((screened, 1)),
        }
        false
    }

    /// Whether the screen stops nothing (no rule applies to found paths): a caller may skip
    /// [`Screening::passes`] then, and the lock around it.
    pub(crate) fn is_open(&self) -> bool {
        self.screen.is_empty()
    }

    /// How many paths were stopped.
    pub(crate) fn count(&self) -> usize {
        self.stopped.iter().map(|(_, n)| n).sum()
    }

    /// What the result says of the stopped paths, one line per rule (empty when none were),
    /// refusals first, then by rule, whatever order a parallel walk met them in: `noun` names
    /// them ("file", "entry"), `verb` what was not done ("searched", "listed").
    pub(crate) fn notice(&self, noun: &str, verb: &str) -> String {
        let mut text = String::new();
        let mut stopped: Vec<&(Screened, usize)> = self.stopped.iter().collect();
        stopped.sort_by(|(a, _), (b, _)| (a.ask, &a.because).cmp(&(b.ask, &b.because)));
        for (screened, n) in stopped {
            let what = plural(*n as u64, noun);
            if screened.ask {
                text.push_str(&format!(
                    "\n[{what} not {verb}: {} says to ask first, and nobody can be asked about each file a \
                     search or listing finds. Name one as path to be asked about it.]",
                    screened.because
                ));
            } else {
                text.push_str(&format!("\n[{what} not {verb}: refused by {}.]", screened.because));
            }
        }
        text
    }
}
