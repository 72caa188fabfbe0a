//! The kernels of [`crate::ops::Random`]: Philox4x32-10 of our own, with its counter on the
//! device, so that every replay of a graph draws fresh numbers.
//!
//! An op owns a [`PhiloxState`]: one 64-bit word of device memory, the *offset* (in Philox
//! blocks, 4 × 32 random bits each), and the kernels of its context. Each issue launches, on
//! the call's stream, the generate kernel, which reads the offset when it starts and fills the
//! output from the blocks `offset`, `offset + 1`, …, then a one-thread kernel that adds the
//! number of blocks it used to the offset. Both are kernel nodes in a capture, so a replay
//! reads the offset the previous replay (or eager run) left, exactly as the next eager run
//! would. cuRAND's generators keep their offset on the host, baked into a captured launch's
//! arguments: every replay of such a graph would repeat the same numbers.
//!
//! The kernels are compiled with NVRTC to PTX once per context and cached, like the built-in
//! kernels of device blocks (`conditional.rs`).
//!
//! Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
//! 3", SC 2011; Random123): counter `(c0, c1, c2, c3)`, key `(k0, k1)`, ten rounds of
//! `(c0, c1, c2, c3) ← (hi(M1·c2) ^ c1 ^ k0, lo(M1·c2), hi(M0·c0) ^ c3 ^ k1, lo(M0·c0))` with
//! `M0 = 0xD2511F53`, `M1 = 0xCD9E8D57`, the key bumped by `(0x9E3779B9, 0xBB67AE85)` between
//! rounds.

use std::ffi::CString;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaStream};

use super::cudarc_order::cudarc_ordered;
use super::device_alloc::DeviceAlloc;
use super::ensure_current;
use super::launch::{launch_kernel, load_module, module_function, KernelArg, LoadedFunction};
use super::memory::{Holder, MemoryMut};
use super::{nvrtc_compile_ptx, CompileFailure, ModuleImage};
use crate::error::{Error, Result};
use crate::operand::{DeviceRange, Dim3, LaunchConfig, Memory};

/// The kernels. `streamgraph_philox_f32`/`_f64` fill `out[0..n)`; `normal` picks Box–Muller
/// normals (`mean + stddev · z`) over uniforms in `[0, 1)`. The layout of the numbers is the
/// one `crate::ops::Random` documents; tests/random_calls.rs holds a CPU reference of it.
const SOURCE: &str = r#"
typedef unsigned int sg_u32;
typedef unsigned long long sg_u64;

__device__ __forceinline__ void sg_philox4x32_10(sg_u32 c[4], sg_u32 k0, sg_u32 k1) {
    #pragma unroll
    for (int r = 0; r < 10; ++r) {
        if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        sg_u32 lo0 = 0xD2511F53u * c[0];
        sg_u32 hi0 = __umulhi(0xD2511F53u, c[0]);
        sg_u32 lo1 = 0xCD9E8D57u * c[2];
        sg_u32 hi1 = __umulhi(0xCD9E8D57u, c[2]);
        sg_u32 n0 = hi1 ^ c[1] ^ k0;
        sg_u32 n2 = hi0 ^ c[3] ^ k1;
        c[0] = n0; c[1] = lo1; c[2] = n2; c[3] = lo0;
    }
}

__device__ __forceinline__ void sg_block(sg_u32 w[4], sg_u64 block, sg_u64 seed, sg_u64 subsequence) {
    w[0] = (sg_u32)block; w[1] = (sg_u32)(block >> 32);
    w[2] = (sg_u32)subsequence; w[3] = (sg_u32)(subsequence >> 32);
    sg_philox4x32_10(w, (sg_u32)seed, (sg_u32)(seed >> 32));
}

/* 2^-24 and 2^-53, written out exactly. */
#define SG_F32_UNIT 5.9604644775390625e-08f
#define SG_F64_UNIT 1.1102230246251565404236316680908203125e-16

