//! W14's `streamgraph-switch` (see `few_graphs.rs`): one graph for all 32 buckets, whose
//! device `switch` block runs the bucket's body — W13's step at that batch size — picked by a
//! `DeviceFlag` that the graph's first kernel (`stamp(arm, index)`) sets.
//!
//! The graph is captured once, instantiated and uploaded at start-up (host ms:
//! `capture_all`), and kept as one `GraphExec` for the whole cycle. Per request the host sets
//! the bucket's index as the `stamp` node's argument (`GraphExec::set_kernel_args`, one
//! `cuGraphExecKernelNodeSetParams`) and launches the graph; both calls are the request's host
//! time. (A `GraphSet` of one key would capture the graph again at every launch: argument
//! updates stop at a pipeline with a device block.) The hidden activations are temporaries of
//! the largest batch's size, allocated before the switch node and freed after it (a
//! conditional body holds no allocation), each arm using their first `n` elements; so the
//! graph holds what the largest graph of the set holds.

use std::time::Instant;

use ::streamgraph::ops::Gemm;
use ::streamgraph::{
    pipeline, Capture, DeviceBuffer, DeviceFlag, Kernel, KernelArg, OpRef, Pipeline, Plan, Stream,
};

use crate::few_graphs::{Model, Shared, Timer};
use crate::gpu::BenchError;
use crate::many_shapes::{blocks, ms_since, Baseline, BIAS_BLOCK};
use crate::runner::Case;

type Result<T> = std::result::Result<T, BenchError>;

/// `SwitchStep` with one arm per listed index (`0 1 … 31`): arm `k` runs W13's step on the
/// first `ns[k]` elements with `gemms[k]`. A `macro_rules!` writes the 32 arms, which differ
/// only in their index.
macro_rules! switch_step {
    ($($arm:tt)*) => {
        pipeline! {
            /// W13's step at every batch size of `ns` (elements: rows · width), one `switch`
            /// arm each, the arm picked by `arm`, which `set_arm` (`stamp`) sets to `index`
            /// first; the activations are temporaries of `nmax` elements, of which each arm
            /// uses its first `ns[k]`.
            pub pipeline SwitchStep<'o>(
                x: &DeviceBuffer<f32>,
                y: &mut DeviceBuffer<f32>,
                arm: &mut DeviceFlag,
                set_arm: &Kernel,
                index: u32,
                ws: &[DeviceBuffer<f32>],
                bs: &[DeviceBuffer<f32>],
                gemms: &'o [Gemm<f32>],
                bias_act: &Kernel,
                ns: &[usize],
                nmax: usize,
                width: u32,
            ) {
                stream main;
                temp h1: f32[nmax];
                temp h2: f32[nmax];
                main: launch set_arm<<<1u32, 1u32>>>(&mut arm, index);
                main: switch arm {
                    $(
                        $arm => {
                            main: call gemms[$arm](&mut h1.slice_mut(0..ns[$arm]), &x.slice(0..ns[$arm]), &ws[0]);
                            main: launch bias_act<<<blocks(ns[$arm]), BIAS_BLOCK>>>(&mut h1.slice_mut(0..ns[$arm]), &bs[0], ns[$arm] as u32, width, 1u32);
                            main: call gemms[$arm](&mut h2.slice_mut(0..ns[$arm]), &h1.slice(0..ns[$arm]), &ws[1]);
                            main: launch bias_act<<<blocks(ns[$arm]), BIAS_BLOCK>>>(&mut h2.slice_mut(0..ns[$arm]), &bs[1], ns[$arm] as u32, width, 1u32);
                            main: call gemms[$arm](&mut y.slice_mut(0..ns[$arm]), &h2.slice(0..ns[$arm]), &ws[2]);
                            main: launch bias_act<<<blocks(ns[$arm]), BIAS_BLOCK>>>(&mut y.slice_mut(0..ns[$arm]), &bs[2], ns[$arm] as u32, width, 0u32);
                        }
                    )*
                }
            }
        }
    };
}

switch_step!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);

/// The arms [`SwitchStep`] has (and every switch step of W14).
pub const ARMS: usize = 32;

