//! Kernels: CUDA C compiled at run time with NVRTC (or PTX loaded as is), and safe launches.
//!
//! Launching a kernel with arguments of the wrong types is undefined behaviour that the
//! compiler cannot see, so streamgraph asks for that promise exactly once, when a kernel is
//! looked up: [`Module::kernel`] is `unsafe`. Every launch after that is safe.
//!
//! ```no_run
//! use streamgraph::{Device, DeviceBuffer, KernelArg, LaunchConfig, Module, Stream};
//!
//! const SOURCE: &str = r#"
//! extern "C" __global__ void scale(float* x, float k, unsigned n) {
//!     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < n) x[i] *= k;
//! }"#;
//!
//! let device = Device::new(None)?;
//! let stream = Stream::new(&device, 0)?;
//! let module = Module::from_cuda_source(&device, "scale", SOURCE)?;
//! // SAFETY: every launch below passes (float*, float, unsigned), the kernel's C signature.
//! let scale = unsafe { module.kernel("scale")? };
//!
//! let mut x = DeviceBuffer::from_host(&device, &[1.0f32; 1024])?;
//! let (k, n) = (2.0f32, 1024u32);
//! let config = LaunchConfig { grid: 4u32.into(), block: 256u32.into(), shared_mem_bytes: 0 };
//! let args = [KernelArg::write(&mut x), KernelArg::value(&k), KernelArg::value(&n)];
//! scale.launch_on(&stream, config, &args)?;
//! assert_eq!(x.to_vec_on(&stream)?, vec![2.0; 1024]);
//! # Ok::<(), streamgraph::Error>(())
//! ```

use std::ffi::CString;
use std::fmt;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule};

use crate::device::Device;
use crate::error::{Error, Result};
use crate::ffi::{self, FunctionHandle, KernelArg, LoadedFunction};
use crate::operand::{DeviceRange, LaunchConfig};
use crate::stream::{current_stream, Stream};

/// A loaded CUDA module (compiled code) on one device. Cheap to clone.
///
/// ```no_run
/// use streamgraph::{Device, Kernel, Module};
/// # fn main() -> streamgraph::Result<()> {
/// let device = Device::new(None)?;
/// let module = Module::from_cuda_source(&device, "saxpy", r#"
///     extern "C" __global__ void saxpy(float* y, const float* x, float a, unsigned n) {
///         unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
///         if (i < n) y[i] += a * x[i];
///     }"#)?; // compiled by NVRTC for this device; `Module::from_ptx` loads PTX
/// // SAFETY: every launch of `saxpy` passes (float*, const float*, float, unsigned).
/// let saxpy: Kernel = unsafe { module.kernel("saxpy")? };
/// assert_eq!(saxpy.name(), "saxpy");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

struct ModuleInner {
    /// `None` for the home of a kernel made from a cudarc function alone.
    cuda: Option<Arc<CudaModule>>,
    name: String,
    device: Device,
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module")
            .field("name", &self.inner.name)
            .field("device", &self.inner.device.ordinal())
            .finish()
    }
}

