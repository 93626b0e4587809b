//! The shapes of deny and ask patterns' commands, and whether a run may be one.

use super::runs::options_and_words;
use super::{Run, see};

/// A deny or ask pattern's command (`rm -rf` of `Bash(rm -rf:*)`): its program's base name, its
/// options as a set, its other words in order.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    program: String,
    options: Vec<String>,
    words: Vec<String>,
    /// Exact patterns want the same options and words; prefix patterns at least these.
    exact: bool,
}

impl Shape {
    /// The shape of a pattern's text; `None` when it has no words.
    pub(crate) fn new(pattern: &str, exact: bool) -> Option<Shape> {
        // Read as a command line, so quotes in the pattern are removed as in the command.
        let seen = see(pattern);
        let run = seen.runs.first()?;
        let program = run.program.clone()?;
        let (options, words) = options_and_words(&program, run.args.iter().map(|w| w.text.as_str()));
        let words = words.into_iter().map(str::to_owned).collect();
        Some(Shape { program, options, words, exact })
    }

    /// Whether `run` may be what the pattern describes: same program (or one not known), the
    /// pattern's options among the run's (a run's abbreviation of a long option counts), the
    /// pattern's other words among the run's in the same order. A run with an argument that is
    /// not known may be anything its program does.
    pub(crate) fn matches(&self, run: &Run) -> bool {
        match &run.program {
            None => return true,
            Some(program) if *program != self.program => return false,
            Some(_) => {}
        }
        if run.has_unknown_args() {
            return true;
        }
        let (options, words) = options_and_words(&self.program, run.args.iter().map(|w| w.text.as_str()));
        let has = |option: &String| {
            options.contains(option)
                || option.starts_with("--")
                    && options
                        .iter()
                        .any(|o| o.len() > 2 && o.starts_with("--") && option.starts_with(o.as_str()))
        };
        if !self.options.iter().all(has) {
            return false;
        }
        if self.exact {
            let wanted = |o: &String| {
                self.options
                    .iter()
                    .any(|p| p == o || o.len() > 2 && o.starts_with("--") && p.starts_with(o.as_str()))
            };
            return options.iter().all(wanted)
                && words.len() == self.words.len()
                && words.iter().zip(&self.words).all(|(a, b)| a == b);
        }
        let mut words = words.iter();
        self.words.iter().all(|wanted| words.any(|w| w == wanted))
    }
}

#[cfg(test)]
mod shape_tests {
    use super::*;

    fn sees(pattern: &str, command: &str) -> bool {
        let shape = Shape::new(pattern, false).unwrap();
        let seen = see(command);
        seen.runs.iter().any(|run| shape.matches(run))
    }

    #[test]
    fn options_are_a_set_with_their_other_spellings() {
        for line in [
            "rm -rf x",
            "rm -fr x",
            "rm -r -f x",
            "rm -rfv x",
            "rm --recursive --force x",
            "rm -R --force x",
            "rm --recur --forc x",
            "rm x -rf",
            "/bin/rm -rf x",
            "rm -r x -f",
        ] {
            assert!(sees("rm -rf", line), "{line}");
        }
        for line in ["rm -r x", "rm -- -rf", "rmdir -rf x", "echo rm -rf"] {
            assert!(!sees("rm -rf", line), "{line}");
        }
        assert!(sees("git push --force", "git -C x push origin -f"));
        assert!(sees("git push", "git --no-pager push"));
        assert!(!sees("git push", "git status"));
        assert!(sees("rm -rf", "rm $FLAGS x"));
        assert!(sees("git commit -m 'a b'", "git commit -m \"a b\" -q"));
    }
}
