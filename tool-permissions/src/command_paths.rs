//! The files a command line names, so that Read rules apply to them as they apply to `read`.

use std::path::{Path, PathBuf};

use tool_sandbox::lexically_normal;

use crate::shell::see_through::{Run, Seen, Word};

/// At most this many paths are checked for one line; a line that names more is refused or
/// asked about by the strictest Read rule, since it cannot be checked.
pub(crate) const MAX_PATHS: usize = 4096;
/// At most this many directories a line may `cd` into are followed.
const MAX_BASES: usize = 16;
/// At most this many directory entries are looked at to expand one glob.
const MAX_ENTRIES: usize = 10_000;

/// A path a command names.
pub(crate) struct Named {
    pub(crate) path: PathBuf,
    /// The word as written.
    pub(crate) word: String,
    /// The command reads what is beneath it (`grep -r x dir`, `rg x`), when it is a directory.
    pub(crate) beneath: Option<Beneath>,
}

/// How a recursive command walks a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Beneath {
    /// Every entry.
    All,
    /// Not hidden entries (ripgrep's default).
    Visible,
}

/// Whether `run` reads what is beneath its directory arguments, and how many leading
/// positional arguments are not paths (a search pattern, git's subcommand).
fn recursive(run: &Run) -> Option<(Beneath, usize)> {
    let texts: Vec<&str> = run.args.iter().map(|w| w.text.as_str()).collect();
    let short = |letters: &str| {
        texts
            .iter()
            .any(|t| t.starts_with('-') && !t.starts_with("--") && t.contains(|c| letters.contains(c)))
    };
    let long = |names: &[&str]| texts.iter().any(|t| names.iter().any(|n| t.starts_with(n)));
    let pattern = usize::from(!short("ef") && !long(&["--regexp", "--file"]));
    match run.program.as_deref()? {
        "rg" => {
            let hidden = short(".u") || long(&["--hidden", "--no-ignore", "--unrestricted"]);
            let beneath = if hidden { Beneath::All } else { Beneath::Visible };
            Some((beneath, pattern))
        }
        "ag" | "ack" | "ugrep" => Some((Beneath::All, pattern)),
        "grep" | "egrep" | "fgrep" => (short("rR")
            || long(&["--recursive", "--dereference-recursive", "--directories=recurse"])
            || texts.windows(2).any(|w| w == ["-d", "recurse"]))
        .then_some((Beneath::All, pattern)),
        "git" => texts
            .iter()
            .find(|t| !t.starts_with('-'))
            .is_some_and(|sub| *sub == "grep")
            .then_some((Beneath::All, pattern + 1)),
        "cp" | "scp" => (short("rRa") || long(&["--recursive", "--archive"])).then_some((Beneath::All, 0)),
        "tar" | "zip" | "rsync" | "7z" | "zstd" | "gzip" => Some((Beneath::All, 0)),
        "find" => long(&["-exec", "-ok"]).then_some((Beneath::All, 0)),
        _ => None,
    }
}

/// Every path the line's arguments may name, each with the word as written, resolved against
/// `root` (where the line starts) and every directory an earlier `cd` in the line may have
/// moved to. A word is read as a
/// path whole, after `=` (`--file=x`, `if=x`), after a short option (`-fx`) and after the first
/// `:` (`HEAD:.env`); `~` is the home directory; a glob in the glob is expanded.
/// Links are followed where the path exists, as the command will follow them.
/// A recursive command (`rg x`, `grep -r x`, `git grep x`) that names no existing path after its
/// pattern searches the current directory.
/// `Err` holds the first relative path named after a `cd` (or `pushd`) to a directory not known
/// until the line runs: what it names cannot be told.
/// Refuses a word whose brace expansion cannot all be known (see [`braces`]).
fn unfollowed_braces(text: &str) -> Result<(), String> {
    match braces(text) {
        Some(_) => Ok(()),
        None => Err(format!(
            "`{text}`, whose brace expansion cannot be followed (braces made literal by quoting, or more than \
             {MAX_BRACED} words), so it may name what the rule covers"
        )),
    }
}