extern "C" __global__ void streamgraph_philox_f32(float* out, sg_u64 n, sg_u64 seed,
        sg_u64 subsequence, const sg_u64* counter, sg_u32 normal, float mean, float stddev) {
    sg_u64 offset = *counter;
    sg_u64 blocks = n / 4u + (n % 4u != 0u);
    sg_u64 step = (sg_u64)gridDim.x * blockDim.x;
    for (sg_u64 j = (sg_u64)blockIdx.x * blockDim.x + threadIdx.x; j < blocks; j += step) {
        sg_u32 w[4];
        sg_block(w, offset + j, seed, subsequence);
        float v[4];
        if (normal) {
            for (int t = 0; t < 2; ++t) {
                float u1 = (float)((w[2 * t] >> 8) + 1u) * SG_F32_UNIT;
                float u2 = (float)(w[2 * t + 1] >> 8) * SG_F32_UNIT;
                float r = sqrtf(-2.0f * logf(u1));
                float s, c;
                sincospif(2.0f * u2, &s, &c);
                v[2 * t] = mean + stddev * (r * c);
                v[2 * t + 1] = mean + stddev * (r * s);
            }
        } else {
            for (int t = 0; t < 4; ++t) v[t] = (float)(w[t] >> 8) * SG_F32_UNIT;
        }
        sg_u64 first = 4u * j;
        for (int t = 0; t < 4; ++t) {
            if (first + t < n) out[first + t] = v[t];
        }
    }
}

extern "C" __global__ void streamgraph_philox_f64(double* out, sg_u64 n, sg_u64 seed,
        sg_u64 subsequence, const sg_u64* counter, sg_u32 normal, double mean, double stddev) {
    sg_u64 offset = *counter;
    sg_u64 blocks = n / 2u + (n % 2u != 0u);
    sg_u64 step = (sg_u64)gridDim.x * blockDim.x;
    for (sg_u64 j = (sg_u64)blockIdx.x * blockDim.x + threadIdx.x; j < blocks; j += step) {
        sg_u32 w[4];
        sg_block(w, offset + j, seed, subsequence);
        sg_u64 a = (((sg_u64)w[0] << 32) | w[1]) >> 11;
        sg_u64 b = (((sg_u64)w[2] << 32) | w[3]) >> 11;
        double v[2];
        if (normal) {
            double u1 = (double)(a + 1u) * SG_F64_UNIT;
            double u2 = (double)b * SG_F64_UNIT;
            double r = sqrt(-2.0 * log(u1));
            double s, c;
            sincospi(2.0 * u2, &s, &c);
            v[0] = mean + stddev * (r * c);
            v[1] = mean + stddev * (r * s);
        } else {
            v[0] = (double)a * SG_F64_UNIT;
            v[1] = (double)b * SG_F64_UNIT;
        }
        sg_u64 first = 2u * j;
        for (int t = 0; t < 2; ++t) {
            if (first + t < n) out[first + t] = v[t];
        }
    }
}

extern "C" __global__ void streamgraph_philox_advance(sg_u64* counter, sg_u64 blocks) {
    *counter += blocks;
}

extern "C" __global__ void streamgraph_philox_set(sg_u64* counter, sg_u64 value) {
    *counter = value;
}
"#;

/// The element type of a fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PhiloxElem {
    /// `float`: 4 numbers per Philox block.
    F32,
    /// `double`: 2 numbers per Philox block.
    F64,
}

impl PhiloxElem {
    fn size(self) -> usize {
        match self {
            PhiloxElem::F32 => 4,
            PhiloxElem::F64 => 8,
        }
    }

    /// The Philox blocks a fill of `n` numbers uses (and the offset advances by).
    pub(crate) fn blocks(self, n: u64) -> u64 {
        let per_block = match self {
            PhiloxElem::F32 => 4,
            PhiloxElem::F64 => 2,
        };
        n.div_ceil(per_block)
    }
}

/// What a fill draws: uniforms in `[0, 1)`, or normals `mean + stddev · z` (Box–Muller).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PhiloxDist {
    /// Uniform in `[0, 1)`.
    Uniform,
    /// Normal, in the element type's precision.
    Normal {
        /// The mean.
        mean: f64,
        /// The standard deviation.
        stddev: f64,
    },
}

/// The kernels of one context.
#[derive(Debug)]
struct PhiloxKernels {
    f32: LoadedFunction,
    f64: LoadedFunction,
    advance: LoadedFunction,
    set: LoadedFunction,
}

/// The contexts' kernels, compiled once each.
static KERNELS: Mutex<Vec<(usize, Arc<PhiloxKernels>)>> = Mutex::new(Vec::new());

/// The kernels of `ctx`, compiled and loaded on first use.
fn kernels(ctx: &Arc<CudaContext>) -> Result<Arc<PhiloxKernels>> {
    let key = ctx.cu_ctx() as usize;
    {
        let cache = KERNELS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, k)) = cache.iter().find(|(c, _)| *c == key) {
            return Ok(k.clone());
        }
    }
    let built = Arc::new(build(ctx)?);
    let mut cache = KERNELS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, k)) = cache.iter().find(|(c, _)| *c == key) {
        return Ok(k.clone());
    }
    cache.push((key, built.clone()));
    Ok(built)
}

