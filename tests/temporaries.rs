//! Temporaries through the runtime, with pipelines written by hand over programs built with
//! `ProgramBuilder` (the `Pipeline` trait implemented directly, as `pipeline!` generates it):
//! the plan's placement checks and peak bytes without a GPU; eager runs, captures, replays,
//! verification and graph memory on one.
// Tests fail loudly on purpose: an unwrap names the failing call.
#![allow(clippy::unwrap_used)]

mod common;

use std::borrow::Cow;

use streamgraph::__private::{copy, fill, temp_alloc, temp_free, temporaries};
use streamgraph::{
    capture, DeviceBuffer, Eager, Error, Issuer, Pipeline, Plan, Program, ProgramBuilder,
    Statement, Stream, StreamOptions, UpdateRejection,
};

/// `main` streams through three temporaries of `n` f32s: `a = v`, `b <- a`, `free a`,
/// `c <- b`, `free b`, `x <- c`, `free c`. With one side stream, `b` is written on `side`
/// (after a wait on `main`), so `a`'s and `b`'s lives overlap on two streams.
struct Chain<'a> {
    program: &'static Program,
    x: &'a mut DeviceBuffer<f32>,
    v: f32,
    /// Temporary `b`'s length (equal to `x`'s for a pipeline that runs).
    len_b: usize,
}

/// The program of [`Chain`]: on one stream, or with `b` written on `side`; `ordered` false
/// leaves out the wait that orders `side` after `b`'s allocation on `main`.
fn chain_program(two_streams: bool, ordered: bool) -> &'static Program {
    let mut pb = ProgramBuilder::new(if two_streams { "Chain2" } else { "Chain" });
    let main = pb.stream("main");
    let side = if two_streams { pb.stream("side") } else { main };
    let [ta, tb, tc] = ["a", "b", "c"].map(|t| pb.temp(t, "f32"));
    pb.alloc(main, ta);
    pb.fill(main, "a");
    pb.alloc(main, tb);
    if two_streams && ordered {
        pb.wait_stream(side, main);
    }
    pb.copy(side, "b", "a");
    if two_streams {
        pb.wait_stream(main, side);
    }
    pb.free(main, ta);
    pb.alloc(main, tc);
    pb.copy(main, "c", "b");
    pb.free(main, tb);
    pb.copy(main, "x", "c");
    pb.free(main, tc);
    pb.build()
}

impl Pipeline for Chain<'_> {
    fn program(&self) -> &'static Program {
        self.program
    }

    fn stream_options(&self) -> Cow<'static, [StreamOptions]> {
        Cow::Owned(vec![StreamOptions::DEFAULT; self.program.streams.len()])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let s: &'static [Statement] = self.program.statements;
        let find = |kind: &str, from: usize| {
            (from..s.len())
                .find(|&i| s[i].text.starts_with(kind))
                .unwrap()
        };
        let n = self.x.len();
        temporaries(issuer, |issuer, scope| {
            let mut a = temp_alloc::<_, f32>(issuer, scope, &s[find("alloc a", 0)], n)?;
            fill(issuer, &s[find("fill a", 0)], &&mut a, self.v)?;
            let mut b = temp_alloc::<_, f32>(issuer, scope, &s[find("alloc b", 0)], self.len_b)?;
            let at = find("copy b", 0);
            if at > 0 && s[at - 1].text.starts_with("wait_stream") {
                issuer.wait_stream(&s[at - 1])?;
            }
            copy(issuer, &s[at], &&mut b, &a)?;
            if s[at + 1].text.starts_with("wait_stream") {
                issuer.wait_stream(&s[at + 1])?;
            }
            temp_free(issuer, &s[find("free a", 0)], a)?;
            let mut c = temp_alloc::<_, f32>(issuer, scope, &s[find("alloc c", 0)], n)?;
            copy(issuer, &s[find("copy c", 0)], &&mut c, &b)?;
            temp_free(issuer, &s[find("free b", 0)], b)?;
            copy(issuer, &s[find("copy x", 0)], &self.x, &c)?;
            temp_free(issuer, &s[find("free c", 0)], c)
        })
    }
}

