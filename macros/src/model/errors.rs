//! Errors and warnings collected while resolving and validating.

use proc_macro2::Span;
use quote::ToTokens;

/// Errors collected while resolving and validating, reported together; and warnings.
#[derive(Default)]
pub struct Errors {
    errors: Vec<syn::Error>,
    warnings: Vec<Warning>,
}

/// A warning: stable Rust gives procedural macros no warning of their own, so `expand` emits
/// it as the use of a deprecated item named `name`, with `message` as the deprecation note.
pub struct Warning {
    pub span: Span,
    pub name: &'static str,
    pub message: String,
}

impl Errors {
    /// Records `message` on the tokens `at`.
    pub fn spanned(&mut self, at: impl ToTokens, message: impl std::fmt::Display) {
        self.errors.push(syn::Error::new_spanned(at, message));
    }

    /// Records an error, e.g. one built with a note appended.
    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// Records a warning.
    pub fn warn(&mut self, span: Span, name: &'static str, message: impl std::fmt::Display) {
        self.warnings.push(Warning {
            span,
            name,
            message: message.to_string(),
        });
    }

    /// How many errors are recorded so far.
    pub fn count(&self) -> usize {
        self.errors.len()
    }

    /// Every error, in the order found.
    #[cfg(test)]
    pub fn into_vec(self) -> Vec<syn::Error> {
        self.errors
    }

    /// Every error and every warning, each in the order found.
    pub fn into_parts(self) -> (Vec<syn::Error>, Vec<Warning>) {
        (self.errors, self.warnings)
    }
}
