//! The lane: a stream of the issuer's own that a run's origin statements are issued on.
//!
//! A capture that code outside streamgraph begins on a stream (cudarc's safe
//! `CudaStream::begin_capture`, on a handle from [`Stream::as_cudarc`] — perhaps on another
//! thread) takes all work issued on that stream while it lasts into a graph that keeps nothing
//! the work names alive. A check of the stream before the work and another after it cannot see
//! a capture begun right after the first and ended right before the second. So no run issues
//! on the caller's stream: the origin's statements go to the lane, a stream no handle of which
//! leaves the runtime (nor do the side streams' handles), made on the caller's stream's device
//! at its priority.
//!
//! An eager run forks the lane from the caller's stream (an event recorded there, waited for
//! on the lane) and joins it back at the end (one recorded on the lane, waited for there). A
//! capture can reach the lane and the side streams only through that fork, and then cannot end
//! with a graph (it would end `CUDA_ERROR_STREAM_CAPTURE_UNJOINED`) before the lane is joined
//! back to the caller's stream. Whether the fork's record went into a capture the driver says
//! of the event (a query of an event recorded in a capture fails, also after that capture
//! ended), asked before the run issues anything: then nothing is, the lane is given up (parked
//! until no capture holds it: it may be in one the runtime cannot end) and the run fails with
//! [`Error::StreamCapturing`]. The lane is asked again after the run: one found capturing has
//! its capture invalidated and is given up with the side streams. A caller's stream found
//! capturing at the join (a capture begun during the run, which holds none of its work) is not
//! joined (the wait would break that capture): the run is waited for on the host instead and
//! fails the same way. A capture begins on the lane itself, which no other code can end.

use crate::error::{Error, Result};
use crate::event::Event;
use crate::exec::frame::Frame;
use crate::ffi;
use crate::ffi::lane::ForkFailed;
use crate::stream::Stream;

impl Frame {
    /// Makes the lane, once: a new stream on the caller's stream's device at its priority.
    pub(super) fn ensure_lane(&mut self) -> Result<()> {
        if self.lane_events.is_some() {
            return Ok(());
        }
        let user = &self.user;
        let device = user.device();
        let lane = Stream::new(&device, user.priority()?)?;
        self.lane_events = Some((Event::new(&device)?, Event::new(&device)?));
        self.origin_lane = lane;
        Ok(())
    }

    /// Drops the lane: the next run makes a fresh one.
    pub(super) fn drop_lane(&mut self) {
        self.lane_events = None;
        self.origin_lane = self.user.clone();
    }

    /// The stream the origin's statements are issued on (and a capture begins on): the lane.
    pub(crate) fn lane(&self) -> &Stream {
        &self.origin_lane
    }

    /// An eager run's first command: the lane waits for the work on the caller's stream so far.
    /// Refused as the module docs say when a capture other code began took the fork.
    pub(super) fn fork_lane(&mut self, what: &'static str) -> Result<()> {
        let Some((fork, _)) = &self.lane_events else {
            return Err(Error::Internal {
                invariant: "an eager run's lane is made before it forks",
            });
        };
        let forked = ffi::lane::fork(
            self.user.as_cudarc(),
            self.origin_lane.as_cudarc(),
            fork.as_cudarc(),
            what,
        );
        match forked {
            Err(ForkFailed::Record(e)) => Err(e),
            Ok(()) => {
                self.stats.event_records += 1;
                self.stats.event_waits += 1;
                Ok(())
            }
            Err(ForkFailed::Captured(e)) => {
                self.stats.event_records += 1;
                self.stats.event_waits += 1;
                self.abandon_streams();
                Err(e)
            }
        }
    }

    /// An eager run's last command, after the side streams joined the lane: the caller's
    /// stream waits for the lane. Refused as the module docs say when a capture other code
    /// began holds the lane or the caller's stream.
    pub(super) fn join_lane(&mut self, what: &'static str) -> Result<()> {
        let Some((_, join)) = &self.lane_events else {
            return Err(Error::Internal {
                invariant: "an eager run's lane is made before it joins",
            });
        };
        if let Err(e) = self.origin_lane.refuse_captured(what) {
            self.abandon_streams();
            return Err(e);
        }
        ffi::lane::join_back(
            self.user.as_cudarc(),
            self.origin_lane.as_cudarc(),
            join.as_cudarc(),
            what,
        )?;
        self.stats.event_records += 1;
        self.stats.event_waits += 1;
        Ok(())
    }

    /// Gives up the lane and the side streams, which a capture the runtime cannot end may
    /// hold: parked (a stream in a capture is not to be destroyed; `ffi::lane::park`), the
    /// next run makes new ones.
    fn abandon_streams(&mut self) {
        let lane = std::mem::replace(&mut self.origin_lane, self.user.clone());
        let res = std::mem::take(&mut self.res);
        let streams = std::iter::once(&lane)
            .chain(&res.sides)
            .map(|s| s.as_cudarc().clone())
            .collect();
        ffi::lane::park(streams, Box::new((lane, res, self.lane_events.take())));
        self.forget();
    }
}
