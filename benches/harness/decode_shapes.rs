//! W14's second step (issue 27 item 4, "and the W12 decode-like step"): W12's diamond with a
//! batch. Each of `layers` layers forks the origin into four streams, runs one branch kernel on
//! each — `decode_branch`, `h_k = max(a_k · y + c, 0)` over the batch's `n = b · width`
//! elements of the state `y` — and joins them into the origin's `decode_mix`,
//! `y = 0.5 y + 0.25 (h0 + h1 + h2 + h3)`; the state starts as a copy of the input `x`. At 40
//! layers that is 200 short kernels and one copy a step, whose work grows with the batch. The
//! four branch outputs are temporaries of `n` elements, live for the whole step.
//!
//! The same systems serve it as W13's MLP step (`few_graphs.rs`): a graph set, eager runs, one
//! graph whose device `switch` picks the bucket's body (here each arm is the whole diamond on
//! four streams, forked inside the body), and PyTorch's graphs in one pool (`torch_peer.py`,
//! `DecodeShapes`). Results are checked against an f64 CPU reference of the same arithmetic.

use ::streamgraph::{pipeline, Device, DeviceBuffer, DeviceFlag, Kernel, Stream};

use crate::few_graphs::Model;
use crate::gpu::BenchError;
use crate::many_shapes::{blocks, check_rows, Shapes, BIAS_BLOCK};
use crate::one_graph::SwitchParts;

type Result<T> = std::result::Result<T, BenchError>;

/// The branches of a layer (streams of the diamond).
const BRANCHES: usize = 4;

/// `a_k` of branch `k`: the four sum to 1.75, so a layer maps the state by at most
/// 0.5 + 0.25 · 1.75 < 1 and the state stays bounded over any number of layers.
const SLOPE: [f32; BRANCHES] = [0.25, 0.375, 0.5, 0.625];

/// `c` of branch `k` in layer `layer`.
fn offset(layer: usize, k: usize) -> f32 {
    0.02 * ((layer + k) % 5) as f32 - 0.03
}

/// The kernels of the decode-like step (`kernels.cu`).
#[derive(Clone, Copy)]
pub struct DecodeKernels {
    /// `decode_branch(float *h, const float *s, unsigned n, float a, float c)`.
    pub branch: &'static Kernel,
    /// `decode_mix(float *y, const float *h0, …, const float *h3, unsigned n)`.
    pub mix: &'static Kernel,
}

pipeline! {
    /// The decode-like step on the first `n` elements of `x` and `y`: `layers` diamond layers
    /// over four streams, the branches' outputs in temporaries.
    pub pipeline DecodeStep(
        x: &DeviceBuffer<f32>,
        y: &mut DeviceBuffer<f32>,
        branch: &Kernel,
        mix: &Kernel,
        n: usize,
        layers: usize,
    ) {
        stream main;
        stream s1;
        stream s2;
        stream s3;
        temp h0: f32[n];
        temp h1: f32[n];
        temp h2: f32[n];
        temp h3: f32[n];
        main: copy y.slice(0..n) <- x.slice(0..n);
        for layer in 0..layers {
            s1: wait_stream main;
            s2: wait_stream main;
            s3: wait_stream main;
            main: launch branch<<<blocks(n), BIAS_BLOCK>>>(&mut h0, &y.slice(0..n), n as u32, SLOPE[0], offset(layer, 0));
            s1: launch branch<<<blocks(n), BIAS_BLOCK>>>(&mut h1, &y.slice(0..n), n as u32, SLOPE[1], offset(layer, 1));
            s2: launch branch<<<blocks(n), BIAS_BLOCK>>>(&mut h2, &y.slice(0..n), n as u32, SLOPE[2], offset(layer, 2));
            s3: launch branch<<<blocks(n), BIAS_BLOCK>>>(&mut h3, &y.slice(0..n), n as u32, SLOPE[3], offset(layer, 3));
            main: wait_stream s1;
            main: wait_stream s2;
            main: wait_stream s3;
            main: launch mix<<<blocks(n), BIAS_BLOCK>>>(&mut y.slice_mut(0..n), &h0, &h1, &h2, &h3, n as u32);
        }
    }
}