const MODULE: &str = "streamgraph_philox (the kernels of ops::Random)";

fn build(ctx: &Arc<CudaContext>) -> Result<PhiloxKernels> {
    if !super::nvrtc_present() {
        return Err(Error::NoNvrtc {
            searched: super::searched_names("nvrtc"),
        });
    }
    ensure_current(ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| Error::driver("cuDeviceGetAttribute", e))?;
    let c = |s: &str| {
        CString::new(s).map_err(|_| Error::InvalidArgument("an NVRTC option holds a NUL".into()))
    };
    let options = [c(&format!("--gpu-architecture=compute_{major}{minor}"))?];
    let ptx =
        nvrtc_compile_ptx(&c("streamgraph_philox")?, &c(SOURCE)?, &options).map_err(
            |f| match f {
                CompileFailure::Log(log) => Error::Compile {
                    module: MODULE.into(),
                    log,
                },
                CompileFailure::Call(call, what) => Error::Compile {
                    module: MODULE.into(),
                    log: format!("{call} failed: {what}"),
                },
            },
        )?;
    let module = load_module(ctx, ModuleImage::Ptx(&ptx))
        .map_err(|e| Error::driver("cuModuleLoadData", e))?;
    let function = |n: &str| -> Result<LoadedFunction> {
        module_function(&module, ctx, n)
            .map_err(|e| Error::driver("cuModuleGetFunction", e))?
            .ok_or_else(|| Error::KernelNotFound {
                module: MODULE.into(),
                name: n.into(),
            })
    };
    Ok(PhiloxKernels {
        f32: function("streamgraph_philox_f32")?,
        f64: function("streamgraph_philox_f64")?,
        advance: function("streamgraph_philox_advance")?,
        set: function("streamgraph_philox_set")?,
    })
}

/// A 64-bit argument (a device address or a count) passed by value.
fn word(value: &u64) -> KernelArg<'_> {
    KernelArg::by_ref(value, None, Holder::FOREIGN)
}

fn one_thread() -> LaunchConfig {
    LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(1),
        shared_mem_bytes: 0,
    }
}

/// Threads per block of the generate kernels, and the most blocks of a launch (a grid-stride
/// loop covers the rest).
const THREADS: u32 = 256;
const MAX_GRID: u64 = 1 << 16;

/// An op's Philox offset (one 64-bit word of device memory) and the kernels of its context.
/// A graph that captured the op's work keeps it (`StreamOp::keep`), so the word and the
/// module outlive every replay.
#[derive(Debug)]
pub(crate) struct PhiloxState {
    counter: Arc<DeviceAlloc>,
    kernels: Arc<PhiloxKernels>,
    ctx: Arc<CudaContext>,
}

impl PhiloxState {
    /// The kernels of `ctx` (compiled on first use) and a new offset word, not yet set:
    /// [`PhiloxState::set`] it before the first fill.
    ///
    /// Errors: [`Error::NoNvrtc`] without NVRTC, [`Error::Compile`], and the driver's.
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Result<PhiloxState> {
        let kernels = kernels(ctx)?;
        let counter = DeviceAlloc::new(ctx, 8)?;
        Ok(PhiloxState {
            counter,
            kernels,
            ctx: ctx.clone(),
        })
    }

