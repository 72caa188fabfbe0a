//! Stream-ordered work of other code as a pipeline statement: `STREAM: call OP(&mut c, &a);`.
//!
//! A [`StreamOp`] issues any number of kernels, copies, memsets or library calls on the stream
//! it is given. Its operands are declared by type ([`StreamOp::Operands`], a tuple of [`In`]
//! and [`Out`]), so the statement's `&x` / `&mut x` are checked against what the op reads and
//! writes when the pipeline compiles; the runtime then treats the call like a launch with
//! those accesses: the race check, a checked run's comparison with its plan, what a graph
//! keeps alive. A capture attributes every node the op adds to its statement (ending in one
//! node) and refuses nodes a graph of its statement cannot hold.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::access::{device_ref, DeviceMemory, DeviceMemoryMut, FillValue, Pod};
use crate::error::{Error, Result};
use crate::ffi::memory::{Holder, MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::memory::{CudarcView, CudarcViewMut};
use crate::module::Kernel;
use crate::operand::{BufferAccess, DeviceRange, LaunchConfig, Memory};
use crate::program::AccessMode;
use crate::stream::Stream;

/// Work a `call` statement issues on its stream: kernels, copies, memsets, library calls.
///
/// Implement it for work of your own: kernels of a module of yours, or a library call on
/// the stream's handle ([`CallStream::as_cudarc`]).
///
/// ```
/// use streamgraph::{CallStream, In, Kernel, KernelArg, LaunchConfig, Out, Result, StreamOp};
///
/// /// `y = x + 1` through a kernel of one's own (`add_one(const float*, float*, unsigned)`).
/// struct AddOne(Kernel);
///
/// // SAFETY: `issue` launches one kernel on the given stream, which reads `x` and writes
/// // `y` within their lengths; the kernel's module is kept by the launch itself.
/// unsafe impl StreamOp for AddOne {
///     type Operands<'a> = (In<'a, f32>, Out<'a, f32>);
///     fn issue(&self, stream: &CallStream<'_>, (x, y): &mut Self::Operands<'_>) -> Result<()> {
///         let n = x.len().min(y.len()) as u32;
///         let config = LaunchConfig {
///             grid: n.div_ceil(256).into(),
///             block: 256u32.into(),
///             shared_mem_bytes: 0,
///         };
///         let x = x.arg();
///         stream.launch(&self.0, config, &[x, y.arg(), KernelArg::value(&n)])
///     }
/// }
/// ```
///
/// # Safety
///
/// Implementers promise, for every call of [`StreamOp::issue`]:
/// - the work is ordered as `stream`'s own: issued on `stream`, or on streams of the op's own
///   that wait for `stream` first and that `stream` waits for before `issue` returns (as a
///   library that forks internally does; a capture joins what such work leaves `stream`
///   depending on into one node); no other stream waits or is waited for, and nothing is
///   synchronised, allocated or freed;
/// - the stream stays the runtime's: no handle to it ([`CallStream::as_cudarc`], the stream of
///   a cudarc view) is kept past `issue` or handed to other code, and no capture is begun or
///   ended on it (the runtime issues on streams that no other code holds, so that no capture
///   it did not begin can take its work, nor end its own);
/// - the work reads no memory but the operands' and the op's own, and writes no memory but
///   the [`Out`] operands' (within their ranges) and the op's own;
/// - whatever else the work uses (a library handle, a workspace, a module, constants) stays
///   allocated while the value [`StreamOp::keep`] returns is alive: a captured graph keeps
///   that value, and its operands, for as long as it can replay.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an op a `call` statement can issue",
    label = "`call` expects a `StreamOp` here",
    note = "an op is a value whose type implements `StreamOp` (its operands, its work); \
            pass it as a pipeline parameter such as `gemm: &MyGemm` and write \
            `call gemm(&mut c, &a, &b)`"
)]
pub unsafe trait StreamOp {
    /// The operands, in order: a tuple of [`In`] (memory read) and [`Out`] (memory written).
    type Operands<'a>: CallOperands<'a>;

    /// Issues the work on `stream`. In a capture the stream is capturing: the work becomes
    /// graph nodes. Called once per issue of the statement.
    fn issue(&self, stream: &CallStream<'_>, operands: &mut Self::Operands<'_>) -> Result<()>;

