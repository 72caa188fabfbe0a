//! Device `while` / `if` / `switch` blocks in a capture: CUDA conditional nodes (CUDA 12.4+;
//! `SWITCH` nodes 12.8+).
//!
//! A block is captured as (README "Loops and branches on the device"): a tiny built-in kernel that copies the block's
//! [`crate::DeviceFlag`] into a conditional handle, then a conditional node (`WHILE`, or `IF`
//! with an optional else body) whose body graphs are captured on streams of their own with
//! `cuStreamBeginCaptureToGraph`; an `if` with an `else` is two `IF` nodes after one kernel
//! that sets their handles to "flag non-zero" and "flag zero" (an `IF` node with an else
//! graph, run inside a `WHILE` body with its else taken, did not complete on driver 580); at the end of a `while` body a second built-in kernel reads
//! the flag again (and counts iterations for `limit`). A `switch` is one `SWITCH` node with a
//! body per arm, after a kernel that maps the index's value to its arm's body (a value no arm
//! takes maps past the last body: nothing runs); on a driver older than CUDA 12.8 it is one
//! `IF` node per arm after a kernel that opens the chosen one's handle only. User kernels
//! never see the handle.
//! Blocks of one body are issued one after another (`Frame::follow_last_block`): on driver 580,
//! conditional nodes side by side in one body graph now and then never finish a launch.
//!
//! The built-in kernels are compiled with NVRTC to PTX once per context and cached; the driver
//! resolves `cudaGraphSetConditional` when it loads the PTX.

use std::ffi::CString;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaStream, DriverError};

use super::capture::{capture_state, tip_node, CaptureModeRaw};
use super::cond_source::SOURCE;
use super::ensure_current;
use super::graph::{NodeHandle, OwnedGraph};
use super::launch::{
    launch_kernel, load_module, module_function, CodeOwner, KernelArg, LoadedFunction,
};
use super::memory::Holder;
use super::status::CaptureStatus;
use super::{nvrtc_compile_ptx, CompileFailure, ModuleImage};
use crate::error::{CaptureFault, Error, Result};
use crate::operand::{Dim3, LaunchConfig};
use crate::program::SwitchArm;

/// The built-in kernels of one context.
#[derive(Debug)]
pub(crate) struct CondKernels {
    begin: LoadedFunction,
    branch: LoadedFunction,
    next: LoadedFunction,
    nop: LoadedFunction,
    signal: LoadedFunction,
    switch: LoadedFunction,
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

/// A conditional node's body graph. The node owns it (it is destroyed with the graph); it is
/// only meaningful while the graph it belongs to lives, which [`OwnedGraph`] checks by
/// identity before it reads one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyGraph {
    pub(super) raw: sys::CUgraph,
    /// The outermost graph of the capture, as an identity.
    pub(super) root: usize,
}

// SAFETY: an opaque driver handle that Rust never dereferences; it is only passed to the
// driver through `OwnedGraph`, which checks that it belongs to that (live) graph.
unsafe impl Send for BodyGraph {}
// SAFETY: as above.
unsafe impl Sync for BodyGraph {}

/// Which conditional node a block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CondKind {
    /// `while`.
    While,
    /// `if`, with or without an `else` body.
    If {
        /// Whether there is an `else` body (the node gets two body graphs).
        otherwise: bool,
    },
    /// `switch`, with these arms (the `_` arm, if any, last).
    Switch {
        /// The statement's arms.
        arms: &'static [SwitchArm],
    },
}

/// The most valued arms a captured `switch` has: the built-in kernel takes their values (and,
/// on an older driver, one handle per arm) as one argument each.
pub(crate) const MAX_SWITCH_ARMS: usize = 64;

/// The `streamgraph_handles` argument of the switch kernel: one handle per body (the valued
/// arms' and the `_` arm's) on a driver without `SWITCH` nodes, else the node's one.
#[repr(C)]
#[derive(Clone, Copy)]
struct SwitchHandles {
    h: [u64; MAX_SWITCH_ARMS + 1],
}

/// The `streamgraph_arms` argument of the switch kernel: the valued arms' values in arm order,
/// and the body a value none of them takes runs (the `_` arm's, or past the last body).
#[repr(C)]
#[derive(Clone, Copy)]
struct SwitchTable {
    count: u32,
    fallback: u32,
    values: [u32; MAX_SWITCH_ARMS],
}

