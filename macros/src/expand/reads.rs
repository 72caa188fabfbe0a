//! Which parameters each statement's expressions read: an argument update (the runtime's
//! `Issuer::unchanged`) skips a statement none of whose parameters changed.
//!
//! A statement's values are taken to be a function of the parameters its expressions name,
//! of the loop variables of the host `for`s around it (themselves functions of their loops'
//! expressions) and of constants. What the expressions cannot be seen to depend on that way
//! makes the statement one that is always walked: a macro call, an `unsafe` block, a method
//! called on a path that is no parameter or local (a static's interior, `COUNTER.load(..)`).
//! Only launches, copies, fills and `call`s are skipped; the runtime compares every other statement.

use std::collections::HashMap;

use syn::visit::Visit;
use syn::{Expr, Ident, Pat};

use crate::model::{Arg, Kind, Node, Param, Program};

/// The bit of parameter `i`, as the runtime's `param_bit` (parameters from the 64th on share
/// the last bit).
fn param_bit(i: usize) -> u64 {
    1 << i.min(63)
}

/// What the statements and host loops of a program read, when an argument update may skip
/// them.
pub(super) struct ReadSets {
    /// Per statement id: the parameters it reads, when it may be skipped.
    pub(super) stmts: Vec<Option<u64>>,
    /// Per host `for` (by its node's address in the program): a number of its own and the
    /// parameters its expressions and everything in it read, when the whole loop may be
    /// skipped (only launches, copies, fills, `call`s and ordering statements in it, all told).
    loops: HashMap<usize, (u32, u64)>,
}

impl ReadSets {
    /// What statement `i` reads, when it may be skipped.
    pub(super) fn stmt(&self, i: usize) -> Option<u64> {
        self.stmts.get(i).copied().flatten()
    }

    /// The number and reads of the host `for` `node`, when it may be skipped whole.
    pub(super) fn for_loop(&self, node: &Node) -> Option<(u32, u64)> {
        self.loops
            .get(&(std::ptr::from_ref(node) as usize))
            .copied()
    }
}

/// Per statement id: the parameters it reads, when it may be skipped.
#[cfg(test)]
fn statement_reads(program: &Program, params: &[&Param]) -> Vec<Option<u64>> {
    read_sets(program, params).stmts
}

/// What `program`'s statements and host loops read ([`ReadSets`]).
pub(super) fn read_sets(program: &Program, params: &[&Param]) -> ReadSets {
    let mut walk = Walk {
        program,
        params,
        locals: program.temps.iter().map(|t| t.name.clone()).collect(),
        out: vec![None; program.statements.len()],
        loops: HashMap::new(),
    };
    walk.nodes(&program.body, Some(0));
    ReadSets {
        stmts: walk.out,
        loops: walk.loops,
    }
}

/// Whether every statement `program` can issue is decided by its parameters' keys: a launch,
/// copy, fill or `call` with `reads`, an ordering statement, a host function or a temporary's
/// allocation or release whose size reads only parameters, locals and constants, each under
/// host control flow of such expressions; no device block or collective. An argument
/// update whose keys did not change may then walk nothing (the runtime's
/// `Pipeline::KEYED_WALK`).
pub(super) fn walk_keyed(program: &Program, params: &[&Param], reads: &[Option<u64>]) -> bool {
    let mut walk = Walk {
        program,
        params,
        locals: program.temps.iter().map(|t| t.name.clone()).collect(),
        out: Vec::new(),
        loops: HashMap::new(),
    };
    walk.keyed(&program.body, reads)
}

struct Walk<'a> {
    program: &'a Program,
    params: &'a [&'a Param],
    /// Names in scope that are no parameter: temporaries, loop variables.
    locals: Vec<Ident>,
    out: Vec<Option<u64>>,
    loops: HashMap<usize, (u32, u64)>,
}

