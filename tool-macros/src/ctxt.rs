//! The one sink every stage reports its errors to (serde_derive's `Ctxt`), so all of them are
//! emitted together.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// Collects errors; must be [`check`](Ctxt::check)ed before it is dropped, so that no error is
/// ever lost on some path.
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt { errors: RefCell::new(Some(Vec::new())) }
    }

    /// An error on one token.
    pub(crate) fn error(&self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// An error covering `tokens` from their first to their last token.
    pub(crate) fn error_spanned_by(&self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// An error from syn's own parsing.
    pub(crate) fn syn_error(&self, error: syn::Error) {
        self.push(error);
    }

    fn push(&self, error: syn::Error) {
        self.errors.borrow_mut().as_mut().expect("the context was checked already").push(error);
    }

    /// The errors reported so far, as one `compile_error!` each, or `None` when there are none.
    pub(crate) fn check(self) -> Option<TokenStream> {
        let errors = self.into_errors();
        (!errors.is_empty()).then(|| errors.iter().map(syn::Error::to_compile_error).collect())
    }

    /// The errors reported so far, in order.
    pub(crate) fn into_errors(self) -> Vec<syn::Error> {
        self.errors.borrow_mut().take().expect("the context was checked already")
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("a `Ctxt` was dropped without being checked");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_errors_come_out_together() {
        let cx = Ctxt::new();
        cx.error(Span::call_site(), "first");
        cx.error(Span::call_site(), "second");
        let out = cx.check().expect("errors").to_string();
        assert_eq!(out.matches("compile_error").count(), 2, "{out}");
        assert!(out.find("first") < out.find("second"), "{out}");
        assert!(Ctxt::new().check().is_none());
    }

    #[test]
    #[should_panic(expected = "dropped without being checked")]
    fn an_unchecked_context_panics() {
        let cx = Ctxt::new();
        cx.error(Span::call_site(), "lost");
    }
}
