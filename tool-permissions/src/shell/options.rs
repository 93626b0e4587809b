//! Option lists: which options a program accepts, which take a value, and how a command's
//! arguments split into options, their values and positional arguments.

use std::collections::HashMap;

/// How many values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arity {
    /// A flag.
    None,
    /// One value: attached (`-n5`, `--lines=5`) or the next word.
    Required,
    /// An optional value, attached only (`-M90%`, `--color=never`).
    Optional,
    /// Two values, the next two words (`jq --arg name value`).
    Two,
}

/// The options of a program, written compactly: `-a` (a flag), `-n=` (takes a value), `-w=?`
/// (an optional, attached value), `--all`, `--lines=`, `--color=?`, `--arg==` (two values).
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    short: HashMap<char, Arity>,
    long: HashMap<&'static str, Arity>,
    /// Whether `-5` (a number as an option, `head -5`) is accepted.
    digits: bool,
}

impl Spec {
    /// Builds a spec from its compact text; `digits` accepts `-NUM`.
    pub(crate) fn new(text: &'static str, digits: bool) -> Spec {
        let mut spec = Spec { short: HashMap::new(), long: HashMap::new(), digits };
        for token in text.split_whitespace() {
            let (name, arity) = if let Some(name) = token.strip_suffix("==") {
                (name, Arity::Two)
            } else if let Some(name) = token.strip_suffix("=?") {
                (name, Arity::Optional)
            } else if let Some(name) = token.strip_suffix('=') {
                (name, Arity::Required)
            } else {
                (token, Arity::None)
            };
            if let Some(long) = name.strip_prefix("--") {
                spec.long.insert(long, arity);
            } else if let Some(short) = name.strip_prefix('-') {
                let mut chars = short.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => {
                        spec.short.insert(c, arity);
                    }
                    _ => panic!("not a short option in an option list: {token}"),
                }
            } else {
                panic!("not an option in an option list: {token}");
            }
        }
        spec
    }
}

/// A command's arguments, split by a [`Spec`].
#[derive(Debug, Default)]
pub(crate) struct Scanned<'a> {
    /// Options as written without their values: `-n`, `--lines`.
    pub(crate) options: Vec<String>,
    /// Option values.
    pub(crate) values: Vec<&'a str>,
    /// Positional arguments (everything after `--` included).
    pub(crate) positionals: Vec<&'a str>,
}

impl Scanned<'_> {
    pub(crate) fn has(&self, option: &str) -> bool {
        self.options.iter().any(|o| o == option)
    }
}

/// Splits `args` by `spec`. An option the spec does not list, spelled any way (an
/// abbreviation `--o`, a bundle `-iO`, a value given to a flag), is the error, as written.
/// With `stop_at_positional`, options end at the first positional argument (as for wrappers
/// such as `env` or `nice`); the rest are positionals.
pub(crate) fn scan<'a>(
    spec: &Spec,
    args: &'a [String],
    stop_at_positional: bool,
) -> Result<Scanned<'a>, String> {
    let mut scanned = Scanned::default();
    let mut words = args.iter().map(String::as_str);
    while let Some(word) = words.next() {
        if word == "--" {
            scanned.positionals.extend(words.by_ref());
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let arity = spec.long.get(name).copied().ok_or_else(|| word.to_owned())?;
            scanned.options.push(format!("--{name}"));
            match (arity, attached) {
                (Arity::None, Some(_)) | (Arity::Two, Some(_)) => return Err(word.to_owned()),
                (Arity::None | Arity::Optional, None) => {}
                (Arity::Required | Arity::Optional, Some(value)) => scanned.values.push(value),
                (Arity::Required, None) => scanned.values.push(words.next().ok_or_else(|| word.to_owned())?),
                (Arity::Two, None) => {
                    for _ in 0..2 {
                        scanned.values.push(words.next().ok_or_else(|| word.to_owned())?);
                    }
                }
            }
            continue;
        }
        let Some(cluster) = word.strip_prefix('-').filter(|rest| !rest.is_empty()) else {
            scanned.positionals.push(word);
            if stop_at_positional {
                scanned.positionals.extend(words.by_ref());
                break;
            }
            continue;
        };
        if spec.digits && cluster.bytes().all(|b| b.is_ascii_digit()) {
            scanned.options.push(word.to_owned());
            continue;
        }
        for (at, c) in cluster.char_indices() {
            let arity = spec.short.get(&c).copied().ok_or_else(|| word.to_owned())?;
            scanned.options.push(format!("-{c}"));
            let rest = &cluster[at + c.len_utf8()..];
            match arity {
                Arity::None => continue,
                Arity::Optional => {
                    if !rest.is_empty() {
                        scanned.values.push(rest);
                    }
                }
                Arity::Required if !rest.is_empty() => scanned.values.push(rest),
                Arity::Required => scanned.values.push(words.next().ok_or_else(|| word.to_owned())?),
                Arity::Two => {
                    if !rest.is_empty() {
                        scanned.values.push(rest);
                    } else {
                        scanned.values.push(words.next().ok_or_else(|| word.to_owned())?);
                    }
                    scanned.values.push(words.next().ok_or_else(|| word.to_owned())?);
                }
            }
            break;
        }
    }
    Ok(scanned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn only_listed_spellings_pass() {
        let spec = Spec::new("-r -n -k= -w=? --reverse --key= --color=? --arg==", false);
        let ok = |line: &str| scan(&spec, &words(line), false).is_ok();
        assert!(ok("-rn -k2 -k 3 --key=1 --key 1 --color --color=never -w -w5 --arg a b file -- -o"));
        for (bad, word) in [
            ("-o", "-o"),
            ("-ro", "-ro"),
            ("-rno", "-rno"),
            ("--o=x", "--o=x"),
            ("--rev", "--rev"),
            ("--output", "--output"),
            ("--reverse=x", "--reverse=x"),
            ("-r -x", "-x"),
            ("--key", "--key"),
            ("--arg a", "--arg"),
        ] {
            assert_eq!(scan(&spec, &words(bad), false).unwrap_err(), word, "{bad}");
        }
        // A value attached to a valued short option is not read as more options.
        let args = words("-rko file");
        let scanned = scan(&spec, &args, false).unwrap();
        assert_eq!(scanned.values, ["o"]);
        assert_eq!(scanned.positionals, ["file"]);
    }

    #[test]
    fn digits_only_where_the_program_takes_them() {
        assert!(scan(&Spec::new("-n=", true), &words("-20 x"), false).is_ok());
        assert!(scan(&Spec::new("-n=", false), &words("-20 x"), false).is_err());
    }

    #[test]
    fn wrappers_stop_at_their_command() {
        let args = words("-n 5 rm -rf x");
        let scanned = scan(&Spec::new("-n=", false), &args, true).unwrap();
        assert_eq!(scanned.positionals, ["rm", "-rf", "x"]);
    }
}
