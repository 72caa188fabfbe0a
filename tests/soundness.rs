//! Regression tests for undefined behaviour from safe code: each test is a program without
//! `unsafe` that corrupted memory, read torn data or kept a stream capturing before the holes
//! were closed. The ones the type system closes are compile-fail cases in `tests/ui/`
//! (`unsafe_memory_impl`, `memory_ref_fields`, `memory_ref_from_raw`, `bool_buffer`,
//! `write_shared_kernel_arg`, `copy_into_shared_pinned`, `view_not_copy`, and writes through
//! shared borrows: `copy_into_shared_device_view`, `copy_into_shared_pinned_view`,
//! `write_shared_under_mut`, `write_shared_alias`; `tests/write_borrows.rs` plans the writes
//! that go through exclusive borrows).
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use common::{ns, single, Kernels};
use streamgraph::__private::{arg_value, arg_write, copy, fill};
use streamgraph::testing::RandomOptions;
use streamgraph::testing::RandomProgram;
use streamgraph::ProgramBuilder;
use streamgraph::{
    capture, AccessMode, DeviceBuffer, Eager, Error, Issuer, Kernel, KernelArg, OpRef,
    PinnedBuffer, Pipeline, Plan, Program, Stream, StreamOptions,
};

/// A pipeline written by hand: one stream, statements chosen by `body`.
struct Hand<F> {
    program: &'static Program,
    body: F,
}

impl<F> Pipeline for Hand<F>
where
    F: Fn(&'static Program, &mut dyn Issuer) -> Result<(), Error>,
{
    fn program(&self) -> &'static Program {
        self.program
    }
    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![StreamOptions::default(); self.program.streams.len()])
    }
    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let mut dynamic = Dyn(issuer);
        (self.body)(self.program, &mut dynamic)
    }
}

/// Forwards an unsized issuer as `dyn Issuer`.
struct Dyn<'i, I: ?Sized>(&'i mut I);

impl<I: Issuer + ?Sized> Issuer for Dyn<'_, I> {
    fn launch(
        &mut self,
        stmt: &'static streamgraph::Statement,
        kernel: &Kernel,
        config: streamgraph::LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<(), Error> {
        self.0.launch(stmt, kernel, config, args)
    }
    fn copy(
        &mut self,
        stmt: &'static streamgraph::Statement,
        dst: streamgraph::MemoryMut<'_>,
        src: streamgraph::MemoryRef<'_>,
    ) -> Result<(), Error> {
        self.0.copy(stmt, dst, src)
    }
    fn alloc<'s>(
        &mut self,
        stmt: &'static streamgraph::Statement,
        scope: streamgraph::Scope<'s>,
        bytes: usize,
    ) -> Result<streamgraph::TempMemory<'s>, Error> {
        self.0.alloc(stmt, scope, bytes)
    }
    fn free(
        &mut self,
        stmt: &'static streamgraph::Statement,
        memory: streamgraph::TempMemory<'_>,
    ) -> Result<(), Error> {
        self.0.free(stmt, memory)
    }
    fn fill(
        &mut self,
        stmt: &'static streamgraph::Statement,
        dst: streamgraph::MemoryMut<'_>,
        pattern: streamgraph::FillPattern,
    ) -> Result<(), Error> {
        self.0.fill(stmt, dst, pattern)
    }
    fn host(
        &mut self,
        stmt: &'static streamgraph::Statement,
        f: streamgraph::HostFn,
    ) -> Result<(), Error> {
        self.0.host(stmt, f)
    }
    fn record(&mut self, stmt: &'static streamgraph::Statement) -> Result<(), Error> {
        self.0.record(stmt)
    }
    fn wait(&mut self, stmt: &'static streamgraph::Statement) -> Result<(), Error> {
        self.0.wait(stmt)
    }
    fn wait_stream(&mut self, stmt: &'static streamgraph::Statement) -> Result<(), Error> {
        self.0.wait_stream(stmt)
    }
}

/// `main: launch k(&mut x)`.
fn one_launch(name: &str) -> &'static Program {
    let mut b = ProgramBuilder::new(name);
    let main = b.stream("main");
    b.launch(main, "k", &[("x", AccessMode::Write)]);
    b.build()
}

// ---- hole 12: sizes, offsets and indices from users are checked (CPU) ----

