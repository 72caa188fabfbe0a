//! [`TempArena`]: one range of device addresses whose physical memory grows and shrinks, where
//! the graphs of a graph set place their temporaries at offsets their plans assign, and
//! [`TempLease`]: what one graph holds of it.
//!
//! Graph memory nodes take physical memory in the driver's graph-memory granules (32 MiB on
//! driver 580), so a graph whose temporaries peak at 2 MiB holds 32. An arena holds what its
//! graphs need, in the driver's allocation granularity (2 MiB on the GPUs streamgraph runs
//! on): its addresses are reserved once (`cuMemAddressReserve`, as many bytes as the device
//! has, so its base never moves) and backed as far as a graph needs (`cuMemCreate`,
//! `cuMemMap`, `cuMemSetAccess`), one chunk per granule. A graph placed in it holds a
//! lease of the bytes it uses from the base, in its keep-alive set ([`super::keep`]), which
//! lets go of it only once the graph's launches have finished; [`TempArena::shrink`] unmaps
//! the chunks no lease reaches. Graphs that never run at once (a graph set's) may overlap in
//! it; a lease says nothing about which bytes a graph's temporaries share with another's.
//!
//! <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VA.html>

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, DriverError};

use super::{after_global_capture, ensure_current, unsafe_during_capture};
use crate::error::{Error, Result};

/// Device addresses reserved once, backed by physical memory as far as the leases on them
/// reach (see the module docs). Shared by a graph set, its captures and the leases of its
/// graphs; unmapped and released when the last of them is gone.
#[derive(Debug)]
pub(crate) struct TempArena {
    ctx: Arc<CudaContext>,
    state: Mutex<ArenaState>,
}

#[derive(Debug, Default)]
struct ArenaState {
    /// The reservation, once made: its base and size.
    reserved: Option<(sys::CUdeviceptr, usize)>,
    /// The driver's allocation granularity of the device, once asked.
    granularity: usize,
    /// Physical memory mapped from the base, in order: each growth one chunk.
    chunks: Vec<Chunk>,
    /// The live leases: how many reach each extent (bytes from the base).
    leases: BTreeMap<usize, usize>,
    /// Whether the device cannot map memory this way (`None` until asked).
    unsupported: Option<bool>,
}

#[derive(Debug)]
struct Chunk {
    handle: sys::CUmemGenericAllocationHandle,
    bytes: usize,
}

impl ArenaState {
    fn mapped(&self) -> usize {
        self.chunks.iter().map(|c| c.bytes).sum()
    }
}

/// What one graph holds of a [`TempArena`]: the first `extent` bytes from its base stay
/// mapped while the lease lives.
#[derive(Debug)]
pub(crate) struct TempLease {
    arena: Arc<TempArena>,
    base: sys::CUdeviceptr,
    extent: usize,
}

impl TempLease {
    /// The arena's base address: the graph's temporaries are at offsets from it.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }
}

impl Drop for TempLease {
    fn drop(&mut self) {
        let mut state = self.arena.lock();
        if let Some(count) = state.leases.get_mut(&self.extent) {
            *count -= 1;
            if *count == 0 {
                state.leases.remove(&self.extent);
            }
        }
    }
}

/// A device allocation's properties: pinned device memory of the device `ordinal`.
fn properties(ordinal: i32) -> sys::CUmemAllocationProp {
    sys::CUmemAllocationProp {
        type_: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        requestedHandleTypes: sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: ordinal,
        },
        win32HandleMetaData: std::ptr::null_mut(),
        allocFlags: sys::CUmemAllocationProp_st__bindgen_ty_1 {
            compressionType: 0,
            gpuDirectRDMACapable: 0,
            usage: 0,
            reserved: [0; 4],
        },
    }
}

impl TempArena {
    /// An arena on `ctx`'s device; no driver call until the first lease.
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Arc<TempArena> {
        Arc::new(TempArena {
            ctx: ctx.clone(),
            state: Mutex::new(ArenaState::default()),
        })
    }

    /// The device the arena's memory is on.
    pub(crate) fn ordinal(&self) -> i32 {
        self.ctx.ordinal() as i32
    }

