//! The argument pipeline as the model experiences it: exact error texts, coercion, nulls.

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::{ErrorKind, Registry, ToolContext, tool, validate::ValidationOptions};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Direction {
    Head,
    Tail,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Range {
    start: u32,
    end: u32,
}

/// Read part of a file.
#[tool(undocumented, parallel)]
async fn read_part(
    /// File path.
    #[schemars(length(min = 1, max = 10))]
    path: String,
    /// First line.
    #[arg(default = 1)]
    #[schemars(range(min = 1))]
    offset: u32,
    #[arg(default = false)] verbose: bool,
    direction: Option<Direction>,
    ranges: Option<Vec<Range>>,
    #[schemars(regex(pattern = r"^[a-z]+$"))] label: Option<String>,
) -> String {
    format!("{path}:{offset}:{verbose}:{direction:?}:{ranges:?}:{label:?}")
}

fn registry() -> Registry {
    Registry::builder().with_inventory().allow(["read_part"]).build().unwrap()
}

async fn call(raw: &str) -> Result<String, String> {
    registry()
        .call("read_part", raw, ToolContext::builder("read_part").build())
        .await
        .map(|o| o.text_content())
        .map_err(|e| {
            assert_eq!(e.kind(), ErrorKind::InvalidArguments);
            e.message().to_owned()
        })
}

#[tokio::test]
async fn every_violation_is_listed_with_its_path() {
    let err = call(r#"{"path": "", "offset": 0, "verbose": "maybe", "direction": "up", "extra": 1, "ranges": [{"start": 1}]}"#)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        r#"Invalid arguments for tool `read_part`:
- /path: must be at least 1 character long, received "" (a string)
- /offset: must be at least 1, received 0 (an integer)
- /verbose: expected a boolean (true or false), received "maybe" (a string)
- /direction: expected one of "head", "tail", received "up" (a string)
- /ranges/0/end: missing required property
- /extra: unknown property; valid properties are `path`, `offset`, `verbose`, `direction`, `ranges`, `label`
Arguments received: {"path": "", "offset": 0, "verbose": "maybe", "direction": "up", "extra": 1, "ranges": [{"start": 1}]}
Fix the arguments and call `read_part` again."#
    );
}

#[tokio::test]
async fn missing_required_and_pattern() {
    let err = call(r#"{"label": "ABC"}"#).await.unwrap_err();
    assert_eq!(
        err,
        r#"Invalid arguments for tool `read_part`:
- /label: must match the regular expression ^[a-z]+$, received "ABC" (a string)
- /path: missing required property
Arguments received: {"label": "ABC"}
Fix the arguments and call `read_part` again."#
    );
}

#[tokio::test]
async fn bad_json_names_line_and_column() {
    let err = call("{\"path\": \"a\",\n \"offset\": }").await.unwrap_err();
    assert_eq!(
        err,
        "Invalid arguments for tool `read_part`:\n- the arguments are not valid JSON: expected value at line 2 column 12\nArguments received: {\"path\": \"a\",\n \"offset\": }\nFix the arguments and call `read_part` again."
    );
    let err = call(r#"{"path": "a""#).await.unwrap_err();
    assert!(err.contains("- the arguments are not valid JSON: the JSON ends too early (is it cut off?) at line 1 column 12\n"), "{err}");
}

#[tokio::test]
async fn non_object_arguments() {
    let err = call("[1, 2]").await.unwrap_err();
    assert!(
        err.contains(
            "- the arguments must be a JSON object with named properties, received [1,2] (an array)\n"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn nulls_for_optional_properties_mean_absent() {
    let out = call(
        r#"{"path": "a", "offset": null, "verbose": null, "direction": null, "ranges": null, "label": null}"#,
    )
    .await
    .unwrap();
    assert_eq!(out, "a:1:false:None:None:None");
    let err = call(r#"{"path": null}"#).await.unwrap_err();
    assert!(err.contains("- /path: expected a string, received null\n"), "{err}");
}

#[tokio::test]
async fn strings_are_coerced_to_numbers_booleans_and_arrays() {
    let out = call(
        r#"{"path": "a", "offset": "10", "verbose": "true", "ranges": "[{\"start\": 1, \"end\": \"2\"}]"}"#,
    )
    .await
    .unwrap();
    assert_eq!(out, "a:10:true:None:Some([Range { start: 1, end: 2 }]):None");

    let validated =
        registry().validate("read_part", r#"{"path": "a", "offset": "10", "verbose": "true"}"#).unwrap();
    let coerced: Vec<_> = validated.coercions.iter().map(|c| (c.path.as_str(), c.to.as_str())).collect();
    assert_eq!(coerced, [("/offset", "integer"), ("/verbose", "boolean")]);

    // A double-encoded argument object is accepted too.
    let out = call(r#""{\"path\": \"a\"}""#).await.unwrap();
    assert_eq!(out, "a:1:false:None:None:None");
}

/// Replace text in a file.
#[tool]
async fn replace_text(
    /// The file.
    #[arg(alias = "file_path", alias = "filePath")]
    path: String,
    /// The text to replace.
    old_string: String,
    /// Replace every occurrence.
    #[arg(default = false)]
    replace_all: bool,
) -> String {
    format!("{path}:{old_string}:{replace_all}")
}

#[tokio::test]
async fn aliases_and_camel_case_names_are_recorded_renames() {
    let registry = Registry::builder().with_inventory().allow(["replace_text"]).build().unwrap();
    let spec = registry.get("replace_text").unwrap().spec().clone();
    assert_eq!(
        spec.input_schema["properties"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["path", "old_string", "replace_all"],
        "the schema keeps the parameters' own names"
    );
    assert_eq!(spec.aliases.len(), 2);
    // As Claude Code and opencode send them.
    for (raw, expected) in [
        (r#"{"file_path": "a", "old_string": "x"}"#, vec![("/file_path", "/path")]),
        (
            r#"{"filePath": "a", "oldString": "x", "replaceAll": true}"#,
            vec![("/filePath", "/path"), ("/oldString", "/old_string"), ("/replaceAll", "/replace_all")],
        ),
    ] {
        let validated = registry.validate("replace_text", raw).unwrap();
        let mut moved: Vec<_> =
            validated.coercions.iter().map(|c| (c.path.as_str(), c.to.as_str())).collect();
        moved.sort();
        assert_eq!(moved, expected, "{raw}");
        let out =
            registry.call("replace_text", raw, ToolContext::builder("replace_text").build()).await.unwrap();
        assert!(out.text_content().starts_with("a:x:"), "{}", out.text_content());
    }
    // Two different values under the parameter's names are refused, not guessed between.
    let err = registry
        .validate("replace_text", r#"{"path": "a", "file_path": "b", "old_string": "x"}"#)
        .unwrap_err();
    assert!(err.message().contains("file_path"), "{}", err.message());
    // Without leniency, an alias is an unknown property.
    let strict = Registry::builder()
        .with_inventory()
        .allow(["replace_text"])
        .validation(ValidationOptions { coerce: false })
        .build()
        .unwrap();
    assert!(strict.validate("replace_text", r#"{"file_path": "a", "old_string": "x"}"#).is_err());
}

#[tokio::test]
async fn coercion_can_be_switched_off() {
    let registry = Registry::builder()
        .with_inventory()
        .allow(["read_part"])
        .validation(ValidationOptions { coerce: false })
        .build()
        .unwrap();
    let err = registry.validate("read_part", r#"{"path": "a", "offset": "10"}"#).unwrap_err();
    assert!(
        err.message().contains("- /offset: expected an integer, received \"10\" (a string)\n"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn empty_arguments_are_an_empty_object() {
    let err = call("  ").await.unwrap_err();
    assert!(err.contains("- /path: missing required property\n"), "{err}");
    assert!(err.contains("Arguments received: \n"), "{err}");
}

#[tokio::test]
async fn long_arguments_are_clipped_in_the_echo() {
    let long = "x".repeat(5000);
    let err = call(&format!(r#"{{"path": "{long}"}}"#)).await.unwrap_err();
    assert!(err.contains("… (4812 more characters)\nFix the arguments"), "{}", &err[err.len() - 200..]);
    assert!(err.len() < 600);
}

#[tokio::test]
async fn a_huge_unknown_property_name_is_quoted_200_characters_long() {
    let name = "k".repeat(1_000_000);
    let err = call(&format!(r#"{{"path": "a", "{name}": 1}}"#)).await.unwrap_err();
    assert!(
        err.contains(&format!(
            "- /{}… (999800 more characters): unknown property; valid properties are",
            "k".repeat(200)
        )),
        "{}",
        &err[..400]
    );
    assert!(err.len() < 2000, "{} bytes", err.len());
    // The tool name of an unknown tool too.
    let err = registry().validate(&"t".repeat(100_000), "{}").unwrap_err();
    assert!(
        err.message().starts_with(&format!("Unknown tool `{}… (99800 more characters)`.", "t".repeat(200)))
    );
}

#[test]
fn unknown_tools_list_the_real_ones() {
    let err = registry().validate("read_prt", "{}").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(err.message(), "Unknown tool `read_prt`. Available tools: `read_part`.");
}

/// Odd input never panics: it is accepted as an object, or refused with a message that names the
/// tool, lists each problem on a line of its own and says what to do next.
#[test]
fn odd_input_is_accepted_or_refused_with_its_problems_listed() {
    let registry = registry();
    let long_nesting = "[".repeat(10_000);
    // Each input with the problem its error must list (`None`: the input is valid).
    let cases: [(&str, Option<&str>); 16] = [
        ("", Some("- /path: missing required property")),
        ("null", Some("- the arguments must be a JSON object with named properties, received null")),
        ("true", Some("- the arguments must be a JSON object with named properties, received true")),
        ("1", Some("- the arguments must be a JSON object with named properties, received 1")),
        ("\"\"", Some("- the arguments must be a JSON object with named properties, received \"\"")),
        ("{", Some("- the arguments are not valid JSON: the JSON ends too early")),
        ("}", Some("- the arguments are not valid JSON: expected value at line 1 column 1")),
        ("{}", Some("- /path: missing required property")),
        ("[]", Some("- the arguments must be a JSON object with named properties, received []")),
        ("\u{0}", Some("- the arguments are not valid JSON")),
        ("{\"path\": \"\u{1F600}\"}", None),
        ("{\"path\": 1e400}", Some("- the arguments are not valid JSON: number out of range")),
        (&long_nesting, Some("- the arguments are not valid JSON: recursion limit exceeded")),
        ("{\"ranges\": [null, 1, \"x\", {}]}", Some("- /ranges/3/end: missing required property")),
        ("{\"ranges\": \"[[[\"}", Some("- /ranges: expected an array or null, received \"[[[\"")),
        ("\"\\\"{\\\"\"", Some("- the arguments must be a JSON object with named properties, received")),
    ];
    for (raw, problem) in cases {
        let shown = &raw[..raw.len().min(40)];
        match (registry.validate("read_part", raw), problem) {
            (Ok(args), None) => assert!(args.value.is_object(), "{shown:?}: {:?}", args.value),
            (Ok(args), Some(problem)) => {
                panic!("{shown:?} was accepted as {:?}; expected {problem:?}", args.value)
            }
            (Err(error), None) => panic!("{shown:?} was refused: {}", error.message()),
            (Err(error), Some(problem)) => {
                let message = error.message();
                assert_eq!(error.kind(), ErrorKind::InvalidArguments, "{shown:?}");
                assert!(message.starts_with("Invalid arguments for tool `read_part`:\n"), "{message}");
                assert!(message.lines().any(|line| line.starts_with(problem)), "{shown:?}: {message}");
                assert!(message.ends_with("Fix the arguments and call `read_part` again."), "{message}");
                assert!(message.len() < 3000, "{shown:?}: the echo is not clipped");
            }
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
#[allow(dead_code)]
enum Op {
    Insert {
        line: u32,
        text: String,
        #[serde(default)]
        indent: u32,
    },
    Delete {
        line: u32,
        count: Option<u32>,
    },
}

/// Apply one operation.
#[tool(undocumented)]
async fn apply_op(op: Op) -> String {
    format!("{op:?}")
}

#[tokio::test]
async fn nulls_inside_enum_variants_mean_absent_too() {
    let registry = Registry::builder().with_inventory().allow(["apply_op"]).build().unwrap();
    let ctx = || ToolContext::builder("apply_op").build();
    // OpenAI strict mode sends every property of the chosen variant, with null for optional ones.
    let out = registry
        .call("apply_op", r#"{"op": {"op": "insert", "line": 3, "text": "x", "indent": null}}"#, ctx())
        .await
        .unwrap();
    assert_eq!(out.text_content(), r#"Insert { line: 3, text: "x", indent: 0 }"#);
    let out = registry
        .call("apply_op", r#"{"op": {"op": "delete", "line": "7", "count": null}}"#, ctx())
        .await
        .unwrap();
    assert_eq!(out.text_content(), "Delete { line: 7, count: None }");
}

/// How a file is opened.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Access {
    /// Only read it.
    Read,
    /// Read and write it.
    Write,
}

/// Open a file.
#[tool]
async fn open_file(
    /// How to open it.
    access: Access,
    /// Also how, optional.
    fallback: Option<Access>,
) -> String {
    format!("{access:?}:{fallback:?}")
}

#[tokio::test]
async fn an_enum_with_documented_variants_lists_its_values() {
    let registry = Registry::builder().with_inventory().allow(["open_file"]).build().unwrap();
    let schema = registry.get("open_file").unwrap().spec().input_schema.clone();
    assert!(schema.to_string().contains("oneOf"), "documented variants are a oneOf of consts: {schema}");
    let err = registry
        .call(
            "open_file",
            r#"{"access": "append", "fallback": "both"}"#,
            ToolContext::builder("open_file").build(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        "Invalid arguments for tool `open_file`:\n\
         - /access: expected one of \"read\", \"write\", received \"append\" (a string)\n\
         - /fallback: expected one of \"read\", \"write\", received \"both\" (a string)\n\
         Arguments received: {\"access\": \"append\", \"fallback\": \"both\"}\n\
         Fix the arguments and call `open_file` again."
    );
}

/// Hand-written specs declare aliases without the macro's checks: the registry refuses one that
/// could not be told apart from another name, naming the tool and the alias.
#[test]
fn an_alias_that_is_another_name_is_refused_when_the_registry_is_built() {
    use tool_runtime::spec::FnTool;
    use tool_runtime::spec::ParameterAlias as A;
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "file_path": {"type": "string"}, "old_string": {"type": "string"}},
    });
    let build = |aliases: Vec<A>| {
        let spec =
            tool_runtime::spec::ToolSpec::new("replace", "Replace.", schema.clone()).with_aliases(aliases);
        Registry::builder()
            .tool(FnTool::new(spec, |_ctx, _args| async { Ok(tool_runtime::ToolOutput::text("")) }))
            .build()
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert_eq!(build(vec![A::new("filepath", "path"), A::new("oldString2", "old_string")]), Ok(()));
    assert_eq!(
        build(vec![A::new("file_path", "path")]).unwrap_err(),
        "the alias `file_path` of the tool `replace` is also the name of a parameter, so an argument sent under it \
         would be ambiguous; rename or remove the alias"
    );
    assert_eq!(
        build(vec![A::new("p", "path"), A::new("p", "old_string")]).unwrap_err(),
        "the alias `p` of the tool `replace` is declared for two parameters, `path` and `old_string`, so an \
         argument sent under it would be ambiguous; rename or remove the alias"
    );
    assert_eq!(
        build(vec![A::new("p", "path"), A::new("p", "path")]).unwrap_err(),
        "the alias `p` of the tool `replace` is declared twice for the parameter `path`; rename or remove the alias"
    );
    assert_eq!(
        build(vec![A::new("filePath", "path")]).unwrap_err(),
        "the alias `filePath` of the tool `replace` is the camelCase spelling of the parameter `file_path` \
         (accepted for it already), so an argument sent under it would be ambiguous; rename or remove the alias"
    );
    assert_eq!(
        build(vec![A::new("target", "dest")]).unwrap_err(),
        "the alias `target` of the tool `replace` stands for `dest`, which is not a top-level parameter of the \
         tool; rename or remove the alias"
    );
}