/// The text of `word` to take paths from: as written when every part of it is known, or when
/// only its braces are not (the lexer marks brace expansion as unknown for command patterns;
/// [`resolve`] expands them).
fn known(word: &Word) -> Option<&str> {
    if word.resolved() {
        return Some(&word.text);
    }
    let text = word.text.strip_suffix(crate::shell::see_through::UNKNOWN)?;
    (text.contains('{') && !text.contains(crate::shell::see_through::UNKNOWN)).then_some(text)
}

pub(crate) fn named_paths(seen: &Seen, root: &Path) -> Result<Vec<Named>, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut bases = vec![root.to_path_buf()];
    let mut lost = false;
    let mut paths = Vec::new();
    for (word, text) in seen.redirections.iter().filter_map(|word| known(word).map(|text| (word, text))) {
        unfollowed_braces(text)?;
        for path in resolve(root, text, word, home.as_deref()) {
            paths.push(Named { path, word: text.to_owned(), beneath: None });
        }
    }
    for run in &seen.runs {
        let walks = recursive(run);
        let mut positional = 0;
        let mut names_a_path = false;
        for (word, text) in run.args.iter().filter_map(|word| known(word).map(|text| (word, text))) {
            if lost && run.program.as_deref() != Some("cd") && !text.starts_with(['/', '~', '-']) {
                return Err(format!(
                    "`{text}` after a `cd` to a directory not known until the line runs, so it may read what the \
                     rule covers"
                ));
            }
            unfollowed_braces(text)?;
            let is_positional = !text.starts_with('-');
            positional += usize::from(is_positional);
            for candidate in candidates(text) {
                for base in &bases {
                    for path in resolve(base, candidate, word, home.as_deref()) {
                        let beneath = walks.map(|(how, _)| how).filter(|_| path.is_dir());
                        if let Some((_, skip)) = walks
                            && is_positional
                            && positional > skip
                            && path.exists()
                        {
                            names_a_path = true;
                        }
                        paths.push(Named { path, word: text.to_owned(), beneath });
                    }
                }
            }
        }
        if let Some((how, _)) = walks
            && !names_a_path
        {
            for base in &bases {
                paths.push(Named { path: base.clone(), word: ".".to_owned(), beneath: Some(how) });
            }
        }
        if matches!(run.program.as_deref(), Some("cd" | "pushd")) {
            let target = run.args.iter().find(|word| !word.text.starts_with('-'));
            let moved: Vec<PathBuf> = match target {
                Some(word) if word.resolved() => {
                    bases.iter().flat_map(|base| resolve(base, &word.text, word, home.as_deref())).collect()
                }
                Some(_) => {
                    lost = true;
                    Vec::new()
                }
                None => home.iter().cloned().collect(),
            };
            for base in moved {
                if bases.len() < MAX_BASES && !bases.contains(&base) {
                    bases.push(base);
                }
            }
        }
    }
    Ok(paths)
}

/// The parts of a word that may be a path.
fn candidates(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    if !text.starts_with('-') {
        out.push(text);
    } else if !text.starts_with("--") {
        // A short option's attached value (`-ofile`): what follows the option's character,
        // which may take more than one byte (`-é`).
        let mut option = text[1..].chars();
        if option.next().is_some() {
            out.push(option.as_str());
        }
    }
    if let Some((_, value)) = text.split_once('=') {
        out.push(value);
    }
    if let Some((_, value)) = text.split_once(':') {
        out.push(value);
    }
    out.retain(|c| !c.is_empty() && !c.starts_with('-'));
    out
}

