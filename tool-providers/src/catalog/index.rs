//! `SearchIndex`: a BM25 index over the tools of a registry (name, description, parameter names
//! and descriptions), built once and searched per query.

use std::collections::HashMap;

use serde_json::Value;

use super::terms::{for_each_term, terms};
use tool_core::ToolSpec;

/// How much a word counts in each field: a word of the name says most about a tool.
const NAME_WEIGHT: f32 = 3.0;
const DESCRIPTION_WEIGHT: f32 = 1.0;
const PARAMETER_NAME_WEIGHT: f32 = 1.0;
const PARAMETER_DESCRIPTION_WEIGHT: f32 = 0.5;
/// BM25's term-frequency saturation and length normalisation (the usual values).
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// How deep nested parameter objects are read.
const SCHEMA_DEPTH: usize = 3;

/// One term's documents, with the term's weighted frequency in each.
#[derive(Debug, Default)]
struct Postings {
    docs: Vec<u32>,
    frequencies: Vec<f32>,
}

/// A BM25 index over tools. Documents are numbered in the order they were indexed (for a
/// registry, its registration order).
#[derive(Debug)]
pub struct SearchIndex {
    postings: HashMap<String, Postings>,
    /// Each document's weighted length over its average: BM25's length normalisation, ready.
    length_ratio: Vec<f32>,
    /// Lowercased tool names, for queries that name a tool outright.
    names: HashMap<String, u32>,
}

/// One document found by [`SearchIndex::search`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The document's number (the tool's position in the registry).
    pub doc: usize,
    /// Its BM25 score (`f32::INFINITY` when the query named the tool).
    pub score: f32,
}

impl SearchIndex {
    /// Indexes `specs`, in order.
    pub fn new<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> SearchIndex {
        let mut postings: HashMap<String, Postings> = HashMap::new();
        let mut lengths = Vec::new();
        let mut names = HashMap::new();
        let mut counts: HashMap<String, f32> = HashMap::new();
        for (doc, spec) in specs.into_iter().enumerate() {
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            names.entry(spec.name.to_lowercase()).or_insert(doc);
            counts.clear();
            let mut length = 0.0;
            let mut add = |text: &str, weight: f32| {
                for_each_term(text, |term| {
                    *counts.entry(term).or_default() += weight;
                    length += weight;
                });
            };
            add(&spec.name, NAME_WEIGHT);
            add(&spec.description, DESCRIPTION_WEIGHT);
            parameters(&spec.input_schema, SCHEMA_DEPTH, &mut add);
            for (term, frequency) in counts.drain() {
                let entry = postings.entry(term).or_default();
                entry.docs.push(doc);
                entry.frequencies.push(frequency);
            }
            lengths.push(length);
        }
        let average = lengths.iter().sum::<f32>() / lengths.len().max(1) as f32;
        let length_ratio = lengths.iter().map(|l| if average > 0.0 { l / average } else { 1.0 }).collect();
        SearchIndex { postings, length_ratio, names }
    }

    /// Number of indexed documents.
    pub fn len(&self) -> usize {
        self.length_ratio.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.length_ratio.is_empty()
    }

    /// The best `limit` documents for `query` among those `eligible` accepts, best first.
    ///
    /// A document whose exact name is a word of the query comes first; the rest are ranked by
    /// BM25 over the query's terms, ties in document order. Documents matching no term are
    /// left out.
    pub fn search(&self, query: &str, limit: usize, eligible: impl Fn(usize) -> bool) -> Vec<Hit> {
        if limit == 0 || self.is_empty() {
            return Vec::new();
        }
        let mut hits: Vec<Hit> = Vec::new();
        for word in query.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '`' | '"' | '\'')) {
            if let Some(&doc) = self.names.get(&word.to_lowercase()) {
                let doc = doc as usize;
                if eligible(doc) && !hits.iter().any(|h| h.doc == doc) {
                    hits.push(Hit { doc, score: f32::INFINITY });
                }
            }
        }

        let mut query_terms = terms(query);
        query_terms.sort_unstable();
        query_terms.dedup();
        let n = self.len() as f32;
        // Dense scores: a pass over the query's postings and one allocation, however common the
        // terms (a map costs more per posting than the whole vector costs to clear).
        let mut scores = vec![0.0f32; self.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in &query_terms {
            let Some(postings) = self.postings.get(term) else { continue };
            let df = postings.docs.len() as f32;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for (&doc, &tf) in postings.docs.iter().zip(&postings.frequencies) {
                let norm = K1 * (1.0 - B + B * self.length_ratio[doc as usize]);
                let score = &mut scores[doc as usize];
                if *score == 0.0 {
                    touched.push(doc);
                }
                *score += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut ranked: Vec<Hit> = touched
            .into_iter()
            .map(|doc| Hit { doc: doc as usize, score: scores[doc as usize] })
            .filter(|hit| eligible(hit.doc) && !hits.iter().any(|h| h.doc == hit.doc))
            .collect();
        let wanted = limit.saturating_sub(hits.len());
        let by_rank = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc));
        if ranked.len() > wanted && wanted > 0 {
            ranked.select_nth_unstable_by(wanted - 1, by_rank);
        }
        ranked.truncate(wanted);
        ranked.sort_unstable_by(by_rank);
        hits.truncate(limit);
        hits.extend(ranked);
        hits
    }
}