    /// What a graph that captured this op keeps alive besides the operands (handle,
    /// workspace, module); `None` when the work needs nothing more.
    fn keep(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        None
    }

    /// Device memory of the op's own that its work writes, such as a library's workspace.
    /// Every call of the op is then seen writing it: the run-time race check
    /// ([`crate::Plan::check_races`], on in debug builds) reports two calls of one op that
    /// nothing orders (the compile-time check does not see it), and a graph keeps it. `None`
    /// by default: the op writes nothing of its own.
    fn scratch(&self) -> Option<MemoryRef<'_>> {
        None
    }

    /// A name for messages (the op's type by default).
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }

    /// Whether the op's work is fixed by its operands, by what [`StreamOp::keep`] returns
    /// and by the bytes this writes into `parameters` (what else decides it: a seed, say) —
    /// as for every op of [`crate::ops`], whose shapes and scalars are set when they are made.
    /// Then a graph that captured a call of the op still runs that call's work when a later
    /// issue passes an op with the same kept value (the graph holds it, so no other op can have
    /// it meanwhile), the same parameter bytes and operands of the same memory: an argument
    /// update ([`GraphExec::update_args`](crate::GraphExec::update_args), a
    /// [`GraphSet`](crate::GraphSet)'s later launches) leaves the call's nodes as they are
    /// instead of capturing the pipeline again. `false` by default (and for ops that keep
    /// nothing): every argument update of a pipeline with the call captures it again.
    fn fixed_work(&self, parameters: &mut Vec<u8>) -> bool {
        let _ = parameters;
        false
    }
}

/// A [`StreamOp`] whose work the body of a device `while`/`if`/`switch` can hold: kernels, memsets
/// and copies between device memory, nothing else (no host function, child graph, allocation
/// or event node). Only such an op may be called in a block's body; the capture still checks
/// every node it adds.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be called in the body of a device `while`/`if`/`switch`",
    label = "this op does not implement `BodyOp`",
    note = "a device block's body (a conditional graph node) holds kernels, memsets and device \
            copies only; an op whose work fits there implements `BodyOp`; otherwise move the \
            `call` before or after the block"
)]
pub trait BodyOp: StreamOp {}

/// One operand of a `call`, as the issuers see it: its memory and whether it is written.
#[derive(Debug, Clone, Copy)]
pub struct CallAccess<'a> {
    /// The memory.
    pub memory: MemoryRef<'a>,
    /// Read (`&x`) or written (`&mut x`).
    pub mode: AccessMode,
}

impl CallAccess<'_> {
    /// The access as the plan records it (operands are device memory).
    pub(crate) fn buffer_access(&self) -> Option<BufferAccess> {
        match self.memory.memory() {
            Memory::Device(range) => Some(BufferAccess {
                range,
                mode: self.mode,
            }),
            _ => None,
        }
    }
}

/// The operand list of a [`StreamOp`]: a tuple of [`In`] and [`Out`] (up to 12).
pub trait CallOperands<'a> {
    /// Each operand's memory and mode, in order.
    fn accesses(&self, out: &mut Vec<CallAccess<'a>>);
}

/// Device memory of `T` a `call` reads: `&x` in the statement.
pub struct In<'a, T> {
    memory: MemoryRef<'a>,
    len: usize,
    _elem: PhantomData<&'a [T]>,
}

/// Device memory of `T` a `call` writes: `&mut x` in the statement, reached through an
/// exclusive borrow. The borrow excludes everything outside the statement, not the call's other
/// operands: `call op(&mut x, &x)`, or two slices of one buffer, name overlapping memory, so an
/// op whose work cannot take that (a library call whose output must not alias an input) checks
/// it, e.g. with [`DeviceRange::overlaps`](crate::DeviceRange::overlaps).
pub struct Out<'a, T> {
    memory: MemoryMut<'a>,
    len: usize,
    _elem: PhantomData<&'a mut [T]>,
}

impl<T> fmt::Debug for In<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("In")
            .field("memory", &self.memory.memory())
            .field("len", &self.len)
            .finish()
    }
}

impl<T> fmt::Debug for Out<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Out")
            .field("memory", &self.memory.memory())
            .field("len", &self.len)
            .finish()
    }
}

fn range_of(memory: &MemoryRef<'_>) -> DeviceRange {
    match memory.memory() {
        Memory::Device(range) => range,
        // Operands are made from device memory only.
        _ => DeviceRange {
            device: -1,
            ptr: 0,
            bytes: 0,
        },
    }
}

