//! `ops::Random` in `call` statements: a CPU reference of Philox4x32-10 checked against
//! Random123's known answers, and on a GPU, eager runs and replays against it: each eager run
//! and each replay draws fresh numbers, replay k what the k-th eager run draws, in the body of
//! a device loop too.
//!
//! The GPU tests that read no values back (all but the `_values` ones) also run on the
//! stand-in driver of `benches/stub-driver` (`.ci/stand-in-tests`).
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use streamgraph::ops::Random;
use streamgraph::{
    pipeline, AccessMode, Capture, DeviceBuffer, DeviceFlag, Eager, Error, Plan, StatementKind,
};

// ---- The CPU reference ----------------------------------------------------------------

/// Philox4x32-10 of `ctr` under `key`, as Salmon et al. (SC 2011) and Random123 define it.
fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (ctr, key);
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(0x9E37_79B9);
            k[1] = k[1].wrapping_add(0xBB67_AE85);
        }
        let p0 = u64::from(0xD251_1F53u32) * u64::from(c[0]);
        let p1 = u64::from(0xCD9E_8D57u32) * u64::from(c[2]);
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
    }
    c
}

/// Philox block `block` of subsequence `sub` under `seed`, as `ops::Random` lays it out.
fn block(seed: u64, sub: u64, block: u64) -> [u32; 4] {
    philox4x32_10(
        [
            block as u32,
            (block >> 32) as u32,
            sub as u32,
            (sub >> 32) as u32,
        ],
        [seed as u32, (seed >> 32) as u32],
    )
}

const F32_UNIT: f32 = 1.0 / 16_777_216.0; // 2^-24
const F64_UNIT: f64 = 1.0 / 9_007_199_254_740_992.0; // 2^-53

/// `n` f32 uniforms from block `offset` on.
fn uniform_f32(seed: u64, sub: u64, offset: u64, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let w = block(seed, sub, offset + (i / 4) as u64);
            (w[i % 4] >> 8) as f32 * F32_UNIT
        })
        .collect()
}

/// The two 53-bit words of a block.
fn words53(w: [u32; 4]) -> [u64; 2] {
    [
        ((u64::from(w[0]) << 32) | u64::from(w[1])) >> 11,
        ((u64::from(w[2]) << 32) | u64::from(w[3])) >> 11,
    ]
}

/// `n` f64 uniforms from block `offset` on.
fn uniform_f64(seed: u64, sub: u64, offset: u64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| words53(block(seed, sub, offset + (i / 2) as u64))[i % 2] as f64 * F64_UNIT)
        .collect()
}

/// Box–Muller of `u1` in (0, 1] and `u2` in [0, 1), in f64.
fn box_muller(u1: f64, u2: f64, mean: f64, std: f64) -> [f64; 2] {
    let r = (-2.0 * u1.ln()).sqrt();
    let (s, c) = (std::f64::consts::TAU * u2).sin_cos();
    [mean + std * r * c, mean + std * r * s]
}

/// `n` f32 normals from block `offset` on, computed in f64.
fn normal_f32(seed: u64, offset: u64, n: usize, mean: f64, std: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let w = block(seed, 0, offset + (i / 4) as u64);
            let t = (i % 4) / 2;
            let u1 = f64::from((w[2 * t] >> 8) + 1) * f64::from(F32_UNIT);
            let u2 = f64::from(w[2 * t + 1] >> 8) * f64::from(F32_UNIT);
            box_muller(u1, u2, mean, std)[i % 2]
        })
        .collect()
}

/// `n` f64 normals from block `offset` on.
fn normal_f64(seed: u64, offset: u64, n: usize, mean: f64, std: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let [a, b] = words53(block(seed, 0, offset + (i / 2) as u64));
            box_muller((a + 1) as f64 * F64_UNIT, b as f64 * F64_UNIT, mean, std)[i % 2]
        })
        .collect()
}

