//! Operands: the buffers a statement names, how it touches them, and the shape of a write.

use proc_macro2::TokenStream;
use syn::{Expr, Ident};

use super::{Errors, Program};
use crate::text::closest;

/// A written buffer expression in the shape that generated code writes through the
/// pipeline's exclusive borrow of the parameter: the parameter, then indices (`xs[i]`), then
/// at most one `.slice_mut(range)` or `.slice(range)`.
pub struct WriteForm<'e> {
    /// The indices, outermost first (`xs[i][j]`: `i`, then `j`).
    pub indices: Vec<&'e Expr>,
    /// The range of the slice, and the method's name (for spans).
    pub slice: Option<(&'e Ident, &'e Expr)>,
}

/// `expr` as a [`WriteForm`]; `None` when it is not in that shape (another method, a slice of
/// a slice, a field).
pub fn write_form(expr: &Expr) -> Option<WriteForm<'_>> {
    let mut at = unparen(expr);
    let mut slice = None;
    if let Expr::MethodCall(m) = at {
        let is_slice = m.method == "slice" || m.method == "slice_mut";
        if !is_slice || m.turbofish.is_some() || m.args.len() != 1 {
            return None;
        }
        slice = m.args.first().map(|range| (&m.method, range));
        at = unparen(&m.receiver);
    }
    let mut indices = Vec::new();
    loop {
        match at {
            Expr::Index(i) => {
                indices.push(&*i.index);
                at = unparen(&i.expr);
            }
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => break,
            _ => return None,
        }
    }
    indices.reverse();
    Some(WriteForm { indices, slice })
}

fn unparen(mut expr: &Expr) -> &Expr {
    while let Expr::Paren(p) = expr {
        expr = &p.expr;
    }
    expr
}

/// A buffer expression: a parameter name, optionally followed by method calls.
#[derive(Clone)]
pub struct BufferExpr {
    pub expr: Expr,
    /// The parameter name it starts from.
    pub root: Ident,
    /// `true` for the plain name (the whole buffer), or a constant element of it alone
    /// (`xs[0]`: the whole of that element).
    pub whole: bool,
    /// The constant index right after the name (`xs[0]`, `xs[1].slice(..)`): that element is
    /// a buffer of its own for the static race check.
    pub element: Option<u64>,
    /// Whether the name is indexed by a value only known at run time (`xs[i]`): it may be any
    /// element.
    pub dynamic: bool,
}

/// Read or write, as in the runtime's `AccessMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    Read,
    Write,
}

/// One buffer a statement touches.
pub struct Access {
    pub buffer: Ident,
    pub mode: Mode,
    pub whole: bool,
    /// The constant element of `buffer` (`xs[0]`), a buffer of its own for the race check.
    pub element: Option<u64>,
    /// Whether `buffer` is indexed by a run-time value (`xs[i]`).
    pub dynamic: bool,
    /// The user's expression (`&mut x.slice(..)`, a copy side), for errors.
    pub at: TokenStream,
}

impl Program {
    /// Reads a buffer expression: a parameter name optionally followed by method calls and
    /// indexing (`xs[i]`: one buffer of a slice or `Vec` of buffers).
    pub(super) fn buffer_expr(&self, expr: Expr, errors: &mut Errors) -> Option<BufferExpr> {
        let mut root = &expr;
        // Method calls and indexes on the way to the name; the index applied to it directly.
        let (mut steps, mut direct) = (0usize, None);
        loop {
            match root {
                Expr::MethodCall(m) => {
                    root = &m.receiver;
                    steps += 1;
                    direct = None;
                }
                Expr::Index(i) => {
                    root = &i.expr;
                    steps += 1;
                    direct = Some(&*i.index);
                }
                Expr::Paren(p) => root = &p.expr,
                _ => break,
            }
        }
        let element = direct.and_then(super::constant_index).map(|k| k as u64);
        let dynamic = direct.is_some() && element.is_none();
        let whole = steps == 0 || (steps == 1 && element.is_some());
        let Expr::Path(path) = root else {
            errors.spanned(
                &expr,
                "expected a buffer: a parameter name, optionally followed by method calls or \
                 indexing such as `x.slice(0..n)` or `xs[i]`",
            );
            return None;
        };
        let Some(root) = path
            .path
            .get_ident()
            .cloned()
            .filter(|_| path.qself.is_none())
        else {
            errors.spanned(
                &expr,
                "expected a buffer: a parameter of the pipeline, such as `x`",
            );
            return None;
        };
        if self.param(&root).is_none() {
            let name = root.to_string();
            let params: Vec<String> = self.params.iter().map(|p| p.name.to_string()).collect();
            let message = match closest(&name, params.iter().map(String::as_str)) {
                Some(similar) => format!(
                    "`{root}` is not a parameter of this pipeline: did you mean `{similar}`? \
                     (buffers in `&`, `&mut`, `copy` and `fill` must be parameters)"
                ),
                None => format!(
                    "`{root}` is not a parameter of this pipeline; buffers in `&`, `&mut`, `copy` \
                     and `fill` must be parameters, e.g. `{root}: &mut DeviceBuffer<f32>`"
                ),
            };
            errors.spanned(&root, message);
            return None;
        }
        Some(BufferExpr {
            expr,
            root,
            whole,
            element,
            dynamic,
        })
    }
}