impl SwitchTable {
    /// The table of `arms`: refused when a valued arm follows `_`, or there are more than
    /// [`MAX_SWITCH_ARMS`] valued arms or none at all.
    fn of(arms: &[SwitchArm]) -> Result<SwitchTable> {
        let refuse = |why: &str| {
            Err(Error::InvalidArgument(format!(
                "a device `switch` cannot be captured: {why}"
            )))
        };
        if arms.is_empty() {
            return refuse("it has no arms");
        }
        let mut table = SwitchTable {
            count: 0,
            fallback: u32::MAX,
            values: [0; MAX_SWITCH_ARMS],
        };
        for (k, arm) in arms.iter().enumerate() {
            match arm.value {
                None if k + 1 == arms.len() => table.fallback = k as u32,
                None => return refuse("its `_` arm is not its last"),
                Some(_) if k >= MAX_SWITCH_ARMS => {
                    return refuse(&format!("it has more than {MAX_SWITCH_ARMS} valued arms"));
                }
                Some(v) => {
                    table.values[k] = v;
                    table.count += 1;
                }
            }
        }
        Ok(table)
    }
}

/// Whether the driver runs `SWITCH` conditional nodes (CUDA 12.8+, and a binding that names
/// them).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VERSION.html>
fn switch_nodes() -> Result<Option<sys::CUgraphConditionalNodeType>> {
    let mut version: std::ffi::c_int = 0;
    // SAFETY: `version` is a valid out-pointer; the call reads no other state.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| Error::driver("cuDriverGetVersion", e))?;
    Ok(switch_type().filter(|_| version >= 12080))
}

#[cfg(not(any(feature = "cuda-12040", feature = "cuda-12050", feature = "cuda-12060")))]
fn switch_type() -> Option<sys::CUgraphConditionalNodeType> {
    Some(sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_SWITCH)
}

/// Bindings older than CUDA 12.8 name no `SWITCH` node.
#[cfg(any(feature = "cuda-12040", feature = "cuda-12050", feature = "cuda-12060"))]
fn switch_type() -> Option<sys::CUgraphConditionalNodeType> {
    None
}

/// The device words a block's built-in kernels use: the flag's value address, the address of
/// the iteration counter (a word the capture allocated for this `while` statement, never the
/// flag's: loops sharing a flag must not share a count), and the iteration limit; whether the
/// block is a signalled `while` (its handle left in the flag's words 2–3 for its body's
/// kernels, no limit).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CondFlag {
    pub(crate) value: u64,
    pub(crate) counter: u64,
    pub(crate) limit: Option<u32>,
    pub(crate) signalled: bool,
}

/// A conditional node just added to a capture.
#[derive(Debug)]
pub(crate) struct Conditional {
    /// The built-in kernel node before it.
    pub(crate) begin: NodeHandle,
    /// The conditional node.
    pub(crate) node: NodeHandle,
    /// The other conditional nodes of the block: the second `IF` node of an `if` with an
    /// `else` (its body is the `else`), the `IF` nodes of a `switch`'s arms after the first
    /// on a driver without `SWITCH` nodes.
    pub(crate) others: Vec<NodeHandle>,
    /// Its body graphs, one per branch (one, or two for an `if` with `else`, one per arm of
    /// a `switch`).
    pub(crate) bodies: Vec<BodyGraph>,
    /// The conditional handle, for the kernel at the end of each `while` iteration.
    pub(crate) handle: u64,
}

fn one_thread() -> LaunchConfig {
    LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(1),
        shared_mem_bytes: 0,
    }
}

/// Launches built-in kernel `func` with `(handle, flag, counter, limit, bounded)`.
fn launch_builtin(
    func: &LoadedFunction,
    stream: &CudaStream,
    handle: u64,
    flag: &CondFlag,
) -> Result<(), DriverError> {
    let (limit, bounded) = match flag.limit {
        Some(n) => (n, 1u32),
        None => (0u32, 0u32),
    };
    let args = [
        KernelArg::by_ref(&handle, None, Holder::FOREIGN),
        KernelArg::by_ref(&flag.value, None, Holder::FOREIGN),
        KernelArg::by_ref(&flag.counter, None, Holder::FOREIGN),
        KernelArg::by_ref(&limit, None, Holder::FOREIGN),
        KernelArg::by_ref(&bounded, None, Holder::FOREIGN),
    ];
    // The built-in kernels take (u64, pointer, pointer, u32, u32): exactly these values.
    launch_kernel(func, stream, &one_thread(), &args)
}