impl Module {
    /// Compiles CUDA C `source` with NVRTC for the device's compute capability
    /// (`--gpu-architecture=sm_XY`) and loads it. `name` names the module in messages.
    ///
    /// Kernels must be declared `extern "C" __global__` so that [`Module::kernel`] finds them
    /// by their plain name.
    ///
    /// Errors: [`Error::NoNvrtc`] when NVRTC cannot be loaded, [`Error::Compile`] with NVRTC's
    /// log when the source does not compile.
    ///
    /// See [NVRTC](https://docs.nvidia.com/cuda/nvrtc/index.html) and
    /// [`cuModuleLoadData`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Error, Module};
    /// let device = Device::new(None)?;
    /// let module = Module::from_cuda_source(&device, "zero", r#"
    ///     extern "C" __global__ void zero(float* x) { x[threadIdx.x] = 0.0f; }"#)?;
    /// assert_eq!(module.name(), "zero");
    /// let bad = Module::from_cuda_source(&device, "bad", "not CUDA C");
    /// assert!(matches!(bad, Err(Error::Compile { .. }))); // with NVRTC's log
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn from_cuda_source(device: &Device, name: &str, source: &str) -> Result<Module> {
        if !ffi::nvrtc_present() {
            return Err(Error::NoNvrtc {
                searched: ffi::searched_names("nvrtc"),
            });
        }
        let c_name = c_string(name, "module name")?;
        let c_source = c_string(source, "CUDA C source")?;
        let (major, minor) = device.compute_capability()?;
        let options = [c_string(
            &format!("--gpu-architecture=sm_{major}{minor}"),
            "option",
        )?];
        let cubin = ffi::nvrtc_compile(&c_name, &c_source, &options).map_err(|f| match f {
            ffi::CompileFailure::Log(log) => Error::Compile {
                module: name.to_string(),
                log,
            },
            ffi::CompileFailure::Call(call, what) => Error::Compile {
                module: name.to_string(),
                log: format!("{call} failed: {what}"),
            },
        })?;
        Module::load(device, name, ffi::ModuleImage::Cubin(cubin))
    }

    /// Loads PTX assembly text (as `nvcc --ptx` or NVRTC produce it). The driver compiles it
    /// for the device.
    ///
    /// See [`cuModuleLoadData`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Module};
    /// let device = Device::new(None)?;
    /// let ptx = ".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry nop() { ret; }\n";
    /// let module = Module::from_ptx(&device, "nop", ptx)?; // PTX text, e.g. `nvcc --ptx` output
    /// // SAFETY: `nop` takes no parameters, and every launch of it passes none.
    /// let nop = unsafe { module.kernel("nop")? };
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn from_ptx(device: &Device, name: &str, ptx: &str) -> Result<Module> {
        if ptx.contains('\0') {
            return Err(Error::InvalidArgument(format!(
                "PTX of module `{name}` contains a NUL byte; pass the PTX text only"
            )));
        }
        Module::load(device, name, ffi::ModuleImage::Ptx(ptx))
    }

    fn load(device: &Device, name: &str, image: ffi::ModuleImage<'_>) -> Result<Module> {
        let cuda = ffi::load_module(device.ctx(), image)
            .map_err(|e| Error::driver("cuModuleLoadData", e))?;
        Ok(Module {
            inner: Arc::new(ModuleInner {
                cuda: Some(cuda),
                name: name.to_string(),
                device: device.clone(),
            }),
        })
    }

    /// Compiles CUDA C whose kernels signal a loop ([`SIGNAL_HEADER`](crate::SIGNAL_HEADER)'s
    /// `streamgraph_signal`, for `STREAM: while FLAG, signalled { … }`) with NVRTC and loads
    /// it: the header is put before `source`, which is compiled to PTX that the driver links
    /// with `cudaGraphSetConditional` when it loads it. Such kernels run eagerly too (the
    /// signal then only writes the flag). `streamgraph_signal` reads the words after the
    /// value, which only a [`DeviceFlag`](crate::DeviceFlag) has: the promise of the `unsafe`
    /// [`Module::kernel`] lookup covers that every launch passes a flag where the kernel
    /// signals.
    ///
    /// Errors: [`Error::NoNvrtc`] without NVRTC; [`Error::Compile`] with NVRTC's log of each
    /// way of declaring `cudaGraphSetConditional` tried.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Module};
    /// let device = Device::new(None)?;
    /// let module = Module::from_signalling_source(&device, "countdown", r#"
    ///     extern "C" __global__ void countdown(unsigned int* left, unsigned int* go) {
    ///         unsigned int v = *left - 1u;
    ///         *left = v;
    ///         streamgraph_signal(go, v != 0u); // ends a signalled loop on `go` at zero
    ///     }"#)?;
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn from_signalling_source(device: &Device, name: &str, source: &str) -> Result<Module> {
        let text = format!("{}\n{source}", ffi::SIGNAL_HEADER);
        let cuda = ffi::conditional::compile_module(device.ctx(), name, &text)?;
        Ok(Module {
            inner: Arc::new(ModuleInner {
                cuda: Some(cuda),
                name: name.to_string(),
                device: device.clone(),
            }),
        })
    }

