//! Programs with device blocks written out statement by statement, in the JSON form in which
//! block programs that failed elsewhere are reported:
//! `{"streams": S, "events": E, "blocks": B, "stmts": [...]}`, whose statements are
//!
//! - `["op", s]`: a launch on stream `s`, which adds its statement's number plus one to a
//!   total (atomically, so that unordered launches still sum up alike);
//! - `["rec", e, s]`, `["wait", s, e]`, `["ws", s, t]`: record event `e` on `s`, `s` waits for
//!   `e`, `s` waits for stream `t`;
//! - `["copy", s]`, `["fill", s]`: a device copy from a buffer no statement writes, or a fill
//!   with the statement's number plus one, into a one-word buffer of the statement's own;
//! - `["setflag", s, b, v]`, `["setctr", s, b, v]`: fills of block `b`'s flag / counter;
//! - `["init", s, b, K, v]`: a launch that sets block `b`'s counter to `K` and its flag to `v`;
//!   `["step", s, b]`: a launch that counts the counter down (not below 0) and sets the flag to
//!   whether it is still non-zero;
//! - `["while", s, b, LIMIT, [body]]` (`LIMIT` a number or `null`), `["if", s, b, [then],
//!   [else]]`: device blocks on stream `s` and block `b`'s flag;
//! - `["for", N, [body]]`: a host loop that issues the statements of `body` `N` times (they
//!   are statements of the program once each, as in a pipeline's `for`).
//!
//! An optional `"flags": [v, ...]` gives the blocks' flags their values before every run (else
//! they start at zero); [`Script::of_random`] writes a random block program in this form.
//!
//! Stream 0 is the origin; each body's streams fork from the block's stream and join it.
//! [`Script::run_on`] computes what a run leaves in memory, issuing the statements in order.
#![allow(dead_code)]

use serde_json::Value;
use streamgraph::__private::{arg_place, arg_value, arg_write, copy_with, fill_with, place};
use streamgraph::{
    AccessMode, CopySource, Device, DeviceBuffer, DeviceFlag, Dim3, Error, FillValue, Issuer,
    Kernel, LaunchConfig, MemoryRef, Module, Pipeline, Program, ProgramBuilder, StreamOptions,
};

/// One statement of a [`Script`]: its index in the program and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stmt {
    pub id: usize,
    pub kind: Kind,
}

/// What a statement of a [`Script`] does (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Op {
        stream: usize,
    },
    Record {
        event: usize,
        stream: usize,
    },
    Wait {
        stream: usize,
        event: usize,
    },
    WaitStream {
        stream: usize,
        other: usize,
    },
    Copy {
        stream: usize,
    },
    Fill {
        stream: usize,
    },
    SetFlag {
        stream: usize,
        block: usize,
        value: u32,
    },
    SetCounter {
        stream: usize,
        block: usize,
        value: u32,
    },
    Init {
        stream: usize,
        block: usize,
        count: u32,
        flag: u32,
    },
    Step {
        stream: usize,
        block: usize,
    },
    While {
        stream: usize,
        block: usize,
        limit: Option<u32>,
        body: Vec<Stmt>,
    },
    If {
        stream: usize,
        block: usize,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    /// A host loop: no statement of its own (its `Stmt::id` is that of its first statement).
    For {
        times: usize,
        body: Vec<Stmt>,
    },
}

impl Stmt {
    /// The number of statements it spans: itself and its bodies'.
    fn size(&self) -> usize {
        match &self.kind {
            Kind::While { body, .. } => 1 + body.iter().map(Stmt::size).sum::<usize>(),
            Kind::If {
                then, otherwise, ..
            } => 1 + then.iter().chain(otherwise).map(Stmt::size).sum::<usize>(),
            Kind::For { body, .. } => body.iter().map(Stmt::size).sum(),
            _ => 1,
        }
    }
}

/// A program of device blocks parsed from its JSON form, and its static program.
#[derive(Debug, Clone)]
pub struct Script {
    pub streams: usize,
    pub events: usize,
    pub blocks: usize,
    /// The blocks' flags before every run.
    pub flags: Vec<u32>,
    pub stmts: Vec<Stmt>,
    pub program: &'static Program,
}

/// The value the copies' source buffer holds.
pub const SOURCE: u32 = 0x5eed;

/// Iterations after which [`Script::run_on`] takes a `while` without a limit for one that
/// never ends.
const ENDLESS: u32 = 10_000;

