//! Temporaries: device memory a pipeline declares (`temp h: f32[n];`) and the plan allocates
//! before its first use and frees after its last.
//!
//! A run allocates a temporary from the device's stream-ordered memory pool
//! (`cuMemAllocAsync`) and frees it in stream order (`cuMemFreeAsync`); a capture records the
//! same two calls as a graph's memory-allocation and memory-free nodes, whose memory the graph
//! owns (the driver reuses it between graphs). Either way the memory exists only between the
//! two statements, so a [`Temp`] is a handle that cannot outlive them:
//!
//! - an issuer hands out a temporary's memory as a [`TempMemory<'s>`], which only the runtime's
//!   issuers make and which is branded with the lifetime `'s` of one [`Scope`]: the scope is
//!   opened by [`temporaries`] around a pipeline's statements, for a lifetime chosen anew on
//!   every call (a higher-ranked closure), so no value of it can be kept past the call — not in
//!   a user's issuer, not in a static;
//! - the release statement takes the [`Temp`] by value, so nothing issued after it can name
//!   the memory.
//!
//! Its contents are undefined when it is allocated.

use std::fmt;
use std::marker::PhantomData;
use std::ops::RangeBounds;

use super::{bytes_of, sub_range, CopySource, CopyTarget, DeviceMemory, DeviceMemoryMut, Pod};
use crate::error::{Error, Result};
use crate::ffi::memory::{Holder, MemoryRef};
use crate::operand::DeviceRange;
use crate::program::{Statement, StatementKind};

/// The lifetime brand of one issue of a pipeline's temporaries (see the module). `Copy`;
/// made only by [`temporaries`].
#[derive(Clone, Copy)]
pub struct Scope<'s> {
    /// Invariant in `'s`: a scope's lifetime can be neither shortened nor lengthened into
    /// another's.
    _brand: PhantomData<fn(&'s ()) -> &'s ()>,
}

impl fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Scope")
    }
}

/// Runs `body` with a fresh [`Scope`]: the temporaries it allocates through `issuer` are
/// branded with a lifetime that ends when it returns.
pub fn temporaries<I, R, F>(issuer: &mut I, body: F) -> R
where
    I: ?Sized,
    F: for<'s> FnOnce(&mut I, Scope<'s>) -> R,
{
    body(
        issuer,
        Scope {
            _brand: PhantomData,
        },
    )
}

/// The memory of one temporary, as an issuer hands it out ([`Issuer::alloc`](crate::Issuer::alloc)) and takes it
/// back ([`Issuer::free`](crate::Issuer::free)). Made only by the runtime's issuers; branded with its [`Scope`].
pub struct TempMemory<'s> {
    range: DeviceRange,
    temp: usize,
    _scope: Scope<'s>,
}

impl fmt::Debug for TempMemory<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TempMemory")
            .field("temp", &self.temp)
            .field("ptr", &format_args!("{:#x}", self.range.ptr))
            .field("bytes", &self.range.bytes)
            .finish()
    }
}

impl<'s> TempMemory<'s> {
    /// Memory `range` of temporary `temp` (an index into `Program::temps`), live until it is
    /// given back to the issuer that made it.
    pub(crate) fn new(scope: Scope<'s>, temp: usize, range: DeviceRange) -> TempMemory<'s> {
        TempMemory {
            range,
            temp,
            _scope: scope,
        }
    }

    /// The memory's address range.
    pub fn range(&self) -> DeviceRange {
        self.range
    }

    /// Which temporary of the program it is (an index into `Program::temps`).
    pub fn temp(&self) -> usize {
        self.temp
    }
}

/// A temporary of `T`s while it is allocated: what a pipeline's statements name it by. It
/// is device memory ([`DeviceMemory`], [`DeviceMemoryMut`]) like a `DeviceBuffer`, whose
/// contents are undefined until a statement writes them.
pub struct Temp<'s, T> {
    memory: TempMemory<'s>,
    len: usize,
    _elem: PhantomData<T>,
}

impl<T> fmt::Debug for Temp<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Temp")
            .field("temp", &self.memory.temp)
            .field("ptr", &format_args!("{:#x}", self.memory.range.ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl<'s, T: Pod> Temp<'s, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements in `range`, read-only (a kernel input or copy source).
    ///
    /// # Panics
    /// When `range` is out of bounds (as slicing a `DeviceBuffer` does).
    pub fn slice(&self, range: impl RangeBounds<usize>) -> TempView<'_, T> {
        let (ptr, len) = match sub_range::<T>(self.memory.range.ptr, self.len, range) {
            Ok(part) => part,
            Err(e) => panic!("{e}"),
        };
        TempView {
            range: DeviceRange {
                ptr,
                bytes: len * std::mem::size_of::<T>(),
                ..self.memory.range
            },
            len,
            _temp: PhantomData,
        }
    }
}

