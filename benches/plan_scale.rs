//! How planning and the race check scale: plans of 10^4, 10^5 and 10^6 issued statements in
//! several shapes, built with [`ProgramBuilder`] and [`Planner`] on plan-only memory (no GPU).
//!
//! ```text
//! cargo bench --bench plan_scale [-- --sizes 10000,100000]
//! ```
//!
//! Each shape is a short loop body issued over and over until the statement count is reached
//! (as a pipeline in a loop is). Every (shape, size) runs in a fresh child process of this
//! program, so that its peak resident memory (`VmHWM`) is its own. Prints one table: plan
//! milliseconds (issuing into the planner and finishing the plan, vector clocks included),
//! race-check milliseconds, peak RSS, and the goals: 10^5 statements under 1 s and 100 MB,
//! 10^6 under 10 s.

use std::process::{Command, ExitCode};
use std::time::Instant;

use streamgraph::__private::{arg_place, arg_read, place};
use streamgraph::AccessMode::{self, Read, Write};
use streamgraph::{
    DeviceBuffer, Dim3, Error, Issuer, Kernel, KernelArg, LaunchConfig, Planner, Program,
    ProgramBuilder, Statement, StatementKind,
};

/// The statement counts measured unless `--sizes` says otherwise.
const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];

/// Bytes of each buffer a launch touches.
const BYTES: usize = 64;

/// The memory a launch argument names.
#[derive(Debug, Clone, Copy)]
enum Buf {
    /// The buffer of stream `s` (one per stream).
    Own(usize),
    /// One buffer for the whole program.
    Shared,
    /// A range no other operation touches.
    Fresh,
}

/// A loop body: the program and each launch statement's arguments (by statement id).
struct Body {
    program: &'static Program,
    args: Vec<Vec<(Buf, AccessMode)>>,
}

/// Builds bodies with their arguments.
struct Writer {
    b: ProgramBuilder,
    args: Vec<Vec<(Buf, AccessMode)>>,
}

impl Writer {
    fn new(name: &str, streams: usize, events: usize) -> Writer {
        let mut b = ProgramBuilder::new(name);
        for s in 0..streams {
            b.stream(&format!("s{s}"));
        }
        for e in 0..events {
            b.event(&format!("e{e}"));
        }
        Writer {
            b,
            args: Vec::new(),
        }
    }

    fn launch(&mut self, stream: usize, args: &[(Buf, AccessMode)]) {
        let names: Vec<(String, AccessMode)> = args
            .iter()
            .map(|&(buf, mode)| {
                let name = match buf {
                    Buf::Own(s) => format!("b{s}"),
                    Buf::Shared => "x".to_owned(),
                    Buf::Fresh => "fresh".to_owned(),
                };
                (name, mode)
            })
            .collect();
        let named: Vec<(&str, AccessMode)> = names.iter().map(|(n, m)| (n.as_str(), *m)).collect();
        self.b.launch(stream, "k", &named);
        self.args.push(args.to_vec());
    }

    fn record(&mut self, stream: usize, event: usize) {
        self.b.record(stream, event);
        self.args.push(Vec::new());
    }

    fn wait(&mut self, stream: usize, event: usize) {
        self.b.wait(stream, event);
        self.args.push(Vec::new());
    }

    fn wait_stream(&mut self, stream: usize, other: usize) {
        self.b.wait_stream(stream, other);
        self.args.push(Vec::new());
    }

    fn finish(self) -> Body {
        Body {
            program: self.b.build(),
            args: self.args,
        }
    }
}

