//! Device memory of streamgraph as cudarc's safe API takes it: [`CudarcView`] (cudarc's
//! `DevicePtr`) and [`CudarcViewMut`] (`DevicePtrMut`), made by
//! [`DeviceBuffer::cudarc_view`](super::DeviceBuffer::cudarc_view) and its `_mut` form, or
//! by an op's operands inside a `call` ([`crate::In::cudarc`], [`crate::Out::cudarc`]).
//!
//! A view is bound to one stream. cudarc's calls ask it for its pointer with the stream they
//! issue on: on the bound stream the work is simply queued in its order; on another stream,
//! that stream first waits for the bound stream's work and the call is waited for before it
//! returns (so nothing of it outlives the borrow unordered). A view of a buffer refuses a
//! stream captured by code outside streamgraph: made on one, it is an error; handed one later,
//! the capture is invalidated (its graph, which would keep nothing it names alive, is never
//! made). Inside a `call`, the capture is streamgraph's own and the operands' views are not
//! guarded: the graph keeps them.

use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};

use crate::ffi::status::{refuse_captured, stream_capture_status, CaptureStatus};

/// Device memory read by cudarc's safe API (cudarc's `DevicePtr`), bound to a stream.
#[derive(Debug)]
pub struct CudarcView<'s, T> {
    ptr: u64,
    len: usize,
    stream: &'s Arc<CudaStream>,
    guarded: bool,
    _elem: PhantomData<&'s [T]>,
}

/// Device memory written by cudarc's safe API (cudarc's `DevicePtrMut`), bound to a stream.
#[derive(Debug)]
pub struct CudarcViewMut<'s, T> {
    ptr: u64,
    len: usize,
    stream: &'s Arc<CudaStream>,
    guarded: bool,
    _elem: PhantomData<&'s mut [T]>,
}

impl<'s, T> CudarcView<'s, T> {
    /// `len` elements at `ptr`, live and readable for `'s`, bound to `stream`; `guarded`
    /// refuses captures of other code (see the module docs).
    pub(crate) fn new(ptr: u64, len: usize, stream: &'s Arc<CudaStream>, guarded: bool) -> Self {
        CudarcView {
            ptr,
            len,
            stream,
            guarded,
            _elem: PhantomData,
        }
    }
}

impl<'s, T> CudarcViewMut<'s, T> {
    /// `len` elements at `ptr`, live and written only through this view for `'s`, bound to
    /// `stream`; `guarded` refuses captures of other code.
    pub(crate) fn new(ptr: u64, len: usize, stream: &'s Arc<CudaStream>, guarded: bool) -> Self {
        CudarcViewMut {
            ptr,
            len,
            stream,
            guarded,
            _elem: PhantomData,
        }
    }
}

/// What a view hands cudarc for a call on `on`: waits `on` for the bound stream's work when it
/// is another stream (and waits for the call once it is issued), and invalidates a capture of
/// `on` by other code when `guarded`.
fn order<'a>(bound: &'a CudaStream, on: &'a CudaStream, guarded: bool) -> SyncOnDrop<'a> {
    if guarded {
        // A stream that other code began capturing after the view was made: the capture is
        // invalidated (a query of a capturing stream is illegal), so that no graph naming this
        // memory is made; cudarc's call then fails on it. The bound stream too, since `on`
        // would join its capture by waiting for it.
        let mut captured = false;
        for s in [on, bound] {
            if !matches!(stream_capture_status(s), Ok(CaptureStatus::None)) {
                let _refused = refuse_captured(s, "a cudarc call on a DeviceBuffer's view");
                captured = true;
            }
        }
        if captured {
            return SyncOnDrop::Sync(None);
        }
    }
    if std::ptr::eq(bound, on) || bound.cu_stream() == on.cu_stream() {
        return SyncOnDrop::Sync(None);
    }
    on.context().record_err(on.join(bound));
    SyncOnDrop::Sync(Some(on))
}

impl<T> DeviceSlice<T> for CudarcView<'_, T> {
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<CudaStream> {
        self.stream
    }
}

impl<T> DeviceSlice<T> for CudarcViewMut<'_, T> {
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<CudaStream> {
        self.stream
    }
}

impl<T> DevicePtr<T> for CudarcView<'_, T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        (self.ptr, order(self.stream, stream, self.guarded))
    }
}

impl<T> DevicePtr<T> for CudarcViewMut<'_, T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        (self.ptr, order(self.stream, stream, self.guarded))
    }
}

impl<T> DevicePtrMut<T> for CudarcViewMut<'_, T> {
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        (self.ptr, order(self.stream, stream, self.guarded))
    }
}