fn resolve(base: &Path, text: &str, word: &Word, home: Option<&Path>) -> Vec<PathBuf> {
    // `{.,}env` is `.env` and `env` to the shell: each is checked, with the word as written
    // (braces the shell leaves alone, quoted or without a comma, only add a path to check).
    let mut out: Vec<PathBuf> = Vec::new();
    for text in braces(text).unwrap_or_else(|| vec![text.to_owned()]) {
        out.extend(resolve_one(base, &text, word, home));
    }
    out
}

/// At most this many words one word's braces expand to; past it the rest are not checked.
const MAX_BRACED: usize = 256;

/// The words the shell's brace expansion makes of `text` (`a{b,c}d` is `abd` and `acd`, nested
/// and repeated groups included), `text` itself first; `None` when they cannot all be known:
/// more than [`MAX_BRACED`], or a word left with what still looks like a group (`{x},.}`: the
/// quoting that made a brace literal is gone from the text), so that the line is judged as one
/// whose paths cannot be followed.
fn braces(text: &str) -> Option<Vec<String>> {
    let mut out = vec![text.to_owned()];
    let mut pending = vec![text.to_owned()];
    // A word could be a group only with a comma or a range in it; then a brace left in a word
    // that expands no further may be one that quoting made literal (`{\{,.}env`), and the
    // words made from the text without its quoting are not the shell's.
    let may_group = text.contains(',') || text.contains("..");
    while let Some(word) = pending.pop() {
        let Some((before, choices, after)) = first_group(&word) else {
            if may_group && word.contains(['{', '}']) {
                return None;
            }
            continue;
        };
        for choice in choices {
            if out.len() >= MAX_BRACED {
                return None;
            }
            let made = format!("{before}{choice}{after}");
            if !out.contains(&made) {
                out.push(made.clone());
                pending.push(made);
            }
        }
    }
    Some(out)
}

/// The first `{...,...}` or `{X..Y}` of `text` (its choices: split at the commas outside nested
/// braces, or the range's letters or numbers), with what comes before and after it.
fn first_group(text: &str) -> Option<(&str, Vec<String>, &str)> {
    let bytes = text.as_bytes();
    for open in (0..bytes.len()).filter(|&i| bytes[i] == b'{') {
        let (mut depth, mut cuts) = (0usize, vec![open]);
        for (i, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b',' if depth == 1 => cuts.push(i),
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        let choices = match cuts.len() {
                            1 => range(&text[open + 1..i]),
                            _ => {
                                cuts.push(i);
                                cuts.windows(2).map(|w| text[w[0] + 1..w[1]].to_owned()).collect()
                            }
                        };
                        if choices.is_empty() {
                            break;
                        }
                        return Some((&text[..open], choices, &text[i + 1..]));
                    }
                }
                _ => {}
            }
        }
    }
    None
}

/// The words of a brace range, `a..e` or `1..10` (with an increment, `1..10..2`); none for
/// anything else. At most [`MAX_BRACED`].
fn range(inner: &str) -> Vec<String> {
    let parts: Vec<&str> = inner.split("..").collect();
    let step = match parts.len() {
        2 => 1,
        3 => parts[2].parse::<i64>().map_or(0, i64::unsigned_abs).max(1),
        _ => return Vec::new(),
    };
    let step = usize::try_from(step).unwrap_or(usize::MAX);
    let letter = |part: &str| {
        let mut chars = part.chars();
        chars.next().filter(|c| c.is_ascii_alphabetic() && chars.next().is_none())
    };
    if let (Some(from), Some(to)) = (letter(parts[0]), letter(parts[1])) {
        let (low, high) = (from.min(to) as u8, from.max(to) as u8);
        return (low..=high).step_by(step).take(MAX_BRACED).map(|b| char::from(b).to_string()).collect();
    }
    // With a leading zero on either end, every number is padded to the wider end's width.
    let padded =
        |part: &str| part.trim_start_matches('-').len() > 1 && part.trim_start_matches('-').starts_with('0');
    let width = if padded(parts[0]) || padded(parts[1]) { parts[0].len().max(parts[1].len()) } else { 0 };
    match (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        (Ok(from), Ok(to)) => (from.min(to)..=from.max(to))
            .step_by(step)
            .take(MAX_BRACED)
            .map(|n| format!("{n:0width$}"))
            .collect(),
        _ => Vec::new(),
    }
}