// SAFETY: the range is the temporary's memory, allocated (in stream order, or by the graph's
// allocation node) from its `Alloc` statement until its `Free` statement, which consumes the
// `Temp`; it holds `len` whole `T`s (checked by `temp_alloc`). The memory belongs to the run
// or the graph, so there is nothing for a graph to keep.
unsafe impl<T: Pod> DeviceMemory for Temp<'_, T> {
    type Elem = T;
    #[inline]
    fn range(&self) -> DeviceRange {
        self.memory.range
    }
    fn holder(&self) -> Holder<'_> {
        Holder::TEMPORARY
    }
    fn len(&self) -> usize {
        self.len
    }
}

// SAFETY: a `Temp` is not `Copy` or `Clone`; statements write it through `&mut`.
unsafe impl<T: Pod> DeviceMemoryMut for Temp<'_, T> {}

// SAFETY: as for `DeviceMemory`.
unsafe impl<T: Pod> CopySource<T> for Temp<'_, T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        super::device_ref(self)
    }
}

// SAFETY: as for `DeviceMemoryMut`.
unsafe impl<T: Pod> CopyTarget<T> for Temp<'_, T> {
    fn copy_target(&self) -> MemoryRef<'_> {
        super::device_ref(self)
    }
}

/// A read-only part of a [`Temp`] ([`Temp::slice`]).
pub struct TempView<'a, T> {
    range: DeviceRange,
    len: usize,
    _temp: PhantomData<&'a T>,
}

impl<T> fmt::Debug for TempView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TempView")
            .field("ptr", &format_args!("{:#x}", self.range.ptr))
            .field("len", &self.len)
            .finish()
    }
}

// SAFETY: a part of a `Temp`'s memory, which the view borrows.
unsafe impl<T: Pod> DeviceMemory for TempView<'_, T> {
    type Elem = T;
    fn range(&self) -> DeviceRange {
        self.range
    }
    fn holder(&self) -> Holder<'_> {
        Holder::TEMPORARY
    }
    fn len(&self) -> usize {
        self.len
    }
}

// SAFETY: as for `DeviceMemory`.
unsafe impl<T: Pod> CopySource<T> for TempView<'_, T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        super::device_ref(self)
    }
}

/// The bytes of a temporary of `len` `T`s, for its `Alloc` statement `stmt`.
pub(crate) fn temp_bytes<T>(stmt: &'static Statement, len: usize) -> Result<usize> {
    bytes_of::<T>(len).map_err(|e| e.in_statement(stmt))
}

impl<'s, T> Temp<'s, T> {
    /// Temporary `temp` of `len` `T`s in `memory`, which its `Alloc` statement `stmt` got from
    /// the issuer: refused unless the memory is that temporary's, of that size (an issuer
    /// that wraps another hands out the memory its inner issuer allocated for the statement).
    pub(crate) fn new(
        stmt: &'static Statement,
        temp: usize,
        memory: TempMemory<'s>,
        len: usize,
    ) -> Result<Temp<'s, T>> {
        let bytes = temp_bytes::<T>(stmt, len)?;
        if memory.temp != temp || memory.range.bytes != bytes {
            return Err(Error::InvalidArgument(format!(
                "the issuer handed out {} bytes of temporary {} for {bytes} bytes of temporary \
                 {temp}; an issuer returns the memory its inner issuer allocated for the \
                 statement",
                memory.range.bytes, memory.temp
            ))
            .in_statement(stmt));
        }
        Ok(Temp {
            memory,
            len,
            _elem: PhantomData,
        })
    }

    /// The memory, for the temporary's `Free` statement `stmt` (refused for another
    /// statement).
    pub(crate) fn release(self, stmt: &'static Statement) -> Result<TempMemory<'s>> {
        if stmt.kind
            != (StatementKind::Free {
                temp: self.memory.temp,
            })
        {
            return Err(Error::InvalidArgument(format!(
                "temporary {} is released by its own `Free` statement, not a {:?}",
                self.memory.temp, stmt.kind
            ))
            .in_statement(stmt));
        }
        Ok(self.memory)
    }
}