    fn lock(&self) -> MutexGuard<'_, ArenaState> {
        // A panic while the state was held leaves it consistent (each field is changed once
        // its driver call succeeded).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bytes of device memory mapped now.
    pub(crate) fn mapped(&self) -> usize {
        self.lock().mapped()
    }

    /// A lease of the first `extent` bytes, mapping more memory first where they are not;
    /// `None` when the device cannot map memory this way (its graphs then take graph memory
    /// nodes). Not while a stream of this thread captures: the driver's mapping calls are
    /// not allowed there.
    pub(crate) fn lease(self: &Arc<Self>, extent: usize) -> Result<Option<TempLease>> {
        let mut state = self.lock();
        if state.unsupported.is_none() {
            let supported = self
                .ctx
                .attribute(
                    sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                )
                .map_err(|e| Error::driver("cuDeviceGetAttribute", e))?;
            state.unsupported = Some(supported == 0);
        }
        if state.unsupported == Some(true) {
            return Ok(None);
        }
        let base = self.reserve(&mut state)?;
        let granularity = state.granularity;
        let need = extent
            .max(1)
            .checked_next_multiple_of(granularity)
            .ok_or_else(|| too_large(extent))?;
        let mapped = state.mapped();
        if need > mapped {
            self.map(&mut state, base, mapped, need - mapped)?;
        }
        *state.leases.entry(extent).or_insert(0) += 1;
        Ok(Some(TempLease {
            arena: self.clone(),
            base,
            extent,
        }))
    }

