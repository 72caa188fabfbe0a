//! Collectives: one statement per participant, consecutive, and the collective as written
//! for the rules of `validate`.

use quote::ToTokens;
use syn::{Expr, Ident};

use super::{plain_ident, Access, BufferExpr, Errors, Kind, Mode, Program, Statement};
use crate::syntax;
use crate::text::text_of;

/// Which collective; `Broadcast` with its root's participant index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectiveOp {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast { root: usize },
}

/// The reductions of `all_reduce` and `reduce_scatter`, as written, with the runtime's names.
pub const REDUCTIONS: [(&str, &str); 5] = [
    ("sum", "Sum"),
    ("prod", "Prod"),
    ("min", "Min"),
    ("max", "Max"),
    ("avg", "Avg"),
];

/// A collective as written, for the rules of `validate`.
pub struct Collective {
    pub written: syntax::CollectiveStmt,
}

impl Collective {
    /// The keyword: `all_reduce`, `all_gather`, `reduce_scatter` or `broadcast`.
    pub fn word(&self) -> String {
        self.written.keyword.to_string()
    }

    /// Whether it combines the ranks' buffers with a reduction (`all_reduce`,
    /// `reduce_scatter`).
    pub fn reduces(&self) -> bool {
        reduces(&self.word())
    }

    /// Whether a participant may name one buffer, sent and received in place (`all_reduce`,
    /// `broadcast`).
    pub fn in_place(&self) -> bool {
        matches!(self.word().as_str(), "all_reduce" | "broadcast")
    }
}

/// Whether collective `word` takes a reduction.
fn reduces(word: &str) -> bool {
    matches!(word, "all_reduce" | "reduce_scatter")
}

/// The buffer expression under a `&` or `&mut`, as a collective's participant writes it.
pub fn unborrowed(expr: &Expr) -> &Expr {
    match expr {
        Expr::Reference(r) => &r.expr,
        other => other,
    }
}

