//! The built-in kernels of device blocks (`begin`, `next`, `branch`, `switch`, `signal`,
//! `nop`), compiled with NVRTC to PTX once per context, and the compilation they share with
//! user kernels that signal a loop ([`SIGNAL_HEADER`]): the driver resolves
//! `cudaGraphSetConditional` when it loads the PTX.

use std::ffi::CString;
use std::sync::{Arc, Mutex};

use cudarc::driver::CudaContext;

use super::ensure_current;
use super::launch::{load_module, module_function, CodeOwner, LoadedFunction};
use super::{nvrtc_compile_ptx, CompileFailure, ModuleImage};
use crate::error::{Error, Result};

/// The built-in kernels. `begin` runs before the conditional node, `next` at the end of each
/// `while` iteration; both set the handle to "flag non-zero and (unbounded or under the
/// limit)". `begin` resets the iteration counter. `signal` runs before a signalled loop's node
/// instead of `begin`: it also leaves the handle in the flag's words 2–3, where the body's
/// kernels find it (`streamgraph_signal`, [`crate::SIGNAL_HEADER`]).
const SOURCE: &str = r#"
typedef unsigned long long streamgraph_handle;
#ifdef STREAMGRAPH_DEVICE_RUNTIME_HEADER
#include <cuda_device_runtime_api.h>
#else
extern "C" __device__ void cudaGraphSetConditional(streamgraph_handle handle, unsigned int value);
#endif

extern "C" __global__ void streamgraph_cond_begin(streamgraph_handle handle,
        const volatile unsigned int* flag, unsigned int* counter,
        unsigned int limit, unsigned int bounded) {
    unsigned int go = *flag != 0u;
    if (bounded) {
        *counter = 0u;
        if (limit == 0u) go = 0u;
    }
    cudaGraphSetConditional(handle, go);
}

extern "C" __global__ void streamgraph_cond_branch(streamgraph_handle then_handle,
        streamgraph_handle else_handle, const volatile unsigned int* flag) {
    unsigned int go = *flag != 0u;
    cudaGraphSetConditional(then_handle, go);
    cudaGraphSetConditional(else_handle, go ? 0u : 1u);
}

extern "C" __global__ void streamgraph_cond_nop() {}

struct streamgraph_handles { streamgraph_handle h[65]; };
struct streamgraph_arms { unsigned int count; unsigned int fallback; unsigned int values[64]; };

extern "C" __global__ void streamgraph_cond_switch(struct streamgraph_handles handles,
        unsigned int nodes, unsigned int chain, const volatile unsigned int* flag,
        struct streamgraph_arms arms) {
    unsigned int v = *flag;
    unsigned int body = arms.fallback;
    for (unsigned int i = 0u; i < arms.count; ++i) {
        if (arms.values[i] == v) { body = i; break; }
    }
    if (!chain) {
        cudaGraphSetConditional(handles.h[0], body);
    } else {
        for (unsigned int k = 0u; k < nodes; ++k) {
            cudaGraphSetConditional(handles.h[k], body == k ? 1u : 0u);
        }
    }
}

extern "C" __global__ void streamgraph_cond_signal(streamgraph_handle handle,
        unsigned int* flag) {
    *(volatile streamgraph_handle*)(flag + 2) = handle;
    cudaGraphSetConditional(handle, *(volatile unsigned int*)flag != 0u);
}

extern "C" __global__ void streamgraph_cond_next(streamgraph_handle handle,
        const volatile unsigned int* flag, unsigned int* counter,
        unsigned int limit, unsigned int bounded) {
    unsigned int go = *flag != 0u;
    if (bounded) {
        unsigned int c = *counter + 1u;
        *counter = c;
        if (c >= limit) go = 0u;
    }
    cudaGraphSetConditional(handle, go);
}
"#;

/// The built-in kernels of one context.
#[derive(Debug)]
pub(crate) struct CondKernels {
    pub(super) begin: LoadedFunction,
    pub(super) branch: LoadedFunction,
    pub(super) next: LoadedFunction,
    pub(super) nop: LoadedFunction,
    pub(super) signal: LoadedFunction,
    pub(super) switch: LoadedFunction,
}

impl CondKernels {
    /// The module holding them (a graph that launches them keeps it).
    pub(crate) fn module(&self) -> &CodeOwner {
        self.begin.module()
    }
}

/// The contexts' built-in kernels, compiled once each.
static KERNELS: Mutex<Vec<(usize, Arc<CondKernels>)>> = Mutex::new(Vec::new());

/// The built-in kernels of `ctx`, compiled and loaded on first use.
///
/// Errors: [`Error::NoNvrtc`] without NVRTC, [`Error::Compile`] when no way of declaring
/// `cudaGraphSetConditional` compiles (the log of each attempt is kept).
pub(crate) fn kernels(ctx: &Arc<CudaContext>) -> Result<Arc<CondKernels>> {
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

/// Where the CUDA headers may be, for the fallback that includes the device runtime's header.
fn include_dirs() -> Vec<String> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Ok(v) = std::env::var(var) {
            dirs.push(format!("{}/include", v.trim_end_matches('/')));
        }
    }
    dirs.push("/usr/local/cuda/include".into());
    dirs
}

