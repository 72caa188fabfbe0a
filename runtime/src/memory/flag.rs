//! [`DeviceFlag`]: the small device value that decides a device `while` or `if` block.

use std::fmt;

use super::{device_ref, CopySource, CopyTarget, DeviceBuffer, DeviceMemory, DeviceMemoryMut};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::ffi::copy::read_device;
use crate::ffi::memory::{Holder, MemoryRef};
use crate::operand::DeviceRange;
use crate::stream::Stream;

/// A flag in device memory that kernels write and device `while` / `if` blocks read: non-zero
/// means "run the body (again)".
///
/// A kernel receives it as an `unsigned int*` (`&mut flag` in a `launch`, a write; `&flag`, a
/// read), exactly like a one-element `DeviceBuffer<u32>`; `fill flag = 1u32` sets it in stream
/// order. The host sets and reads it with [`DeviceFlag::set`] and [`DeviceFlag::get`].
///
/// A captured `while … , limit = N` counts its iterations in a word of its graph's own (one per
/// `while` statement), not in the flag: loops that share a flag, nested or in two graphs, never
/// share a count.
///
/// ```no_run
/// use streamgraph::{Device, DeviceFlag};
///
/// let device = Device::new(None)?;
/// let mut flag = DeviceFlag::new(&device, 1)?;
/// assert_eq!(flag.get()?, 1);
/// flag.set(0)?;
/// assert_eq!(flag.get()?, 0);
/// # Ok::<(), streamgraph::Error>(())
/// ```
pub struct DeviceFlag {
    /// The value (word 0); words 2–3 hold the condition handle of the signalled loop running
    /// on it, zero outside one (see [`crate::SIGNAL_HEADER`]).
    words: DeviceBuffer<u32>,
}

/// The words of a flag: the value, padding, and a signalled loop's handle (two words).
const WORDS: usize = 4;

/// A flag's words holding `value`, outside any signalled loop.
fn initial(value: u32) -> [u32; WORDS] {
    [value, 0, 0, 0]
}

impl fmt::Debug for DeviceFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceFlag")
            .field("ptr", &format_args!("{:#x}", self.words.device_ptr()))
            .finish()
    }
}

