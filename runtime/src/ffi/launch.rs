//! Kernel launches: [`KernelArg`]s, `cuLaunchKernel`, and loading modules and their functions.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaStream, DriverError};

use super::owned::Owned;
use super::{memory, CUcontext, CUfunction};
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
    /// The value's size in bytes.
    size: u32,
    /// Whether every byte of the value is initialised (a primitive type), so that its bytes
    /// may be read and compared (a constant of the argument's type, folded where it is made).
    plain: bool,
    access: Option<BufferAccess>,
    holder: memory::Holder<'a>,
    _borrow: PhantomData<&'a ()>,
}

/// Whether `T` is a primitive type: no padding, every byte initialised. Decided by the type's
/// name, which for primitives is the bare keyword (any other type's name carries its path).
#[inline(always)]
fn plain<T>() -> bool {
    let candidates: &[&str] = match std::mem::size_of::<T>() {
        1 => &["u8", "i8", "bool"],
        2 => &["u16", "i16"],
        4 => &["u32", "i32", "f32"],
        8 => &["u64", "i64", "f64", "usize", "isize"],
        16 => &["u128", "i128"],
        _ => return false,
    };
    candidates.contains(&std::any::type_name::<T>())
}

impl<'a> KernelArg<'a> {
    /// A buffer argument: the address `access.range.ptr` is passed to the kernel.
    pub(crate) fn buffer(access: BufferAccess, holder: memory::Holder<'a>) -> Self {
        KernelArg {
            value: std::ptr::null_mut(),
            size: 8,
            plain: true,
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
            size: u32::try_from(std::mem::size_of::<T>()).unwrap_or(u32::MAX),
            plain: plain::<T>(),
            access,
            holder,
            _borrow: PhantomData,
        }
    }

    /// The buffer access this argument makes, if it is a buffer.
    pub fn access(&self) -> Option<BufferAccess> {
        self.access
    }

