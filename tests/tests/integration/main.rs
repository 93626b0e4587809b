//! Cross-crate tests, one module a subject, in one test binary. Tests that need a process of their
//! own stay in binaries of their own: those that measure the process's memory, those that kill
//! every command the process runs, and those that read the tool inventory, which holds every
//! `#[tool]` a binary links.

mod apply_patch;
mod confinement;
mod direct_arguments;
mod freeform;
mod macro_arguments;
mod macro_examples;
mod permission_subjects;
mod permissions;
mod permissions_hooks;
mod properties;
mod sandbox;
mod tools_std_operations;
mod tools_std_process_tree;
mod tools_std_rg;
mod tools_std_sessions;
mod tools_std_undo;