fn plan_of(program: &'static Program, n: usize, len_b: usize) -> Result<Plan, Error> {
    let mut x = DeviceBuffer::for_planning(n)?;
    Plan::build(&Chain {
        program,
        x: &mut x,
        v: 1.0,
        len_b,
    })
}

#[test]
fn the_plan_lists_each_temporary_and_the_most_bytes_held_at_once() {
    let plan = plan_of(chain_program(false, true), 256, 256).unwrap();
    let temps = plan.temporaries();
    assert_eq!(temps.len(), 3);
    assert!(temps.iter().all(|t| t.bytes == 1024 && t.free.is_some()));
    assert_eq!(temps.iter().map(|t| t.temp).collect::<Vec<_>>(), [0, 1, 2]);
    // `a` is freed before `c` is allocated: at most two live at once.
    assert_eq!(plan.temp_peak_bytes(), 2048);
    plan.check_races().unwrap();
}

#[test]
fn temporaries_of_other_sizes_count_by_their_bytes() {
    // `b` is 4× larger: peak is `a + b` or `b + c`, both 1 KiB + 4 KiB.
    let plan = plan_of(chain_program(false, true), 256, 1024);
    // The copy `b <- a` needs equal lengths; the plan refuses the mismatch itself.
    assert!(matches!(plan, Err(Error::Statement { .. })), "{plan:?}");
    let plan = plan_of(chain_program(false, true), 256, 256).unwrap();
    assert_eq!(plan.temp_peak_bytes(), 2 * 1024);
}

#[test]
fn temporaries_on_two_streams_are_ordered_by_their_allocation_and_release() {
    let plan = plan_of(chain_program(true, true), 64, 64).unwrap();
    plan.check_races().unwrap();
    assert_eq!(plan.temp_peak_bytes(), 2 * 256);
}

#[test]
fn a_use_not_ordered_after_the_allocation_is_a_race_with_it() {
    let plan = plan_of(chain_program(true, false), 64, 64).unwrap();
    let err = plan.check_races().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("alloc b"), "{text}");
    assert!(text.contains("copy b <- a"), "{text}");
}

/// Allocates `a`, writes it, and forgets to free it (or frees `a` with `b`'s statement).
struct Leaky<'a> {
    program: &'static Program,
    x: &'a mut DeviceBuffer<f32>,
    wrong_free: bool,
}

impl Pipeline for Leaky<'_> {
    fn program(&self) -> &'static Program {
        self.program
    }
    fn stream_options(&self) -> Cow<'static, [StreamOptions]> {
        Cow::Owned(vec![StreamOptions::DEFAULT; self.program.streams.len()])
    }
    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let s = self.program.statements;
        temporaries(issuer, |issuer, scope| {
            let mut a = temp_alloc::<_, f32>(issuer, scope, &s[0], self.x.len())?;
            fill(issuer, &s[1], &&mut a, 1.0)?;
            copy(issuer, &s[2], &self.x, &a)?;
            if self.wrong_free {
                temp_free(issuer, &s[4], a)?;
            }
            Ok(())
        })
    }
}

fn leaky_program() -> &'static Program {
    let mut pb = ProgramBuilder::new("Leaky");
    let main = pb.stream("main");
    let ta = pb.temp("a", "f32");
    let tb = pb.temp("b", "f32");
    pb.alloc(main, ta);
    pb.fill(main, "a");
    pb.copy(main, "x", "a");
    pb.free(main, ta);
    pb.free(main, tb);
    pb.build()
}

#[test]
fn a_temporary_never_freed_or_freed_as_another_is_refused() {
    let program = leaky_program();
    let mut x = DeviceBuffer::for_planning(16).unwrap();
    let err = Plan::build(&Leaky {
        program,
        x: &mut x,
        wrong_free: false,
    })
    .unwrap_err();
    assert!(err.to_string().contains("never freed"), "{err}");
    let err = Plan::build(&Leaky {
        program,
        x: &mut x,
        wrong_free: true,
    })
    .unwrap_err();
    assert!(err.to_string().contains("Free"), "{err}");
}

