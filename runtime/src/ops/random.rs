//! Random numbers as an op, fresh on every replay: [`Random`].

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::call::{BodyOp, CallStream, Out, StreamOp};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::ffi::philox::{PhiloxDist, PhiloxElem, PhiloxState};
use crate::memory::Pod;
use crate::stream::current_stream_on;

mod sealed {
    /// Implemented for the element types the Philox kernels write, and only for them.
    pub trait Sealed: Copy {
        /// `double` rather than `float`.
        const DOUBLE: bool;
        fn to_f64(self) -> f64;
    }

    impl Sealed for f32 {
        const DOUBLE: bool = false;
        fn to_f64(self) -> f64 {
            f64::from(self)
        }
    }

    impl Sealed for f64 {
        const DOUBLE: bool = true;
        fn to_f64(self) -> f64 {
            self
        }
    }
}

/// An element type of [`Random`]: `f32` (4 numbers per Philox block) and `f64` (2).
pub trait RandomElem: Pod + Send + Sync + fmt::Debug + sealed::Sealed {}

impl RandomElem for f32 {}
impl RandomElem for f64 {}

fn elem<T: RandomElem>() -> PhiloxElem {
    if T::DOUBLE {
        PhiloxElem::F64
    } else {
        PhiloxElem::F32
    }
}

/// Random numbers from a seed, fresh on every issue *and on every replay* of a graph that
/// captured the op: `call rng(&mut x)` fills all of `x` with uniforms in `[0, 1)`
/// ([`Random::uniform`]) or normals ([`Random::normal`]), in `f32` or `f64`.
///
/// The generator is Philox4x32-10 (Salmon et al., SC 2011; the counter-based generator of
/// Random123 and cuRAND) in a kernel of streamgraph's own. Its position, the *offset*, lives
/// in device memory the op owns: each issue launches the generate kernel, which reads the
/// offset when it starts, and then a one-thread kernel that advances it by the blocks used,
/// both on the call's stream. A captured graph holds those two kernels, so replay *k* reads
/// what replay *k − 1* left and draws exactly what the *k*-th eager issue would have drawn.
/// cuRAND is not used because its generators keep their offset on the host: a captured
/// cuRAND call bakes the offset into its kernel's arguments and draws the same numbers on
/// every replay.
///
/// # The numbers
///
/// Philox block `j` of an issue that finds the offset at `o` is Philox4x32-10 of the counter
/// `(lo(o + j), hi(o + j), lo(s), hi(s))` under the key `(lo(seed), hi(seed))`, where `s` is the
/// [subsequence](Random::with_subsequence) (0 unless set), giving 32-bit words `w0..w3`.
/// Element `i` of the output comes from block `i / 4` (`f32`) or `i / 2` (`f64`):
///
/// - `f32` uniform: element `4j + t` is `(w_t >> 8) · 2⁻²⁴`, exactly;
/// - `f64` uniform: elements `2j`, `2j + 1` are `(w0:w1 >> 11) · 2⁻⁵³` and `(w2:w3 >> 11) ·
///   2⁻⁵³` (`w0:w1` is the 64-bit word with `w0` high), exactly;
/// - normal (Box–Muller): from a pair of words `(a, b)`, `u1 = ((a >> 8) + 1) · 2⁻²⁴` in
///   `(0, 1]`, `u2 = (b >> 8) · 2⁻²⁴`, `r = √(−2 ln u1)`, and the two elements
///   `mean + std · r · cos 2πu2`, `mean + std · r · sin 2πu2`; `f32` uses the pairs
///   `(w0, w1)`, `(w2, w3)` for elements `4j..4j + 4`, `f64` the 53-bit words `w0:w1`,
///   `w2:w3` (as for its uniforms, `u1` with `+ 1`) for elements `2j`, `2j + 1`. These go
///   through the device's `log`, `sqrt` and `sincospi`, so they match a host computation to
///   a few units in the last place, not bitwise.
///
/// An issue of `n` numbers then adds [`Random::blocks_for`]`(n)` to the offset (wrapping at
/// 2⁶⁴). The offset starts at 0 ([`Random::set_offset`] moves it).
///
/// # Ordering
///
/// The offset is the op's own memory: issue one op from statements ordered with each other
/// (on one stream, or joined by `wait`s). The op declares it as memory every call writes
/// (`StreamOp::scratch`), so the run-time race check (on in debug builds) reports two calls of
/// one op that nothing orders; the compile-time check does not see it. For numbers drawn
/// concurrently, make one op per stream, with different seeds or
/// [subsequences](Random::with_subsequence).
///
/// ```no_run
/// # fn main() -> streamgraph::Result<()> {
/// use streamgraph::ops::Random;
/// use streamgraph::{Device, DeviceBuffer};
///
/// let device = Device::new(None)?;
/// let rng = Random::<f32>::uniform(&device, 42)?;
/// let noise = Random::<f32>::normal(&device, 7, 0.0, 0.1)?;
/// let mut x = DeviceBuffer::<f32>::zeros(&device, 1 << 20)?;
/// // In a pipeline with parameters `rng: &Random<f32>` and `x: &mut DeviceBuffer<f32>`:
/// //     main: call rng(&mut x);
/// # let _ = (&rng, &noise, &mut x);
/// # Ok(())
/// # }
/// ```
pub struct Random<T> {
    state: Arc<PhiloxState>,
    device: Device,
    seed: u64,
    subsequence: u64,
    dist: PhiloxDist,
    _elem: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Random<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Random")
            .field("elem", &std::any::type_name::<T>())
            .field("seed", &self.seed)
            .field("subsequence", &self.subsequence)
            .field("dist", &self.dist)
            .field("device", &self.device.ordinal())
            .finish()
    }
}

