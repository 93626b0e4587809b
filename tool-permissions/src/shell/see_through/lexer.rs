//! The lenient lexer: a command line as simple commands of words, its substitutions and
//! redirections noted, what it cannot resolve marked.

use super::runs::{SUBSCRIPT, subscript_with_command};
use super::{MAX_DEPTH, Seen, UNKNOWN, Word, line};

pub(super) struct Lexer<'s> {
    pub(super) chars: Vec<char>,
    pub(super) pos: usize,
    pub(super) depth: usize,
    pub(super) seen: &'s mut Seen,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn opaque(&mut self, why: &'static str) {
        self.seen.opaque.get_or_insert(why);
    }

    /// A nested command line (`$(...)`, backticks, `<(...)`).
    fn nested(&mut self, text: &str) {
        line(text, self.depth + 1, self.seen);
    }

    /// Text that is not a command line but may hold substitutions (`${X:-$(cmd)}`,
    /// `$(( a[$(cmd)] ))`): only those are parsed.
    fn substitutions_in(&mut self, text: &str) {
        // `${a:-${a:-...}}` nests as deep as a command line does.
        if self.depth >= MAX_DEPTH {
            self.opaque("expansions nested too deeply to follow");
            return;
        }
        let mut inner =
            Lexer { chars: text.chars().collect(), pos: 0, depth: self.depth + 1, seen: self.seen };
        let mut scratch = Word::default();
        while let Some(c) = inner.peek() {
            inner.pos += 1;
            match c {
                '\\' => inner.pos += 1,
                '$' => inner.dollar(&mut scratch),
                '`' => inner.backtick(&mut scratch),
                _ => {}
            }
        }
    }

    /// The text up to the `close` that balances an `open` already read, skipping quoted
    /// parts; `None` when it is not closed.
    fn balanced(&mut self, open: char, close: char) -> Option<String> {
        self.balanced_text(open, close, false)
    }

    /// As [`Lexer::balanced`], for a command line (`$(...)`, `<(...)`, `${ ...; }`): bash ends
    /// it where its grammar does, so a `case` pattern's `)` or a `)` in a comment (`$(case a in
    /// a) rm x;; esac)`, `$(: # )`) does not end it. Counting parentheses cannot tell where it
    /// ends then: a `case` or a comment in it makes the line opaque.
    fn balanced_command(&mut self, open: char, close: char) -> Option<String> {
        self.balanced_text(open, close, true)
    }

    fn balanced_text(&mut self, open: char, close: char, command: bool) -> Option<String> {
        let start = self.pos;
        let mut level = 1;
        // The character before was an unquoted, unescaped `$`: a `'` after it opens `$'...'`,
        // in which a backslash escapes a quote (`$'\''`).
        let mut dollar = false;
        while let Some(c) = self.peek() {
            let ansi_c = std::mem::replace(&mut dollar, c == '$');
            // Where a word may start: a comment's `#` or the keyword `case`.
            let word_start = self.pos == start
                || self.chars.get(self.pos - 1).is_some_and(|&b| b.is_whitespace() || ";&|()".contains(b));
            self.pos += 1;
            if command && word_start {
                let rest = &self.chars[self.pos - 1..];
                let case = rest.starts_with(&['c', 'a', 's', 'e'])
                    && rest.get(4).is_none_or(|c| c.is_whitespace() || ";&|()".contains(*c));
                if c == '#' || case {
                    self.opaque(
                        "a `case` or a comment inside a substitution (where it ends cannot be told by \
                         counting parentheses)",
                    );
                }
            }
            match c {
                '\\' => {
                    self.pos += 1;
                    dollar = false;
                }
                '\'' => {
                    while let Some(c) = self.peek().filter(|&c| c != '\'') {
                        self.pos += if ansi_c && c == '\\' { 2 } else { 1 };
                    }
                    self.pos += 1;
                }
                '"' => {
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        match c {
                            '\\' => self.pos += 1,
                            '"' => break,
                            _ => {}
                        }
                    }
                }
                c if c == open => level += 1,
                c if c == close => {
                    level -= 1;
                    if level == 0 {
                        let end = (self.pos - 1).min(self.chars.len());
                        return Some(self.chars[start.min(end)..end].iter().collect());
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// Whether the `$((` at the lexer's position is arithmetic: its parentheses close with `))`.
    /// Otherwise bash reads it as a command substitution of a subshell (`$((cmd) ; rm x)`).
    fn arithmetic(&mut self) -> bool {
        let start = self.pos;
        // `balanced` notes nothing (no substitution is parsed), so a trial run leaves no trace.
        self.pos += 2;
        let closed = self.balanced('(', ')').is_some() && self.peek() == Some(')');
        self.pos = start;
        closed
    }

    /// After a `$` (already read): the expansion's value, `None` for a plain `$`.
    fn dollar(&mut self, word: &mut Word) {
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') && self.arithmetic() => {
                self.pos += 2;
                match self.balanced('(', ')') {
                    // Arithmetic can hold substitutions (`$(( a[$(cmd)] ))`).
                    Some(inner) => {
                        self.substitutions_in(&inner);
                        self.pos += 1;
                    }
                    None => self.opaque("an unterminated `$((`"),
                }
                word.text.push(UNKNOWN);
            }
            Some('(') => {
                self.pos += 1;
                match self.balanced_command('(', ')') {
                    Some(inner) => self.nested(&inner),
                    None => self.opaque("an unterminated `$(`"),
                }
                word.text.push(UNKNOWN);
            }
            Some('{') => {
                self.pos += 1;
                // Bash 5.3's `${ cmd; }` and `${| cmd; }` hold a command line.
                let command = matches!(self.peek(), Some(' ' | '\t' | '\n' | '|'));
                match self.balanced_text('{', '}', command) {
                    // Bash 5.3's `${ cmd; }` and `${| cmd; }` run a command in this shell.
                    Some(inner) if inner.starts_with([' ', '\t', '\n', '|']) => {
                        self.nested(inner.strip_prefix('|').unwrap_or(&inner))
                    }
                    // `${X@P}` expands the value as a prompt string, command substitutions too.
                    Some(inner) if inner.trim_end().ends_with("@P") => self
                        .opaque("`${...@P}` (a value expanded as a prompt, with its command substitutions)"),
                    Some(inner) => {
                        // A default or replacement value is text too (`${y:-a[\$(cmd)]}`),
                        // where the substitution is escaped or quoted (a real one is parsed).
                        if subscript_with_command(&inner) && inner.contains(['\\', '\'']) {
                            self.opaque(SUBSCRIPT);
                        }
                        self.substitutions_in(&inner)
                    }
                    None => self.opaque("an unterminated `${`"),
                }
                word.text.push(UNKNOWN);
            }
            Some('\'') => {
                self.pos += 1;
                self.ansi_c(word);
            }
            Some('"') => {}
            Some(c) if c.is_ascii_alphanumeric() || "_@*#?-$!".contains(c) => {
                self.pos += 1;
                if c.is_ascii_alphabetic() || c == '_' {
                    while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                        self.pos += 1;
                    }
                }
                word.text.push(UNKNOWN);
            }
            _ => word.text.push('$'),
        }
    }

    /// `$'...'` with its backslash escapes decoded; an escape it does not know is unknown.
    fn ansi_c(&mut self, word: &mut Word) {
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\'' => return,
                '\\' => {
                    let Some(e) = self.peek() else { break };
                    self.pos += 1;
                    let simple = match e {
                        'n' => Some('\n'),
                        't' => Some('\t'),
                        'r' => Some('\r'),
                        'a' => Some('\x07'),
                        'b' => Some('\x08'),
                        'e' | 'E' => Some('\x1b'),
                        'f' => Some('\x0c'),
                        'v' => Some('\x0b'),
                        '\\' | '\'' | '"' | '?' => Some(e),
                        _ => None,
                    };
                    if let Some(c) = simple {
                        word.text.push(c);
                        continue;
                    }
                    let (radix, max) = match e {
                        'x' => (16, 2),
                        'u' => (16, 4),
                        'U' => (16, 8),
                        '0'..='7' => {
                            self.pos -= 1;
                            (8, 3)
                        }
                        _ => {
                            word.text.push(UNKNOWN);
                            continue;
                        }
                    };
                    let mut digits = String::new();
                    while digits.len() < max && self.peek().is_some_and(|c| c.is_digit(radix)) {
                        digits.extend(self.peek());
                        self.pos += 1;
                    }
                    match u32::from_str_radix(&digits, radix).ok().and_then(char::from_u32) {
                        Some(c) if c != '\0' => word.text.push(c),
                        _ => word.text.push(UNKNOWN),
                    }
                }
                c => word.text.push(c),
            }
        }
        self.opaque("an unterminated quote");
    }

    /// After a backtick (already read).
    fn backtick(&mut self, word: &mut Word) {
        let mut inner = String::new();
        loop {
            match self.peek() {
                None => {
                    self.opaque("an unterminated backtick");
                    break;
                }
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') if matches!(self.peek_at(1), Some('`' | '\\' | '$')) => {
                    inner.extend(self.peek_at(1));
                    self.pos += 2;
                }
                Some(c) => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        self.nested(&inner);
        word.text.push(UNKNOWN);
    }

    /// The simple commands of the line, each as its words (redirections left out).
    pub(super) fn commands(mut self) -> Vec<Vec<Word>> {
        let mut commands = Vec::new();
        let mut words: Vec<Word> = Vec::new();
        let mut word: Option<Word> = None;
        // The next word is a redirection's target, not an argument.
        let mut target = false;
        let mut targets: Vec<Word> = Vec::new();
        let finish =
            |word: &mut Option<Word>, words: &mut Vec<Word>, target: &mut bool, targets: &mut Vec<Word>| {
                if let Some(mut done) = word.take() {
                    // A `[` with no `]` after it matches itself (`[ -f x ]`): no glob.
                    done.glob &= done.text.contains(['*', '?'])
                        || done.text.find('[').is_some_and(|open| done.text[open..].contains(']'));
                    if done.text.contains('{')
                        && done.text != "{"
                        && done.text != "{}"
                        && !done.text.starts_with("${")
                    {
                        // Brace expansion (`-{r,f}`) makes other words.
                        done.text.push(UNKNOWN);
                    }
                    if std::mem::take(target) {
                        targets.push(done);
                        return;
                    }
                    words.push(done);
                }
            };
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                ' ' | '\t' => finish(&mut word, &mut words, &mut target, &mut targets),
                '\\' => match self.peek() {
                    Some('\n') => self.pos += 1,
                    Some(c) => {
                        self.pos += 1;
                        let w = word.get_or_insert_default();
                        w.quoted_name |= !w.text.contains('=');
                        w.text.push(c);
                    }
                    None => {}
                },
                '\'' => {
                    let w = word.get_or_insert_default();
                    w.quoted_name |= !w.text.contains('=');
                    loop {
                        match self.chars.get(self.pos).copied() {
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(c) => {
                                w.text.push(c);
                                self.pos += 1;
                            }
                            None => {
                                self.seen.opaque.get_or_insert("an unterminated quote");
                                break;
                            }
                        }
                    }
                }
                '"' => {
                    let mut w = word.take().unwrap_or_default();
                    w.quoted_name |= !w.text.contains('=');
                    loop {
                        match self.peek() {
                            Some('"') => {
                                self.pos += 1;
                                break;
                            }
                            Some('\\') => {
                                self.pos += 1;
                                match self.peek() {
                                    Some(e @ ('"' | '\\' | '$' | '`')) => w.text.push(e),
                                    Some('\n') => {}
                                    Some(e) => {
                                        w.text.push('\\');
                                        w.text.push(e);
                                    }
                                    None => {}
                                }
                                self.pos += 1;
                            }
                            Some('$') => {
                                self.pos += 1;
                                // Within double quotes, `$'` and `$"` are a plain `$`: no
                                // ANSI-C or locale quoting starts there.
                                if matches!(self.peek(), Some('\'' | '"')) {
                                    w.text.push('$');
                                } else {
                                    self.dollar(&mut w);
                                }
                            }
                            Some('`') => {
                                self.pos += 1;
                                self.backtick(&mut w);
                            }
                            Some(c) => {
                                w.text.push(c);
                                self.pos += 1;
                            }
                            None => {
                                self.opaque("an unterminated quote");
                                break;
                            }
                        }
                    }
                    word = Some(w);
                }
                '$' => {
                    let mut w = word.take().unwrap_or_default();
                    w.quoted_name |= !w.text.contains('=');
                    if self.peek() == Some('"') {
                        // `$"..."`: a translated string, otherwise a double-quoted one.
                    } else {
                        self.dollar(&mut w);
                    }
                    word = Some(w);
                }
                '`' => {
                    let mut w = word.take().unwrap_or_default();
                    w.quoted_name |= !w.text.contains('=');
                    self.backtick(&mut w);
                    word = Some(w);
                }
                '<' | '>' => {
                    // A file descriptor number before it belongs to the redirection, as does a
                    // variable to put a new one in (`exec {fd}>/dev/null`).
                    if word.as_ref().is_some_and(|w| {
                        !w.text.is_empty() && w.text.bytes().all(|b| b.is_ascii_digit())
                            || w.text.strip_prefix('{').and_then(|t| t.strip_suffix('}')).is_some_and(
                                |name| {
                                    !name.is_empty()
                                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                                },
                            )
                    }) {
                        word = None;
                    }
                    finish(&mut word, &mut words, &mut target, &mut targets);
                    if self.peek() == Some('(') {
                        // Process substitution.
                        self.pos += 1;
                        match self.balanced_command('(', ')') {
                            Some(inner) => self.nested(&inner),
                            None => self.opaque("an unterminated process substitution"),
                        }
                        word = Some(Word { text: UNKNOWN.to_string(), ..Word::default() });
                        continue;
                    }
                    if c == '<' && self.peek() == Some('<') {
                        if self.peek_at(1) == Some('<') {
                            self.pos += 2;
                            target = true;
                            continue;
                        }
                        self.opaque("a here-document");
                        self.pos += 1;
                        continue;
                    }
                    while matches!(self.peek(), Some('>' | '&' | '|')) {
                        self.pos += 1;
                    }
                    target = true;
                }
                '&' if self.peek() == Some('>') => {
                    finish(&mut word, &mut words, &mut target, &mut targets);
                    while matches!(self.peek(), Some('>')) {
                        self.pos += 1;
                    }
                    target = true;
                }
                '(' if word.as_ref().is_some_and(|w| w.text.ends_with('=')) => {
                    // An array assignment `A=(...)`.
                    match self.balanced('(', ')') {
                        Some(inner) => self.substitutions_in(&inner),
                        None => self.opaque("an unterminated array"),
                    }
                    word.get_or_insert_default().text.push(UNKNOWN);
                }
                '(' if word.as_ref().is_some_and(|w| w.text.ends_with(['@', '!', '+', '*', '?'])) => {
                    // An extended glob `!(x)`: expanded before it matches (`@($(cmd))`).
                    match self.balanced('(', ')') {
                        Some(inner) => self.substitutions_in(&inner),
                        None => self.opaque("an unterminated pattern"),
                    }
                    let w = word.get_or_insert_default();
                    w.text.push(UNKNOWN);
                    w.glob = true;
                }
                // An arithmetic command (`(( y = x << 2 ))`, `for ((i = 0; ...))`): an expression,
                // with the substitutions it may hold, not a subshell.
                '(' if word.is_none() && self.peek() == Some('(') && {
                    self.pos -= 1;
                    let arithmetic = self.arithmetic();
                    self.pos += 1;
                    arithmetic
                } =>
                {
                    finish(&mut word, &mut words, &mut target, &mut targets);
                    if !words.is_empty() {
                        commands.push(std::mem::take(&mut words));
                    }
                    self.pos += 1;
                    if let Some(inner) = self.balanced('(', ')') {
                        self.substitutions_in(&inner);
                    }
                    self.pos += 1;
                }
                '\n' | ';' | '&' | '|' | '(' | ')' => {
                    finish(&mut word, &mut words, &mut target, &mut targets);
                    target = false;
                    if !words.is_empty() {
                        commands.push(std::mem::take(&mut words));
                    }
                }
                '#' if word.is_none() => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '*' | '?' | '[' => {
                    let w = word.get_or_insert_default();
                    w.text.push(c);
                    w.glob = true;
                }
                '~' if word.is_none() => {
                    word = Some(Word { text: "~".to_owned(), tilde: true, ..Word::default() });
                }
                c => word.get_or_insert_default().text.push(c),
            }
        }
        finish(&mut word, &mut words, &mut target, &mut targets);
        if !words.is_empty() {
            commands.push(words);
        }
        if targets.iter().any(|target| subscript_with_command(&target.text)) {
            // `read x <<< 'a[$(cmd)]'; (( x ))`.
            self.opaque(SUBSCRIPT);
        }
        self.seen.redirections.extend(targets);
        commands
    }
}
