//! Every statement form the macro accepts, planned with plan-only kernels and buffers.
#![deny(warnings, missing_docs)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use streamgraph::{DeviceBuffer, Kernel, PinnedBuffer, Pipeline};

/// Kernels.
#[derive(Debug)]
pub struct Kernels {
    /// Scale.
    pub scale: Kernel,
}

impl Kernels {
    /// Axpy.
    pub fn axpy(&self) -> Kernel {
        self.scale.clone()
    }
}

fn grid(n: u32) -> u32 {
    n.div_ceil(256)
}

streamgraph::pipeline! {
    /// All statement forms.
    pub pipeline AllForms<'k, T: Copy + streamgraph::DeviceRepr + 'static>(
        x: &mut DeviceBuffer<f32>,
        y: &'k mut DeviceBuffer<u16>,
        k: &'k Kernels,
        n: u32,
        flag: bool,
        dev: i32,
        extra: T,
        hits: &Arc<AtomicUsize>,
        up: &PinnedBuffer<f32>,
        down: &mut PinnedBuffer<f32>,
        z: &mut DeviceBuffer<f32>,
        ups: &[PinnedBuffer<f32>],
    ) where T: Send {
        stream main;
        stream side(priority = -1);
        stream third(device = dev, priority = n as i32);
        event ready;
        event done;

        main: launch k.scale<<<grid(n), 256>>>(&mut x, 2.0f32, n);
        main: launch k.axpy()<<<(n, 2), (16, 16), 1024>>>(&mut x.slice(0..n as usize), n);
        main: launch k.scale<<<(1, 1, 1), 32, n * 4>>>(&x, extra, n);
        main: record ready;
        side: wait ready;
        side: fill y = 7u16;
        side: fill x.slice(1..2) = 1.0f32;
        side: host { let h = Arc::clone(hits); move || { h.fetch_add(1, Ordering::SeqCst); } };
        side: record done;
        third: wait done;
        third: copy z <- up;
        third: copy down <- z;
        third: copy z.slice(0..4) <- x.slice(4..8);
        third: copy z.slice(4..8) <- up.slice(0..4);
        third: copy down.slice(4..8) <- z.slice(0..4);
        third: copy z <- ups[1];
        for i in 0..n {
            third: launch k.scale<<<i + 1, 32>>>(&mut y.slice(i as usize..i as usize + 1), i);
        }
        if flag {
            main: wait_stream side;
        } else if n > 2 {
            main: wait done;
        } else {
            main: wait_stream third;
        }
        main: wait_stream third;
    }
}

streamgraph::pipeline! {
    pipeline Minimal() {
        stream only;
    }
}

/// The case's program.
pub fn main() {
    let mut x = DeviceBuffer::<f32>::for_planning(8).unwrap();
    let mut y = DeviceBuffer::<u16>::for_planning(8).unwrap();
    let k = Kernels {
        scale: Kernel::for_planning("scale"),
    };
    let hits = Arc::new(AtomicUsize::new(0));
    let up = PinnedBuffer::<f32>::for_planning(8).unwrap();
    let mut down = PinnedBuffer::<f32>::for_planning(8).unwrap();
    let mut z = DeviceBuffer::<f32>::for_planning(8).unwrap();
    let ups = [
        PinnedBuffer::<f32>::for_planning(8).unwrap(),
        PinnedBuffer::<f32>::for_planning(8).unwrap(),
    ];
    let p = AllForms::new(
        &mut x, &mut y, &k, 4, true, 0, 1.5f32, &hits, &up, &mut down, &mut z, &ups,
    );
    assert_eq!(p.stream_options().len(), 3);
    assert_eq!(AllForms::<f32>::PROGRAM.statements.len(), 21);
    let plan = streamgraph::Plan::build(&p).unwrap();
    plan.check_races().unwrap();
    assert_eq!(Minimal::new().stream_options().len(), 1);
    assert!(Minimal::PROGRAM.statements.is_empty());
}
