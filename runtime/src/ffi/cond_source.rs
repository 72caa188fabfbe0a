//! CUDA C of device blocks: the built-in kernels (compiled once per context by
//! [`super::conditional`]) and [`SIGNAL_HEADER`], which kernels of signalled loops include.

/// The built-in kernels. `begin` runs before the conditional node, `next` at the end of each
/// `while` iteration; both set the handle to "flag non-zero and (unbounded or under the
/// limit)". `begin` resets the iteration counter. `signal` runs before a signalled loop's node
/// instead of `begin`: it also leaves the handle in the flag's words 2–3, where the body's
/// kernels find it (`streamgraph_signal`, [`crate::SIGNAL_HEADER`]).
pub(super) const SOURCE: &str = r#"
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