    /// A module cudarc loaded (e.g. from PTX its NVRTC compiled), to look its kernels up with
    /// [`Module::kernel`]. `device` is the device (context) it was loaded in: launches check
    /// that their stream belongs to it, and the driver refuses a function of another context.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::cudarc::{driver::CudaContext, nvrtc::compile_ptx};
    /// use streamgraph::{Device, Module};
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let ctx = CudaContext::new(0)?;
    ///     let ptx = compile_ptx(r#"extern "C" __global__ void nop() {}"#)?; // cudarc's NVRTC
    ///     let device = Device::from_cudarc(ctx.clone());
    ///     let module = Module::from_cudarc(&device, ctx.load_module(ptx)?);
    ///     // SAFETY: `nop` takes no parameters, and every launch of it passes none.
    ///     let nop = unsafe { module.kernel("nop")? };
    ///     Ok(())
    /// }
    /// ```
    pub fn from_cudarc(device: &Device, module: Arc<CudaModule>) -> Module {
        Module {
            inner: Arc::new(ModuleInner {
                cuda: Some(module),
                name: "cudarc module".to_string(),
                device: device.clone(),
            }),
        }
    }

    /// The cudarc module, to load functions or globals with cudarc's API.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Module};
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let device = Device::new(None)?;
    ///     let source = r#"extern "C" __global__ void k() {}"#;
    ///     let module = Module::from_cuda_source(&device, "k", source)?;
    ///     let cuda = module.as_cudarc().expect("a loaded module"); // `&Arc<CudaModule>`
    ///     let func = cuda.load_function("k")?; // cudarc's `CudaFunction`
    ///     Ok(())
    /// }
    /// ```
    pub fn as_cudarc(&self) -> Option<&Arc<CudaModule>> {
        self.inner.cuda.as_ref()
    }

    /// The module's name, as given when it was created.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Module};
    /// let device = Device::new(None)?;
    /// let source = r#"extern "C" __global__ void k() {}"#;
    /// let module = Module::from_cuda_source(&device, "kernels", source)?;
    /// assert_eq!(module.name(), "kernels");
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The device the module is loaded on.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Module};
    /// let device = Device::new(None)?;
    /// let source = r#"extern "C" __global__ void k() {}"#;
    /// let module = Module::from_cuda_source(&device, "k", source)?;
    /// assert_eq!(module.device(), &device);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn device(&self) -> &Device {
        &self.inner.device
    }

    /// Looks up the kernel `name` (an `extern "C" __global__` function).
    ///
    /// Errors: [`Error::KernelNotFound`] when the module has no such kernel.
    ///
    /// # Safety
    ///
    /// This is the one promise streamgraph cannot check: **every launch of the returned kernel
    /// (and of its clones) passes arguments matching the kernel's C signature** — as many as
    /// it declares, in order, each a [`KernelArg`] of the C type at that position (`float*` ⇔
    /// a `DeviceBuffer<f32>` or view, `float` ⇔ `KernelArg::value(&f32)`, a struct ⇔ a
    /// `#[repr(C)]` Rust struct of the same layout), device memory large enough for every
    /// access the kernel makes, and every pointer the kernel writes through passed as a write
    /// ([`KernelArg::write`], [`KernelArg::write_through`], `&mut x` in a pipeline), never as
    /// [`KernelArg::read`]: a read argument may be a shared borrow that others read meanwhile.
    /// Launches themselves are then safe.
    ///
    /// See [`cuModuleGetFunction`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Error, Module};
    /// let device = Device::new(None)?;
    /// let module = Module::from_cuda_source(&device, "scale", r#"
    ///     extern "C" __global__ void scale(float* x, float k) { x[threadIdx.x] *= k; }"#)?;
    /// // SAFETY: every launch of `scale` passes (float*, float), the buffer as a write and holding
    /// // an element for every thread.
    /// let scale = unsafe { module.kernel("scale")? };
    /// assert_eq!(scale.name(), "scale");
    /// // SAFETY: no kernel is returned, so nothing is launched.
    /// assert!(matches!(unsafe { module.kernel("other") }, Err(Error::KernelNotFound { .. })));
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub unsafe fn kernel(&self, name: &str) -> Result<Kernel> {
        let not_found = || Error::KernelNotFound {
            module: self.inner.name.clone(),
            name: name.to_string(),
        };
        if name.contains('\0') {
            return Err(not_found());
        }
        let Some(cuda) = &self.inner.cuda else {
            return Err(not_found());
        };
        let func = match ffi::module_function(cuda, self.inner.device.ctx(), name) {
            Ok(Some(f)) => f,
            Ok(None) => return Err(not_found()),
            Err(e) => return Err(Error::driver("cuModuleGetFunction", e)),
        };
        Ok(Kernel {
            func: Some(func),
            module: Some(self.inner.clone()),
            name: Arc::from(name),
        })
    }
}