impl Walk<'_> {
    /// `nodes` under host control flow that reads `outer` (`None`: what it reads cannot be
    /// told). Returns what they read when they may be skipped whole: launches, copies, fills
    /// and `call`s that may be skipped and ordering statements, under told host control flow.
    fn nodes(&mut self, nodes: &[Node], outer: Option<u64>) -> Option<u64> {
        let mut all = Some(0);
        for node in nodes {
            let reads = match node {
                Node::Stmt(i) => {
                    let reads = outer.zip(self.statement(*i)).map(|(a, b)| a | b);
                    if let Some(slot) = self.out.get_mut(*i) {
                        *slot = reads;
                    }
                    match self.program.statements.get(*i).map(|s| &s.kind) {
                        Some(
                            Kind::Launch { .. }
                            | Kind::Copy { .. }
                            | Kind::Fill { .. }
                            | Kind::Call { .. },
                        ) => reads,
                        Some(Kind::Record { .. } | Kind::Wait { .. } | Kind::WaitStream { .. }) => {
                            outer
                        }
                        _ => None,
                    }
                }
                Node::For {
                    pat, expr, body, ..
                } => {
                    let inner = outer.zip(self.exprs([expr])).map(|(a, b)| a | b);
                    let depth = self.locals.len();
                    bind(pat, &mut self.locals);
                    let reads = inner.zip(self.nodes(body, inner)).map(|(a, b)| a | b);
                    self.locals.truncate(depth);
                    if let Some(reads) = reads {
                        let number = self.loops.len() as u32;
                        self.loops
                            .insert(std::ptr::from_ref(node) as usize, (number, reads));
                    }
                    reads
                }
                Node::If {
                    cond,
                    then,
                    otherwise,
                    ..
                } => {
                    let inner = outer.zip(self.exprs([cond])).map(|(a, b)| a | b);
                    let then = self.nodes(then, inner);
                    let otherwise = match otherwise {
                        Some(o) => self.nodes(o, inner),
                        None => Some(0),
                    };
                    inner.zip(then).zip(otherwise).map(|((a, b), c)| a | b | c)
                }
                // A body's statements are issued whatever the flag holds.
                Node::Block { bodies, .. } => {
                    for body in bodies {
                        self.nodes(body, outer);
                    }
                    None
                }
            };
            all = all.zip(reads).map(|(a, b)| a | b);
        }
        all
    }

    /// Whether `nodes` are decided by the parameters' keys (see [`walk_keyed`]).
    fn keyed(&mut self, nodes: &[Node], reads: &[Option<u64>]) -> bool {
        nodes.iter().all(|node| match node {
            Node::Stmt(i) => self.stmt_keyed(*i, reads),
            // An ordering statement or temporary in a loop needs the loop's expression told
            // here (a launch's `reads` say so already).
            Node::For {
                pat, expr, body, ..
            } => {
                if self.exprs([expr]).is_none() {
                    return false;
                }
                let depth = self.locals.len();
                bind(pat, &mut self.locals);
                let keyed = self.keyed(body, reads);
                self.locals.truncate(depth);
                keyed
            }
            Node::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                self.exprs([cond]).is_some()
                    && self.keyed(then, reads)
                    && otherwise.as_ref().is_none_or(|o| self.keyed(o, reads))
            }
            Node::Block { .. } => false,
        })
    }

    /// Whether statement `i` is decided by the parameters' keys (its host control flow is
    /// checked by [`Walk::keyed`]).
    fn stmt_keyed(&self, i: usize, reads: &[Option<u64>]) -> bool {
        let Some(stmt) = self.program.statements.get(i) else {
            return false;
        };
        match &stmt.kind {
            Kind::Launch { .. } | Kind::Copy { .. } | Kind::Fill { .. } | Kind::Call { .. } => {
                reads.get(i).is_some_and(Option::is_some)
            }
            Kind::Record { .. } | Kind::Wait { .. } | Kind::WaitStream { .. } => true,
            // The graph keeps the host functions it captured; an update compares none.
            Kind::Host { .. } => true,
            Kind::Alloc { temp } | Kind::Free { temp } => self
                .program
                .temps
                .get(*temp)
                .is_some_and(|t| self.exprs([&t.len]).is_some()),
            Kind::Block { .. } | Kind::Collective { .. } => false,
        }
    }

    /// What statement `i`'s expressions read, when it is a launch, copy, fill or `call`.
    fn statement(&self, i: usize) -> Option<u64> {
        let stmt = self.program.statements.get(i)?;
        match &stmt.kind {
            Kind::Launch {
                kernel,
                grid,
                block,
                shared,
                args,
            } => {
                let args = args.iter().map(Arg::expr);
                let fixed = [kernel, grid, block].into_iter().chain(shared);
                self.exprs(fixed.chain(args))
            }
            Kind::Copy { dst, src } => self.exprs([&dst.expr, &src.expr]),
            Kind::Fill { dst, value } => self.exprs([&dst.expr, value]),
            Kind::Call { op, args } => {
                self.exprs(std::iter::once(op).chain(args.iter().map(Arg::expr)))
            }
            _ => None,
        }
    }

    /// The parameters `exprs` read; `None` when they may read more.
    fn exprs<'e>(&self, exprs: impl IntoIterator<Item = &'e Expr>) -> Option<u64> {
        let mut reads = Reads {
            params: self.params,
            locals: &self.locals,
            mask: 0,
            told: true,
        };
        for e in exprs {
            reads.visit_expr(e);
        }
        reads.told.then_some(reads.mask)
    }
}