/// Adds a block at the tip of the capturing `stream`: the built-in `begin` kernel, then a
/// conditional node of `kind` after it, which becomes the stream's only dependency. `parent`
/// is the body graph the stream captures into, when the block is nested in another.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
pub(crate) fn add_conditional(
    stream: &CudaStream,
    kernels: &CondKernels,
    kind: CondKind,
    flag: &CondFlag,
    parent: Option<BodyGraph>,
) -> Result<Conditional> {
    let ctx = stream.context();
    ensure_current(ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let (status, graph, _) =
        capture_state(stream).map_err(|e| Error::driver("cuStreamGetCaptureInfo", e))?;
    match status {
        CaptureStatus::Active if !graph.is_null() => {}
        CaptureStatus::Invalidated => return Err(Error::capture(CaptureFault::Invalidated)),
        _ => return Err(Error::capture(CaptureFault::Unjoined)),
    }
    let create = || -> Result<sys::CUgraphConditionalHandle> {
        let mut handle: sys::CUgraphConditionalHandle = 0;
        // SAFETY: `graph` is the graph `stream` is capturing into (alive while the capture
        // runs); `ctx` is the stream's live context; `handle` is a valid out-pointer.
        unsafe { sys::cuGraphConditionalHandleCreate(&mut handle, graph, ctx.cu_ctx(), 0, 0) }
            .result()
            .map_err(|e| Error::driver("cuGraphConditionalHandleCreate", e))?;
        Ok(handle)
    };
    let handle = create()?;
    // Each node's type and the number of its body graphs.
    let (type_, size, handles) = match kind {
        CondKind::While if flag.signalled => {
            let args = [
                KernelArg::by_ref(&handle, None, Holder::FOREIGN),
                KernelArg::by_ref(&flag.value, None, Holder::FOREIGN),
            ];
            // The signal kernel takes (u64, pointer): exactly these values.
            launch_kernel(&kernels.signal, stream, &one_thread(), &args)
                .map_err(|e| Error::driver("cuLaunchKernel", e))?;
            (
                sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE,
                1,
                vec![handle],
            )
        }
        CondKind::While => {
            launch_builtin(&kernels.begin, stream, handle, flag)
                .map_err(|e| Error::driver("cuLaunchKernel", e))?;
            (
                sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE,
                1,
                vec![handle],
            )
        }
        CondKind::If { otherwise: false } => {
            launch_builtin(&kernels.begin, stream, handle, flag)
                .map_err(|e| Error::driver("cuLaunchKernel", e))?;
            (
                sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF,
                1,
                vec![handle],
            )
        }
        CondKind::If { otherwise: true } => {
            let other = create()?;
            let args = [
                KernelArg::by_ref(&handle, None, Holder::FOREIGN),
                KernelArg::by_ref(&other, None, Holder::FOREIGN),
                KernelArg::by_ref(&flag.value, None, Holder::FOREIGN),
            ];
            // The branch kernel takes (u64, u64, pointer): exactly these values.
            launch_kernel(&kernels.branch, stream, &one_thread(), &args)
                .map_err(|e| Error::driver("cuLaunchKernel", e))?;
            (
                sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF,
                1,
                vec![handle, other],
            )
        }
        CondKind::Switch { arms } => {
            let table = SwitchTable::of(arms)?;
            let switch = switch_nodes()?;
            let mut handles = vec![handle];
            if switch.is_none() {
                for _ in 1..arms.len() {
                    handles.push(create()?);
                }
            }
            let mut raw = SwitchHandles {
                h: [0; MAX_SWITCH_ARMS + 1],
            };
            // At most one handle per body (checked by the table above).
            let slots = raw.h.get_mut(..handles.len()).ok_or(Error::Internal {
                invariant: "a captured `switch` has at most one body per handle slot",
            })?;
            slots.copy_from_slice(&handles);
            let (nodes, chain) = (handles.len() as u32, u32::from(switch.is_none()));
            let args = [
                KernelArg::by_ref(&raw, None, Holder::FOREIGN),
                KernelArg::by_ref(&nodes, None, Holder::FOREIGN),
                KernelArg::by_ref(&chain, None, Holder::FOREIGN),
                KernelArg::by_ref(&flag.value, None, Holder::FOREIGN),
                KernelArg::by_ref(&table, None, Holder::FOREIGN),
            ];
            // The switch kernel takes (handles, u32, u32, pointer, arms): exactly these values,
            // the two structures `#[repr(C)]` copies of the kernel's.
            launch_kernel(&kernels.switch, stream, &one_thread(), &args)
                .map_err(|e| Error::driver("cuLaunchKernel", e))?;
            match switch {
                Some(t) => (t, arms.len() as u32, handles),
                None => (
                    sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF,
                    1,
                    handles,
                ),
            }
        }
    };
    let begin = tip_node(stream, "the built-in kernel")?;
    let root = parent.map_or(graph as usize, |p| p.root);
    let mut nodes = Vec::with_capacity(handles.len());
    let mut bodies = Vec::with_capacity(handles.len());
    for &h in &handles {
        // SAFETY: `CUgraphNodeParams` is a plain C struct (integers, raw pointers and a union
        // of such), for which all-zero bytes are a valid value, the documented way to
        // initialise it.
        let mut params: sys::CUgraphNodeParams = unsafe { std::mem::zeroed() };
        params.type_ = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
        params.__bindgen_anon_1.conditional = sys::CUDA_CONDITIONAL_NODE_PARAMS {
            handle: h,
            type_,
            size,
            phGraph_out: std::ptr::null_mut(),
            ctx: ctx.cu_ctx(),
        };
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        let dep = begin.raw();
        // SAFETY: `graph` is live (capturing); `dep` is a node of it (the kernel just
        // captured into it); `params` is initialised for a conditional node of this context;
        // the driver writes the node and the body graph array it owns into `node` and
        // `params`.
        unsafe { sys::cuGraphAddNode_v2(&mut node, graph, &dep, std::ptr::null(), 1, &mut params) }
            .result()
            .map_err(|e| Error::driver("cuGraphAddNode", e))?;
        // SAFETY: the union member written above is the one the driver filled in.
        let out = unsafe { params.__bindgen_anon_1.conditional.phGraph_out };
        if out.is_null() {
            return Err(Error::InvalidArgument(
                "the driver returned no body graph for a conditional node".into(),
            ));
        }
        for k in 0..size as usize {
            // SAFETY: the driver returned an array of `size` body graphs at `out`, owned by the
            // node (alive with `graph`); it is read at once, within its length.
            let raw = unsafe { *out.add(k) };
            bodies.push(BodyGraph { raw, root });
        }
        nodes.push(node);
    }
    let count = nodes.len();
    // SAFETY: `stream` is capturing into `graph`, of which `nodes` (the new nodes) are nodes;
    // the array holds `count` of them.
    unsafe {
        sys::cuStreamUpdateCaptureDependencies_v2(
            stream.cu_stream(),
            nodes.as_mut_ptr(),
            std::ptr::null(),
            count,
            sys::CUstreamUpdateCaptureDependencies_flags::CU_STREAM_SET_CAPTURE_DEPENDENCIES as u32,
        )
    }
    .result()
    .map_err(|e| Error::driver("cuStreamUpdateCaptureDependencies", e))?;
    let mut handles_of = nodes
        .into_iter()
        .map(|n| NodeHandle::new(n, std::ptr::null_mut()));
    let node = handles_of.next().ok_or_else(|| {
        Error::InvalidArgument("no conditional node was added for a device block".into())
    })?;
    Ok(Conditional {
        begin,
        node,
        others: handles_of.collect(),
        bodies,
        handle,
    })
}

/// Starts capturing `stream` (not capturing yet) into `body`, with no dependencies.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn begin_body_capture(
    stream: &CudaStream,
    body: BodyGraph,
    mode: CaptureModeRaw,
) -> Result<()> {
    ensure_current(stream.context()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    // SAFETY: `body` is the body graph of a conditional node added to the capture under way
    // (alive with it); `stream` owns its live handle; no dependencies are passed.
    unsafe {
        sys::cuStreamBeginCaptureToGraph(
            stream.cu_stream(),
            body.raw,
            std::ptr::null(),
            std::ptr::null(),
            0,
            mode.raw(),
        )
    }
    .result()
    .map_err(|e| Error::driver("cuStreamBeginCaptureToGraph", e))
}

/// Launches the `next` kernel of a `while` at the tip of the body capture on `stream`; returns
/// its node.
pub(crate) fn launch_next(
    stream: &CudaStream,
    kernels: &CondKernels,
    handle: u64,
    flag: &CondFlag,
) -> Result<NodeHandle> {
    launch_builtin(&kernels.next, stream, handle, flag)
        .map_err(|e| Error::driver("cuLaunchKernel", e))?;
    tip_node(stream, "the built-in kernel")
}

/// Clears the handle a signalled loop left in its flag's words 2–3, at the tip of the capture
/// on `stream` (after the loop's node), so that no kernel run after the loop sets a condition
/// of a graph it is not in; returns the memset's node.
pub(crate) fn clear_signal(stream: &CudaStream, flag: &CondFlag) -> Result<NodeHandle> {
    ensure_current(stream.context()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    // SAFETY: `flag.value` is word 0 of a live `DeviceFlag`'s allocation of four words (the
    // graph being captured keeps it), so words 2 and 3 are device memory of it; device memory
    // is never a Rust object.
    unsafe { sys::cuMemsetD32Async(flag.value + 8, 0, 2, stream.cu_stream()) }
        .result()
        .map_err(|e| Error::driver("cuMemsetD32Async", e))?;
    tip_node(stream, "the memset that clears a signalled loop's handle")
}

/// Ends the body capture on `stream`. The body graph stays its node's: nothing is destroyed
/// here, whatever the outcome.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn end_body_capture(stream: &CudaStream) -> Result<(), DriverError> {
    ensure_current(stream.context())?;
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: `stream` owns its live handle; `graph` is a valid out-pointer. The graph handed
    // back is the body graph the capture was begun into, which its node owns.
    unsafe { sys::cuStreamEndCapture(stream.cu_stream(), &mut graph) }.result()
}

/// Launches an empty built-in kernel at the tip of the body capture on `stream`, for a body
/// that issued no work (a conditional node is not given an empty body: one that ran such a
/// body, next to other conditional nodes in a `WHILE` body, did not complete on driver 580,
/// nor did one whose body was a single empty node; and a `WHILE` body of the `next` kernel
/// alone faulted now and then with several such loops side by side); returns its node.
pub(crate) fn launch_nop(stream: &CudaStream, kernels: &CondKernels) -> Result<NodeHandle> {
    // The nop kernel takes no arguments.
    launch_kernel(&kernels.nop, stream, &one_thread(), &[])
        .map_err(|e| Error::driver("cuLaunchKernel", e))?;
    tip_node(stream, "the built-in kernel")
}

impl OwnedGraph {
    /// The nodes of `body`, a body graph of a conditional node of this graph.
    pub(crate) fn body_nodes(&self, body: BodyGraph) -> Result<Vec<NodeHandle>, DriverError> {
        self.check_body(body)?;
        // SAFETY: `body` belongs to this graph (checked), which is alive while `self` is.
        unsafe { self.nodes_in(body.raw) }
    }

    /// The edges of `body`, a body graph of a conditional node of this graph.
    pub(crate) fn body_edges(
        &self,
        body: BodyGraph,
    ) -> Result<Vec<(NodeHandle, NodeHandle)>, DriverError> {
        self.check_body(body)?;
        // SAFETY: as in `body_nodes`.
        unsafe { self.edges_in(body.raw) }
    }

    fn check_body(&self, body: BodyGraph) -> Result<(), DriverError> {
        if body.root == self.raw() as usize {
            Ok(())
        } else {
            Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(value: Option<u32>) -> SwitchArm {
        SwitchArm { value, start: 0 }
    }

    #[test]
    fn a_switch_table_lists_the_valued_arms_and_where_other_values_go() {
        let t = SwitchTable::of(&[arm(Some(7)), arm(Some(0)), arm(None)]).expect("a table");
        assert_eq!((t.count, t.fallback, &t.values[..2]), (2, 2, &[7, 0][..]));
        // Without `_`, other values go past the last body.
        let t = SwitchTable::of(&[arm(Some(3))]).expect("a table");
        assert_eq!((t.count, t.fallback), (1, u32::MAX));
        // The most arms: every valued one and `_`.
        let mut most: Vec<SwitchArm> = (0..MAX_SWITCH_ARMS as u32).map(|v| arm(Some(v))).collect();
        most.push(arm(None));
        let t = SwitchTable::of(&most).expect("a table");
        assert_eq!((t.count, t.fallback), (64, 64));
    }

    #[test]
    fn switch_tables_refuse_what_the_kernel_cannot_take() {
        let too_many: Vec<SwitchArm> = (0..=MAX_SWITCH_ARMS as u32).map(|v| arm(Some(v))).collect();
        for arms in [&[][..], &[arm(None), arm(Some(1))][..], &too_many[..]] {
            assert!(matches!(
                SwitchTable::of(arms),
                Err(Error::InvalidArgument(_))
            ));
        }
    }
}
