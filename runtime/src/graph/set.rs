//! [`GraphSet`]: one executable graph of one pipeline per key (a batch-size bucket, say),
//! captured the first time its key is launched, at most so many held.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::capture::Capture;
use super::executable::Executable;
use super::{GraphCore, VerifyReport};
use crate::device::GraphMemory;
use crate::error::{Error, Result};
use crate::ffi::arena::TempArena;
use crate::issue::Pipeline;
use crate::program::Program;
use crate::stream::Stream;

/// Executable graphs of one pipeline type, one per key, captured lazily and held at most
/// `capacity` at a time (the least recently launched one is dropped to make room).
///
/// Where an engine captures one graph per batch size and pads each request to the nearest
/// size, a set holds those graphs. Each [`GraphSet::launch`] names the key and lends the
/// pipeline for that key: the first launch of a key captures and instantiates the pipeline,
/// later ones bring the graph to the pipeline's values as
/// [`GraphExec::update_args`](super::GraphExec::update_args) does (the changed launches' nodes
/// set in place; a changed topology re-captured and instantiated) and launch it.
///
/// **One graph at a time.** Launches go through `&mut self`, and one whose stream is not the
/// previous launch's waits for that stream first, so no two graphs of a set ever run at
/// once. That is what lets them share: the pipelines of all keys may borrow the same
/// buffers (an output of the largest batch, weights), and the temporaries of every graph sit
/// in one block of device memory the set owns.
///
/// **Temporaries.** A graph of a set makes no memory nodes: each capture places the
/// pipeline's temporaries at the offsets its plan lays out (two share bytes only where one is
/// released before the other is allocated, the condition on which the driver would share a
/// graph's memory, so a chain of layers' temporaries takes its [`Plan::temp_peak_bytes`]),
/// from the base of addresses the set reserves once. The set backs them with device memory
/// as far as its largest graph reaches, in the driver's allocation granularity (2 MiB on
/// Hopper) rather than graph memory's granules (32 MiB on driver 580), grown as larger keys
/// are captured and given back when the graphs that reached furthest are dropped
/// ([`GraphSet::temp_memory`]). A graph holds what it reaches until its launches have
/// finished. Because the addresses do not move, a key's pipeline captured again with
/// temporaries of the same sizes updates its executable graph in place. (On a device that
/// cannot map memory so, and for a temporary on another device than the set's origin, the
/// graphs take graph memory nodes as [`Capture`] does, and the driver shares their memory.)
///
/// **Borrows.** Unlike [`GraphExec`](super::GraphExec), a set does not own its pipelines: it
/// borrows each only for the call. What its graphs' nodes touch (device memory, modules, ops'
/// handles and workspaces, host functions) stays allocated while the set holds them, whatever
/// happens to the buffers' owners, and pinned host memory keeps its DMA protocol; results are
/// read in stream order (`to_vec_on(&stream)`), as after an eager run. A key's graph runs the
/// values of the pipeline its last launch was given, except host functions, which stay those
/// it captured (as with `update_args`).
///
/// [`Plan::temp_peak_bytes`]: crate::Plan::temp_peak_bytes
///
/// ```no_run
/// use streamgraph::{pipeline, Buckets, DeviceBuffer, GraphSet, Stream};
///
/// pipeline! {
///     /// Doubles the first `n` elements of `y`.
///     pipeline Step(y: &mut DeviceBuffer<f32>, n: usize) {
///         stream main;
///         temp t: f32[n];
///         main: copy t <- y.slice(0..n);
///         main: copy y.slice(0..n) <- t;
///     }
/// }
///
/// let stream = Stream::on(None, 0)?;
/// let buckets = Buckets::powers_of_two(1024)?; // 1, 2, 4, …, 1024
/// let mut y = DeviceBuffer::<f32>::zeros(&stream.device(), buckets.largest())?;
/// let mut set = GraphSet::new(&stream, 8); // at most 8 graphs held
/// for request in [3, 100, 7, 100] {
///     let bucket = buckets.bucket_for(request)?; // 4, 128, 8, 128: padded by the caller
///     set.launch(&stream, bucket.size, &Step::new(&mut y, bucket.size))?;
/// }
/// assert_eq!(set.stats(&128).map(|s| (s.captures, s.launches)), Some((1, 2)));
/// # Ok::<(), streamgraph::Error>(())
/// ```
pub struct GraphSet<K> {
    capture: Capture,
    /// The memory the temporaries of every graph of the set are placed in.
    arena: Arc<TempArena>,
    capacity: usize,
    /// Every key launched or prepared so far, held or not, in order of first use.
    keys: Vec<KeyRecord<K>>,
    /// The pipeline of the set's graphs, once one was captured.
    program: Option<&'static Program>,
    /// The stream of the latest launch, which the next launch on another stream waits for.
    last: Option<Stream>,
    clock: u64,
    evictions: u64,
    trim: bool,
    /// Not `Sync`: the driver does not synchronise calls on one executable graph.
    _not_sync: PhantomData<Cell<()>>,
}