fn c_string(text: &str, what: &str) -> Result<CString> {
    CString::new(text)
        .map_err(|_| Error::InvalidArgument(format!("the {what} contains a NUL byte; remove it")))
}

/// A kernel of a loaded [`Module`], ready to launch. Cheap to clone; `Send + Sync`.
///
/// ```no_run
/// use streamgraph::{Device, DeviceBuffer, Dim3, Kernel, KernelArg, LaunchConfig, Module, Stream};
/// # fn main() -> streamgraph::Result<()> {
/// let device = Device::new(None)?;
/// let stream = Stream::new(&device, 0)?;
/// let module = Module::from_cuda_source(&device, "fill", r#"
///     extern "C" __global__ void iota(unsigned* x, unsigned n) {
///         unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
///         if (i < n) x[i] = i;
///     }"#)?;
/// // SAFETY: every launch of `iota` passes (unsigned*, unsigned).
/// let iota: Kernel = unsafe { module.kernel("iota")? };
///
/// // Launched by hand (a pipeline's `launch` statement does this for you):
/// let n = 1000u32;
/// let mut x = DeviceBuffer::<u32>::zeros(&device, n as usize)?;
/// let (grid, block) = (Dim3::from(n.div_ceil(256)), Dim3::from(256));
/// let config = LaunchConfig { grid, block, shared_mem_bytes: 0 };
/// iota.launch_on(&stream, config, &[KernelArg::write(&mut x), KernelArg::value(&n)])?;
/// assert_eq!(x.to_vec_on(&stream)?[999], 999);
///
/// // Without a GPU, a stand-in with a name, for plans:
/// let planned = Kernel::for_planning("iota");
/// assert!(planned.device().is_none());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Kernel {
    /// The function with its module; `None` for a plan-only kernel.
    func: Option<LoadedFunction>,
    module: Option<Arc<ModuleInner>>,
    name: Arc<str>,
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("module", &self.module.as_ref().map(|m| &m.name))
            .field("device", &self.module.as_ref().map(|m| m.device.ordinal()))
            .finish()
    }
}

impl Kernel {
    /// A kernel from a function cudarc loaded (`CudaModule::load_function`), named `name` in
    /// messages and pictures. `device` is the device (context) its module was loaded in. The
    /// function, and with it its module, is kept loaded for as long as the kernel or a graph
    /// launching it lives.
    ///
    /// # Safety
    ///
    /// As for [`Module::kernel`]: every launch of the returned kernel (and of its clones)
    /// passes arguments matching the function's C signature.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::cudarc::{driver::CudaContext, nvrtc::compile_ptx};
    /// use streamgraph::{Device, Kernel};
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let ctx = CudaContext::new(0)?;
    ///     let module = ctx.load_module(compile_ptx(r#"extern "C" __global__ void nop() {}"#)?)?;
    ///     let func = module.load_function("nop")?; // cudarc's `CudaFunction`
    ///     // SAFETY: `nop` takes no parameters, and every launch of it passes none.
    ///     let nop = unsafe { Kernel::from_cudarc(&Device::from_cudarc(ctx), "nop", func) };
    ///     assert_eq!(nop.name(), "nop");
    ///     Ok(())
    /// }
    /// ```
    pub unsafe fn from_cudarc(device: &Device, name: &str, func: CudaFunction) -> Kernel {
        Kernel {
            func: Some(LoadedFunction::from_cudarc(func, device.ctx())),
            module: Some(Arc::new(ModuleInner {
                cuda: None,
                name: "cudarc function".to_string(),
                device: device.clone(),
            })),
            name: Arc::from(name),
        }
    }

