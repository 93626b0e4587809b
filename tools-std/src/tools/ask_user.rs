//! The `ask_user` tool: put a question to the user (choices, several choices, or free text) and
//! wait for the answer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tool_runtime::context::UserAnswer;
use tool_runtime::{ToolContext, ToolError, tool};

/// One answer the user can pick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    /// The answer, a few words.
    #[schemars(length(min = 1, max = 200))]
    pub label: String,
    /// What choosing it means, when the label does not say.
    #[serde(default)]
    pub description: Option<String>,
}

/// The form property holding the chosen option(s), or the text when there are no options.
const ANSWER: &str = "answer";
/// The form property holding a written answer next to the options.
const OTHER: &str = "other";

/// Ask the user a question and wait for the answer.
///
/// Use it when you cannot go on without the user's decision or knowledge (which of two designs,
/// a name, a value only they know), not for confirmation of what you were asked to do. Give
/// `options` for a choice (two to ten short labels, each with a description when the label alone
/// is unclear); `multi_select` lets them pick several; `allow_other` (default true) also lets
/// them write their own answer. Without options they answer in free text. The answer says what
/// they chose or wrote, or that they declined.
#[tool(parallel, read_only, title = "Ask the user", timeout = "10m")]
pub async fn ask_user(
    ctx: &ToolContext,
    /// The question, complete and specific, as the user will read it.
    #[schemars(length(min = 1, max = 2000))]
    question: String,
    /// The answers to choose from (none: a free-text answer).
    #[schemars(length(max = 10))]
    options: Option<Vec<Choice>>,
    /// Whether the user may pick several options.
    #[arg(default = false)]
    multi_select: bool,
    /// Whether the user may write an answer of their own besides the options.
    #[arg(default = true)]
    allow_other: bool,
) -> Result<String, ToolError> {
    let options = options.unwrap_or_default();
    let schema = form(&options, multi_select, allow_other);
    match ctx.ask_user(&question, &schema).await? {
        UserAnswer::Accept(content) => Ok(answer_text(&content, &options)),
        UserAnswer::Decline => Ok("The user declined to answer. Do not ask again; go on without it, or stop.".to_owned()),
        UserAnswer::Cancel => Ok(
            "The user dismissed the question without answering. Go on without it if you can, or stop and say \
             what you need."
                .to_owned(),
        ),
    }
}