fn build(ctx: &Arc<CudaContext>) -> Result<CondKernels> {
    let module = compile_module(
        ctx,
        "streamgraph_conditional (built-in kernels of device `while`/`if`/`switch` blocks)",
        SOURCE,
    )?;
    let function = |n: &str| -> Result<LoadedFunction> {
        module_function(&module, ctx, n)
            .map_err(|e| Error::driver("cuModuleGetFunction", e))?
            .ok_or_else(|| Error::KernelNotFound {
                module: "streamgraph_conditional".into(),
                name: n.into(),
            })
    };
    Ok(CondKernels {
        begin: function("streamgraph_cond_begin")?,
        branch: function("streamgraph_cond_branch")?,
        next: function("streamgraph_cond_next")?,
        nop: function("streamgraph_cond_nop")?,
        signal: function("streamgraph_cond_signal")?,
        switch: function("streamgraph_cond_switch")?,
    })
}

/// Compiles `source`, CUDA C that may call `cudaGraphSetConditional`, to PTX with NVRTC and
/// loads it into `ctx` (the driver resolves the call when it loads the PTX): the built-in
/// kernels, and user kernels that signal a loop ([`crate::Module::from_signalling_source`]).
/// `module` names it in errors.
///
/// Errors: [`Error::NoNvrtc`] without NVRTC, [`Error::Compile`] when no way of declaring
/// `cudaGraphSetConditional` compiles and loads (the log of each attempt is kept).
pub(crate) fn compile_module(
    ctx: &Arc<CudaContext>,
    module: &str,
    source: &str,
) -> Result<Arc<cudarc::driver::CudaModule>> {
    if !super::nvrtc_present() {
        return Err(Error::NoNvrtc {
            searched: super::searched_names("nvrtc"),
        });
    }
    ensure_current(ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| Error::driver("cuDeviceGetAttribute", e))?;
    let c = |s: String| {
        CString::new(s).map_err(|_| Error::InvalidArgument("an NVRTC option holds a NUL".into()))
    };
    let arch = c(format!("--gpu-architecture=compute_{major}{minor}"))?;
    // Own declaration first (no headers needed), then the device runtime's header.
    let mut attempts: Vec<Vec<CString>> = vec![
        vec![arch.clone(), c("--relocatable-device-code=true".into())?],
        vec![arch.clone()],
    ];
    for dir in include_dirs() {
        if std::path::Path::new(&dir)
            .join("cuda_device_runtime_api.h")
            .exists()
        {
            attempts.push(vec![
                arch.clone(),
                c(format!("--include-path={dir}"))?,
                c("--define-macro=STREAMGRAPH_DEVICE_RUNTIME_HEADER".into())?,
            ]);
        }
    }
    let name = c(module.split_whitespace().next().unwrap_or("module").into())?;
    let text = CString::new(source).map_err(|_| {
        Error::InvalidArgument(format!(
            "the CUDA C source of module `{module}` holds a NUL byte"
        ))
    })?;
    let mut logs = Vec::new();
    for options in attempts {
        let ptx = match nvrtc_compile_ptx(&name, &text, &options) {
            Ok(ptx) => ptx,
            Err(CompileFailure::Log(log)) | Err(CompileFailure::Call(_, log)) => {
                logs.push(format!("{options:?}: {log}"));
                continue;
            }
        };
        match load_module(ctx, ModuleImage::Ptx(&ptx)) {
            Ok(m) => return Ok(m),
            Err(e) => logs.push(format!("{options:?}: cuModuleLoadData failed: {e:?}")),
        }
    }
    Err(Error::Compile {
        module: module.into(),
        log: logs.join("\n"),
    })
}

/// CUDA C that kernels of a signalled loop (`STREAM: while FLAG, signalled { … }`) include:
/// `streamgraph_signal(flag, value)` writes `value` into a [`crate::DeviceFlag`] the kernel got as
/// `&mut flag` (an `unsigned int*`) and, when the kernel runs inside a captured signalled loop
/// on that flag, also sets the loop's condition to `value != 0`. Outside one (eagerly, or in a
/// graph outside the loop) it only writes the flag.
///
/// Compile such kernels with [`Module::from_signalling_source`](crate::Module::from_signalling_source),
/// which puts this text before the source and compiles it the way `cudaGraphSetConditional`
/// needs (PTX the driver links). Call it from one thread, as you would write the flag, and only
/// on a `DeviceFlag`: its words 2–3 hold the loop's condition handle.
///
/// ```
/// assert!(streamgraph::SIGNAL_HEADER.contains("streamgraph_signal(unsigned int* flag"));
/// ```
pub const SIGNAL_HEADER: &str = r#"
#ifndef STREAMGRAPH_SIGNAL_H
#define STREAMGRAPH_SIGNAL_H
#ifdef STREAMGRAPH_DEVICE_RUNTIME_HEADER
#include <cuda_device_runtime_api.h>
#else
extern "C" __device__ void cudaGraphSetConditional(unsigned long long handle, unsigned int value);
#endif
static __device__ __forceinline__ void streamgraph_signal(unsigned int* flag, unsigned int value) {
    *flag = value;
    unsigned long long handle = *(volatile unsigned long long*)(flag + 2);
    if (handle != 0ull) {
        cudaGraphSetConditional(handle, value != 0u ? 1u : 0u);
    }
}
#endif
"#;