/// Feeds the names and descriptions of the properties of `schema` (and of nested objects and
/// array items, to `depth` levels) to `add`.
fn parameters(schema: &Value, depth: usize, add: &mut impl FnMut(&str, f32)) {
    if depth == 0 {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            add(name, PARAMETER_NAME_WEIGHT);
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                add(description, PARAMETER_DESCRIPTION_WEIGHT);
            }
            parameters(property, depth - 1, add);
        }
    }
    if let Some(items) = schema.get("items") {
        parameters(items, depth - 1, add);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(name: &str, description: &str, schema: Value) -> ToolSpec {
        ToolSpec::new(name, description, schema)
    }

    fn index() -> (SearchIndex, Vec<ToolSpec>) {
        let specs = vec![
            spec(
                "get_weather",
                "Current weather conditions for a city.",
                json!({
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "City name."}},
                }),
            ),
            spec(
                "createIssue",
                "Open a new issue in a repository's tracker.",
                json!({
                    "type": "object",
                    "properties": {
                        "repository": {"type": "string"},
                        "labels": {"type": "array", "items": {"type": "string"}, "description": "Labels such as bug."},
                    },
                }),
            ),
            spec(
                "list-issues",
                "List the issues of a repository, open or closed.",
                json!({"type": "object"}),
            ),
            spec(
                "send_email",
                "Send an email message to a recipient.",
                json!({
                    "type": "object",
                    "properties": {"to": {"type": "string", "description": "The recipient's address."}},
                }),
            ),
        ];
        (SearchIndex::new(&specs), specs)
    }

    fn names(specs: &[ToolSpec], hits: &[Hit]) -> Vec<String> {
        hits.iter().map(|h| specs[h.doc].name.clone()).collect()
    }

    #[test]
    fn ranks_by_name_description_and_parameters() {
        let (index, specs) = index();
        let all = |_| true;
        assert_eq!(names(&specs, &index.search("what's the weather like in Paris", 3, all)), ["get_weather"]);
        // `create` and `issue` are words of `createIssue`; `issues` folds to `issue`.
        assert_eq!(names(&specs, &index.search("create issues", 2, all)), ["createIssue", "list-issues"]);
        // A parameter's description is searched too.
        assert_eq!(names(&specs, &index.search("bug labels", 1, all)), ["createIssue"]);
        assert_eq!(names(&specs, &index.search("recipient address", 5, all)), ["send_email"]);
        assert!(index.search("spreadsheet", 5, all).is_empty());
    }

    #[test]
    fn a_named_tool_comes_first_and_limits_hold() {
        let (index, specs) = index();
        let hits = index.search("issues list-issues", 5, |_| true);
        assert_eq!(names(&specs, &hits)[0], "list-issues");
        assert_eq!(hits[0].score, f32::INFINITY);
        assert_eq!(index.search("issue", 1, |_| true).len(), 1);
        assert!(index.search("issue", 0, |_| true).is_empty());
    }

    #[test]
    fn only_eligible_documents_are_returned() {
        let (index, specs) = index();
        let hits = index.search("issue list-issues", 5, |doc| doc != 2);
        assert_eq!(names(&specs, &hits), ["createIssue"]);
    }
}
