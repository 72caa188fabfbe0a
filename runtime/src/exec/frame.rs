//! The issuing frame: the streams and events an issuer made for a program, and the fork/join
//! bookkeeping of the run (or device block body) being issued on them.
//!
//! A run is a frame on the origin stream: every other declared stream forks from the origin
//! before its first command and the origin joins them all at the end. A device block's body
//! is a frame of its own on the block's stream, with events of its own
//! ([`Frame::begin_body`], [`Frame::end_body`]). `record`, `wait` and `wait_stream` follow the
//! happens-before model exactly (see [`crate::Eager`]), at as few driver calls as the model
//! allows.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::ffi::KernelArg;
use crate::issue::StreamOptions;
use crate::module::Kernel;
use crate::operand::LaunchConfig;
use crate::program::{Program, Statement, StatementKind};
use crate::stream::Stream;

/// Counts of the driver work an [`Eager`](crate::Eager) issued, summed over its runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct EagerStats {
    /// Kernel launches.
    pub launches: u64,
    /// Copies.
    pub copies: u64,
    /// Fills (memsets).
    pub fills: u64,
    /// Host functions.
    pub host_fns: u64,
    /// `call` statements (each may issue several kernels, copies or memsets).
    pub calls: u64,
    /// `cuEventRecord` calls, including those for fork, join and `wait_stream`, and the
    /// lane's (one on the origin, one on the lane, a run).
    pub event_records: u64,
    /// `cuStreamWaitEvent` calls, including those for fork, join and `wait_stream`, and the
    /// lane's (one on the lane, one on the origin, a run).
    pub event_waits: u64,
}

/// How many other programs' streams and events an issuer keeps aside for when it runs them
/// again.
const PARKED: usize = 4;

/// What a [`Frame`]'s streams and events are made for: a program and its stream options.
type Key = (&'static Program, Vec<StreamOptions>);

/// The streams and events of a program, its run's fork/join state, and the counts of what was
/// issued on them.
#[derive(Debug)]
pub(crate) struct Frame {
    /// The stream the origin's statements go to (the lane, `lane.rs`, once made), or inside
    /// a captured body the stream that captures it.
    pub(super) origin_lane: Stream,
    /// The caller's origin stream.
    pub(super) user: Stream,
    /// The lane's fork and join events, once the lane is made (`lane.rs`).
    pub(super) lane_events: Option<(Event, Event)>,
    /// The pipeline the streams and events were made for, and its stream options.
    prepared: Option<Key>,
    /// The streams and events of `prepared`.
    pub(super) res: Resources,
    /// Per declared stream, in this run: whether it is ordered after the fork point yet.
    forked: Vec<bool>,
    /// Per declared stream, in this run: the event its last command recorded, when that was
    /// its last command (the join can wait for it instead of recording another).
    tails: Vec<Option<usize>>,
    pub(super) stats: EagerStats,
    /// The stream the current frame forks from and joins into: the origin, or inside a device
    /// block's body the block's stream.
    pub(super) root: usize,
    /// How many device block bodies enclose the statements being issued.
    depth: usize,
    /// Inside a body: the stream of the body's latest device block (the next one follows it).
    last_block: Option<usize>,
    /// The streams and events of other programs this issuer ran, most recent last.
    parked: Vec<(Key, Resources)>,
    /// The temporaries allocated in this run and not freed yet.
    pub(super) temps: Vec<LiveTemp>,
}

/// A temporary allocated in a run (or capture): which one, its memory, the statement that
/// allocated it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LiveTemp {
    pub(crate) temp: usize,
    pub(crate) range: crate::operand::DeviceRange,
    pub(crate) alloc: &'static crate::program::Statement,
    /// Placed by the recorder ([`crate::exec::record::Recorder::place_temp`]): released by no
    /// driver call.
    pub(crate) placed: bool,
}