/// Adds the names `pat` binds to `locals`.
fn bind(pat: &Pat, locals: &mut Vec<Ident>) {
    struct Names<'l>(&'l mut Vec<Ident>);
    impl Visit<'_> for Names<'_> {
        fn visit_pat_ident(&mut self, p: &syn::PatIdent) {
            self.0.push(p.ident.clone());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    Names(locals).visit_pat(pat);
}

/// The parameters an expression names (every identifier that is a parameter's name: a field
/// or method of that name only adds a parameter, which costs a comparison, never a change
/// missed), and whether that is all it reads.
struct Reads<'a> {
    params: &'a [&'a Param],
    locals: &'a [Ident],
    mask: u64,
    told: bool,
}

impl Reads<'_> {
    fn is_param(&self, name: &Ident) -> bool {
        self.params.iter().any(|p| p.name == *name)
    }

    /// Whether `e` (behind references, parentheses, fields and indices) is a path that names
    /// no parameter or local: a static or something else outside the pipeline.
    fn outside(&self, mut e: &Expr) -> bool {
        loop {
            e = match e {
                Expr::Paren(p) => &p.expr,
                Expr::Reference(r) => &r.expr,
                Expr::Field(f) => &f.base,
                Expr::Index(i) => &i.expr,
                Expr::Group(g) => &g.expr,
                Expr::Path(p) => {
                    return match p.path.get_ident() {
                        Some(name) => !self.is_param(name) && !self.locals.contains(name),
                        None => true,
                    };
                }
                _ => return false,
            };
        }
    }
}

impl Visit<'_> for Reads<'_> {
    fn visit_ident(&mut self, name: &Ident) {
        if let Some(k) = self.params.iter().position(|p| p.name == *name) {
            self.mask |= param_bit(k);
        }
    }

    fn visit_macro(&mut self, m: &syn::Macro) {
        // Its tokens are not expressions to look into.
        self.told = false;
        syn::visit::visit_macro(self, m);
    }

    fn visit_expr_unsafe(&mut self, e: &syn::ExprUnsafe) {
        self.told = false;
        syn::visit::visit_expr_unsafe(self, e);
    }

    fn visit_expr_method_call(&mut self, call: &syn::ExprMethodCall) {
        if self.outside(&call.receiver) {
            self.told = false;
        }
        syn::visit::visit_expr_method_call(self, call);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Errors;

    /// `f` of the program `src` declares and its parameters (not its temporaries), the
    /// program free of errors when `clean`.
    fn with_program<R>(src: &str, clean: bool, f: impl FnOnce(&Program, &[&Param]) -> R) -> R {
        let input = syn::parse_str(src).expect("parses");
        let mut errors = Errors::default();
        let program = Program::from_syntax(input, &mut errors);
        if clean {
            assert_eq!(errors.count(), 0, "{src}");
        }
        let params: Vec<&Param> = program.params.iter().filter(|p| p.temp.is_none()).collect();
        f(&program, &params)
    }

    fn reads(src: &str) -> Vec<Option<u64>> {
        with_program(src, false, statement_reads)
    }

    #[test]
    fn a_launch_reads_the_parameters_it_names() {
        let r = reads(
            "pipeline P(k: &Kernel, x: &mut DeviceBuffer<f32>, y: &DeviceBuffer<f32>, n: u32, m: u32) {
                stream s;
                s: launch k<<<n, 256>>>(&mut x, n);
                s: launch k<<<1, 1>>>(&y.slice(0..m as usize));
                s: fill x = 1.0f32;
                s: copy x <- y;
            }",
        );
        assert_eq!(
            r,
            vec![Some(0b1011), Some(0b10101), Some(0b10), Some(0b110)]
        );
    }