    /// The kernel's name.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::Kernel;
    /// assert_eq!(Kernel::for_planning("axpy").name(), "axpy");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A kernel that can only be planned (no device, no code): for building a pipeline's plan
    /// on a machine without a GPU. Running or capturing it is an [`Error::PlanningOnly`].
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Kernel, Plan};
    /// pipeline! {
    ///     pipeline Scale(x: &mut DeviceBuffer<f32>, k: &Kernel) {
    ///         stream main;
    ///         main: launch k<<<4, 256>>>(&mut x, 2.0f32);
    ///     }
    /// }
    /// let k = Kernel::for_planning("scale");
    /// let mut x = DeviceBuffer::<f32>::for_planning(1024)?;
    /// assert_eq!(Plan::build(&Scale::new(&mut x, &k))?.len(), 1); // planned; not runnable
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn for_planning(name: &str) -> Kernel {
        Kernel {
            func: None,
            module: None,
            name: Arc::from(name),
        }
    }

    /// The device the kernel's module is loaded on (`None` for a plan-only kernel).
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::Kernel;
    /// // A loaded kernel: `Some` of its module's device; a plan-only kernel: `None`.
    /// assert!(Kernel::for_planning("k").device().is_none());
    /// ```
    pub fn device(&self) -> Option<&Device> {
        self.module.as_ref().map(|m| &m.device)
    }

    /// Launches the kernel on `stream` with `config` and `args` (one per kernel parameter).
    ///
    /// The stream must belong to the kernel's device. Returns once the launch is queued.
    /// Refused with [`Error::StreamCapturing`] while code outside streamgraph captures the
    /// stream (its graph would not keep the arguments' memory alive).
    ///
    /// See [`cuLaunchKernel`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, DeviceBuffer, KernelArg, LaunchConfig, Module, Stream};
    /// let device = Device::new(None)?;
    /// let stream = Stream::new(&device, 0)?;
    /// let module = Module::from_cuda_source(&device, "iota", r#"
    ///     extern "C" __global__ void iota(unsigned* x) { x[threadIdx.x] = threadIdx.x; }"#)?;
    /// // SAFETY: every launch of `iota` passes one `unsigned*`, as a write, of `block` elements.
    /// let iota = unsafe { module.kernel("iota")? };
    /// let mut x = DeviceBuffer::<u32>::zeros(&device, 256)?;
    /// let config = LaunchConfig { grid: 1u32.into(), block: 256u32.into(), shared_mem_bytes: 0 };
    /// iota.launch_on(&stream, config, &[KernelArg::write(&mut x)])?;
    /// assert_eq!(x.to_vec_on(&stream)?[255], 255);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    #[inline]
    pub fn launch_on(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        // On a lane of `stream` (`ffi/lane.rs`), which no capture other code begins can take.
        ffi::lane::on_lane(stream.as_cudarc(), "Kernel::launch_on", |lane| {
            self.issue_on(&Stream::lane(lane), config, args)
        })
    }

    /// [`Kernel::launch_on`] without the capture checks: a pipeline's launch statements, whose
    /// issuer checked its origin (eagerly) or is capturing them itself.
    // Always in line: left to the inliner, where it lands depends on how rustc splits the
    // crate into codegen units (a captured launch paid 35 instructions more once).
    #[inline(always)]
    pub(crate) fn issue_on(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        let Some(func) = &self.func else {
            return Err(Error::PlanningOnly { what: "kernel" });
        };
        if !func.runs_on(stream.as_cudarc()) {
            return Err(self.on_other_device(stream));
        }
        // One pass over the arguments: planning buffers are refused, cudarc memory ordered.
        let mut cudarc = false;
        for a in args {
            if a.access()
                .is_some_and(|a| a.range.device == DeviceRange::PLANNING)
            {
                return Err(Error::PlanningOnly { what: "buffer" });
            }
            cudarc |= a.is_cudarc();
        }
        if cudarc {
            return issue_ordered(func, stream, config, args);
        }
        // No context query first: the launch makes the stream's context current only if it
        // fails without it (`ffi::launch_kernel`). One call site of the launch, in line.
        ffi::launch_kernel(func, stream.as_cudarc(), &config, args)
            .map_err(|e| Error::driver("cuLaunchKernel", e))
    }

    /// The error of a launch on `stream`, of another device than the kernel's module.
    #[cold]
    fn on_other_device(&self, stream: &Stream) -> Error {
        Error::DeviceMismatch {
            what: "launching a kernel on a stream of another device",
            left: self.module.as_ref().map_or(-1, |m| m.device.ordinal()),
            right: stream.device().ordinal(),
        }
    }

    /// Launches the kernel on the current stream ([`current_stream`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, DeviceBuffer, KernelArg, LaunchConfig, Module, Stream};
    /// let device = Device::new(None)?;
    /// let stream = Stream::new(&device, 0)?;
    /// let module = Module::from_cuda_source(&device, "iota", r#"
    ///     extern "C" __global__ void iota(unsigned* x) { x[threadIdx.x] = threadIdx.x; }"#)?;
    /// // SAFETY: every launch of `iota` passes one `unsigned*`, as a write, of `block` elements.
    /// let iota = unsafe { module.kernel("iota")? };
    /// let mut x = DeviceBuffer::<u32>::zeros(&device, 256)?;
    /// let config = LaunchConfig { grid: 1u32.into(), block: 256u32.into(), shared_mem_bytes: 0 };
    /// stream.scope(|| iota.launch(config, &[KernelArg::write(&mut x)]))?; // launched on `stream`
    /// assert_eq!(x.to_vec_on(&stream)?[255], 255);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn launch(&self, config: LaunchConfig, args: &[KernelArg<'_>]) -> Result<()> {
        self.launch_on(&current_stream()?, config, args)
    }

    /// The function handle, for the capture and graph code.
    pub(crate) fn handle(&self) -> FunctionHandle {
        self.func
            .as_ref()
            .map_or_else(FunctionHandle::default, LoadedFunction::handle)
    }

    /// The function with its module (`None` for a plan-only kernel).
    pub(crate) fn loaded(&self) -> Option<&LoadedFunction> {
        self.func.as_ref()
    }

    /// The module the kernel lives in, which graphs keep loaded.
    pub(crate) fn cuda_module(&self) -> Option<&ffi::CodeOwner> {
        self.func.as_ref().map(LoadedFunction::module)
    }
}

/// [`Kernel::issue_on`] of a launch with cudarc memory among its arguments: ordered with
/// cudarc's streams around it, off the common path.
#[cold]
#[inline(never)]
fn issue_ordered(
    func: &ffi::LoadedFunction,
    stream: &Stream,
    config: LaunchConfig,
    args: &[KernelArg<'_>],
) -> Result<()> {
    ffi::ensure_current(stream.ctx()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    ffi::cudarc_order::cudarc_ordered(
        stream.as_cudarc(),
        args.iter().map(KernelArg::holder),
        || {
            ffi::launch_kernel(func, stream.as_cudarc(), &config, args)
                .map_err(|e| Error::driver("cuLaunchKernel", e))
        },
    )
}

impl From<cudarc::driver::LaunchConfig> for LaunchConfig {
    fn from(c: cudarc::driver::LaunchConfig) -> LaunchConfig {
        LaunchConfig {
            grid: c.grid_dim.into(),
            block: c.block_dim.into(),
            shared_mem_bytes: c.shared_mem_bytes,
        }
    }
}
