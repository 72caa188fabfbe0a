//! CUDA devices: finding the driver, counting devices, and the one context per device that
//! every stream, event, module and buffer of streamgraph lives in.
//!
//! A [`Device`] wraps the device's *primary* context (the one the CUDA runtime and most
//! libraries share), retained once per process and kept for its lifetime. Creating a
//! `Device` is cheap after the first time, and clones share one handle.
//!
//! Without a CUDA driver nothing panics: every entry point returns [`Error::NoDriver`].
//!
//! ```
//! use streamgraph::Device;
//!
//! if !Device::driver_available() {
//!     eprintln!("no CUDA driver on this machine");
//!     return Ok(());
//! }
//! let device = Device::new(None)?; // the current device (0 unless a context is current)
//! println!("{} devices; using {} ({})", Device::count()?, device.ordinal(), device.name()?);
//! let (least, greatest) = device.stream_priority_range()?;
//! println!("stream priorities from {least} (lowest) to {greatest} (highest)");
//! # Ok::<(), streamgraph::Error>(())
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::CudaContext;

use crate::error::{Error, Result};
use crate::ffi;

/// A device's graph memory ([`Device::graph_memory`]), in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GraphMemory {
    /// Used by graphs' allocations now.
    pub used: u64,
    /// Used at most since the last reset.
    pub used_high: u64,
    /// Reserved for graphs now.
    pub reserved: u64,
    /// Reserved at most since the last reset.
    pub reserved_high: u64,
}