    #[test]
    fn host_control_flow_adds_what_it_reads() {
        let r = reads(
            "pipeline P(k: &Kernel, x: &mut DeviceBuffer<f32>, n: usize, on: bool) {
                stream s;
                for i in 0..n {
                    if on { s: launch k<<<1, 1>>>(&mut x, i as u32); }
                }
            }",
        );
        assert_eq!(r, vec![Some(0b1111)]);
    }

    #[test]
    fn what_cannot_be_told_is_always_walked() {
        let r = reads(
            "pipeline P(k: &Kernel, x: &mut DeviceBuffer<u32>, cb: &Cb) {
                stream s;
                s: launch k<<<1, 1>>>(&mut x, COUNTER.load(Relaxed));
                s: launch k<<<1, 1>>>(&mut x, dbg!(1u32));
                s: launch k<<<1, 1>>>(&mut x, helper(BLOCK));
                s: host cb;
                s: launch k<<<1, 1>>>(&mut x, x.len() as u32);
            }",
        );
        assert_eq!(r, vec![None, None, Some(0b11), None, Some(0b11)]);
    }

    fn keyed(src: &str) -> bool {
        with_program(src, true, |program, params| {
            walk_keyed(program, params, &statement_reads(program, params))
        })
    }

    #[test]
    fn keys_decide_a_walk_of_told_statements_orderings_and_temporaries() {
        assert!(keyed(
            "pipeline P(k: &Kernel, x: &mut DeviceBuffer<f32>, n: usize, on: bool, cb: &Cb, op: &Op) {
                stream s;
                stream t;
                event e;
                temp h: f32[n];
                for i in 0..n {
                    t: wait_stream s;
                    t: launch k<<<1, 1>>>(&mut h, i as u32);
                    if on { t: record e; s: wait e; }
                    s: wait_stream t;
                    s: copy x.slice(0..n) <- h;
                    s: call op(&mut x, &h);
                }
                s: host cb;
            }",
        ));
    }

    #[test]
    fn keys_do_not_decide_what_cannot_be_told_nor_blocks() {
        for body in [
            "s: launch k<<<1, 1>>>(&mut x, COUNTER.load(Relaxed));",
            "for _ in 0..COUNTER.load(Relaxed) { s: wait_stream t; }",
            "if dbg!(n > 1) { s: record e; }",
            "s: call op(&mut x.slice_mut(0..N.load(Relaxed)));",
            "s: while flag { s: fill x = 1.0f32; }",
        ] {
            let src = format!(
                "pipeline P(k: &Kernel, x: &mut DeviceBuffer<f32>, n: usize, op: &Op, flag: &mut DeviceFlag) {{
                    stream s;
                    stream t;
                    event e;
                    {body}
                }}"
            );
            assert!(!keyed(&src), "{body}");
        }
        assert!(!keyed(
            "pipeline P(k: &Kernel, n: usize) {
                stream s;
                temp h: f32[SIZE.load(Relaxed) + n];
                s: launch k<<<1, 1>>>(&mut h);
            }",
        ));
    }

    fn loops(src: &str) -> Vec<u64> {
        let mut found: Vec<(u32, u64)> = with_program(src, true, |program, params| {
            read_sets(program, params).loops.values().copied().collect()
        });
        found.sort();
        found.into_iter().map(|(_, reads)| reads).collect()
    }

    #[test]
    fn a_loop_of_told_launches_and_orderings_may_be_skipped_whole() {
        // The inner loop reads `k`, `x`, `n` and `m`; the outer one `on` too.
        let r = loops(
            "pipeline P(k: &Kernel, x: &mut DeviceBuffer<f32>, n: usize, m: usize, on: bool) {
                stream s;
                stream t;
                for i in 0..n {
                    if on { t: wait_stream s; }
                    for j in 0..m {
                        s: launch k<<<1, 1>>>(&mut x, (i + j) as u32);
                    }
                }
            }",
        );
        assert_eq!(r, vec![0b1111, 0b11111]);
    }

    #[test]
    fn a_loop_with_what_cannot_be_skipped_is_walked() {
        for body in [
            "s: launch k<<<1, 1>>>(&mut x, COUNTER.load(Relaxed));",
            "s: host cb;",
            "s: call op(&mut x.slice_mut(0..N.load(Relaxed)));",
            "s: while flag { s: fill x = 1.0f32; }",
            "if dbg!(true) { s: record e; }",
        ] {
            let src = format!(
                "pipeline P(k: &Kernel, x: &mut DeviceBuffer<f32>, n: usize, cb: &Cb, op: &Op, flag: &mut DeviceFlag) {{
                    stream s;
                    event e;
                    for _ in 0..n {{ {body} }}
                }}"
            );
            assert_eq!(loops(&src), Vec::<u64>::new(), "{body}");
        }
    }

    #[test]
    fn temporaries_and_loop_variables_are_locals() {
        let r = reads(
            "pipeline P(k: &Kernel, n: usize) {
                stream s;
                temp t: f32[n];
                for i in 0..2 {
                    s: launch k<<<1, 1>>>(&mut t, t.len() as u32 + i);
                }
            }",
        );
        let launch = r.iter().flatten().copied().collect::<Vec<_>>();
        assert_eq!(
            launch,
            vec![0b1],
            "only the kernel: the temporary is a local"
        );
    }
}
