//! What a pipeline shows of itself: the plan's op table (`Display`), DOT labels that tell
//! launches of one kernel apart, `tracing` spans (the `tracing` feature) of plans, eager runs
//! and captures, and `testing::compare` reporting the first differing element.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use streamgraph::testing::{self, Compared, Tolerance};
use streamgraph::{
    pipeline, Device, DeviceBuffer, Eager, Error, Kernel, Mismatch, Module, Plan, Stream,
};

/// The kernels of the pipeline below.
struct Kernels {
    add: Kernel,
}

pipeline! {
    /// Two launches of one kernel per iteration, on two streams, with other grids.
    pipeline Twice(x: &mut DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, k: &Kernels, n: u32) {
        stream main;
        stream side;
        event done;

        for i in 0..2u32 {
            main: launch k.add<<<i + 1, 256>>>(&mut x, i + 1, n);
            main: record done;
            side: wait done;
            side: launch k.add<<<n.div_ceil(256), 128>>>(&mut y, 7u32, n);
        }
    }
}

fn plan_only() -> (DeviceBuffer<u32>, DeviceBuffer<u32>, Kernels) {
    (
        DeviceBuffer::for_planning(1000).unwrap(),
        DeviceBuffer::for_planning(1000).unwrap(),
        Kernels {
            add: Kernel::for_planning("add"),
        },
    )
}

#[test]
fn the_op_table_has_one_line_per_operation() {
    let (mut x, mut y, k) = plan_only();
    let plan = Plan::build(&Twice::new(&mut x, &mut y, &k, 1000)).unwrap();
    let table = plan.to_string();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 1 + 4, "{table}");
    assert_eq!(
        lines[0],
        "plan of `Twice`: 4 operation(s) on 2 stream(s), 4 edge(s)"
    );
    // index, stream, statement text and occurrence, grid and block, location, accesses
    let file = file!();
    assert!(
        lines[1].starts_with(&format!(
            "0  main  main: launch k.add<<<i + 1, 256>>>(&mut x, i + 1, n) #1  <<<1, 256>>>  at {file}:"
        )),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains("  writes plan-only [0x"), "{}", lines[1]);
    assert!(lines[1].ends_with("+4000]"), "{}", lines[1]);
    assert!(
        lines[2].starts_with("1  side  side: launch k.add<<<n.div_ceil(256), 128>>>(&mut y, 7u32, n) #1  <<<4, 128>>>"),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].starts_with(
            "2  main  main: launch k.add<<<i + 1, 256>>>(&mut x, i + 1, n) #2  <<<2, 256>>>"
        ),
        "{}",
        lines[3]
    );
    println!("{table}");
}

