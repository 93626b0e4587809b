//! End-to-end tests of the `tools` binary, one module a subject. They are one test binary, not one
//! each: every test binary links the whole workspace, and seventy of them took gigabytes of disk.

mod common;

mod catalog;
mod checkpoints;
mod claude_code_hooks;
mod codex_config;
mod cli;
mod egress;
mod escape;
mod mcp_mount;
mod mcp_oauth;
mod permission_modes;
mod provider_shapes;
mod rule_names;
mod python_sdk;
mod serve;
mod serve_http;
mod serve_list_changed;
mod serve_protocol;
mod serve_resources;
mod serve_sessions;
mod serve_tasks;
mod settings;
mod settings_hierarchy;
mod settings_keys;
mod sandbox_host;
mod signals;
mod verify;