impl<'a, T: Pod> In<'a, T> {
    /// The operand `memory` reads.
    pub fn of<M: DeviceMemory<Elem = T> + ?Sized>(memory: &'a M) -> In<'a, T> {
        In {
            memory: device_ref(memory),
            len: memory.len(),
            _elem: PhantomData,
        }
    }
}

impl<'a, T> In<'a, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element.
    pub fn device_ptr(&self) -> u64 {
        range_of(&self.memory).ptr
    }

    /// The device the memory is on.
    pub fn device_ordinal(&self) -> i32 {
        range_of(&self.memory).device
    }

    /// The operand's memory, as the runtime's copies and library calls name it.
    pub fn memory(&self) -> MemoryRef<'a> {
        self.memory
    }

    /// The operand as a kernel argument that reads it.
    pub fn arg(&self) -> KernelArg<'a> {
        KernelArg::buffer(
            BufferAccess {
                range: range_of(&self.memory),
                mode: AccessMode::Read,
            },
            Holder(self.memory.holder()),
        )
    }

    /// The operand as memory cudarc's safe API reads on `stream` ([`CudarcView`]).
    pub fn cudarc<'s>(&'s self, stream: &'s CallStream<'_>) -> CudarcView<'s, T> {
        CudarcView::new(self.device_ptr(), self.len, stream.as_cudarc(), false)
    }
}

impl<'a, T> Out<'a, T> {
    /// The operand `memory`, reached through an exclusive borrow.
    pub(crate) fn new(memory: MemoryMut<'a>) -> Out<'a, T> {
        let len = memory.memory().bytes() / std::mem::size_of::<T>().max(1);
        Out {
            memory,
            len,
            _elem: PhantomData,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element.
    pub fn device_ptr(&self) -> u64 {
        range_of(&self.memory.memory_ref()).ptr
    }

    /// The device the memory is on.
    pub fn device_ordinal(&self) -> i32 {
        range_of(&self.memory.memory_ref()).device
    }

    /// The operand's memory, reached through the operand's exclusive borrow, as the runtime's
    /// library calls that write it take it.
    pub fn memory(&mut self) -> &MemoryMut<'a> {
        &self.memory
    }

    /// The operand as a kernel argument that writes it.
    pub fn arg(&mut self) -> KernelArg<'_> {
        KernelArg::buffer(
            BufferAccess {
                range: range_of(&self.memory.memory_ref()),
                mode: AccessMode::Write,
            },
            Holder(self.memory.memory_ref().holder()),
        )
    }

    /// The operand as memory cudarc's safe API writes on `stream` ([`CudarcViewMut`]).
    pub fn cudarc<'s>(&'s mut self, stream: &'s CallStream<'_>) -> CudarcViewMut<'s, T> {
        CudarcViewMut::new(self.device_ptr(), self.len, stream.as_cudarc(), false)
    }
}

impl<'a, T: Pod> Out<'a, T> {
    /// The operand of memory written through `memory` (for ops that issue other ops).
    pub fn of<M: DeviceMemoryMut<Elem = T> + ?Sized>(memory: &'a mut M) -> Out<'a, T> {
        Out::new(MemoryMut::device(memory))
    }
}

/// The stream a [`StreamOp`] issues its work on, with the launch path a pipeline's own
/// statements use (streamgraph's public entry points refuse a capturing stream; this one is
/// the capture's own).
#[derive(Debug)]
pub struct CallStream<'s> {
    stream: &'s Stream,
    capturing: bool,
    /// In a capture: the modules of the kernels launched, which the graph keeps.
    modules: std::cell::RefCell<Vec<crate::ffi::CodeOwner>>,
}

impl<'s> CallStream<'s> {
    pub(crate) fn new(stream: &'s Stream, capturing: bool) -> CallStream<'s> {
        CallStream::noting(stream, capturing, Vec::new())
    }

    /// [`CallStream::new`] that notes the modules of the kernels launched in a capture in
    /// `modules` (empty; a list whose room is reused from call to call).
    pub(crate) fn noting(
        stream: &'s Stream,
        capturing: bool,
        modules: Vec<crate::ffi::CodeOwner>,
    ) -> CallStream<'s> {
        CallStream {
            stream,
            capturing,
            modules: std::cell::RefCell::new(modules),
        }
    }

