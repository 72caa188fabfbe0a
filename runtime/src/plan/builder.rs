//! [`ProgramBuilder`]: a [`Program`] written by hand, for tests and tools.

use crate::program::{
    AccessMode, Collective, EventDecl, Location, Program, Statement, StatementKind, StaticAccess,
    StreamDecl, SwitchArm, TempDecl,
};

/// Builds a `&'static` [`Program`] without the `pipeline!` macro: for tests of executors
/// and of the plan, and for tools that generate programs.
///
/// Each statement method returns the statement's index in [`Program::statements`]. Indices
/// are not checked, so a builder can also describe malformed programs (issuers must reject
/// them with an error). Statement `i` is placed at line `i + 1` of the builder's file, so
/// messages name distinct locations.
///
/// [`build`](Self::build) leaks the program (a few hundred bytes per statement), as the
/// macro's programs are `'static` too; build a bounded number of them.
///
/// ```
/// use streamgraph::ProgramBuilder;
/// use streamgraph::AccessMode::{Read, Write};
///
/// let mut b = ProgramBuilder::new("Diamond");
/// let main = b.stream("main");
/// let side = b.stream("side");
/// let ready = b.event("ready");
/// b.launch(main, "k.scale", &[("x", Write)]);
/// b.record(main, ready);
/// b.wait(side, ready);
/// b.launch(side, "k.axpy", &[("y", Write), ("x", Read)]);
/// b.wait_stream(main, side);
/// let program = b.build();
/// assert_eq!(program.statements[3].text, "launch k.axpy(&mut y, &x)");
/// ```
#[derive(Debug, Clone)]
pub struct ProgramBuilder {
    name: String,
    file: String,
    streams: Vec<String>,
    events: Vec<String>,
    /// Temporaries: name and element type.
    temps: Vec<(String, String)>,
    statements: Vec<Pending>,
}

#[derive(Debug, Clone)]
struct Pending {
    stream: usize,
    kind: PendingKind,
    accesses: Vec<(String, AccessMode)>,
}

#[derive(Debug, Clone)]
enum PendingKind {
    Launch(String),
    Call(String),
    Copy,
    Fill,
    Host,
    Record(usize),
    Wait(usize),
    WaitStream(usize),
    Alloc(usize),
    Free(usize),
    While(String, usize, bool),
    If(String, usize, usize),
    Switch(String, Vec<SwitchArm>, usize),
    /// A collective's participant: the collective, the first participant's id, the count,
    /// and this participant's buffer.
    Collective(Collective, usize, usize, String),
}

impl ProgramBuilder {
    /// An empty program named `name`, placed in the file `<name>`.
    pub fn new(name: &str) -> ProgramBuilder {
        ProgramBuilder {
            name: name.to_owned(),
            file: format!("<{name}>"),
            streams: Vec::new(),
            events: Vec::new(),
            temps: Vec::new(),
            statements: Vec::new(),
        }
    }

    /// Sets the file name that statement locations report.
    pub fn file(&mut self, file: &str) -> &mut Self {
        file.clone_into(&mut self.file);
        self
    }

    /// Declares a stream and returns its index; the first declared is the origin.
    pub fn stream(&mut self, name: &str) -> usize {
        self.streams.push(name.to_owned());
        self.streams.len() - 1
    }

    /// Declares an event and returns its index.
    pub fn event(&mut self, name: &str) -> usize {
        self.events.push(name.to_owned());
        self.events.len() - 1
    }

    /// Declares a temporary `temp NAME: ELEM[…];` and returns its index. It is a buffer named
    /// `name` for the statements' accesses; [`alloc`](Self::alloc) and [`free`](Self::free)
    /// place its allocation and release.
    pub fn temp(&mut self, name: &str, elem: &str) -> usize {
        self.temps.push((name.to_owned(), elem.to_owned()));
        self.temps.len() - 1
    }

    /// The allocation of temporary `temp` on `stream` (a write of all of it).
    pub fn alloc(&mut self, stream: usize, temp: usize) -> usize {
        let name = self.temp_name(temp);
        self.push(
            stream,
            PendingKind::Alloc(temp),
            vec![(name, AccessMode::Write)],
        )
    }

    /// The release of temporary `temp` on `stream` (a write of all of it).
    pub fn free(&mut self, stream: usize, temp: usize) -> usize {
        let name = self.temp_name(temp);
        self.push(
            stream,
            PendingKind::Free(temp),
            vec![(name, AccessMode::Write)],
        )
    }

    fn temp_name(&self, temp: usize) -> String {
        self.temps
            .get(temp)
            .map_or_else(|| format!("?temp{temp}"), |(name, _)| name.clone())
    }

    /// `launch KERNEL(ARGS)` on `stream`, touching the named buffers.
    pub fn launch(&mut self, stream: usize, kernel: &str, args: &[(&str, AccessMode)]) -> usize {
        let accesses = args.iter().map(|&(b, m)| (b.to_owned(), m)).collect();
        self.push(stream, PendingKind::Launch(kernel.to_owned()), accesses)
    }

