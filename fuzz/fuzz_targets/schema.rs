//! Argument schemas from elsewhere (a mounted MCP server's `inputSchema`): arbitrary JSON as a
//! schema, and arbitrary JSON as a call's arguments against it.
//!
//! The input is the schema's text, a NUL byte, then the arguments' text. Every call is answered
//! with the validated arguments, an invalid-arguments error naming the tool, or (for a schema
//! that does not compile) an error saying the tool's schema is broken; never a panic, a stack
//! overflow or a hang (a check is bounded in steps and depth).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tool_runtime::{ErrorKind, Registry, ToolOutput, ToolSpec, spec::FnTool};

fuzz_target!(|data: &[u8]| {
    let (schema, arguments) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"{}"[..]),
    };
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else { return };
    let tool =
        FnTool::new(ToolSpec::new("mounted", "A tool with a schema from elsewhere.", schema), |_, _| async {
            Ok(ToolOutput::text("ok"))
        });
    let registry = match Registry::builder().tool(tool).build() {
        Ok(registry) => registry,
        Err(error) => {
            assert!(error.to_string().contains("`mounted`"), "{error}");
            return;
        }
    };
    let arguments = String::from_utf8_lossy(arguments);
    match registry.validate("mounted", arguments.as_ref()) {
        Ok(validated) => assert!(validated.value.is_object(), "accepted a non-object: {arguments}"),
        Err(error) => {
            assert!(error.message().contains("`mounted`"), "{}", error.message());
            // A schema that does not compile leaves the tool registered and each call refused
            // as the tool's own failure, saying so; otherwise the arguments are at fault.
            match error.kind() {
                ErrorKind::InvalidArguments => {}
                ErrorKind::Execution => {
                    assert!(error.message().contains("argument schema is broken"), "{}", error.message())
                }
                other => panic!("{other:?}: {}", error.message()),
            }
        }
    }
});