#[test]
fn plan_only_sizes_are_checked_not_wrapped() {
    assert!(matches!(
        DeviceBuffer::<u32>::for_planning(usize::MAX),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        PinnedBuffer::<u64>::for_planning(usize::MAX / 4),
        Err(Error::InvalidArgument(_))
    ));
    let x = DeviceBuffer::<u64>::for_planning(16).unwrap();
    assert!(x.try_slice(4..17).is_err());
    assert!(x.try_slice(usize::MAX..).is_err());
    assert!(x.try_slice(..=usize::MAX).is_err());
    assert_eq!(x.try_slice(4..8).unwrap().len(), 4);
    // Reading a plan-only buffer back is a typed error, before any driver call or allocation.
    assert!(matches!(x.to_vec(), Err(Error::PlanningOnly { .. })));
    let huge = DeviceBuffer::<u8>::for_planning(1 << 40).unwrap();
    assert!(matches!(huge.to_vec(), Err(Error::PlanningOnly { .. })));
    // Many huge plan-only buffers get distinct ranges until the space runs out, never wrap.
    let mut last = 0u64;
    for _ in 0..64 {
        match DeviceBuffer::<u8>::for_planning(1 << 62) {
            Ok(b) => {
                assert!(b.device_ptr() > last, "planning addresses wrapped");
                last = b.device_ptr();
            }
            Err(e) => {
                assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
                break;
            }
        }
    }
}

#[test]
fn verify_and_equivalence_reject_edges_outside_the_plan() {
    let program = one_launch("Edges");
    let mut x = DeviceBuffer::<u32>::for_planning(4).unwrap();
    let x = &mut x;
    let k = Kernel::for_planning("k");
    let p = Hand {
        program,
        body: |program: &'static Program, issuer: &mut dyn Issuer| {
            let n = 1u32;
            issuer.launch(
                &program.statements[0],
                &k,
                single(),
                &[arg_write(&x), arg_value(&n)],
            )
        },
    };
    let plan = Plan::build(&p).unwrap();
    for edges in [[(0, 10_000_000)], [(usize::MAX, 0)], [(0, usize::MAX)]] {
        let set: BTreeSet<_> = edges.into_iter().collect();
        let e = streamgraph::testing::verify_edges(&plan, &set).unwrap_err();
        assert!(
            e.to_string()
                .contains("names an operation the plan does not have"),
            "{e}"
        );
        assert!(!plan.same_happens_before(&set, 1));
    }
    assert!(!plan.same_happens_before(&BTreeSet::new(), usize::MAX));
}

#[test]
fn random_options_with_huge_counts_are_clamped() {
    let options = RandomOptions {
        events: (0, usize::MAX),
        streams: (usize::MAX - 1, usize::MAX),
        max_statements: 64,
        ..RandomOptions::default()
    };
    let p = RandomProgram::with_options(7, options);
    assert!(p.program.streams.len() <= RandomProgram::MAX_STREAMS);
    assert!(p.program.events.len() <= RandomProgram::MAX_EVENTS);
}

// ---- GPU: holes the runtime closes ----

/// Hole 2: a copy into pinned memory is still running when `Stream::copy` returns; reading
/// the buffer waits for it, and a copy into a buffer whose slice is alive is refused.
#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_reads_wait_for_the_copies_writing_them() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut host = PinnedBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let (delay, value) = (ns(Duration::from_millis(100)), 7u32);
    k.spin_then_write
        .launch_on(
            &stream,
            single(),
            &[
                KernelArg::value(&delay),
                KernelArg::write(&mut x),
                KernelArg::value(&value),
            ],
        )
        .unwrap();
    // The exclusive borrow a pipeline writes through; guards can still be made through a
    // shared reference to it (as through `GraphExec::pipeline`).
    let host = &mut host;
    stream.copy(&mut *host, &x).unwrap();
    // No synchronize: the guard waits for the copy (before, this read 0 under a live DMA).
    let seen = host.as_slice().unwrap();
    assert_eq!(&*seen, &[7]);
    // While the slice lives, a copy into the buffer (here through a hand-written pipeline
    // that borrows it `&mut`) is refused and nothing is issued.
    let mut b = ProgramBuilder::new("IntoPinned");
    let main = b.stream("main");
    b.copy(main, "host", "x");
    let program = b.build();
    let into_host = Hand {
        program,
        body: |program: &'static Program, issuer: &mut dyn Issuer| {
            copy(issuer, &program.statements[0], &host, &x)
        },
    };
    let other = Stream::new(&k.device, 0).unwrap();
    let refused = Eager::new(&other).run(&into_host).unwrap_err();
    assert!(
        refused.to_string().contains("PinnedBuffer cannot"),
        "{refused}"
    );
    drop(seen);
    Eager::new(&other).run(&into_host).unwrap();
    assert_eq!(host.to_vec().unwrap(), [7]);
}

