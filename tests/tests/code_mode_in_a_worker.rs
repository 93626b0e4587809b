//! The tests of `code_mode`, each script's interpreter in a process of its own
//! (`CodeTool::in_worker`, the `code-worker` program): the same answers, and a script that no
//! interrupt reaches is killed at its time limit.

/// Each script's interpreter runs in a process of the `code-worker` program.
const IN_A_WORKER: bool = true;

#[path = "code_mode/cases.rs"]
mod cases;
