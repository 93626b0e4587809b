//! Properties of truncation and validation on generated inputs (proptest).
//!
//! Truncation: never splits a UTF-8 character, never keeps more than its limits, is the identity
//! within them, head keeps a prefix, tail a suffix, middle a prefix and a suffix around a marker,
//! and the notice stays within its documented overhead; the streaming form, fed raw bytes in
//! chunks that split characters and line ends, cuts exactly as the whole text. Validation: never panics, whatever the
//! text or JSON value, and what it accepts the tool can decode.
//!
//! Case counts are kept moderate so the suite runs in seconds; `PROPTEST_CASES=100000` runs more.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use tool_runtime::truncate::{NOTICE_OVERHEAD_MAX_BYTES, TruncationStream, truncate_output, truncate_text};
use tool_runtime::{
    Content, ErrorKind, Registry, ToolContext, ToolOutput,
    spec::{TruncationDirection, TruncationPolicy},
    tool,
    truncate::TruncationLimits,
};

/// Cases per property unless `PROPTEST_CASES` says otherwise.
const CASES: u32 = 512;

fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = CASES;
    }
    config
}

// ---------------------------------------------------------------------------------------------
// Truncation

/// Text made of pieces that stress the cut: one- to four-byte characters, `\n`, `\r\n`, blank
/// lines and long runs without a line break.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z ]{1,12}",
        2 => Just("\n".to_owned()),
        1 => Just("\r\n".to_owned()),
        1 => Just("\n\n".to_owned()),
        1 => Just("é".to_owned()),
        1 => Just("中文".to_owned()),
        1 => Just("😀".to_owned()),
        1 => Just("\r".to_owned()),
        1 => "[a-z]{40,120}",
    ];
    proptest::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
}

fn direction() -> impl Strategy<Value = TruncationDirection> {
    prop_oneof![
        Just(TruncationDirection::Head),
        Just(TruncationDirection::Tail),
        Just(TruncationDirection::Middle),
    ]
}

fn limits() -> impl Strategy<Value = TruncationLimits> {
    (0usize..30, 0usize..400, direction())
        .prop_map(|(max_lines, max_bytes, direction)| TruncationLimits::new(max_lines, max_bytes, direction))
}