fn resolve_one(base: &Path, text: &str, word: &Word, home: Option<&Path>) -> Vec<PathBuf> {
    let joined = match (text.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        // `~+` is the current directory.
        (Some(rest), _) if rest == "+" || rest.starts_with("+/") => {
            base.join(rest[1..].trim_start_matches('/'))
        }
        // `~user`: that user's home directory.
        (Some(rest), _) if !rest.starts_with(['+', '-']) => {
            let (user, after) = rest.split_once('/').unwrap_or((rest, ""));
            match home_of(user) {
                Some(home) => home.join(after),
                None => base.join(text),
            }
        }
        _ => base.join(text),
    };
    let lexical = lexically_normal(&joined);
    let mut out = Vec::new();
    if word.glob {
        out.extend(expand(&lexical));
    }
    out.push(lexical);
    let resolved: Vec<PathBuf> = out.iter().filter_map(|path| follow(path)).collect();
    out.extend(resolved);
    out
}

/// The home directory of `user` in `/etc/passwd`.
fn home_of(user: &str) -> Option<PathBuf> {
    use std::io::Read;
    if user.is_empty() {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open("/etc/passwd").ok()?.take(1 << 20).read_to_string(&mut text).ok()?;
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 7 && fields[0] == user).then(|| PathBuf::from(fields[5]))
    })
}

/// The path with its links followed, as far as it exists (the names below the last directory
/// that exists are kept as they are), when some directory of it exists.
pub(crate) fn follow(path: &Path) -> Option<PathBuf> {
    let mut missing = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return Some(missing.iter().rev().fold(real, |path, name| path.join(name)));
        }
        missing.push(at.file_name()?);
        at = at.parent()?;
    }
}

/// The paths a glob matches (`.e*`, `s*/key`), component by component as the shell expands it
/// (but with `*` also matching a leading dot), up to a bound.
fn expand(path: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::new()];
    let mut looked = 0;
    for component in path.components() {
        let text = component.as_os_str().to_string_lossy();
        if !text.contains(['*', '?', '[']) {
            for path in &mut found {
                path.push(component);
            }
            continue;
        }
        let Ok(glob) = globset::GlobBuilder::new(&text).literal_separator(true).build() else {
            return Vec::new();
        };
        let glob = glob.compile_matcher();
        let mut next = Vec::new();
        for dir in &found {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            for entry in entries.filter_map(Result::ok) {
                looked += 1;
                if looked > MAX_ENTRIES {
                    return next;
                }
                if glob.is_match(entry.file_name()) {
                    next.push(entry.path());
                }
            }
        }
        found = next;
    }
    found
}

/// The entries beneath `dir`, nearest first, skipping `.git` (and hidden entries for
/// [`Beneath::Visible`]), up to a bound.
pub(crate) fn walk(dir: &Path, how: Beneath) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut queue = std::collections::VecDeque::from([dir.to_path_buf()]);
    while let Some(dir) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            if found.len() >= MAX_ENTRIES {
                return found;
            }
            let name = entry.file_name();
            let hidden = name.to_string_lossy().starts_with('.');
            if name == ".git" || how == Beneath::Visible && hidden {
                continue;
            }
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push_back(path.clone());
            }
            found.push(path);
        }
    }
    found
}