impl<T: RandomElem> Random<T> {
    /// Uniforms in `[0, 1)` from `seed`, on `device`: compiles the kernels (once per device)
    /// and allocates the op's offset, set to 0 (waiting for that on the device's current
    /// stream).
    ///
    /// Errors: [`Error::NoNvrtc`] without NVRTC, [`Error::Compile`], and the driver's.
    pub fn uniform(device: &Device, seed: u64) -> Result<Random<T>> {
        Random::make(device, seed, PhiloxDist::Uniform)
    }

    /// Normals of `mean` and standard deviation `std` from `seed` (Box–Muller), on `device`;
    /// as [`Random::uniform`] otherwise.
    ///
    /// Errors: [`Error::InvalidArgument`] for a `mean` or `std` that is not finite or a
    /// negative `std`, and those of [`Random::uniform`].
    pub fn normal(device: &Device, seed: u64, mean: T, std: T) -> Result<Random<T>> {
        let (mean, stddev) = (mean.to_f64(), std.to_f64());
        if !mean.is_finite() || !stddev.is_finite() || stddev < 0.0 {
            return Err(Error::InvalidArgument(format!(
                "a normal random-number op of mean {mean} and standard deviation {stddev}; \
                 pass finite values and a standard deviation of 0 or more"
            )));
        }
        Random::make(device, seed, PhiloxDist::Normal { mean, stddev })
    }

    fn make(device: &Device, seed: u64, dist: PhiloxDist) -> Result<Random<T>> {
        let state = PhiloxState::new(device.ctx())?;
        let stream = current_stream_on(device);
        state.set(stream.as_cudarc(), 0, "Random::uniform/normal")?;
        Ok(Random {
            state: Arc::new(state),
            device: device.clone(),
            seed,
            subsequence: 0,
            dist,
            _elem: PhantomData,
        })
    }

    /// The same op drawing from subsequence `subsequence` (the upper half of Philox's
    /// counter): ops of one seed and different subsequences draw independent numbers.
    pub fn with_subsequence(self, subsequence: u64) -> Random<T> {
        Random {
            subsequence,
            ..self
        }
    }

    /// The seed (Philox's key).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The subsequence (0 unless [`Random::with_subsequence`] set one).
    pub fn subsequence(&self) -> u64 {
        self.subsequence
    }