streamgraph::pipeline! {
    /// `x` on the device, then into pinned memory.
    pipeline ToHost(x: &mut DeviceBuffer<u32>, host: &mut PinnedBuffer<u32>, k: &Kernels, delay: u64, v: u32) {
        stream main;
        main: launch k.spin_then_write<<<1, 1>>>(delay, &mut x, v);
        main: copy host <- x;
    }
}

/// Hole 2: an eager run and graph replays leave copies into pinned memory in flight; reads
/// through `GraphExec::pipeline()` wait for them and hold off further launches.
#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_memory_of_runs_and_replays_is_guarded() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut host = PinnedBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let delay = ns(Duration::from_millis(100));
    Eager::new(&stream)
        .run(&ToHost::new(&mut x, &mut host, &k, delay, 5))
        .unwrap();
    assert_eq!(
        &*host.as_slice().unwrap(),
        &[5],
        "eager copy read before it landed"
    );

    let graph = capture(&stream, ToHost::new(&mut x, &mut host, &k, delay, 9)).unwrap();
    let mut exec = graph.instantiate().unwrap();
    exec.launch(&stream).unwrap();
    {
        let seen = exec.pipeline().host.as_slice().unwrap();
        assert_eq!(&*seen, &[9], "replay's copy read before it landed");
        let refused = exec.launch(&stream).unwrap_err();
        assert!(matches!(refused, Error::PinnedBusy { .. }), "{refused}");
    }
    exec.launch(&stream).unwrap();
    // `update_with` hands out `&mut P` while a replay may run: the mutable slice waits.
    exec.update_with(|p| {
        let mut slice = p.host.as_mut_slice().unwrap();
        assert_eq!(&*slice, &[9]);
        slice[0] = 1;
        p.v = 11;
    })
    .unwrap();
    exec.launch(&stream).unwrap();
    let p = exec.into_pipeline();
    assert_eq!(&*p.host.as_slice().unwrap(), &[11]);
}

/// Holes 4 and 10: a hand-written pipeline frees its buffer and kernel module after the graph
/// was made; the graph keeps both, so replays neither fail nor write freed memory.
#[test]
#[ignore = "needs a CUDA GPU"]
fn graphs_keep_the_memory_and_modules_they_use() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let program = one_launch("Owning");
    let buffer = Rc::new(RefCell::new(Some(
        DeviceBuffer::<u32>::zeros(&k.device, 1 << 20).unwrap(),
    )));
    let module = streamgraph::Module::from_cuda_source(&k.device, "own", common::KERNELS).unwrap();
    // SAFETY: `write_value(unsigned*, unsigned)`, launched with exactly those arguments.
    let kernel = Rc::new(RefCell::new(Some(
        unsafe { module.kernel("write_value") }.unwrap(),
    )));
    drop(module);
    let (b, kk) = (buffer.clone(), kernel.clone());
    let p = Hand {
        program,
        body: move |program: &'static Program, issuer: &mut dyn Issuer| {
            let value = 0x5a5a_5a5au32;
            let mut b = b.borrow_mut();
            let kk = kk.borrow();
            issuer.launch(
                &program.statements[0],
                kk.as_ref().unwrap(),
                single(),
                &[KernelArg::write(b.as_mut().unwrap()), arg_value(&value)],
            )
        },
    };
    let exec = capture(&stream, p).unwrap().instantiate().unwrap();
    buffer.borrow_mut().take();
    kernel.borrow_mut().take();
    // Fresh allocations may land where the buffer was, were it freed.
    replays_leave_fresh_memory_alone(&k, &stream, |s| exec.replay(s, 3));
}