#[test]
fn issuers_that_do_not_run_temporaries_refuse_them() {
    let program = leaky_program();
    let mut x = DeviceBuffer::for_planning(16).unwrap();
    let p = Leaky {
        program,
        x: &mut x,
        wrong_free: true,
    };
    struct Refusing;
    impl Issuer for Refusing {
        fn launch(
            &mut self,
            _: &'static Statement,
            _: &streamgraph::Kernel,
            _: streamgraph::LaunchConfig,
            _: &[streamgraph::KernelArg<'_>],
        ) -> Result<(), Error> {
            Ok(())
        }
        fn copy(
            &mut self,
            _: &'static Statement,
            _: streamgraph::MemoryMut<'_>,
            _: streamgraph::MemoryRef<'_>,
        ) -> Result<(), Error> {
            Ok(())
        }
        fn fill(
            &mut self,
            _: &'static Statement,
            _: streamgraph::MemoryMut<'_>,
            _: streamgraph::FillPattern,
        ) -> Result<(), Error> {
            Ok(())
        }
        fn host(&mut self, _: &'static Statement, _: streamgraph::HostFn) -> Result<(), Error> {
            Ok(())
        }
        fn record(&mut self, _: &'static Statement) -> Result<(), Error> {
            Ok(())
        }
        fn wait(&mut self, _: &'static Statement) -> Result<(), Error> {
            Ok(())
        }
        fn wait_stream(&mut self, _: &'static Statement) -> Result<(), Error> {
            Ok(())
        }
    }
    let err = p.issue(&mut Refusing).unwrap_err();
    assert!(err.to_string().contains("temporaries"), "{err}");
}

#[test]
fn without_a_driver_an_eager_run_with_temporaries_is_a_typed_error() {
    if Stream::on(None, 0).is_ok() {
        return; // a driver is present: the GPU tests below cover it
    }
    assert!(matches!(
        Stream::on(None, 0),
        Err(Error::NoDriver { .. } | Error::NoDevice)
    ));
}

/// The granule in which driver 580 reserves graph memory.
const GRANULE: u64 = 32 << 20;

/// Runs [`Chain`] eagerly and captured; both must leave `x == v`, and the graph's memory
/// high-water must agree with the plan's peak.
#[test]
#[ignore = "needs a CUDA GPU"]
fn eager_and_replayed_temporaries_give_the_same_values_values() {
    let _serial = common::serial();
    let stream = Stream::on(None, 0).unwrap();
    let device = stream.device();
    // Temporaries of 32 MiB: graph memory is reserved in 32 MiB granules on driver 580.
    for (two, n) in [(false, 8 << 20), (true, 8 << 20), (true, 1 << 16)] {
        let program = chain_program(two, true);
        let mut x = DeviceBuffer::<f32>::zeros(&device, n).unwrap();
        let mut eager = Eager::new(&stream);
        eager.check(true);
        for v in [1.0, 2.0] {
            eager
                .run(&Chain {
                    program,
                    x: &mut x,
                    v,
                    len_b: n,
                })
                .unwrap();
            assert_eq!(x.to_vec_on(&stream).unwrap(), vec![v; n]);
        }

        device.synchronize().unwrap();
        device.trim_graph_memory().unwrap();
        device.reset_graph_memory_high().unwrap();
        let plan = plan_of(program, n, n).unwrap();
        let graph = capture(
            &stream,
            Chain {
                program,
                x: &mut x,
                v: 3.0,
                len_b: n,
            },
        )
        .unwrap();
        graph.verify().unwrap();
        let exec = graph.instantiate().unwrap();
        for _ in 0..3 {
            exec.launch(&stream).unwrap();
        }
        stream.synchronize().unwrap();
        assert_eq!(exec.pipeline().x.to_vec_on(&stream).unwrap(), vec![3.0; n]);
        let memory = device.graph_memory().unwrap();
        let peak = plan.temp_peak_bytes() as u64;
        eprintln!("two streams {two}: plan peak {peak} B, graph memory {memory:?}");
        assert!(memory.used_high >= peak, "{memory:?} vs {peak}");
        // The driver reserves graph memory in granules of 32 MiB; past that it holds exactly
        // the plan's peak (`a`'s memory serves `c`).
        assert!(
            memory.used_high <= peak.next_multiple_of(GRANULE),
            "{memory:?} vs {peak}"
        );
        exec.verify().unwrap();
    }
}

/// Captures [`Chain`] on two streams and checks the graph against the plan (memory nodes by
/// address), then tries both updates. Reads nothing back: runs on the stand-in driver too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn captured_temporaries_are_memory_nodes_verified_and_kept_across_updates() {
    let _serial = common::serial();
    let stream = Stream::on(None, 0).unwrap();
    let device = stream.device();
    let program = chain_program(true, true);
    let n = 4096;
    let mut x = DeviceBuffer::<f32>::zeros(&device, n).unwrap();
    let graph = capture(
        &stream,
        Chain {
            program,
            x: &mut x,
            v: 1.0,
            len_b: n,
        },
    )
    .unwrap();
    let report = graph.verify().unwrap();
    eprintln!("{report:?}");
    let mut exec = graph.instantiate().unwrap();
    assert_eq!(exec.temp_bytes(), 3 * n * 4);
    exec.launch(&stream).unwrap();
    // The same arguments: nothing to set, the memory nodes untouched.
    exec.update_args_with(|_| {}).unwrap();
    // A fill's value changed: that needs a new capture, which is not applied in place.
    let err = exec.update_args_with(|p| p.v = 5.0).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UpdateRejected {
                reason: UpdateRejection::MemoryNodes,
                ..
            }
        ),
        "{err}"
    );
    let err = exec.update_with(|p| p.v = 6.0).unwrap_err();
    assert!(err.to_string().contains("temporaries"), "{err}");
    // Instantiating the new capture instead works.
    exec.reinstantiate_on_topology_change(true);
    exec.update_with(|p| p.v = 7.0).unwrap();
    exec.launch(&stream).unwrap();
    assert_eq!(exec.stats().reinstantiations, 1);
    exec.verify().unwrap();
    stream.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_reinstantiated_graph_with_temporaries_runs_the_new_values() {
    let _serial = common::serial();
    let stream = Stream::on(None, 0).unwrap();
    let device = stream.device();
    let program = chain_program(true, true);
    let n = 4096;
    let mut x = DeviceBuffer::<f32>::zeros(&device, n).unwrap();
    let mut exec = capture(
        &stream,
        Chain {
            program,
            x: &mut x,
            v: 1.0,
            len_b: n,
        },
    )
    .unwrap()
    .instantiate()
    .unwrap();
    exec.reinstantiate_on_topology_change(true);
    exec.update_with(|p| p.v = 7.0).unwrap();
    exec.launch(&stream).unwrap();
    assert_eq!(exec.pipeline().x.to_vec_on(&stream).unwrap(), vec![7.0; n]);
}