/// Random123's `tests/kat_vectors`, the three `philox4x32 10` lines: counter, key, answer.
const KAT: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
    (
        [0, 0, 0, 0],
        [0, 0],
        [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8],
    ),
    (
        [0xffff_ffff; 4],
        [0xffff_ffff; 2],
        [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd],
    ),
    (
        [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
        [0xa409_3822, 0x299f_31d0],
        [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1],
    ),
];

#[test]
fn the_cpu_philox_gives_random123s_known_answers() {
    for (ctr, key, want) in KAT {
        assert_eq!(
            philox4x32_10(ctr, key),
            want,
            "counter {ctr:08x?} key {key:08x?}"
        );
    }
}

#[test]
fn the_cpu_reference_lays_blocks_out_as_documented() {
    // Block 0 of seed 0 is the first known answer; its words are elements 0..4.
    let u = uniform_f32(0, 0, 0, 6);
    assert_eq!(u[0], (0x6627_e8d5u32 >> 8) as f32 / 16_777_216.0);
    assert_eq!(u[3], (0x9b00_dbd8u32 >> 8) as f32 / 16_777_216.0);
    // Element 4 starts block 1; an offset of 1 starts there too.
    assert_eq!(uniform_f32(0, 0, 1, 2), u[4..6]);
    // The seed is the key, the subsequence the counter's upper half.
    let all_ones = block(u64::MAX, u64::MAX, u64::MAX);
    assert_eq!(all_ones, KAT[1].2);
    let pi = block(
        0x299f_31d0_a409_3822,
        0x0370_7344_1319_8a2e,
        0x85a3_08d3_243f_6a88,
    );
    assert_eq!(pi, KAT[2].2);
    for v in uniform_f32(7, 0, 0, 4096) {
        assert!((0.0..1.0).contains(&v));
    }
    for v in uniform_f64(7, 0, 0, 4096) {
        assert!((0.0..1.0).contains(&v));
    }
    let z = normal_f64(7, 0, 100_000, 0.0, 1.0);
    let mean = z.iter().sum::<f64>() / z.len() as f64;
    let var = z.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / z.len() as f64;
    assert!(
        mean.abs() < 0.02 && (var - 1.0).abs() < 0.02,
        "{mean} {var}"
    );
}

// ---- Pipelines --------------------------------------------------------------------------

pipeline! {
    /// One fill of `x`.
    pipeline Fill(x: &mut DeviceBuffer<f32>, rng: &Random<f32>) {
        stream main;
        main: call rng(&mut x);
    }
}

pipeline! {
    /// One fill of `x` in f64.
    pipeline Fill64(x: &mut DeviceBuffer<f64>, rng: &Random<f64>) {
        stream main;
        main: call rng(&mut x);
    }
}

pipeline! {
    /// Three fills of `x` in the body of a device loop (its limit): the last one stays.
    pipeline InLoop(x: &mut DeviceBuffer<f32>, flag: &DeviceFlag, rng: &Random<f32>) {
        stream main;
        main: while flag, limit = 3 {
            main: call rng(&mut x);
        }
    }
}

/// Not a multiple of 4: the last block is used in part, and still counted.
const N: usize = 1001;
const SEED: u64 = 0x5eed_0123_4567_89ab;

use common::{gpu, Gpu};

impl Gpu {
    fn fill(&self, rng: &Random<f32>, x: &mut DeviceBuffer<f32>) -> Vec<f32> {
        Eager::new(&self.origin).run(&Fill::new(x, rng)).unwrap();
        x.to_vec_on(&self.origin).unwrap()
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn blocks() -> u64 {
    Random::<f32>::blocks_for(N)
}

#[test]
fn a_random_call_is_a_call_statement_that_writes_its_operand() {
    let calls: Vec<_> = Fill::PROGRAM
        .statements
        .iter()
        .filter(|s| matches!(s.kind, StatementKind::Call { op: "rng" }))
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].text, "main: call rng(&mut x)");
    let modes: Vec<_> = calls[0]
        .accesses
        .iter()
        .map(|a| (a.buffer, a.mode))
        .collect();
    assert_eq!(modes, [("x", AccessMode::Write)]);
}

