//! Plain operand values of pipeline statements: launch shapes, address ranges, memory kinds,
//! fill patterns and host functions. Nothing here touches the driver.

use std::sync::Arc;

use crate::program::AccessMode;

/// A host function issued by a `host` statement. Shared, because a captured graph calls it
/// on every replay.
pub type HostFn = Arc<dyn Fn() + Send + Sync + 'static>;

/// Three launch dimensions (`x`, `y`, `z`); `From<u32>`, `From<(u32, u32)>` and
/// `From<(u32, u32, u32)>` fill the missing ones with 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// x extent.
    pub x: u32,
    /// y extent.
    pub y: u32,
    /// z extent.
    pub z: u32,
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3 { x, y, z: 1 }
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3 { x, y, z }
    }
}

/// Grid, block and dynamic shared memory of a launch.
///
/// streamgraph's own type, not `cudarc::driver::LaunchConfig` (whose fields are tuples):
/// import one of the two under another name if both are in scope, e.g.
/// `use cudarc::driver::LaunchConfig as CudarcLaunchConfig;`. A cudarc configuration converts
/// with `LaunchConfig::from(cfg)`.
#[derive(Debug, Clone, Copy, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

impl PartialEq for LaunchConfig {
    /// Field by field, without a branch per field: what an argument update asks of every
    /// launch it walks.
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self, other);
        let grid = (a.grid.x ^ b.grid.x) | (a.grid.y ^ b.grid.y) | (a.grid.z ^ b.grid.z);
        let block = (a.block.x ^ b.block.x) | (a.block.y ^ b.block.y) | (a.block.z ^ b.block.z);
        (grid | block | (a.shared_mem_bytes ^ b.shared_mem_bytes)) == 0
    }
}

impl std::hash::Hash for LaunchConfig {
    /// The fields in order, as `eq` compares them.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.grid.hash(state);
        self.block.hash(state);
        self.shared_mem_bytes.hash(state);
    }
}

/// A range of device memory: what race detection compares and what copies and fills use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceRange {
    /// The device ordinal that owns the memory.
    pub device: i32,
    /// The first byte's device address (`CUdeviceptr`).
    pub ptr: u64,
    /// Length in bytes.
    pub bytes: usize,
}

impl DeviceRange {
    /// The `device` of host memory (pinned or pageable) in race detection.
    pub const HOST: i32 = -1;
    /// The `device` of buffers made with `DeviceBuffer::for_planning`: plan-only memory.
    pub const PLANNING: i32 = -2;

    /// Whether the two ranges share at least one byte of the same device.
    pub fn overlaps(&self, other: &DeviceRange) -> bool {
        self.device == other.device
            && self.bytes > 0
            && other.bytes > 0
            && self.ptr < other.ptr.saturating_add(other.bytes as u64)
            && other.ptr < self.ptr.saturating_add(self.bytes as u64)
    }
}

/// One buffer touched by an operation at run time: the real address range and the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferAccess {
    /// The bytes touched.
    pub range: DeviceRange,
    /// Read or write.
    pub mode: AccessMode,
}

impl BufferAccess {
    /// `memory` touched in `mode`; host memory is named on [`DeviceRange::HOST`].
    pub(crate) fn of(memory: &Memory, mode: AccessMode) -> BufferAccess {
        let range = match *memory {
            Memory::Device(range) => range,
            Memory::PinnedHost { ptr, bytes } | Memory::PageableHost { ptr, bytes } => {
                DeviceRange {
                    device: DeviceRange::HOST,
                    ptr: ptr as u64,
                    bytes,
                }
            }
        };
        BufferAccess { range, mode }
    }

    /// What a copy of `src` into `dst` touches: the destination written, the source read. The
    /// plan and a checked run's comparison with it both take a copy's accesses from here.
    pub(crate) fn of_copy(dst: &Memory, src: &Memory) -> Vec<BufferAccess> {
        vec![
            BufferAccess::of(dst, AccessMode::Write),
            BufferAccess::of(src, AccessMode::Read),
        ]
    }

    /// What a fill of `dst` touches.
    pub(crate) fn of_fill(dst: &Memory) -> Vec<BufferAccess> {
        vec![BufferAccess::of(dst, AccessMode::Write)]
    }