/// With `Capture::own_temp_memory`, [`Chain`]'s temporaries sit in memory the graph owns:
/// no memory nodes (the allocations and releases verify as operations without nodes), the
/// graph's memory its layout's block in 2 MiB steps, and a capture again (a fill's value
/// changed) applied in place, without a new instantiation. Reads nothing back: runs on the
/// stand-in driver too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn temporaries_in_a_graphs_own_memory_make_no_memory_nodes() {
    let _serial = common::serial();
    let stream = Stream::on(None, 0).unwrap();
    let device = stream.device();
    let program = chain_program(true, true);
    let n = 1 << 20; // 4 MiB each; `a` and `b` live at once, `c` in `a`'s place
    let plan = plan_of(program, n, n).unwrap();
    assert_eq!(plan.temp_layout(256).extent, plan.temp_peak_bytes());
    let mut x = DeviceBuffer::<f32>::zeros(&device, n).unwrap();
    let graph = streamgraph::Capture::new(&stream)
        .own_temp_memory(true)
        .capture(Chain {
            program,
            x: &mut x,
            v: 1.0,
            len_b: n,
        })
        .unwrap();
    let report = graph.verify().unwrap();
    assert_eq!(report.operations, plan.len());
    let mut exec = graph.instantiate().unwrap();
    assert_eq!(exec.temp_bytes(), 3 * n * 4);
    assert_eq!(exec.temp_memory(), 8 << 20);
    exec.launch(&stream).unwrap();
    // A fill's value changed: captured again and applied in place (no memory nodes).
    exec.update_args_with(|p| p.v = 5.0).unwrap();
    exec.update_with(|p| p.v = 6.0).unwrap();
    assert_eq!(
        (exec.stats().updates, exec.stats().reinstantiations),
        (2, 0)
    );
    assert_eq!(exec.temp_memory(), 8 << 20);
    exec.verify().unwrap();
    // Another capture gets memory of its own.
    let mut y = DeviceBuffer::<f32>::zeros(&device, n).unwrap();
    let other = streamgraph::Capture::new(&stream)
        .own_temp_memory(true)
        .capture(Chain {
            program,
            x: &mut y,
            v: 2.0,
            len_b: n,
        })
        .unwrap()
        .instantiate()
        .unwrap();
    assert_eq!(other.temp_memory(), 8 << 20);
    stream.synchronize().unwrap();
}