/// A key's counts and, while it is held, its graph.
struct KeyRecord<K> {
    key: K,
    run: Option<Executable>,
    /// When the key was last launched or prepared (the set's clock).
    used: u64,
    /// Counts of graphs the key held before, dropped by [`GraphSet`]'s bound or `remove`.
    before: KeyStats,
    /// Captures and instantiations of the graph held now (first one included).
    captures: u64,
    capture_time: Duration,
}

/// What one key of a [`GraphSet`] cost and did, over every graph it held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyStats {
    /// Captures of the key's pipeline: its first, every re-capture of an update that argument
    /// updates could not express, and the first of each graph held again after being dropped.
    pub captures: u64,
    /// Instantiations: one per graph held, plus re-instantiations of refused updates.
    pub instantiations: u64,
    /// Launches.
    pub launches: u64,
    /// Launches whose graph was brought to the pipeline's values by setting nodes in place.
    pub args_updates: u64,
    /// Host time spent capturing and instantiating the key's graphs.
    pub capture_time: Duration,
    /// The bytes of temporaries the key's graph allocates per launch, as captured; 0 while
    /// no graph of the key is held.
    pub temp_bytes: usize,
    /// Whether the set holds a graph of the key now.
    pub held: bool,
}

impl KeyStats {
    fn add(&mut self, other: &KeyStats) {
        self.captures += other.captures;
        self.instantiations += other.instantiations;
        self.launches += other.launches;
        self.args_updates += other.args_updates;
        self.capture_time += other.capture_time;
    }
}

impl<K> KeyRecord<K> {
    /// The counts of the graph held now.
    fn held_stats(&self) -> KeyStats {
        let Some(run) = &self.run else {
            return KeyStats::default();
        };
        let stats = run.stats();
        KeyStats {
            captures: self.captures + stats.updates + stats.reinstantiations,
            instantiations: 1 + stats.reinstantiations,
            launches: stats.launches,
            args_updates: stats.args_updates,
            capture_time: self.capture_time,
            temp_bytes: run.current().temp_bytes(),
            held: true,
        }
    }

    fn stats(&self) -> KeyStats {
        let mut stats = self.held_stats();
        stats.add(&self.before);
        stats
    }

    /// Drops the graph held now, keeping its counts.
    fn drop_graph(&mut self) -> bool {
        let held = self.held_stats();
        self.before.add(&held);
        self.captures = 0;
        self.capture_time = Duration::ZERO;
        self.run.take().is_some()
    }
}

/// What [`GraphSet::prepare_all`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prepared {
    /// Keys prepared.
    pub keys: usize,
    /// Graphs captured and instantiated (keys not held before).
    pub captured: usize,
    /// Graphs dropped to stay within the set's capacity.
    pub dropped: usize,
    /// Host time of the whole preparation (captures, instantiations, uploads).
    pub elapsed: Duration,
}

impl<K: PartialEq + Clone + fmt::Debug> GraphSet<K> {
    /// An empty set capturing on `origin` with [`Capture::new`]'s options, holding at most
    /// `capacity` graphs (at least one).
    pub fn new(origin: &Stream, capacity: usize) -> GraphSet<K> {
        GraphSet::with_capture(Capture::new(origin), capacity)
    }

