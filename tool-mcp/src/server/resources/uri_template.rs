//! RFC 6570 URI templates, for matching the URIs of `resources/read` against them.

use super::UriVariables;

/// An RFC 6570 URI template, for matching URIs against it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// `{name}`: no `/`, `?` or `#`; percent-decoded.
    Simple(String),
    /// `{+name}` and the other operators: any characters, as they are.
    Any(String),
}

impl UriTemplate {
    pub(crate) fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                return Err(format!(
                    "the `{{` at byte {} is never closed",
                    template.len() - rest.len() + open
                ));
            };
            let expression = &rest[open + 1..open + close];
            let (operator, names) = match expression.chars().next() {
                Some(c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => (Some(c), &expression[1..]),
                _ => (None, expression),
            };
            let name = names.split(',').next().unwrap_or_default().trim_end_matches('*');
            let name = name.split(':').next().unwrap_or_default();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
                return Err(format!("`{{{expression}}}` does not name a variable"));
            }
            if let Some(Part::Simple(_) | Part::Any(_)) = parts.last() {
                return Err(format!(
                    "`{{{expression}}}` follows another expression with nothing between them"
                ));
            }
            parts.push(if operator.is_none() {
                Part::Simple(name.to_owned())
            } else {
                Part::Any(name.to_owned())
            });
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(UriTemplate { parts })
    }

    /// Matches every URI that starts with `prefix`.
    pub(super) fn prefix(prefix: &str) -> UriTemplate {
        UriTemplate { parts: vec![Part::Literal(prefix.to_owned()), Part::Any(String::new())] }
    }

    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Simple(name) | Part::Any(name) if !name.is_empty() => Some(name.as_str()),
            _ => None,
        })
    }

    /// The variables of `uri` when it matches. Each expression is followed by a literal or ends
    /// the template (parsing refuses two expressions in a row), so the match is found by trying
    /// each place the next literal occurs: at most as many tries as the URI has bytes per
    /// expression.
    pub(crate) fn matches(&self, uri: &str) -> Option<UriVariables> {
        let mut variables = UriVariables::new();
        let mut budget = MATCH_BUDGET;
        match_parts(&self.parts, uri, &mut variables, &mut budget).then_some(variables)
    }
}

/// The most places a URI is tried at against one template: `{+a}/{+b}/{+c}` against a URI of
/// many `/` would otherwise try every combination. A URI that needs more does not match.
const MATCH_BUDGET: usize = 10_000;

fn match_parts(parts: &[Part], uri: &str, variables: &mut UriVariables, budget: &mut usize) -> bool {
    let Some((first, rest)) = parts.split_first() else { return uri.is_empty() };
    match first {
        Part::Literal(literal) => {
            uri.strip_prefix(literal.as_str()).is_some_and(|uri| match_parts(rest, uri, variables, budget))
        }
        Part::Simple(name) | Part::Any(name) => {
            let simple = matches!(first, Part::Simple(_));
            let allowed = |value: &str| !value.is_empty() && (!simple || !value.contains(['/', '?', '#']));
            let ends: Vec<usize> = match rest.first() {
                None => vec![uri.len()],
                Some(Part::Literal(literal)) => {
                    uri.match_indices(literal.as_str()).map(|(at, _)| at).collect()
                }
                Some(_) => return false,
            };
            for end in ends {
                let value = &uri[..end];
                if simple && value.contains(['/', '?', '#']) {
                    // Every later end holds the same character.
                    return false;
                }
                if *budget == 0 {
                    return false;
                }
                *budget -= 1;
                if allowed(value) && match_parts(rest, &uri[end..], variables, budget) {
                    if !name.is_empty() {
                        let value = if simple { percent_decoded(value) } else { value.to_owned() };
                        variables.insert(name.clone(), value);
                    }
                    return true;
                }
            }
            false
        }
    }
}

/// `%XX` escapes decoded; text whose escapes are not UTF-8 stays as it was.
fn percent_decoded(text: &str) -> String {
    match percent_encoding::percent_decode_str(text).decode_utf8() {
        Ok(decoded) => decoded.into_owned(),
        Err(_) => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> UriVariables {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn templates_match_their_uris_and_only_those() {
        let template = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(template.matches("test://template/123/data"), Some(vars(&[("id", "123")])));
        assert_eq!(template.matches("test://template/a%20b/data"), Some(vars(&[("id", "a b")])));
        assert_eq!(template.matches("test://template//data"), None, "a variable is never empty");
        assert_eq!(template.matches("test://template/1/2/data"), None, "`{{id}}` holds no `/`");
        assert_eq!(template.matches("test://template/1/data/x"), None);
        assert_eq!(template.matches("test://other/1/data"), None);

        let reserved = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(reserved.matches("file:///src/a%20b.rs"), Some(vars(&[("path", "src/a%20b.rs")])));

        let two = UriTemplate::parse("repo://{owner}/{name}/issues").unwrap();
        assert_eq!(two.matches("repo://a/b/issues"), Some(vars(&[("owner", "a"), ("name", "b")])));
        assert_eq!(two.variables().collect::<Vec<_>>(), ["owner", "name"]);

        // The last literal occurs twice: the match that ends the URI is found.
        let tail = UriTemplate::parse("x://{a}.json").unwrap();
        assert_eq!(tail.matches("x://v.json.json"), Some(vars(&[("a", "v.json")])));
    }

    #[test]
    fn templates_that_cannot_be_matched_are_refused() {
        assert!(UriTemplate::parse("x://{a").unwrap_err().contains("never closed"));
        assert!(UriTemplate::parse("x://{}").unwrap_err().contains("does not name"));
        assert!(UriTemplate::parse("x://{a}{b}").unwrap_err().contains("nothing between"));
    }

    #[test]
    fn a_long_uri_costs_at_most_one_try_per_occurrence() {
        let template = UriTemplate::parse("x://{+a}/{+b}/{+c}/end").unwrap();
        let uri = format!("x://{}", "a/".repeat(3000));
        let started = std::time::Instant::now();
        assert_eq!(template.matches(&uri), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn percent_escapes_are_decoded_when_they_are_utf8() {
        assert_eq!(percent_decoded("a%2Fb%C3%A9"), "a/bé");
        assert_eq!(percent_decoded("%FF%zz"), "%FF%zz");
        assert_eq!(percent_decoded("100%"), "100%");
    }
}
