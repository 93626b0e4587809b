//! `LoadedTools`: the deferred tools one conversation has found so far, in the order found.

use std::collections::HashSet;

/// The deferred tools a conversation's searches have found, in the order they were first found.
///
/// Providers without a native deferred form (OpenAI Chat Completions, Gemini) get these tools'
/// full definitions from the next request on, appended after the tools that are always there:
/// a request's definitions only ever grow at the end, so the provider's prompt cache of the
/// earlier ones survives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadedTools {
    order: Vec<String>,
    seen: HashSet<String>,
}

impl LoadedTools {
    /// Nothing found yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records tools as found; those already found keep their place. Returns the newly found.
    pub fn load<I, S>(&mut self, names: I) -> Vec<String>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut added = Vec::new();
        for name in names {
            let name = name.into();
            if self.seen.insert(name.clone()) {
                self.order.push(name.clone());
                added.push(name);
            }
        }
        added
    }

    /// Whether `name` was found.
    pub fn contains(&self, name: &str) -> bool {
        self.seen.contains(name)
    }

    /// The found tools, in the order they were first found.
    pub fn names(&self) -> &[String] {
        &self.order
    }

    /// Number of found tools.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether nothing was found yet.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

impl<S: Into<String>> FromIterator<S> for LoadedTools {
    fn from_iter<I: IntoIterator<Item = S>>(names: I) -> Self {
        let mut loaded = LoadedTools::new();
        loaded.load(names);
        loaded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_first_found_order_without_duplicates() {
        let mut loaded = LoadedTools::new();
        assert_eq!(loaded.load(["b", "a"]), ["b", "a"]);
        assert_eq!(loaded.load(["a", "c", "b"]), ["c"]);
        assert_eq!(loaded.names(), ["b", "a", "c"]);
        assert!(loaded.contains("c") && !loaded.contains("d"));
    }
}
