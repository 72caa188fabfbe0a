//! The CUDA C source shared by every benchmarked system, and how its kernels are launched.

/// `benches/peers/kernels.cu`, embedded so the binary runs from any checkout path.
pub const SOURCE: &str = include_str!("../peers/kernels.cu");

/// Kernel names in [`SOURCE`].
pub const EMPTY: &str = "empty";
/// See [`SOURCE`]: stores its second argument through its first.
pub const STAMP: &str = "stamp";
/// See [`SOURCE`]: busy-waits on the global timer.
pub const SPIN: &str = "spin";
/// See [`SOURCE`]: W8's loop bookkeeping (`*left -= 1; *go = *left != 0`).
pub const COUNTDOWN: &str = "countdown";

/// See [`SOURCE`]: W9's elementwise op (`work(float *x, unsigned n, unsigned iters)`), launched
/// with [`WORK_BLOCK`]-thread blocks covering the chunk.
pub const WORK: &str = "work";
/// Threads per block of [`WORK`].
pub const WORK_BLOCK: u32 = 256;

/// See [`SOURCE`]: W11's bias and ReLU after each GEMM (`bias_act(float *y, const float *b,
/// unsigned n, unsigned cols, unsigned relu)`), launched with 256-thread blocks covering `y`.
pub const BIAS_ACT: &str = "bias_act";

/// See [`SOURCE`]: a branch of W14's decode-like step (`decode_branch(float *h, const float
/// *s, unsigned n, float a, float c)`), launched with 256-thread blocks covering `h`.
pub const DECODE_BRANCH: &str = "decode_branch";
/// See [`SOURCE`]: the join of a layer of W14's decode-like step (`decode_mix(float *y, const
/// float *h0, …, const float *h3, unsigned n)`), launched as [`DECODE_BRANCH`].
pub const DECODE_MIX: &str = "decode_mix";

/// Every kernel but [`WORK`], [`BIAS_ACT`] and the decode kernels runs as one block of one
/// thread.
pub const GRID: u32 = 1;
/// Threads per block.
pub const BLOCK: u32 = 1;