/// A panic in `issue` half-way through `update_args` leaves the launches it set before the
/// panic running their new arguments: the executable graph keeps that memory allocated.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_panic_in_update_args_keeps_the_memory_already_set() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let mut b = ProgramBuilder::new("HalfUpdated");
    let main = b.stream("main");
    b.launch(main, "k", &[("x", AccessMode::Write)]);
    b.launch(main, "k", &[("y", AccessMode::Write)]);
    let program = b.build();
    let x = Rc::new(RefCell::new(Some(
        DeviceBuffer::<u32>::zeros(&k.device, 1 << 20).unwrap(),
    )));
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let y = &mut y;
    let panics = Rc::new(std::cell::Cell::new(false));
    let (xx, pp, kernel) = (x.clone(), panics.clone(), k.write_value.clone());
    let p = Hand {
        program,
        body: move |program: &'static Program, issuer: &mut dyn Issuer| {
            let value = 0x5a5a_5a5au32;
            let mut x = xx.borrow_mut();
            issuer.launch(
                &program.statements[0],
                &kernel,
                single(),
                &[KernelArg::write(x.as_mut().unwrap()), arg_value(&value)],
            )?;
            if pp.get() {
                panic!("a pipeline panicked half-way through an update");
            }
            issuer.launch(
                &program.statements[1],
                &kernel,
                single(),
                &[arg_write(&y), arg_value(&value)],
            )
        },
    };
    let mut exec = capture(&stream, p).unwrap().instantiate().unwrap();
    // New memory for the first launch, then a panic before the walk ends.
    *x.borrow_mut() = Some(DeviceBuffer::<u32>::zeros(&k.device, 1 << 20).unwrap());
    panics.set(true);
    let outcome = catch_unwind(AssertUnwindSafe(|| exec.update_args_with(|_| {})));
    assert!(outcome.is_err(), "the panic goes on");
    x.borrow_mut().take();
    // Fresh allocations may land where the new buffer was, were it freed.
    replays_leave_fresh_memory_alone(&k, &stream, |s| exec.replay(s, 3));
}

/// Allocates fresh buffers (which may land where freed memory was), runs `replays`, and checks
/// that nothing wrote the fresh buffers.
fn replays_leave_fresh_memory_alone(
    k: &Kernels,
    stream: &Stream,
    replays: impl FnOnce(&Stream) -> streamgraph::Result<()>,
) {
    let fresh: Vec<DeviceBuffer<u32>> = (0..8)
        .map(|_| DeviceBuffer::zeros(&k.device, 1 << 20).unwrap())
        .collect();
    replays(stream).unwrap();
    stream.synchronize().unwrap();
    for f in &fresh {
        assert!(
            f.to_vec().unwrap().iter().all(|&v| v == 0),
            "a replay wrote freed memory"
        );
    }
}

/// Hole 5: `update_with` drops the buffer and then fails to capture; the executable graph
/// keeps running the old arguments, whose memory it still holds.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_failed_update_keeps_the_old_memory() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let program = one_launch("Failing");
    let buffer = Rc::new(RefCell::new(Some(
        DeviceBuffer::<u32>::zeros(&k.device, 1 << 20).unwrap(),
    )));
    let fail = Rc::new(std::cell::Cell::new(false));
    let (b, f2) = (buffer.clone(), fail.clone());
    let kernel = k.write_value.clone();
    let p = Hand {
        program,
        body: move |program: &'static Program, issuer: &mut dyn Issuer| {
            if f2.get() {
                return Err(Error::InvalidArgument("no buffer".into()));
            }
            let value = 0x5a5a_5a5au32;
            let mut b = b.borrow_mut();
            issuer.launch(
                &program.statements[0],
                &kernel,
                single(),
                &[KernelArg::write(b.as_mut().unwrap()), arg_value(&value)],
            )
        },
    };
    let mut exec = capture(&stream, p).unwrap().instantiate().unwrap();
    let (b, f2) = (buffer.clone(), fail.clone());
    let failed = exec.update_with(move |_| {
        b.borrow_mut().take();
        f2.set(true);
    });
    assert!(failed.is_err());
    replays_leave_fresh_memory_alone(&k, &stream, |s| exec.replay(s, 3));
}

