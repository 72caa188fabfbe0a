//! Random pipelines for testing executors against the plan.
//!
//! A [`RandomProgram`] is a seeded, reproducible program over several streams that uses
//! everything a pipeline can: launches reading or writing a buffer, fills and device-to-device
//! copies of whole buffers and of sub-ranges, copies between pinned host buffers and device
//! memory, host functions, records, re-records, waits (on recorded and never-recorded events)
//! and `wait_stream`s; its statements are grouped into `for` loops (their bodies issued two or
//! three times, each issue a new occurrence of the same statement) and `if`s (whose condition
//! is fixed per program, so the statements of an `if` not taken are never issued), nested up to
//! two deep. With [`RandomOptions::device_blocks`] its statements may also form device `while`
//! loops (their flag always set, bounded by a random `limit` of 0–3) and device `if`/`else`s
//! (their flag fixed per program), whose bodies hold no host functions and no host copies;
//! [`RandomOptions::body_orderings`] makes those bodies order their streams densely (the
//! block's stream waiting for events recorded in the body, streams that only wait) and nests
//! blocks one level deeper; [`RandomOptions::switches`] adds device `switch`es (arms with and
//! without `_`, values out of order with gaps, the index fixed per program and at times taken
//! by no arm). It can be replayed into any [`Issuer`](crate::issue::Issuer): the
//! model tests replay it into a [`Planner`](crate::plan::Planner) with plan-only kernels and
//! memory ([`RandomProgram::plan`]), a GPU test replays the same calls into eager and capturing
//! issuers with real ones and compares the captured graph's edges with
//! [`Plan::edges`](crate::plan::Plan::edges) and the memory an eager run and the graph's
//! replays leave.
//!
//! Random programs are not race-free: two operations on different streams may touch the same
//! memory unordered. A test that compares memory must compare only what no race decides (see
//! `tests/capture_random.rs`).
//!
//! ```
//! use streamgraph::testing::RandomProgram;
//!
//! # fn main() -> Result<(), streamgraph::Error> {
//! for seed in 0..20 {
//!     let random = RandomProgram::new(seed);
//!     let plan = random.plan()?;
//!     assert_eq!(plan.len(), random.operation_count());
//!     // Everything issued is joined into the origin at the end.
//!     for op in 0..plan.len() {
//!         assert!(plan.final_frontier().iter().any(|&f| f == op || plan.happens_before(op, f)));
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! With [`RandomOptions::temps`] it also declares temporaries, allocated and released at the
//! top level and used in place of device buffers where the program orders the use after the
//! allocation, before the release and without a race on the temporary (see
//! [`RandomOptions::temps`]); a replay allocates them through the issuer
//! ([`Issuer::alloc`](crate::issue::Issuer::alloc)) and names them in the calls that use them.
//!
//! One file per part: `options` (what may be generated), `program` (the [`RandomProgram`] and
//! the memory it needs), `blocks` (its control structure), `calls` (its issue calls),
//! `generate` (how a seed becomes a program, with the numbers of `rng`), `statements` (what
//! each statement does), `temps` (where temporaries are allocated, used and released) and
//! `replay` (its calls issued into an issuer, on a [`RandomMemory`]).

mod blocks;
mod call_op;
mod calls;
mod generate;
mod options;
mod program;
mod replay;
mod rng;
mod statements;
mod temps;

pub use blocks::Block;
pub use call_op::RandomCallOp;
pub use calls::{Call, Memory, Place};
pub use options::RandomOptions;
pub use program::RandomProgram;
pub use replay::{Operands, RandomHostFn, RandomMemory};
