//! A `#[tool]`'s plain parameters are decoded and described by generic runtime code, not by a
//! derived struct. These tests hold that code against what `#[derive(Deserialize, JsonSchema)]`
//! with `#[serde(deny_unknown_fields)]` gives the same fields: the same schema text, and the same
//! value or the same error for any argument object.

use std::collections::BTreeMap;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::{Tool, ToolContext, tool};

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    Fast,
    Slow,
}

/// A nested object (described once, under `$defs`).
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code, reason = "only decoded and described")]
pub(crate) struct Inner {
    /// A count.
    pub(crate) n: u8,
    pub(crate) label: Option<String>,
}

/// Not `Serialize`: its default cannot be shown in the schema.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code, reason = "only decoded and described")]
pub(crate) struct Opaque(pub(crate) u16);

type MaybeText = Option<String>;

/// Every kind of plain parameter.
///
/// Second paragraph.
#[tool(undocumented)]
async fn shapes(
    /// # The text
    ///
    /// What to look for,
    ///   indented on a second line.
    text: String,
    /// Count.
    #[arg(default = 10)]
    count: u32,
    /// Optional path.
    path: Option<String>,
    flags: Vec<String>,
    /// Mode.
    #[arg(default = Mode::Slow)]
    mode: Mode,
    /// Not this.
    #[arg(rename = "max-depth", description = "How deep.")]
    max_depth: Option<i64>,
    /// Anything at all.
    extra: Option<Value>,
    /// Something nested.
    nested: Option<Inner>,
    #[arg(default = "hello")] greeting: String,
    /// An alias of `Option`.
    maybe: MaybeText,
    ratio: f64,
    r#type: Option<bool>,
    /// A map.
    map: BTreeMap<String, u32>,
    #[arg(default = Opaque(7))] opaque: Opaque,
    /// Anything, required.
    any: Value,
    #[doc = "Written as an attribute."] written: Option<char>,
) -> String {
    format!(
        "{:?} {:?}",
        (text, count, path, flags, mode, max_depth, extra, nested),
        (greeting, maybe, ratio, r#type, map, opaque, any, written)
    )
}

fn ten() -> u32 {
    10
}
fn slow() -> Mode {
    Mode::Slow
}
fn hello() -> String {
    "hello".into()
}
fn seven() -> Opaque {
    Opaque(7)
}

// What the tool's parameters mean, written by hand (no `///`: the macro's struct has none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShapesArgs {
    /// # The text
    ///
    /// What to look for,
    ///   indented on a second line.
    text: String,
    /// Count.
    #[serde(default = "ten")]
    count: u32,
    /// Optional path.
    path: Option<String>,
    flags: Vec<String>,
    /// Mode.
    #[serde(default = "slow")]
    mode: Mode,
    #[serde(rename = "max-depth")]
    #[schemars(description = "How deep.")]
    max_depth: Option<i64>,
    /// Anything at all.
    extra: Option<Value>,
    /// Something nested.
    nested: Option<Inner>,
    #[serde(default = "hello")]
    greeting: String,
    /// An alias of `Option`.
    maybe: MaybeText,
    ratio: f64,
    r#type: Option<bool>,
    /// A map.
    map: BTreeMap<String, u32>,
    #[serde(default = "seven")]
    opaque: Opaque,
    /// Anything, required.
    any: Value,
    #[doc = "Written as an attribute."]
    written: Option<char>,
}

