//! CUDA devices: finding the driver, counting devices, and the one context per device that
//! every stream, event, module and buffer of streamgraph lives in.
//!
//! A [`Device`] wraps the device's *primary* context (the one the CUDA runtime and most
//! libraries share), retained once per process and kept for its lifetime. Creating a
//! `Device` is cheap after the first time, and clones share one handle.
//!
//! Without a CUDA driver nothing panics: every entry point returns [`Error::NoDriver`].
//!
//! ```no_run
//! use streamgraph_runtime::Device;
//!
//! if !Device::driver_available() {
//!     eprintln!("no CUDA driver on this machine");
//!     return Ok(());
//! }
//! let device = Device::new(None)?; // the current device (0 unless a context is current)
//! println!("{} devices; using {} ({})", Device::count()?, device.ordinal(), device.name()?);
//! let (least, greatest) = device.stream_priority_range()?;
//! println!("stream priorities from {least} (lowest) to {greatest} (highest)");
//! # Ok::<(), streamgraph_runtime::Error>(())
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::CudaContext;

use crate::error::{Error, Result};
use crate::ffi;

/// A CUDA device and its primary context. Cheap to clone (an `Arc` inside).
///
/// ```
/// # extern crate streamgraph_runtime as streamgraph;
/// use streamgraph::{Device, Error};
/// # fn main() -> streamgraph::Result<()> {
/// // Runs anywhere: without a driver, `Device::new` is an `Error::NoDriver`, not a panic.
/// match Device::new(None) {
///     Ok(device) => {
///         let (free, total) = device.memory_info()?;
///         println!("{}: {free} of {total} bytes free", device.name()?);
///     }
///     Err(Error::NoDriver { .. } | Error::NoDevice) => println!("no GPU here"),
///     Err(e) => return Err(e),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Device {
    ctx: Arc<CudaContext>,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("ordinal", &self.ordinal())
            .finish()
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        self.ctx.cu_ctx() == other.ctx.cu_ctx()
    }
}

impl Eq for Device {}

/// The devices opened so far, by ordinal: a primary context is retained once per process.
fn opened() -> &'static Mutex<Vec<Option<Device>>> {
    static OPENED: OnceLock<Mutex<Vec<Option<Device>>>> = OnceLock::new();
    OPENED.get_or_init(|| Mutex::new(Vec::new()))
}

/// Fails with [`Error::NoDriver`] unless the driver library loads and `cuInit` succeeded.
/// Every public entry point that reaches the driver calls this first.
pub(crate) fn require_driver() -> Result<()> {
    match ffi::init() {
        None => Err(Error::NoDriver {
            searched: ffi::searched_names("cuda"),
        }),
        Some(Ok(())) => Ok(()),
        Some(Err(e)) if ffi::is_no_device(e) => Err(Error::NoDevice),
        Some(Err(e)) => Err(Error::driver("cuInit", e)),
    }
}

impl Device {
    /// Whether a CUDA driver library can be loaded on this machine. Never panics.
    pub fn driver_available() -> bool {
        ffi::driver_present()
    }

    /// How many CUDA devices the driver reports (0 when the driver has none).
    ///
    /// See [`cuDeviceGetCount`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html).
    pub fn count() -> Result<i32> {
        match require_driver() {
            Err(Error::NoDevice) => return Ok(0),
            other => other?,
        }
        ffi::device_count().map_err(|e| Error::driver("cuDeviceGetCount", e))
    }

    /// Opens device `ordinal`; `None` or a negative ordinal means the current device: the
    /// device of the context current on this thread, else device 0.
    ///
    /// Errors: [`Error::NoDriver`], [`Error::NoDevice`], [`Error::InvalidDevice`].
    pub fn new(ordinal: Option<i32>) -> Result<Device> {
        require_driver()?;
        let count = ffi::device_count().map_err(|e| Error::driver("cuDeviceGetCount", e))?;
        if count == 0 {
            return Err(Error::NoDevice);
        }
        let ordinal = match ordinal {
            Some(o) if o >= 0 => o,
            _ => current_ordinal(count)?,
        };
        if ordinal >= count {
            return Err(Error::InvalidDevice { ordinal, count });
        }
        let index =
            usize::try_from(ordinal).map_err(|_| Error::InvalidDevice { ordinal, count })?;
        let mut opened = opened()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(Some(device)) = opened.get(index) {
            return Ok(device.clone());
        }
        let ctx =
            CudaContext::new(index).map_err(|e| Error::driver("cuDevicePrimaryCtxRetain", e))?;
        let device = Device { ctx };
        if opened.len() <= index {
            opened.resize(index + 1, None);
        }
        opened[index] = Some(device.clone());
        Ok(device)
    }

    /// Wraps a cudarc context (for interop). cudarc's own settings (its per-buffer event
    /// tracking) are left as they are: streamgraph allocates no cudarc buffers.
    pub fn from_cudarc(ctx: Arc<CudaContext>) -> Device {
        Device { ctx }
    }

    /// The cudarc context, for interop with code that uses cudarc directly.
    pub fn as_cudarc(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> i32 {
        i32::try_from(self.ctx.ordinal()).unwrap_or(i32::MAX)
    }

    /// The device's name, e.g. `NVIDIA H200`.
    ///
    /// See [`cuDeviceGetName`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html).
    pub fn name(&self) -> Result<String> {
        self.ctx
            .name()
            .map_err(|e| Error::driver("cuDeviceGetName", e))
    }

    /// The compute capability `(major, minor)`, e.g. `(9, 0)` for Hopper.
    ///
    /// See [`cuDeviceGetAttribute`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html).
    pub fn compute_capability(&self) -> Result<(i32, i32)> {
        self.ctx
            .compute_capability()
            .map_err(|e| Error::driver("cuDeviceGetAttribute", e))
    }

    /// The range of stream priorities, `(least, greatest)`: e.g. `(0, -5)`; a lower number is
    /// a higher priority.
    ///
    /// See [`cuCtxGetStreamPriorityRange`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html).
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        ffi::stream_priority_range(&self.ctx)
            .map_err(|e| Error::driver("cuCtxGetStreamPriorityRange", e))
    }

    /// Free and total device memory in bytes, `(free, total)`, as the driver reports them for
    /// this device (other processes' allocations included).
    ///
    /// See [`cuMemGetInfo`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        ffi::memory_info(&self.ctx).map_err(|e| Error::driver("cuMemGetInfo", e))
    }

    /// Blocks until all work on every stream of this device has finished.
    ///
    /// See [`cuCtxSynchronize`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html).
    pub fn synchronize(&self) -> Result<()> {
        ffi::ctx_synchronize(&self.ctx).map_err(|e| Error::driver("cuCtxSynchronize", e))
    }

    pub(crate) fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub(crate) fn from_ctx(ctx: &Arc<CudaContext>) -> Device {
        Device { ctx: ctx.clone() }
    }
}

/// The ordinal of the context current on this thread, else 0.
fn current_ordinal(count: i32) -> Result<i32> {
    let ctx = ffi::current_context().map_err(|e| Error::driver("cuCtxGetCurrent", e))?;
    if ctx.is_null() {
        return Ok(0);
    }
    let device = ffi::current_context_device().map_err(|e| Error::driver("cuCtxGetDevice", e))?;
    for ordinal in 0..count {
        if ffi::device_get(ordinal).map_err(|e| Error::driver("cuDeviceGet", e))? == device {
            return Ok(ordinal);
        }
    }
    Ok(0)
}
