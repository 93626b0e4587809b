//! End-to-end tests of the `tools` binary, one module a subject. They are one test binary, not one
//! each: every test binary links the whole workspace, and seventy of them took gigabytes of disk.

mod common;

mod catalog;
mod checkpoints;
mod claude_code_hooks;
mod cli;
mod codex_config;
mod egress;
mod escape;
mod mcp_mount;
mod mcp_oauth;
mod permission_modes;
mod provider_shapes;
mod python_sdk;
mod rule_names;
mod sandbox_host;
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
mod signals;
mod verify;