/// A shape: its name and the builder of its loop body.
type Shape = (&'static str, fn() -> Body);

/// The shapes, in table order.
const SHAPES: [Shape; 5] = [
    ("chain", chain),
    ("ring8", ring8),
    ("fan64", fan64),
    ("one-buffer", one_buffer),
    ("disjoint", disjoint),
];

/// One stream, every launch writing the same buffer.
fn chain() -> Body {
    let mut w = Writer::new("Chain", 1, 0);
    w.launch(0, &[(Buf::Own(0), Write)]);
    w.finish()
}

/// Eight streams in a ring: three launches on a stream (writing its buffer, reading the
/// previous stream's), then it records its event and the next stream waits for it.
fn ring8() -> Body {
    let mut w = Writer::new("Ring8", 8, 8);
    for s in 0..8 {
        for _ in 0..3 {
            w.launch(s, &[(Buf::Own(s), Write), (Buf::Own((s + 7) % 8), Read)]);
        }
        w.record(s, s);
        w.wait((s + 1) % 8, s);
    }
    w.finish()
}

/// Sixty-four streams in a ring of `wait_stream`s: a launch on a stream (writing its buffer,
/// reading the previous stream's), then the next stream waits for it.
fn fan64() -> Body {
    let mut w = Writer::new("Fan64", 64, 0);
    for s in 0..64 {
        w.launch(s, &[(Buf::Own(s), Write), (Buf::Own((s + 63) % 64), Read)]);
        w.wait_stream((s + 1) % 64, s);
    }
    w.finish()
}

/// Eight streams taking turns on one buffer through one event (wait, launch, record); every
/// third launch writes, the others read.
fn one_buffer() -> Body {
    let mut w = Writer::new("OneBuffer", 8, 1);
    for i in 0..24 {
        let s = i % 8;
        w.wait(s, 0);
        w.launch(s, &[(Buf::Shared, if i % 3 == 0 { Write } else { Read })]);
        w.record(s, 0);
    }
    w.finish()
}

/// Eight streams without synchronisation, every launch writing memory of its own.
fn disjoint() -> Body {
    let mut w = Writer::new("Disjoint", 8, 0);
    for s in 0..8 {
        w.launch(s, &[(Buf::Fresh, Write)]);
    }
    w.finish()
}

/// The plan-only memory behind the arguments.
struct Memory {
    own: Vec<DeviceBuffer<u8>>,
    shared: DeviceBuffer<u8>,
    fresh: DeviceBuffer<u8>,
    next_fresh: usize,
    kernel: Kernel,
}

impl Memory {
    fn new(streams: usize, statements: usize) -> Result<Memory, Error> {
        Ok(Memory {
            own: (0..streams)
                .map(|_| DeviceBuffer::for_planning(BYTES))
                .collect::<Result<_, _>>()?,
            shared: DeviceBuffer::for_planning(BYTES)?,
            fresh: DeviceBuffer::for_planning(statements.max(1) * BYTES)?,
            next_fresh: 0,
            kernel: Kernel::for_planning("k"),
        })
    }
}

fn config() -> LaunchConfig {
    LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(32),
        shared_mem_bytes: 0,
    }
}

/// Issues `stmt` into `planner`.
fn issue(
    planner: &mut Planner,
    body: &Body,
    stmt: &'static Statement,
    memory: &mut Memory,
) -> Result<(), Error> {
    match stmt.kind {
        StatementKind::Launch { .. } => {
            // Written through exclusive borrows of the memory, as a pipeline's `&mut` does.
            let Memory {
                own,
                shared,
                fresh,
                next_fresh,
                kernel,
            } = memory;
            let (own, shared, fresh) = (&mut *own, &mut *shared, &mut *fresh);
            let mut parts = Vec::new();
            for &(buf, _) in &body.args[stmt.id] {
                if matches!(buf, Buf::Fresh) {
                    let at = *next_fresh * BYTES;
                    *next_fresh += 1;
                    parts.push((at, fresh.try_slice(at..at + BYTES)?));
                }
            }
            let mut parts = parts.iter();
            let mut args: Vec<KernelArg<'_>> = Vec::new();
            for &(buf, mode) in &body.args[stmt.id] {
                let arg = match (buf, mode) {
                    (Buf::Own(s), Read) => arg_read(&own[s]),
                    (Buf::Own(s), Write) => arg_place(place(&own).index(s))?,
                    (Buf::Shared, Read) => arg_read(&*shared),
                    (Buf::Shared, Write) => arg_place(place(&shared))?,
                    (Buf::Fresh, _) => {
                        let Some((at, view)) = parts.next() else {
                            unreachable!("one part per fresh argument")
                        };
                        match mode {
                            Read => arg_read(view),
                            Write => arg_place(place(&fresh).slice(*at..at + BYTES))?,
                        }
                    }
                };
                args.push(arg);
            }
            planner.launch(stmt, kernel, config(), &args)
        }
        StatementKind::Record { .. } => planner.record(stmt),
        StatementKind::Wait { .. } => planner.wait(stmt),
        StatementKind::WaitStream { .. } => planner.wait_stream(stmt),
        _ => Err(Error::InvalidArgument(format!(
            "the benchmark issues launches, records and waits only, not `{}`",
            stmt.text
        ))),
    }
}

/// One measurement, as the child prints it.
struct Row {
    shape: String,
    statements: usize,
    ops: usize,
    edges: usize,
    plan_ms: f64,
    race_ms: f64,
    races: usize,
    peak_mb: f64,
}

impl Row {
    fn to_line(&self) -> String {
        format!(
            "row\t{}\t{}\t{}\t{}\t{:.1}\t{:.1}\t{}\t{:.1}",
            self.shape,
            self.statements,
            self.ops,
            self.edges,
            self.plan_ms,
            self.race_ms,
            self.races,
            self.peak_mb
        )
    }

    fn parse(line: &str) -> Option<Row> {
        let f: Vec<&str> = line.strip_prefix("row\t")?.split('\t').collect();
        if f.len() != 8 {
            return None;
        }
        Some(Row {
            shape: f[0].to_owned(),
            statements: f[1].parse().ok()?,
            ops: f[2].parse().ok()?,
            edges: f[3].parse().ok()?,
            plan_ms: f[4].parse().ok()?,
            race_ms: f[5].parse().ok()?,
            races: f[6].parse().ok()?,
            peak_mb: f[7].parse().ok()?,
        })
    }
}