impl Script {
    /// Parses `text` (panics, naming the statement, on what is not a script) and builds its
    /// program, named `name`.
    pub fn parse(name: &str, text: &str) -> Script {
        let value: Value = serde_json::from_str(text).expect("a script is JSON");
        let count = |key: &str| -> usize {
            value[key]
                .as_u64()
                .unwrap_or_else(|| panic!("a script has a number `{key}`")) as usize
        };
        let (streams, events, blocks) = (count("streams"), count("events"), count("blocks"));
        let flags = match value.get("flags").and_then(Value::as_array) {
            Some(values) => values
                .iter()
                .map(|v| v.as_u64().expect("flags are numbers") as u32)
                .collect(),
            None => vec![0; blocks],
        };
        assert_eq!(flags.len(), blocks, "a script has a flag value per block");
        let mut next = 0;
        let stmts = parse_list(&value["stmts"], &mut next);
        let mut b = ProgramBuilder::new(name);
        b.file(&format!("<script {name}>"));
        for s in 0..streams {
            b.stream(&format!("s{s}"));
        }
        for e in 0..events {
            b.event(&format!("e{e}"));
        }
        build(&mut b, &stmts);
        let script = Script {
            streams,
            events,
            blocks,
            flags,
            stmts,
            program: b.build(),
        };
        script.check();
        script
    }

    /// Checks that every index is in range.
    fn check(&self) {
        fn walk(s: &Script, stmts: &[Stmt]) {
            for stmt in stmts {
                let (streams, events, blocks): (&[usize], &[usize], &[usize]) = match &stmt.kind {
                    Kind::Op { stream } | Kind::Copy { stream } | Kind::Fill { stream } => {
                        (&[*stream], &[], &[])
                    }
                    Kind::Record { event, stream } | Kind::Wait { stream, event } => {
                        (&[*stream], &[*event], &[])
                    }
                    Kind::WaitStream { stream, other } => (&[*stream, *other], &[], &[]),
                    Kind::SetFlag { stream, block, .. }
                    | Kind::SetCounter { stream, block, .. }
                    | Kind::Init { stream, block, .. }
                    | Kind::Step { stream, block } => (&[*stream], &[], &[*block]),
                    Kind::While {
                        stream,
                        block,
                        body,
                        ..
                    } => {
                        walk(s, body);
                        (&[*stream], &[], &[*block])
                    }
                    Kind::If {
                        stream,
                        block,
                        then,
                        otherwise,
                    } => {
                        walk(s, then);
                        walk(s, otherwise);
                        (&[*stream], &[], &[*block])
                    }
                    Kind::For { body, .. } => {
                        walk(s, body);
                        (&[], &[], &[])
                    }
                };
                let fits = streams.iter().all(|&x| x < s.streams)
                    && events.iter().all(|&x| x < s.events)
                    && blocks.iter().all(|&x| x < s.blocks);
                assert!(fits, "statement {} names something undeclared", stmt.id);
            }
        }
        walk(self, &self.stmts);
    }

    /// The number of statements.
    pub fn len(&self) -> usize {
        self.program.statements.len()
    }