streamgraph::pipeline! {
    pipeline WriteOne(x: &mut DeviceBuffer<u32>, k: &Kernel, v: u32) {
        stream main;
        main: launch k<<<1, 1>>>(&mut x, v);
    }
}

/// Hole 6: `set_kernel_args` names the kernel its arguments are for, and refuses a kernel the
/// node does not launch.
#[test]
#[ignore = "needs a CUDA GPU"]
fn set_kernel_args_refuses_arguments_for_another_kernel() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let exec = capture(&stream, WriteOne::new(&mut x, &k.write_value, 1))
        .unwrap()
        .instantiate()
        .unwrap();
    let op = OpRef::new(&WriteOne::PROGRAM.statements[0]);
    let ptr = exec.pipeline().x.as_view();
    let (n, delay) = (5u32, 1u64);
    let e = exec
        .set_kernel_args(op, &k.spin, &[KernelArg::value(&delay)])
        .unwrap_err();
    assert!(e.to_string().contains("runs another kernel"), "{e}");
    exec.set_kernel_args(
        op,
        &k.write_value,
        &[KernelArg::read(&ptr), KernelArg::value(&n)],
    )
    .unwrap();
    exec.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(exec.into_pipeline().x.to_vec().unwrap(), [5]);
}

/// Hole 7: a panic in `issue` during a capture ends the capture, and during an eager run
/// joins the side streams; the stream works afterwards.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_panic_in_issue_ends_the_capture() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let x = &mut x;
    let mut b = ProgramBuilder::new("Panicky");
    let (main, side) = (b.stream("main"), b.stream("side"));
    b.launch(side, "k", &[("x", AccessMode::Write)]);
    b.launch(main, "k", &[("x", AccessMode::Write)]);
    let program = b.build();
    let panicky = || Hand {
        program,
        body: |program: &'static Program, issuer: &mut dyn Issuer| {
            let value = 3u32;
            issuer.launch(
                &program.statements[0],
                &k.write_value,
                single(),
                &[arg_write(&x), arg_value(&value)],
            )?;
            panic!("a pipeline panicked half-way");
        },
    };
    for captured in [true, false] {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if captured {
                capture(&stream, panicky()).map(drop)
            } else {
                Eager::new(&stream).run(&panicky())
            }
        }));
        assert!(outcome.is_err(), "the panic goes on");
        stream.synchronize().unwrap();
        assert!(stream.query().unwrap());
    }
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    Eager::new(&stream)
        .run(&WriteOne::new(&mut y, &k.write_value, 4))
        .unwrap();
    stream.synchronize().unwrap();
    assert_eq!(y.to_vec().unwrap(), [4]);
}

/// Hole 8: dropping an executable graph while a replay is queued waits for it before the
/// host functions and memory it uses are freed.
#[test]
#[ignore = "needs a CUDA GPU"]
fn dropping_an_executable_graph_waits_for_its_replays() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let mut b = ProgramBuilder::new("Late");
    let main = b.stream("main");
    b.launch(main, "spin", &[]);
    b.host(main);
    let program = b.build();
    let flag = ran.clone();
    let p = Hand {
        program,
        body: move |program: &'static Program, issuer: &mut dyn Issuer| {
            let delay = ns(Duration::from_millis(200));
            issuer.launch(
                &program.statements[0],
                &k.spin,
                single(),
                &[arg_value(&delay)],
            )?;
            let flag = flag.clone();
            issuer.host(
                &program.statements[1],
                Arc::new(move || flag.store(true, Ordering::SeqCst)),
            )
        },
    };
    let exec = capture(&stream, p).unwrap().instantiate().unwrap();
    exec.launch(&stream).unwrap();
    drop(exec);
    assert!(
        ran.load(Ordering::SeqCst),
        "the executable graph was freed under its replay"
    );
}

/// Hole 9: wrapping a cudarc context or stream leaves cudarc's event tracking as it was.
#[test]
#[ignore = "needs a CUDA GPU"]
fn from_cudarc_leaves_the_users_context_alone() {
    let _serial = common::serial();
    let ctx = streamgraph::cudarc::driver::CudaContext::new(0).unwrap();
    assert!(ctx.is_event_tracking());
    let device = streamgraph::Device::from_cudarc(ctx.clone());
    let _stream = Stream::from_cudarc(ctx.default_stream());
    assert!(
        ctx.is_event_tracking(),
        "streamgraph changed the user's cudarc context"
    );
    drop(device);
}