/// A CUDA device and its primary context. Cheap to clone (an `Arc` inside).
///
/// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::Device;
    /// if Device::driver_available() {
    ///     println!("{} CUDA device(s)", Device::count()?);
    /// } else {
    ///     println!("no CUDA driver: plans only");
    /// }
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn driver_available() -> bool {
        ffi::driver_present()
    }

    /// How many CUDA devices the driver reports (0 when the driver has none).
    ///
    /// See [`cuDeviceGetCount`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html).
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::Device;
    /// match Device::count() {
    ///     Ok(n) => println!("{n} CUDA device(s)"), // 0 when the driver has none
    ///     Err(e) => assert!(e.is_unavailable()), // no driver here
    /// }
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::Device;
    /// match Device::new(Some(0)) {
    ///     Ok(device) => assert_eq!(device.ordinal(), 0),
    ///     Err(e) => assert!(e.is_unavailable()), // no driver or no GPU here
    /// }
    /// assert!(Device::new(Some(i32::MAX)).is_err()); // `Error::InvalidDevice` with a driver
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::cudarc::driver::CudaContext;
    /// use streamgraph::{Device, Stream};
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let ctx = CudaContext::new(0)?; // a cudarc program's context
    ///     let device = Device::from_cudarc(ctx);
    ///     assert_eq!(device, Device::new(Some(0))?); // the same primary context
    ///     let stream = Stream::new(&device, 0)?; // streamgraph's work in cudarc's context
    ///     Ok(())
    /// }
    /// ```
    pub fn from_cudarc(ctx: Arc<CudaContext>) -> Device {
        Device { ctx }
    }

    /// The cudarc context, for interop with code that uses cudarc directly.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::Device;
    /// let device = Device::new(None)?;
    /// let ctx = device.as_cudarc(); // `&Arc<CudaContext>`, for cudarc's API
    /// assert_eq!(ctx.ordinal(), device.ordinal() as usize);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn as_cudarc(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The device ordinal.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::Device;
    /// assert_eq!(Device::new(Some(0))?.ordinal(), 0);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn ordinal(&self) -> i32 {
        i32::try_from(self.ctx.ordinal()).unwrap_or(i32::MAX)
    }

    /// The device's name, e.g. `NVIDIA H200`.
    ///
    /// See [`cuDeviceGetName`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::Device;
    /// let device = Device::new(None)?;
    /// println!("device {}: {}", device.ordinal(), device.name()?); // e.g. `device 0: NVIDIA H200`
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn name(&self) -> Result<String> {
        self.ctx
            .name()
            .map_err(|e| Error::driver("cuDeviceGetName", e))
    }

    /// The compute capability `(major, minor)`, e.g. `(9, 0)` for Hopper.
    ///
    /// See [`cuDeviceGetAttribute`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::Device;
    /// let (major, minor) = Device::new(None)?.compute_capability()?;
    /// println!("sm_{major}{minor}"); // `sm_90` on an H100 or H200
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn compute_capability(&self) -> Result<(i32, i32)> {
        self.ctx
            .compute_capability()
            .map_err(|e| Error::driver("cuDeviceGetAttribute", e))
    }

    /// The range of stream priorities, `(least, greatest)`: e.g. `(0, -5)`; a lower number is
    /// a higher priority.
    ///
    /// See [`cuCtxGetStreamPriorityRange`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::Device;
    /// let (least, greatest) = Device::new(None)?.stream_priority_range()?;
    /// assert!(greatest <= least); // a lower number is a higher priority
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        ffi::stream_priority_range(&self.ctx)
            .map_err(|e| Error::driver("cuCtxGetStreamPriorityRange", e))
    }

    /// Free and total device memory in bytes, `(free, total)`, as the driver reports them for
    /// this device (other processes' allocations included).
    ///
    /// See [`cuMemGetInfo`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::Device;
    /// let (free, total) = Device::new(None)?.memory_info()?;
    /// assert!(free <= total);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        ffi::memory_info(&self.ctx).map_err(|e| Error::driver("cuMemGetInfo", e))
    }

    /// What graphs with temporaries hold of this device's memory now and at most since the
    /// last [`Device::reset_graph_memory_high`] (`cuDeviceGetGraphMemAttribute`): the bytes
    /// their allocations use, and the bytes the driver reserved for them (which it keeps
    /// for the next launch until [`Device::trim_graph_memory`]).
    ///
    /// # Examples
    /// ```no_run
    /// use streamgraph::Device;
    /// let device = Device::new(None)?;
    /// let memory = device.graph_memory()?;
    /// assert!(memory.used_high >= memory.used);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn graph_memory(&self) -> Result<GraphMemory> {
        let [used, used_high, reserved, reserved_high] = ffi::temp::graph_memory(&self.ctx)
            .map_err(|e| Error::driver("cuDeviceGetGraphMemAttribute", e))?;
        Ok(GraphMemory {
            used,
            used_high,
            reserved,
            reserved_high,
        })
    }

    /// Resets the high-water marks of [`Device::graph_memory`] to the current values.
    pub fn reset_graph_memory_high(&self) -> Result<()> {
        ffi::temp::reset_graph_memory_high(&self.ctx)
            .map_err(|e| Error::driver("cuDeviceSetGraphMemAttribute", e))
    }

    /// Returns the memory reserved for graphs with temporaries that none of them uses now to
    /// the driver (`cuDeviceGraphMemTrim`); the next launch of such a graph reserves it again.
    pub fn trim_graph_memory(&self) -> Result<()> {
        ffi::temp::trim_graph_memory(&self.ctx)
            .map_err(|e| Error::driver("cuDeviceGraphMemTrim", e))
    }

    /// How much memory the device's default memory pool — where eager runs allocate their
    /// temporaries — keeps for later allocations instead of returning it to the driver at
    /// each synchronization (its release threshold, 0 by default). Raise it (e.g. to
    /// `u64::MAX`) so that steady-state runs allocate without the driver.
    ///
    /// # Examples
    /// ```no_run
    /// use streamgraph::Device;
    /// Device::new(None)?.set_temp_release_threshold(256 << 20)?; // keep up to 256 MiB
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn set_temp_release_threshold(&self, bytes: u64) -> Result<()> {
        ffi::temp::set_release_threshold(&self.ctx, bytes)
            .map_err(|e| Error::driver("cuMemPoolSetAttribute", e))
    }

    /// Blocks until all work on every stream of this device has finished.
    ///
    /// See [`cuCtxSynchronize`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, DeviceBuffer, Stream};
    /// let device = Device::new(None)?;
    /// let (a, b) = (Stream::new(&device, 0)?, Stream::new(&device, 0)?);
    /// let mut x = DeviceBuffer::<f32>::zeros(&device, 1024)?;
    /// let mut y = DeviceBuffer::<f32>::zeros(&device, 1024)?;
    /// a.fill(&mut x, 1.0)?;
    /// b.fill(&mut y, 2.0)?;
    /// device.synchronize()?; // both fills have finished
    /// assert!(a.query()? && b.query()?);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
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