/// The absolute path `path` (from `root`) names as the kernel reaches it: a link on the way is
/// followed before a `..` after it is applied (`link/../x` is beside what `link` leads to, not
/// `root/x`), the directories above it with their links followed, its own name as named.
pub(crate) fn as_reached(root: &Path, path: &str) -> std::path::PathBuf {
    use std::path::{Component, PathBuf};
    // Longer than any path a file tool takes (4 KiB, 256 names): as written, links not looked
    // at (each name would be looked up again for each one below it).
    if path.len() > 4096 || Path::new(path).components().count() > 256 {
        return tool_sandbox::lexically_normal(&root.join(path));
    }
    let mut at = PathBuf::new();
    for component in root.join(path).components() {
        match component {
            Component::ParentDir => {
                if let Ok(real) = std::fs::canonicalize(&at) {
                    at = real;
                }
                at.pop();
            }
            Component::CurDir => {}
            other => at.push(other),
        }
    }
    let Some(name) = at.file_name().map(std::ffi::OsStr::to_os_string) else { return at };
    // The deepest directory above it that exists, its links followed; the rest as named.
    let mut rest = vec![name];
    let mut above = at.parent().map(Path::to_path_buf);
    while let Some(dir) = above {
        if let Ok(real) = std::fs::canonicalize(&dir) {
            return rest.iter().rev().fold(real, |path, part| path.join(part));
        }
        rest.extend(dir.file_name().map(std::ffi::OsStr::to_os_string));
        above = dir.parent().map(Path::to_path_buf);
    }
    at
}

#[cfg(test)]
mod tests {
    use super::{braces, candidates};

    #[test]
    fn brace_expansion_makes_the_words_the_shell_makes() {
        let braces = |text: &str| braces(text).unwrap_or_else(|| panic!("{text}: not all known"));
        assert_eq!(braces("{.,}env"), ["{.,}env", ".env", "env"]);
        assert_eq!(braces("a{b,c{d,e}}f"), ["a{b,c{d,e}}f", "abf", "ac{d,e}f", "acdf", "acef"]);
        assert_eq!(braces("{x}y{}"), ["{x}y{}"], "no comma: left alone, as the shell does");
        assert_eq!(braces("HEAD@{1}:.env"), ["HEAD@{1}:.env"]);
        assert_eq!(braces(".en{u..w}"), [".en{u..w}", ".enu", ".env", ".enw"]);
        assert_eq!(braces("f{3..1}"), ["f{3..1}", "f1", "f2", "f3"]);
        assert_eq!(braces("f{0..6..3}"), ["f{0..6..3}", "f0", "f3", "f6"]);
        assert_eq!(braces("f{1..01}"), ["f{1..01}", "f01"]);
        assert_eq!(braces("f{00..2}"), ["f{00..2}", "f00", "f01", "f02"]);
        assert_eq!(super::braces("f{a..3}"), None, "not a range the shell expands, but judged unknown");
        // What cannot all be known: past the bound, or a group whose quoting the text lost.
        assert_eq!(super::braces(&"{a,b,c,d}".repeat(8)), None);
        assert_eq!(super::braces(".e{a..z}{a..z}"), None);
        assert_eq!(super::braces(&format!("f{{0..{}}}", i64::MAX)), None);
        assert_eq!(super::braces("{x},.}env"), None);
        assert_eq!(super::braces("{a,b"), None, "literal to the shell, judged unknown");
        assert_eq!(super::braces("{{,.}env"), None, "a backslashed brace, once unquoted");
    }

    /// A short option's attached value is what follows the option's character, however many
    /// bytes that character takes (`cat -é` panicked here, found by the `shell_command` fuzz
    /// target).
    #[test]
    fn an_option_of_a_multibyte_character_is_cut_on_its_boundary() {
        assert_eq!(candidates("-é"), Vec::<&str>::new());
        assert_eq!(candidates("-éfile"), ["file"]);
        assert_eq!(candidates("-ofile"), ["file"]);
        assert_eq!(candidates("-o"), Vec::<&str>::new());
        assert_eq!(candidates("-"), Vec::<&str>::new());
        assert_eq!(candidates("--out=dir/x"), ["dir/x"]);
        assert_eq!(candidates("src/é.rs"), ["src/é.rs"]);
    }
}