/// The copy path keeps the memory of a pinned source alive too: a hand-written pipeline that
/// owns its pinned buffer drops it after the capture.
#[test]
#[ignore = "needs a CUDA GPU"]
fn graphs_keep_pinned_memory_they_copy() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let mut b = ProgramBuilder::new("PinnedOwner");
    let main = b.stream("main");
    b.copy(main, "x", "host");
    let program = b.build();
    let host = Rc::new(RefCell::new(Some(
        PinnedBuffer::from_slice(&k.device, &[42u32; 1024]).unwrap(),
    )));
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1024).unwrap();
    let x = &mut x;
    let h = host.clone();
    let p = Hand {
        program,
        body: move |program: &'static Program, issuer: &mut dyn Issuer| {
            let h = h.borrow();
            copy(issuer, &program.statements[0], &x, h.as_ref().unwrap())
        },
    };
    let exec = capture(&stream, p).unwrap().instantiate().unwrap();
    host.borrow_mut().take();
    exec.replay(&stream, 2).unwrap();
    stream.synchronize().unwrap();
}

/// Hole 12: the host functions (and memory) of earlier updates are released once the launches
/// before the update have finished, not kept until the executable graph drops.
#[test]
#[ignore = "needs a CUDA GPU"]
fn updates_release_what_earlier_graphs_kept() {
    let _serial = common::serial();
    let stream = Stream::new(&streamgraph::Device::new(None).unwrap(), 0).unwrap();
    let token = Arc::new(());
    let mut b = ProgramBuilder::new("Updates");
    let main = b.stream("main");
    b.host(main);
    let program = b.build();
    let t = token.clone();
    let p = Hand {
        program,
        body: move |program: &'static Program, issuer: &mut dyn Issuer| {
            let held = t.clone();
            issuer.host(&program.statements[0], Arc::new(move || drop(held.clone())))
        },
    };
    let mut exec = capture(&stream, p).unwrap().instantiate().unwrap();
    for _ in 0..50 {
        exec.launch(&stream).unwrap();
        stream.synchronize().unwrap();
        exec.update_with(|_| {}).unwrap();
    }
    // The pipeline's own clone, the base graph's and the latest graph's host functions, and at
    // most one update not yet reaped: a handful, not one per update.
    let held = Arc::strong_count(&token);
    assert!(
        held <= 6,
        "{held} host functions are still kept after 50 updates"
    );
    drop(exec);
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "dropping the executable graph frees the rest"
    );
}

