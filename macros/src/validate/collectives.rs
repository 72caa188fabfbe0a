//! Collectives: one rank per stream, the options each collective takes, and buffers borrowed
//! as the collective uses them.

use syn::Expr;

use crate::model::{unborrowed, Collective, Errors, Program, REDUCTIONS};
use crate::text::text_of;

/// Every collective is well formed: each rule below, collective by collective.
pub(super) fn collectives_are_well_formed(program: &Program, errors: &mut Errors) {
    for c in &program.collectives {
        streams_are_listed_once(c, errors);
        participants_are_listed(c, errors);
        options_fit_the_collective(c, errors);
        reductions_are_named(c, errors);
        broadcasts_name_their_root(c, errors);
        buffers_are_borrowed_as_used(c, errors);
    }
}

/// Each participant is one rank, on a stream of its own: no stream is listed twice.
fn streams_are_listed_once(c: &Collective, errors: &mut Errors) {
    let parts = &c.written.parts;
    for (k, part) in parts.iter().enumerate() {
        if let Some(j) = parts[..k].iter().position(|p| p.stream == part.stream) {
            errors.spanned(
                &part.stream,
                format!(
                    "stream `{}` is listed twice in this `{}` (participants {j} and {k}): each \
                     participant is one rank, on a stream of its own; list each stream once",
                    part.stream,
                    c.word()
                ),
            );
        }
    }
}

/// A collective lists at least one participant.
fn participants_are_listed(c: &Collective, errors: &mut Errors) {
    if c.written.parts.is_empty() {
        let word = c.word();
        errors.spanned(
            &c.written.keyword,
            format!(
                "this `{word}` lists no participant: write one `STREAM: &mut BUFFER` per rank \
                 of the communicator, e.g. `{word}(comm, …) {{ s0: &mut x0, s1: &mut x1 }};`"
            ),
        );
    }
}

/// After the communicator, a reducing collective takes one reduction, `broadcast` one
/// `root = STREAM` naming a participant, the others nothing.
fn options_fit_the_collective(c: &Collective, errors: &mut Errors) {
    let word = c.word();
    let mut reduced = false;
    for (name, value) in &c.written.options {
        match (name.to_string().as_str(), value) {
            ("root", Some(stream)) if word == "broadcast" => {
                if !c.written.parts.iter().any(|p| p.stream == *stream) {
                    errors.spanned(
                        stream,
                        format!(
                            "the root of this `broadcast` must be one of its participants' \
                             streams; `{stream}` is not listed"
                        ),
                    );
                }
            }
            (op, None) if c.reduces() && REDUCTIONS.iter().any(|(r, _)| *r == op) => {
                if reduced {
                    errors.spanned(name, format!("`{word}` takes one reduction; keep one"));
                }
                reduced = true;
            }
            _ => {
                let expected = if c.reduces() {
                    format!(
                        "a reduction: one of {}",
                        REDUCTIONS.map(|(r, _)| format!("`{r}`")).join(", ")
                    )
                } else if word == "broadcast" {
                    "`root = STREAM`".to_owned()
                } else {
                    "no option".to_owned()
                };
                errors.spanned(
                    name,
                    format!(
                        "unexpected option of `{word}`: after the communicator it takes \
                         {expected}"
                    ),
                );
            }
        }
    }
}

/// A reducing collective names its reduction (one without any option is told which; one with
/// a wrong option is told so by [`options_fit_the_collective`]).
fn reductions_are_named(c: &Collective, errors: &mut Errors) {
    if c.reduces() && c.written.options.is_empty() {
        let word = c.word();
        errors.spanned(
            &c.written.keyword,
            format!(
                "`{word}` needs a reduction after the communicator: one of {}, e.g. \
                 `{word}(comm, sum) {{ … }}`",
                REDUCTIONS.map(|(r, _)| format!("`{r}`")).join(", ")
            ),
        );
    }
}

/// A `broadcast` names its root.
fn broadcasts_name_their_root(c: &Collective, errors: &mut Errors) {
    if c.word() == "broadcast" && !c.written.options.iter().any(|(n, _)| n == "root") {
        errors.spanned(
            &c.written.keyword,
            "`broadcast` needs its root after the communicator: `broadcast(comm, root = \
             STREAM) { … }`, where STREAM is the participant whose buffer is sent",
        );
    }
}

/// Each participant writes its receive buffer, `&mut RECV`, and only reads its send buffer,
/// `&SEND`; one that names no send buffer sends its receive buffer, which only `all_reduce`
/// and `broadcast` do.
fn buffers_are_borrowed_as_used(c: &Collective, errors: &mut Errors) {
    let word = c.word();
    for part in &c.written.parts {
        if !matches!(&part.recv, Expr::Reference(r) if r.mutability.is_some()) {
            errors.spanned(
                &part.recv,
                format!(
                    "`{word}` writes this buffer: write `&mut {}` (a collective reads and writes \
                     its receive buffer)",
                    text_of(unborrowed(&part.recv))
                ),
            );
        }
        match &part.send {
            Some(send) if !matches!(send, Expr::Reference(r) if r.mutability.is_none()) => {
                errors.spanned(
                    send,
                    format!(
                        "`{word}` only reads its send buffer: write `&{}`",
                        text_of(unborrowed(send))
                    ),
                );
            }
            None if !c.in_place() => errors.spanned(
                &part.recv,
                format!(
                    "`{word}` needs a send and a receive buffer on each stream: write `{}: &SEND \
                     => &mut RECV`",
                    part.stream
                ),
            ),
            _ => {}
        }
    }
}
