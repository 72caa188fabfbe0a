//! Declarations: at least one stream, and unique names.

use syn::Ident;

use crate::model::{Errors, Program};

/// A pipeline declares at least one stream; the first declared is the origin.
pub(super) fn at_least_one_stream(program: &Program, errors: &mut Errors) {
    if program.streams.is_empty() {
        errors.spanned(
            &program.name,
            format!(
                "pipeline `{}` declares no stream: declare at least one, e.g. `stream main;` \
                 (the first declared stream is the origin)",
                program.name
            ),
        );
    }
}

/// Stream names, event names and parameter names are each unique.
pub(super) fn unique_names(program: &Program, errors: &mut Errors) {
    fn check<'a>(what: &str, names: impl Iterator<Item = &'a Ident>, errors: &mut Errors) {
        let mut seen: Vec<&Ident> = Vec::new();
        for name in names {
            if seen.contains(&name) {
                errors.spanned(
                    name,
                    format!("{what} `{name}` is declared twice; rename one"),
                );
            } else {
                seen.push(name);
            }
        }
    }
    check("stream", program.streams.iter().map(|s| &s.name), errors);
    check(
        "event",
        program
            .events
            .iter()
            .filter(|e| e.element.is_none_or(|(k, _)| k == 0))
            .map(|e| &e.name),
        errors,
    );
    check(
        "parameter",
        program
            .params
            .iter()
            .filter(|p| p.temp.is_none())
            .map(|p| &p.name),
        errors,
    );
    // A temporary is named as a parameter is: its name is neither a parameter's nor another
    // temporary's.
    let mut seen: Vec<&Ident> = Vec::new();
    for t in &program.temps {
        if program
            .params
            .iter()
            .any(|p| p.temp.is_none() && p.name == t.name)
        {
            errors.spanned(
                &t.name,
                format!(
                    "temporary `{}` has the name of a parameter of the pipeline: statements \
                     name both alike; rename one",
                    t.name
                ),
            );
        } else if seen.contains(&&t.name) {
            errors.spanned(
                &t.name,
                format!("temporary `{}` is declared twice; rename one", t.name),
            );
        }
        seen.push(&t.name);
    }
}
