//! A tool declares what it asks permission for on its own spec (`#[tool(permission = "...")]`),
//! and permission rules take it from the registry's specs: no second list of tool names.

use tool_runtime::hooks::{PermissionDecision, PermissionHook};
use tool_runtime::permissions::{Policy, Rules, RulesBuilder, Subject, ToolCatalog};
use tool_runtime::spec::PermissionSubject;
use tool_runtime::{PermissionKind, PermissionRequest, Registry, Tool, ToolSpec, tool};
use tool_tests::TempDir;

/// Opens a file of the workspace.
#[tool(undocumented, permission = "path")]
async fn open_file(path: String) -> String {
    path
}

/// Runs a command line.
#[tool(undocumented, permission = "command", command_argument = "line")]
async fn run_line(line: String) -> String {
    line
}

/// Types into a running command.
#[tool(undocumented, permission = "input")]
async fn type_text(text: String) -> String {
    text
}

/// Asks about nothing narrower than the call.
#[tool]
async fn clock() -> String {
    String::new()
}

fn registry() -> Registry {
    Registry::builder()
        .tool(OpenFileTool)
        .tool(RunLineTool)
        .tool(TypeTextTool)
        .tool(ClockTool)
        .build()
        .unwrap()
}

fn from_registry(root: &std::path::Path) -> RulesBuilder {
    Rules::builder(root).catalog(ToolCatalog::new().tools(registry().specs()))
}

fn request(tool: &str, kind: PermissionKind) -> PermissionRequest {
    let mut request = PermissionRequest::new(kind, "a test request");
    request.tool = tool.to_owned();
    request
}

#[test]
fn each_spec_says_what_its_tool_asks_about() {
    assert_eq!(OpenFileTool.spec().permission, Some(PermissionSubject::Path));
    assert_eq!(RunLineTool.spec().permission, Some(PermissionSubject::Command));
    assert_eq!(RunLineTool.spec().command_argument.as_deref(), Some("line"));
    assert_eq!(TypeTextTool.spec().permission, Some(PermissionSubject::Input));
    assert_eq!(ClockTool.spec().permission, None);
    assert_eq!(ClockTool.spec().command_argument, None);

    let catalog = ToolCatalog::new().tools(registry().specs());
    assert_eq!(catalog.subject_of("open_file"), Some(Subject::Path));
    assert_eq!(catalog.subject_of("run_line"), Some(Subject::Command));
    assert_eq!(catalog.subject_of("type_text"), Some(Subject::Input));
    assert_eq!(catalog.subject_of("clock"), None);

    // A hand-written spec declares the same with its builder.
    let spec = ToolSpec::new("sh", "Runs a shell.", serde_json::json!({"type": "object"}))
        .with_permission(PermissionSubject::Command)
        .with_command_argument("script");
    let catalog = ToolCatalog::new().tools([&spec]);
    assert_eq!(catalog.subject_of("sh"), Some(Subject::Command));
}

#[tokio::test]
async fn rules_take_the_subjects_from_the_registry() {
    let dir = TempDir::new("perm-subjects");
    let rules =
        from_registry(dir.path()).deny("open_file(secret/**)").deny("run_line(rm:*)").build().unwrap();
    let policy = Policy::new(rules);
    let path = |name: &str| PermissionKind::Path { path: dir.path().join(name), named: None };
    let command = |line: &str| PermissionKind::Command { command: line.to_owned(), workdir: None };

    let denied = policy.decide(&request("open_file", path("secret/key"))).await;
    assert!(matches!(denied, PermissionDecision::Deny { .. }), "{denied:?}");
    assert_eq!(policy.decide(&request("open_file", path("src/main.rs"))).await, PermissionDecision::Allow);
    let denied = policy.decide(&request("run_line", command("rm -rf build"))).await;
    assert!(matches!(denied, PermissionDecision::Deny { .. }), "{denied:?}");
    assert_eq!(policy.decide(&request("run_line", command("ls"))).await, PermissionDecision::Allow);
}

#[test]
fn a_pattern_needs_a_subject_the_spec_declares() {
    let dir = TempDir::new("perm-subjects-none");
    // The tool declares nothing: a pattern on it cannot be matched against anything.
    let error = from_registry(dir.path()).deny("clock(x)").build().unwrap_err().to_string();
    assert!(error.contains("`clock` asks about no command or path"), "{error}");
    // Typed text is decided by the command rules; the tool's own rules take no pattern.
    let error = from_registry(dir.path()).deny("type_text(rm)").build().unwrap_err().to_string();
    assert!(error.contains("`type_text` rules take no pattern"), "{error}");
    // Without the registry's specs the rules know no subject of `open_file` either.
    let error = Rules::builder(dir.path()).deny("open_file(secret/**)").build().unwrap_err().to_string();
    assert!(error.contains("`open_file` asks about no command or path"), "{error}");
    assert!(from_registry(dir.path()).allow("run_line(read-only)").build().is_ok());
}
