//! Kernels and helpers shared by the runtime's GPU tests.
//!
//! The kernels are embedded as CUDA C strings (the test binaries run from another checkout on
//! the GPU machine) and compiled with NVRTC on first use. Spin kernels busy-wait on
//! `%globaltimer` (nanoseconds), so that missing ordering shows up as wrong values or as work
//! finishing in the wrong order.
#![allow(dead_code)]

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use streamgraph::{Device, Dim3, Kernel, LaunchConfig, Module, Stream};

/// CUDA C source of the test kernels.
pub const KERNELS: &str = r#"
__device__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ void spin_for(unsigned long long ns) {
    unsigned long long start = now_ns();
    while (now_ns() - start < ns) { }
}

// Busy-waits for `ns` nanoseconds.
extern "C" __global__ void spin(unsigned long long ns) {
    spin_for(ns);
}

// Busy-waits, then writes `value` to `out[0]`.
extern "C" __global__ void spin_then_write(unsigned long long ns, unsigned* out, unsigned value) {
    spin_for(ns);
    __threadfence_system();
    out[0] = value;
}

// Writes `value` to `out[0]`.
extern "C" __global__ void write_value(unsigned* out, unsigned value) {
    out[0] = value;
}

// Busy-waits, then copies `n` elements from `src` to `dst` (one thread).
extern "C" __global__ void spin_then_copy(unsigned long long ns, unsigned* dst, const unsigned* src, unsigned n) {
    spin_for(ns);
    for (unsigned i = 0; i < n; ++i) dst[i] = src[i];
}

// Copies `n` elements from `src` to `dst`.
extern "C" __global__ void copy_u32(unsigned* dst, const unsigned* src, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

// Adds `k` to each of `n` elements.
extern "C" __global__ void add_u32(unsigned* x, unsigned k, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += k;
}
"#;

/// The test kernels, compiled for one device.
pub struct Kernels {
    pub device: Device,
    pub module: Module,
    pub spin: Kernel,
    pub spin_then_write: Kernel,
    pub write_value: Kernel,
    pub spin_then_copy: Kernel,
    pub copy: Kernel,
    pub add: Kernel,
    /// Tests that hold kernels run one at a time: a buffer freed by a parallel test waits for
    /// the whole device (`cuMemFree` synchronizes), which would distort the timing checks.
    _serial: Serial,
}

/// The lock that runs GPU tests one at a time, held until it drops. A test that holds it
/// already (two sets of kernels in one test) takes it again at once.
pub struct Serial {
    _guard: Option<MutexGuard<'static, ()>>,
}

thread_local! {
    /// How many [`Serial`]s this thread holds.
    static HELD: Cell<u32> = const { Cell::new(0) };
}

/// The lock that runs GPU tests one at a time (a failed test does not poison it for others).
pub fn serial() -> Serial {
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = (HELD.with(Cell::get) == 0)
        .then(|| LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
    HELD.with(|held| held.set(held.get() + 1));
    Serial { _guard: guard }
}

impl Drop for Serial {
    fn drop(&mut self) {
        HELD.with(|held| held.set(held.get() - 1));
    }
}

impl Kernels {
    /// Compiles the kernels on the current device.
    pub fn new() -> Kernels {
        let serial = serial();
        let device = Device::new(None).unwrap();
        let module = Module::from_cuda_source(&device, "test_kernels", KERNELS).unwrap();
        // SAFETY: every launch in these tests passes the arguments of the C signatures above,
        // through the typed helpers below or with the same types spelled out.
        unsafe {
            Kernels {
                spin: module.kernel("spin").unwrap(),
                spin_then_write: module.kernel("spin_then_write").unwrap(),
                write_value: module.kernel("write_value").unwrap(),
                spin_then_copy: module.kernel("spin_then_copy").unwrap(),
                copy: module.kernel("copy_u32").unwrap(),
                add: module.kernel("add_u32").unwrap(),
                device,
                module,
                _serial: serial,
            }
        }
    }
}

/// A device, a stream on it, and the serial lock, for GPU tests that need no test kernels.
pub struct Gpu {
    pub device: Device,
    pub origin: Stream,
    _serial: Serial,
}

/// The current device and a new stream on it, holding the serial lock.
pub fn gpu() -> Gpu {
    let serial = serial();
    let device = Device::new(None).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    Gpu {
        device,
        origin,
        _serial: serial,
    }
}

/// One block of one thread.
pub fn single() -> LaunchConfig {
    LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(1),
        shared_mem_bytes: 0,
    }
}

/// Enough 256-thread blocks for `n` elements.
pub fn linear(n: u32) -> LaunchConfig {
    LaunchConfig {
        grid: Dim3::from(n.div_ceil(256).max(1)),
        block: Dim3::from(256),
        shared_mem_bytes: 0,
    }
}

/// A duration in nanoseconds, as the spin kernels take it.
pub fn ns(d: Duration) -> u64 {
    d.as_nanos() as u64
}

/// Runs `f` on a thread of its own and returns what it returns; should it not finish within
/// `limit` (`what` hung: a deadlock), stops the whole test program with a message instead of
/// hanging with it (the hung thread may hold locks that other tests wait for).
pub fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    use std::sync::mpsc::{channel, RecvTimeoutError};
    let (tx, rx) = channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => {
            let _ = worker.join();
            value
        }
        Err(RecvTimeoutError::Timeout) => {
            eprintln!("{what} did not finish in {limit:?}: it hangs");
            std::process::exit(3);
        }
        Err(RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => panic!("{what} ended without an answer"),
        },
    }
}
