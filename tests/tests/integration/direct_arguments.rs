//! A `#[tool]` whose parameters are all plain types (numbers, strings, booleans, and options and
//! vectors of them) decodes its arguments straight into the parameters (`Tool::decode`):
//! arguments sent as text (OpenAI's) without a `Value` or the schema validator, arguments sent
//! as a parsed object (MCP's, Anthropic's, Gemini's) without the validator. These tests hold
//! that path against the validating one: for any text or object, `Registry::call` and a
//! dispatcher answer exactly what validating the arguments and then calling the tool answers,
//! and the direct path is taken only for arguments it is sure of.

use proptest::prelude::*;
use serde_json::{Value, json};
use tool_runtime::{
    Arguments, CancellationToken, Dispatcher, Registry, Tool, ToolCall, ToolContext,
    dispatch::{RepeatAction, RepeatGuard},
    hooks::{BeforeDecision, BeforeFn},
    tool,
};

/// Plain parameters only.
#[tool(undocumented)]
async fn plain(
    /// A number.
    a: f64,
    /// An optional count.
    n: Option<u32>,
    /// Labels.
    tags: Vec<String>,
    flag: bool,
    small: i8,
    /// How deep.
    #[arg(default = 3)]
    depth: u16,
    name: Option<String>,
    #[arg(default = 5)] limit: u64,
) -> String {
    format!("{:?}", (a, n, tags, flag, small, depth, name, limit))
}

/// One parameter is not plain (`Value` accepts anything, and its schema says so, but it is not
/// on the list), so the text always goes through validation.
#[tool(undocumented)]
async fn mixed(count: u32, extra: Option<Value>) -> String {
    format!("{:?}", (count, extra))
}

/// No model-facing parameter: only the empty object is valid.
#[tool]
async fn no_arguments() -> String {
    "none".to_owned()
}

