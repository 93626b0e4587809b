//! Code mode: scripts whose tool calls go through the dispatcher as a model's calls do (rules,
//! hooks, the parallel gate, cancellation, events), stopped by each of their limits with the
//! host unharmed, and with no way out but the tools.

/// Each script's interpreter runs on a thread of the test's process.
const IN_A_WORKER: bool = false;

#[path = "code_mode/cases.rs"]
mod cases;