/// What a switch step borrows besides its model: the output, the flag, the sizes.
pub(crate) struct SwitchParts {
    /// `stamp(unsigned int *slot, unsigned int value)`: sets the switch's index.
    pub(crate) stamp: &'static Kernel,
    /// Elements of each batch's activations and output rows (`Model::n`).
    pub(crate) ns: Vec<usize>,
    pub(crate) y: DeviceBuffer<f32>,
    pub(crate) arm: DeviceFlag,
}

/// `streamgraph-switch`: one graph, its `switch` picking the bucket.
pub(crate) struct SwitchCase<M: Model> {
    s: &'static Shared<M>,
    parts: SwitchParts,
    origin: Stream,
    timer: Timer,
    /// The statement that sets the switch's index.
    set_index: OpRef,
}

impl<M: Model> SwitchCase<M> {
    /// The case on `s`'s model, its plan checked for races, after one checked cycle.
    pub(crate) fn new(s: &'static Shared<M>, stamp: &'static Kernel) -> Result<SwitchCase<M>> {
        let m = s.model;
        let device = m.device();
        if m.batches().len() != ARMS {
            return Err(BenchError::Setup(format!(
                "W14's switch has {ARMS} arms, one per batch size; {} batch sizes given",
                m.batches().len()
            )));
        }
        let origin = Stream::new(device, 0)?;
        let mut parts = SwitchParts {
            stamp,
            ns: (0..ARMS).map(|i| m.n(i)).collect(),
            y: DeviceBuffer::<f32>::zeros(device, m.output_len())?,
            arm: DeviceFlag::new(device, 0)?,
        };
        let program = m.switch(&mut parts, 0).program();
        let Some(set_index) = program
            .statements
            .iter()
            .find(|st| st.text.contains("launch set_arm"))
            .map(OpRef::new)
        else {
            return Err(BenchError::Setup(
                "W14: the switch step has no `launch set_arm` statement".into(),
            ));
        };
        let mut case = SwitchCase {
            s,
            parts,
            timer: Timer::new(&origin)?,
            origin,
            set_index,
        };
        Plan::build(&m.switch(&mut case.parts, 0))?.check_races()?;
        case.cycle(true)?;
        Ok(case)
    }

    fn cycle(&mut self, check: bool) -> Result<Vec<f64>> {
        let (s, m) = (self.s, self.s.model);
        let (origin, timer, stamp) = (&self.origin, &self.timer, self.parts.stamp);
        if check {
            // The checks below read rows that no run wrote since.
            origin.fill(&mut self.parts.y, f32::NAN)?;
        }
        let base = Baseline::take(m.device())?;
        // Its temporaries in memory of its own (2 MiB steps), as a graph set's are.
        let mut capture = Capture::new(origin).check(false).own_temp_memory(true);
        let t0 = Instant::now();
        let graph = capture.capture(m.switch(&mut self.parts, 0))?;
        if check {
            graph.verify()?;
        }
        let exec = graph.instantiate()?;
        exec.upload(origin)?;
        let capture_ms = ms_since(t0);
        let set_index = self.set_index;
        let run = |i: usize| -> Result<()> {
            let index = i as u32;
            let arm = KernelArg::write_through(M::switch_flag(exec.pipeline()));
            exec.set_kernel_args(set_index, stamp, &[arm, KernelArg::value(&index)])?;
            Ok(exec.launch(origin)?)
        };
        if check {
            // Smallest first: its rows and the row after them were NaN; then the largest's
            // last row, NaN until it runs.
            for i in [0, ARMS - 1] {
                run(i)?;
                let y = M::switch_output(exec.pipeline());
                m.check_output("W14 (streamgraph-switch)", i, origin, y)?;
            }
        }
        for i in 0..ARMS {
            run(i)?;
        }
        let after = base.over()?;
        let reserved = exec.temp_memory() as u64 + m.device().graph_memory()?.reserved;
        let serve = timer.serve(&s.requests, |n| run(s.bucket(n)?))?;
        let stats = exec.stats();
        if check && (stats.updates, stats.reinstantiations) != (0, 0) {
            return Err(BenchError::Check(
                "W14: serving the requests captured or instantiated the switch's graph again"
                    .into(),
            ));
        }
        drop(exec);
        base.end()?;
        Ok(s.metrics(capture_ms, after, reserved, serve))
    }
}

impl<M: Model> Case for SwitchCase<M> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        self.cycle(false)
    }
}