    /// The statement with id `id`.
    pub fn find(&self, id: usize) -> Option<&Stmt> {
        fn find_in(stmts: &[Stmt], id: usize) -> Option<&Stmt> {
            for s in stmts {
                if s.id == id && !matches!(s.kind, Kind::For { .. }) {
                    return Some(s);
                }
                let found = match &s.kind {
                    Kind::While { body, .. } | Kind::For { body, .. } => find_in(body, id),
                    Kind::If {
                        then, otherwise, ..
                    } => find_in(then, id).or_else(|| find_in(otherwise, id)),
                    _ => None,
                };
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        find_in(&self.stmts, id)
    }

    /// One run, in issue order, on `state`: what every execution that follows the program's
    /// happens-before order computes, for scripts whose flags and counters each statement
    /// writes in order (as in every script here).
    pub fn run_on(&self, state: &mut State) {
        run_list(&self.stmts, state);
    }
}

fn parse_list(value: &Value, next: &mut usize) -> Vec<Stmt> {
    value
        .as_array()
        .expect("statements are a list")
        .iter()
        .map(|v| parse_stmt(v, next))
        .collect()
}

fn parse_stmt(value: &Value, next: &mut usize) -> Stmt {
    let id = *next;
    let fields = value.as_array().expect("a statement is a list");
    let word = fields[0]
        .as_str()
        .expect("a statement starts with its name");
    if word == "for" {
        let times = fields[1].as_u64().expect("`for` needs a count") as usize;
        let body = parse_list(&fields[2], next);
        return Stmt {
            id,
            kind: Kind::For { times, body },
        };
    }
    *next += 1;
    let n = |i: usize| -> usize {
        fields
            .get(i)
            .and_then(Value::as_u64)
            .unwrap_or_else(|| panic!("statement {id} (`{word}`) needs a number at {i}"))
            as usize
    };
    let v = |i: usize| n(i) as u32;
    let kind = match word {
        "op" => Kind::Op { stream: n(1) },
        "rec" => Kind::Record {
            event: n(1),
            stream: n(2),
        },
        "wait" => Kind::Wait {
            stream: n(1),
            event: n(2),
        },
        "ws" => Kind::WaitStream {
            stream: n(1),
            other: n(2),
        },
        "copy" => Kind::Copy { stream: n(1) },
        "fill" => Kind::Fill { stream: n(1) },
        "setflag" => Kind::SetFlag {
            stream: n(1),
            block: n(2),
            value: v(3),
        },
        "setctr" => Kind::SetCounter {
            stream: n(1),
            block: n(2),
            value: v(3),
        },
        "init" => Kind::Init {
            stream: n(1),
            block: n(2),
            count: v(3),
            flag: v(4),
        },
        "step" => Kind::Step {
            stream: n(1),
            block: n(2),
        },
        "while" => Kind::While {
            stream: n(1),
            block: n(2),
            limit: fields[3].as_u64().map(|l| l as u32),
            body: parse_list(&fields[4], next),
        },
        "if" => {
            let (stream, block) = (n(1), n(2));
            let then = parse_list(&fields[3], next);
            let otherwise = parse_list(&fields[4], next);
            Kind::If {
                stream,
                block,
                then,
                otherwise,
            }
        }
        other => panic!("statement {id}: unknown statement `{other}`"),
    };
    Stmt { id, kind }
}

/// Adds `stmts` to `b` in order; each one's index is its id.
fn build(b: &mut ProgramBuilder, stmts: &[Stmt]) {
    use AccessMode::Write;
    for stmt in stmts {
        let id = match &stmt.kind {
            Kind::For { body, .. } => {
                build(b, body);
                continue;
            }
            Kind::Op { stream } => b.launch(*stream, "k.acc", &[("total", Write)]),
            Kind::Record { event, stream } => b.record(*stream, *event),
            Kind::Wait { stream, event } => b.wait(*stream, *event),
            Kind::WaitStream { stream, other } => b.wait_stream(*stream, *other),
            Kind::Copy { stream } => b.copy(*stream, &format!("out{}", stmt.id), "source"),
            Kind::Fill { stream } => b.fill(*stream, &format!("out{}", stmt.id)),
            Kind::SetFlag { stream, block, .. } => b.fill(*stream, &format!("flag{block}")),
            Kind::SetCounter { stream, block, .. } => b.fill(*stream, &format!("ctr{block}")),
            Kind::Init { stream, block, .. } => b.launch(
                *stream,
                "k.init",
                &[
                    (&format!("ctr{block}"), Write),
                    (&format!("flag{block}"), Write),
                ],
            ),
            Kind::Step { stream, block } => b.launch(
                *stream,
                "k.step",
                &[
                    (&format!("ctr{block}"), Write),
                    (&format!("flag{block}"), Write),
                ],
            ),
            Kind::While {
                stream,
                block,
                body,
                ..
            } => {
                let id = b.while_block(*stream, &format!("flag{block}"), stmt.id + stmt.size());
                build(b, body);
                id
            }
            Kind::If {
                stream,
                block,
                then,
                otherwise,
            } => {
                let mid = stmt.id + 1 + then.iter().map(Stmt::size).sum::<usize>();
                let id = b.if_block(*stream, &format!("flag{block}"), mid, stmt.id + stmt.size());
                build(b, then);
                build(b, otherwise);
                id
            }
        };
        assert_eq!(id, stmt.id, "statements are numbered in issue order");
    }
}

/// What a run leaves in memory: the launches' total, each statement's own word (fills and
/// copies write theirs), and the blocks' flags and counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub total: u32,
    pub outputs: Vec<u32>,
    pub flags: Vec<u32>,
    pub counters: Vec<u32>,
}

impl State {
    /// Memory before the first run: all zero.
    pub fn new(script: &Script) -> State {
        State {
            total: 0,
            outputs: vec![0; script.len()],
            flags: script.flags.clone(),
            counters: vec![0; script.blocks],
        }
    }
}

fn run_list(stmts: &[Stmt], state: &mut State) {
    for stmt in stmts {
        let value = stmt.id as u32 + 1;
        match &stmt.kind {
            Kind::For { times, body } => {
                for _ in 0..*times {
                    run_list(body, state);
                }
            }
            Kind::Op { .. } => state.total = state.total.wrapping_add(value),
            Kind::Record { .. } | Kind::Wait { .. } | Kind::WaitStream { .. } => {}
            Kind::Copy { .. } => state.outputs[stmt.id] = SOURCE,
            Kind::Fill { .. } => state.outputs[stmt.id] = value,
            Kind::SetFlag { block, value, .. } => state.flags[*block] = *value,
            Kind::SetCounter { block, value, .. } => state.counters[*block] = *value,
            Kind::Init {
                block, count, flag, ..
            } => {
                state.counters[*block] = *count;
                state.flags[*block] = *flag;
            }
            Kind::Step { block, .. } => {
                let c = state.counters[*block].saturating_sub(1);
                state.counters[*block] = c;
                state.flags[*block] = u32::from(c != 0);
            }
            Kind::While {
                block, limit, body, ..
            } => {
                let mut count = 0u32;
                while limit.is_none_or(|l| count < l) && state.flags[*block] != 0 {
                    assert!(
                        count < ENDLESS,
                        "statement {}: the loop does not end",
                        stmt.id
                    );
                    run_list(body, state);
                    count += 1;
                }
            }
            Kind::If {
                block,
                then,
                otherwise,
                ..
            } => {
                if state.flags[*block] != 0 {
                    run_list(then, state);
                } else {
                    run_list(otherwise, state);
                }
            }
        }
    }
}

/// CUDA C of the kernels a script launches.
pub const KERNELS: &str = r#"
extern "C" __global__ void acc(unsigned* total, unsigned v) { atomicAdd(total, v); }
extern "C" __global__ void init(unsigned* ctr, unsigned* flag, unsigned k, unsigned v) {
    *ctr = k;
    *flag = v;
}
extern "C" __global__ void step(unsigned* ctr, unsigned* flag) {
    unsigned c = *ctr;
    c = c == 0u ? 0u : c - 1u;
    *ctr = c;
    *flag = c != 0u ? 1u : 0u;
}
"#;

/// The kernels a script launches: compiled on a GPU, or plan-only.
pub struct ScriptKernels {
    pub acc: Kernel,
    pub init: Kernel,
    pub step: Kernel,
}

impl ScriptKernels {
    pub fn planning() -> ScriptKernels {
        ScriptKernels {
            acc: Kernel::for_planning("acc"),
            init: Kernel::for_planning("init"),
            step: Kernel::for_planning("step"),
        }
    }