impl DeviceFlag {
    /// A flag on `device` holding `value` (waits for the copy).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, DeviceFlag};
    /// let flag = DeviceFlag::new(&Device::new(None)?, 1)?;
    /// assert_eq!(flag.get()?, 1);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn new(device: &Device, value: u32) -> Result<DeviceFlag> {
        Ok(DeviceFlag {
            words: DeviceBuffer::from_host(device, &initial(value))?,
        })
    }

    /// A flag that can only be planned (see [`DeviceBuffer::for_planning`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, DeviceFlag, Plan};
    /// pipeline! {
    ///     /// Fills `x` while `go` is set: the body clears it, so it runs once.
    ///     pipeline Once(x: &mut DeviceBuffer<f32>, go: &mut DeviceFlag) {
    ///         stream main;
    ///         main: fill go = 1u32;
    ///         main: while go, limit = 10u32 {
    ///             main: fill x = 1.0f32;
    ///             main: fill go = 0u32;
    ///         }
    ///     }
    /// }
    /// let mut go = DeviceFlag::for_planning()?; // no GPU needed
    /// let mut x = DeviceBuffer::for_planning(256)?;
    /// let plan = Plan::build(&Once::new(&mut x, &mut go))?;
    /// assert_eq!((plan.len(), plan.bodies().len()), (2, 1)); // the fill and the loop; one body
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn for_planning() -> Result<DeviceFlag> {
        Ok(DeviceFlag {
            words: DeviceBuffer::for_planning(WORDS)?,
        })
    }

    /// The device the flag lives on ([`Error::PlanningOnly`] for a plan-only flag).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, DeviceFlag};
    /// let device = Device::new(None)?;
    /// assert_eq!(DeviceFlag::new(&device, 0)?.device()?, device);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn device(&self) -> Result<Device> {
        self.words.device()
    }

    /// Sets the flag to `value` and waits for the copy (see the memory docs on which stream
    /// the synchronous conveniences use).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, DeviceFlag};
    /// let mut flag = DeviceFlag::new(&Device::new(None)?, 1)?;
    /// flag.set(0)?; // waits for the copy
    /// assert_eq!(flag.get()?, 0);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn set(&mut self, value: u32) -> Result<()> {
        self.words.copy_from_host(&initial(value))
    }

    /// Queues setting the flag to `value` on `stream`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceFlag, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let mut flag = DeviceFlag::new(&stream.device(), 0)?;
    /// flag.set_on(&stream, 1)?; // queued on `stream`
    /// assert_eq!(flag.get_on(&stream)?, 1);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn set_on(&mut self, stream: &Stream, value: u32) -> Result<()> {
        self.words.copy_from_host_on(stream, &initial(value))
    }

    /// The flag's value, read back (waits for the copy).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, DeviceFlag};
    /// let flag = DeviceFlag::new(&Device::new(None)?, 7)?;
    /// assert_eq!(flag.get()?, 7);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn get(&self) -> Result<u32> {
        first(self.words.slice(0..1).to_vec()?)
    }

    /// The flag's value, read back in `stream`'s order (after the work queued on it).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceFlag, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let mut flag = DeviceFlag::new(&stream.device(), 1)?;
    /// stream.fill(&mut flag, 0)?; // what a `fill go = 0u32;` statement does
    /// assert_eq!(flag.get_on(&stream)?, 0); // read after the fill
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn get_on(&self, stream: &Stream) -> Result<u32> {
        first(read_device::<u32>(stream.as_cudarc(), &device_ref(self))?)
    }

    /// The device address of the value (word 0).
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::DeviceFlag;
    /// let flag = DeviceFlag::for_planning()?;
    /// assert_ne!(flag.device_ptr(), 0); // a plan-only address; a real flag's is a `CUdeviceptr`
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn device_ptr(&self) -> u64 {
        self.words.device_ptr()
    }

    /// Whether the flag is plan-only.
    pub(crate) fn is_planning(&self) -> bool {
        self.range().device == DeviceRange::PLANNING
    }

    /// The flag's memory (what a captured block's built-in kernels read), for the graph to keep.
    pub(crate) fn whole(&self) -> MemoryRef<'_> {
        device_ref(&self.words)
    }
}

fn first(values: Vec<u32>) -> Result<u32> {
    values
        .first()
        .copied()
        .ok_or_else(|| Error::InvalidArgument("a device flag read back no value".into()))
}

// SAFETY: the range is word 0 of the flag's own allocation, which the flag owns and hands out
// as its holder.
unsafe impl DeviceMemory for DeviceFlag {
    type Elem = u32;
    fn range(&self) -> DeviceRange {
        DeviceRange {
            bytes: 4,
            ..self.words.range()
        }
    }
    fn holder(&self) -> Holder<'_> {
        self.words.holder()
    }
    fn len(&self) -> usize {
        1
    }
}

// SAFETY: `&mut DeviceFlag` or ownership is needed to write through it.
unsafe impl DeviceMemoryMut for DeviceFlag {}

// SAFETY: word 0 of the flag's allocation, as for `DeviceMemory`.
unsafe impl CopySource<u32> for DeviceFlag {
    fn copy_source(&self) -> MemoryRef<'_> {
        device_ref(self)
    }
}

// SAFETY: as above.
unsafe impl CopyTarget<u32> for DeviceFlag {
    fn copy_target(&self) -> MemoryRef<'_> {
        device_ref(self)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_planning_flag_names_one_word() {
        let flag = DeviceFlag::for_planning().unwrap();
        assert!(flag.is_planning());
        assert_eq!(flag.range().bytes, 4);
        assert_eq!(flag.len(), 1);
        assert!(matches!(flag.device(), Err(Error::PlanningOnly { .. })));
        assert!(matches!(flag.get(), Err(Error::PlanningOnly { .. })));
    }
}
