//! The `pipeline!` procedural macro of streamgraph. Use it through the `streamgraph` crate,
//! which re-exports it; generated code refers to `::streamgraph::__private`.
//!
//! Inside: `syntax` parses the input, `model` resolves names and accesses, `validate`
//! checks the cross-statement rules (including the static race check), `expand` writes the
//! code. Only this file touches `proc_macro`.
#![warn(missing_docs)]
// Syntax trees are built once per macro call and moved rarely; boxing variants would only
// add noise to every match.
#![allow(clippy::large_enum_variant)]

mod expand;
#[cfg(test)]
mod fuzz_tests;
mod model;
mod syntax;
mod text;
mod validate;

/// Declares a multi-stream CUDA pipeline type.
///
/// ```
/// # extern crate streamgraph_runtime as streamgraph;
/// # use streamgraph_macros::pipeline;
/// use streamgraph::{DeviceBuffer, Kernel, Plan, Pipeline};
///
/// pub struct Kernels { pub scale: Kernel, pub axpy: Kernel }
///
/// pipeline! {
///     /// Scale `x` while `y` is updated on a side stream; join at the end.
///     pub pipeline Diamond(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernels, n: u32) {
///         stream main;                       // the first stream is the origin
///         stream side(priority = -1);        // also `device = EXPR`; both over parameters
///         event ready;
///
///         main: launch k.scale<<<(n + 255) / 256, 256>>>(&mut x, 2.0f32, n);
///         main: record ready;
///         side: wait ready;
///         side: launch k.axpy<<<(n + 255) / 256, 256>>>(&mut y, &x, 0.5f32, n);
///         main: wait_stream side;
///     }
/// }
///
/// # fn main() -> streamgraph::Result<()> {
/// // Planned without a GPU, on stand-in kernels and buffers:
/// let k = Kernels { scale: Kernel::for_planning("scale"), axpy: Kernel::for_planning("axpy") };
/// let mut x = DeviceBuffer::<f32>::for_planning(1024)?;
/// let mut y = DeviceBuffer::<f32>::for_planning(1024)?;
/// let diamond = Diamond::new(&mut x, &mut y, &k, 1024);
/// assert_eq!(diamond.n, 1024);                         // parameters are public fields
/// assert_eq!(Diamond::PROGRAM.statements.len(), 5);    // the static description
/// assert_eq!(diamond.stream_options()[1].priority, -1);
/// let plan = Plan::build(&diamond)?;
/// assert_eq!(plan.len(), 2);
/// plan.check_races()?;
/// # Ok(())
/// # }
/// ```
///
/// The same value runs eagerly (`Eager::run(&diamond)`) or is captured into a CUDA graph
/// (`capture(&stream, diamond)`); see the `streamgraph` crate's documentation.
///
/// # Statements
///
/// Each statement names the stream it is issued on, `STREAM: OP;`:
///
/// | statement | meaning |
/// | --- | --- |
/// | `launch KERNEL<<<GRID, BLOCK[, SHARED_BYTES]>>>(ARGS)` | kernel launch; `GRID`/`BLOCK` are `u32` or tuples of two or three `u32`; `&mut x` writes buffer `x`, `&x` reads it, anything else is passed by value |
/// | `copy DST <- SRC` | copy between device and page-locked host memory of the same length |
/// | `fill BUF = VALUE` | memset with a 1-, 2- or 4-byte value |
/// | `host F` | a host function `F: Fn() + Send + Sync + 'static`, run in stream order |
/// | `call OP(&mut C, &A, …)` | stream-ordered library work: `OP` is a parameter whose type implements `StreamOp` (a cuBLAS GEMM, random numbers, …); the operands are what it writes (`&mut`) and reads (`&`) |
/// | `record EVENT` / `wait EVENT` | record an event / make the stream wait for it (`EVENT` may be an element of an event array, `ready[1]` or `ready[c % 2]`) |
/// | `wait_stream OTHER` | make the stream wait for everything issued on `OTHER` so far |
/// | `while FLAG { … }`, `while FLAG, limit = N { … }` | a loop decided on the device by a `DeviceFlag` parameter, at most `N` iterations (README "Loops and branches on the device") |
/// | `if FLAG { … } else { … }` | a branch decided on the device by a `DeviceFlag` |
/// | `switch INDEX { 0 => { … } 4 => { … } _ => { … } }` | a multi-way branch on the device: the arm whose value equals the `DeviceFlag` `INDEX` runs, else the last `_` arm, else none; arms are distinct non-negative integer literals (at most 64) and an optional `_`, last |
///
/// Declarations come before the statements: `stream NAME;` or `stream NAME(priority = P,
/// device = D);` (the first one declared is the origin), `event NAME;`, and `event NAME[N];`,
/// an array of `N` events (an integer literal, 1 to 64), `NAME[0]` to `NAME[N-1]`. A `record`
/// or `wait` names an element by a constant (`ready[1]`) or picks one by a value known when the
/// pipeline is issued (`ready[c % 2]`, of any integer type; a value outside the array is an
/// error naming the statement). The compile-time race check counts a picked element as any one
/// of them (a race is reported only when it is certain whatever the value); the plan, eager
/// runs and captures use the element picked. Double buffering is the idiom
/// (`examples/overlap.rs`): `event loaded[2];`, then in `for c in 0..chunks { … }` a copy into
/// `slots[c % 2]` followed by `record loaded[c % 2]`, and `wait loaded[c % 2]` before the
/// work on it.
///
/// `temp NAME: TYPE[LEN];` declares a temporary: `LEN` elements of `TYPE` (`LEN` a `usize`
/// expression over the parameters), named by statements as a `&mut DeviceBuffer<TYPE>`
/// parameter is, and allocated by no caller. The macro adds an `alloc NAME` statement before
/// the top-level item holding its first use (on that use's stream; a device block's stream for
/// a use in its body) and a `free NAME` statement after the item holding its last use, on the
/// first stream whose frontier covers its allocation and every use of it on every path (a
/// `for` may run no iteration, an `if` may not be taken), tried at each later top-level
/// boundary (the last use's stream first, then the others that used it, then the rest), or
/// at the end on the origin after a `wait_stream` of each stream not covered. Allocations and
/// frees at one boundary come frees first, each in declaration order. Both write the whole
/// temporary for the race check. Allocations and frees never go inside a host
/// `for`/`if` or a device block's body (README "Temporaries").
///
/// Collectives name no single stream: `all_reduce(COMM, OP) { S0: &mut X0, S1: &mut X1 };`,
/// `all_gather(COMM) { S0: &A0 => &mut G0, … };`, `reduce_scatter(COMM, OP) { S0: &G0 => &mut
/// A0, … };`, `broadcast(COMM, root = S0) { S0: &mut X0, … };`, where `COMM` is a
/// `&Communicator` parameter, `OP` one of `sum`, `prod`, `min`, `max`, `avg`, and the `k`-th
/// participant `STREAM: BUFFERS` is the communicator's `k`-th local rank (README "Collectives
/// across GPUs"). Each participant is one operation on its stream that reads its send buffer
/// and writes its receive buffer.
///
/// Buffers are parameters, optionally followed by indexing (`xs[i]`: one buffer of a slice,
/// array or `Vec` of buffers) and method calls that select a sub-range (`x.slice(0..n)`, also
/// on a `PinnedBuffer`). `for PAT in EXPR { ... }` and `if EXPR { ... } else { ... }` around
/// statements are issued as Rust control flow.
///
/// # What is generated
///
/// A struct with the parameters as public fields (references get a lifetime `'sg` when they
/// have none), `new(params...)`, and an implementation of `streamgraph::Pipeline`: the static
/// `PROGRAM` description, `stream_options()` and `issue()`. Parameters that are not references
/// must be `Copy`.
///
/// # Compile-time checks
///
/// Unknown names (with the closest declared name as a suggestion) and duplicate names
/// (a temporary's among the parameters'); temporaries declared inside a block, never used, or
/// read by a statement before any earlier statement writes them (a warning,
/// `temporary_may_be_read_before_written`, when every earlier write is inside a `for`, `if` or
/// device block that may skip it), and uses of a temporary on a stream that nothing orders
/// after its allocation; waits
/// on events no earlier statement records; `wait_stream` on the stream itself; malformed launch
/// configurations; statements without their `STREAM:`, written as method calls
/// (`side.wait_event(ready)`) or declaring a nested pipeline; collectives with an unknown
/// communicator, a stream listed twice, a receive buffer without `&mut`, a missing reduction
/// or root, or inside a device block; a buffer parameter passed to a
/// kernel by value (write `&mut x` or `&x`); host memory (`Vec`, slices) in launches and fills
/// (use `DeviceBuffer::from_host`); copies from or to pageable host memory (use
/// `PinnedBuffer`; slices and `Vec`s *of* buffers are parameters like any other); writes
/// through parameters not declared `&mut`; and data races: two
/// statements on different streams touching the same whole buffer, one of them writing, with
/// no record/wait or `wait_stream` path ordering them. A race is reported only when it is
/// certain on every path through the pipeline's `if`s and loops, counting each loop as running
/// either not at all or at least twice (so a loop body is checked against its own next
/// iteration); sub-ranges and uncertain cases are checked at run time by the plan. At most 20
/// races are listed, one per pair of statements and buffer, and one more error counts the rest.
/// When branches and loops give some pairs of statements more orderings than the check follows,
/// a warning (a deprecation note on the pipeline's name, `static_race_check_incomplete`) says
/// so and the plan checks those pairs at run time. `for` and `if` nest at most 128 levels deep
/// (each `else if` is one level more). While a statement has an unknown name, the race check
/// waits for the fix rather than report races of its placeholder.
///
/// Type errors land on the user's tokens and speak of the traits a pipeline needs: a kernel
/// must be a `LaunchKernel`, a launch argument passed
/// by value a `KernelValue`, a parameter declared without `&` a `ValueParameter` (`Copy`), a
/// buffer `DeviceMemory` (`DeviceMemoryMut` where written), a copy's source a `CopySource`
/// that is not pageable host memory and its destination a `CopyTarget`. What a parameter's
/// type is comes from these traits, never from the type's name: a renamed import or an alias
/// gets the same checks, races included, as the type it names.
#[proc_macro]
pub fn pipeline(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    expand::pipeline(input.into()).into()
}