#[test]
fn dot_labels_tell_two_launches_of_one_kernel_apart() {
    let (mut x, mut y, k) = plan_only();
    let plan = Plan::build(&Twice::new(&mut x, &mut y, &k, 1000)).unwrap();
    let dot = plan.to_dot();
    assert!(
        dot.contains(r#"n0 [label="launch k.add #1\n(&mut x, i + 1, n)\n<<<1, 256>>>\n"#),
        "{dot}"
    );
    assert!(
        dot.contains(r#"n2 [label="launch k.add #2\n(&mut x, i + 1, n)\n<<<2, 256>>>\n"#),
        "{dot}"
    );
    assert!(
        dot.contains(r#"n1 [label="launch k.add #1\n(&mut y, 7u32, n)\n<<<4, 128>>>\n"#),
        "{dot}"
    );
    let labels: Vec<&str> = dot
        .lines()
        .filter(|l| l.contains("[label=\"launch"))
        .collect();
    for (i, a) in labels.iter().enumerate() {
        for b in &labels[i + 1..] {
            assert_ne!(a.split_once(' ').unwrap().1, b.split_once(' ').unwrap().1);
        }
    }
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

thread_local! {
    /// Where the spans opened on this thread go, while `traced` runs on it.
    static SINK: std::cell::RefCell<Option<Captured>> = const { std::cell::RefCell::new(None) };
}

/// Writes into this thread's `SINK`, or nowhere.
struct ThreadSink;

impl Write for ThreadSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        SINK.with(|sink| match sink.borrow_mut().as_mut() {
            Some(out) => out.write(buf),
            None => Ok(buf.len()),
        })
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` and returns the text of every span it opened (debug level and up) on this thread.
///
/// One global subscriber serves every test of this binary: a scoped one per test
/// (`with_default`) races with other threads registering the same callsites, and a callsite
/// registered in that window stays disabled for good.
fn traced(f: impl FnOnce()) -> String {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::NEW)
            .with_writer(|| ThreadSink)
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
    let out = Captured::default();
    SINK.with(|sink| *sink.borrow_mut() = Some(out.clone()));
    f();
    SINK.with(|sink| *sink.borrow_mut() = None);
    out.text()
}

#[test]
fn tracing_shows_a_span_per_pipeline_and_per_statement() {
    let (mut x, mut y, k) = plan_only();
    let text = traced(|| {
        Plan::build(&Twice::new(&mut x, &mut y, &k, 1000)).unwrap();
    });
    println!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    // One pipeline span, and one statement span per statement issued: 2 × 4.
    let pipelines = lines
        .iter()
        .filter(|l| l.contains("pipeline{name="))
        .count();
    let statements: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("statement{pipeline=\"Twice\""))
        .collect();
    assert!(pipelines >= 1, "{text}");
    assert_eq!(statements.len(), 8, "{text}");
    assert!(
        text.contains(r#"pipeline{name="Twice" mode="plan" location="#),
        "{text}"
    );
    assert!(
        text.contains(r#"statement{pipeline="Twice" statement="main: launch k.add<<<i + 1, 256>>>(&mut x, i + 1, n)" location="#),
        "{text}"
    );
    assert!(
        text.contains(r#"statement{pipeline="Twice" statement="side: wait done" location="#),
        "{text}"
    );
    assert!(text.contains(r#"stream="side""#), "{text}");
    assert!(text.contains(file!()), "{text}");
}

#[test]
fn tolerances_compare_floats_and_integers_compare_exactly() {
    let exact = Tolerance::EXACT;
    assert!(1.0f32.matches(&1.0, exact));
    assert!(!1.0f32.matches(&1.000_000_1, exact));
    assert!(f32::NAN.matches(&f32::NAN, exact), "equal bits match");
    assert!(
        !0.0f32.matches(&-0.0, exact),
        "bitwise: the sign bit differs"
    );
    assert!(0.0f32.matches(&-0.0, Tolerance::absolute(1e-30)));
    assert!(1.0f64.matches(&1.05, Tolerance::absolute(0.1)));
    assert!(!1.0f64.matches(&1.2, Tolerance::absolute(0.1)));
    assert!(100.0f32.matches(&100.5, Tolerance::relative(0.01)));
    assert!(!100.0f32.matches(&102.0, Tolerance::relative(0.01)));
    assert!(!f64::INFINITY.matches(&f64::MAX, Tolerance::relative(1.0)));
    assert!(7u32.matches(&7, Tolerance::absolute(10.0)));
    assert!(!7u32.matches(&8, Tolerance::absolute(10.0)));
    assert!([1.0f32, 2.0].matches(&[1.0, 2.05], Tolerance::absolute(0.1)));
    assert_eq!(exact.to_string(), "bitwise");
}

#[test]
fn a_mismatch_names_the_output_the_runs_and_the_first_index() {
    let e = Error::OutputMismatch(Box::new(Mismatch {
        pipeline: "Twice",
        output: "y".into(),
        runs: 3,
        index: Some(17),
        eager: "1.5".into(),
        replayed: "1.25".into(),
        differing: 4,
        len: 1000,
        compared: "bitwise".into(),
    }));
    let message = e.to_string();
    assert!(
        message.starts_with("pipeline `Twice`: output `y` after 3 graph replays differs from 3 eager runs at index 17: eager 1.5, replayed 1.25 (4 of 1000 element(s) differ, compared bitwise)"),
        "{message}"
    );
}

// ---- on a GPU ----

const SOURCE: &str = r#"
// A grid-stride loop: every grid `Twice` launches covers all `n` elements.
extern "C" __global__ void add(unsigned* x, unsigned k, unsigned n) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] += k;
}
"#;

fn gpu() -> (Stream, Kernels) {
    let device = Device::new(None).unwrap();
    let stream = Stream::new(&device, 0).unwrap();
    let module = Module::from_cuda_source(&device, "observe", SOURCE).unwrap();
    // SAFETY: `Twice` launches add(unsigned*, unsigned, unsigned) with those types.
    let add = unsafe { module.kernel("add").unwrap() };
    (stream, Kernels { add })
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tracing_shows_eager_runs_and_captures() {
    let _serial = common::serial();
    let (stream, k) = gpu();
    let device = stream.device();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1000).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&device, 1000).unwrap();
    let mut eager = Eager::new(&stream);
    let text = traced(|| {
        eager.run(&Twice::new(&mut x, &mut y, &k, 1000)).unwrap();
        let graph = streamgraph::capture(&stream, Twice::new(&mut x, &mut y, &k, 1000)).unwrap();
        // The captured graph's picture tells the two launches of `k.add` on `main` apart.
        let dot = graph.to_dot().unwrap();
        assert!(
            dot.contains(r#"[label="launch k.add #2\n(&mut x, i + 1, n)\n"#),
            "{dot}"
        );
        graph.instantiate().unwrap().replay(&stream, 1).unwrap();
        stream.synchronize().unwrap();
    });
    println!("{text}");
    assert!(
        text.contains(r#"pipeline{name="Twice" mode="run""#),
        "{text}"
    );
    assert!(
        text.contains(r#"pipeline{name="Twice" mode="capture""#),
        "{text}"
    );
    // Statement spans nest in their pipeline's span (plans built by checks, when
    // `STREAMGRAPH_CHECKS=1`, have spans of their own, in `mode="plan"`).
    let statements_in = |mode: &str| {
        text.lines()
            .filter(|l| l.contains(mode) && l.contains("statement{pipeline=\"Twice\""))
            .count()
    };
    assert_eq!(statements_in(r#"mode="run""#), 8, "{text}");
    assert_eq!(statements_in(r#"mode="capture""#), 8, "{text}");
    assert_eq!(x.to_vec().unwrap(), vec![6u32; 1000]);
    assert_eq!(y.to_vec().unwrap(), vec![28u32; 1000]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compare_passes_with_a_reset_and_names_the_first_difference_without() {
    let _serial = common::serial();
    let (stream, k) = gpu();
    let device = stream.device();
    struct State {
        x: DeviceBuffer<u32>,
        y: DeviceBuffer<u32>,
    }
    let mut s = State {
        x: DeviceBuffer::zeros(&device, 1000).unwrap(),
        y: DeviceBuffer::zeros(&device, 1000).unwrap(),
    };
    let zeros = vec![0u32; 1000];
    let report = testing::compare(&stream, &mut s, |s, run| {
        run.pipeline(Twice::new(&mut s.x, &mut s.y, &k, 1000))
    })
    .reset(|s| {
        s.x.copy_from_host(&zeros)?;
        s.y.copy_from_host(&zeros)
    })
    .output("x", |s| s.x.to_vec())
    .output("y", |s| s.y.to_vec())
    .replays(3)
    .run()
    .unwrap();
    println!("{report}");
    assert_eq!(report.pipeline, "Twice");
    assert_eq!((report.verified.operations, report.runs), (4, 3));
    assert_eq!(
        report.outputs,
        [("x".to_string(), 1000), ("y".to_string(), 1000)]
    );
    // The last phase: 3 replays from zeros.
    assert_eq!(s.x.to_vec().unwrap(), vec![9u32; 1000]);
    assert_eq!(s.y.to_vec().unwrap(), vec![42u32; 1000]);

    // Without the reset each side starts where the previous one stopped: from 9, three eager
    // runs leave 12, 15, 18; one replay then leaves 21 where the first eager run left 12.
    let err = testing::compare(&stream, &mut s, |s, run| {
        run.pipeline(Twice::new(&mut s.x, &mut s.y, &k, 1000))
    })
    .output("x", |s| s.x.to_vec())
    .run()
    .unwrap_err();
    let Error::OutputMismatch(m) = &err else {
        panic!("expected an output mismatch, got {err}");
    };
    assert_eq!(
        (
            m.output.as_str(),
            m.runs,
            m.index,
            m.eager.as_str(),
            m.replayed.as_str()
        ),
        ("x", 1, Some(0), "12", "21")
    );
    assert_eq!((m.differing, m.len), (1000, 1000));
    println!("{err}");
}