/// The elicitation form: one choice (single or multiple) and an optional written answer, or one
/// text field.
fn form(options: &[Choice], multi_select: bool, allow_other: bool) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    if options.is_empty() {
        properties.insert(ANSWER.to_owned(), json!({"type": "string", "title": "Your answer"}));
        required.push(ANSWER);
    } else {
        let choices: Vec<Value> = options
            .iter()
            .map(|choice| {
                let title = match &choice.description {
                    Some(description) if !description.trim().is_empty() => {
                        format!("{}: {}", choice.label, description.trim())
                    }
                    _ => choice.label.clone(),
                };
                json!({"const": choice.label, "title": title})
            })
            .collect();
        let answer = if multi_select {
            json!({"type": "array", "title": "Choose any", "items": {"anyOf": choices}})
        } else {
            json!({"type": "string", "title": "Choose one", "oneOf": choices})
        };
        properties.insert(ANSWER.to_owned(), answer);
        if allow_other {
            properties
                .insert(OTHER.to_owned(), json!({"type": "string", "title": "Or write your own answer"}));
        } else {
            required.push(ANSWER);
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// Options given as plain strings (`["yes", "no"]`, as other agents' question tools take them)
/// become options with those labels; see
/// [`Tool::adapt_arguments`](tool_runtime::Tool::adapt_arguments).
pub(crate) fn adapt_arguments(
    arguments: &mut Map<String, Value>,
    coercions: &mut Vec<tool_runtime::validate::Coercion>,
) {
    let Some(Value::Array(options)) = arguments.get_mut("options") else { return };
    for (i, option) in options.iter_mut().enumerate() {
        if let Value::String(label) = option {
            *option = json!({ "label": std::mem::take(label) });
            coercions.push(tool_runtime::validate::Coercion {
                path: format!("/options/{i}"),
                to: "object".to_owned(),
            });
        }
    }
}

/// What the model reads: the choices and the written answer, as the user gave them.
fn answer_text(content: &Map<String, Value>, options: &[Choice]) -> String {
    let mut chosen: Vec<String> = match content.get(ANSWER) {
        Some(Value::String(one)) if !one.is_empty() => vec![one.clone()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    let written = content.get(OTHER).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    let mut parts = Vec::new();
    if options.is_empty() {
        if let Some(text) = chosen.pop() {
            return format!("The user answered: {text}");
        }
    } else if !chosen.is_empty() {
        let quoted: Vec<String> = chosen.iter().map(|label| format!("\"{label}\"")).collect();
        parts.push(format!("The user chose {}.", quoted.join(", ")));
    }
    if let Some(text) = written {
        parts.push(format!("The user wrote: {text}"));
    }
    if parts.is_empty() {
        return "The user accepted the question but gave no answer. Go on without it if you can, or ask once \
                more, more plainly."
            .to_owned();
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choices(labels: &[&str]) -> Vec<Choice> {
        labels.iter().map(|label| Choice { label: (*label).to_owned(), description: None }).collect()
    }

    #[test]
    fn the_form_asks_for_one_choice_several_or_text() {
        let options = vec![
            Choice { label: "tokio".to_owned(), description: Some("async runtime".to_owned()) },
            Choice { label: "std".to_owned(), description: None },
        ];
        let single = form(&options, false, false);
        assert_eq!(
            single,
            json!({"type": "object", "required": ["answer"], "properties": {"answer": {
                "type": "string", "title": "Choose one",
                "oneOf": [{"const": "tokio", "title": "tokio: async runtime"}, {"const": "std", "title": "std"}]
            }}})
        );
        let multi = form(&options, true, true);
        assert_eq!(multi["properties"]["answer"]["type"], "array");
        assert_eq!(multi["properties"]["answer"]["items"]["anyOf"][1]["const"], "std");
        assert_eq!(multi["properties"]["other"]["type"], "string");
        assert_eq!(multi["required"], json!([]));
        assert_eq!(
            form(&[], false, true)["properties"]["answer"],
            json!({"type": "string", "title": "Your answer"})
        );
    }

    #[test]
    fn answers_read_as_sentences() {
        let answer = |value: Value, options: &[Choice]| answer_text(value.as_object().unwrap(), options);
        assert_eq!(answer(json!({"answer": "b"}), &choices(&["a", "b"])), "The user chose \"b\".");
        assert_eq!(
            answer(json!({"answer": ["a", "b"]}), &choices(&["a", "b"])),
            "The user chose \"a\", \"b\"."
        );
        assert_eq!(
            answer(json!({"answer": ["a"], "other": " and c "}), &choices(&["a"])),
            "The user chose \"a\".\nThe user wrote: and c"
        );
        assert_eq!(answer(json!({"answer": "blue"}), &[]), "The user answered: blue");
        assert!(
            answer(json!({}), &choices(&["a"]))
                .starts_with("The user accepted the question but gave no answer.")
        );
    }

    /// Answers every question with the first option of its form.
    struct FirstOption;

    impl tool_runtime::context::UserAsker for FirstOption {
        fn ask<'a>(
            &'a self,
            _message: &'a str,
            schema: &'a Value,
        ) -> tool_runtime::BoxFuture<'a, Result<UserAnswer, tool_runtime::context::Unanswered>> {
            let first = schema["properties"]["answer"]["oneOf"][0]["const"].clone();
            Box::pin(async move {
                Ok(UserAnswer::Accept(json!({ "answer": first }).as_object().unwrap().clone()))
            })
        }
    }

    #[tokio::test]
    async fn options_as_plain_strings_are_labels_and_a_wrong_shape_is_named() {
        let mut fx = crate::testing::Fixture::new();
        let mut deps = (*fx.deps).clone();
        deps.insert(tool_runtime::context::AskerDependency(std::sync::Arc::new(FirstOption)));
        fx.deps = std::sync::Arc::new(deps);
        let out = fx
            .dispatch("ask_user", r#"{"question": "Which?", "options": ["tokio", {"label": "std"}]}"#)
            .await;
        assert_eq!(out.text_content(), "The user chose \"tokio\".");
        assert_eq!(
            crate::testing::Fixture::coercions(&out),
            [("/options/0".to_owned(), "object".to_owned())]
        );
        let out =
            fx.dispatch("ask_user", r#"{"question": "Which?", "options": [1, {"value": "std"}]}"#).await;
        assert!(out.is_error);
        let text = out.text_content();
        for expected in [
            "- /options/0: expected an object with the properties `label` (required), `description`, received 1 (an integer)",
            "- /options/1/value: unknown property; valid properties are `label`, `description`",
            "- /options/1/label: missing required property",
        ] {
            assert!(text.contains(expected), "{expected}\n{text}");
        }
    }

    #[tokio::test]
    async fn a_headless_host_refuses_with_a_reason() {
        let fx = crate::testing::Fixture::new();
        let error = fx.error("ask_user", json!({"question": "Which database?"})).await;
        assert!(
            error
                .message()
                .starts_with("Nobody can answer a question here: this host runs without a person to ask"),
            "{}",
            error.message()
        );
    }
}
