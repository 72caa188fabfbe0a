//! Temporaries in runs and captures: an `Alloc` statement allocates in stream order on its
//! stream (a capture records the graph's memory-allocation node), a `Free` statement releases
//! in stream order (a memory-free node); what a run leaves allocated is freed at its end
//! (`Frame::free_leftover_temps`).

use crate::error::{Error, Result};
use crate::exec::frame::{stream_of, Frame, LiveTemp};
use crate::exec::record::{Issue, Issued, Recorder};
use crate::memory::{Scope, TempMemory};
use crate::operand::DeviceRange;
use crate::program::Statement;

impl<R: Recorder> Issue<'_, R> {
    pub(super) fn alloc_temp<'s>(
        &mut self,
        stmt: &'static Statement,
        scope: Scope<'s>,
        bytes: usize,
    ) -> Result<TempMemory<'s>> {
        let _traced = self.traced(stmt);
        let temp = self.temp_statement(stmt)?;
        let frame = &mut *self.frame;
        frame.enter(stmt.stream).map_err(|e| e.in_statement(stmt))?;
        let stream = stream_of(&frame.origin_lane, &frame.res.sides, stmt.stream)
            .map_err(|e| e.in_statement(stmt))?;
        let device = stream.device().ordinal();
        let placed = self.rec.place_temp(stmt, device, bytes);
        let ptr = match placed {
            Some(ptr) => ptr,
            None => {
                let cudarc = stream.as_cudarc();
                crate::ffi::temp::alloc_async(cudarc.context(), cudarc.cu_stream(), bytes)
                    .map_err(|e| Error::driver("cuMemAllocAsync", e).in_statement(stmt))?
            }
        };
        let range = DeviceRange { device, ptr, bytes };
        frame.temps.push(LiveTemp {
            temp,
            range,
            alloc: stmt,
            placed: placed.is_some(),
        });
        // Checked after the allocation, which the run's end frees should this fail: the plan
        // names the memory by its own address, which the check maps to this one.
        if let Some(expect) = self.expect.as_deref_mut() {
            expect.alloc(stmt, range)?;
        }
        self.rec
            .issued(stmt, stream, Issued::Alloc(range, placed.is_some()))
            .map_err(|e| e.in_statement(stmt))?;
        Ok(TempMemory::new(scope, temp, range))
    }

    pub(super) fn free_temp(
        &mut self,
        stmt: &'static Statement,
        memory: TempMemory<'_>,
    ) -> Result<()> {
        let _traced = self.traced(stmt);
        let temp = self.temp_statement(stmt)?;
        let range = memory.range();
        let frame = &mut *self.frame;
        let Some(live) = frame
            .temps
            .iter()
            .position(|t| t.temp == temp && t.range == range)
        else {
            return Err(Error::InvalidArgument(format!(
                "the memory freed is not temporary {temp} as this run allocated it; free a \
                 temporary with the memory its own allocation returned"
            ))
            .in_statement(stmt));
        };
        if let Some(expect) = self.expect.as_deref_mut() {
            expect.free(stmt, range)?;
        }
        frame.enter(stmt.stream).map_err(|e| e.in_statement(stmt))?;
        let stream = stream_of(&frame.origin_lane, &frame.res.sides, stmt.stream)
            .map_err(|e| e.in_statement(stmt))?;
        let placed = frame.temps[live].placed;
        if !placed {
            let cudarc = stream.as_cudarc();
            crate::ffi::temp::free_async(cudarc.context(), cudarc.cu_stream(), range.ptr)
                .map_err(|e| Error::driver("cuMemFreeAsync", e).in_statement(stmt))?;
        }
        frame.temps.swap_remove(live);
        self.rec
            .issued(stmt, stream, Issued::Free(range, placed))
            .map_err(|e| e.in_statement(stmt))
    }

    /// The temporary an `Alloc` or `Free` statement names, checked against the program; refused
    /// inside a device block's body (CUDA allows no memory node in a conditional body, and a
    /// run is held to what a capture can do).
    fn temp_statement(&self, stmt: &'static Statement) -> Result<usize> {
        let temp = stmt.kind.temp();
        let declared = self.frame.program().map_or(0, |p| p.temps.len());
        match temp {
            Some(t) if t < declared && !self.frame.in_body() => Ok(t),
            Some(_) if self.frame.in_body() => Err(Error::InvalidArgument(
                "a temporary is allocated or freed inside a device block's body; CUDA allows \
                 no memory node in a conditional body: allocate it before the block and free \
                 it after"
                    .into(),
            )
            .in_statement(stmt)),
            Some(t) => Err(Error::InvalidArgument(format!(
                "temporary {t} is not declared: the pipeline declares {declared}"
            ))
            .in_statement(stmt)),
            None => Err(Error::InvalidArgument(format!(
                "the statement was issued as a temporary's allocation or release but is a {:?}",
                stmt.kind
            ))
            .in_statement(stmt)),
        }
    }
}

impl Frame {
    /// Frees the temporaries a run left allocated (its pipeline stopped between a
    /// temporary's allocation and release, or never released it) on the origin, after the
    /// join; returns the statement that allocated the first of them.
    #[inline]
    pub(super) fn free_leftover_temps(&mut self) -> Option<&'static crate::program::Statement> {
        if self.temps.is_empty() {
            return None;
        }
        self.free_temps_left()
    }

    #[cold]
    #[inline(never)]
    fn free_temps_left(&mut self) -> Option<&'static crate::program::Statement> {
        let first = self.temps.first().map(|t| t.alloc);
        let stream = self.origin_lane.as_cudarc();
        for t in self.temps.drain(..).filter(|t| !t.placed) {
            // Best effort on a path that already failed or is reported as failing.
            let _ = crate::ffi::temp::free_async(stream.context(), stream.cu_stream(), t.range.ptr);
        }
        first
    }
}
