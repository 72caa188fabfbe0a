//! `GraphExec::update_args` on the GPU: only the launches whose values changed get new
//! parameters, the replay computes the new values, new buffers are kept alive by the
//! executable graph, and changes an argument update cannot express (a fill's value, other
//! statements) fall back to a capture and `cuGraphExecUpdate`.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::sync::OnceLock;

use common::Kernels;
use streamgraph::__private::{arg_place, fill, place};
use streamgraph::{
    capture, DeviceBuffer, Error, GraphExec, Issuer, KernelArg, LaunchConfig, Pipeline, Program,
    ProgramBuilder, Stream, StreamOptions,
};

/// `fill out = base`, then `out[i] = values[i]` for every `i`, one launch each, on one stream.
struct Stamps<'a> {
    k: &'a Kernels,
    out: &'a mut DeviceBuffer<u32>,
    base: u32,
    values: Vec<u32>,
}

fn program() -> &'static Program {
    static PROGRAM: OnceLock<&'static Program> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let mut b = ProgramBuilder::new("Stamps");
        let s = b.stream("main");
        b.fill(s, "out");
        b.launch(s, "write_value", &[("out", streamgraph::AccessMode::Write)]);
        b.build()
    })
}

impl Pipeline for Stamps<'_> {
    fn program(&self) -> &'static Program {
        program()
    }

    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![StreamOptions::default()])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let st = &program().statements;
        fill(issuer, &st[0], &self.out, self.base)?;
        let config = LaunchConfig {
            grid: 1u32.into(),
            block: 1u32.into(),
            shared_mem_bytes: 0,
        };
        for (i, value) in self.values.iter().enumerate() {
            let slot = arg_place(place(&self.out).slice(i..i + 1))?;
            issuer.launch(
                &st[1],
                &self.k.write_value,
                config,
                &[slot, KernelArg::value(value)],
            )?;
        }
        Ok(())
    }
}

const N: usize = 100;

fn setup() -> (Kernels, Stream) {
    let k = Kernels::new();
    let origin = Stream::new(&k.device, 0).unwrap();
    (k, origin)
}