    /// Appends the argument's value to `out` as its length (one byte) and its bytes: a
    /// buffer's device address, or a by-value argument of a primitive type (see [`plain`]).
    /// `false`, with nothing appended, for values of other types, which cannot be compared.
    #[inline]
    pub(crate) fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        if let Some(access) = &self.access {
            let mut bytes = [8u8; 9];
            bytes[1..].copy_from_slice(&access.range.ptr.to_ne_bytes());
            out.extend_from_slice(&bytes);
            return true;
        }
        if self.size >= 256 || self.value.is_null() || !self.plain {
            return false;
        }
        // SAFETY: `value` points at a live `T` borrowed for `'a` (`by_ref`) of `size` bytes,
        // and `T` is a primitive type, all of whose bytes are initialised.
        let bytes =
            unsafe { std::slice::from_raw_parts(self.value.cast::<u8>(), self.size as usize) };
        // The common scalars as arrays of their size: copied without a call to `memcpy`.
        if let Ok(b) = <[u8; 4]>::try_from(bytes) {
            out.extend_from_slice(&[4, b[0], b[1], b[2], b[3]]);
        } else if let Ok(b) = <[u8; 8]>::try_from(bytes) {
            out.extend_from_slice(&[8, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        } else {
            out.reserve(1 + bytes.len());
            out.push(self.size as u8);
            out.extend_from_slice(bytes);
        }
        true
    }

    /// Whether `recorded` starts with what [`KernelArg::encode_value`] would append for this
    /// argument; how many bytes that is. Compares in place, appending nothing: what an
    /// argument update asks of every launch that did not change.
    #[inline]
    pub(crate) fn matches_encoded(&self, recorded: &[u8]) -> Option<usize> {
        if let Some(access) = &self.access {
            let b: &[u8; 9] = recorded.get(..9)?.try_into().ok()?;
            let ptr = u64::from_ne_bytes(b[1..].try_into().ok()?);
            return (b[0] == 8 && ptr == access.range.ptr).then_some(9);
        }
        if self.size >= 256 || self.value.is_null() || !self.plain {
            return None;
        }
        let n = self.size as usize;
        let b = recorded.get(..1 + n)?;
        if usize::from(b[0]) != n {
            return None;
        }
        // SAFETY: as in `encode_value`: `value` points at a live primitive `T` of `size` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(self.value.cast::<u8>(), n) };
        let same = match n {
            // The common scalars, without a call to `memcmp`.
            4 => <[u8; 4]>::try_from(&b[1..]).ok() == <[u8; 4]>::try_from(bytes).ok(),
            8 => <[u8; 8]>::try_from(&b[1..]).ok() == <[u8; 8]>::try_from(bytes).ok(),
            _ => b[1..] == *bytes,
        };
        same.then_some(1 + n)
    }

    /// Whether writing this argument over `out` ([`KernelArg::encode_over`]) would change
    /// the address of a buffer: `out` does not start with this buffer's value (always `false`
    /// for a value that is no buffer).
    #[inline]
    pub(crate) fn moves_over(&self, out: &[u8]) -> bool {
        self.access.as_ref().is_some_and(|access| {
            out.get(..9)
                .is_none_or(|b| b[0] != 8 || b[1..] != access.range.ptr.to_ne_bytes())
        })
    }

    /// Writes what [`KernelArg::encode_value`] would append for this argument at the start
    /// of `out`, over what `out` held: how many bytes that is. `None`, with `out` in an
    /// unspecified state, when the value cannot be compared or `out` is too short. What an
    /// argument update does for a changed launch: the node's values are written over the ones
    /// they replace (after [`KernelArg::moves_over`] says whether a buffer's address changes).
    #[inline]
    pub(crate) fn encode_over(&self, out: &mut [u8]) -> Option<usize> {
        if let Some(access) = &self.access {
            let b: &mut [u8; 9] = out.get_mut(..9)?.try_into().ok()?;
            b[0] = 8;
            b[1..].copy_from_slice(&access.range.ptr.to_ne_bytes());
            return Some(9);
        }
        if self.size >= 256 || self.value.is_null() || !self.plain {
            return None;
        }
        let n = self.size as usize;
        let b = out.get_mut(..1 + n)?;
        // SAFETY: as in `encode_value`: `value` points at a live primitive `T` of `size` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(self.value.cast::<u8>(), n) };
        b[0] = self.size as u8;
        match n {
            // The common scalars, without a call to `memcpy`.
            4 => <&mut [u8; 4]>::try_from(&mut b[1..])
                .ok()?
                .copy_from_slice(bytes),
            8 => <&mut [u8; 8]>::try_from(&mut b[1..])
                .ok()?
                .copy_from_slice(bytes),
            _ => b[1..].copy_from_slice(bytes),
        }
        Some(1 + n)
    }

    /// Whether the argument is a buffer's address (memory a node touches).
    #[inline]
    pub(crate) fn addresses_memory(&self) -> bool {
        self.access.is_some()
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

/// Calls `f` with the parameter array the driver takes for `args`: null without arguments, as
/// hand-written launches pass (a non-null empty array makes the driver read the function's
/// parameter layout), else one pointer per argument (see [`with_params`]). Always in line, with
/// `f`: the launch path calls it.
#[inline(always)]
pub(super) fn with_param_array<R>(
    args: &[KernelArg<'_>],
    f: impl FnOnce(*mut *mut c_void) -> R,
) -> R {
    if args.is_empty() {
        return f(std::ptr::null_mut());
    }
    with_params(args, |params| f(params.as_mut_ptr()))
}

/// Calls `f` with the argument pointers of `args`, on the stack for up to [`INLINE_ARGS`]
/// (only the slots used are written: no per-launch clearing of the whole array). The pointers
/// point into `args` (buffer addresses) or at values `args` borrows, so they are live for the
/// whole call of `f`.
#[inline(always)]
pub(super) fn with_params<R>(args: &[KernelArg<'_>], f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
    if args.len() <= INLINE_ARGS {
        let mut inline = [std::mem::MaybeUninit::<*mut c_void>::uninit(); INLINE_ARGS];
        for (slot, arg) in inline.iter_mut().zip(args) {
            slot.write(arg.param());
        }
        // SAFETY: the first `args.len()` slots were written just above, and
        // `MaybeUninit<T>` has the layout of `T`.
        let used = unsafe {
            std::slice::from_raw_parts_mut(inline.as_mut_ptr().cast::<*mut c_void>(), args.len())
        };
        f(used)
    } else {
        let mut list: Vec<_> = args.iter().map(KernelArg::param).collect();
        f(&mut list)
    }
}

/// `cuLaunchKernel` of `func` on `stream` with `args`, one per kernel parameter, in the
/// stream's context (made current only if the launch fails without it: [`super::in_context`]).
///
/// `func` comes from a `Kernel`, whose `unsafe` lookup (`Module::kernel`) carries the promise
/// that every launch of it passes arguments matching its C signature; the caller passes the
/// arguments its user gave for that kernel.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html>
#[inline(always)]
pub(crate) fn launch_kernel(
    func: &LoadedFunction,
    stream: &CudaStream,
    config: &LaunchConfig,
    args: &[KernelArg<'_>],
) -> Result<(), DriverError> {
    // `super::in_context` written out, with no closure on the path that succeeds: a closure
    // is a function of its own, which rustc's split of the crate into codegen units may leave
    // out of line (an extra call and 35 more instructions a captured launch).
    match launch_raw(func, stream, config, args) {
        Ok(()) => Ok(()),
        Err(e) => relaunch_in_context(e, func, stream, config, args),
    }
}

/// [`launch_kernel`] after its launch failed with `failed`: off the hot path.
#[cold]
#[inline(never)]
fn relaunch_in_context(
    failed: DriverError,
    func: &LoadedFunction,
    stream: &CudaStream,
    config: &LaunchConfig,
    args: &[KernelArg<'_>],
) -> Result<(), DriverError> {
    super::retry_in_context(stream.context(), failed, || {
        launch_raw(func, stream, config, args)
    })
}

/// `cuLaunchKernel` with the parameter pointers of `args` ([`with_param_array`]).
#[inline(always)]
fn launch_raw(
    func: &LoadedFunction,
    stream: &CudaStream,
    config: &LaunchConfig,
    args: &[KernelArg<'_>],
) -> Result<(), DriverError> {
    // SAFETY: `with_param_array` passes null (no arguments) or one pointer per argument of
    // `args`, each at a value `args` borrows for the whole call.
    with_param_array(args, |params| unsafe {
        launch_params(func, stream, config, params)
    })
}

/// `cuLaunchKernel` of `func` on `stream` with `config` and the parameter pointers `params`.
///
/// # Safety
///
/// `params` is null for a kernel without parameters, or points at one pointer per kernel
/// parameter, each at a value of the parameter's C type that lives for the whole call (the
/// driver copies the values before returning).
#[inline(always)]
unsafe fn launch_params(
    func: &LoadedFunction,
    stream: &CudaStream,
    config: &LaunchConfig,
    params: *mut *mut c_void,
) -> Result<(), DriverError> {
    let (g, b) = (config.grid, config.block);
    // SAFETY: `func` is a function of the module it holds loaded, and `stream` owns its
    // handle; `params` is as this function's contract says, and the values' number and types
    // match the kernel's C signature by the `Module::kernel` promise.
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
            params,
            std::ptr::null_mut(),
        )
    }
    .result()
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
    ctx: &CudaContext,
    name: &str,
) -> Result<Option<LoadedFunction>, DriverError> {
    match module.load_function(name) {
        Ok(f) => Ok(Some(LoadedFunction {
            func: f.cu_function(),
            ctx: ctx.cu_ctx(),
            module: Arc::new(Owned::new(module.clone())),
        })),
        Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What keeps a function's module loaded: the module, or a cudarc function (which holds its
/// module). Graphs keep one for every kernel they launch.
pub(crate) type CodeOwner = Arc<Owned>;

/// A kernel function together with the module that keeps it loaded: the only form in which a
/// function reaches the driver.
#[derive(Debug, Clone)]
pub(crate) struct LoadedFunction {
    pub(super) func: CUfunction,
    /// The context the module was loaded in, kept beside the function so that a launch
    /// checks its stream's context without reaching for the module.
    ctx: CUcontext,
    module: CodeOwner,
}

impl LoadedFunction {
    /// A function cudarc loaded in `ctx`; the function (with the module it holds) is kept
    /// alongside.
    pub(crate) fn from_cudarc(
        func: cudarc::driver::CudaFunction,
        ctx: &CudaContext,
    ) -> LoadedFunction {
        LoadedFunction {
            func: func.cu_function(),
            ctx: ctx.cu_ctx(),
            module: Arc::new(Owned::new(func)),
        }
    }
}

// SAFETY: a `CUfunction` is an opaque driver handle usable from any thread, and the module
// that owns it is held alongside (cudarc's `CudaModule` is `Send + Sync`); the `CUcontext`
// is only compared, never passed to the driver.
unsafe impl Send for LoadedFunction {}
// SAFETY: as above; sharing only lets threads pass the handle to the driver.
unsafe impl Sync for LoadedFunction {}

impl LoadedFunction {
    /// The function's identity, to compare launches by.
    pub(crate) fn handle(&self) -> FunctionHandle {
        FunctionHandle(self.func as usize)
    }

    /// Whether the function was loaded in `stream`'s context (launchable on it).
    #[inline]
    pub(crate) fn runs_on(&self, stream: &CudaStream) -> bool {
        self.ctx == stream.context().cu_ctx()
    }

    /// What keeps the function's module loaded.
    pub(crate) fn module(&self) -> &CodeOwner {
        &self.module
    }
}

/// Which kernel function a launch runs: an identity to compare, never passed to the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct FunctionHandle(usize);

impl FunctionHandle {
    /// The identity of a function handle the driver reported.
    pub(super) fn of_raw(func: CUfunction) -> FunctionHandle {
        FunctionHandle(func as usize)
    }

    /// The identity as a number (for parameter keys).
    pub(crate) fn identity(self) -> u64 {
        self.0 as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_primitive_values_expose_their_bytes() {
        assert!(plain::<u32>() && plain::<f32>() && plain::<u64>() && plain::<bool>());
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Padded {
            a: u8,
            b: u32,
        }
        assert!(!plain::<Padded>());
        let v = 0x0102_0304u32;
        let arg = KernelArg::by_ref(&v, None, memory::Holder::FOREIGN);
        let mut out = Vec::new();
        assert!(arg.encode_value(&mut out));
        assert_eq!(out, [&[4u8][..], &v.to_ne_bytes()].concat());
        let p = Padded { a: 1, b: 2 };
        let arg = KernelArg::by_ref(&p, None, memory::Holder::FOREIGN);
        out.clear();
        assert!(!arg.encode_value(&mut out));
        assert!(out.is_empty());
        assert_eq!((p.a, p.b), (1, 2));
    }

    #[test]
    fn values_written_in_place_are_the_encoded_ones() {
        use crate::operand::DeviceRange;
        use crate::program::AccessMode;
        let access = BufferAccess {
            range: DeviceRange {
                device: 0,
                ptr: 0x7f00_1234_5678,
                bytes: 64,
            },
            mode: AccessMode::Write,
        };
        let (a, b, c, d, e) = (
            7u8,
            0x0102u16,
            0x0304_0506u32,
            -2.5f64,
            0x0a0b_0c0d_0e0f_1011u128,
        );
        let args = [
            KernelArg::buffer(access, memory::Holder::FOREIGN),
            KernelArg::by_ref(&a, None, memory::Holder::FOREIGN),
            KernelArg::by_ref(&b, None, memory::Holder::FOREIGN),
            KernelArg::by_ref(&c, None, memory::Holder::FOREIGN),
            KernelArg::by_ref(&d, None, memory::Holder::FOREIGN),
            KernelArg::by_ref(&e, None, memory::Holder::FOREIGN),
        ];
        let mut appended = Vec::new();
        assert!(args.iter().all(|x| x.encode_value(&mut appended)));
        // Over stale bytes of the same length: the same bytes, which compare equal.
        let mut own = vec![0xAAu8; appended.len()];
        let mut at = 0;
        for x in &args {
            // Over stale bytes a buffer's address changes; a value's never counts.
            assert_eq!(x.moves_over(&own[at..]), x.addresses_memory());
            at += x.encode_over(&mut own[at..]).expect("room for the value");
        }
        assert_eq!(at, own.len());
        assert_eq!(own, appended);
        // Over its own address the buffer does not move.
        assert!(!args[0].moves_over(&own));
        let mut rest = &own[..];
        for x in &args {
            let n = x.matches_encoded(rest).expect("the values just written");
            rest = &rest[n..];
        }
        assert!(rest.is_empty());
        // Too little room, or a value that cannot be compared: nothing claimed.
        assert_eq!(args[0].encode_over(&mut [0u8; 8]), None);
        assert_eq!(args[3].encode_over(&mut [0u8; 4]), None);
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Pair(u32, u32);
        let p = Pair(1, 2);
        let opaque = KernelArg::by_ref(&p, None, memory::Holder::FOREIGN);
        assert_eq!(opaque.encode_over(&mut [0u8; 16]), None);
        assert_eq!((p.0, p.1), (1, 2));
    }

    #[test]
    fn argument_arrays_hold_every_pointer_in_order() {
        let values = [1u32, 2, 3];
        let args: Vec<_> = values
            .iter()
            .map(|v| KernelArg::by_ref(v, None, memory::Holder::FOREIGN))
            .collect();
        with_params(&args, |p| {
            assert_eq!(p.len(), 3);
            for (ptr, v) in p.iter().zip(&values) {
                assert_eq!(*ptr as *const u32, v as *const u32);
            }
        });
        with_params(&[], |p| assert!(p.is_empty()));
        let many: Vec<_> = (0..INLINE_ARGS + 1)
            .map(|_| KernelArg::by_ref(&values[0], None, memory::Holder::FOREIGN))
            .collect();
        with_params(&many, |p| assert_eq!(p.len(), INLINE_ARGS + 1));
    }
}
