//! Device blocks: a `while`, `if` or `switch` on the device and its bodies.

use quote::ToTokens;
use syn::spanned::Spanned;
use syn::Pat;

use super::{plain_ident, Access, BlockShape, Errors, Kind, Mode, Node, Program, Statement};
use crate::syntax;
use crate::text::text_of;

/// The most valued arms a device `switch` has (its built-in kernel takes their values as one
/// argument).
pub const MAX_SWITCH_ARMS: usize = 64;

impl Program {
    pub(super) fn resolve_device_block(
        &mut self,
        b: syntax::BlockStmt,
        errors: &mut Errors,
    ) -> Node {
        let id = self.statements.len();
        let errors_before = errors.count();
        let stream = self.stream_index(&b.stream, errors);
        let (shape, word) = match &b.keyword {
            syntax::BlockKeyword::While => (BlockShape::While, "while"),
            syntax::BlockKeyword::If => (BlockShape::If, "if"),
            syntax::BlockKeyword::Switch(k) => {
                (BlockShape::Switch(arm_values(k, &b.arms, errors)), "switch")
            }
        };
        let flag_param = self.block_flag(&b, word, errors);
        let mut accesses = Vec::new();
        if let Some(name) = &flag_param {
            accesses.push(Access {
                buffer: name.clone(),
                mode: Mode::Read,
                whole: true,
                element: None,
                dynamic: false,
                at: b.flag.to_token_stream(),
            });
        }
        let limit_text = b
            .limit
            .as_ref()
            .map(|(_, e)| format!(", limit = {}", text_of(e)))
            .unwrap_or_default();
        let signalled_text = if b.signalled.is_some() {
            ", signalled"
        } else {
            ""
        };
        let text = format!(
            "{}: {word} {}{limit_text}{signalled_text}",
            b.stream,
            text_of(&b.flag)
        );
        let signalled = b.signalled.map(|k| syn::Ident::new("signalled", k.span));
        // The statement's tokens run from the stream to the flag (or the last option).
        let tail = match (&b.limit, &signalled) {
            (_, Some(k)) => k.to_token_stream(),
            (Some((_, e)), None) => e.to_token_stream(),
            (None, None) => b.flag.to_token_stream(),
        };
        let last = tail
            .into_iter()
            .last()
            .map_or_else(|| b.stream.span(), |t| t.span());
        let switch = matches!(shape, BlockShape::Switch(_));
        self.statements.push(Statement {
            id,
            stream,
            text,
            first: b.stream.span(),
            stream_name: b.stream,
            kind: Kind::Block {
                shape,
                flag: b.flag,
                flag_param,
                limit: b.limit.map(|(_, e)| e),
                signalled,
                starts: Vec::new(),
                end: id + 1,
            },
            accesses,
            last,
            unresolved: errors.count() > errors_before,
            alternative: false,
        });
        let mut starts = Vec::new();
        let mut bodies = Vec::new();
        if switch {
            for arm in b.arms {
                starts.push(self.statements.len());
                bodies.push(self.resolve_block(arm.body, errors));
            }
        } else {
            starts.push(self.statements.len());
            bodies.push(self.resolve_block(b.body, errors));
            if let syntax::BlockKeyword::If = b.keyword {
                starts.push(self.statements.len());
                if let Some((_, o)) = b.otherwise {
                    bodies.push(self.resolve_block(o, errors));
                }
            }
        }
        let stop = self.statements.len();
        if let Kind::Block { starts: s, end, .. } = &mut self.statements[id].kind {
            *s = starts;
            *end = stop;
        }
        Node::Block { stmt: id, bodies }
    }