// ---- On the GPU or the stand-in driver: no values read ----------------------------------

/// The plan sees one operation writing `x`, and the op's counter (its scratch memory).
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn a_plan_sees_the_call_write_its_operand() {
    let g = gpu();
    let rng = Random::<f32>::uniform(&g.device, SEED).unwrap();
    let mut x = DeviceBuffer::<f32>::zeros(&g.device, N).unwrap();
    let plan = Plan::build(&Fill::new(&mut x, &rng)).unwrap();
    plan.check_races().unwrap();
    let accesses: Vec<_> = plan
        .ops()
        .iter()
        .flat_map(|op| op.accesses.iter().map(|a| (a.mode, a.range.bytes)))
        .collect();
    assert_eq!(
        accesses,
        [
            (AccessMode::Write, N * std::mem::size_of::<f32>()),
            (AccessMode::Write, 8)
        ]
    );
}

/// A call is one operation of the graph (its two kernels joined), verified against the plan,
/// in the body of a device loop too.
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn random_calls_capture_as_planned() {
    let g = gpu();
    let rng = Random::<f32>::uniform(&g.device, SEED).unwrap();
    let mut x = DeviceBuffer::<f32>::zeros(&g.device, N).unwrap();
    let graph = Capture::new(&g.origin)
        .capture(Fill::new(&mut x, &rng))
        .unwrap();
    graph.verify().unwrap();
    let dot = graph.to_dot().unwrap();
    assert!(dot.contains("call rng(&mut x)"), "{dot}");
    drop(graph);

    let flag = DeviceFlag::new(&g.device, 1).unwrap();
    let graph = Capture::new(&g.origin)
        .capture(InLoop::new(&mut x, &flag, &rng))
        .unwrap();
    graph.verify().unwrap();
    let mut exec = graph.instantiate().unwrap();
    exec.launch(&g.origin).unwrap();
    // The call in the loop's body is the captured one (same op, same operand): an argument
    // update keeps the graph as it is.
    exec.update_args_with(|_| {}).unwrap();
    let stats = exec.stats();
    assert_eq!((stats.updates, stats.nodes_set), (0, 0), "{stats:?}");
    exec.launch(&g.origin).unwrap();
    g.origin.synchronize().unwrap();
}

/// An unchanged op on unchanged operands is skipped by argument updates (its key is its
/// identity): a pipeline of such calls is not walked at all; another op captures it again.
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn unchanged_random_calls_are_skipped_by_argument_updates() {
    let g = gpu();
    let rng = Random::<f32>::uniform(&g.device, SEED).unwrap();
    let other = Random::<f32>::uniform(&g.device, SEED + 1).unwrap();
    let mut x = DeviceBuffer::<f32>::zeros(&g.device, N).unwrap();
    let mut exec = Capture::new(&g.origin)
        .capture(Fill::new(&mut x, &rng))
        .unwrap()
        .instantiate()
        .unwrap();
    // The first update walks the call and learns the keys; the next walks nothing.
    exec.update_args_with(|_| {}).unwrap();
    let before = exec.stats();
    exec.update_args_with(|_| {}).unwrap();
    let after = exec.stats();
    assert_eq!(after.args_skipped - before.args_skipped, 1, "{after:?}");
    assert_eq!((after.updates, after.nodes_set), (0, 0), "{after:?}");
    // Another op: its key differs, the call is walked and the pipeline captured again.
    exec.update_args_with(|p| p.rng = &other).unwrap();
    assert_eq!(exec.stats().updates, 1);
    exec.launch(&g.origin).unwrap();
    g.origin.synchronize().unwrap();
}