/// [`Stamps`] over `out` with `base` and `values`, captured on `origin` and instantiated.
fn stamps_exec<'a>(
    k: &'a Kernels,
    origin: &Stream,
    out: &'a mut DeviceBuffer<u32>,
    base: u32,
    values: Vec<u32>,
) -> GraphExec<Stamps<'a>> {
    let pipeline = Stamps {
        k,
        out,
        base,
        values,
    };
    capture(origin, pipeline).unwrap().instantiate().unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn only_changed_launches_get_new_parameters() {
    let (k, origin) = setup();
    let mut out = DeviceBuffer::<u32>::zeros(&k.device, N).unwrap();
    let values: Vec<u32> = (0..N as u32).map(|i| 1000 + i).collect();
    let mut exec = stamps_exec(&k, &origin, &mut out, 7, values.clone());
    exec.launch(&origin).unwrap();

    // Nothing changed: nothing is set, nothing captured.
    exec.update_args_with(|_| {}).unwrap();
    let stats = exec.stats();
    assert_eq!(
        (stats.nodes_set, stats.updates, stats.args_updates),
        (0, 0, 0)
    );

    // 1 %, then 10 %, then every launch changes: exactly those nodes are set.
    let mut expected = values;
    for (round, step) in [(1u32, 100usize), (2, 10), (3, 1)] {
        let before = exec.stats();
        exec.update_args_with(|p| {
            for i in (0..N).step_by(step) {
                p.values[i] = round * 10_000 + i as u32;
            }
        })
        .unwrap();
        for i in (0..N).step_by(step) {
            expected[i] = round * 10_000 + i as u32;
        }
        let after = exec.stats();
        assert_eq!(after.nodes_set - before.nodes_set, N.div_ceil(step) as u64);
        assert_eq!(after.updates, 0, "no capture and exec update");
        assert_eq!(after.reinstantiations, 0);
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        assert_eq!(exec.pipeline().out.to_vec().unwrap(), expected);
    }
    exec.verify().unwrap();

    // `set_kernel_args` values are unknown to the comparison: the next update sets them again.
    let op = streamgraph::OpRef {
        statement: &program().statements[1],
        occurrence: 1,
    };
    let slot = exec.pipeline().out.slice(0..1);
    exec.set_kernel_args(
        op,
        &k.write_value,
        &[KernelArg::read(&slot), KernelArg::value(&5u32)],
    )
    .unwrap();
    let before = exec.stats().nodes_set;
    exec.update_args_with(|_| {}).unwrap();
    assert_eq!(exec.stats().nodes_set - before, 1);
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(exec.pipeline().out.to_vec().unwrap(), expected);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn new_buffers_are_kept_and_other_changes_capture_anew() {
    let (k, origin) = setup();
    let mut a = DeviceBuffer::<u32>::zeros(&k.device, N).unwrap();
    let mut b = DeviceBuffer::<u32>::zeros(&k.device, N).unwrap();
    let values: Vec<u32> = (0..N as u32).collect();
    let mut exec = capture(
        &origin,
        Stamps {
            k: &k,
            out: &mut a,
            base: 7,
            values: values.clone(),
        },
    )
    .unwrap()
    .instantiate()
    .unwrap();
    exec.launch(&origin).unwrap();

    // Another buffer: every launch points elsewhere, but the fill (a memset of `a`) changed
    // too, so this is a capture and an exec update.
    let previous = exec
        .update_args(Stamps {
            k: &k,
            out: &mut b,
            base: 7,
            values: values.clone(),
        })
        .unwrap();
    assert_eq!(exec.stats().updates, 1, "a changed fill captures anew");
    drop(previous);
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(exec.pipeline().out.to_vec().unwrap(), values);

    // A new fill value alone also captures anew; new launch values alone do not.
    exec.update_args_with(|p| p.base = 9).unwrap();
    assert_eq!(exec.stats().updates, 2);
    exec.update_args_with(|p| p.values[3] = 333).unwrap();
    assert_eq!(exec.stats().updates, 2);
    assert_eq!(exec.stats().args_updates, 1);
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    let mut expected = values;
    expected[3] = 333;
    assert_eq!(exec.pipeline().out.to_vec().unwrap(), expected);

    // One launch fewer: other statements, so a capture, which the driver refuses (the
    // topology changed); the graph keeps running the previous values.
    let err = exec
        .update_args_with(|p| {
            p.values.pop();
        })
        .unwrap_err();
    assert!(matches!(err, Error::UpdateRejected { .. }), "{err}");
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(exec.pipeline().out.to_vec().unwrap(), expected);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn many_updates_over_the_same_memory_never_capture_anew() {
    let (k, origin) = setup();
    let mut out = DeviceBuffer::<u32>::zeros(&k.device, N).unwrap();
    let mut exec = stamps_exec(&k, &origin, &mut out, 0, vec![0; N]);
    // The changed launches keep writing the buffer the graph holds already: holding it once
    // more per update would soon reach the bound on held sets and capture anew.
    for round in 1..=500u32 {
        exec.update_args_with(|p| p.values[round as usize % N] = round)
            .unwrap();
    }
    let stats = exec.stats();
    assert_eq!(
        (stats.nodes_set, stats.args_updates, stats.updates),
        (500, 500, 0)
    );
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    let got = exec.pipeline().out.to_vec().unwrap();
    assert_eq!(got[0], 500);
    assert_eq!(got[1], 401);
}

/// Many argument updates, each changing some launches back and forth, with nodes set by hand
/// between them: every update sets exactly the launches whose values differ from what their
/// nodes run, however often each was set before (their values are written over the ones
/// they replace). Also on the stand-in driver (`.ci/stand-in-tests`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_update_sets_exactly_the_launches_that_differ() {
    let (k, origin) = setup();
    let mut out = DeviceBuffer::<u32>::zeros(&k.device, N).unwrap();
    let mut exec = stamps_exec(&k, &origin, &mut out, 0, vec![0; N]);
    // What each node runs: `Some(v)` as the pipeline gave it, `None` after `set_kernel_args`.
    let mut runs: Vec<Option<u32>> = vec![Some(0); N];
    let mut seed = 0x2545_f491_u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    for round in 0..300u32 {
        if round % 7 == 3 {
            let i = next() as usize % N;
            let op = streamgraph::OpRef {
                statement: &program().statements[1],
                occurrence: i as u32 + 1,
            };
            let slot = exec.pipeline().out.slice(i..i + 1);
            exec.set_kernel_args(
                op,
                &k.write_value,
                &[KernelArg::read(&slot), KernelArg::value(&round)],
            )
            .unwrap();
            runs[i] = None;
        }
        // A few launches get one of four values: often the one their node runs already.
        let changes: Vec<(usize, u32)> = (0..next() % 12)
            .map(|_| (next() as usize % N, next() % 4))
            .collect();
        let before = exec.stats();
        exec.update_args_with(|p| {
            for &(i, v) in &changes {
                p.values[i] = v;
            }
        })
        .unwrap();
        let after = exec.stats();
        let values = &exec.pipeline().values;
        let differ = (0..N).filter(|&i| runs[i] != Some(values[i])).count();
        assert_eq!(
            after.nodes_set - before.nodes_set,
            differ as u64,
            "round {round}: nodes set"
        );
        assert_eq!(after.updates, 0, "round {round}: no capture anew");
        for (i, r) in runs.iter_mut().enumerate() {
            *r = Some(values[i]);
        }
    }
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
}

/// What a walk finds that parameters cannot express sends the update to a capture: a fill's
/// new value, a launch fewer (the driver then refuses the new topology); new launch values
/// alone are set in place. Reads nothing back: also on the stand-in driver
/// (`.ci/stand-in-tests`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn walks_that_meet_other_statements_capture_anew() {
    let (k, origin) = setup();
    let mut out = DeviceBuffer::<u32>::zeros(&k.device, N).unwrap();
    let mut exec = stamps_exec(&k, &origin, &mut out, 7, (0..N as u32).collect());
    exec.update_args_with(|p| p.values[3] = 333).unwrap();
    let stats = exec.stats();
    assert_eq!(
        (stats.updates, stats.args_updates, stats.nodes_set),
        (0, 1, 1)
    );
    // The fill's value: walked up to it, then captured anew and applied.
    exec.update_args_with(|p| p.base = 9).unwrap();
    assert_eq!(exec.stats().updates, 1, "a changed fill captures anew");
    // After the capture, values are compared against the new graph's.
    exec.update_args_with(|p| p.values[3] = 334).unwrap();
    let stats = exec.stats();
    assert_eq!((stats.updates, stats.args_updates), (1, 2));
    // One launch fewer: other operations, so a capture, whose topology a driver refuses (the
    // stand-in driver applies it: either way the walk sent it to a capture).
    let before = exec.stats().updates;
    match exec.update_args_with(|p| {
        p.values.pop();
    }) {
        Err(Error::UpdateRejected { .. }) => {
            // The graph runs what it ran before; the pipeline it holds has one launch fewer,
            // which `verify` reports.
            assert_eq!(exec.stats().updates, before);
            assert!(matches!(exec.verify(), Err(Error::GraphMismatch { .. })));
        }
        Ok(()) => {
            assert_eq!(exec.stats().updates, before + 1);
            exec.verify().unwrap();
        }
        Err(e) => panic!("{e}"),
    }
}