/// `DecodeSwitch` with one arm per listed index (`0 1 … 31`), as `one_graph.rs`'s
/// `switch_step!`.
macro_rules! decode_switch {
    ($($arm:tt)*) => {
        pipeline! {
            /// The decode-like step at every batch size of `ns`, one `switch` arm each, the arm
            /// picked by `arm`, which `set_arm` (`stamp`) sets to `index` first; the branches'
            /// outputs are temporaries of `nmax` elements, of which each arm uses its first
            /// `ns[k]`. Each arm forks its four streams inside the body.
            pub pipeline DecodeSwitch(
                x: &DeviceBuffer<f32>,
                y: &mut DeviceBuffer<f32>,
                arm: &mut DeviceFlag,
                set_arm: &Kernel,
                index: u32,
                branch: &Kernel,
                mix: &Kernel,
                ns: &[usize],
                nmax: usize,
                layers: usize,
            ) {
                stream main;
                stream s1;
                stream s2;
                stream s3;
                temp h0: f32[nmax];
                temp h1: f32[nmax];
                temp h2: f32[nmax];
                temp h3: f32[nmax];
                main: launch set_arm<<<1u32, 1u32>>>(&mut arm, index);
                main: switch arm {
                    $(
                        $arm => {
                            main: copy y.slice(0..ns[$arm]) <- x.slice(0..ns[$arm]);
                            for layer in 0..layers {
                                s1: wait_stream main;
                                s2: wait_stream main;
                                s3: wait_stream main;
                                main: launch branch<<<blocks(ns[$arm]), BIAS_BLOCK>>>(&mut h0.slice_mut(0..ns[$arm]), &y.slice(0..ns[$arm]), ns[$arm] as u32, SLOPE[0], offset(layer, 0));
                                s1: launch branch<<<blocks(ns[$arm]), BIAS_BLOCK>>>(&mut h1.slice_mut(0..ns[$arm]), &y.slice(0..ns[$arm]), ns[$arm] as u32, SLOPE[1], offset(layer, 1));
                                s2: launch branch<<<blocks(ns[$arm]), BIAS_BLOCK>>>(&mut h2.slice_mut(0..ns[$arm]), &y.slice(0..ns[$arm]), ns[$arm] as u32, SLOPE[2], offset(layer, 2));
                                s3: launch branch<<<blocks(ns[$arm]), BIAS_BLOCK>>>(&mut h3.slice_mut(0..ns[$arm]), &y.slice(0..ns[$arm]), ns[$arm] as u32, SLOPE[3], offset(layer, 3));
                                main: wait_stream s1;
                                main: wait_stream s2;
                                main: wait_stream s3;
                                main: launch mix<<<blocks(ns[$arm]), BIAS_BLOCK>>>(&mut y.slice_mut(0..ns[$arm]), &h0.slice(0..ns[$arm]), &h1.slice(0..ns[$arm]), &h2.slice(0..ns[$arm]), &h3.slice(0..ns[$arm]), ns[$arm] as u32);
                            }
                        }
                    )*
                }
            }
        }
    };
}

decode_switch!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);

/// The decode-like step's model: the input of the largest batch, the kernels and the CPU
/// reference of every element.
pub(crate) struct DecodeNet {
    device: Device,
    p: Shapes,
    layers: usize,
    x: DeviceBuffer<f32>,
    kernels: DecodeKernels,
    /// The state after `layers` layers, element by element, in f64.
    want: Vec<f64>,
}

impl DecodeNet {
    /// Checks the sizes, makes and uploads the input (seeded, in `[-1, 1)`) and computes the
    /// reference.
    pub(crate) fn new(
        device: &Device,
        p: &Shapes,
        layers: usize,
        kernels: DecodeKernels,
    ) -> Result<DecodeNet> {
        p.check()?;
        if layers == 0 {
            return Err(BenchError::Setup("W14's decode step needs a layer".into()));
        }
        let len = p.max_batch() * p.width;
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let x: Vec<f32> = (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                ((s >> 40) as f32) / ((1u64 << 23) as f32) - 1.0
            })
            .collect();
        let want = x
            .iter()
            .map(|&v| {
                let mut y = f64::from(v);
                for layer in 0..layers {
                    let sum: f64 = (0..BRANCHES)
                        .map(|k| (f64::from(SLOPE[k]) * y + f64::from(offset(layer, k))).max(0.0))
                        .sum();
                    y = 0.5 * y + 0.25 * sum;
                }
                y
            })
            .collect();
        Ok(DecodeNet {
            device: device.clone(),
            p: p.clone(),
            layers,
            x: DeviceBuffer::from_host(device, &x)?,
            kernels,
            want,
        })
    }
}

impl Model for DecodeNet {
    type Step<'a> = DecodeStep<'a>;
    type Switch<'a> = DecodeSwitch<'a>;

    fn device(&self) -> &Device {
        &self.device
    }

    fn batches(&self) -> &[usize] {
        &self.p.batches
    }

    fn n(&self, i: usize) -> usize {
        self.p.batches[i] * self.p.width
    }

    fn step<'a>(&'a self, y: &'a mut DeviceBuffer<f32>, i: usize) -> DecodeStep<'a> {
        let k = self.kernels;
        DecodeStep::new(&self.x, y, k.branch, k.mix, self.n(i), self.layers)
    }

    fn check_output(
        &self,
        workload: &str,
        i: usize,
        origin: &Stream,
        y: &DeviceBuffer<f32>,
    ) -> Result<()> {
        let (w, b) = (self.p.width, self.p.batches[i]);
        // f32 arithmetic (with contractions) against f64: a few units in the last place per
        // layer on values of order one.
        let tolerance = 1e-6 * self.layers as f64;
        check_rows(workload, origin, y, (w, b, self.p.max_batch()), |r, got| {
            let want = &self.want[r * w..(r + 1) * w];
            match got
                .iter()
                .zip(want)
                .enumerate()
                .find(|(_, (g, e))| (f64::from(**g) - **e).abs() > tolerance * e.abs().max(1.0))
            {
                Some((c, (g, e))) => Err(BenchError::Check(format!(
                    "{workload}, the decode graph of batch {b}: row {r} column {c} is {g}, \
                     the reference {e}"
                ))),
                None => Ok(()),
            }
        })
    }

    fn switch<'a>(&'a self, parts: &'a mut SwitchParts, index: u32) -> DecodeSwitch<'a> {
        let k = self.kernels;
        DecodeSwitch::new(
            &self.x,
            &mut parts.y,
            &mut parts.arm,
            parts.stamp,
            index,
            k.branch,
            k.mix,
            &parts.ns,
            parts.ns.last().copied().unwrap_or(0),
            self.layers,
        )
    }

    fn switch_output<'p>(step: &'p DecodeSwitch<'_>) -> &'p DeviceBuffer<f32> {
        step.y
    }

    fn switch_flag<'p, 'a>(step: &'p DecodeSwitch<'a>) -> &'p &'a mut DeviceFlag
    where
        Self: 'a,
    {
        &step.arm
    }
}