// An oracle written apart from `tool_runtime::truncate::count_lines` on purpose: the engine's
// counts are checked against it, so it must not share the engine's code.
fn count_lines(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count() + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Splits a middle cut into its two kept ends, using the marker line between them.
fn middle_ends<'a>(text: &str, kept: &'a str, kept_bytes: usize) -> (&'a str, &'a str) {
    let Some(start) = kept.find("[... ") else {
        // Without a marker only one end was kept.
        return if text.starts_with(kept) { (kept, "") } else { ("", kept) };
    };
    let end =
        start + kept[start..].find(" cut ...]\n").expect("the marker ends its line") + " cut ...]\n".len();
    let (before, after) = (&kept[..start], &kept[end..]);
    // The marker starts a line: a `\n` was added after a head that does not end with one.
    let head = if before.len() + after.len() == kept_bytes { before } else { &before[..before.len() - 1] };
    (head, after)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn truncation_keeps_whole_characters_within_its_limits(text in text(), limits in limits()) {
        let cut = truncate_text(&text, &limits);
        let info = &cut.info;
        let kept: &str = &cut.text;
        prop_assert_eq!(info.total_bytes, text.len());
        prop_assert_eq!(info.total_lines, count_lines(&text));
        prop_assert!(info.kept_bytes <= limits.max_bytes || !info.truncated, "{info:?}");
        prop_assert!(info.kept_lines <= limits.max_lines || !info.truncated, "{info:?}");

        let within = text.len() <= limits.max_bytes && count_lines(&text) <= limits.max_lines;
        prop_assert_eq!(info.truncated, !within);
        if within {
            prop_assert_eq!(kept, text.as_str());
            return Ok(());
        }
        match limits.direction {
            TruncationDirection::Head => {
                prop_assert!(text.starts_with(kept), "head keeps a prefix");
                prop_assert!(text.is_char_boundary(kept.len()));
                prop_assert_eq!(kept.len(), info.kept_bytes);
                prop_assert!(count_lines(kept) <= limits.max_lines);
            }
            TruncationDirection::Tail => {
                prop_assert!(text.ends_with(kept), "tail keeps a suffix");
                prop_assert!(text.is_char_boundary(text.len() - kept.len()));
                prop_assert_eq!(kept.len(), info.kept_bytes);
                prop_assert!(count_lines(kept) <= limits.max_lines);
            }
            TruncationDirection::Middle => {
                let (head, tail) = middle_ends(&text, kept, info.kept_bytes);
                prop_assert!(text.starts_with(head), "middle keeps a prefix: {kept:?}");
                prop_assert!(text.ends_with(tail), "middle keeps a suffix: {kept:?}");
                prop_assert!(text.is_char_boundary(head.len()));
                prop_assert!(text.is_char_boundary(text.len() - tail.len()));
                prop_assert!(head.len() + tail.len() <= text.len(), "the ends do not overlap");
                prop_assert_eq!(head.len() + tail.len(), info.kept_bytes);
            }
        }
        // A character takes at most 4 bytes, so a cut with room for one shows something (middle
        // splits the budget between its two ends).
        let room = if limits.direction == TruncationDirection::Middle { 8 } else { 4 };
        if limits.max_lines > 0 && limits.max_bytes >= room {
            prop_assert!(info.kept_bytes > 0, "{info:?}");
        }
        let with_notice = cut.clone().into_text_with_notice();
        prop_assert!(with_notice.starts_with(kept));
        prop_assert!(with_notice.len() <= info.kept_bytes.max(kept.len()) + NOTICE_OVERHEAD_MAX_BYTES);
    }

    #[test]
    fn the_stream_cuts_exactly_as_the_whole_text(
        text in text(),
        noise in proptest::collection::vec((any::<prop::sample::Index>(), prop_oneof![Just(0xffu8), Just(0xe2), Just(0x80), Just(0xf0)]), 0..3),
        chunks in proptest::collection::vec(1usize..9, 1..8),
        limits in limits(),
    ) {
        // The text with a few stray bytes (invalid or unfinished UTF-8) at random places.
        let mut raw = text.into_bytes();
        for (at, byte) in noise {
            let at = if raw.is_empty() { 0 } else { at.index(raw.len() + 1) };
            raw.insert(at, byte);
        }
        let whole = String::from_utf8_lossy(&raw).into_owned();
        let mut stream = TruncationStream::new(limits);
        let mut echoed = String::new();
        let (mut at, mut i) = (0, 0);
        while at < raw.len() {
            let end = (at + chunks[i % chunks.len()]).min(raw.len());
            echoed.push_str(&stream.push_bytes(&raw[at..end]));
            (at, i) = (end, i + 1);
        }
        echoed.push_str(&stream.flush());
        prop_assert_eq!(&echoed, &whole);
        prop_assert_eq!(stream.finish(), truncate_text(&whole, &limits));
    }

    #[test]
    fn truncating_several_items_stays_within_the_budget_plus_the_notice(
        items in proptest::collection::vec(text(), 1..5),
        limits in limits(),
    ) {
        let mut output = ToolOutput::default();
        for item in &items {
            output.content.push(Content::text(item.clone()));
        }
        output.content.push(Content::image("image/png", "AAAA"));
        let policy = TruncationPolicy::default();
        let info = truncate_output(&mut output, &policy, &limits);
        let texts: Vec<&str> = output.content.iter().filter_map(Content::as_text).collect();
        let images = output.content.iter().filter(|c| c.as_text().is_none()).count();
        prop_assert_eq!(images, 1, "images are never touched");
        match info {
            None => {
                let original: Vec<&str> = items.iter().map(String::as_str).collect();
                prop_assert_eq!(texts, original, "within the limits nothing changes");
            }
            Some(info) => {
                prop_assert!(output.truncated);
                prop_assert!(info.kept_bytes <= limits.max_bytes);
                prop_assert!(info.kept_lines <= limits.max_lines);
                let shown: usize = texts.iter().map(|t| t.len()).sum();
                prop_assert!(shown <= limits.max_bytes + NOTICE_OVERHEAD_MAX_BYTES, "{shown} bytes: {texts:?}");
                // Truncating again does nothing: never truncated twice.
                let again = truncate_output(&mut output, &policy, &limits);
                prop_assert!(again.is_none());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Validation

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Content,
    FilesWithMatches,
    Count,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Span {
    #[schemars(range(min = 1))]
    start: u32,
    end: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(dead_code)]
enum Filter {
    Glob { pattern: String },
    Size { max_bytes: u64 },
}

/// A tool whose schema has a bit of everything the validator handles.
#[tool(parallel)]
#[allow(clippy::too_many_arguments)]
async fn rich(
    /// Non-empty text.
    #[schemars(length(min = 1, max = 64))]
    pattern: String,
    /// Optional path.
    path: Option<String>,
    /// A list of strings.
    globs: Vec<String>,
    /// An enum of strings.
    mode: Mode,
    /// A bounded integer with a default.
    #[arg(default = 100)]
    #[schemars(range(min = 1, max = 1000))]
    limit: u32,
    /// A float.
    ratio: Option<f64>,
    /// A boolean.
    #[arg(default = false)]
    verbose: bool,
    /// A nested optional object.
    span: Option<Span>,
    /// Internally tagged enum values.
    filters: Option<Vec<Filter>>,
    /// A map.
    env: Option<BTreeMap<String, String>>,
    /// A regular-expression constraint.
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    label: Option<String>,
) -> String {
    format!(
        "{pattern}:{path:?}:{globs:?}:{mode:?}:{limit}:{ratio:?}:{verbose}:{span:?}:{filters:?}:{env:?}:{label:?}"
    )
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY
        .get_or_init(|| Registry::builder().tool(RichTool).tools(tools_std::all()).build().expect("registry"))
}

const KEYS: [&str; 18] = [
    "pattern",
    "path",
    "globs",
    "mode",
    "limit",
    "ratio",
    "verbose",
    "span",
    "start",
    "end",
    "filters",
    "kind",
    "max_bytes",
    "env",
    "label",
    "command",
    "a/b~c",
    "",
];

/// Arbitrary JSON, biased towards the property names of the schemas under test.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[a-z0-9 ]{0,8}".prop_map(Value::from),
        prop_oneof![
            Just("content"),
            Just("count"),
            Just("glob"),
            Just("size"),
            Just("10"),
            Just("true"),
            Just("[]"),
            Just("{}")
        ]
        .prop_map(Value::from),
        "\\PC{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(
                (
                    prop_oneof![proptest::sample::select(&KEYS[..]).prop_map(str::to_owned), "[a-z]{1,6}"],
                    inner
                ),
                0..8
            )
            .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

/// Arguments for `rich`: each property left out, given a plausible value (valid or near a
/// boundary), or given anything; sometimes an unknown property.
fn rich_arguments() -> impl Strategy<Value = Value> {
    fn int() -> impl Strategy<Value = Value> {
        prop_oneof![
            (-2i64..1002).prop_map(Value::from),
            proptest::sample::select(
                &[0i64, 1, 1000, 1001, u32::MAX as i64, u32::MAX as i64 + 1, i64::MAX][..]
            )
            .prop_map(Value::from),
            proptest::sample::select(&[10.5f64][..]).prop_map(Value::from),
            proptest::sample::select(&["10", " 7 ", "1e3", "-1", "4294967296", "x"][..])
                .prop_map(Value::from),
        ]
    }
    let text = || "[a-z]{0,3}|\\PC{0,70}".prop_map(Value::from);
    let span = prop_oneof![
        (int(), prop_oneof![int(), Just(Value::Null)])
            .prop_map(|(start, end)| serde_json::json!({"start": start, "end": end})),
        int().prop_map(|start| serde_json::json!({"start": start})),
        int().prop_map(|start| Value::from(serde_json::json!({"start": start}).to_string())),
    ];
    let filter = prop_oneof![
        text().prop_map(|pattern| serde_json::json!({"kind": "glob", "pattern": pattern})),
        int().prop_map(|max_bytes| serde_json::json!({"kind": "size", "max_bytes": max_bytes})),
        json_value(),
    ];
    let env = proptest::collection::btree_map("[A-Z]{1,4}", prop_oneof![text(), int()], 0..3)
        .prop_map(|map| Value::Object(map.into_iter().collect()));
    let mode = proptest::sample::select(&["content", "count", "files_with_matches", "Count", "lines"][..])
        .prop_map(Value::from);
    let properties: Vec<(&'static str, BoxedStrategy<Value>)> = vec![
        ("pattern", text().boxed()),
        ("path", prop_oneof![text(), Just(Value::Null)].boxed()),
        (
            "globs",
            prop_oneof![
                proptest::collection::vec(text(), 0..3).prop_map(Value::Array),
                Just(Value::from("[\"a\"]"))
            ]
            .boxed(),
        ),
        ("mode", mode.boxed()),
        ("limit", int().boxed()),
        ("ratio", prop_oneof![int(), any::<f64>().prop_map(Value::from)].boxed()),
        (
            "verbose",
            proptest::sample::select(vec![Value::Bool(true), Value::from("True"), Value::from(1)]).boxed(),
        ),
        ("span", span.boxed()),
        ("filters", proptest::collection::vec(filter, 0..3).prop_map(Value::Array).boxed()),
        ("env", env.boxed()),
        ("label", proptest::sample::select(&["abc", "ABC", ""][..]).prop_map(Value::from).boxed()),
    ];
    let required = ["pattern", "globs", "mode"];
    let per_property: Vec<BoxedStrategy<Option<(String, Value)>>> = properties
        .into_iter()
        .map(|(key, plausible)| {
            let entry = move |value: Value| Some((key.to_owned(), value));
            let weight_absent = if required.contains(&key) { 1 } else { 4 };
            prop_oneof![
                weight_absent => Just(None),
                8 => plausible.prop_map(entry),
                1 => json_value().prop_map(entry),
            ]
            .boxed()
        })
        .collect();
    let unknown = proptest::option::weighted(0.1, ("[a-z]{1,6}", json_value()));
    (per_property, unknown).prop_map(|(entries, unknown)| {
        let mut object: Map<String, Value> = entries.into_iter().flatten().collect();
        if let Some((key, value)) = unknown {
            object.insert(key, value);
        }
        Value::Object(object)
    })
}

fn tool_name() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(
        &["rich", "rich", "rich", "read", "write", "edit", "bash", "glob", "grep", "ls", "todo_write"][..],
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().build().expect("runtime")
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_text_is_accepted_or_refused_with_its_problems(name in tool_name(), raw in "\\PC{0,64}|[\\[\\]{}\":,0-9a-z ]{0,64}") {
        let registry = registry();
        match registry.validate(name, &raw) {
            Ok(args) => prop_assert!(args.value.is_object()),
            Err(error) => {
                prop_assert_eq!(error.kind(), ErrorKind::InvalidArguments);
                prop_assert!(error.message().contains(&format!("`{name}`")), "{}", error.message());
                prop_assert!(error.message().lines().any(|line| line.starts_with("- ")), "{}", error.message());
            }
        }
    }

    #[test]
    fn any_json_is_accepted_or_refused_with_its_problems(name in tool_name(), value in json_value()) {
        let registry = registry();
        let raw = value.to_string();
        match registry.validate(name, &raw) {
            Ok(args) => prop_assert!(args.value.is_object()),
            Err(error) => {
                prop_assert_eq!(error.kind(), ErrorKind::InvalidArguments);
                prop_assert!(error.message().contains(&format!("`{name}`")), "{}", error.message());
                prop_assert!(error.message().lines().any(|line| line.starts_with("- ")), "{}", error.message());
            }
        }
    }

    /// What validation accepts, the tool decodes: the model never gets past validation only to
    /// fail in the tool's own argument decoding.
    #[test]
    fn accepted_arguments_decode(arguments in rich_arguments()) {
        let registry = registry();
        let raw = arguments.to_string();
        if registry.validate("rich", &raw).is_ok() {
            if std::env::var_os("PROPERTIES_DEBUG").is_some() {
                eprintln!("accepted: {raw}");
            }
            let ctx = ToolContext::builder("rich").build();
            if let Err(error) = runtime().block_on(registry.call("rich", &raw, ctx)) {
                prop_assert!(false, "{raw} passed validation but: {}", error.message());
            }
        }
    }
}

/// What used to pass validation and fail in decoding, with serde's words and one problem only:
/// an integer written as `10.0`, one past its type's range, a problem inside an optional nested
/// object. Each is now a validation problem at its own path, in the validator's words.
#[test]
fn integer_formats_and_optional_objects_are_checked_where_the_problem_is() {
    let registry = registry();
    for (raw, problem) in [
        (
            r#"{"pattern": "a", "globs": [], "mode": "count", "limit": 10.0}"#,
            "- /limit: expected an integer written without a fraction or exponent, received 10.0 (a number)",
        ),
        (
            r#"{"pattern": "a", "globs": [], "mode": "count", "limit": 4294967296}"#,
            "- /limit: must be at most 4294967295 (the largest uint32), received 4294967296 (an integer)",
        ),
        (
            r#"{"pattern": "a", "globs": [], "mode": "count", "span": {"start": 4294967296}}"#,
            "- /span/start: must be at most 4294967295 (the largest uint32), received 4294967296 (an integer)",
        ),
        (
            r#"{"pattern": "a", "globs": [], "mode": "count", "span": {"start": 0, "stop": 3}}"#,
            "- /span/start: must be at least 1, received 0 (an integer)\n- /span/stop: unknown property; valid properties are `start`, `end`",
        ),
    ] {
        let error = registry.validate("rich", raw).expect_err(raw);
        assert!(error.message().contains(problem), "{raw}:\n{}", error.message());
        let ctx = ToolContext::builder("rich").build();
        let called = runtime().block_on(registry.call("rich", raw, ctx)).expect_err(raw);
        assert_eq!(called.message(), error.message());
    }
}