    pub fn compiled(device: &Device) -> ScriptKernels {
        let module = Module::from_cuda_source(device, "script", KERNELS).unwrap();
        // SAFETY: `ScriptPipeline` launches them with the C signatures above: (unsigned*,
        // unsigned), (unsigned*, unsigned*, unsigned, unsigned), (unsigned*, unsigned*).
        unsafe {
            ScriptKernels {
                acc: module.kernel("acc").unwrap(),
                init: module.kernel("init").unwrap(),
                step: module.kernel("step").unwrap(),
            }
        }
    }
}

/// The memory a script runs on (see [`State`]).
pub struct ScriptMemory {
    pub total: DeviceBuffer<u32>,
    pub source: DeviceBuffer<u32>,
    pub outputs: Vec<DeviceBuffer<u32>>,
    pub flags: Vec<DeviceFlag>,
    pub counters: Vec<DeviceBuffer<u32>>,
}

impl ScriptMemory {
    /// Memory that can only be planned.
    pub fn planning(script: &Script) -> ScriptMemory {
        let word = || DeviceBuffer::for_planning(1).unwrap();
        ScriptMemory {
            total: word(),
            source: word(),
            outputs: (0..script.len()).map(|_| word()).collect(),
            flags: (0..script.blocks)
                .map(|_| DeviceFlag::for_planning().unwrap())
                .collect(),
            counters: (0..script.blocks).map(|_| word()).collect(),
        }
    }