    /// An empty set capturing with `capture` (its origin, mode and checks), holding at most
    /// `capacity` graphs (at least one).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Capture, CaptureMode, GraphSet, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let set: GraphSet<usize> =
    ///     GraphSet::with_capture(Capture::new(&stream).mode(CaptureMode::Global).check(true), 32);
    /// assert_eq!(set.capacity(), 32);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn with_capture(mut capture: Capture, capacity: usize) -> GraphSet<K> {
        let arena = TempArena::new(capture.origin().as_cudarc().context());
        capture.arena = Some(arena.clone());
        GraphSet {
            capture,
            arena,
            capacity: capacity.max(1),
            keys: Vec::new(),
            program: None,
            last: None,
            clock: 0,
            evictions: 0,
            trim: true,
            _not_sync: PhantomData,
        }
    }

    /// Whether dropping a graph to make room also gives back the set's temporaries' memory
    /// that no held graph reaches ([`GraphSet::temp_memory`]) and the device's unused graph
    /// memory ([`Device::trim_graph_memory`](crate::Device::trim_graph_memory)); on by
    /// default, so that the bound on graphs is a bound on memory.
    pub fn trim_on_drop(&mut self, on: bool) -> &mut Self {
        self.trim = on;
        self
    }

    /// Launches `key`'s graph of `pipeline` on `stream` (any stream of the set's device),
    /// capturing and instantiating it first if the set holds none for `key` — dropping the
    /// least recently launched graph when the set is full — and otherwise bringing it to
    /// `pipeline`'s values (see the type's docs). Returns once the launch is queued.
    ///
    /// Errors: those of [`Capture::capture`] and [`GraphExec::update_args`](super::GraphExec::update_args),
    /// of [`GraphExec::launch`](super::GraphExec::launch), and [`Error::InvalidArgument`]
    /// when `pipeline` is of another pipeline type than the set's graphs.
    pub fn launch<P: Pipeline>(&mut self, stream: &Stream, key: K, pipeline: &P) -> Result<()> {
        // Before anything is queued on it: a graph launch cannot be captured.
        stream.refuse_capturing("GraphSet::launch")?;
        if let Some(last) = &self.last {
            if last != stream {
                // The previous launch's graph may share memory with this one: in order.
                stream.wait_stream(last)?;
                self.last = Some(stream.clone());
            }
        } else {
            self.last = Some(stream.clone());
        }
        self.ready(key, pipeline)?.launch(stream)
    }

    /// Captures and instantiates `key`'s graph of `pipeline` without launching it (and
    /// uploads it on the capture's origin stream), as [`GraphSet::launch`] would the first
    /// time; when the set holds one already, brings it to `pipeline`'s values.
    pub fn prepare<P: Pipeline>(&mut self, key: K, pipeline: &P) -> Result<()> {
        let fresh = !self.holds(&key);
        let origin = self.capture.origin().clone();
        let run = self.ready(key, pipeline)?;
        if fresh {
            run.upload(&origin)?;
        }
        Ok(())
    }

    /// Prepares every key of `keys` in turn (what engines do at start-up), timed: `each` is
    /// given the key and a [`Prepare`] to hand that key's pipeline to.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{pipeline, Buckets, DeviceBuffer, GraphSet, Stream};
    /// pipeline! { pipeline Fill(y: &mut DeviceBuffer<f32>, n: usize) {
    ///     stream s; s: fill y.slice(0..n) = 1.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let buckets = Buckets::powers_of_two(256)?;
    /// let mut y = DeviceBuffer::<f32>::zeros(&stream.device(), 256)?;
    /// let mut set = GraphSet::new(&stream, buckets.len());
    /// let prepared = set.prepare_all(buckets.sizes().iter().copied(), |&n, prepare| {
    ///     prepare.pipeline(&Fill::new(&mut y, n))
    /// })?;
    /// println!("{} graphs in {:?}", prepared.captured, prepared.elapsed);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn prepare_all<I, F>(&mut self, keys: I, mut each: F) -> Result<Prepared>
    where
        I: IntoIterator<Item = K>,
        F: FnMut(&K, Prepare<'_, K>) -> Result<()>,
    {
        let start = Instant::now();
        let dropped = self.evictions;
        let mut prepared = Prepared::default();
        for key in keys {
            let fresh = !self.holds(&key);
            each(&key.clone(), Prepare { set: self, key })?;
            prepared.keys += 1;
            prepared.captured += usize::from(fresh);
        }
        prepared.dropped = (self.evictions - dropped) as usize;
        prepared.elapsed = start.elapsed();
        Ok(prepared)
    }

    /// The held graph of `key` against `pipeline`'s plan, as [`GraphExec::verify`](super::GraphExec::verify);
    /// [`Error::InvalidArgument`] when the set holds no graph of `key`.
    pub fn verify<P: Pipeline>(&self, key: &K, pipeline: &P) -> Result<VerifyReport> {
        match self.find(key).and_then(|i| self.keys[i].run.as_ref()) {
            Some(run) => run.verify(pipeline),
            None => Err(Error::InvalidArgument(format!(
                "the graph set holds no graph of key {key:?}; launch or prepare it first"
            ))),
        }
    }

    /// Whether the set holds a graph of `key` now.
    pub fn holds(&self, key: &K) -> bool {
        self.find(key).is_some_and(|i| self.keys[i].run.is_some())
    }

    /// The counts of `key` over every graph it held; `None` for a key never launched or
    /// prepared (or removed).
    pub fn stats(&self, key: &K) -> Option<KeyStats> {
        self.find(key).map(|i| self.keys[i].stats())
    }

    /// The keys whose graphs the set holds, least recently used first.
    pub fn held_keys(&self) -> Vec<K> {
        let mut held: Vec<&KeyRecord<K>> = self.keys.iter().filter(|r| r.run.is_some()).collect();
        held.sort_by_key(|r| r.used);
        held.into_iter().map(|r| r.key.clone()).collect()
    }

    /// Graphs held now.
    pub fn len(&self) -> usize {
        self.keys.iter().filter(|r| r.run.is_some()).count()
    }

    /// Whether the set holds no graph.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most graphs held at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Changes the bound, dropping the least recently used graphs beyond it (at least one is
    /// kept).
    pub fn set_capacity(&mut self, capacity: usize) -> Result<()> {
        self.capacity = capacity.max(1);
        let mut dropped = false;
        while self.len() > self.capacity {
            dropped |= self.drop_least_recent();
        }
        self.trim_if(dropped)
    }

    /// Graphs dropped to stay within the capacity so far.
    pub fn dropped(&self) -> u64 {
        self.evictions
    }

    /// Drops `key`'s graph (its launches in flight finish first) and forgets its counts;
    /// whether the set held one.
    pub fn remove(&mut self, key: &K) -> Result<bool> {
        let Some(i) = self.find(key) else {
            return Ok(false);
        };
        let held = self.keys.remove(i).run.is_some();
        self.trim_if(held)?;
        Ok(held)
    }

    /// The bytes of temporaries the held graphs allocate per launch, summed over graphs:
    /// what they would take if they did not share memory.
    pub fn temp_bytes(&self) -> usize {
        self.keys
            .iter()
            .filter_map(|r| r.run.as_ref())
            .map(|run| run.current().temp_bytes())
            .sum()
    }

    /// The bytes of device memory the set holds for its graphs' temporaries: as far as the
    /// largest held graph's reaches (or the largest dropped one's, with
    /// [`GraphSet::trim_on_drop`] off), in the driver's allocation granularity.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{pipeline, DeviceBuffer, GraphSet, Stream};
    /// pipeline! { pipeline Twice(y: &mut DeviceBuffer<f32>, n: usize) {
    ///     stream s;
    ///     temp t: f32[n];
    ///     s: copy t <- y.slice(0..n);
    ///     s: copy y.slice(0..n) <- t;
    /// } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut y = DeviceBuffer::<f32>::zeros(&stream.device(), 1 << 20)?;
    /// let mut set = GraphSet::new(&stream, 4);
    /// for n in [1 << 10, 1 << 20, 1 << 16] {
    ///     set.launch(&stream, n, &Twice::new(&mut y, n))?;
    /// }
    /// assert_eq!(set.temp_memory(), 4 << 20); // the largest key's 4 MiB, shared by all three
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn temp_memory(&self) -> usize {
        self.arena.mapped()
    }

    /// The device's graph memory ([`Device::graph_memory`](crate::Device::graph_memory)):
    /// what graphs with memory nodes (and any other graphs there) use and reserve; a set's
    /// own temporaries are in [`GraphSet::temp_memory`] instead.
    pub fn graph_memory(&self) -> Result<GraphMemory> {
        self.capture.origin().device().graph_memory()
    }

    fn find(&self, key: &K) -> Option<usize> {
        self.keys.iter().position(|r| r.key == *key)
    }

    /// `key`'s graph, running `pipeline`'s values.
    fn ready<P: Pipeline>(&mut self, key: K, pipeline: &P) -> Result<&Executable> {
        self.check_program(pipeline.program())?;
        self.clock += 1;
        let found = self.find(&key);
        let i = match found {
            Some(i) => i,
            None => {
                self.keys.push(KeyRecord {
                    key,
                    run: None,
                    used: 0,
                    before: KeyStats::default(),
                    captures: 0,
                    capture_time: Duration::ZERO,
                });
                self.keys.len() - 1
            }
        };
        self.keys[i].used = self.clock;
        if let Some(run) = self.keys[i].run.as_mut() {
            run.apply_args(pipeline)?;
        } else {
            let start = Instant::now();
            let run = match self.make_room_and_capture(pipeline) {
                Ok(run) => run,
                Err(e) => {
                    if found.is_none() {
                        // Never captured: no record of the key.
                        self.keys.pop();
                    }
                    return Err(e);
                }
            };
            let record = &mut self.keys[i];
            record.capture_time += start.elapsed();
            record.captures = 1;
            record.run = Some(run);
            self.program = Some(pipeline.program());
        }
        self.keys[i].run.as_ref().ok_or(Error::Internal {
            invariant: "a graph set holds the graph it just made ready",
        })
    }

    /// Drops graphs past the capacity (one place kept for the new one), then captures and
    /// instantiates `pipeline`.
    fn make_room_and_capture<P: Pipeline>(&mut self, pipeline: &P) -> Result<Executable> {
        let mut dropped = false;
        while self.len() >= self.capacity {
            dropped |= self.drop_least_recent();
        }
        self.trim_if(dropped)?;
        let core = GraphCore::capture(&mut self.capture, pipeline)?;
        let mut run = Executable::instantiate(core, self.capture.settings())?;
        // A key's pipeline may change shape between launches (another kernel, more
        // statements): its graph is instantiated anew rather than refused.
        run.reinstantiate = true;
        Ok(run)
    }

    fn check_program(&self, program: &'static Program) -> Result<()> {
        match self.program {
            Some(held) if !std::ptr::eq(held, program) => Err(Error::InvalidArgument(format!(
                "this graph set holds graphs of pipeline `{}` but was given a `{}`; a set \
                 holds one pipeline type: make a set per pipeline",
                held.name, program.name
            ))),
            _ => Ok(()),
        }
    }

    /// Drops the held graph launched least recently; whether there was one.
    fn drop_least_recent(&mut self) -> bool {
        let oldest = self
            .keys
            .iter_mut()
            .filter(|r| r.run.is_some())
            .min_by_key(|r| r.used);
        match oldest {
            Some(record) => {
                self.evictions += 1;
                record.drop_graph()
            }
            None => false,
        }
    }

    fn trim_if(&self, dropped: bool) -> Result<()> {
        if dropped && self.trim {
            self.arena.shrink();
            self.capture.origin().device().trim_graph_memory()?;
        }
        Ok(())
    }
}

impl<K: fmt::Debug> fmt::Debug for GraphSet<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphSet")
            .field("pipeline", &self.program.map(|p| p.name))
            .field("capacity", &self.capacity)
            .field(
                "held",
                &self
                    .keys
                    .iter()
                    .filter(|r| r.run.is_some())
                    .map(|r| &r.key)
                    .collect::<Vec<_>>(),
            )
            .field("dropped", &self.evictions)
            .finish()
    }
}

/// One key of [`GraphSet::prepare_all`]: give it the key's pipeline.
#[derive(Debug)]
pub struct Prepare<'s, K> {
    set: &'s mut GraphSet<K>,
    key: K,
}

impl<K: PartialEq + Clone + fmt::Debug> Prepare<'_, K> {
    /// Prepares the key's graph of `pipeline` ([`GraphSet::prepare`]).
    pub fn pipeline<P: Pipeline>(self, pipeline: &P) -> Result<()> {
        self.set.prepare(self.key, pipeline)
    }
}
