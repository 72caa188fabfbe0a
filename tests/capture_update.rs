//! Updating an executable graph on the GPU: new scalars and new buffers take effect on the
//! next replay without re-instantiation; a changed topology is refused with its reason (or
//! re-instantiated when asked); `set_kernel_args` changes one launch in place.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::time::Instant;

use common::Kernels;
use streamgraph::{
    capture, pipeline, DeviceBuffer, Error, GraphStats, KernelArg, OpRef, Pipeline, Stream,
    UpdateRejection,
};

pipeline! {
    /// `x[0] = value` on the origin, then `y[0] += k` on a side stream (n times).
    pipeline Writes(x: &mut DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, k: &Kernels, value: u32, add: u32, n: u32) {
        stream main;
        stream side;
        event written;

        main: launch k.write_value<<<1, 1>>>(&mut x, value);
        main: record written;
        side: wait written;
        for _i in 0..n {
            side: launch k.add<<<1, 1>>>(&mut y, add, 1u32);
        }
    }
}

fn setup() -> (Kernels, Stream) {
    let k = Kernels::new();
    let origin = Stream::new(&k.device, 0).unwrap();
    (k, origin)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn new_scalars_and_new_buffers_take_effect_without_reinstantiation() {
    let (k, origin) = setup();
    let d = k.device.clone();
    let (mut x1, mut y1) = (
        DeviceBuffer::<u32>::zeros(&d, 1).unwrap(),
        DeviceBuffer::<u32>::zeros(&d, 1).unwrap(),
    );
    let (mut x2, mut y2) = (
        DeviceBuffer::<u32>::zeros(&d, 1).unwrap(),
        DeviceBuffer::<u32>::zeros(&d, 1).unwrap(),
    );
    let mut exec = capture(&origin, Writes::new(&mut x1, &mut y1, &k, 5, 1, 2))
        .unwrap()
        .instantiate()
        .unwrap();
    exec.launch(&origin).unwrap();

    // New scalars, same buffers: through `update_with`.
    exec.update_with(|p| {
        p.value = 9;
        p.add = 100;
    })
    .unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();

    // New buffers: `update` hands the previous pipeline (and its borrows) back.
    let previous = exec
        .update(Writes::new(&mut x2, &mut y2, &k, 7, 3, 2))
        .unwrap();
    assert_eq!(previous.value, 9);
    exec.replay(&origin, 3).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(
        exec.stats(),
        GraphStats {
            launches: 5,
            updates: 2,
            reinstantiations: 0,
            ..GraphStats::default()
        }
    );
    exec.verify().unwrap();
    exec.into_pipeline();
    assert_eq!(x2.to_vec().unwrap(), [7]);
    assert_eq!(y2.to_vec().unwrap(), [3 * 2 * 3]);
    assert_eq!(
        y1.to_vec().unwrap(),
        [202],
        "the old buffers are not touched any more"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_changed_topology_is_refused_or_reinstantiated_on_request() {
    let (k, origin) = setup();
    let d = k.device.clone();
    let mut x = DeviceBuffer::<u32>::zeros(&d, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&d, 1).unwrap();
    let mut exec = capture(&origin, Writes::new(&mut x, &mut y, &k, 1, 1, 2))
        .unwrap()
        .instantiate()
        .unwrap();
    let e = exec.update_with(|p| p.n = 3).unwrap_err();
    println!("{e}");
    assert!(
        matches!(
            e,
            Error::UpdateRejected {
                reason: UpdateRejection::TopologyChanged,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("topology changed"), "{e}");
    assert_eq!(exec.stats().reinstantiations, 0);

    exec.reinstantiate_on_topology_change(true);
    exec.update_with(|p| p.n = 3).unwrap();
    assert_eq!(exec.stats().reinstantiations, 1);
    // Same topology again: updated in place, never re-instantiated.
    exec.update_with(|p| p.add = 10).unwrap();
    assert_eq!(exec.stats().reinstantiations, 1);
    assert_eq!(exec.stats().updates, 1);
    origin.synchronize().unwrap();
    exec.into_pipeline();
    y.copy_from_host(&[0]).unwrap();

    let (mut x2, mut y2) = (
        DeviceBuffer::<u32>::zeros(&d, 1).unwrap(),
        DeviceBuffer::<u32>::zeros(&d, 1).unwrap(),
    );
    let mut exec = capture(&origin, Writes::new(&mut x, &mut y, &k, 1, 1, 2))
        .unwrap()
        .instantiate()
        .unwrap();
    exec.reinstantiate_on_topology_change(true)
        .update(Writes::new(&mut x2, &mut y2, &k, 4, 2, 4))
        .unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(exec.stats().reinstantiations, 1);
    exec.into_pipeline();
    assert_eq!(x2.to_vec().unwrap(), [4]);
    assert_eq!(y2.to_vec().unwrap(), [8]);
    assert_eq!(x.to_vec().unwrap(), [0], "the first pipeline never ran");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn set_kernel_args_changes_one_launch_in_place_and_is_cheap() {
    let (k, origin) = setup();
    let d = k.device.clone();
    let mut x = DeviceBuffer::<u32>::zeros(&d, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&d, 1).unwrap();
    let x_ptr = x.device_ptr();
    let graph = capture(&origin, Writes::new(&mut x, &mut y, &k, 1, 1, 2)).unwrap();
    let program = graph.pipeline().program();
    let write = OpRef::new(&program.statements[0]);
    let second_add = OpRef::new(&program.statements[3]).occurrence(2);
    let exec = graph.instantiate().unwrap();

    // The argument is a view of the same buffer the pipeline borrows. The executable graph
    // holds the `&mut` borrows of `x` and `y`, so the kernel's written pointers are named
    // through shared references to those borrows (`write_through`: the write the graph
    // already does).
    let view = &exec.pipeline().x;
    let (value, add) = (42u32, 1000u32);
    let one = 1u32;
    let y_view = &exec.pipeline().y;
    let write_args = [KernelArg::write_through(view), KernelArg::value(&value)];
    let add_args = [
        KernelArg::write_through(y_view),
        KernelArg::value(&add),
        KernelArg::value(&one),
    ];
    exec.set_kernel_args(write, &k.write_value, &write_args)
        .unwrap();
    exec.set_kernel_args(second_add, &k.add, &add_args).unwrap();

    // Wrong uses are errors, not crashes.
    let e = exec
        .set_kernel_args(write, &k.write_value, &[KernelArg::value(&value)])
        .unwrap_err();
    assert!(e.to_string().contains("captured with 2 argument(s)"), "{e}");
    let e = exec
        .set_kernel_args(
            OpRef::new(&program.statements[1]),
            &k.write_value,
            &write_args,
        )
        .unwrap_err();
    assert!(e.to_string().contains("is not a launch"), "{e}");
    let e = exec
        .set_kernel_args(write.occurrence(2), &k.write_value, &write_args)
        .unwrap_err();
    assert!(e.to_string().contains("no occurrence 2"), "{e}");
    let mut stranger = DeviceBuffer::<u32>::zeros(&d, 1).unwrap();
    let e = exec
        .set_kernel_args(
            write,
            &k.write_value,
            &[KernelArg::write(&mut stranger), KernelArg::value(&value)],
        )
        .unwrap_err();
    assert!(e.to_string().contains("does not use"), "{e}");

    // Cost: one driver call per node.
    let rounds = 10_000;
    let started = Instant::now();
    for v in 0..rounds {
        let args = [KernelArg::write_through(view), KernelArg::value(&v)];
        exec.set_kernel_args(write, &k.write_value, &args).unwrap();
    }
    let per_call = started.elapsed() / rounds;
    println!("set_kernel_args: {per_call:?} per node");
    assert!(
        per_call.as_micros() < 50,
        "set_kernel_args took {per_call:?} per node"
    );
    exec.set_kernel_args(write, &k.write_value, &write_args)
        .unwrap();

    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    exec.into_pipeline();
    assert_eq!(x.device_ptr(), x_ptr);
    assert_eq!(x.to_vec().unwrap(), [42]);
    assert_eq!(y.to_vec().unwrap(), [1 + 1000]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn update_is_cheaper_than_reinstantiation() {
    let (k, origin) = setup();
    let d = k.device.clone();
    let mut x = DeviceBuffer::<u32>::zeros(&d, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&d, 1).unwrap();
    let n = 200;
    let mut exec = streamgraph::Capture::new(&origin)
        .check(false)
        .capture(Writes::new(&mut x, &mut y, &k, 1, 1, n))
        .unwrap()
        .instantiate()
        .unwrap();
    let rounds = 50;
    let started = Instant::now();
    for i in 0..rounds {
        exec.update_with(|p| p.add = i).unwrap();
    }
    let update = started.elapsed() / rounds;
    exec.reinstantiate_on_topology_change(true);
    let started = Instant::now();
    for i in 0..rounds {
        // A topology change each time: the launch count alternates.
        exec.update_with(|p| {
            p.n = n + 1 + (i % 2);
            p.add = i;
        })
        .unwrap();
    }
    let reinstantiate = started.elapsed() / rounds;
    println!(
        "{} nodes: update (capture + cuGraphExecUpdate) {update:?}, capture + re-instantiation {reinstantiate:?}",
        n + 1
    );
    assert_eq!(exec.stats().updates, rounds as u64);
    assert_eq!(exec.stats().reinstantiations, rounds as u64);
    assert!(
        update < reinstantiate * 10,
        "sanity bound: update {update:?}, re-instantiation {reinstantiate:?}"
    );
    origin.synchronize().unwrap();
}