#[test]
fn a_tool_without_parameters_decodes_the_empty_object_and_validates_the_rest() {
    let registry = Registry::builder().tool(NoArgumentsTool).build().expect("registry");
    let cases = [
        ("{}", true),
        (" { }\n", true),
        ("", true),
        ("  ", true),
        (r#"{"a":1}"#, false),
        (r#"{"a":null}"#, false),
        ("{} {}", false),
        ("[]", false),
        ("null", false),
        ("{", false),
    ];
    block_on(async {
        for (text, direct) in cases {
            assert_eq!(takes_direct_path(&NoArgumentsTool, text), direct, "direct path for {text:?}");
            let called = through_call(&registry, "no_arguments", text).await;
            assert_eq!(called, through_validation(&registry, "no_arguments", text).await, "for {text:?}");
            if direct {
                assert_eq!(called.as_deref(), Ok("none"), "{text:?}");
            }
            if let Some(value) = parsed(text) {
                let arguments = Arguments::Json(value.clone());
                assert_eq!(NoArgumentsTool.decode(&arguments).is_some(), direct, "direct path for {value}");
                let called = call_with(&registry, "no_arguments", arguments.clone()).await;
                assert_eq!(called, validate_with(&registry, "no_arguments", arguments).await, "for {value}");
            }
        }
    });
}

fn registry() -> Registry {
    Registry::builder().tool(PlainTool).tool(MixedTool).build().expect("registry")
}

fn ctx(tool: &str) -> ToolContext {
    ToolContext::builder(tool).build()
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().expect("runtime").block_on(future)
}

/// What `Registry::call` answers for `text`, as the model would read it.
async fn through_call(registry: &Registry, tool: &str, text: &str) -> Result<String, String> {
    call_with(registry, tool, Arguments::Text(text.to_owned())).await
}

async fn call_with(registry: &Registry, tool: &str, arguments: Arguments) -> Result<String, String> {
    registry
        .call(tool, arguments, ctx(tool))
        .await
        .map(|out| out.text_content())
        .map_err(|e| e.message().to_owned())
}

/// What validating `text` and then calling the tool with the validated value answers.
async fn through_validation(registry: &Registry, tool: &str, text: &str) -> Result<String, String> {
    validate_with(registry, tool, Arguments::Text(text.to_owned())).await
}

async fn validate_with(registry: &Registry, tool: &str, arguments: Arguments) -> Result<String, String> {
    let args = registry.validate(tool, arguments).map_err(|e| e.message().to_owned())?;
    registry
        .get(tool)
        .expect("tool")
        .call(ctx(tool), args.value)
        .await
        .map(|out| out.text_content())
        .map_err(|e| e.message().to_owned())
}

fn takes_direct_path(tool: &dyn Tool, text: &str) -> bool {
    tool.decode(&Arguments::Text(text.to_owned())).is_some()
}

/// The object `text` parses to, if it parses to one.
fn parsed(text: &str) -> Option<Value> {
    serde_json::from_str::<Value>(text).ok().filter(Value::is_object)
}

const BASE: &str = r#""a":1.5,"tags":["x"],"flag":true,"small":-3"#;

/// Each text, and whether the direct path takes it.
fn cases() -> Vec<(String, bool)> {
    let with = with_base;
    vec![
        (with(""), true),
        (format!("  {}\n", with("")), true),
        (with(r#","n":7,"depth":9,"name":"é\n","limit":1"#), true),
        // `null` for an `Option` without a default is `None` either way.
        (with(r#","n":null,"name":null"#), true),
        // For a parameter with a default, validation drops the `null` and the default applies.
        (with(r#","depth":null"#), false),
        (with(r#","limit":null"#), false),
        (r#"{"a":1,"tags":[],"flag":false,"small":127}"#.to_owned(), true),
        (r#"{"a":-1e300,"tags":[],"flag":false,"small":-128}"#.to_owned(), true),
        // Out of range, wrong type, integral float for an integer, string numbers.
        (with(r#","n":-1"#), false),
        (with(r#","n":4294967296"#), false),
        (r#"{"a":1,"tags":[],"flag":false,"small":128}"#.to_owned(), false),
        (with(r#","n":2.0"#), false),
        (with(r#","n":"2""#), false),
        (r#"{"a":"1.5","tags":[],"flag":false,"small":1}"#.to_owned(), false),
        (r#"{"a":1,"tags":"x","flag":false,"small":1}"#.to_owned(), false),
        (r#"{"a":1,"tags":[1],"flag":false,"small":1}"#.to_owned(), false),
        (r#"{"a":1,"tags":[],"flag":"true","small":1}"#.to_owned(), false),
        // Missing, unknown, repeated and escaped keys.
        (r#"{"tags":[],"flag":false,"small":1}"#.to_owned(), false),
        (with(r#","other":1"#), false),
        (with(r#","a":2"#), false),
        (r#"{"\u0061":1,"tags":[],"flag":false,"small":1}"#.to_owned(), false),
        // Not one object.
        (String::new(), false),
        ("[]".to_owned(), false),
        ("null".to_owned(), false),
        (format!("{} {{}}", with("")), false),
        (with("").trim_end_matches('}').to_owned(), false),
        ("{\"a\":1,}".to_owned(), false),
    ]
}

#[test]
fn the_direct_path_answers_as_validation_does() {
    let registry = registry();
    block_on(async {
        for (text, direct) in cases() {
            assert_eq!(takes_direct_path(&PlainTool, &text), direct, "direct path for {text:?}");
            let called = through_call(&registry, "plain", &text).await;
            let validated = through_validation(&registry, "plain", &text).await;
            assert_eq!(called, validated, "for {text:?}");
            if direct {
                assert!(called.is_ok(), "{text:?} took the direct path but failed: {called:?}");
            }
        }
    });
}

#[test]
fn the_direct_path_gives_what_the_function_receives() {
    let registry = registry();
    let text = r#"{"a":1.5,"tags":["x","y"],"flag":true,"small":-3,"name":"n"}"#;
    let answer = block_on(through_call(&registry, "plain", text)).expect("valid");
    assert_eq!(answer, r#"(1.5, None, ["x", "y"], true, -3, 3, Some("n"), 5)"#);
}

#[test]
fn a_tool_with_a_parameter_off_the_list_always_validates() {
    let registry = registry();
    for text in [r#"{"count":1}"#, r#"{"count":1,"extra":{"k":[1,null]}}"#] {
        assert!(!takes_direct_path(&MixedTool, text), "{text}");
        let called = block_on(through_call(&registry, "mixed", text));
        assert_eq!(called, block_on(through_validation(&registry, "mixed", text)));
        assert!(called.is_ok(), "{text}: {called:?}");
    }
}

/// What a dispatcher answers for `text`: the result's text, `Err` for an error result.
async fn through_dispatcher(dispatcher: &Dispatcher, text: &str) -> Result<String, String> {
    dispatch_with(dispatcher, Arguments::Text(text.to_owned())).await
}

async fn dispatch_with(dispatcher: &Dispatcher, arguments: Arguments) -> Result<String, String> {
    let call = ToolCall { id: "call".to_owned(), name: "plain".to_owned(), arguments };
    let result = dispatcher.run(call, CancellationToken::new()).await;
    let text = result.output.text_content();
    if result.output.is_error { Err(text) } else { Ok(text) }
}

/// A dispatcher takes the direct path only when no hook reads the arguments; with or without a
/// hook, it answers as `Registry::call` does.
#[test]
fn the_dispatcher_answers_as_registry_call_does_with_and_without_hooks() {
    let plain = Dispatcher::builder(registry()).repeat_guard(RepeatGuard::DISABLED).build();
    let hooked = Dispatcher::builder(registry())
        .repeat_guard(RepeatGuard::DISABLED)
        .before_hook(BeforeFn(|call: tool_runtime::hooks::HookCall| async move {
            assert!(call.arguments.is_object(), "the hook sees the validated arguments");
            Ok(BeforeDecision::Allow)
        }))
        .build();
    let registry = registry();
    block_on(async {
        for (text, _) in cases() {
            let called = through_call(&registry, "plain", &text).await;
            assert_eq!(through_dispatcher(&plain, &text).await, called, "for {text:?}");
            assert_eq!(through_dispatcher(&hooked, &text).await, called, "with a hook, for {text:?}");
        }
    });
}

/// The repeat guard compares the arguments, not their spelling, on the direct path too.
#[test]
fn the_repeat_guard_sees_the_same_call_whatever_the_spelling() {
    let dispatcher =
        Dispatcher::builder(registry()).repeat_guard(RepeatGuard::new(2, RepeatAction::Refuse)).build();
    let first = r#"{"a":1.5,"tags":["x"],"flag":true,"small":-3}"#;
    let same = "{ \"small\": -3,\n \"flag\": true, \"tags\": [ \"x\" ], \"a\": 1.5 }";
    let other = r#"{"a":1.5,"tags":["x"],"flag":true,"small":-4}"#;
    assert!(takes_direct_path(&PlainTool, first) && takes_direct_path(&PlainTool, same));
    block_on(async {
        assert!(through_dispatcher(&dispatcher, first).await.is_ok());
        let refused =
            through_dispatcher(&dispatcher, same).await.expect_err("the second identical call is refused");
        assert!(refused.contains("2 times in a row"), "{refused}");
        assert!(through_dispatcher(&dispatcher, other).await.is_ok(), "a different call starts a new row");
        assert!(through_dispatcher(&dispatcher, first).await.is_ok());
    });
}

/// A JSON value of any kind the parameters might or might not accept.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-300i32..300).prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        prop_oneof![Just(2.0), Just(-0.0), Just(1e20)].prop_map(Value::from),
        "[a-z0-9 \\\\\"é]{0,6}".prop_map(Value::from),
        Just(json!("12")),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::vec(("[a-c]", inner), 0..2)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

const NAMES: [&str; 10] = ["a", "n", "tags", "flag", "small", "depth", "name", "limit", "other", "\\u0061"];

/// An object text: members picked from the parameters (and two keys that are not), in any
/// order, sometimes repeated.
fn object_text() -> impl Strategy<Value = String> {
    prop::collection::vec((0..NAMES.len(), any_value()), 0..10).prop_map(|members| {
        let members: Vec<String> =
            members.iter().map(|(name, value)| format!("\"{}\":{value}", NAMES[*name])).collect();
        format!("{{{}}}", members.join(","))
    })
}

/// Mostly texts close to valid ones: the base members with others changed or added.
fn near_valid_text() -> impl Strategy<Value = String> {
    (prop::collection::vec((0..NAMES.len(), any_value()), 0..3), any::<bool>()).prop_map(
        |(members, first)| {
            let extra: Vec<String> =
                members.iter().map(|(name, value)| format!("\"{}\":{value}", NAMES[*name])).collect();
            let extra = extra.join(",");
            match (extra.is_empty(), first) {
                (true, _) => format!("{{{BASE}}}"),
                (false, true) => format!("{{{extra},{BASE}}}"),
                (false, false) => format!("{{{BASE},{extra}}}"),
            }
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn any_object_answers_as_validation_does(text in prop_oneof![object_text(), near_valid_text()]) {
        let registry = registry();
        let (called, validated) = block_on(async {
            (through_call(&registry, "plain", &text).await, through_validation(&registry, "plain", &text).await)
        });
        prop_assert_eq!(called, validated, "for {}", text);
    }
}

/// Each case's text parsed into an object, as MCP, Anthropic and Gemini hand arguments over:
/// the direct path takes it exactly when it takes the text, except where parsing already did
/// what the text path leaves to validation (a repeated key keeps its last value, an escaped key
/// is its plain name), and answers as validating the object does.
#[test]
fn the_direct_path_answers_as_validation_does_for_parsed_objects() {
    let registry = registry();
    let parsing_settles =
        [with_base(r#","a":2"#), r#"{"\u0061":1,"tags":[],"flag":false,"small":1}"#.to_owned()];
    block_on(async {
        let mut direct_objects = 0;
        for (text, direct) in cases() {
            let Some(value) = parsed(&text) else { continue };
            let direct = direct || parsing_settles.contains(&text);
            let arguments = Arguments::Json(value);
            assert_eq!(PlainTool.decode(&arguments).is_some(), direct, "direct path for {text:?}");
            let called = call_with(&registry, "plain", arguments.clone()).await;
            assert_eq!(called, validate_with(&registry, "plain", arguments).await, "for {text:?}");
            if direct {
                assert!(called.is_ok(), "{text:?} took the direct path but failed: {called:?}");
                direct_objects += 1;
            }
        }
        assert!(direct_objects >= 8, "only {direct_objects} objects took the direct path");
    });
}

fn with_base(members: &str) -> String {
    format!("{{{BASE}{members}}}")
}

#[test]
fn a_tool_with_a_parameter_off_the_list_always_validates_its_objects() {
    let registry = registry();
    for value in [json!({"count": 1}), json!({"count": 1, "extra": {"k": [1, null]}})] {
        let arguments = Arguments::Json(value);
        assert!(MixedTool.decode(&arguments).is_none(), "{arguments:?}");
        let called = block_on(call_with(&registry, "mixed", arguments.clone()));
        assert_eq!(called, block_on(validate_with(&registry, "mixed", arguments.clone())));
        assert!(called.is_ok(), "{arguments:?}: {called:?}");
    }
}

/// A dispatcher answers a parsed object as `Registry::call` does, with and without a hook (a
/// hook reads the arguments, so its calls validate), and counts repeats of it on either path.
#[test]
fn the_dispatcher_answers_parsed_objects_as_registry_call_does() {
    let plain = Dispatcher::builder(registry()).repeat_guard(RepeatGuard::DISABLED).build();
    let hooked = Dispatcher::builder(registry())
        .repeat_guard(RepeatGuard::DISABLED)
        .before_hook(BeforeFn(|_: tool_runtime::hooks::HookCall| async move { Ok(BeforeDecision::Allow) }))
        .build();
    let guarded =
        Dispatcher::builder(registry()).repeat_guard(RepeatGuard::new(2, RepeatAction::Refuse)).build();
    let registry = registry();
    block_on(async {
        for (text, _) in cases() {
            let Some(value) = parsed(&text) else { continue };
            let called = call_with(&registry, "plain", Arguments::Json(value.clone())).await;
            assert_eq!(dispatch_with(&plain, Arguments::Json(value.clone())).await, called, "for {text:?}");
            assert_eq!(
                dispatch_with(&hooked, Arguments::Json(value)).await,
                called,
                "with a hook, for {text:?}"
            );
        }
        let first = parsed(&with_base("")).expect("object");
        assert!(PlainTool.decode(&Arguments::Json(first.clone())).is_some());
        assert!(dispatch_with(&guarded, Arguments::Json(first.clone())).await.is_ok());
        let refused = dispatch_with(&guarded, Arguments::Json(first))
            .await
            .expect_err("the second identical call is refused");
        assert!(refused.contains("2 times in a row"), "{refused}");
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn any_parsed_object_answers_as_validation_does(text in prop_oneof![object_text(), near_valid_text()]) {
        let registry = registry();
        if let Some(value) = parsed(&text) {
            let arguments = Arguments::Json(value);
            let (called, validated) = block_on(async {
                (call_with(&registry, "plain", arguments.clone()).await, validate_with(&registry, "plain", arguments).await)
            });
            prop_assert_eq!(called, validated, "for {}", text);
        }
    }
}
