//! Shared by `device_blocks` and `switch_blocks`: the kernels their device blocks run, compiled
//! on a GPU (or the stand-in driver) or plan-only, and the one-word reads their checks make.
#![allow(dead_code)]

use streamgraph::{Device, DeviceBuffer, Kernel, Module, Stream};

/// CUDA C of the kernels the blocks run.
const SOURCE: &str = r#"
// x[0] += 1; flag = (x[0] < n)
extern "C" __global__ void step(unsigned* x, unsigned* flag, unsigned n) {
    x[0] += 1u;
    flag[0] = x[0] < n ? 1u : 0u;
}
// x[0] += k
extern "C" __global__ void add(unsigned* x, unsigned k) {
    x[0] += k;
}
// x[0] = v
extern "C" __global__ void put(unsigned* x, unsigned v) {
    x[0] = v;
}
// out[0] = x[0] % m
extern "C" __global__ void modulo(unsigned* out, const unsigned* x, unsigned m) {
    out[0] = x[0] % m;
}
// Reads an address no allocation holds. Never launched: the test that names it is refused
// before anything runs (a plan-only buffer inside a body).
extern "C" __global__ void fault(unsigned* x) {
    volatile unsigned* p = (volatile unsigned*)(0x10ull);
    x[0] = *p;
}
"#;

/// The kernels: compiled on a GPU (or the stand-in driver), or plan-only.
pub struct K {
    pub step: Kernel,
    pub add: Kernel,
    pub put: Kernel,
    pub modulo: Kernel,
    pub fault: Kernel,
}

impl K {
    pub fn planning() -> K {
        K {
            step: Kernel::for_planning("step"),
            add: Kernel::for_planning("add"),
            put: Kernel::for_planning("put"),
            modulo: Kernel::for_planning("modulo"),
            fault: Kernel::for_planning("fault"),
        }
    }

    pub fn compiled(device: &Device) -> K {
        let module = Module::from_cuda_source(device, "device_blocks", SOURCE).unwrap();
        // SAFETY: every launch of the tests passes the C signatures above: (unsigned*,
        // unsigned*, unsigned), (unsigned*, unsigned), (unsigned*, unsigned), (unsigned*,
        // const unsigned*, unsigned), (unsigned*).
        unsafe {
            K {
                step: module.kernel("step").unwrap(),
                add: module.kernel("add").unwrap(),
                put: module.kernel("put").unwrap(),
                modulo: module.kernel("modulo").unwrap(),
                fault: module.kernel("fault").unwrap(),
            }
        }
    }
}

/// The current device, a new stream on it, and the kernels compiled there.
pub fn gpu() -> (Device, Stream, K) {
    let device = Device::new(None).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    let k = K::compiled(&device);
    (device, origin, k)
}

/// The first word of `b`.
pub fn read(b: &DeviceBuffer<u32>) -> u32 {
    b.to_vec().unwrap()[0]
}
