//! Kernel launches: [`KernelArg`]s, `cuLaunchKernel`, and loading modules and their functions.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaStream, DriverError};

use super::{memory, CUfunction};
use crate::operand::{BufferAccess, LaunchConfig};

/// One kernel argument: a pointer to its value (as `cuLaunchKernel` takes it), borrowed for
/// `'a`, and for buffers the memory it touches, how, and what keeps it allocated.
///
/// Made from references only, so its value pointer is live for `'a`; buffer arguments come
/// from [`crate::DeviceMemory`], whose foreign impls are `unsafe`, and carry their device
/// address in the argument itself (the launch points the driver at it).
#[derive(Debug, Clone, Copy)]
pub struct KernelArg<'a> {
    /// The value of a by-value argument; unused (null) for a buffer.
    value: *mut c_void,
    access: Option<BufferAccess>,
    holder: memory::Holder<'a>,
    _borrow: PhantomData<&'a ()>,
}

impl<'a> KernelArg<'a> {
    /// A buffer argument: the address `access.range.ptr` is passed to the kernel.
    pub(crate) fn buffer(access: BufferAccess, holder: memory::Holder<'a>) -> Self {
        KernelArg {
            value: std::ptr::null_mut(),
            access: Some(access),
            holder,
            _borrow: PhantomData,
        }
    }

    /// The pointer `cuLaunchKernel` reads this argument's value from: into `self` for a
    /// buffer, so it is live for as long as `self` is borrowed.
    #[inline]
    fn param(&self) -> *mut c_void {
        match &self.access {
            Some(access) => (&access.range.ptr as *const u64).cast_mut().cast(),
            None => self.value,
        }
    }

    /// An argument whose value lives at `value` for `'a`.
    pub(crate) fn by_ref<T>(
        value: &'a T,
        access: Option<BufferAccess>,
        holder: memory::Holder<'a>,
    ) -> Self {
        KernelArg {
            value: (value as *const T).cast_mut().cast(),
            access,
            holder,
            _borrow: PhantomData,
        }
    }

    /// The buffer access this argument makes, if it is a buffer.
    pub fn access(&self) -> Option<BufferAccess> {
        self.access
    }

    /// What keeps the argument's memory allocated.
    pub(crate) fn holder(&self) -> memory::HolderKind<'a> {
        self.holder.0
    }

    /// Whether the argument is memory of a cudarc slice (ordered around the launch).
    #[inline]
    pub(crate) fn is_cudarc(&self) -> bool {
        matches!(self.holder.0, memory::HolderKind::Cudarc(_))
    }
}

/// How many kernel arguments a launch collects on the stack before falling back to the heap.
const INLINE_ARGS: usize = 32;

/// Calls `f` with the argument pointers of `args`, on the stack for up to [`INLINE_ARGS`].
/// The pointers point into `args` (buffer addresses) or at values `args` borrows, so they are
/// live for the whole call of `f`.
#[inline]
pub(super) fn with_params<R>(args: &[KernelArg<'_>], f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
    if args.len() <= INLINE_ARGS {
        let mut inline = [std::ptr::null_mut(); INLINE_ARGS];
        for (slot, arg) in inline.iter_mut().zip(args) {
            *slot = arg.param();
        }
        f(&mut inline[..args.len()])
    } else {
        let mut list: Vec<_> = args.iter().map(KernelArg::param).collect();
        f(&mut list)
    }
}

/// `cuLaunchKernel` of `func` on `stream` with `args`, one per kernel parameter.
///
/// `func` comes from a `Kernel`, whose `unsafe` lookup (`Module::kernel`) carries the promise
/// that every launch of it passes arguments matching its C signature; the caller passes the
/// arguments its user gave for that kernel. The context of `func` is current (the hot path
/// checks it once).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html>
#[inline]
pub(crate) fn launch_kernel(
    func: &LoadedFunction,
    stream: &CudaStream,
    config: &LaunchConfig,
    args: &[KernelArg<'_>],
) -> Result<(), DriverError> {
    let (g, b) = (config.grid, config.block);
    with_params(args, |params| {
        // SAFETY: `func` is a function of the module it holds loaded, and `stream` owns its
        // handle; each pointer in `params` points at a value borrowed for the whole call (the
        // `KernelArg` lifetimes), and their number and types match the kernel's C signature by
        // the `Module::kernel` promise. The driver copies the values before returning.
        unsafe {
            sys::cuLaunchKernel(
                func.func,
                g.x,
                g.y,
                g.z,
                b.x,
                b.y,
                b.z,
                config.shared_mem_bytes,
                stream.cu_stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
    })
}

/// Code to load as a module: a CUBIN image (from NVRTC) or PTX text.
#[derive(Debug)]
pub(crate) enum ModuleImage<'a> {
    /// A CUBIN image.
    Cubin(Vec<u8>),
    /// PTX assembly text (no NUL byte).
    Ptx(&'a str),
}

/// `cuModuleLoadData` of `image` in `ctx`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html>
pub(crate) fn load_module(
    ctx: &Arc<CudaContext>,
    image: ModuleImage<'_>,
) -> Result<Arc<cudarc::driver::CudaModule>, DriverError> {
    let image = match image {
        ModuleImage::Cubin(bytes) => cudarc::nvrtc::Ptx::from_binary(bytes),
        ModuleImage::Ptx(text) => cudarc::nvrtc::Ptx::from_src(text),
    };
    super::unsafe_during_capture(|| ctx.load_module(image))
}

/// `cuModuleGetFunction`: the kernel `name` of `module`; `None` when it has none.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html>
pub(crate) fn module_function(
    module: &Arc<cudarc::driver::CudaModule>,
    name: &str,
) -> Result<Option<LoadedFunction>, DriverError> {
    match module.load_function(name) {
        Ok(f) => Ok(Some(LoadedFunction {
            func: f.cu_function(),
            module: Arc::new(memory::Owned::new(module.clone())),
        })),
        Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What keeps a function's module loaded: the module, or a cudarc function (which holds its
/// module). Graphs keep one for every kernel they launch.
pub(crate) type CodeOwner = Arc<memory::Owned>;

/// A kernel function together with the module that keeps it loaded: the only form in which a
/// function reaches the driver.
#[derive(Debug, Clone)]
pub(crate) struct LoadedFunction {
    pub(super) func: CUfunction,
    module: CodeOwner,
}

impl LoadedFunction {
    /// A function cudarc loaded; the function (with the module it holds) is kept alongside.
    pub(crate) fn from_cudarc(func: cudarc::driver::CudaFunction) -> LoadedFunction {
        LoadedFunction {
            func: func.cu_function(),
            module: Arc::new(memory::Owned::new(func)),
        }
    }
}

// SAFETY: a `CUfunction` is an opaque driver handle usable from any thread, and the module
// that owns it is held alongside (cudarc's `CudaModule` is `Send + Sync`).
unsafe impl Send for LoadedFunction {}
// SAFETY: as above; sharing only lets threads pass the handle to the driver.
unsafe impl Sync for LoadedFunction {}

impl LoadedFunction {
    /// The function's identity, to compare launches by.
    pub(crate) fn handle(&self) -> FunctionHandle {
        FunctionHandle(self.func as usize)
    }

    /// What keeps the function's module loaded.
    pub(crate) fn module(&self) -> &CodeOwner {
        &self.module
    }
}

/// Which kernel function a launch runs: an identity to compare, never passed to the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct FunctionHandle(usize);
