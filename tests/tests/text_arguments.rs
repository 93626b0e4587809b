//! A `#[tool]` whose parameters are all plain types (numbers, strings, booleans, and options and
//! vectors of them) decodes arguments sent as text straight from the text
//! (`Tool::decode_text`), without a `Value` or the schema validator. These tests hold that path
//! against the validating one: for any text, `Registry::call` answers exactly what validating
//! the text and then calling the tool answers, and the direct path is taken only for text it is
//! sure of.

use proptest::prelude::*;
use serde_json::{Value, json};
use tool_runtime::{
    Arguments, BeforeDecision, BeforeFn, CancellationToken, Dispatcher, Registry, RepeatAction, RepeatGuard,
    Tool, ToolCall, ToolContext, tool,
};

/// Plain parameters only.
#[tool]
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
#[tool]
async fn mixed(count: u32, extra: Option<Value>) -> String {
    format!("{:?}", (count, extra))
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
    registry
        .call(tool, Arguments::Text(text.to_owned()), ctx(tool))
        .await
        .map(|out| out.text_content())
        .map_err(|e| e.message().to_owned())
}

/// What validating `text` and then calling the tool with the validated value answers.
async fn through_validation(registry: &Registry, tool: &str, text: &str) -> Result<String, String> {
    let args =
        registry.validate(tool, Arguments::Text(text.to_owned())).map_err(|e| e.message().to_owned())?;
    registry
        .get(tool)
        .expect("tool")
        .call(ctx(tool), args.value)
        .await
        .map(|out| out.text_content())
        .map_err(|e| e.message().to_owned())
}

fn takes_direct_path(tool: &dyn Tool, text: &str) -> bool {
    tool.decode_text(text).is_some()
}

const BASE: &str = r#""a":1.5,"tags":["x"],"flag":true,"small":-3"#;

/// Each text, and whether the direct path takes it.
fn cases() -> Vec<(String, bool)> {
    let with = |members: &str| format!("{{{BASE}{members}}}");
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
    let result = dispatcher.run(ToolCall::new("call", "plain", text), CancellationToken::new()).await;
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
        .before_hook(BeforeFn(|call: tool_runtime::HookCall| async move {
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
