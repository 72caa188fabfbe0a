//! Collectives: one statement per participant, consecutive.

use quote::ToTokens;
use syn::Expr;

use super::{Access, BufferExpr, Errors, Kind, Mode, Program, Statement};
use crate::syntax;
use crate::text::{closest, text_of};

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

impl Program {
    /// A collective: one statement per participant, consecutive; returns the first's id.
    pub(super) fn resolve_collective(
        &mut self,
        c: syntax::CollectiveStmt,
        errors: &mut Errors,
    ) -> usize {
        let first = self.statements.len();
        let errors_before = errors.count();
        let word = c.keyword.to_string();
        let reduces = matches!(word.as_str(), "all_reduce" | "reduce_scatter");
        let in_place_allowed = matches!(word.as_str(), "all_reduce" | "broadcast");
        // The communicator: a parameter.
        let comm = match &c.comm {
            Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
            _ => None,
        };
        let comm = match comm {
            Some(name) if self.param(&name).is_some() => Some(name),
            Some(name) => {
                let params: Vec<String> = self.params.iter().map(|p| p.name.to_string()).collect();
                let similar = closest(&name.to_string(), params.iter().map(String::as_str))
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
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
                    &c.comm,
                    format!(
                        "the communicator of `{word}` is a parameter name, of type \
                         `&Communicator`, e.g. `{word}(comm, …) {{ … }}` with a parameter \
                         `comm: &Communicator`"
                    ),
                );
                None
            }
        };
        // The participants' streams: declared, each once.
        let mut streams = Vec::new();
        for (k, part) in c.parts.iter().enumerate() {
            let stream = self.stream_index(&part.stream, errors);
            if let Some(j) = c.parts[..k].iter().position(|p| p.stream == part.stream) {
                errors.spanned(
                    &part.stream,
                    format!(
                        "stream `{}` is listed twice in this `{word}` (participants {j} and {k}): \
                         each participant is one rank, on a stream of its own; list each \
                         stream once",
                        part.stream
                    ),
                );
            }
            streams.push(stream);
        }
        if c.parts.is_empty() {
            errors.spanned(
                &c.keyword,
                format!(
                    "this `{word}` lists no participant: write one `STREAM: &mut BUFFER` per \
                     rank of the communicator, e.g. `{word}(comm, …) {{ s0: &mut x0, s1: &mut x1 }};`"
                ),
            );
        }
        // The options: a reduction, or a root.
        let mut reduce = None;
        let mut root = None;
        for (name, value) in &c.options {
            match (name.to_string().as_str(), value) {
                ("root", Some(stream)) if word == "broadcast" => {
                    match c.parts.iter().position(|p| p.stream == *stream) {
                        Some(k) => root = Some(k),
                        None => errors.spanned(
                            stream,
                            format!(
                                "the root of this `broadcast` must be one of its participants' \
                                 streams; `{stream}` is not listed"
                            ),
                        ),
                    }
                }
                (op, None) if reduces && REDUCTIONS.iter().any(|(r, _)| *r == op) => {
                    if reduce.is_some() {
                        errors.spanned(name, format!("`{word}` takes one reduction; keep one"));
                    }
                    reduce = Some(name.clone());
                }
                _ => {
                    let expected = if reduces {
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
                        format!("unexpected option of `{word}`: after the communicator it takes {expected}"),
                    );
                }
            }
        }
        if reduces && reduce.is_none() && c.options.is_empty() {
            errors.spanned(
                &c.keyword,
                format!(
                    "`{word}` needs a reduction after the communicator: one of {}, e.g. \
                     `{word}(comm, sum) {{ … }}`",
                    REDUCTIONS.map(|(r, _)| format!("`{r}`")).join(", ")
                ),
            );
        }
        if word == "broadcast" && root.is_none() && !c.options.iter().any(|(n, _)| n == "root") {
            errors.spanned(
                &c.keyword,
                "`broadcast` needs its root after the communicator: `broadcast(comm, root = \
                 STREAM) { … }`, where STREAM is the participant whose buffer is sent",
            );
        }
        // The buffers: `&mut RECV`, or `&SEND => &mut RECV`.
        let mut buffers = Vec::new();
        for part in &c.parts {
            let recv = self.collective_buffer(&word, &part.recv, true, errors);
            let send = match &part.send {
                Some(send) => Some(self.collective_buffer(&word, send, false, errors)),
                None => {
                    if !in_place_allowed {
                        errors.spanned(
                            &part.recv,
                            format!(
                                "`{word}` needs a send and a receive buffer on each stream: \
                                 write `{}: &SEND => &mut RECV`",
                                part.stream
                            ),
                        );
                    }
                    None
                }
            };
            buffers.push((send, recv));
        }
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
        for (k, part) in c.parts.into_iter().enumerate() {
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
                            at: at.to_token_stream(),
                        });
                    }
                    accesses.push(Access {
                        buffer: recv.root.clone(),
                        mode: Mode::Write,
                        whole: recv.whole,
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
                stream_name: part.stream,
                kind,
                accesses,
                last,
                unresolved: failed,
            });
        }
        if count == 0 {
            // Keep numbering: one placeholder stands for the empty collective.
            return self.push_placeholder(c.keyword, 0, c.semi.span, text);
        }
        first
    }

    /// A collective's buffer: `&mut BUF` for the receive side (`write`), `&BUF` for the send
    /// side.
    fn collective_buffer(
        &self,
        word: &str,
        expr: &Expr,
        write: bool,
        errors: &mut Errors,
    ) -> Option<BufferExpr> {
        let (inner, mutable) = match expr {
            Expr::Reference(r) => (&*r.expr, r.mutability.is_some()),
            other => (other, false),
        };
        let text = text_of(inner);
        if write && !mutable {
            errors.spanned(
                expr,
                format!(
                    "`{word}` writes this buffer: write `&mut {text}` (a collective reads and \
                     writes its receive buffer)"
                ),
            );
            return None;
        }
        if !write && (mutable || !matches!(expr, Expr::Reference(_))) {
            errors.spanned(
                expr,
                format!("`{word}` only reads its send buffer: write `&{text}`"),
            );
            return None;
        }
        self.buffer_expr(inner.clone(), errors)
    }
}