/// The streams and events a [`Frame`] made for one program and its stream options.
#[derive(Debug, Default)]
pub(super) struct Resources {
    /// Declared streams 1.. (stream 0 is the origin).
    pub(super) sides: Vec<Stream>,
    /// Declared events, by index.
    events: Vec<EventSlot>,
    /// One internal event per declared stream, recorded on it for join and `wait_stream`.
    links: Vec<Event>,
    /// Recorded on the origin at the start of a multi-stream run: the fork point.
    fork: Option<Event>,
    /// Per body depth: the fork event of a body (swapped with `fork` while it runs).
    body_forks: Vec<Option<Event>>,
    /// Per body depth: one stream per declared stream, on which a capture captures a body
    /// (streams capturing the enclosing graph cannot capture a body graph).
    spares: Vec<Vec<Stream>>,
    /// Per body depth: the declared events as a body sees them (swapped with `events` while it
    /// runs): driver events of their own, so that a record inside a body never changes what a
    /// record outside it left, nor reaches into another graph during a capture.
    body_events: Vec<Vec<EventSlot>>,
}

/// What a body's frame replaced, restored when the body ends ([`Frame::end_body`]).
pub(crate) struct Outer {
    root: usize,
    last_block: Option<usize>,
    forked: Vec<bool>,
    tails: Vec<Option<usize>>,
    streams: Option<(Stream, Vec<Stream>)>,
}

/// A declared event: one driver event per device it is recorded on (an event can only be
/// recorded on streams of its own device), and which of them holds this run's latest record.
#[derive(Debug)]
struct EventSlot {
    instances: Vec<Event>,
    latest: Option<usize>,
    /// The stream that made `latest`'s record.
    recorded_by: usize,
    /// Whether the origin already waits for `latest`'s record.
    origin_waited: bool,
}

impl EventSlot {
    /// One slot per event of `program`, each with one event of `device` and no record yet.
    fn fresh(program: &Program, device: &Device) -> Result<Vec<EventSlot>> {
        program
            .events
            .iter()
            .map(|_| {
                Ok(EventSlot {
                    instances: vec![Event::new(device)?],
                    latest: None,
                    recorded_by: Program::ORIGIN,
                    origin_waited: false,
                })
            })
            .collect()
    }
}

impl Frame {
    /// A frame on `origin` with no streams or events made yet.
    pub(super) fn new(origin: &Stream) -> Frame {
        Frame {
            origin_lane: origin.clone(),
            user: origin.clone(),
            lane_events: None,
            prepared: None,
            res: Resources::default(),
            forked: Vec::new(),
            tails: Vec::new(),
            stats: EagerStats::default(),
            root: Program::ORIGIN,
            depth: 0,
            last_block: None,
            parked: Vec::new(),
            temps: Vec::new(),
        }
    }

    /// The caller's origin stream.
    pub(crate) fn origin(&self) -> &Stream {
        &self.user
    }