impl Program {
    /// A collective: one statement per participant, consecutive; returns the first's id.
    ///
    /// Resolution looks up its names: the communicator, the streams and the buffers. Whether
    /// it is well formed (each stream once, its options, its buffers borrowed as it uses them)
    /// is `validate`'s; a malformed collective is resolved as far as it goes (a missing root is
    /// participant 0, a missing reduction `sum`).
    pub(super) fn resolve_collective(
        &mut self,
        c: syntax::CollectiveStmt,
        errors: &mut Errors,
    ) -> usize {
        let first = self.statements.len();
        let errors_before = errors.count();
        let word = c.keyword.to_string();
        let comm = self.communicator(&word, &c.comm, errors);
        let streams: Vec<usize> = c
            .parts
            .iter()
            .map(|part| self.stream_index(&part.stream, errors))
            .collect();
        let reduce = c
            .options
            .iter()
            .find(|(name, value)| {
                reduces(&word) && value.is_none() && REDUCTIONS.iter().any(|(r, _)| name == r)
            })
            .map(|(name, _)| name.clone());
        let root = c
            .options
            .iter()
            .find_map(|(name, value)| value.as_ref().filter(|_| name == "root"))
            .and_then(|stream| c.parts.iter().position(|p| p.stream == *stream));
        let buffers: Vec<(Option<Option<BufferExpr>>, Option<BufferExpr>)> = c
            .parts
            .iter()
            .map(|part| {
                let recv = self.buffer_expr(unborrowed(&part.recv).clone(), errors);
                let send = part
                    .send
                    .as_ref()
                    .map(|send| self.buffer_expr(unborrowed(send).clone(), errors));
                (send, recv)
            })
            .collect();
        let parts_text: Vec<String> = c
            .parts
            .iter()
            .map(|p| match &p.send {
                Some(send) => format!("{}: {} => {}", p.stream, text_of(send), text_of(&p.recv)),
                None => format!("{}: {}", p.stream, text_of(&p.recv)),
            })
            .collect();
        let options_text: String = c
            .options
            .iter()
            .map(|(n, v)| match v {
                Some(v) => format!(", {n} = {v}"),
                None => format!(", {n}"),
            })
            .collect();
        let text = format!(
            "{word}({}{options_text}) {{ {} }}",
            text_of(&c.comm),
            parts_text.join(", ")
        );
        let op = match word.as_str() {
            "all_reduce" => CollectiveOp::AllReduce,
            "all_gather" => CollectiveOp::AllGather,
            "reduce_scatter" => CollectiveOp::ReduceScatter,
            _ => CollectiveOp::Broadcast {
                root: root.unwrap_or(0),
            },
        };
        let failed = errors.count() > errors_before;
        let count = c.parts.len();
        let resolved: Vec<_> = buffers
            .into_iter()
            .map(|(send, recv)| match (send, recv) {
                (Some(Some(send)), Some(recv)) => Some((Some(send), recv)),
                (None, Some(recv)) => Some((None, recv)),
                _ => None,
            })
            .collect();
        for (k, part) in c.parts.iter().enumerate() {
            let last = part
                .recv
                .to_token_stream()
                .into_iter()
                .last()
                .map_or_else(|| part.stream.span(), |t| t.span());
            let (kind, accesses) = match (&comm, resolved[k].as_ref()) {
                (Some(comm), Some((send, recv))) if !failed => {
                    let mut accesses = Vec::new();
                    if let (Some(send), Some(at)) = (send, &part.send) {
                        accesses.push(Access {
                            buffer: send.root.clone(),
                            mode: Mode::Read,
                            whole: send.whole,
                            element: send.element,
                            dynamic: send.dynamic,
                            at: at.to_token_stream(),
                        });
                    }
                    accesses.push(Access {
                        buffer: recv.root.clone(),
                        mode: Mode::Write,
                        whole: recv.whole,
                        element: recv.element,
                        dynamic: recv.dynamic,
                        at: part.recv.to_token_stream(),
                    });
                    let kind = Kind::Collective {
                        op,
                        comm: comm.clone(),
                        reduce: reduce.clone(),
                        first,
                        count,
                        send: send.clone(),
                        recv: recv.clone(),
                    };
                    (kind, accesses)
                }
                _ => (
                    Kind::Host {
                        func: syn::parse_quote!(|| {}),
                    },
                    Vec::new(),
                ),
            };
            self.statements.push(Statement {
                id: first + k,
                stream: streams[k],
                text: text.clone(),
                first: part.stream.span(),
                stream_name: part.stream.clone(),
                kind,
                accesses,
                last,
                unresolved: failed,
                alternative: false,
            });
        }
        let (keyword, semi) = (c.keyword.clone(), c.semi.span);
        self.collectives.push(Collective { written: c });
        if count == 0 {
            // Keep numbering: one placeholder stands for the empty collective.
            return self.push_placeholder(keyword, 0, semi, text);
        }
        first
    }

    /// The communicator of a collective: the parameter its expression names; `None` (an error
    /// recorded) when it names none.
    fn communicator(&self, word: &str, comm: &Expr, errors: &mut Errors) -> Option<Ident> {
        let name = plain_ident(comm);
        match name {
            Some(name) if self.param(&name).is_some() => Some(name),
            Some(name) => {
                let similar = self.similar_param(&name);
                errors.spanned(
                    &name,
                    format!(
                        "unknown communicator `{name}`: it is not a parameter of this pipeline; \
                         {similar}the communicator of `{word}` is a parameter of type \
                         `&Communicator`, e.g. `{name}: &Communicator`"
                    ),
                );
                None
            }
            None => {
                errors.spanned(
                    comm,
                    format!(
                        "the communicator of `{word}` is a parameter name, of type \
                         `&Communicator`, e.g. `{word}(comm, …) {{ … }}` with a parameter \
                         `comm: &Communicator`"
                    ),
                );
                None
            }
        }
    }
}