/// [`Chain`] on one and two streams in a graph's own memory: replays leave what eager runs
/// leave, including after an update applied in place; the device's free memory falls by the
/// graph's memory (about the plan's peak), and no graph memory is used.
#[test]
#[ignore = "needs a CUDA GPU"]
fn temporaries_in_a_graphs_own_memory_replay_like_eager_runs_values() {
    let _serial = common::serial();
    let stream = Stream::on(None, 0).unwrap();
    let device = stream.device();
    for (two, n) in [(false, 8 << 20), (true, 8 << 20), (true, 1 << 16)] {
        let program = chain_program(two, true);
        let plan = plan_of(program, n, n).unwrap();
        let mut x = DeviceBuffer::<f32>::zeros(&device, n).unwrap();
        device.synchronize().unwrap();
        device.trim_graph_memory().unwrap();
        let (free_before, _) = device.memory_info().unwrap();
        let mut exec = streamgraph::Capture::new(&stream)
            .own_temp_memory(true)
            .capture(Chain {
                program,
                x: &mut x,
                v: 3.0,
                len_b: n,
            })
            .unwrap()
            .instantiate()
            .unwrap();
        for _ in 0..3 {
            exec.launch(&stream).unwrap();
        }
        stream.synchronize().unwrap();
        assert_eq!(exec.pipeline().x.to_vec_on(&stream).unwrap(), vec![3.0; n]);
        exec.update_with(|p| p.v = 4.0).unwrap();
        exec.launch(&stream).unwrap();
        assert_eq!(exec.pipeline().x.to_vec_on(&stream).unwrap(), vec![4.0; n]);
        assert_eq!(exec.stats().reinstantiations, 0);
        let (free_after, _) = device.memory_info().unwrap();
        let peak = plan.temp_peak_bytes();
        let held = exec.temp_memory();
        eprintln!(
            "two streams {two}: plan peak {peak} B, the graph's memory {held} B, free memory {} B less",
            free_before.saturating_sub(free_after)
        );
        assert_eq!(held, peak.next_multiple_of(2 << 20));
        assert_eq!(device.graph_memory().unwrap().used, 0);
        assert!(free_before.saturating_sub(free_after) <= held + (8 << 20));
        exec.verify().unwrap();
    }
}