/// Two threads launching graphs that name the same two empty pinned buffers in opposite
/// orders: every empty buffer has the same (dangling) address, and the DMA protocol, which
/// locked the buffers in address order, locked these two in the graphs' orders and
/// deadlocked within a few launches. With a deadline, so that a deadlock fails the test.
#[test]
#[ignore = "needs a CUDA GPU"]
fn graphs_naming_two_empty_pinned_buffers_in_opposite_orders_do_not_deadlock() {
    let _serial = common::serial();
    let device = streamgraph::Device::new(None).unwrap();
    let empty = || PinnedBuffer::<u32>::zeros(&device, 0).unwrap();
    let pinned = Arc::new([empty(), empty()]);
    let mut b = ProgramBuilder::new("TwoEmpty");
    let main = b.stream("main");
    b.fill(main, "x");
    b.copy(main, "none", "first");
    b.copy(main, "none", "second");
    let program = b.build();
    common::within(
        Duration::from_secs(60),
        "two threads launching graphs on the same two empty pinned buffers",
        move || {
            // Both threads launch at once.
            let start = Arc::new(std::sync::Barrier::new(2));
            let threads: Vec<_> = [(0, 1), (1, 0)]
                .into_iter()
                .map(|(first, second)| {
                    let (device, pinned) = (device.clone(), pinned.clone());
                    let start = start.clone();
                    std::thread::spawn(move || {
                        let stream = Stream::new(&device, 0).unwrap();
                        let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
                        let mut none = DeviceBuffer::<u32>::zeros(&device, 0).unwrap();
                        let (x, none) = (&mut x, &mut none);
                        let p = Hand {
                            program,
                            body: move |program: &'static Program, issuer: &mut dyn Issuer| {
                                let s = &program.statements;
                                fill(issuer, &s[0], &x, 1u32)?;
                                copy(issuer, &s[1], &none, &pinned[first])?;
                                copy(issuer, &s[2], &none, &pinned[second])
                            },
                        };
                        // Unchecked: the empty copies make no node whose order a check
                        // could compare (checks are on by default in debug builds).
                        let exec = streamgraph::Capture::new(&stream)
                            .check(false)
                            .capture(p)
                            .unwrap()
                            .instantiate()
                            .unwrap();
                        start.wait();
                        for _ in 0..2_000 {
                            exec.launch(&stream).unwrap();
                        }
                        stream.synchronize().unwrap();
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
        },
    );
}

/// An executable graph launched on 2,000 fresh streams, each dropped after its launch
/// finished, kept all 2,000 alive (and each update recorded an event on every one); the
/// graph's pinned buffer kept them too. Now only the streams where a launch may still run are
/// kept, and dropping or updating the graph still waits for those: launches still running on
/// streams the user dropped keep what they use, and finish before the graph is gone.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_executable_graph_keeps_only_the_streams_where_a_launch_may_still_run() {
    let k = Kernels::new();
    let origin = Stream::new(&k.device, 0).unwrap();
    let mut b = ProgramBuilder::new("ManyStreams");
    let main = b.stream("main");
    b.launch(main, "spin", &[]);
    b.copy(main, "host", "x");
    b.host(main);
    let program = b.build();
    // What the next capture spins for, and the token its host function holds.
    let delay = Rc::new(Cell::new(0u64));
    let token = Rc::new(RefCell::new(Arc::new(())));
    let ran = Arc::new(AtomicUsize::new(0));
    let (spin, x) = (
        k.spin.clone(),
        DeviceBuffer::from_host(&k.device, &[7u32]).unwrap(),
    );
    let mut host = PinnedBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let host = &mut host;
    let (d, t, r) = (delay.clone(), token.clone(), ran.clone());
    let p = Hand {
        program,
        body: move |program: &'static Program, issuer: &mut dyn Issuer| {
            let s = &program.statements;
            let spin_ns = d.get();
            issuer.launch(&s[0], &spin, single(), &[arg_value(&spin_ns)])?;
            copy(issuer, &s[1], &host, &x)?;
            let (held, ran) = (t.borrow().clone(), r.clone());
            issuer.host(
                &s[2],
                Arc::new(move || {
                    drop(held.clone());
                    ran.fetch_add(1, Ordering::SeqCst);
                }),
            )
        },
    };
    let mut exec = capture(&origin, p).unwrap().instantiate().unwrap();
    let mut launches = 0;
    let mut dropped: Vec<Weak<streamgraph::cudarc::driver::CudaStream>> = Vec::new();
    for _ in 0..2_000 {
        let s = Stream::new(&k.device, 0).unwrap();
        exec.launch(&s).unwrap();
        launches += 1;
        s.synchronize().unwrap();
        dropped.push(Arc::downgrade(s.as_cudarc()));
    }
    let alive = dropped.iter().filter(|w| w.strong_count() > 0).count();
    assert!(
        alive <= 16,
        "{alive} of 2000 dropped streams are still held after their launches finished"
    );

    // Long launches on streams dropped at once, whose new streams make the graph prune what it
    // holds while they run.
    delay.set(ns(Duration::from_millis(300)));
    let long = Arc::new(());
    *token.borrow_mut() = long.clone();
    exec.update_with(|_| {}).unwrap();
    for _ in 0..20 {
        exec.launch(&Stream::new(&k.device, 0).unwrap()).unwrap();
        launches += 1;
    }
    // The first update retires the graph they run; the second frees what retired graphs held
    // whose launches have finished: not that one, whose launches still run.
    delay.set(0);
    *token.borrow_mut() = Arc::new(());
    exec.update_with(|_| {}).unwrap();
    exec.update_with(|_| {}).unwrap();
    assert_eq!(
        Arc::strong_count(&long),
        2,
        "an update freed the host function of launches still running"
    );
    drop(exec);
    assert_eq!(
        ran.load(Ordering::SeqCst),
        launches,
        "dropping the executable graph did not wait for every launch"
    );
    assert_eq!(Arc::strong_count(&long), 1, "dropping it frees the rest");
}