    /// The Philox blocks an issue of `n` numbers uses, by which it advances the offset:
    /// `⌈n / 4⌉` for `f32`, `⌈n / 2⌉` for `f64`.
    pub fn blocks_for(n: usize) -> u64 {
        elem::<T>().blocks(n as u64)
    }

    /// Sets the offset back to 0: the next issue draws what the first did.
    /// See [`Random::set_offset`].
    pub fn reset(&mut self) -> Result<()> {
        self.set_offset(0)
    }

    /// Sets the offset to `offset` (in Philox blocks): the next issue, on any stream, draws
    /// from block `offset` on.
    ///
    /// Waits for all work queued on the op's device so far (an eager run or a graph's replay
    /// may still be using the offset), then sets it with a one-thread kernel on the device's
    /// current stream and waits for that too. Takes `&mut self`: no pipeline, and so no graph
    /// that captured the op, borrows it meanwhile.
    ///
    /// Errors: [`Error::StreamCapturing`] while other code captures the current stream, and
    /// the driver's.
    pub fn set_offset(&mut self, offset: u64) -> Result<()> {
        self.device.synchronize()?;
        let stream = current_stream_on(&self.device);
        self.state
            .set(stream.as_cudarc(), offset, "Random::set_offset")
    }
}

// SAFETY: `issue` launches two kernels on the call's stream and nothing else: the generate
// kernel writes exactly the elements of `out` (its length, from its memory's bytes, checked
// against the element type in `PhiloxState::fill`) and reads the op's offset word; the advance
// kernel writes the offset word. The word and the kernels' module are held by the
// `PhiloxState`, which `keep` returns. No allocation, event or synchronization.
unsafe impl<T: RandomElem> StreamOp for Random<T> {
    type Operands<'a> = (Out<'a, T>,);

    fn issue(&self, stream: &CallStream<'_>, (out,): &mut Self::Operands<'_>) -> Result<()> {
        self.state
            .fill(
                stream.as_cudarc(),
                out.memory(),
                elem::<T>(),
                self.dist,
                self.seed,
                self.subsequence,
            )
            .map(|_| ())
    }

    fn keep(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        Some(self.state.clone())
    }

    /// The counter: two calls of one op that nothing orders would both advance it, a race the
    /// run-time check reports.
    fn scratch(&self) -> Option<crate::ffi::memory::MemoryRef<'_>> {
        self.state.counter_ref()
    }

    /// The offset is the device's (read by the captured kernel); seed, subsequence and
    /// distribution are the host's, and a value moved into `with_subsequence` keeps the
    /// state: they are the parameters.
    fn fixed_work(&self, parameters: &mut Vec<u8>) -> bool {
        parameters.extend_from_slice(&self.seed.to_le_bytes());
        parameters.extend_from_slice(&self.subsequence.to_le_bytes());
        let (kind, mean, stddev) = match self.dist {
            PhiloxDist::Uniform => (0u8, 0.0, 0.0),
            PhiloxDist::Normal { mean, stddev } => (1, mean, stddev),
        };
        parameters.push(kind);
        parameters.push(u8::from(T::DOUBLE));
        parameters.extend_from_slice(&mean.to_bits().to_le_bytes());
        parameters.extend_from_slice(&stddev.to_bits().to_le_bytes());
        true
    }

    fn name(&self) -> &str {
        match (self.dist, T::DOUBLE) {
            (PhiloxDist::Uniform, false) => "Random<f32> (uniform)",
            (PhiloxDist::Uniform, true) => "Random<f64> (uniform)",
            (PhiloxDist::Normal { .. }, false) => "Random<f32> (normal)",
            (PhiloxDist::Normal { .. }, true) => "Random<f64> (normal)",
        }
    }
}

/// Two kernel nodes: a device `while`/`if` body may hold them; each iteration draws fresh
/// numbers.
impl<T: RandomElem> BodyOp for Random<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_per_issue_follow_the_element_type() {
        assert_eq!(Random::<f32>::blocks_for(10), 3);
        assert_eq!(Random::<f64>::blocks_for(10), 5);
        assert_eq!(Random::<f32>::blocks_for(0), 0);
    }
}
