//! Faults in the middle of work, on the GPU: a forbidden call injected at every position of a
//! program, out-of-memory during allocation and instantiation. Each is a typed error, the
//! stream works afterwards, and the eager fallback computes the right result. (Dropping a
//! `GraphExec` with replays in flight is `soundness::dropping_an_executable_graph_waits_for_its_replays`.)
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use common::{single, Kernels};
use streamgraph::__private::{arg_place, arg_value, place};
use streamgraph::{
    AccessMode, Capture, CaptureFault, CaptureOutcome, DeviceBuffer, Eager, Error, Issuer,
    Pipeline, Program, ProgramBuilder, Stream, StreamOptions,
};

/// `main: launch write(x0, 1); main: record e; side: wait e; side: launch write(x1, 2);
/// main: launch write(x2, 3); side: launch write(x3, 4); main: wait_stream side;
/// main: launch write(x4, 5)`.
fn program() -> &'static Program {
    use std::sync::OnceLock;
    static PROGRAM: OnceLock<&'static Program> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let mut b = ProgramBuilder::new("Injected");
        let (main, side) = (b.stream("main"), b.stream("side"));
        let e = b.event("e");
        b.launch(main, "write", &[("x0", AccessMode::Write)]);
        b.record(main, e);
        b.wait(side, e);
        b.launch(side, "write", &[("x1", AccessMode::Write)]);
        b.launch(main, "write", &[("x2", AccessMode::Write)]);
        b.launch(side, "write", &[("x3", AccessMode::Write)]);
        b.wait_stream(main, side);
        b.launch(main, "write", &[("x4", AccessMode::Write)]);
        b.build()
    })
}

/// The program above, with an allocation (forbidden while capturing) before statement
/// `fault_at` (none when it is past the end).
struct Injected<'a> {
    k: &'a Kernels,
    x: &'a mut [DeviceBuffer<u32>],
    fault_at: usize,
}

impl Pipeline for Injected<'_> {
    fn program(&self) -> &'static Program {
        program()
    }

    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![StreamOptions::default(); 2])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let s = &program().statements;
        let launch = |issuer: &mut I, i: usize, buffer: usize, value: u32| {
            issuer.launch(
                &s[i],
                &self.k.write_value,
                single(),
                &[arg_place(place(&self.x).index(buffer))?, arg_value(&value)],
            )
        };
        for i in 0..s.len() {
            if i == self.fault_at {
                DeviceBuffer::<u32>::zeros(&self.k.device, 16)?;
            }
            match i {
                0 => launch(issuer, 0, 0, 1)?,
                1 => issuer.record(&s[1])?,
                2 => issuer.wait(&s[2])?,
                3 => launch(issuer, 3, 1, 2)?,
                4 => launch(issuer, 4, 2, 3)?,
                5 => launch(issuer, 5, 3, 4)?,
                6 => issuer.wait_stream(&s[6])?,
                _ => launch(issuer, 7, 4, 5)?,
            }
        }
        Ok(())
    }
}

fn results(x: &[DeviceBuffer<u32>]) -> Vec<u32> {
    x.iter().map(|b| b.to_vec().unwrap()[0]).collect()
}

/// Captures the program without a fault on `origin`, replays it `times` times and checks the
/// results.
fn clean_capture_replays(k: &Kernels, origin: &Stream, x: &mut [DeviceBuffer<u32>], times: usize) {
    clear(x);
    let exec = Capture::new(origin)
        .capture(Injected {
            k,
            x,
            fault_at: usize::MAX,
        })
        .unwrap()
        .instantiate()
        .unwrap();
    exec.replay(origin, times).unwrap();
    origin.synchronize().unwrap();
    drop(exec);
    assert_eq!(
        results(x),
        [1, 2, 3, 4, 5],
        "a clean capture replayed {times} time(s)"
    );
}