    /// The counter word, as memory every fill writes (see `StreamOp::scratch`).
    pub(crate) fn counter_ref(&self) -> Option<super::memory::MemoryRef<'_>> {
        super::memory::MemoryRef::device(
            &self.counter,
            self.ctx.ordinal() as i32,
            self.counter.ptr(),
            8,
            8,
        )
    }

    fn check_stream(&self, stream: &CudaStream) -> Result<()> {
        if stream.context().cu_ctx() != self.ctx.cu_ctx() {
            return Err(Error::DeviceMismatch {
                what: "a random-number op issued on a stream of another device than its own",
                left: self.ctx.ordinal() as i32,
                right: stream.context().ordinal() as i32,
            });
        }
        Ok(())
    }

    /// Sets the offset to `offset` with a one-thread kernel on `stream`, and waits for it: the
    /// next fill on any stream reads `offset`. Refused while `stream` is capturing (`what`
    /// names the caller).
    pub(crate) fn set(
        &self,
        stream: &Arc<CudaStream>,
        offset: u64,
        what: &'static str,
    ) -> Result<()> {
        self.check_stream(stream)?;
        let ptr = self.counter.ptr();
        super::lane::on_lane(stream, what, |lane| {
            let args = [word(&ptr), word(&offset)];
            // The set kernel takes (unsigned long long*, unsigned long long): exactly these
            // values; the pointer is the 8-byte word this state owns, in the stream's context.
            launch_kernel(&self.kernels.set, lane, &one_thread(), &args)
                .map_err(|e| Error::driver("cuLaunchKernel", e))
        })?;
        super::unsafe_during_capture(|| stream.synchronize())
            .map_err(|e| Error::driver("cuStreamSynchronize", e))
    }

    /// Fills `out` (device memory of `elem`s, every element of it) with `dist` from the blocks
    /// `(offset + j, subsequence)` under key `seed`, then advances the offset by the blocks
    /// used: two kernels on `stream`. Returns the blocks used.
    pub(crate) fn fill(
        &self,
        stream: &Arc<CudaStream>,
        out: &MemoryMut<'_>,
        elem: PhiloxElem,
        dist: PhiloxDist,
        seed: u64,
        subsequence: u64,
    ) -> Result<u64> {
        self.check_stream(stream)?;
        let out = out.memory_ref();
        let Memory::Device(range) = out.memory() else {
            return Err(Error::Internal {
                invariant: "a `call` operand is device memory",
            });
        };
        if range.device == DeviceRange::PLANNING {
            return Err(Error::PlanningOnly { what: "buffer" });
        }
        if out.elem_size() != elem.size() {
            return Err(Error::Internal {
                invariant: "a random-number op's operand holds its element type",
            });
        }
        let n = (range.bytes / elem.size()) as u64;
        let blocks = elem.blocks(n);
        let grid = blocks.div_ceil(u64::from(THREADS)).clamp(1, MAX_GRID) as u32;
        let config = LaunchConfig {
            grid: Dim3::from(grid),
            block: Dim3::from(THREADS),
            shared_mem_bytes: 0,
        };
        let counter = self.counter.ptr();
        let normal = u32::from(matches!(dist, PhiloxDist::Normal { .. }));
        let (mean, stddev) = match dist {
            PhiloxDist::Uniform => (0.0, 1.0),
            PhiloxDist::Normal { mean, stddev } => (mean, stddev),
        };
        let (mean32, stddev32) = (mean as f32, stddev as f32);
        cudarc_ordered(stream, [out.holder()], || {
            let mut args = vec![
                word(&range.ptr),
                word(&n),
                word(&seed),
                word(&subsequence),
                word(&counter),
                KernelArg::by_ref(&normal, None, Holder::FOREIGN),
            ];
            let function = match elem {
                PhiloxElem::F32 => {
                    args.push(KernelArg::by_ref(&mean32, None, Holder::FOREIGN));
                    args.push(KernelArg::by_ref(&stddev32, None, Holder::FOREIGN));
                    &self.kernels.f32
                }
                PhiloxElem::F64 => {
                    args.push(KernelArg::by_ref(&mean, None, Holder::FOREIGN));
                    args.push(KernelArg::by_ref(&stddev, None, Holder::FOREIGN));
                    &self.kernels.f64
                }
            };
            // The generate kernels take (float* or double*, unsigned long long ×3, const
            // unsigned long long*, unsigned, then float ×2 or double ×2): exactly these
            // values. `out` is live device memory of `n` elements of the kernel's type (its
            // bytes over the element size) in the stream's context; the counter is this
            // state's live 8-byte word.
            launch_kernel(function, stream, &config, &args)
                .map_err(|e| Error::driver("cuLaunchKernel", e))?;
            let args = [word(&counter), word(&blocks)];
            // The advance kernel takes (unsigned long long*, unsigned long long): exactly
            // these values, the counter being this state's live 8-byte word.
            launch_kernel(&self.kernels.advance, stream, &one_thread(), &args)
                .map_err(|e| Error::driver("cuLaunchKernel", e))
        })?;
        Ok(blocks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_number() {
        assert_eq!(PhiloxElem::F32.blocks(0), 0);
        assert_eq!(PhiloxElem::F32.blocks(1), 1);
        assert_eq!(PhiloxElem::F32.blocks(4), 1);
        assert_eq!(PhiloxElem::F32.blocks(5), 2);
        assert_eq!(PhiloxElem::F64.blocks(3), 2);
        assert_eq!(PhiloxElem::F64.blocks(4), 2);
        assert_eq!(PhiloxElem::F32.blocks(u64::MAX), u64::MAX / 4 + 1);
    }

    #[test]
    fn the_source_names_every_kernel_it_loads() {
        for name in [
            "streamgraph_philox_f32",
            "streamgraph_philox_f64",
            "streamgraph_philox_advance",
            "streamgraph_philox_set",
        ] {
            assert!(SOURCE.contains(&format!("void {name}(")), "{name}");
        }
    }
}