    /// Memory on `device`, all zero but the copies' source.
    pub fn on(device: &Device, script: &Script) -> ScriptMemory {
        let word = || DeviceBuffer::zeros(device, 1).unwrap();
        ScriptMemory {
            total: word(),
            source: DeviceBuffer::from_host(device, &[SOURCE]).unwrap(),
            outputs: (0..script.len()).map(|_| word()).collect(),
            flags: script
                .flags
                .iter()
                .map(|&v| DeviceFlag::new(device, v).unwrap())
                .collect(),
            counters: (0..script.blocks).map(|_| word()).collect(),
        }
    }

    /// What the memory holds now.
    pub fn read(&mut self) -> State {
        self.parts().read()
    }

    /// The memory as a pipeline borrows it: what it writes, exclusively.
    pub fn parts(&mut self) -> ScriptParts<'_> {
        ScriptParts {
            total: &mut self.total,
            source: &self.source,
            outputs: &mut self.outputs,
            flags: &mut self.flags,
            counters: &mut self.counters,
        }
    }
}

/// [`ScriptMemory`] borrowed by a pipeline: what it writes borrowed `&mut`.
pub struct ScriptParts<'a> {
    pub total: &'a mut DeviceBuffer<u32>,
    pub source: &'a DeviceBuffer<u32>,
    pub outputs: &'a mut [DeviceBuffer<u32>],
    pub flags: &'a mut [DeviceFlag],
    pub counters: &'a mut [DeviceBuffer<u32>],
}

impl ScriptParts<'_> {
    /// What the memory holds now.
    pub fn read(&self) -> State {
        let one = |b: &DeviceBuffer<u32>| b.to_vec().unwrap()[0];
        State {
            total: one(self.total),
            outputs: self.outputs.iter().map(one).collect(),
            flags: self.flags.iter().map(|f| f.get().unwrap()).collect(),
            counters: self.counters.iter().map(one).collect(),
        }
    }
}

/// A script as a pipeline over `memory`.
pub struct ScriptPipeline<'a> {
    pub script: &'a Script,
    pub memory: ScriptParts<'a>,
    pub kernels: &'a ScriptKernels,
}

/// A copy's whole source buffer.
fn whole(src: &DeviceBuffer<u32>, _: std::marker::PhantomData<u32>) -> MemoryRef<'_> {
    src.copy_source()
}

fn one_thread() -> LaunchConfig {
    LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(1),
        shared_mem_bytes: 0,
    }
}

impl ScriptPipeline<'_> {
    fn issue_list<I: Issuer + ?Sized>(&self, issuer: &mut I, stmts: &[Stmt]) -> Result<(), Error> {
        let m = &self.memory;
        let k = self.kernels;
        for stmt in stmts {
            if let Kind::For { times, body } = &stmt.kind {
                for _ in 0..*times {
                    self.issue_list(issuer, body)?;
                }
                continue;
            }
            let st = &self.script.program.statements[stmt.id];
            let value = stmt.id as u32 + 1;
            match &stmt.kind {
                Kind::Op { .. } => issuer.launch(
                    st,
                    &k.acc,
                    one_thread(),
                    &[arg_write(&m.total), arg_value(&value)],
                )?,
                Kind::Record { .. } => issuer.record(st)?,
                Kind::Wait { .. } => issuer.wait(st)?,
                Kind::WaitStream { .. } => issuer.wait_stream(st)?,
                Kind::Copy { .. } => copy_with(
                    issuer,
                    st,
                    place(&m.outputs).index(stmt.id),
                    m.source,
                    whole,
                )?,
                Kind::Fill { .. } => fill_with(
                    issuer,
                    st,
                    place(&m.outputs).index(stmt.id),
                    value,
                    u32::pattern,
                )?,
                Kind::SetFlag { block, value, .. } => fill_with(
                    issuer,
                    st,
                    place(&m.flags).index(*block),
                    *value,
                    u32::pattern,
                )?,
                Kind::SetCounter { block, value, .. } => fill_with(
                    issuer,
                    st,
                    place(&m.counters).index(*block),
                    *value,
                    u32::pattern,
                )?,
                Kind::Init {
                    block, count, flag, ..
                } => issuer.launch(
                    st,
                    &k.init,
                    one_thread(),
                    &[
                        arg_place(place(&m.counters).index(*block))?,
                        arg_place(place(&m.flags).index(*block))?,
                        arg_value(count),
                        arg_value(flag),
                    ],
                )?,
                Kind::Step { block, .. } => issuer.launch(
                    st,
                    &k.step,
                    one_thread(),
                    &[
                        arg_place(place(&m.counters).index(*block))?,
                        arg_place(place(&m.flags).index(*block))?,
                    ],
                )?,
                Kind::While {
                    block, limit, body, ..
                } => issuer.while_loop(st, &m.flags[*block], *limit, &mut |inner| {
                    self.issue_list(inner, body)
                })?,
                Kind::If {
                    block,
                    then,
                    otherwise,
                    ..
                } => issuer.if_else(
                    st,
                    &m.flags[*block],
                    &mut |inner| self.issue_list(inner, then),
                    &mut |inner| self.issue_list(inner, otherwise),
                )?,
                Kind::For { .. } => unreachable!("host loops are issued above"),
            }
        }
        Ok(())
    }
}