    /// What a collective participant touches: its send buffer read, its receive buffer written.
    pub(crate) fn of_participant(send: &Memory, recv: &Memory) -> Vec<BufferAccess> {
        vec![
            BufferAccess::of(send, AccessMode::Read),
            BufferAccess::of(recv, AccessMode::Write),
        ]
    }
}

/// One side of a copy, type-erased: device memory, page-locked host memory or pageable host
/// memory (which cannot be captured into a graph).
#[derive(Debug, Clone, Copy)]
pub enum Memory {
    /// Device memory.
    Device(DeviceRange),
    /// Page-locked (pinned) host memory.
    PinnedHost {
        /// First byte.
        ptr: *mut u8,
        /// Length in bytes.
        bytes: usize,
    },
    /// Ordinary (pageable) host memory.
    PageableHost {
        /// First byte.
        ptr: *mut u8,
        /// Length in bytes.
        bytes: usize,
    },
}

impl Memory {
    /// Length in bytes.
    pub fn bytes(&self) -> usize {
        match *self {
            Memory::Device(r) => r.bytes,
            Memory::PinnedHost { bytes, .. } | Memory::PageableHost { bytes, .. } => bytes,
        }
    }
}

/// The value written by a `fill`, as the element's bit pattern (memset width 1, 2 or 4 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FillPattern {
    /// 1-byte elements.
    U8(u8),
    /// 2-byte elements.
    U16(u16),
    /// 4-byte elements.
    U32(u32),
}

/// The reduction of an `all_reduce` or `reduce_scatter` (NCCL's `ncclRedOp_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ReduceOp {
    /// Element-wise sum.
    #[default]
    Sum,
    /// Element-wise product.
    Prod,
    /// Element-wise minimum.
    Min,
    /// Element-wise maximum.
    Max,
    /// Element-wise average (sum divided by the number of ranks).
    Avg,
}

/// The element type of a collective's buffers (NCCL's `ncclDataType_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// `i8`.
    I8,
    /// `u8`.
    U8,
    /// `i32`.
    I32,
    /// `u32`.
    U32,
    /// `i64`.
    I64,
    /// `u64`.
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl ElementType {
    /// The size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Self::I8 | Self::U8 => 1,
            Self::I32 | Self::U32 | Self::F32 => 4,
            Self::I64 | Self::U64 | Self::F64 => 8,
        }
    }
}

/// An element type that collectives can carry: `i8`, `u8`, `i32`, `u32`, `i64`, `u64`, `f32`,
/// `f64`.
#[diagnostic::on_unimplemented(
    message = "collectives cannot carry elements of type `{Self}`",
    label = "not an element type of NCCL",
    note = "collectives carry `i8`, `u8`, `i32`, `u32`, `i64`, `u64`, `f32` or `f64` elements"
)]
pub trait CollectiveElem: Copy {
    /// The element type.
    const TYPE: ElementType;
}

macro_rules! collective_elem {
    ($($t:ty => $v:ident),*) => {$(
        impl CollectiveElem for $t {
            const TYPE: ElementType = ElementType::$v;
        }
    )*};
}

collective_elem!(i8 => I8, u8 => U8, i32 => I32, u32 => U32, i64 => I64, u64 => U64, f32 => F32, f64 => F64);

#[cfg(test)]
mod tests {
    use super::*;

    /// Configurations are equal exactly when every field is, and hash alike when equal.
    #[test]
    fn launch_configs_compare_every_field() {
        use std::hash::{BuildHasher, RandomState};
        let base = LaunchConfig {
            grid: (1, 2, 3).into(),
            block: (4, 5, 6).into(),
            shared_mem_bytes: 7,
        };
        let hasher = RandomState::new();
        let same = LaunchConfig { ..base };
        assert_eq!(base, same);
        assert_eq!(hasher.hash_one(base), hasher.hash_one(same));
        for field in 0..7 {
            let mut other = base;
            let slot = match field {
                0 => &mut other.grid.x,
                1 => &mut other.grid.y,
                2 => &mut other.grid.z,
                3 => &mut other.block.x,
                4 => &mut other.block.y,
                5 => &mut other.block.z,
                _ => &mut other.shared_mem_bytes,
            };
            *slot ^= 1 << 31;
            assert_ne!(base, other, "field {field}");
        }
    }
}
