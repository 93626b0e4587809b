//! Where a value sits in the arguments: a chain on the stack, written out as a JSON pointer only
//! when something is recorded there (a coercion, a problem).

/// A place in the arguments.
#[derive(Clone, Copy)]
pub(super) enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    /// The JSON pointer of the place (empty for the root).
    pub(super) fn pointer(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Key(parent, key) => {
                parent.write(out);
                out.push('/');
                out.push_str(&escape(key));
            }
            Path::Index(parent, index) => {
                parent.write(out);
                out.push('/');
                out.push_str(&index.to_string());
            }
        }
    }
}

/// `token` as one segment of a JSON pointer (`~` as `~0`, `/` as `~1`).
pub(super) fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