    /// The flag's (or index's) parameter, reported when the expression is none.
    fn block_flag(
        &self,
        b: &syntax::BlockStmt,
        word: &str,
        errors: &mut Errors,
    ) -> Option<syn::Ident> {
        let what = if word == "switch" { "index" } else { "flag" };
        let flag_param = plain_ident(&b.flag);
        match &flag_param {
            Some(name) if self.param(name).is_some() => {}
            Some(name) => {
                let similar = self.similar_param(name);
                errors.spanned(
                    name,
                    format!(
                        "`{name}` is not a parameter of this pipeline; {similar}the {what} of a \
                         device `{word}` is a parameter of type `&mut DeviceFlag` (or \
                         `&DeviceFlag`), e.g. `{name}: &mut DeviceFlag`"
                    ),
                )
            }
            None => errors.spanned(
                &b.flag,
                format!(
                    "the {what} of a device `{word}` is a parameter name, of type `&mut \
                     DeviceFlag` (or `&DeviceFlag`), e.g. `{}: {word} done {{ … }}`",
                    b.stream
                ),
            ),
        }
        flag_param.filter(|n| self.param(n).is_some())
    }
}

/// The value of each arm of a `switch` (`None` for `_`), every arm checked: a pattern is a
/// non-negative integer literal that fits a `u32`, or `_`; values are distinct; `_` comes
/// once, last; there is at least one arm and at most [`MAX_SWITCH_ARMS`] valued ones.
fn arm_values(
    keyword: &syntax::kw::switch,
    arms: &[syntax::Arm],
    errors: &mut Errors,
) -> Vec<Option<u32>> {
    if arms.is_empty() {
        errors.spanned(
            keyword,
            "this device `switch` has no arms: give it at least one, `0 => { … }`, and \
             optionally a last `_ => { … }` for every other value",
        );
    }
    let mut values: Vec<(u32, &Pat)> = Vec::new();
    let mut default: Option<&Pat> = None;
    let mut misplaced = false;
    let mut out = Vec::with_capacity(arms.len());
    for arm in arms {
        if let (Some(first), false, false) = (default, misplaced, matches!(arm.pat, Pat::Wild(_))) {
            errors.spanned(
                first,
                "the `_` arm of a device `switch` must be its last: it takes every value the \
                 arms before it do not, so no arm can follow it; move it to the end",
            );
            misplaced = true;
        }
        match &arm.pat {
            Pat::Wild(_) => {
                if default.is_some() {
                    errors.spanned(
                        &arm.pat,
                        "this device `switch` has a `_` arm already: one `_` takes every value \
                         no other arm does; remove this one or merge the two bodies",
                    );
                }
                default = default.or(Some(&arm.pat));
                out.push(None);
                continue;
            }
            Pat::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => match i.base10_parse::<u32>() {
                Ok(v) => {
                    if let Some((_, earlier)) = values.iter().find(|(w, _)| *w == v) {
                        let start = earlier.span().start();
                        let (line, column) = (start.line, start.column + 1);
                        errors.spanned(
                            &arm.pat,
                            format!(
                                "value {v} is already an arm of this device `switch` (at \
                                 {line}:{column}); each value picks one arm: merge the two \
                                 bodies or give this arm another value"
                            ),
                        );
                    } else if values.len() == MAX_SWITCH_ARMS {
                        errors.spanned(
                            &arm.pat,
                            format!(
                                "a device `switch` has at most {MAX_SWITCH_ARMS} valued arms; \
                                 split it into two `switch`es, or nest one in a `_` arm"
                            ),
                        );
                    } else {
                        values.push((v, &arm.pat));
                    }
                    out.push(Some(v));
                    continue;
                }
                Err(_) => errors.spanned(
                    &arm.pat,
                    format!(
                        "arm value `{}` does not fit the index, a `u32` in device memory: \
                         write a value from 0 to {}",
                        text_of(&arm.pat),
                        u32::MAX
                    ),
                ),
            },
            other => errors.spanned(
                other,
                format!(
                    "`{}` is no arm pattern of a device `switch`: an arm is a non-negative \
                     integer literal (`0 => {{ … }}`) or `_` for every other value; write one \
                     arm per value",
                    text_of(other)
                ),
            ),
        }
        out.push(Some(u32::MAX));
    }
    out
}