/// Eager runs, replays and the host's offset calls go through on their own (no values).
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn random_ops_run_eagerly_and_set_their_offset() {
    let g = gpu();
    let mut rng = Random::<f32>::normal(&g.device, SEED, 1.0, 2.0).unwrap();
    let mut x = DeviceBuffer::<f32>::zeros(&g.device, N).unwrap();
    Eager::new(&g.origin).run(&Fill::new(&mut x, &rng)).unwrap();
    rng.set_offset(1 << 40).unwrap();
    rng.reset().unwrap();
    let rng64 = Random::<f64>::uniform(&g.device, SEED)
        .unwrap()
        .with_subsequence(3);
    assert_eq!((rng64.seed(), rng64.subsequence()), (SEED, 3));
    let mut y = DeviceBuffer::<f64>::zeros(&g.device, N).unwrap();
    let exec = Capture::new(&g.origin)
        .capture(Fill64::new(&mut y, &rng64))
        .unwrap()
        .instantiate()
        .unwrap();
    exec.launch(&g.origin).unwrap();
    g.origin.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn a_normal_op_refuses_a_negative_or_infinite_spread() {
    let g = gpu();
    for (mean, std) in [(0.0, -1.0), (f32::NAN, 1.0), (0.0, f32::INFINITY)] {
        let e = Random::<f32>::normal(&g.device, 1, mean, std).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }
}

// ---- On a GPU: values against the CPU reference -----------------------------------------

/// Eager run k draws the reference at offset k · blocks, bitwise; a second op of the seed
/// draws the same, and `set_offset`/`reset` move where the next run starts.
#[test]
#[ignore = "needs a CUDA GPU"]
fn eager_runs_draw_the_reference_at_each_offset_values() {
    let g = gpu();
    let mut rng = Random::<f32>::uniform(&g.device, SEED).unwrap();
    let mut x = DeviceBuffer::<f32>::zeros(&g.device, N).unwrap();
    let mut seen = Vec::new();
    for k in 0..4 {
        let got = g.fill(&rng, &mut x);
        let want = uniform_f32(SEED, 0, k * blocks(), N);
        assert_eq!(bits(&got), bits(&want), "eager run {k}");
        assert!(
            !seen.contains(&bits(&got)),
            "run {k} repeats an earlier one"
        );
        seen.push(bits(&got));
    }
    rng.set_offset(12_345).unwrap();
    assert_eq!(
        bits(&g.fill(&rng, &mut x)),
        bits(&uniform_f32(SEED, 0, 12_345, N))
    );
    rng.reset().unwrap();
    assert_eq!(bits(&g.fill(&rng, &mut x)), seen[0]);
    // Another subsequence draws other numbers, from its own reference.
    let other = Random::<f32>::uniform(&g.device, SEED)
        .unwrap()
        .with_subsequence(1);
    let got = g.fill(&other, &mut x);
    assert_eq!(bits(&got), bits(&uniform_f32(SEED, 1, 0, N)));
    assert_ne!(bits(&got), seen[0]);
}

/// Three replays draw three fresh fills: those of eager runs 2, 3 and 4 of a second op with
/// the same seed (the first op ran once eagerly before the capture).
#[test]
#[ignore = "needs a CUDA GPU"]
fn replays_draw_fresh_numbers_like_eager_runs_values() {
    let g = gpu();
    let replayed = Random::<f32>::uniform(&g.device, SEED).unwrap();
    let mut x = DeviceBuffer::<f32>::zeros(&g.device, N).unwrap();
    let first = g.fill(&replayed, &mut x);

    let eager_op = Random::<f32>::uniform(&g.device, SEED).unwrap();
    let mut y = DeviceBuffer::<f32>::zeros(&g.device, N).unwrap();
    let eager: Vec<Vec<u32>> = (0..4).map(|_| bits(&g.fill(&eager_op, &mut y))).collect();
    assert_eq!(bits(&first), eager[0]);

    let graph = Capture::new(&g.origin)
        .capture(Fill::new(&mut x, &replayed))
        .unwrap();
    graph.verify().unwrap();
    let exec = graph.instantiate().unwrap();
    let mut fills = Vec::new();
    for (k, eager_run) in eager.iter().enumerate().skip(1) {
        exec.launch(&g.origin).unwrap();
        g.origin.synchronize().unwrap();
        let got = bits(&exec.pipeline().x.to_vec_on(&g.origin).unwrap());
        assert_eq!(&got, eager_run, "replay {k} == eager run {}", k + 1);
        let want = uniform_f32(SEED, 0, k as u64 * blocks(), N);
        assert_eq!(got, bits(&want), "replay {k} == the reference");
        assert!(!fills.contains(&got), "replay {k} repeats an earlier one");
        fills.push(got);
    }
}

/// In a device loop of three iterations each iteration draws fresh numbers: a replay leaves the
/// third fill (offset 2 · blocks), the next replay the sixth; an eager run draws the same.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_call_in_a_device_loop_draws_each_iteration_values() {
    let g = gpu();
    let flag = DeviceFlag::new(&g.device, 1).unwrap();
    let eager_op = Random::<f32>::uniform(&g.device, SEED).unwrap();
    let mut x = DeviceBuffer::<f32>::zeros(&g.device, N).unwrap();
    Eager::new(&g.origin)
        .run(&InLoop::new(&mut x, &flag, &eager_op))
        .unwrap();
    let want = |k: u64| bits(&uniform_f32(SEED, 0, k * blocks(), N));
    assert_eq!(bits(&x.to_vec_on(&g.origin).unwrap()), want(2));

    let replayed = Random::<f32>::uniform(&g.device, SEED).unwrap();
    let graph = Capture::new(&g.origin)
        .capture(InLoop::new(&mut x, &flag, &replayed))
        .unwrap();
    graph.verify().unwrap();
    let exec = graph.instantiate().unwrap();
    for last in [2, 5] {
        exec.launch(&g.origin).unwrap();
        g.origin.synchronize().unwrap();
        let got = bits(&exec.pipeline().x.to_vec_on(&g.origin).unwrap());
        assert_eq!(got, want(last), "the fill of iteration {}", last + 1);
    }
}

