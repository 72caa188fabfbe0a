//! The cuBLAS and cuBLASLt ops (`streamgraph::ops`) issued by `call` statements on a GPU:
//! results against a CPU reference, a captured graph's replay against the eager run (bitwise),
//! and a short operand refused before anything is issued.
//!
//! The pipelines are written by hand (the `Pipeline` trait over a built `Program`) until
//! `pipeline!` takes `call` statements; each is `main: call op(&mut c, &a, &b)` (with `&bias`
//! for `MatmulBias`), the op a parameter.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use streamgraph::__private::{call, call_in, call_out, place};
use streamgraph::half::{bf16, f16};
use streamgraph::ops::{
    Epilogue, Gemm, GemmConfig, Matmul, MatmulBias, MatmulConfig, StridedBatchedConfig,
    StridedBatchedGemm,
};
use streamgraph::{
    AccessMode, Capture, DeviceBuffer, Eager, Error, In, Issuer, Location, Out, Pipeline, Pod,
    Program, Statement, StatementKind, StaticAccess, StreamDecl, StreamOp, StreamOptions,
};

/// `main: call op(&mut c, &a, &b[, &bias])` as a program of one statement.
fn program(name: &'static str, with_bias: bool) -> &'static Program {
    let access = |buffer, mode| StaticAccess {
        buffer,
        mode,
        whole: true,
    };
    let mut accesses = vec![
        access("c", AccessMode::Write),
        access("a", AccessMode::Read),
        access("b", AccessMode::Read),
    ];
    if with_bias {
        accesses.push(access("bias", AccessMode::Read));
    }
    let text = if with_bias {
        "main: call op(&mut c, &a, &b, &bias)"
    } else {
        "main: call op(&mut c, &a, &b)"
    };
    let statements = vec![Statement {
        id: 0,
        stream: 0,
        kind: StatementKind::Call { op: "op" },
        text,
        accesses: Vec::leak(accesses),
        location: Location::UNKNOWN,
    }];
    Box::leak(Box::new(Program {
        name,
        streams: Vec::leak(vec![StreamDecl {
            name: "main",
            location: Location::UNKNOWN,
        }]),
        events: &[],
        statements: Vec::leak(statements),
        temps: &[],
        location: Location::UNKNOWN,
    }))
}

/// `main: call op(&mut c, &a, &b)`.
struct Call3<'a, O, T> {
    program: &'static Program,
    op: &'a O,
    c: &'a mut DeviceBuffer<T>,
    a: &'a DeviceBuffer<T>,
    b: &'a DeviceBuffer<T>,
}

impl<O, T: Pod> Pipeline for Call3<'_, O, T>
where
    O: for<'x> StreamOp<Operands<'x> = (Out<'x, T>, In<'x, T>, In<'x, T>)>,
{
    fn program(&self) -> &'static Program {
        self.program
    }

    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![StreamOptions::default()])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let stmt = &self.program.statements[0];
        let operands = (call_out(place(&self.c))?, call_in(self.a), call_in(self.b));
        call(issuer, stmt, self.op, operands)
    }
}

/// `main: call op(&mut c, &a, &b, &bias)`.
struct Call4<'a, O, T> {
    program: &'static Program,
    op: &'a O,
    c: &'a mut DeviceBuffer<T>,
    a: &'a DeviceBuffer<T>,
    b: &'a DeviceBuffer<T>,
    bias: &'a DeviceBuffer<T>,
}

impl<O, T: Pod> Pipeline for Call4<'_, O, T>
where
    O: for<'x> StreamOp<Operands<'x> = (Out<'x, T>, In<'x, T>, In<'x, T>, In<'x, T>)>,
{
    fn program(&self) -> &'static Program {
        self.program
    }

    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![StreamOptions::default()])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let stmt = &self.program.statements[0];
        let operands = (
            call_out(place(&self.c))?,
            call_in(self.a),
            call_in(self.b),
            call_in(self.bias),
        );
        call(issuer, stmt, self.op, operands)
    }
}

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// `C = alpha op(A) op(B) + beta C` of row-major matrices with leading dimensions.
#[allow(clippy::too_many_arguments)]
fn reference(
    (m, n, k): (usize, usize, usize),
    (transa, transb): (bool, bool),
    (alpha, beta): (f64, f64),
    a: &[f64],
    lda: usize,
    b: &[f64],
    ldb: usize,
    c: &mut [f64],
    ldc: usize,
) {
    for i in 0..m {
        for j in 0..n {
            let mut sum = 0.0;
            for p in 0..k {
                let x = if transa {
                    a[p * lda + i]
                } else {
                    a[i * lda + p]
                };
                let y = if transb {
                    b[j * ldb + p]
                } else {
                    b[p * ldb + j]
                };
                sum += x * y;
            }
            c[i * ldc + j] = alpha * sum + beta * c[i * ldc + j];
        }
    }
}