    /// `call OP(OPERANDS)` on `stream`, reading and writing the named buffers.
    pub fn call(&mut self, stream: usize, op: &str, operands: &[(&str, AccessMode)]) -> usize {
        let accesses = operands.iter().map(|&(b, m)| (b.to_owned(), m)).collect();
        self.push(stream, PendingKind::Call(op.to_owned()), accesses)
    }

    /// `copy DST <- SRC` on `stream`.
    pub fn copy(&mut self, stream: usize, dst: &str, src: &str) -> usize {
        let accesses = vec![
            (dst.to_owned(), AccessMode::Write),
            (src.to_owned(), AccessMode::Read),
        ];
        self.push(stream, PendingKind::Copy, accesses)
    }

    /// `fill BUF` on `stream`.
    pub fn fill(&mut self, stream: usize, buffer: &str) -> usize {
        self.push(
            stream,
            PendingKind::Fill,
            vec![(buffer.to_owned(), AccessMode::Write)],
        )
    }

    /// `host F` on `stream`.
    pub fn host(&mut self, stream: usize) -> usize {
        self.push(stream, PendingKind::Host, Vec::new())
    }

    /// `record EVENT` on `stream`.
    pub fn record(&mut self, stream: usize, event: usize) -> usize {
        self.push(stream, PendingKind::Record(event), Vec::new())
    }

    /// `wait EVENT` on `stream`.
    pub fn wait(&mut self, stream: usize, event: usize) -> usize {
        self.push(stream, PendingKind::Wait(event), Vec::new())
    }

    /// `wait_stream OTHER` on `stream`.
    pub fn wait_stream(&mut self, stream: usize, other: usize) -> usize {
        self.push(stream, PendingKind::WaitStream(other), Vec::new())
    }

    /// `while FLAG { … }` on `stream`, a device loop whose body is the statements with ids
    /// `this + 1 .. end` (add them next; `end` is one past the body's last). `flag` names the
    /// flag buffer (read by the block).
    pub fn while_block(&mut self, stream: usize, flag: &str, end: usize) -> usize {
        self.push(
            stream,
            PendingKind::While(flag.to_owned(), end, false),
            vec![(flag.to_owned(), AccessMode::Read)],
        )
    }

    /// `while FLAG, signalled { … }` on `stream`, a signalled device loop (the kernels of
    /// its body set its condition; see [`StatementKind::While`]): the body is the statements
    /// with ids `this + 1 .. end`.
    pub fn signalled_while_block(&mut self, stream: usize, flag: &str, end: usize) -> usize {
        self.push(
            stream,
            PendingKind::While(flag.to_owned(), end, true),
            vec![(flag.to_owned(), AccessMode::Read)],
        )
    }

    /// `if FLAG { … } else { … }` on `stream`, a device branch: `then` is the statements with
    /// ids `this + 1 .. otherwise`, `else` those of `otherwise .. end` (empty when equal).
    pub fn if_block(&mut self, stream: usize, flag: &str, otherwise: usize, end: usize) -> usize {
        self.push(
            stream,
            PendingKind::If(flag.to_owned(), otherwise, end),
            vec![(flag.to_owned(), AccessMode::Read)],
        )
    }

    /// `switch FLAG { … }` on `stream`, a device switch: `arms` are `(value, start)` in source
    /// order (`None` for `_`, last), arm `k`'s body the statements with ids `start_k ..
    /// start_{k+1}` (the last arm's `.. end`).
    pub fn switch_block(
        &mut self,
        stream: usize,
        flag: &str,
        arms: &[(Option<u32>, usize)],
        end: usize,
    ) -> usize {
        let arms = arms
            .iter()
            .map(|&(value, start)| SwitchArm { value, start })
            .collect();
        self.push(
            stream,
            PendingKind::Switch(flag.to_owned(), arms, end),
            vec![(flag.to_owned(), AccessMode::Read)],
        )
    }

    /// A collective on `parts` (`(stream, buffer)`, in rank order; in place): one statement
    /// per participant, consecutive; returns the first one's index. Each participant's
    /// statement reads and writes its own buffer.
    pub fn collective(&mut self, op: Collective, parts: &[(usize, &str)]) -> usize {
        let first = self.statements.len();
        for &(stream, buffer) in parts {
            self.push(
                stream,
                PendingKind::Collective(op, first, parts.len(), buffer.to_owned()),
                vec![(buffer.to_owned(), AccessMode::Write)],
            );
        }
        first
    }

    /// The number of statements so far.
    pub fn len(&self) -> usize {
        self.statements.len()
    }

    /// Whether no statement was added yet.
    pub fn is_empty(&self) -> bool {
        self.statements.is_empty()
    }