impl ShapesArgs {
    fn debug(self) -> String {
        let ShapesArgs {
            text,
            count,
            path,
            flags,
            mode,
            max_depth,
            extra,
            nested,
            greeting,
            maybe,
            ratio,
            r#type,
            map,
            opaque,
            any,
            written,
        } = self;
        format!(
            "{:?} {:?}",
            (text, count, path, flags, mode, max_depth, extra, nested),
            (greeting, maybe, ratio, r#type, map, opaque, any, written)
        )
    }
}

/// The tool's answer to `args` called directly (no schema validation first), next to what the
/// derived struct makes of them, both as the text the model would read.
async fn both(args: Value) -> (Result<String, String>, Result<String, String>) {
    let ours = ShapesTool
        .call(ToolContext::builder("shapes").build(), args.clone())
        .await
        .map(|out| out.text_content())
        .map_err(|e| e.message().to_owned());
    let derived = serde_json::from_value::<ShapesArgs>(args).map(ShapesArgs::debug).map_err(|e| {
        format!("Invalid arguments for tool `shapes`: {e}. Fix the arguments and call `shapes` again.")
    });
    (ours, derived)
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().expect("runtime").block_on(future)
}

#[test]
fn schema_is_the_derived_one_to_the_byte() {
    let ours = serde_json::to_string_pretty(&ShapesTool.spec().input_schema).unwrap();
    let derived = serde_json::to_string_pretty(&tool_runtime::schema::args_schema::<ShapesArgs>()).unwrap();
    assert_eq!(ours, derived);
    // What the comparison covers, so that it cannot pass on two empty schemas.
    let schema = &ShapesTool.spec().input_schema;
    assert_eq!(schema["properties"]["text"]["title"], "The text");
    assert_eq!(
        schema["properties"]["text"]["description"],
        "What to look for,\n  indented on a second line."
    );
    assert_eq!(schema["properties"]["count"]["default"], 10);
    assert_eq!(schema["properties"]["mode"]["default"], "slow");
    assert!(schema["properties"]["opaque"].get("default").is_none());
    assert_eq!(schema["properties"]["max-depth"]["description"], "How deep.");
    assert_eq!(schema["properties"]["any"], json!({"description": "Anything, required."}));
    assert_eq!(schema["required"], json!(["text", "flags", "ratio", "map", "any"]));
    assert!(schema["$defs"]["Inner"].is_object());
    assert_eq!(ShapesTool.spec().description, "Every kind of plain parameter.\n\nSecond paragraph.");
}

#[test]
fn decoding_matches_the_derived_struct() {
    let full = json!({
        "text": "t", "count": 3, "path": "p", "flags": ["a"], "mode": "fast", "max-depth": -2,
        "extra": {"k": [1]}, "nested": {"n": 1, "label": null}, "greeting": "hi", "maybe": "m",
        "ratio": 0.5, "type": true, "map": {"b": 2, "a": 1}, "opaque": 9, "any": null, "written": "w"
    });
    let minimal = json!({"text": "t", "flags": [], "ratio": 1, "map": {}, "any": [1, "x"]});
    let cases = [
        full.clone(),
        minimal.clone(),
        // Absent, and null where the type allows it.
        json!({"text": "t", "flags": [], "ratio": 1, "map": {}, "any": 1, "path": null, "nested": null}),
        // Each kind of error, and two at once (the first in the object's order wins).
        json!({"flags": [], "ratio": 1, "map": {}, "any": 1}),
        json!({"text": "t", "flags": [], "ratio": 1, "map": {}}),
        json!({"text": "t", "flags": [], "ratio": 1, "map": {}, "any": 1, "unknown": 1}),
        json!({"unknown": 1, "text": 5, "flags": [], "ratio": 1, "map": {}, "any": 1}),
        json!({"text": 5, "unknown": 1, "flags": [], "ratio": 1, "map": {}, "any": 1}),
        json!({"text": "t", "flags": [], "ratio": 1, "map": {}, "any": 1, "count": null}),
        json!({"text": "t", "flags": [], "ratio": 1, "map": {}, "any": 1, "count": -1}),
        json!({"text": "t", "flags": [], "ratio": 1, "map": {}, "any": 1, "mode": "medium"}),
        json!({"text": "t", "flags": [], "ratio": 1, "map": {}, "any": 1, "nested": {"n": 300}}),
        json!({"text": "t", "flags": [], "ratio": 1, "map": {}, "any": 1, "written": "two"}),
        json!({"text": "t", "flags": [1], "ratio": "x", "map": {}, "any": 1}),
        json!({}),
    ];
    block_on(async {
        for case in cases {
            let (ours, derived) = both(case.clone()).await;
            assert_eq!(ours, derived, "for {case}");
        }
        // The cases above do reach both outcomes.
        assert!(both(full).await.0.is_ok());
        let (missing, _) = both(json!({"text": "t"})).await;
        assert_eq!(
            missing.unwrap_err(),
            "Invalid arguments for tool `shapes`: missing field `flags`. Fix the arguments and call `shapes` again."
        );
    });
}

#[test]
fn unknown_fields_are_named_as_serde_names_them() {
    /// Two parameters.
    #[tool(undocumented)]
    async fn two(a: u8, b: u8) -> String {
        (a + b).to_string()
    }
    /// One parameter.
    #[tool(undocumented)]
    async fn one(a: u8) -> String {
        a.to_string()
    }
    let message = |tool: &dyn Tool| {
        block_on(tool.call(ToolContext::builder("t").build(), json!({"c": 1})))
            .unwrap_err()
            .message()
            .to_owned()
    };
    assert!(message(&TwoTool).contains("unknown field `c`, expected `a` or `b`"), "{}", message(&TwoTool));
    assert!(message(&OneTool).contains("unknown field `c`, expected `a`."), "{}", message(&OneTool));
    assert!(message(&ShapesTool).contains("unknown field `c`, expected one of `text`, `count`, `path`,"));
}

#[test]
fn arguments_that_are_not_an_object_are_refused() {
    let err = block_on(ShapesTool.call(ToolContext::builder("shapes").build(), json!(["t"]))).unwrap_err();
    assert_eq!(
        err.message(),
        "Invalid arguments for tool `shapes`: invalid type: sequence, expected an object of named arguments. Fix the arguments and call `shapes` again."
    );
    assert_eq!(err.kind(), tool_runtime::ErrorKind::InvalidArguments);
}

/// Any JSON value, small.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (0u64..400).prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        prop_oneof![Just("fast"), Just("slow"), Just("x"), Just(""), Just("ab")].prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec((prop_oneof![Just("n"), Just("label"), Just("k")], inner), 0..3).prop_map(
                |entries| Value::Object(entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            ),
        ]
    })
}

const KEYS: &[&str] = &[
    "text",
    "count",
    "path",
    "flags",
    "mode",
    "max-depth",
    "extra",
    "nested",
    "greeting",
    "maybe",
    "ratio",
    "type",
    "map",
    "opaque",
    "any",
    "written",
    "unknown",
    "max_depth",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Any object of known and unknown keys with any values: the same value or the same error.
    #[test]
    fn any_object_decodes_as_the_derived_struct_decodes_it(
        entries in prop::collection::vec((prop::sample::select(KEYS), json_value()), 0..12),
        base in any::<bool>(),
    ) {
        let mut object = serde_json::Map::new();
        if base {
            // Start from a valid object so that value errors, not missing fields, are reached.
            for (key, value) in [("text", json!("t")), ("flags", json!([])), ("ratio", json!(1)), ("map", json!({})), ("any", json!(0))] {
                object.insert(key.to_owned(), value);
            }
        }
        for (key, value) in entries {
            object.insert(key.to_owned(), value);
        }
        let (ours, derived) = block_on(both(Value::Object(object.clone())));
        prop_assert_eq!(ours, derived, "for {}", Value::Object(object));
    }
}