    /// The program the streams and events were made for.
    #[inline]
    pub(crate) fn program(&self) -> Option<&'static Program> {
        self.prepared.as_ref().map(|(p, _)| *p)
    }

    /// Forgets the side streams and events, so that the next run creates fresh ones (after a
    /// failed capture they may still belong to it).
    pub(super) fn forget(&mut self) {
        self.drop_lane();
        self.prepared = None;
        self.parked.clear();
        self.res = Resources::default();
        self.root = Program::ORIGIN;
        self.depth = 0;
    }

    /// Starts a run's frame on the origin: no event recorded yet, no stream forked but the
    /// origin. Returns whether the program has several streams (so that the run forks and
    /// joins).
    pub(super) fn begin_run(&mut self) -> bool {
        self.temps.clear();
        for slot in &mut self.res.events {
            slot.latest = None;
            slot.origin_waited = false;
        }
        let streams = self.res.sides.len() + 1;
        self.root = Program::ORIGIN;
        self.depth = 0;
        self.forked.clear();
        self.forked.resize(streams, false);
        self.forked[Program::ORIGIN] = true;
        self.tails.clear();
        self.tails.resize(streams, None);
        streams > 1
    }

    /// Whether the statements being issued are inside a device block's body.
    pub(crate) fn in_body(&self) -> bool {
        self.depth > 0
    }

    /// Records the fork point on the origin (a multi-stream run's first command).
    pub(super) fn fork(&mut self) -> Result<()> {
        match &self.res.fork {
            Some(fork) => record_on(&mut self.stats, fork, &self.origin_lane),
            None => Ok(()),
        }
    }

    /// Creates the side streams and events unless they were made for this program and options.
    pub(super) fn prepare(
        &mut self,
        program: &'static Program,
        options: &[StreamOptions],
    ) -> Result<()> {
        self.ensure_lane()?;
        if let Some((p, o)) = &self.prepared
            && p.same(program)
            && **o == *options
        {
            return Ok(());
        }
        if program.streams.is_empty() {
            return Err(Error::Pipeline {
                message: format!(
                    "pipeline `{}` declares no stream; declare one",
                    program.name
                ),
                location: program.location,
            });
        }
        if options.len() != program.streams.len() {
            return Err(Error::Pipeline {
                message: format!(
                    "pipeline `{}` gave {} stream options for {} streams",
                    program.name,
                    options.len(),
                    program.streams.len()
                ),
                location: program.location,
            });
        }
        if let Some(i) = self
            .parked
            .iter()
            .position(|((p, o), _)| p.same(program) && **o == *options)
        {
            let (key, res) = self.parked.remove(i);
            self.park();
            self.prepared = Some(key);
            self.res = res;
            return Ok(());
        }
        let origin_device = self.origin_lane.device();
        let mut sides = Vec::with_capacity(options.len() - 1);
        for o in &options[1..] {
            let device = match o.device {
                Some(d) if d >= 0 && d != origin_device.ordinal() => Device::new(Some(d))?,
                _ => origin_device.clone(),
            };
            sides.push(Stream::new(&device, o.priority)?);
        }
        let mut links = Vec::with_capacity(options.len());
        let mut fork = None;
        if options.len() > 1 {
            fork = Some(Event::new(&origin_device)?);
            links.push(Event::new(&origin_device)?);
            for s in &sides {
                links.push(Event::new(&s.device())?);
            }
        }
        let events = EventSlot::fresh(program, &origin_device)?;
        let depth = block_depth(program);
        let mut body_forks = Vec::with_capacity(depth);
        let mut spares = Vec::with_capacity(depth);
        let mut body_events = Vec::with_capacity(depth);
        for _ in 0..depth {
            body_forks.push(Some(Event::new(&origin_device)?));
            body_events.push(EventSlot::fresh(program, &origin_device)?);
            let mut set = Vec::with_capacity(options.len());
            set.push(Stream::new(&origin_device, options[0].priority)?);
            for (s, o) in sides.iter().zip(&options[1..]) {
                set.push(Stream::new(&s.device(), o.priority)?);
            }
            spares.push(set);
        }
        self.park();
        self.prepared = Some((program, options.to_vec()));
        self.res = Resources {
            sides,
            events,
            links,
            fork,
            body_forks,
            spares,
            body_events,
        };
        Ok(())
    }

    /// Keeps the current program's streams and events aside (the oldest kept ones go when
    /// more than [`PARKED`] are).
    fn park(&mut self) {
        let Some(key) = self.prepared.take() else {
            return;
        };
        self.parked.push((key, std::mem::take(&mut self.res)));
        if self.parked.len() > PARKED {
            self.parked.remove(0);
        }
    }

    /// Declared stream `index`: the origin or a side stream.
    pub(crate) fn stream(&self, index: usize) -> Result<&Stream> {
        stream_of(&self.origin_lane, &self.res.sides, index)
    }

    /// The streams a capture captures the bodies of a block at the current depth on, one per
    /// declared stream.
    pub(crate) fn body_streams(&self) -> Result<Vec<Stream>> {
        self.res.spares.get(self.depth).cloned().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "device blocks nest deeper than the {} level(s) prepared for",
                self.res.spares.len()
            ))
        })
    }

    /// Launches `kernel` with `config` and `args` on `stmt.stream` (ordered after the fork
    /// point first); returns the stream. Out of line, an eager run's launch: the kernel's
    /// launch path is inlined into it once (a capture inlines [`Frame::launch_inline`] into
    /// its own launch instead).
    pub(super) fn launch(
        &mut self,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<&Stream> {
        self.launch_inline(stmt, kernel, config, args)
    }

    /// [`Frame::launch`], inlined into its caller.
    #[inline]
    pub(super) fn launch_inline(
        &mut self,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<&Stream> {
        if stmt.stream != self.root {
            self.enter(stmt.stream)?;
        }
        let stream = stream_of(&self.origin_lane, &self.res.sides, stmt.stream)?;
        kernel.issue_on(stream, config, args)?;
        self.stats.launches += 1;
        Ok(stream)
    }

    /// Orders stream `s` after the fork point before it issues a command that does not do so
    /// itself, and forgets its tail record (the command follows it).
    #[inline]
    pub(crate) fn enter(&mut self, s: usize) -> Result<()> {
        if let Some(tail) = self.tails.get_mut(s) {
            *tail = None;
        }
        if self.forked.get(s).copied().unwrap_or(true) {
            return Ok(());
        }
        self.fork_into(s)
    }

    /// Stream `s`'s first command of the frame: it waits for the fork point (once a frame,
    /// off the path of every later command).
    #[cold]
    #[inline(never)]
    fn fork_into(&mut self, s: usize) -> Result<()> {
        let side = stream_of(&self.origin_lane, &self.res.sides, s)?;
        if let Some(fork) = &self.res.fork {
            wait_on(&mut self.stats, side, fork)?;
        }
        if let Some(forked) = self.forked.get_mut(s) {
            *forked = true;
        }
        Ok(())
    }

    /// Marks stream `s` as ordered after the fork point by a wait it is about to issue on
    /// something recorded in this run (after the fork, on a stream ordered after it).
    fn enter_by_wait(&mut self, s: usize) {
        if let Some(forked) = self.forked.get_mut(s) {
            *forked = true;
        }
        if let Some(tail) = self.tails.get_mut(s) {
            *tail = None;
        }
    }

    /// The frame's root (the origin, or a block's stream inside its body) waits for every
    /// other stream that issued anything in this frame.
    pub(super) fn join(&mut self) -> Result<()> {
        let root = self.root;
        for s in 0..self.res.sides.len() + 1 {
            if s == root || !self.forked.get(s).copied().unwrap_or(false) {
                continue;
            }
            let side = stream_of(&self.origin_lane, &self.res.sides, s)?;
            let target = stream_of(&self.origin_lane, &self.res.sides, root)?;
            // The side stream's last command recorded an event still holding that record:
            // its snapshot is the stream's whole work, so wait for it directly.
            let tail = self.tails[s].and_then(|e| {
                let slot = &self.res.events[e];
                match slot.latest {
                    Some(instance) if slot.recorded_by == s => Some((slot, instance)),
                    _ => None,
                }
            });
            match tail {
                // The root already waits for the side stream's whole work.
                Some((slot, _)) if slot.origin_waited => {}
                Some((slot, instance)) => {
                    wait_on(&mut self.stats, target, &slot.instances[instance])?
                }
                None => {
                    let link = self.res.links.get(s).ok_or(Error::Internal {
                        invariant: "every declared stream has a link event",
                    })?;
                    record_on(&mut self.stats, link, side)?;
                    wait_on(&mut self.stats, target, link)?;
                }
            }
        }
        Ok(())
    }

    /// Starts the frame of a body of a block on stream `root`: every other stream forks from
    /// `root` anew, events recorded outside are not visible, and with `streams` (a capture)
    /// the declared streams are mapped to those.
    pub(super) fn begin_body(
        &mut self,
        root: usize,
        streams: Option<Vec<Stream>>,
    ) -> Result<Outer> {
        if self.depth >= self.res.body_events.len() {
            return Err(Error::InvalidArgument(format!(
                "device blocks nest {} deep here, but the pipeline's statements nest them {} deep; issue a block's statements only inside its body",
                self.depth + 1,
                self.res.body_events.len()
            )));
        }
        let n = self.res.sides.len() + 1;
        let mut forked = vec![false; n];
        if let Some(f) = forked.get_mut(root) {
            *f = true;
        }
        let streams = match streams {
            Some(set) if set.len() == n => {
                let mut set = set.into_iter();
                let origin = set.next().unwrap_or_else(|| self.origin_lane.clone());
                Some((
                    std::mem::replace(&mut self.origin_lane, origin),
                    std::mem::replace(&mut self.res.sides, set.collect()),
                ))
            }
            Some(_) => {
                return Err(Error::Internal {
                    invariant: "a block body is captured on one spare stream per declared stream",
                })
            }
            None => None,
        };
        let outer = Outer {
            root: std::mem::replace(&mut self.root, root),
            last_block: self.last_block.take(),
            forked: std::mem::replace(&mut self.forked, forked),
            tails: std::mem::replace(&mut self.tails, vec![None; n]),
            streams,
        };
        if let Some(slot) = self.res.body_forks.get_mut(self.depth) {
            std::mem::swap(&mut self.res.fork, slot);
        }
        if let Some(slots) = self.res.body_events.get_mut(self.depth) {
            std::mem::swap(&mut self.res.events, slots);
        }
        for slot in &mut self.res.events {
            slot.latest = None;
            slot.origin_waited = false;
        }
        self.depth += 1;
        if n > 1
            && let Some(fork) = &self.res.fork
        {
            let stream = stream_of(&self.origin_lane, &self.res.sides, root)?;
            record_on(&mut self.stats, fork, stream)?;
        }
        Ok(outer)
    }

    /// Ends a body's frame: everything [`Frame::begin_body`] replaced comes back.
    pub(super) fn end_body(&mut self, outer: Outer) {
        self.depth = self.depth.saturating_sub(1);
        if let Some(slot) = self.res.body_forks.get_mut(self.depth) {
            std::mem::swap(&mut self.res.fork, slot);
        }
        if let Some(slots) = self.res.body_events.get_mut(self.depth) {
            std::mem::swap(&mut self.res.events, slots);
        }
        self.root = outer.root;
        self.last_block = outer.last_block;
        self.forked = outer.forked;
        self.tails = outer.tails;
        if let Some((origin, sides)) = outer.streams {
            self.origin_lane = origin;
            self.res.sides = sides;
        }
    }

    fn event_index(stmt: &'static Statement, events: usize) -> Result<usize> {
        match stmt.kind {
            StatementKind::Record { event } | StatementKind::Wait { event } if event < events => {
                Ok(event)
            }
            StatementKind::Record { event } | StatementKind::Wait { event } => {
                Err(Error::InvalidArgument(format!(
                    "statement names event {event}, but the pipeline declares {events}"
                )))
            }
            kind => Err(Error::InvalidArgument(format!(
                "statement of kind {kind:?} issued as an event statement"
            ))),
        }
    }

    /// `record e` on `stmt.stream`.
    pub(super) fn record(&mut self, stmt: &'static Statement) -> Result<()> {
        let index = Self::event_index(stmt, self.res.events.len())?;
        self.enter(stmt.stream)?;
        let stream = stream_of(&self.origin_lane, &self.res.sides, stmt.stream)?;
        let slot = &mut self.res.events[index];
        let instance = match slot.instances.iter().position(|e| e.on_device_of(stream)) {
            Some(i) => i,
            None => {
                slot.instances.push(Event::new(&stream.device())?);
                slot.instances.len() - 1
            }
        };
        record_on(&mut self.stats, &slot.instances[instance], stream)?;
        slot.latest = Some(instance);
        slot.recorded_by = stmt.stream;
        slot.origin_waited = false;
        if let Some(tail) = self.tails.get_mut(stmt.stream) {
            *tail = Some(index);
        }
        Ok(())
    }

    /// `wait e` on `stmt.stream`: nothing when `e` was not recorded in this frame.
    pub(super) fn wait(&mut self, stmt: &'static Statement) -> Result<()> {
        let index = Self::event_index(stmt, self.res.events.len())?;
        let slot = &self.res.events[index];
        // Not recorded in this run: the model's empty snapshot, nothing to wait for.
        let Some(latest) = slot.latest else {
            return Ok(());
        };
        self.enter_by_wait(stmt.stream);
        let stream = stream_of(&self.origin_lane, &self.res.sides, stmt.stream)?;
        wait_on(
            &mut self.stats,
            stream,
            &self.res.events[index].instances[latest],
        )?;
        if stmt.stream == self.root {
            self.res.events[index].origin_waited = true;
        }
        Ok(())
    }

    /// `wait_stream t` on `stmt.stream`: an internal event recorded on `t` and waited for.
    pub(super) fn wait_stream(&mut self, stmt: &'static Statement) -> Result<()> {
        let StatementKind::WaitStream { stream: other } = stmt.kind else {
            return Err(Error::InvalidArgument(format!(
                "statement of kind {:?} issued as `wait_stream`",
                stmt.kind
            )));
        };
        self.stream_waits(stmt.stream, other)
    }

    /// Before a device block on declared stream `stream`: inside a body, the block's stream
    /// waits for the stream of the body's previous block, as `wait_stream` does, so that the
    /// blocks of one body run one after another (the plan's `Via::Block`): conditional nodes
    /// side by side in one body graph can hang on the GPU (driver 580), eagerly the order is
    /// the same.
    pub(super) fn follow_last_block(&mut self, stream: usize) -> Result<()> {
        if self.depth == 0 {
            return Ok(());
        }
        match self.last_block.replace(stream) {
            Some(previous) if previous != stream => self.stream_waits(stream, previous),
            _ => Ok(()),
        }
    }

    /// Declared stream `waiting` waits for all work issued so far on declared stream `other`.
    fn stream_waits(&mut self, waiting: usize, other: usize) -> Result<()> {
        if other == waiting {
            return Ok(());
        }
        if !self.forked.get(other).copied().unwrap_or(true) {
            // `other` issued nothing in this run: its work is the fork point.
            return self.enter(waiting);
        }
        self.enter_by_wait(waiting);
        let waiting = stream_of(&self.origin_lane, &self.res.sides, waiting)?;
        let waited = stream_of(&self.origin_lane, &self.res.sides, other)?;
        let link = self.res.links.get(other).ok_or(Error::Internal {
            invariant: "every declared stream has a link event",
        })?;
        record_on(&mut self.stats, link, waited)?;
        wait_on(&mut self.stats, waiting, link)
    }
}

fn record_on(stats: &mut EagerStats, event: &Event, stream: &Stream) -> Result<()> {
    event.record(stream)?;
    stats.event_records += 1;
    Ok(())
}

fn wait_on(stats: &mut EagerStats, stream: &Stream, event: &Event) -> Result<()> {
    stream.wait_event(event)?;
    stats.event_waits += 1;
    Ok(())
}

/// Declared stream `index`: the origin or a side stream.
#[inline]
pub(super) fn stream_of<'a>(
    origin: &'a Stream,
    sides: &'a [Stream],
    index: usize,
) -> Result<&'a Stream> {
    if index == Program::ORIGIN {
        return Ok(origin);
    }
    sides.get(index - 1).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "statement names stream {index}, but the pipeline declares {}",
            sides.len() + 1
        ))
    })
}

/// How deeply device blocks nest in `program` (0 without blocks).
fn block_depth(program: &Program) -> usize {
    let mut ends: Vec<usize> = Vec::new();
    let mut deepest = 0;
    for stmt in program.statements {
        while ends.last().is_some_and(|&end| stmt.id >= end) {
            ends.pop();
        }
        if let Some(bodies) = stmt.kind.bodies(stmt.id) {
            ends.push(
                bodies
                    .last()
                    .map_or(stmt.id + 1, |b| b.end.max(stmt.id + 1)),
            );
            deepest = deepest.max(ends.len());
        }
    }
    deepest
}