fn close(got: &[f64], want: &[f64], tolerance: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tolerance * (1.0 + w.abs()),
            "element {i}: got {g}, want {w} (tolerance {tolerance})"
        );
    }
}

use common::{gpu, Gpu};

impl Gpu {
    fn upload<T: Pod>(&self, host: &[f64], to: impl Fn(f64) -> T) -> DeviceBuffer<T> {
        let host: Vec<T> = host.iter().map(|&x| to(x)).collect();
        DeviceBuffer::from_host(&self.device, &host).unwrap()
    }

    /// Runs `pipeline` eagerly on the origin and waits for it.
    fn run(&self, pipeline: &impl Pipeline) -> Result<(), Error> {
        Eager::new(&self.origin).run(pipeline)?;
        self.origin.synchronize()
    }
}

/// A row-major GEMM of `T` against the reference, with `alpha`/`beta` and transposes.
fn gemm_matches_the_reference<T: streamgraph::ops::GemmElem>(
    to: impl Fn(f64) -> T + Copy,
    from: impl Fn(T) -> f64,
    tolerance: f64,
) {
    let g = gpu();
    let (m, n, k) = (37, 29, 45);
    for (transa, transb) in [(false, false), (true, false), (false, true), (true, true)] {
        // Padded leading dimensions, as stored (A: k×m when transposed, B: n×k).
        let (lda, a_rows) = if transa { (m + 3, k) } else { (k + 3, m) };
        let (ldb, b_rows) = if transb { (k + 1, n) } else { (n + 1, k) };
        let ldc = n + 2;
        let round = |v: Vec<f64>| v.into_iter().map(|x| from(to(x))).collect::<Vec<_>>();
        let a = round(values(a_rows * lda, 1));
        let b = round(values(b_rows * ldb, 2));
        let mut want = round(values(m * ldc, 3));
        let (alpha, beta) = (from(to(1.5)), from(to(-0.5)));
        let config = GemmConfig {
            transa,
            transb,
            lda,
            ldb,
            ldc,
            ..GemmConfig::<T>::row_major(m, n, k).with_scalars(to(alpha), to(beta))
        };
        let op = Gemm::new(&g.device, config).unwrap();
        let (da, db) = (g.upload(&a, to), g.upload(&b, to));
        let mut dc = g.upload(&want, to);
        reference(
            (m, n, k),
            (transa, transb),
            (alpha, beta),
            &a,
            lda,
            &b,
            ldb,
            &mut want,
            ldc,
        );
        g.run(&Call3 {
            program: program("Gemm", false),
            op: &op,
            c: &mut dc,
            a: &da,
            b: &db,
        })
        .unwrap();
        let got: Vec<f64> = dc.to_vec().unwrap().into_iter().map(&from).collect();
        close(&got, &want, tolerance);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_f32_gemm_matches_the_cpu() {
    gemm_matches_the_reference(|x| x as f32, f64::from, 1e-5);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_f64_gemm_matches_the_cpu() {
    gemm_matches_the_reference(|x| x, |x| x, 1e-12);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_precision_gemms_match_the_cpu() {
    // Computed in f32, stored in 16 bits: the result's own rounding dominates.
    gemm_matches_the_reference(f16::from_f64, f16::to_f64, 1e-2);
    gemm_matches_the_reference(bf16::from_f64, bf16::to_f64, 1e-1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_column_major_gemm_matches_the_cpu() {
    let g = gpu();
    let (m, n, k) = (8, 5, 3);
    let (a, b) = (values(m * k, 4), values(k * n, 5));
    // Column-major A (m×k) is row-major Aᵀ: C = A·B is Cᵀ = Bᵀ·Aᵀ in row-major terms.
    let mut want_t = vec![0.0; n * m];
    reference(
        (n, m, k),
        (false, false),
        (1.0, 0.0),
        &b,
        k,
        &a,
        m,
        &mut want_t,
        m,
    );
    let op = Gemm::new(&g.origin, GemmConfig::<f64>::column_major(m, n, k)).unwrap();
    let (da, db) = (g.upload(&a, |x| x), g.upload(&b, |x| x));
    let mut dc = DeviceBuffer::<f64>::zeros(&g.device, m * n).unwrap();
    g.run(&Call3 {
        program: program("ColumnMajorGemm", false),
        op: &op,
        c: &mut dc,
        a: &da,
        b: &db,
    })
    .unwrap();
    close(&dc.to_vec().unwrap(), &want_t, 1e-12);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_strided_batched_gemm_matches_the_cpu_batch_by_batch() {
    let g = gpu();
    let (m, n, k, count) = (6, 7, 5, 4);
    let config = StridedBatchedConfig::contiguous(GemmConfig::<f32>::row_major(m, n, k), count);
    let op = StridedBatchedGemm::new(&g.device, config).unwrap();
    let round = |v: Vec<f64>| {
        v.into_iter()
            .map(|x| f64::from(x as f32))
            .collect::<Vec<_>>()
    };
    let (a, b) = (
        round(values(m * k * count, 6)),
        round(values(k * n * count, 7)),
    );
    let (da, db) = (g.upload(&a, |x| x as f32), g.upload(&b, |x| x as f32));
    let mut dc = DeviceBuffer::<f32>::zeros(&g.device, m * n * count).unwrap();
    g.run(&Call3 {
        program: program("BatchedGemm", false),
        op: &op,
        c: &mut dc,
        a: &da,
        b: &db,
    })
    .unwrap();
    let got: Vec<f64> = dc.to_vec().unwrap().into_iter().map(f64::from).collect();
    for i in 0..count {
        let mut want = vec![0.0; m * n];
        reference(
            (m, n, k),
            (false, false),
            (1.0, 0.0),
            &a[i * m * k..],
            k,
            &b[i * k * n..],
            n,
            &mut want,
            n,
        );
        close(&got[i * m * n..(i + 1) * m * n], &want, 1e-5);
    }
}

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
}

/// A row-major matmul with a bias and `epilogue`, in `T`, against the reference.
fn matmul_matches_the_reference<T: streamgraph::ops::MatmulElem>(
    epilogue: Epilogue,
    to: impl Fn(f64) -> T + Copy,
    from: impl Fn(T) -> f64,
    tolerance: f64,
) {
    let g = gpu();
    let (m, n, k) = (32, 24, 16);
    let round = |v: Vec<f64>| v.into_iter().map(|x| from(to(x))).collect::<Vec<_>>();
    let (a, b, bias) = (
        round(values(m * k, 8)),
        round(values(k * n, 9)),
        round(values(n, 10)),
    );
    let mut want = vec![0.0; m * n];
    reference(
        (m, n, k),
        (false, false),
        (1.0, 0.0),
        &a,
        k,
        &b,
        n,
        &mut want,
        n,
    );
    for (i, x) in want.iter_mut().enumerate() {
        let y = *x + bias[i % n];
        *x = match epilogue {
            Epilogue::None => y,
            Epilogue::Relu => y.max(0.0),
            Epilogue::Gelu => gelu(y),
        };
    }
    let config = MatmulConfig::row_major(m, n, k).with_epilogue(epilogue);
    let op = MatmulBias::<T>::new(&g.device, config).unwrap();
    let (da, db, dbias) = (g.upload(&a, to), g.upload(&b, to), g.upload(&bias, to));
    let mut dc = DeviceBuffer::<T>::zeros(&g.device, m * n).unwrap();
    g.run(&Call4 {
        program: program("MatmulBias", true),
        op: &op,
        c: &mut dc,
        a: &da,
        b: &db,
        bias: &dbias,
    })
    .unwrap();
    let got: Vec<f64> = dc.to_vec().unwrap().into_iter().map(from).collect();
    close(&got, &want, tolerance);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn matmuls_with_bias_and_activation_match_the_cpu() {
    matmul_matches_the_reference(Epilogue::None, |x| x as f32, f64::from, 1e-4);
    matmul_matches_the_reference(Epilogue::Relu, |x| x as f32, f64::from, 1e-4);
    matmul_matches_the_reference(Epilogue::Gelu, |x| x as f32, f64::from, 1e-3);
    matmul_matches_the_reference(Epilogue::Relu, f16::from_f64, f16::to_f64, 1e-2);
    matmul_matches_the_reference(Epilogue::Gelu, bf16::from_f64, bf16::to_f64, 1e-1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_matmul_without_bias_applies_its_activation() {
    let g = gpu();
    let (m, n, k) = (16, 16, 16);
    let (a, b) = (values(m * k, 11), values(k * n, 12));
    let mut want = vec![0.0; m * n];
    reference(
        (m, n, k),
        (false, false),
        (1.0, 0.0),
        &a,
        k,
        &b,
        n,
        &mut want,
        n,
    );
    let op = Matmul::<f32>::new(
        &g.device,
        MatmulConfig::row_major(m, n, k).with_epilogue(Epilogue::Relu),
    )
    .unwrap();
    let (da, db) = (g.upload(&a, |x| x as f32), g.upload(&b, |x| x as f32));
    let mut dc = DeviceBuffer::<f32>::zeros(&g.device, m * n).unwrap();
    g.run(&Call3 {
        program: program("Matmul", false),
        op: &op,
        c: &mut dc,
        a: &da,
        b: &db,
    })
    .unwrap();
    let got: Vec<f64> = dc.to_vec().unwrap().into_iter().map(f64::from).collect();
    let want: Vec<f64> = want.into_iter().map(|x| x.max(0.0)).collect();
    close(&got, &want, 1e-4);
}

/// The eager run of `main: call op(&mut c, &a, &b)` of a row-major GEMM, and its operands.
fn eager_gemm(g: &Gpu) -> (Gemm<f32>, [DeviceBuffer<f32>; 2], Vec<f32>) {
    let (m, n, k) = (64, 48, 96);
    let op = Gemm::new(&g.device, GemmConfig::<f32>::row_major(m, n, k)).unwrap();
    let da = g.upload(&values(m * k, 13), |x| x as f32);
    let db = g.upload(&values(k * n, 14), |x| x as f32);
    let mut eager = DeviceBuffer::<f32>::zeros(&g.device, m * n).unwrap();
    g.run(&Call3 {
        program: program("CapturedGemm", false),
        op: &op,
        c: &mut eager,
        a: &da,
        b: &db,
    })
    .unwrap();
    (op, [da, db], eager.to_vec().unwrap())
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Captures `pipeline` with the capture's checks, verifies the graph against its plan and
/// replays it once, synchronized.
fn replay_verified<P: Pipeline>(g: &Gpu, pipeline: P) {
    let graph = Capture::new(&g.origin).capture(pipeline).unwrap();
    graph.verify().unwrap();
    let exec = graph.instantiate().unwrap();
    exec.launch(&g.origin).unwrap();
    g.origin.synchronize().unwrap();
}

/// Without the capture's checks: the graph holds the op's handle and workspace and replays
/// the same bits as the eager run. Passed on an H200.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_gemm_replays_bitwise_like_the_eager_run() {
    let g = gpu();
    let (op, [da, db], eager) = eager_gemm(&g);
    let mut replayed = DeviceBuffer::<f32>::zeros(&g.device, eager.len()).unwrap();
    let graph = Capture::new(&g.origin)
        .check(false)
        .capture(Call3 {
            program: program("ReplayedGemm", false),
            op: &op,
            c: &mut replayed,
            a: &da,
            b: &db,
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    for _ in 0..3 {
        exec.launch(&g.origin).unwrap();
    }
    g.origin.synchronize().unwrap();
    drop(exec);
    assert_eq!(bits(&replayed.to_vec().unwrap()), bits(&eager));
}

/// An op issued by eager runs and captures in turn (their lanes differ) keeps a handle bound
/// to each lane: after the first round nothing is bound anew, and every eager run and replay
/// gives the first run's bits. Before an op had two handles, each issue bound its one handle
/// anew (about 0.7 µs on an H100).
#[test]
#[ignore = "needs a CUDA GPU"]
fn eager_runs_and_captures_in_turn_bind_no_handle_anew() {
    let g = gpu();
    let (op, [da, db], want) = eager_gemm(&g);
    let mut eager = Eager::new(&g.origin);
    let mut capture = Capture::new(&g.origin).check(false);
    let mut c = DeviceBuffer::<f32>::zeros(&g.device, want.len()).unwrap();
    let bound = streamgraph::testing::blas_bindings;
    let mut after_first = 0;
    for round in 0..4 {
        fn step<'a>(
            op: &'a Gemm<f32>,
            c: &'a mut DeviceBuffer<f32>,
            [a, b]: [&'a DeviceBuffer<f32>; 2],
        ) -> Call3<'a, Gemm<f32>, f32> {
            let program = program("AlternatingGemm", false);
            Call3 {
                program,
                op,
                c,
                a,
                b,
            }
        }
        g.origin.fill(&mut c, 0.0).unwrap();
        eager.run(&step(&op, &mut c, [&da, &db])).unwrap();
        g.origin.synchronize().unwrap();
        assert_eq!(bits(&c.to_vec().unwrap()), bits(&want), "eager run {round}");
        g.origin.fill(&mut c, 0.0).unwrap();
        let graph = capture.capture(step(&op, &mut c, [&da, &db])).unwrap();
        let exec = graph.instantiate().unwrap();
        exec.launch(&g.origin).unwrap();
        g.origin.synchronize().unwrap();
        drop(exec);
        assert_eq!(bits(&c.to_vec().unwrap()), bits(&want), "replay {round}");
        if round == 0 {
            after_first = bound();
        }
    }
    assert_eq!(
        bound() - after_first,
        0,
        "handles bound anew in three rounds of an eager run and a capture"
    );
}

/// With the capture's checks, and `verify`: the captured graph matches the plan. (Written
/// before the creation-order node map skipped the nodes of `call` statements, it failed on an
/// H200 with "mapped to a graph node of another kind"; the node map now skips them, as the
/// stand-in driver's `calls_capture_as_planned` shows.)
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_gemm_verifies_against_its_plan() {
    let g = gpu();
    let (op, [da, db], eager) = eager_gemm(&g);
    let mut replayed = DeviceBuffer::<f32>::zeros(&g.device, eager.len()).unwrap();
    replay_verified(
        &g,
        Call3 {
            program: program("VerifiedGemm", false),
            op: &op,
            c: &mut replayed,
            a: &da,
            b: &db,
        },
    );
    assert_eq!(bits(&replayed.to_vec().unwrap()), bits(&eager));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_short_operand_is_refused_by_name_before_anything_is_issued() {
    let g = gpu();
    let op = Gemm::new(&g.device, GemmConfig::<f32>::row_major(4, 3, 2)).unwrap();
    let da = DeviceBuffer::<f32>::zeros(&g.device, 8).unwrap();
    let db = DeviceBuffer::<f32>::zeros(&g.device, 6).unwrap();
    let mut dc = DeviceBuffer::<f32>::zeros(&g.device, 11).unwrap();
    let e = g
        .run(&Call3 {
            program: program("ShortGemm", false),
            op: &op,
            c: &mut dc,
            a: &da,
            b: &db,
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("operand `c` holds 11 element(s)"), "{e}");
    assert!(e.contains("needs 12"), "{e}");
}

streamgraph::pipeline! {
    /// `c = a·b` in the body of a device `if` whose flag the pipeline sets.
    pipeline GemmInBranch<'g>(c: &mut DeviceBuffer<f32>, a: &DeviceBuffer<f32>, b: &DeviceBuffer<f32>,
                              go: &mut streamgraph::DeviceFlag, gemm: &'g Gemm<f32>) {
        stream main;
        main: fill go = 1u32;
        main: if go {
            main: call gemm(&mut c, &a, &b);
        }
    }
}

/// A GEMM in a device branch's body: captured into the conditional node's body graph,
/// verified, and replayed to the eager run's bits.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_gemm_in_a_device_branch_replays_like_the_eager_run() {
    let g = gpu();
    let (op, [da, db], eager) = eager_gemm(&g);
    let mut go = streamgraph::DeviceFlag::new(&g.device, 0).unwrap();
    let mut branch = DeviceBuffer::<f32>::zeros(&g.device, eager.len()).unwrap();
    g.run(&GemmInBranch::new(&mut branch, &da, &db, &mut go, &op))
        .unwrap();
    assert_eq!(bits(&branch.to_vec().unwrap()), bits(&eager));
    let mut replayed = DeviceBuffer::<f32>::zeros(&g.device, eager.len()).unwrap();
    replay_verified(&g, GemmInBranch::new(&mut replayed, &da, &db, &mut go, &op));
    assert_eq!(bits(&replayed.to_vec().unwrap()), bits(&eager));
}