    /// The modules of the kernels launched through [`CallStream::launch`] in a capture.
    pub(crate) fn into_modules(self) -> Vec<crate::ffi::CodeOwner> {
        self.modules.into_inner()
    }

    /// The stream, as cudarc's (for library handles: `CudaBlas::new`, `set_stream`).
    pub fn as_cudarc(&self) -> &'s Arc<CudaStream> {
        self.stream.as_cudarc()
    }

    /// The device ordinal of the stream.
    pub fn device_ordinal(&self) -> i32 {
        self.stream.device().ordinal()
    }

    /// Whether the work is being captured into a graph (then it is not run now).
    pub fn is_capturing(&self) -> bool {
        self.capturing
    }

    /// Fills `dst` with `value` on the stream (a memset node when captured).
    pub fn fill<T: FillValue>(&self, dst: &mut Out<'_, T>, value: T) -> Result<()> {
        crate::ffi::copy::fill(
            self.stream.as_cudarc(),
            &dst.memory.memory_ref(),
            value.pattern(),
        )
    }

    /// Copies `src` into `dst` (of the same length) on the stream (a copy node when
    /// captured).
    pub fn copy<T>(&self, dst: &mut Out<'_, T>, src: &In<'_, T>) -> Result<()> {
        if dst.len != src.len {
            return Err(Error::InvalidArgument(format!(
                "a copy inside a `call` from {} into {} element(s); copy equal lengths",
                src.len, dst.len
            )));
        }
        crate::ffi::copy::copy(
            self.stream.as_cudarc(),
            &dst.memory.memory_ref(),
            &src.memory,
            !self.capturing,
        )
    }

    /// Launches `kernel` on the stream with `config` and `args`. A graph that captured the
    /// launch keeps the kernel's module.
    pub fn launch(
        &self,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        kernel.issue_on(self.stream, config, args)?;
        if self.capturing
            && let Some(module) = kernel.cuda_module()
        {
            let mut modules = self.modules.borrow_mut();
            if !modules.iter().any(|m| Arc::ptr_eq(m, module)) {
                modules.push(module.clone());
            }
        }
        Ok(())
    }
}

/// Keeps [`BoundCall`] implemented by the runtime alone.
mod sealed {
    pub trait Sealed {}
}

/// A `call` statement bound to its op and operands, as the issuers take it. Sealed: only the
/// runtime binds calls (from a [`StreamOp`], whose `unsafe impl` promises what its work
/// touches), so that the accesses an issuer sees are the ones the op declared.
pub trait BoundCall: sealed::Sealed {
    /// The operands' memory and modes, in order.
    fn accesses(&self) -> &[CallAccess<'_>];
    /// Issues the op on `stream`.
    fn issue(&mut self, stream: &CallStream<'_>) -> Result<()>;
    /// What a graph that captured the op keeps alive besides its operands.
    fn keep(&self) -> Option<Arc<dyn Any + Send + Sync>>;
    /// The op's name, for messages.
    fn name(&self) -> &str;
    /// See [`StreamOp::fixed_work`].
    fn fixed_work(&self, parameters: &mut Vec<u8>) -> bool;
}

impl fmt::Debug for dyn BoundCall + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundCall")
            .field("op", &self.name())
            .field("accesses", &self.accesses())
            .finish()
    }
}

/// An op and its operands, with their accesses (and the op's scratch memory, written) listed
/// once, for `'s`, while both are borrowed.
pub(crate) struct Bound<'o, 'a, 's, O: StreamOp + ?Sized> {
    pub(crate) op: &'o O,
    pub(crate) operands: O::Operands<'a>,
    pub(crate) accesses: Vec<CallAccess<'s>>,
}

thread_local! {
    /// The room of the last call's operand list on this thread, for the next one's.
    static ROOM: std::cell::Cell<Vec<CallAccess<'static>>> =
        const { std::cell::Cell::new(Vec::new()) };
}

/// `list` emptied, as a list of another lifetime's accesses, in the same allocation: the
/// standard library collects a list into one of the same layout in place (and were it not
/// to, this would allocate, nothing worse).
// `filter` would keep the items' lifetime; the list must change it.
#[allow(clippy::unnecessary_filter_map)]
fn relabel<'b>(mut list: Vec<CallAccess<'_>>) -> Vec<CallAccess<'b>> {
    list.clear();
    list.into_iter().filter_map(|_| None).collect()
}

