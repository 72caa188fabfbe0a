//! cudarc values in pipelines: `CudaSlice`, `CudaView` and `CudaViewMut` as parameters (eager;
//! refused by captures), `DeviceBuffer::from_cudarc` (captured and given back), modules and
//! functions cudarc loaded, and the conversions of streams, devices and events.
//!
//! GPU tests: `cargo test --test interop -- --ignored`.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut};
use streamgraph::{
    capture, pipeline, Device, DeviceBuffer, Dim3, Eager, Error, Event, Kernel, LaunchConfig,
    Module, Stream,
};

const SOURCE: &str = r#"
// y = a * x + y
extern "C" __global__ void axpy(float* y, const float* x, float a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// The pipeline's kernels.
#[derive(Debug)]
pub struct Kernels {
    pub axpy: Kernel,
}

pipeline! {
    /// `y = a x + 1` on the origin, then a copy of `y` into `out` on a side stream.
    pub pipeline CudarcAxpy(
        y: &mut CudaSlice<f32>,
        x: &CudaView<'_, f32>,
        out: &mut CudaViewMut<'_, f32>,
        k: &Kernels,
        a: f32,
        n: u32,
    ) {
        stream main;
        stream side;
        event done;

        main: fill y = 1.0f32;
        main: launch k.axpy<<<n.div_ceil(256), 256>>>(&mut y, &x, a, n);
        main: record done;
        side: wait done;
        side: copy out <- y;
    }
}

pipeline! {
    /// The same on buffers that graphs can keep (`DeviceBuffer::from_cudarc`).
    pub pipeline BufferAxpy(y: &mut DeviceBuffer<f32>, x: &DeviceBuffer<f32>, k: &Kernels, a: f32, n: u32) {
        stream main;
        main: launch k.axpy<<<n.div_ceil(256), 256>>>(&mut y, &x, a, n);
    }
}

const N: usize = 3000;

fn input() -> Vec<f32> {
    (0..N).map(|i| (i % 41) as f32 * 0.5).collect()
}

/// A cudarc program's context, stream (a second stream turns cudarc's event tracking on) and
/// module, and the kernels looked up through `Module::from_cudarc`.
fn cudarc_setup() -> (
    Arc<CudaContext>,
    Arc<CudaStream>,
    Arc<cudarc::driver::CudaModule>,
    Kernels,
) {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let ptx = cudarc::nvrtc::compile_ptx(SOURCE).unwrap();
    let module = ctx.load_module(ptx).unwrap();
    let device = Device::from_cudarc(ctx.clone());
    // SAFETY: `axpy` is launched with (float*, const float*, float, unsigned) below.
    let axpy = unsafe { Module::from_cudarc(&device, module.clone()).kernel("axpy") }.unwrap();
    (ctx, stream, module, Kernels { axpy })
}

#[test]
fn cudarc_launch_configs_convert() {
    let c = cudarc::driver::LaunchConfig {
        grid_dim: (4, 2, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 64,
    };
    assert_eq!(
        LaunchConfig::from(c),
        LaunchConfig {
            grid: Dim3::from((4, 2, 1)),
            block: Dim3::from(128),
            shared_mem_bytes: 64,
        }
    );
}

fn check_cudarc_axpy(origin: &Stream, cu: &Arc<CudaStream>, k: &Kernels) {
    let x_host = input();
    let x = cu.clone_htod(&x_host).unwrap();
    let mut y = cu.alloc_zeros::<f32>(N).unwrap();
    let mut z = cu.alloc_zeros::<f32>(N + 10).unwrap();
    let mut eager = Eager::new(origin);
    {
        let mut out = z.slice_mut(5..N + 5);
        eager
            .run(&CudarcAxpy::new(
                &mut y,
                &x.slice(..),
                &mut out,
                k,
                2.0,
                N as u32,
            ))
            .unwrap();
    }
    // Read back on cudarc's stream: the slices' stream waits for the pipeline's work.
    let want: Vec<f32> = x_host.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(cu.clone_dtoh(&y).unwrap(), want);
    let z_host = cu.clone_dtoh(&z).unwrap();
    assert_eq!(&z_host[5..N + 5], &want[..]);
    assert!(z_host[..5]
        .iter()
        .chain(&z_host[N + 5..])
        .all(|&v| v == 0.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cudarc_slices_run_eagerly_on_cudarcs_stream() {
    let _serial = common::serial();
    let (_ctx, cu, _module, k) = cudarc_setup();
    check_cudarc_axpy(&Stream::from_cudarc(cu.clone()), &cu, &k);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cudarc_slices_run_eagerly_on_other_streams() {
    let _serial = common::serial();
    let (ctx, cu, _module, k) = cudarc_setup();
    let device = Device::from_cudarc(ctx);
    let origin = Stream::new(&device, 0).unwrap();
    check_cudarc_axpy(&origin, &cu, &k);
    // The slices' own stream may be the legacy default stream too.
    check_cudarc_axpy(&origin, &device.as_cudarc().default_stream(), &k);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dropping_a_cudarc_slice_right_after_an_eager_run_waits_for_it() {
    let _serial = common::serial();
    let (ctx, cu, _module, k) = cudarc_setup();
    let device = Device::from_cudarc(ctx);
    let origin = Stream::new(&device, 0).unwrap();
    for _ in 0..20 {
        let x = cu.clone_htod(&input()).unwrap();
        let mut y = cu.alloc_zeros::<f32>(N).unwrap();
        let mut z = cu.alloc_zeros::<f32>(N).unwrap();
        let mut out = z.slice_mut(..);
        Eager::new(&origin)
            .run(&CudarcAxpy::new(
                &mut y,
                &x.slice(..),
                &mut out,
                &k,
                3.0,
                N as u32,
            ))
            .unwrap();
        // Freed in cudarc's stream order, which now follows the pipeline's work.
        drop((x, y, z));
    }
    origin.synchronize().unwrap();
    ctx_check(&device);
}

fn ctx_check(device: &Device) {
    device.synchronize().unwrap();
    device.as_cudarc().check_err().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn capturing_borrowed_cudarc_slices_is_refused() {
    let _serial = common::serial();
    let (_ctx, cu, _module, k) = cudarc_setup();
    let origin = Stream::from_cudarc(cu.clone());
    let x = cu.clone_htod(&input()).unwrap();
    let mut y = cu.alloc_zeros::<f32>(N).unwrap();
    let mut z = cu.alloc_zeros::<f32>(N).unwrap();
    let err = {
        let mut out = z.slice_mut(..);
        capture(
            &origin,
            CudarcAxpy::new(&mut y, &x.slice(..), &mut out, &k, 2.0, N as u32),
        )
        .err()
        .expect("a capture of borrowed cudarc memory is refused")
    };
    let text = err.to_string();
    assert!(text.contains("DeviceBuffer::from_cudarc"), "{text}");
    // The stream is usable afterwards, and cudarc has no error left behind.
    origin.synchronize().unwrap();
    assert!(!matches!(err, Error::NoDriver { .. }));
    cu.context().check_err().unwrap();
    assert_eq!(cu.clone_dtoh(&z).unwrap(), vec![0.0; N]);
    let x2 = cu.clone_htod(&[1.0f32]).unwrap();
    assert_eq!(cu.clone_dtoh(&x2).unwrap(), [1.0]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn slices_moved_into_buffers_are_captured_replayed_and_given_back() {
    let _serial = common::serial();
    let (_ctx, cu, _module, k) = cudarc_setup();
    let origin = Stream::from_cudarc(cu.clone());
    let x_host = input();
    let x = DeviceBuffer::from_cudarc(cu.clone_htod(&x_host).unwrap()).unwrap();
    assert_eq!(
        x.as_cudarc().map(|s| cu.clone_dtoh(s).unwrap()),
        Some(x_host.clone())
    );

    // Eagerly, three times.
    let mut y_eager = DeviceBuffer::from_cudarc(cu.alloc_zeros::<f32>(N).unwrap()).unwrap();
    let mut eager = Eager::new(&origin);
    for _ in 0..3 {
        eager
            .run(&BufferAxpy::new(&mut y_eager, &x, &k, 0.5, N as u32))
            .unwrap();
    }
    // Captured, replayed three times.
    let mut y = DeviceBuffer::from_cudarc(cu.alloc_zeros::<f32>(N).unwrap()).unwrap();
    let graph = capture(&origin, BufferAxpy::new(&mut y, &x, &k, 0.5, N as u32)).unwrap();
    assert_eq!(graph.verify().unwrap().operations, 1);
    let exec = graph.instantiate().unwrap();
    exec.replay(&origin, 3).unwrap();
    exec.into_pipeline();
    origin.synchronize().unwrap();
    let want: Vec<f32> = x_host.iter().map(|v| 1.5 * v).collect();
    assert_eq!(y.to_vec_on(&origin).unwrap(), want);
    assert_eq!(y_eager.to_vec_on(&origin).unwrap(), want);

    // Back to cudarc once no graph keeps it.
    let y: CudaSlice<f32> = y.into_cudarc().unwrap();
    assert_eq!(cu.clone_dtoh(&y).unwrap(), want);
    let own = DeviceBuffer::<f32>::zeros(&Device::from_cudarc(cu.context().clone()), 4).unwrap();
    assert!(own.as_cudarc().is_none());
    assert!(own.into_cudarc().is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_from_cudarc_functions_outlive_their_module_handle() {
    let _serial = common::serial();
    let (ctx, cu, module, _) = cudarc_setup();
    let device = Device::from_cudarc(ctx);
    let func = module.load_function("axpy").unwrap();
    // SAFETY: `axpy` is launched with (float*, const float*, float, unsigned) below.
    let axpy = unsafe { Kernel::from_cudarc(&device, "axpy", func) };
    let k = Kernels { axpy };
    drop(module);
    assert_eq!(k.axpy.name(), "axpy");
    assert_eq!(k.axpy.device().map(Device::ordinal), Some(device.ordinal()));
    let origin = Stream::from_cudarc(cu.clone());
    let x_host = input();
    let x = DeviceBuffer::from_host(&device, &x_host).unwrap();
    let mut y = DeviceBuffer::<f32>::zeros(&device, N).unwrap();
    Eager::new(&origin)
        .run(&BufferAxpy::new(&mut y, &x, &k, 2.0, N as u32))
        .unwrap();
    let mut y2 = DeviceBuffer::<f32>::zeros(&device, N).unwrap();
    let exec = capture(&origin, BufferAxpy::new(&mut y2, &x, &k, 2.0, N as u32))
        .unwrap()
        .instantiate()
        .unwrap();
    exec.launch(&origin).unwrap();
    exec.into_pipeline();
    let want: Vec<f32> = x_host.iter().map(|v| 2.0 * v).collect();
    assert_eq!(y.to_vec_on(&origin).unwrap(), want);
    assert_eq!(y2.to_vec_on(&origin).unwrap(), want);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn streams_devices_and_events_convert_to_cudarc() {
    let _serial = common::serial();
    let device = Device::new(None).unwrap();
    let ctx: &Arc<CudaContext> = device.as_cudarc();
    assert_eq!(ctx.ordinal() as i32, device.ordinal());
    let stream = Stream::new(&device, 0).unwrap();
    let cu: &Arc<CudaStream> = stream.as_cudarc();
    let event = stream.record_event(None).unwrap();
    // cudarc waits on streamgraph's event and vice versa.
    cu.wait(event.as_cudarc()).unwrap();
    let back = Event::new(&device).unwrap();
    back.record(&Stream::from_cudarc(cu.clone())).unwrap();
    stream.wait_event(&back).unwrap();
    stream.synchronize().unwrap();
    assert!(event.query().unwrap() && back.query().unwrap());
}