/// f64 uniforms bitwise; normals in both types within a few units in the last place of the
/// reference (the device's `log`, `sqrt` and `sincospi`), their moments near the asked ones.
#[test]
#[ignore = "needs a CUDA GPU"]
fn f64_uniforms_and_normals_match_the_reference_values() {
    let g = gpu();
    let n = 100_001;
    let rng = Random::<f64>::uniform(&g.device, SEED).unwrap();
    let mut y = DeviceBuffer::<f64>::zeros(&g.device, n).unwrap();
    for k in 0..2u64 {
        Eager::new(&g.origin)
            .run(&Fill64::new(&mut y, &rng))
            .unwrap();
        let got: Vec<u64> = y
            .to_vec_on(&g.origin)
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let want: Vec<u64> = uniform_f64(SEED, 0, k * Random::<f64>::blocks_for(n), n)
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(got, want, "f64 uniform run {k}");
    }

    let (mean, std) = (3.0, 0.5);
    let rng = Random::<f64>::normal(&g.device, SEED, mean, std).unwrap();
    Eager::new(&g.origin)
        .run(&Fill64::new(&mut y, &rng))
        .unwrap();
    let got = y.to_vec_on(&g.origin).unwrap();
    let want = normal_f64(SEED, 0, n, mean, std);
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
            "f64 normal {i}: {a} vs {b}"
        );
    }
    let m = got.iter().sum::<f64>() / n as f64;
    assert!((m - mean).abs() < 0.01, "mean {m}");

    let rng = Random::<f32>::normal(&g.device, SEED, -1.0, 2.0).unwrap();
    let mut x = DeviceBuffer::<f32>::zeros(&g.device, n).unwrap();
    for k in 0..2u64 {
        let got = g.fill(&rng, &mut x);
        let want = normal_f32(SEED, k * Random::<f32>::blocks_for(n), n, -1.0, 2.0);
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            let (a, b) = (f64::from(*a), *b);
            assert!(
                (a - b).abs() <= 2e-5 * (1.0 + b.abs()),
                "f32 normal {i} of run {k}: {a} vs {b}"
            );
        }
    }
}