impl<'o: 's, 'a: 's, 's, O: StreamOp + ?Sized> Bound<'o, 'a, 's, O> {
    pub(crate) fn new(op: &'o O, operands: O::Operands<'a>) -> Self {
        // The list takes the room the last call's left on this thread (a call allocates none
        // once a thread's first has), with space for the usual few operands and the op's
        // scratch (none without operands: `()` is the one operand tuple of no size).
        let mut listed: Vec<CallAccess<'a>> = Vec::new();
        if std::mem::size_of::<O::Operands<'a>>() != 0 {
            listed = relabel(ROOM.take());
            listed.reserve(5);
        }
        operands.accesses(&mut listed);
        let mut accesses: Vec<CallAccess<'s>> = listed;
        if let Some(memory) = op.scratch() {
            accesses.push(CallAccess {
                memory,
                mode: AccessMode::Write,
            });
        }
        Bound {
            op,
            operands,
            accesses,
        }
    }
}

impl<O: StreamOp + ?Sized> Drop for Bound<'_, '_, '_, O> {
    fn drop(&mut self) {
        // The list's room serves the thread's next call.
        if self.accesses.capacity() > 0 {
            ROOM.set(relabel(std::mem::take(&mut self.accesses)));
        }
    }
}

impl<O: StreamOp + ?Sized> sealed::Sealed for Bound<'_, '_, '_, O> {}

impl<O: StreamOp + ?Sized> BoundCall for Bound<'_, '_, '_, O> {
    fn accesses(&self) -> &[CallAccess<'_>] {
        &self.accesses
    }
    fn issue(&mut self, stream: &CallStream<'_>) -> Result<()> {
        self.op.issue(stream, &mut self.operands)
    }
    fn keep(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.op.keep()
    }
    fn name(&self) -> &str {
        self.op.name()
    }
    fn fixed_work(&self, parameters: &mut Vec<u8>) -> bool {
        self.op.fixed_work(parameters)
    }
}

/// One operand of a tuple: what it reads or writes.
pub trait CallOperand<'a> {
    /// Its memory and mode.
    fn access(&self) -> CallAccess<'a>;
}

impl<'a, T> CallOperand<'a> for In<'a, T> {
    fn access(&self) -> CallAccess<'a> {
        CallAccess {
            memory: self.memory,
            mode: AccessMode::Read,
        }
    }
}

impl<'a, T> CallOperand<'a> for Out<'a, T> {
    fn access(&self) -> CallAccess<'a> {
        CallAccess {
            memory: self.memory.memory_ref(),
            mode: AccessMode::Write,
        }
    }
}

impl<'a> CallOperands<'a> for () {
    fn accesses(&self, _: &mut Vec<CallAccess<'a>>) {}
}

macro_rules! operand_tuples {
    ($(($($t:ident $i:tt),+))+) => {$(
        impl<'a, $($t: CallOperand<'a>),+> CallOperands<'a> for ($($t,)+) {
            fn accesses(&self, out: &mut Vec<CallAccess<'a>>) {
                $(out.push(self.$i.access());)+
            }
        }
    )+};
}

operand_tuples! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11)
}

/// Refuses operands of another device than the call's stream, and plan-only memory (an op
/// would hand its made-up addresses to a library).
pub(crate) fn check_devices(accesses: &[CallAccess<'_>], device: i32) -> Result<()> {
    for a in accesses {
        if let Memory::Device(r) = a.memory.memory() {
            if r.device == DeviceRange::PLANNING {
                return Err(Error::PlanningOnly { what: "buffer" });
            }
            if r.device >= 0 && r.device != device {
                return Err(Error::DeviceMismatch {
                    what: "a `call` operand on another device than the call's stream",
                    left: r.device,
                    right: device,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_operand_list_takes_the_last_ones_room() {
        let x = crate::memory::DeviceBuffer::<u32>::for_planning(4).unwrap();
        let mut list = Vec::with_capacity(8);
        list.push(In::of(&x).access());
        let at = list.as_ptr() as usize;
        let room: Vec<CallAccess<'_>> = relabel(list);
        assert_eq!(
            (room.as_ptr() as usize, room.capacity(), room.len()),
            (at, 8, 0)
        );
    }
}
