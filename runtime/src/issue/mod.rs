//! The seam between generated code and executors: [`Pipeline`] and [`Issuer`].
//!
//! The macro generates one [`Pipeline::issue`] method that walks the program and calls one
//! [`Issuer`] method per statement. Executors implement [`Issuer`]: [`crate::Eager`] issues on
//! real streams, the capture issuer records into a CUDA graph, [`crate::plan::Planner`] builds
//! the happens-before model and issues nothing. A pipeline is therefore written once and run,
//! captured or planned without change.

use crate::call::BoundCall;
use crate::comm::Communicator;
use crate::error::Error;
use crate::ffi::memory::{MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::memory::{DeviceFlag, Scope, TempMemory};
use std::borrow::Cow;

use crate::module::Kernel;
use crate::operand::{FillPattern, HostFn, LaunchConfig, ReduceOp};
use crate::program::{Program, Statement};

mod collective;
mod keys;
mod requires;

pub(crate) use collective::check_collective;
pub use collective::CollectivePart;
pub use keys::{
    param_bit, KeyWriter, KeyedParam, ParamKey, ParamKeys, ParamProbe, UnkeyedParam,
    MAX_KEYED_ELEMENTS,
};
pub use requires::{LaunchDims, LaunchKernel, ValueParameter};

/// A pipeline: a program and the run-time values its statements issue.
///
/// `pipeline!` implements it (and gives the type an inherent `PROGRAM` constant); a tool can
/// implement it for a program built at run time ([`crate::ProgramBuilder`]), since executors
/// only ask [`Pipeline::program`].
pub trait Pipeline {
    /// Whether every statement this pipeline can issue, and every value it issues, is a
    /// function of the keys [`Pipeline::param_keys`] writes: `pipeline!` sets it when each
    /// statement is a launch, copy, fill or `call` whose expressions can be told (see
    /// [`Issuer::unchanged`]), an ordering statement, a host function or a temporary of such a
    /// size, under host `for`s and `if`s of such expressions, with no device block or
    /// collective. An argument update in which no key changed then walks nothing: the
    /// executable graph's nodes run those values already.
    ///
    /// A wrong `true` cannot cause undefined behaviour: like a wrong [`ParamKey`], it leaves
    /// nodes on values they ran before, which touch only memory the graph keeps allocated (an
    /// operation that touches host memory is never left out of a walk).
    const KEYED_WALK: bool = false;

    /// The static description this value issues: streams, events, statements with access sets
    /// and locations. The same program object on every call.
    fn program(&self) -> &'static Program;

    /// Run-time options of each declared stream (priority, device), evaluated from the
    /// pipeline's parameters; one entry per [`Program::streams`] element. Borrowed from a
    /// constant when no stream's options depend on the parameters (`pipeline!` does so), so
    /// that asking costs no allocation.
    fn stream_options(&self) -> Cow<'static, [StreamOptions]>;

    /// Issues the program, statement by statement, through `issuer`.
    ///
    /// Stops at the first error; the error names the statement.
    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error>;

    /// Writes the key of each parameter, in declaration order, to `keys` ([`ParamKey`]; a
    /// parameter whose type has none through [`ParamKeys::unkeyed`]): what an argument update
    /// compares to find the statements it must walk ([`Issuer::unchanged`]). `pipeline!`
    /// writes them; the default writes none, and then every statement counts as changed.
    fn param_keys(&self, keys: &mut ParamKeys) {
        let _ = keys;
    }
}

/// How a declared stream is created: `stream side(priority = -1, device = 0)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StreamOptions {
    /// Requested priority (lower is higher priority); clamped to the device's range.
    pub priority: i32,
    /// Device ordinal; `None` (or a negative index) means the origin's device.
    pub device: Option<i32>,
}

impl StreamOptions {
    /// Priority 0 on the origin's device: a stream declared without options.
    pub const DEFAULT: StreamOptions = StreamOptions {
        priority: 0,
        device: None,
    };
}

/// Receives a pipeline's statements in program order. One method per statement kind.
///
/// Ordering statements (`record`, `wait`, `wait_stream`) carry their event/stream indices in
/// [`Statement::kind`]; operations carry their run-time arguments.
pub trait Issuer {
    /// Asked before the statement `stmt` evaluates its expressions, by a statement whose
    /// expressions are functions of the parameters in `reads` ([`param_bit`] of each):
    /// `true` when the issuer already holds what the statement would issue (an argument
    /// update whose graph runs values of equal [`ParamKey`]s), and then the statement is not
    /// issued. The default, and every issuer that runs or records statements, says `false`.
    #[inline]
    fn unchanged(&mut self, stmt: &'static Statement, reads: u64) -> bool {
        let _ = (stmt, reads);
        false
    }

