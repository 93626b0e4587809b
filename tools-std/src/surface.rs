//! Which file-editing tools to offer a model: `apply_patch` to OpenAI's GPT and o-series models, `edit` and `multi_edit` to the others.
//!
//! A recommendation, not a rule: OpenAI's coding models are trained on the `apply_patch`
//! format, Claude models on search-and-replace edits. Nothing in the crate applies it; an
//! application that wants it installs the filter on its registry:
//!
//! ```
//! use tools_std::surface::edit_tools_for;
//!
//! let registry = tool_runtime::Registry::builder()
//!     .tools(tools_std::all())
//!     .filter(edit_tools_for("gpt-5-codex"))
//!     .build()
//!     .unwrap();
//! assert!(registry.contains("apply_patch") && !registry.contains("edit"));
//! assert!(registry.contains("read") && registry.contains("write"));
//! ```

use tool_runtime::ToolSpec;

/// How a model family edits files best.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EditStyle {
    /// Patches in the `apply_patch` format, several files per call.
    Patch,
    /// Search-and-replace edits: `edit`, and `multi_edit` for several in one file.
    SearchReplace,
}

impl EditStyle {
    /// The editing tools of this style.
    pub fn tools(self) -> &'static [&'static str] {
        match self {
            EditStyle::Patch => &["apply_patch"],
            EditStyle::SearchReplace => &["edit", "multi_edit"],
        }
    }
}

/// The editing tools that are offered to one style and withheld from the other.
const EDIT_TOOLS: [&str; 3] = ["apply_patch", "edit", "multi_edit"];

/// The edit style recommended for a model, by its API name: [`EditStyle::Patch`] for OpenAI's
/// GPT, o-series and codex models (`gpt-4.1`, `gpt-5-codex`, `o3`, `o4-mini`, `codex-mini-latest`,
/// with or without an `openai/` prefix), [`EditStyle::SearchReplace`] for every other model.
pub fn edit_style_for(model: &str) -> EditStyle {
    let model = model.trim().to_ascii_lowercase();
    let name = model.rsplit('/').next().unwrap_or(&model);
    let o_series = name.strip_prefix('o').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    if name.starts_with("gpt-") || name.starts_with("codex") || o_series {
        EditStyle::Patch
    } else {
        EditStyle::SearchReplace
    }
}

/// A registry filter (for `RegistryBuilder::filter`) that keeps every tool except the editing
/// tools not recommended for `model` (see [`edit_style_for`]).
pub fn edit_tools_for(model: &str) -> impl Fn(&ToolSpec) -> bool + Send + Sync + 'static {
    edit_tools_of(edit_style_for(model))
}

/// A registry filter that keeps every tool except the editing tools of the other style.
pub fn edit_tools_of(style: EditStyle) -> impl Fn(&ToolSpec) -> bool + Send + Sync + 'static {
    move |spec| !EDIT_TOOLS.contains(&spec.name.as_str()) || style.tools().contains(&spec.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_families() {
        for model in
            ["gpt-5", "gpt-4.1-mini", "GPT-5-Codex", "openai/gpt-5", "o3", "o4-mini", "codex-mini-latest"]
        {
            assert_eq!(edit_style_for(model), EditStyle::Patch, "{model}");
        }
        for model in [
            "claude-sonnet-4-5",
            "anthropic/claude-opus-4",
            "gemini-2.5-pro",
            "qwen3-coder",
            "llama-3",
            "opus",
            "",
        ] {
            assert_eq!(edit_style_for(model), EditStyle::SearchReplace, "{model}");
        }
    }

    #[test]
    fn the_filter_swaps_only_the_editing_tools() {
        let names = |model: &str| -> Vec<String> {
            let filter = edit_tools_for(model);
            crate::all().iter().map(|t| t.spec().clone()).filter(|s| filter(s)).map(|s| s.name).collect()
        };
        let all: Vec<String> = crate::all().iter().map(|t| t.spec().name.clone()).collect();
        let gpt = names("gpt-5");
        let claude = names("claude-sonnet-4-5");
        assert!(gpt.contains(&"apply_patch".to_owned()) && !gpt.contains(&"edit".to_owned()));
        assert!(!gpt.contains(&"multi_edit".to_owned()));
        assert!(claude.contains(&"edit".to_owned()) && claude.contains(&"multi_edit".to_owned()));
        assert!(!claude.contains(&"apply_patch".to_owned()));
        assert_eq!(gpt.len(), all.len() - 2);
        assert_eq!(claude.len(), all.len() - 1);
    }
}
