//! Device blocks: a `while` or `if` on the device and its bodies.

use quote::ToTokens;
use syn::Expr;

use super::{Access, Errors, Kind, Mode, Node, Program, Statement};
use crate::syntax;
use crate::text::{closest, text_of};

impl Program {
    pub(super) fn resolve_device_block(
        &mut self,
        b: syntax::BlockStmt,
        errors: &mut Errors,
    ) -> Node {
        let id = self.statements.len();
        let errors_before = errors.count();
        let stream = self.stream_index(&b.stream, errors);
        let (looping, word) = match &b.keyword {
            syntax::BlockKeyword::While => (true, "while"),
            syntax::BlockKeyword::If => (false, "if"),
        };
        let flag_param = match &b.flag {
            Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
            _ => None,
        };
        match &flag_param {
            Some(name) if self.param(name).is_some() => {}
            Some(name) => {
                let params: Vec<String> = self.params.iter().map(|p| p.name.to_string()).collect();
                let similar = closest(&name.to_string(), params.iter().map(String::as_str))
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                errors.spanned(
                    name,
                    format!(
                        "`{name}` is not a parameter of this pipeline; {similar}the flag of a \
                         device `{word}` is a parameter of type `&mut DeviceFlag` (or \
                         `&DeviceFlag`), e.g. `{name}: &mut DeviceFlag`"
                    ),
                )
            }
            None => errors.spanned(
                &b.flag,
                format!(
                    "the flag of a device `{word}` is a parameter name, of type `&mut DeviceFlag` \
                     (or `&DeviceFlag`), e.g. `{}: {word} done {{ … }}`",
                    b.stream
                ),
            ),
        }
        let flag_param = flag_param.filter(|n| self.param(n).is_some());
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
        let text = format!("{}: {word} {}{limit_text}", b.stream, text_of(&b.flag));
        // The statement's tokens run from the stream to the flag (or the limit).
        let tail = b
            .limit
            .as_ref()
            .map_or_else(|| b.flag.to_token_stream(), |(_, e)| e.to_token_stream());
        let last = tail
            .into_iter()
            .last()
            .map_or_else(|| b.stream.span(), |t| t.span());
        self.statements.push(Statement {
            id,
            stream,
            text,
            first: b.stream.span(),
            stream_name: b.stream,
            kind: Kind::Block {
                looping,
                flag: b.flag,
                flag_param,
                limit: b.limit.map(|(_, e)| e),
                otherwise: id + 1,
                end: id + 1,
            },
            accesses,
            last,
            unresolved: errors.count() > errors_before,
            alternative: false,
        });
        let body = self.resolve_block(b.body, errors);
        let start = self.statements.len();
        let otherwise = b.otherwise.map(|(_, o)| self.resolve_block(o, errors));
        let stop = self.statements.len();
        if let Kind::Block {
            otherwise: o, end, ..
        } = &mut self.statements[id].kind
        {
            *o = start;
            *end = stop;
        }
        Node::Block {
            stmt: id,
            body,
            otherwise,
        }
    }
}