/// A parameter type without a [`streamgraph::ParamKey`]: the statements that read it are
/// walked on every argument update.
struct Tag(u32);

streamgraph::pipeline! {
    /// Statements that read parameters of their own: `x = a`, `y = b + i` for `i` in `0..n`
    /// (the last wins), `z` filled with `c`, `w = tag.0`.
    pipeline Split(
        write: &streamgraph::Kernel,
        x: &mut DeviceBuffer<u32>,
        y: &mut DeviceBuffer<u32>,
        z: &mut DeviceBuffer<u32>,
        w: &mut DeviceBuffer<u32>,
        a: u32,
        b: u32,
        n: usize,
        c: u32,
        tag: &Tag,
    ) {
        stream s;
        s: launch write<<<1, 1>>>(&mut x, a);
        for i in 0..n {
            s: launch write<<<1, 1>>>(&mut y, b + i as u32);
        }
        s: fill z = c;
        s: launch write<<<1, 1>>>(&mut w, tag.0);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn statements_whose_parameters_did_not_change_are_skipped() {
    let (k, origin) = setup();
    let zeros = || DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let (mut x, mut y, mut z, mut w) = (zeros(), zeros(), zeros(), zeros());
    let (tag, other_tag) = (Tag(7), Tag(8));
    let pipeline = Split::new(
        &k.write_value,
        &mut x,
        &mut y,
        &mut z,
        &mut w,
        1,
        10,
        3,
        5,
        &tag,
    );
    let mut exec = capture(&origin, pipeline).unwrap().instantiate().unwrap();
    let run = |exec: &streamgraph::GraphExec<Split<'_>>| {
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        let p = exec.pipeline();
        [&p.x, &p.y, &p.z, &p.w].map(|b| b.to_vec().unwrap()[0])
    };
    assert_eq!(run(&exec), [1, 12, 5, 7]);
    // The first update walks every statement (the keys the nodes run are not known yet).
    let before = exec.stats();
    exec.update_args_with(|_| {}).unwrap();
    let after = exec.stats();
    assert_eq!(
        (after.nodes_set, after.args_skipped),
        (before.nodes_set, before.args_skipped)
    );

    // Nothing changed: every launch and the fill are skipped but `w`'s, whose `tag` has no key.
    let before = exec.stats();
    exec.update_args_with(|_| {}).unwrap();
    let after = exec.stats();
    assert_eq!(after.args_skipped - before.args_skipped, 5);
    assert_eq!(after.nodes_set - before.nodes_set, 0);

    // `a` changed: its launch alone is walked (and set), the others skipped.
    let before = exec.stats();
    exec.update_args_with(|p| p.a = 2).unwrap();
    let after = exec.stats();
    assert_eq!(after.nodes_set - before.nodes_set, 1);
    assert_eq!(after.args_skipped - before.args_skipped, 4);
    assert_eq!(run(&exec), [2, 12, 5, 7]);

    // `b` changed: the loop's three launches.
    let before = exec.stats();
    exec.update_args_with(|p| p.b = 20).unwrap();
    let after = exec.stats();
    assert_eq!(after.nodes_set - before.nodes_set, 3);
    assert_eq!(after.args_skipped - before.args_skipped, 2);
    assert_eq!(run(&exec), [2, 22, 5, 7]);

    // A parameter without a key is compared: a new `tag` sets `w`'s launch.
    let before = exec.stats();
    exec.update_args_with(|p| p.tag = &other_tag).unwrap();
    assert_eq!(exec.stats().nodes_set - before.nodes_set, 1);
    assert_eq!(run(&exec), [2, 22, 5, 8]);

    // `set_kernel_args` makes a node's values unknown: the next update walks it again, and
    // brings it back to the pipeline's value.
    let op = streamgraph::OpRef {
        statement: &Split::PROGRAM.statements[0],
        occurrence: 1,
    };
    let slot = exec.pipeline().x.slice(0..1);
    exec.set_kernel_args(
        op,
        &k.write_value,
        &[KernelArg::read(&slot), KernelArg::value(&99u32)],
    )
    .unwrap();
    assert_eq!(run(&exec), [99, 22, 5, 8]);
    let before = exec.stats();
    exec.update_args_with(|_| {}).unwrap();
    assert_eq!(exec.stats().nodes_set - before.nodes_set, 1);
    assert_eq!(run(&exec), [2, 22, 5, 8]);

    // A fill's new value is captured anew, as before; then the keys are walked for again.
    exec.update_args_with(|p| p.c = 6).unwrap();
    assert_eq!(exec.stats().updates, 1);
    assert_eq!(run(&exec), [2, 22, 6, 8]);
    exec.update_args_with(|p| p.a = 3).unwrap();
    exec.update_args_with(|p| p.a = 4).unwrap();
    assert_eq!(run(&exec), [4, 22, 6, 8]);
    exec.verify().unwrap();
}

streamgraph::pipeline! {
    /// A fork and join around a temporary: `t = a` on a side stream, then `out[0..n] = t`
    /// copied and `out[n] = b`, each read by the parameters it names.
    pipeline Keyed(
        write: &streamgraph::Kernel,
        out: &mut DeviceBuffer<u32>,
        a: u32,
        b: u32,
        n: usize,
    ) {
        stream s;
        stream side;
        temp t: u32[1];
        side: wait_stream s;
        side: launch write<<<1, 1>>>(&mut t, a);
        s: wait_stream side;
        for i in 0..n {
            s: copy out.slice(i..i + 1) <- t;
        }
        s: launch write<<<1, 1>>>(&mut out.slice_mut(n..n + 1), b);
    }
}

/// What `pipeline!` says of a pipeline's walk (no GPU needed).
#[test]
fn keys_decide_the_walk_of_pipelines_whose_expressions_read_their_parameters() {
    // `Split`'s walk is told, though `tag` has no key; `Stamps` is written by hand, so it
    // has the default.
    let keyed = [Keyed::KEYED_WALK, Split::KEYED_WALK, Stamps::KEYED_WALK];
    assert_eq!(keyed, [true, true, false]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_update_in_which_no_key_changed_walks_nothing() {
    let (k, origin) = setup();
    let mut out = DeviceBuffer::<u32>::zeros(&k.device, 4).unwrap();
    let pipeline = Keyed::new(&k.write_value, &mut out, 5, 9, 3);
    let mut exec = capture(&origin, pipeline).unwrap().instantiate().unwrap();
    let run = |exec: &streamgraph::GraphExec<Keyed<'_>>| {
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        exec.pipeline().out.to_vec().unwrap()
    };
    assert_eq!(run(&exec), [5, 5, 5, 9]);
    // The first update walks everything; later ones in which nothing changed walk nothing and
    // leave the five launches and copies as they are.
    exec.update_args_with(|_| {}).unwrap();
    for _ in 0..2 {
        let before = exec.stats();
        exec.update_args_with(|_| {}).unwrap();
        let after = exec.stats();
        assert_eq!(after.args_skipped - before.args_skipped, 5);
        assert_eq!(after.nodes_set, before.nodes_set);
    }
    // A changed key walks, and sets only what reads it.
    let before = exec.stats();
    exec.update_args_with(|p| p.b = 10).unwrap();
    let after = exec.stats();
    assert_eq!(after.nodes_set - before.nodes_set, 1);
    assert_eq!(after.args_skipped - before.args_skipped, 4);
    assert_eq!(run(&exec), [5, 5, 5, 10]);
    // `set_kernel_args` makes a node's values unknown: the next update walks again and
    // brings it back, then nothing is walked again.
    let op = streamgraph::OpRef {
        statement: &Keyed::PROGRAM.statements[Keyed::PROGRAM.statements.len() - 1],
        occurrence: 1,
    };
    let slot = exec.pipeline().out.slice(3..4);
    exec.set_kernel_args(
        op,
        &k.write_value,
        &[KernelArg::read(&slot), KernelArg::value(&77u32)],
    )
    .unwrap();
    assert_eq!(run(&exec), [5, 5, 5, 77]);
    let before = exec.stats();
    exec.update_args_with(|_| {}).unwrap();
    assert_eq!(exec.stats().nodes_set - before.nodes_set, 1);
    assert_eq!(run(&exec), [5, 5, 5, 10]);
    let before = exec.stats();
    exec.update_args_with(|_| {}).unwrap();
    assert_eq!(exec.stats().args_skipped - before.args_skipped, 5);
    exec.verify().unwrap();
}

streamgraph::pipeline! {
    /// Two loops of launches on two streams, each reading a parameter of its own:
    /// `out[i] = a + i` and `out[n + i] = b + i` for `i` in `0..n`.
    pipeline Looped(write: &streamgraph::Kernel, out: &mut DeviceBuffer<u32>, a: u32, b: u32, n: usize) {
        stream s;
        stream t;
        for i in 0..n {
            s: launch write<<<1, 1>>>(&mut out.slice_mut(i..i + 1), a + i as u32);
        }
        t: wait_stream s;
        for i in 0..n {
            t: launch write<<<1, 1>>>(&mut out.slice_mut(n + i..n + i + 1), b + i as u32);
        }
        s: wait_stream t;
    }
}

/// `update_args_with(f)` on `exec`: the nodes it set and the operations it skipped.
fn counted<P: Pipeline>(
    exec: &mut streamgraph::GraphExec<P>,
    f: impl FnOnce(&mut P),
) -> (u64, u64) {
    let before = exec.stats();
    exec.update_args_with(f).unwrap();
    let after = exec.stats();
    (
        after.nodes_set - before.nodes_set,
        after.args_skipped - before.args_skipped,
    )
}

/// A loop none of whose parameters changed is skipped whole; a node set from elsewhere
/// inside it makes the next update walk it again (also on the stand-in driver,
/// `.ci/stand-in-tests`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn loops_whose_parameters_did_not_change_are_skipped_whole() {
    let (k, origin) = setup();
    let n = 4;
    let mut out = DeviceBuffer::<u32>::zeros(&k.device, 2 * n).unwrap();
    let pipeline = Looped::new(&k.write_value, &mut out, 10, 20, n);
    let mut exec = capture(&origin, pipeline).unwrap().instantiate().unwrap();
    assert_eq!(
        counted(&mut exec, |_| {}),
        (0, 0),
        "the first walk learns the keys"
    );
    assert_eq!(counted(&mut exec, |p| p.a = 11), (4, 4));
    assert_eq!(counted(&mut exec, |p| p.b = 21), (4, 4));
    assert_eq!(counted(&mut exec, |_| {}), (0, 8));
    // A node of the second loop set by hand: the loop is walked, the node brought back.
    let op = streamgraph::OpRef {
        statement: &Looped::PROGRAM.statements[2],
        occurrence: 2,
    };
    let slot = exec.pipeline().out.slice(5..6);
    exec.set_kernel_args(
        op,
        &k.write_value,
        &[KernelArg::read(&slot), KernelArg::value(&99u32)],
    )
    .unwrap();
    assert_eq!(counted(&mut exec, |_| {}), (1, 7));
    assert_eq!(counted(&mut exec, |p| p.a = 12), (4, 4));
    assert_eq!(counted(&mut exec, |_| {}), (0, 8));
    exec.verify().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn loops_whose_parameters_did_not_change_are_skipped_whole_values() {
    let (k, origin) = setup();
    let n = 4;
    let mut out = DeviceBuffer::<u32>::zeros(&k.device, 2 * n).unwrap();
    let pipeline = Looped::new(&k.write_value, &mut out, 10, 20, n);
    let mut exec = capture(&origin, pipeline).unwrap().instantiate().unwrap();
    let run = |exec: &streamgraph::GraphExec<Looped<'_>>| {
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        exec.pipeline().out.to_vec().unwrap()
    };
    assert_eq!(run(&exec), [10, 11, 12, 13, 20, 21, 22, 23]);
    for (a, b) in [(10, 20), (30, 20), (30, 40), (30, 40), (50, 40)] {
        exec.update_args_with(|p| (p.a, p.b) = (a, b)).unwrap();
        let want: Vec<u32> = (0..4).map(|i| a + i).chain((0..4).map(|i| b + i)).collect();
        assert_eq!(run(&exec), want, "a = {a}, b = {b}");
    }
}

streamgraph::pipeline! {
    /// Loop `i` of `0..n` runs an inner loop of `i` launches (`out[j] = a + i · n + j`), the
    /// first run issuing nothing, so that the first two runs begin at one place; then a
    /// branch that reads `c` and issues nothing while `c <= 100`.
    pipeline Triangle(write: &streamgraph::Kernel, out: &mut DeviceBuffer<u32>, a: u32, c: u32, n: usize) {
        stream s;
        stream t;
        for i in 0..n {
            for j in 0..i {
                s: launch write<<<1, 1>>>(&mut out.slice_mut(j..j + 1), a + (i * n + j) as u32);
            }
            if c > 100 {
                t: wait_stream s;
            }
        }
        s: wait_stream t;
    }
}

/// Two runs of an inner loop that begin at one place in one walk cannot be told apart: they
/// are walked, the runs after them skipped whole, and nothing is captured again (also on the
/// stand-in driver, `.ci/stand-in-tests`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn loop_runs_that_begin_at_one_place_are_walked() {
    let (k, origin) = setup();
    let mut out = DeviceBuffer::<u32>::zeros(&k.device, 4).unwrap();
    let pipeline = Triangle::new(&k.write_value, &mut out, 10, 1, 4);
    let mut exec = capture(&origin, pipeline).unwrap().instantiate().unwrap();
    exec.update_args_with(|_| {}).unwrap();
    assert_eq!(exec.stats().updates, 0, "{:?}", exec.stats());
    for c in [2, 3] {
        // The outer loop reads `c`: it runs; the inner runs 0 and 1 are walked (run 1's launch
        // skipped on its own), runs 2 and 3 skipped whole.
        assert_eq!(
            counted(&mut exec, |p| p.c = c),
            (0, 6),
            "c = {c}: {:?}",
            exec.stats()
        );
    }
    assert_eq!(counted(&mut exec, |p| p.a = 20), (6, 0));
    assert_eq!(exec.stats().updates, 0, "nothing captured again");
    exec.verify().unwrap();
}
