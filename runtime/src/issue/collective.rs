//! Collective statements as issuers receive them: their participants, and the checks every
//! issuer makes of them.

use crate::comm::Communicator;
use crate::error::Error;
use crate::ffi::memory::{MemoryMut, MemoryRef};
use crate::operand::ElementType;
use crate::program::{Collective, Program, Statement, StatementKind};

/// One participant of a collective statement: its statement (and so its stream) and its
/// buffers. An in-place collective has `send` and `recv` naming the same memory.
#[derive(Debug)]
pub struct CollectivePart<'a> {
    /// The participant's statement (a [`crate::StatementKind::Collective`]).
    pub statement: &'static Statement,
    /// The memory the participant contributes (read).
    pub send: MemoryRef<'a>,
    /// The memory the participant's result is written to, made through an exclusive borrow.
    pub recv: MemoryMut<'a>,
    /// The element type of both.
    pub elem: ElementType,
}

/// Checks a collective's participants against its statements and communicator (streams,
/// element types, lengths); returns each participant's stream.
pub(crate) fn check_collective(
    program: &'static Program,
    stmt: &'static Statement,
    comm: &Communicator,
    parts: &[CollectivePart<'_>],
) -> Result<Vec<usize>, Error> {
    let StatementKind::Collective { op, first, count } = stmt.kind else {
        return Err(Error::InvalidArgument(format!(
            "the statement was issued as a collective but is a {:?}",
            stmt.kind
        ))
        .in_statement(stmt));
    };
    if stmt.id != first {
        return Err(Error::InvalidArgument(
            "a collective is issued through its first participant's statement".into(),
        )
        .in_statement(stmt));
    }
    let fail = |message: String| Err(Error::InvalidArgument(message).in_statement(stmt));
    if parts.len() != count {
        return fail(format!(
            "the collective was issued with {} participant(s) but its statement lists {count}",
            parts.len()
        ));
    }
    if comm.local_ranks() != count {
        return fail(format!(
            "the collective lists {count} participant(s) but its communicator drives {} local rank(s); list one stream per local rank, in rank order",
            comm.local_ranks()
        ));
    }
    let mut streams = Vec::with_capacity(count);
    for (k, part) in parts.iter().enumerate() {
        let expected = program.statements.get(first + k);
        if !expected.is_some_and(|e| e.same(part.statement)) {
            return fail(format!(
                "participant {k} was issued with another statement than statement {} of the pipeline",
                first + k
            ));
        }
        if streams.contains(&part.statement.stream) {
            return fail(format!(
                "stream {} takes part twice; each participant needs a stream of its own",
                part.statement.stream
            ));
        }
        if part.send.memory().bytes() % part.elem.size() != 0
            || part.recv.memory().bytes() % part.elem.size() != 0
        {
            return fail(format!(
                "participant {k}'s buffers are not a whole number of {:?} elements",
                part.elem
            ));
        }
        if part.elem != parts[0].elem {
            return fail(format!(
                "participant {k} carries {:?} elements but participant 0 carries {:?}; every rank of a collective carries one element type",
                part.elem, parts[0].elem
            ));
        }
        let (send, recv) = (
            part.send.memory().bytes() / part.elem.size(),
            part.recv.memory().bytes() / part.elem.size(),
        );
        let ranks = comm.ranks();
        let (expected, rule) = match op {
            Collective::AllReduce | Collective::Broadcast { .. } => {
                (send == recv, "send and receive buffers of equal length")
            }
            Collective::AllGather => (
                Some(recv) == send.checked_mul(ranks),
                "a receive buffer of (ranks × send length) elements",
            ),
            Collective::ReduceScatter => (
                Some(send) == recv.checked_mul(ranks),
                "a send buffer of (ranks × receive length) elements",
            ),
        };
        if !expected {
            return fail(format!(
                "participant {k} sends {send} and receives {recv} element(s) over {ranks} rank(s); `{}` needs {rule}",
                op.keyword()
            ));
        }
        if k > 0
            && (send, recv)
                != (
                    parts[0].send.memory().bytes() / parts[0].elem.size(),
                    parts[0].recv.memory().bytes() / parts[0].elem.size(),
                )
        {
            return fail(format!(
                "participant {k}'s buffers differ in length from participant 0's; every rank of a collective sends and receives the same number of elements"
            ));
        }
        streams.push(part.statement.stream);
    }
    Ok(streams)
}