    /// The reservation's base, reserving (and asking the granularity) the first time.
    fn reserve(&self, state: &mut ArenaState) -> Result<sys::CUdeviceptr> {
        if let Some((base, _)) = state.reserved {
            return Ok(base);
        }
        ensure_current(&self.ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let prop = properties(self.ordinal());
        let mut granularity = 0usize;
        // SAFETY: both pointers are valid for the call; `prop` names a device of the context.
        unsafe {
            sys::cuMemGetAllocationGranularity(
                &mut granularity,
                &prop,
                sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            )
        }
        .result()
        .map_err(|e| Error::driver("cuMemGetAllocationGranularity", e))?;
        let granularity = granularity.max(1);
        let mut total = 0usize;
        // SAFETY: `total` is a valid out-pointer; the device belongs to the current context.
        unsafe { sys::cuDeviceTotalMem_v2(&mut total, self.ctx.cu_device()) }
            .result()
            .map_err(|e| Error::driver("cuDeviceTotalMem", e))?;
        let size = total
            .max(granularity)
            .checked_next_multiple_of(granularity)
            .ok_or_else(|| too_large(total))?;
        let mut base: sys::CUdeviceptr = 0;
        unsafe_during_capture(|| {
            // SAFETY: `base` is a valid out-pointer; a fresh reservation anywhere (address 0),
            // aligned to the granularity.
            unsafe { sys::cuMemAddressReserve(&mut base, size, granularity, 0, 0) }.result()
        })
        .map_err(|e| Error::driver("cuMemAddressReserve", e))?;
        state.reserved = Some((base, size));
        state.granularity = granularity;
        Ok(base)
    }

    /// Backs `bytes` bytes (a multiple of the granularity) at `from` bytes past `base` with
    /// physical memory, one chunk per granule (so that [`TempArena::shrink`] can give back
    /// exactly what no lease reaches), readable and writable by the device. On failure
    /// nothing stays mapped or allocated.
    fn map(
        &self,
        state: &mut ArenaState,
        base: sys::CUdeviceptr,
        from: usize,
        bytes: usize,
    ) -> Result<()> {
        let Some((_, size)) = state.reserved else {
            return Err(Error::Internal {
                invariant: "an arena maps memory only inside its reservation",
            });
        };
        if from.checked_add(bytes).is_none_or(|end| end > size) {
            return Err(Error::InvalidArgument(format!(
                "the temporaries of a graph set need {} bytes, more than the device's {size}",
                from.saturating_add(bytes)
            )));
        }
        ensure_current(&self.ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let prop = properties(self.ordinal());
        let granule = state.granularity;
        let before = state.chunks.len();
        let undo = |state: &mut ArenaState| {
            let mut at = base + from as u64;
            for chunk in state.chunks.drain(before..) {
                unmap(at, chunk.bytes);
                release(chunk.handle);
                at += chunk.bytes as u64;
            }
        };
        let access = sys::CUmemAccessDesc {
            location: prop.location,
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        let mut at = base + from as u64;
        for _ in 0..bytes / granule {
            let mut handle: sys::CUmemGenericAllocationHandle = 0;
            let created = unsafe_during_capture(|| {
                // SAFETY: `handle` is a valid out-pointer; `granule` is the granularity of
                // `prop`'s device.
                unsafe { sys::cuMemCreate(&mut handle, granule, &prop, 0) }.result()
            });
            if let Err(e) = created {
                undo(state);
                return Err(Error::driver("cuMemCreate", e));
            }
            let mapped = unsafe_during_capture(|| {
                // SAFETY: `[at, at + granule)` lies inside this arena's reservation, past
                // every chunk mapped so far; `handle` holds `granule` bytes.
                unsafe { sys::cuMemMap(at, granule, 0, handle, 0) }.result()
            });
            if let Err(e) = mapped {
                release(handle);
                undo(state);
                return Err(Error::driver("cuMemMap", e));
            }
            state.chunks.push(Chunk {
                handle,
                bytes: granule,
            });
            let allowed = unsafe_during_capture(|| {
                // SAFETY: `[at, at + granule)` was just mapped; one access descriptor, read
                // from `access`, for the arena's device.
                unsafe { sys::cuMemSetAccess(at, granule, &access, 1) }.result()
            });
            if let Err(e) = allowed {
                undo(state);
                return Err(Error::driver("cuMemSetAccess", e));
            }
            at += granule as u64;
        }
        Ok(())
    }

    /// Unmaps and releases the chunks that no live lease reaches into. A lease lives until
    /// the launches of the graph holding it have finished (or forever, when waiting for them
    /// failed), so no running graph uses what this releases.
    pub(crate) fn shrink(&self) {
        let mut state = self.lock();
        let Some((base, _)) = state.reserved else {
            return;
        };
        let needed = state.leases.keys().next_back().copied().unwrap_or(0);
        let mut mapped = state.mapped();
        while let Some(last) = state.chunks.last() {
            let start = mapped - last.bytes;
            if start < needed {
                break;
            }
            let at = base + start as u64;
            let (handle, bytes) = (last.handle, last.bytes);
            after_global_capture(|| {
                let _ = ensure_current(&self.ctx);
                unmap(at, bytes);
                release(handle);
            });
            state.chunks.pop();
            mapped = start;
        }
    }
}

impl Drop for TempArena {
    fn drop(&mut self) {
        // Every lease holds the arena: nothing uses its memory any more.
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        let Some((base, size)) = state.reserved else {
            return;
        };
        let chunks = std::mem::take(&mut state.chunks);
        after_global_capture(|| {
            let _ = ensure_current(&self.ctx);
            let mut at = base;
            for chunk in chunks {
                unmap(at, chunk.bytes);
                release(chunk.handle);
                at += chunk.bytes as u64;
            }
            // SAFETY: the reservation was made by this arena, nothing is mapped in it any
            // more, and it is freed once, here.
            let freed = unsafe { sys::cuMemAddressFree(base, size) }.result();
            if let Err(e) = freed {
                self.ctx.record_err::<()>(Err(e));
            }
        });
    }
}

fn too_large(bytes: usize) -> Error {
    Error::InvalidArgument(format!(
        "{bytes} bytes of temporaries cannot be placed in one range of device addresses"
    ))
}

/// `cuMemUnmap` of a range this module mapped; a failure is recorded on no context (best
/// effort in a release path).
fn unmap(at: sys::CUdeviceptr, bytes: usize) {
    // SAFETY: `[at, at + bytes)` is one chunk this module mapped, which nothing uses any more
    // (see the callers).
    let _: std::result::Result<(), DriverError> = unsafe { sys::cuMemUnmap(at, bytes) }.result();
}

/// `cuMemRelease` of a handle this module created.
fn release(handle: sys::CUmemGenericAllocationHandle) {
    // SAFETY: `handle` came from `cuMemCreate` here and is released once (unmapped first).
    let _: std::result::Result<(), DriverError> = unsafe { sys::cuMemRelease(handle) }.result();
}
