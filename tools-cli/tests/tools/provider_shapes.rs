//! `tools list` with the provider extras: the flags reach the definitions, and what the binary
//! prints for every format and option matches the official SDKs' own types (`openai`,
//! `anthropic`, `google-genai`, `mcp` from PyPI), checked by `scripts/check-provider-shapes.sh`.
//!
//! The SDKs live in a virtual environment the script creates at `target/py-provider-sdks`
//! (`scripts/check-provider-shapes.sh --setup-only`); without it, or without Python, the SDK
//! test passes with a message saying it was skipped.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::{Fixture, TOOLS, registry};
use serde_json::Value;
use tool_runtime::providers::DefinitionOptions;
use tool_runtime::providers::Provider;

#[test]
fn list_extras_flags_reach_the_definitions() {
    let fx = Fixture::new();
    let registry = registry();
    let cases = [
        (
            "anthropic",
            vec!["--anthropic-cache-control"],
            DefinitionOptions::default().with_anthropic_cache_control(true),
        ),
        ("anthropic", vec!["--strict"], DefinitionOptions::strict()),
        ("gemini", vec!["--gemini-json-schema"], DefinitionOptions::default().with_gemini_json_schema(true)),
    ];
    for (format, flags, options) in cases {
        let mut args = vec!["list", "--format", format];
        args.extend(&flags);
        let run = fx.run(&args, None);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        let provider: Provider = format.parse().unwrap();
        assert_eq!(run.json(), Value::Array(provider.definitions(&registry, &options).unwrap()), "{args:?}");
    }
    let anthropic = fx.run(&["list", "--format", "anthropic", "--anthropic-cache-control"], None).json();
    let tools = anthropic.as_array().unwrap();
    assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
    assert_eq!(tools.iter().filter(|t| t.get("cache_control").is_some()).count(), 1);
    let grep = tools.iter().find(|t| t["name"] == "grep").unwrap();
    assert_eq!(grep["input_examples"][0]["glob"], "*.rs");
    let gemini = fx.run(&["list", "--format", "gemini", "--gemini-json-schema"], None).json();
    assert!(gemini[0].get("parametersJsonSchema").is_some() && gemini[0].get("parameters").is_none());
    // Another format ignores them.
    let plain = fx.run(&["list", "--format", "mcp"], None).json();
    let with_flags = fx
        .run(&["list", "--format", "mcp", "--anthropic-cache-control", "--gemini-json-schema"], None)
        .json();
    assert_eq!(plain, with_flags);
}

/// The interpreter of the SDKs' virtual environment, or why there is none.
fn sdk_venv() -> Result<PathBuf, String> {
    if let Some(venv) = std::env::var_os("PROVIDER_SDKS_VENV") {
        return Ok(PathBuf::from(venv));
    }
    // TOOLS is TARGET/debug/tools (or TARGET/release/tools).
    let target = PathBuf::from(TOOLS).parent().and_then(|dir| dir.parent()).map(PathBuf::from);
    match target.map(|target| target.join("py-provider-sdks")) {
        Some(venv) if venv.join("bin/python").exists() => Ok(venv),
        _ => Err("no provider SDK environment; create it with scripts/check-provider-shapes.sh --setup-only"
            .to_owned()),
    }
}

#[test]
fn every_format_and_option_matches_the_official_sdk_types() {
    let venv = match sdk_venv() {
        Ok(venv) => venv,
        Err(reason) => {
            tool_tests::skip(&reason);
            return;
        }
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/check-provider-shapes.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg(TOOLS)
        .env("PROVIDER_SDKS_VENV", &venv)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() == Some(2) {
        // The environment could not be made (no python3, no venv module, PyPI unreachable).
        tool_tests::skip(stderr.trim());
        return;
    }
    assert!(output.status.success(), "the shapes do not match\n--- stdout\n{stdout}\n--- stderr\n{stderr}");
    assert!(stdout.lines().any(|line| line.starts_with("passed: ")), "the check did not finish\n{stdout}");
}