fn clear(x: &mut [DeviceBuffer<u32>]) {
    for b in x {
        b.copy_from_host(&[0]).unwrap();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_forbidden_call_at_every_position_is_a_typed_error_and_the_stream_recovers() {
    let k = Kernels::new();
    let origin = Stream::new(&k.device, 0).unwrap();
    let mut x: Vec<DeviceBuffer<u32>> = (0..5)
        .map(|_| DeviceBuffer::zeros(&k.device, 1).unwrap())
        .collect();
    let statements = program().statements;
    for at in 0..statements.len() {
        // Captured: a typed capture error, naming the last statement issued before the fault.
        let mut capture = Capture::new(&origin);
        let e = capture
            .capture(Injected {
                k: &k,
                x: &mut x,
                fault_at: at,
            })
            .map(drop)
            .unwrap_err();
        let Error::Capture {
            fault,
            after,
            pipeline,
            ..
        } = &e
        else {
            panic!("fault at {at}: not a capture error: {e}")
        };
        assert_eq!(*pipeline, Some("Injected"), "{e}");
        assert!(
            matches!(
                fault,
                CaptureFault::Unsupported | CaptureFault::Invalidated | CaptureFault::Implicit
            ),
            "fault at {at}: {e}"
        );
        if at > 0 {
            let named = after.expect("the statement before the fault is named");
            assert!(named.same(&statements[at - 1]), "fault at {at}: {e}");
            assert!(e.to_string().contains(statements[at - 1].text), "{e}");
        }

        // The stream is usable: an eager run after the failed capture gives the results.
        clear(&mut x);
        Eager::new(&origin)
            .run(&Injected {
                k: &k,
                x: &mut x,
                fault_at: usize::MAX,
            })
            .unwrap();
        origin.synchronize().unwrap();
        assert_eq!(results(&x), [1, 2, 3, 4, 5], "eager after a fault at {at}");

        // The fallback runs the faulty pipeline eagerly (allocating is fine outside a capture).
        clear(&mut x);
        let outcome = Capture::new(&origin)
            .fallback_to_eager(true)
            .run(Injected {
                k: &k,
                x: &mut x,
                fault_at: at,
            })
            .unwrap();
        assert!(
            matches!(outcome, CaptureOutcome::RanEagerly { .. }),
            "fault at {at}"
        );
        origin.synchronize().unwrap();
        assert_eq!(
            results(&x),
            [1, 2, 3, 4, 5],
            "fallback after a fault at {at}"
        );

        // And a clean capture on the same stream works.
        clean_capture_replays(&k, &origin, &mut x, 2);
    }
    println!(
        "faults: an allocation injected before each of {} statements: typed errors naming the statement, streams usable, fallback right",
        statements.len()
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn out_of_memory_is_a_typed_error() {
    let k = Kernels::new();
    let origin = Stream::new(&k.device, 0).unwrap();
    let mut x: Vec<DeviceBuffer<u32>> = (0..5)
        .map(|_| DeviceBuffer::zeros(&k.device, 1).unwrap())
        .collect();
    let graph = Capture::new(&origin)
        .capture(Injected {
            k: &k,
            x: &mut x,
            fault_at: usize::MAX,
        })
        .unwrap();
    // Fill the device.
    let mut hog: Vec<DeviceBuffer<u8>> = Vec::new();
    let mut chunk = 1usize << 34;
    let refused = loop {
        match DeviceBuffer::<u8>::zeros(&k.device, chunk) {
            Ok(b) => hog.push(b),
            Err(e) if chunk > 1 << 20 => {
                assert!(matches!(e, Error::Driver { .. }), "{e}");
                chunk /= 2;
            }
            Err(e) => break e,
        }
    };
    assert!(
        matches!(
            refused,
            Error::Driver {
                call: "cuMemAlloc",
                ..
            }
        ),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("cuMemAlloc failed"),
        "{refused}"
    );
    // Instantiating with the device full: typed error or success, never a panic.
    let instantiated = graph.instantiate();
    println!(
        "out of memory: allocation refused with `{refused}`; instantiate with a full device: {}",
        match &instantiated {
            Ok(_) => "succeeded".to_string(),
            Err(e) => format!("typed error `{e}`"),
        }
    );
    if let Err(e) = &instantiated {
        assert!(matches!(e, Error::Driver { .. }), "{e}");
    }
    drop(hog);
    drop(instantiated);
    clean_capture_replays(&k, &origin, &mut x, 1);
}