/// The peak resident set of this process in MB (`VmHWM`), or `None` where /proc lacks it.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The child: plans `statements` statements of `shape` and prints its row.
fn measure(shape: &str, statements: usize) -> Result<Row, String> {
    let build = SHAPES
        .iter()
        .find(|(name, _)| *name == shape)
        .map(|&(_, build)| build)
        .ok_or_else(|| format!("unknown shape `{shape}`"))?;
    let body = build();
    let mut memory =
        Memory::new(body.program.streams.len(), statements).map_err(|e| e.to_string())?;

    let start = Instant::now();
    let mut planner = Planner::new(body.program);
    for stmt in body.program.statements.iter().cycle().take(statements) {
        issue(&mut planner, &body, stmt, &mut memory).map_err(|e| e.to_string())?;
    }
    let plan = planner.finish();
    let plan_ms = start.elapsed().as_secs_f64() * 1e3;

    let start = Instant::now();
    let races = match plan.check_races() {
        Ok(()) => 0,
        Err(Error::Race(races)) => races.len(),
        Err(e) => return Err(e.to_string()),
    };
    let race_ms = start.elapsed().as_secs_f64() * 1e3;

    Ok(Row {
        shape: shape.to_owned(),
        statements,
        ops: plan.len(),
        edges: (0..plan.len()).map(|op| plan.successors(op).len()).sum(),
        plan_ms,
        race_ms,
        races,
        peak_mb: peak_rss_mb().unwrap_or(f64::NAN),
    })
}

/// The goals for a statement count: time in ms and peak MB, where there are any.
fn goal(statements: usize) -> Option<(f64, Option<f64>)> {
    match statements {
        100_000 => Some((1_000.0, Some(100.0))),
        1_000_000 => Some((10_000.0, None)),
        _ => None,
    }
}

fn verdict(row: &Row) -> String {
    let Some((ms, mb)) = goal(row.statements) else {
        return "-".to_owned();
    };
    let time_ok = row.plan_ms + row.race_ms < ms;
    let memory_ok = mb.is_none_or(|mb| row.peak_mb < mb);
    let goal = match mb {
        Some(mb) => format!("< {:.0} s, < {mb:.0} MB", ms / 1e3),
        None => format!("< {:.0} s", ms / 1e3),
    };
    let mark = if time_ok && memory_ok { "pass" } else { "MISS" };
    format!("{mark} ({goal})")
}

fn run_parent(sizes: &[usize]) -> Result<bool, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    println!(
        "{:>10} {:>11} {:>10} {:>10} {:>10} {:>12} {:>7} {:>9}  goal",
        "statements", "shape", "ops", "edges", "plan ms", "race ms", "races", "peak MB"
    );
    let mut all_ok = true;
    for &statements in sizes {
        for (shape, _) in SHAPES {
            let output = Command::new(&exe)
                .args(["--child", shape, &statements.to_string()])
                .output()
                .map_err(|e| format!("cannot start the child for {shape} x {statements}: {e}"))?;
            let stdout = String::from_utf8_lossy(&output.stdout);
            let Some(row) = stdout.lines().find_map(Row::parse) else {
                return Err(format!(
                    "the child for {shape} x {statements} failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                ));
            };
            let v = verdict(&row);
            all_ok &= !v.starts_with("MISS");
            println!(
                "{:>10} {:>11} {:>10} {:>10} {:>10.1} {:>12.1} {:>7} {:>9.1}  {v}",
                row.statements,
                row.shape,
                row.ops,
                row.edges,
                row.plan_ms,
                row.race_ms,
                row.races,
                row.peak_mb
            );
        }
    }
    Ok(all_ok)
}

fn parse_sizes(text: &str) -> Result<Vec<usize>, String> {
    text.split(',')
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|_| format!("--sizes: `{s}` is not a count"))
        })
        .collect()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if let Some(i) = args.iter().position(|a| a == "--child") {
        match (args.get(i + 1), args.get(i + 2).map(|n| n.parse::<usize>())) {
            (Some(shape), Some(Ok(statements))) => measure(shape, statements).map(|row| {
                println!("{}", row.to_line());
                true
            }),
            _ => Err("--child needs a shape and a statement count".to_owned()),
        }
    } else {
        // Cargo passes `--bench`; other flags are ignored too.
        let sizes = match args.iter().position(|a| a == "--sizes") {
            Some(i) => args
                .get(i + 1)
                .ok_or_else(|| "--sizes needs a value".to_owned())
                .and_then(|s| parse_sizes(s)),
            None => Ok(SIZES.to_vec()),
        };
        sizes.and_then(|sizes| run_parent(&sizes))
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("plan_scale: some goals were missed");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("plan_scale: {message}");
            ExitCode::FAILURE
        }
    }
}