impl Pipeline for ScriptPipeline<'_> {
    fn program(&self) -> &'static Program {
        self.script.program
    }
    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![StreamOptions::default(); self.script.streams])
    }
    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        self.issue_list(issuer, &self.script.stmts)
    }
}

impl Script {
    /// `r` written as a script (`Script::parse` reads it back): its statements in source
    /// order, host `for`s kept (a host `if` is a `for` of once or never), every launch, fill, copy and
    /// call an `op`, `fill` or `copy` of the script's own, and the flags' values. What a
    /// failing random block program is reported as, and what it is reduced from.
    pub fn of_random(r: &streamgraph::testing::RandomProgram) -> String {
        use streamgraph::testing::Block;
        use streamgraph::StatementKind as K;
        fn flag(s: &streamgraph::Statement) -> usize {
            s.accesses[0].buffer[1..]
                .parse()
                .expect("a block reads flag `fN`")
        }
        fn list(r: &streamgraph::testing::RandomProgram, blocks: &[Block]) -> String {
            let items: Vec<String> = blocks.iter().filter_map(|b| one(r, b)).collect();
            format!("[{}]", items.join(","))
        }
        fn one(r: &streamgraph::testing::RandomProgram, block: &Block) -> Option<String> {
            let st = |i: usize| &r.program.statements[i];
            Some(match block {
                Block::Run(range) => {
                    let items: Vec<String> = range
                        .clone()
                        .filter_map(|i| {
                            let s = st(i);
                            Some(match s.kind {
                                K::Launch { .. } | K::Call { .. } => {
                                    format!(r#"["op",{}]"#, s.stream)
                                }
                                K::Fill => format!(r#"["fill",{}]"#, s.stream),
                                K::Copy => format!(r#"["copy",{}]"#, s.stream),
                                K::Record { event } => format!(r#"["rec",{event},{}]"#, s.stream),
                                K::Wait { event } => format!(r#"["wait",{},{event}]"#, s.stream),
                                K::WaitStream { stream } => {
                                    format!(r#"["ws",{},{stream}]"#, s.stream)
                                }
                                _ => return None,
                            })
                        })
                        .collect();
                    if items.is_empty() {
                        return None;
                    }
                    items.join(",")
                }
                Block::For { times, body } => format!(r#"["for",{times},{}]"#, list(r, body)),
                // A host `if` not taken: statements of the program never issued.
                Block::If { taken, body } => {
                    format!(r#"["for",{},{}]"#, u8::from(*taken), list(r, body))
                }
                // Scripts have no signalled loops.
                Block::DeviceWhile {
                    signalled: true, ..
                } => return None,
                Block::DeviceWhile {
                    header,
                    limit,
                    body,
                    ..
                } => format!(
                    r#"["while",{},{},{limit},{}]"#,
                    st(*header).stream,
                    flag(st(*header)),
                    list(r, body)
                ),
                Block::DeviceIf {
                    header,
                    then,
                    otherwise,
                    ..
                } => format!(
                    r#"["if",{},{},{},{}]"#,
                    st(*header).stream,
                    flag(st(*header)),
                    list(r, then),
                    list(r, otherwise)
                ),
                Block::DeviceSwitch { .. } => {
                    panic!("scripts hold no device `switch`; see tests/capture_random_switches.rs")
                }
            })
            .filter(|s| !s.is_empty())
        }
        let flags: Vec<String> = r.flags().iter().map(u32::to_string).collect();
        format!(
            r#"{{"streams":{},"events":{},"blocks":{},"flags":[{}],"stmts":{}}}"#,
            r.program.streams.len(),
            r.program.events.len().max(1),
            r.flags().len(),
            flags.join(","),
            list(r, &r.blocks)
        )
    }
}