    /// Asked before host `for` loop number `number` of the pipeline (`pipeline!` numbers the
    /// loops that hold only launches, copies, fills, `call`s and ordering statements, all of whose
    /// expressions are functions of the parameters in `reads`): `true` when the issuer holds
    /// what the whole loop would issue ([`Issuer::unchanged`] for every statement in it), and
    /// then the loop does not run. The default says `false`.
    #[inline]
    fn unchanged_loop(&mut self, number: u32, reads: u64) -> bool {
        let _ = (number, reads);
        false
    }

    /// Called as such a loop starts running; what it returns is handed to
    /// [`Issuer::loop_end`] when the loop is done. The default returns 0.
    #[inline]
    fn loop_begin(&mut self) -> u64 {
        0
    }

    /// Called when loop `number`, begun with `begun` ([`Issuer::loop_begin`]), is done. The
    /// default does nothing.
    #[inline]
    fn loop_end(&mut self, number: u32, begun: u64) {
        let _ = (number, begun);
    }

    /// `launch KERNEL<<<GRID, BLOCK, SHARED>>>(ARGS)` on `stmt.stream`.
    fn launch(
        &mut self,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<(), Error>;
    /// `copy DST <- SRC` on `stmt.stream`; both sides have the same element type and the
    /// issuer checks that they have the same length. `dst` was made through an exclusive
    /// borrow of the memory ([`MemoryMut`]).
    fn copy(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        src: MemoryRef<'_>,
    ) -> Result<(), Error>;
    /// `fill BUF = VALUE` on `stmt.stream`; `dst` is device memory, made through an exclusive
    /// borrow of it.
    fn fill(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        pattern: FillPattern,
    ) -> Result<(), Error>;
    /// `host F` on `stmt.stream`: `f` runs on a driver thread once the stream's earlier work is
    /// done. It must not call into CUDA.
    fn host(&mut self, stmt: &'static Statement, f: HostFn) -> Result<(), Error>;
    /// `record EVENT` on `stmt.stream`.
    fn record(&mut self, stmt: &'static Statement) -> Result<(), Error>;
    /// `wait EVENT` on `stmt.stream`.
    fn wait(&mut self, stmt: &'static Statement) -> Result<(), Error>;
    /// `wait_stream OTHER` on `stmt.stream`.
    fn wait_stream(&mut self, stmt: &'static Statement) -> Result<(), Error>;

    /// `while FLAG[, limit = N] { BODY }` on `stmt.stream`: runs `body` (which issues the
    /// statements of the body through the issuer it is given) while `flag` is non-zero, at
    /// most `limit` times. The flag is read before the first iteration and after each one.
    ///
    /// The body runs as a nested pipeline on `stmt.stream`: its other streams fork from it at
    /// the body's start and join it at the end. The default refuses the block.
    fn while_loop(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        limit: Option<u32>,
        body: &mut Body<'_>,
    ) -> Result<(), Error> {
        let _ = (flag, limit, body);
        Err(unsupported_block(stmt))
    }

    /// `if FLAG { THEN } else { OTHERWISE }` on `stmt.stream`: runs `then` when `flag` is
    /// non-zero, else `otherwise` (which issues nothing when the block has no `else`), each as
    /// a nested pipeline like a `while` body. The default refuses the block.
    fn if_else(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        then: &mut Body<'_>,
        otherwise: &mut Body<'_>,
    ) -> Result<(), Error> {
        let _ = (flag, then, otherwise);
        Err(unsupported_block(stmt))
    }

    /// `switch INDEX { V0 => { … } … _ => { … } }` on `stmt.stream`: runs the body of the arm
    /// that `index`'s value picks ([`StatementKind::switch_arm`](crate::StatementKind::switch_arm); `arms[k]` is arm `k`'s body,
    /// in the order of the statement's arms), or none, as a nested pipeline like a `while`
    /// body. The default refuses the block.
    fn switch(
        &mut self,
        stmt: &'static Statement,
        index: &DeviceFlag,
        arms: &mut [&mut Body<'_>],
    ) -> Result<(), Error> {
        let _ = (index, arms);
        Err(unsupported_block(stmt))
    }

    /// `call OP(OPERANDS)` on `stmt.stream`: `call` is the op bound to its operands, issued
    /// once the stream is ordered after the statement's waits. The default refuses it.
    fn call(&mut self, stmt: &'static Statement, call: &mut dyn BoundCall) -> Result<(), Error> {
        let _ = call;
        Err(Error::InvalidArgument(
            "this issuer does not run `call` statements; use `Eager`, `Capture` or `Planner`"
                .into(),
        )
        .in_statement(stmt))
    }

    /// The `Alloc` statement of a temporary ([`StatementKind::Alloc`](crate::StatementKind::Alloc)): `bytes` of device
    /// memory on `stmt.stream`, after the stream's earlier work, live until [`Issuer::free`]
    /// takes it back. Only the runtime's issuers make a [`TempMemory`]; an issuer that wraps
    /// one forwards the call. The default refuses the statement.
    fn alloc<'s>(
        &mut self,
        stmt: &'static Statement,
        scope: Scope<'s>,
        bytes: usize,
    ) -> Result<TempMemory<'s>, Error> {
        let _ = (scope, bytes);
        Err(Error::InvalidArgument(
            "this issuer does not run pipelines with temporaries; use `Eager`, `Capture` or \
             `Planner`"
                .into(),
        )
        .in_statement(stmt))
    }

    /// The `Free` statement of a temporary ([`StatementKind::Free`](crate::StatementKind::Free)): releases `memory` on
    /// `stmt.stream`, after the stream's earlier work. The default refuses the statement.
    fn free(&mut self, stmt: &'static Statement, memory: TempMemory<'_>) -> Result<(), Error> {
        let _ = memory;
        Err(Error::InvalidArgument(
            "this issuer does not run pipelines with temporaries; use `Eager`, `Capture` or \
             `Planner`"
                .into(),
        )
        .in_statement(stmt))
    }

    /// A collective statement (`all_reduce`, `all_gather`, `reduce_scatter`, `broadcast`):
    /// `stmt` is its first participant's statement, `parts[k]` participant `k` (on the
    /// stream of `parts[k].statement`, with the communicator's local rank `k`), all issued
    /// together. `op` is the reduction (ignored by `all_gather` and `broadcast`). The
    /// default refuses the statement.
    fn collective(
        &mut self,
        stmt: &'static Statement,
        comm: &Communicator,
        op: ReduceOp,
        parts: &[CollectivePart<'_>],
    ) -> Result<(), Error> {
        let _ = (comm, op, parts);
        Err(Error::InvalidArgument(
            "this issuer does not run collectives; use `Eager`, `Capture` or `Planner`".into(),
        )
        .in_statement(stmt))
    }
}

/// The body of a device `while`, `if` or `switch` block: issues the body's statements through
/// the issuer it is given.
pub type Body<'a> = dyn FnMut(&mut dyn Issuer) -> Result<(), Error> + 'a;

/// Refuses a `switch` statement that declares `declared` arms issued with `bodies` bodies
/// ([`Issuer::switch`] takes one body per arm, in the order of the statement's arms).
pub(crate) fn check_switch_arms(
    stmt: &'static Statement,
    declared: usize,
    bodies: usize,
) -> Result<(), Error> {
    if bodies == declared {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "the `switch` was issued with {bodies} bodies but declares {declared} arms"
    ))
    .in_statement(stmt))
}

fn unsupported_block(stmt: &'static Statement) -> Error {
    Error::InvalidArgument(
        "this issuer does not run device `while`/`if`/`switch` blocks; use `Eager`, `Capture` \
         or `Planner`"
            .into(),
    )
    .in_statement(stmt)
}

#[doc(hidden)]
pub mod __private {
    //! Issuing calls of generated code; they erase types after the compiler (and the macro's
    //! checks) have checked them. Not public API.
    use std::marker::PhantomData;

    use super::*;
    use crate::memory::__private::Place;
    use crate::memory::{
        device_ref, CopySource, CopyTarget, DeviceMemory, DeviceMemoryMut, FillValue, Zeroable,
    };
    use crate::operand::CollectiveElem;

    /// `copy DST <- SRC`: both sides must hold the same element type; `dst` is borrowed
    /// exclusively, through the `&&mut` of `issue(&self)`.
    pub fn copy<I, T, D, S>(
        issuer: &mut I,
        stmt: &'static Statement,
        dst: &&mut D,
        src: &S,
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
        D: CopyTarget<T> + ?Sized,
        S: CopySource<T> + ?Sized,
    {
        issuer.copy(stmt, MemoryMut::copy_target_through(dst), src.copy_source())
    }

    /// The kernel of `launch KERNEL<<<…>>>(…)`, as generated code passes it: `as_kernel` is
    /// `LaunchKernel::as_kernel` at the user's expression, so that a value that is not a kernel
    /// is reported there, in the user's terms, rather than as a bound of this function.
    pub fn kernel_with<K: ?Sized>(
        kernel: &K,
        as_kernel: for<'a> fn(&'a K) -> &'a Kernel,
    ) -> &Kernel {
        as_kernel(kernel)
    }

    /// `copy DST <- SRC`, as generated code issues it: `dst` is the place written (a
    /// parameter borrowed `&mut`, an element or part of it), which must be a copy target of
    /// `T`; `source` is `CopySource::copy_source_of` at the user's source expression, tied to
    /// the same `T`, so that memory that cannot be the source of a copy of `T` is reported
    /// there, in the user's terms, rather than as a bound of this function.
    pub fn copy_with<I, T, D, S>(
        issuer: &mut I,
        stmt: &'static Statement,
        dst: Place<'_, D>,
        src: &S,
        source: for<'a> fn(&'a S, PhantomData<T>) -> MemoryRef<'a>,
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
        D: CopyTarget<T> + ?Sized,
        S: ?Sized,
    {
        issuer.copy(stmt, dst.copy_target()?, source(src, PhantomData))
    }

    /// `fill BUF = VALUE`; `dst` is borrowed exclusively, through the `&&mut` of
    /// `issue(&self)`.
    pub fn fill<I, D>(
        issuer: &mut I,
        stmt: &'static Statement,
        dst: &&mut D,
        value: D::Elem,
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
        D: DeviceMemoryMut + ?Sized,
        D::Elem: FillValue,
    {
        issuer.fill(stmt, MemoryMut::device_through(dst), value.pattern())
    }

    /// `fill BUF = VALUE`, as generated code issues it: `dst` is the place written, which must
    /// be writable device memory; `pattern` is `FillValue::pattern` at the call site, so that an
    /// element type that cannot be filled is reported there, in the user's terms, rather than
    /// as a bound of this function.
    pub fn fill_with<I, D>(
        issuer: &mut I,
        stmt: &'static Statement,
        dst: Place<'_, D>,
        value: D::Elem,
        pattern: fn(D::Elem) -> FillPattern,
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
        D: DeviceMemoryMut + ?Sized,
    {
        issuer.fill(stmt, dst.device()?, pattern(value))
    }

    /// The value a `fill` of `dst` starts from: generated code assigns the user's value to it,
    /// so that a value of another type than the memory's elements is reported on the value, as
    /// a plain type mismatch.
    pub fn fill_value_of<D: DeviceMemoryMut + ?Sized>(dst: &Place<'_, D>) -> D::Elem {
        let _ = dst;
        Zeroable::zeroed()
    }

    /// `while FLAG[, limit = N] { BODY }`: the flag must be a [`DeviceFlag`].
    pub fn while_loop<I>(
        issuer: &mut I,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        limit: Option<u32>,
        body: &mut Body<'_>,
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
    {
        issuer.while_loop(stmt, flag, limit, body)
    }

    /// `if FLAG { THEN } else { OTHERWISE }`: the flag must be a [`DeviceFlag`].
    pub fn if_else<I>(
        issuer: &mut I,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        then: &mut Body<'_>,
        otherwise: &mut Body<'_>,
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
    {
        issuer.if_else(stmt, flag, then, otherwise)
    }

    /// `switch INDEX { … }`: the index must be a [`DeviceFlag`]; `arms` in the statement's
    /// arm order.
    pub fn switch<I>(
        issuer: &mut I,
        stmt: &'static Statement,
        index: &DeviceFlag,
        arms: &mut [&mut Body<'_>],
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
    {
        issuer.switch(stmt, index, arms)
    }

    /// A collective statement: the communicator must be a [`Communicator`].
    pub fn collective<I>(
        issuer: &mut I,
        stmt: &'static Statement,
        comm: &Communicator,
        op: ReduceOp,
        parts: &[CollectivePart<'_>],
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
    {
        issuer.collective(stmt, comm, op, parts)
    }

    /// One participant of a collective: device memory of one element type that collectives
    /// carry, on both sides; `recv`, written, is a place borrowed exclusively.
    pub fn collective_part<'a, S, R>(
        stmt: &'static Statement,
        send: &'a S,
        recv: Place<'a, R>,
    ) -> Result<CollectivePart<'a>, Error>
    where
        S: DeviceMemory + ?Sized,
        R: DeviceMemoryMut<Elem = S::Elem> + ?Sized,
        S::Elem: CollectiveElem,
    {
        Ok(CollectivePart {
            statement: stmt,
            send: device_ref(send),
            recv: recv.device()?,
            elem: <S::Elem as CollectiveElem>::TYPE,
        })
    }

    /// One participant of an in-place collective (`&mut x`): `recv`, a place borrowed
    /// exclusively, is sent and written.
    pub fn collective_part_in_place<'a, R>(
        stmt: &'static Statement,
        recv: Place<'a, R>,
    ) -> Result<CollectivePart<'a>, Error>
    where
        R: DeviceMemoryMut + ?Sized,
        R::Elem: CollectiveElem,
    {
        let recv = recv.device()?;
        Ok(CollectivePart {
            statement: stmt,
            send: recv.memory_ref(),
            recv,
            elem: <R::Elem as CollectiveElem>::TYPE,
        })
    }

    /// `call OP(OPERANDS)`: `op` must be a [`crate::StreamOp`] whose operand tuple is
    /// `operands` (so an operand of another mode or element type than the op declares is a
    /// type error at the operand).
    pub fn call<'a, I, O>(
        issuer: &mut I,
        stmt: &'static Statement,
        op: &O,
        operands: O::Operands<'a>,
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
        O: crate::call::StreamOp + ?Sized,
    {
        issuer.call(stmt, &mut crate::call::Bound::new(op, operands))
    }

    /// `call OP(OPERANDS)` in the body of a device block: as [`call`], for an op whose work
    /// the body can hold ([`crate::BodyOp`]).
    pub fn call_in_body<'a, I, O>(
        issuer: &mut I,
        stmt: &'static Statement,
        op: &O,
        operands: O::Operands<'a>,
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
        O: crate::call::BodyOp + ?Sized,
    {
        call(issuer, stmt, op, operands)
    }

    /// An operand `&x` of a `call`: device memory the op reads.
    pub fn call_in<M: DeviceMemory + ?Sized>(memory: &M) -> crate::call::In<'_, M::Elem> {
        crate::call::In::of(memory)
    }

    /// An operand `&mut x` of a `call`: a place borrowed exclusively, which the op writes.
    pub fn call_out<'a, D>(place: Place<'a, D>) -> Result<crate::call::Out<'a, D::Elem>, Error>
    where
        D: DeviceMemoryMut + ?Sized,
    {
        Ok(crate::call::Out::new(place.device()?))
    }

    /// The element `index` of the event array `array` of `len` events picks (`wait
    /// ready[i % 2]`): `index` itself when it is below `len`, else an error saying so.
    pub fn event_element<T>(index: T, len: usize, array: &'static str) -> Result<usize, Error>
    where
        T: TryInto<usize> + Copy + std::fmt::Display,
    {
        match index.try_into() {
            Ok(k) if k < len => Ok(k),
            _ => Err(Error::InvalidArgument(format!(
                "the index {index} picks no element of event array `{array}`, which has {len} \
                 (`{array}[0]` to `{array}[{}]`); index it with a value below {len}, e.g. `i % \
                 {len}`",
                len.saturating_sub(1)
            ))),
        }
    }

    /// `limit = N` of a `while`: the number of iterations at most.
    pub fn limit(n: u32) -> Option<u32> {
        Some(n)
    }

    /// Opens the scope of a pipeline's temporaries around its statements (see
    /// [`crate::memory::temporaries`]).
    pub use crate::memory::temporaries;
    use crate::program::StatementKind;

    /// `temp NAME: T[LEN];` reaches its `Alloc` statement: `len` elements of `T` on
    /// `stmt.stream`.
    pub fn temp_alloc<'s, I, T>(
        issuer: &mut I,
        scope: Scope<'s>,
        stmt: &'static Statement,
        len: usize,
    ) -> Result<crate::memory::Temp<'s, T>, Error>
    where
        I: Issuer + ?Sized,
        T: crate::memory::Pod,
    {
        let StatementKind::Alloc { temp } = stmt.kind else {
            return Err(Error::InvalidArgument(format!(
                "a temporary is allocated by an `Alloc` statement, not a {:?}",
                stmt.kind
            ))
            .in_statement(stmt));
        };
        let memory = issuer.alloc(stmt, scope, crate::memory::temp_bytes::<T>(stmt, len)?)?;
        crate::memory::Temp::new(stmt, temp, memory, len)
    }

    /// A temporary's `Free` statement: its last use is behind it on every stream.
    pub fn temp_free<I, T>(
        issuer: &mut I,
        stmt: &'static Statement,
        temp: crate::memory::Temp<'_, T>,
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
    {
        issuer.free(stmt, temp.release(stmt)?)
    }

    /// `host F`.
    pub fn host<I, F>(issuer: &mut I, stmt: &'static Statement, f: F) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
        F: Fn() + Send + Sync + 'static,
    {
        issuer.host(stmt, std::sync::Arc::new(f))
    }
}