    /// The finished program, leaked to `'static`.
    pub fn build(&self) -> &'static Program {
        let file = leak(&self.file);
        let at = |line: usize| Location {
            file,
            line: line as u32,
            column: 5,
        };
        let streams: Vec<StreamDecl> = self
            .streams
            .iter()
            .map(|name| StreamDecl {
                name: leak(name),
                location: at(0),
            })
            .collect();
        let events: Vec<EventDecl> = self
            .events
            .iter()
            .map(|name| EventDecl {
                name: leak(name),
                location: at(0),
            })
            .collect();
        let statements: Vec<Statement> = self
            .statements
            .iter()
            .enumerate()
            .map(|(id, p)| Statement {
                id,
                stream: p.stream,
                kind: match &p.kind {
                    PendingKind::Launch(kernel) => StatementKind::Launch {
                        kernel: leak(kernel),
                    },
                    PendingKind::Call(op) => StatementKind::Call { op: leak(op) },
                    PendingKind::Copy => StatementKind::Copy,
                    PendingKind::Fill => StatementKind::Fill,
                    PendingKind::Host => StatementKind::Host,
                    &PendingKind::Record(event) => StatementKind::Record { event },
                    &PendingKind::Wait(event) => StatementKind::Wait { event },
                    &PendingKind::WaitStream(stream) => StatementKind::WaitStream { stream },
                    &PendingKind::Alloc(temp) => StatementKind::Alloc { temp },
                    &PendingKind::Free(temp) => StatementKind::Free { temp },
                    &PendingKind::While(_, end, signalled) => {
                        StatementKind::While { end, signalled }
                    }
                    &PendingKind::If(_, otherwise, end) => StatementKind::If { otherwise, end },
                    PendingKind::Switch(_, arms, end) => StatementKind::Switch {
                        arms: Box::leak(arms.clone().into_boxed_slice()),
                        end: *end,
                    },
                    &PendingKind::Collective(op, first, count, _) => {
                        StatementKind::Collective { op, first, count }
                    }
                },
                text: leak(&self.text(id, p)),
                accesses: Box::leak(
                    p.accesses
                        .iter()
                        .map(|(b, mode)| StaticAccess {
                            buffer: leak(b),
                            mode: *mode,
                            whole: true,
                        })
                        .collect(),
                ),
                location: at(id + 1),
            })
            .collect();
        Box::leak(Box::new(Program {
            name: leak(&self.name),
            streams: Box::leak(streams.into_boxed_slice()),
            events: Box::leak(events.into_boxed_slice()),
            statements: Box::leak(statements.into_boxed_slice()),
            temps: Box::leak(
                self.temps
                    .iter()
                    .map(|(name, elem)| TempDecl {
                        name: leak(name),
                        elem: leak(elem),
                        location: at(0),
                    })
                    .collect(),
            ),
            location: at(0),
        }))
    }

    fn push(
        &mut self,
        stream: usize,
        kind: PendingKind,
        accesses: Vec<(String, AccessMode)>,
    ) -> usize {
        self.statements.push(Pending {
            stream,
            kind,
            accesses,
        });
        self.statements.len() - 1
    }

    fn text(&self, id: usize, p: &Pending) -> String {
        let name =
            |names: &[String], i: usize| names.get(i).cloned().unwrap_or_else(|| format!("?{i}"));
        let arg = |(b, m): &(String, AccessMode)| match m {
            AccessMode::Read => format!("&{b}"),
            AccessMode::Write => format!("&mut {b}"),
        };
        match &p.kind {
            PendingKind::Launch(kernel) => {
                let args: Vec<String> = p.accesses.iter().map(arg).collect();
                format!("launch {kernel}({})", args.join(", "))
            }
            PendingKind::Call(op) => {
                let args: Vec<String> = p.accesses.iter().map(arg).collect();
                format!("call {op}({})", args.join(", "))
            }
            PendingKind::Copy => format!("copy {} <- {}", p.accesses[0].0, p.accesses[1].0),
            PendingKind::Fill => format!("fill {} = 0", p.accesses[0].0),
            PendingKind::Host => format!("host f{id}"),
            &PendingKind::Record(e) => format!("record {}", name(&self.events, e)),
            &PendingKind::Wait(e) => format!("wait {}", name(&self.events, e)),
            &PendingKind::WaitStream(s) => format!("wait_stream {}", name(&self.streams, s)),
            &PendingKind::Alloc(t) => format!("alloc {}", self.temp_name(t)),
            &PendingKind::Free(t) => format!("free {}", self.temp_name(t)),
            PendingKind::While(flag, _, false) => format!("while {flag}"),
            PendingKind::While(flag, _, true) => format!("while {flag}, signalled"),
            PendingKind::If(flag, _, _) => format!("if {flag}"),
            PendingKind::Switch(flag, _, _) => format!("switch {flag}"),
            PendingKind::Collective(op, _, _, buffer) => {
                format!("{}: &mut {buffer}", op.keyword())
            }
        }
    }
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}
