//! The `call`s of a capture whose nodes are found when it has ended (`graph/call.rs`): where
//! each one's stream started and ended.

use crate::ffi::graph::NodeHandle;
use crate::ffi::CodeOwner;

/// The `call`s captured into the graph itself whose nodes are found when the capture has
/// ended, and what capturing them needs.
#[derive(Debug)]
pub(super) struct PendingCalls {
    /// Each call, in issue order.
    pub(super) pending: Vec<PendingCall>,
    /// The nodes the stream of each call that started from several depended on before its
    /// op, end to end ([`CallStart::Many`]).
    pub(super) starts: Vec<NodeHandle>,
    /// Whether every call left its stream on a node its op made.
    pub(super) single: bool,
    /// Room for the modules of the kernels a call's op launches, from call to call.
    pub(super) modules: Vec<CodeOwner>,
}

impl Default for PendingCalls {
    fn default() -> PendingCalls {
        PendingCalls {
            pending: Vec::new(),
            starts: Vec::new(),
            single: true,
            modules: Vec::new(),
        }
    }
}

impl PendingCalls {
    /// Empties it for the next capture, keeping its room.
    pub(super) fn clear(&mut self) {
        self.pending.clear();
        self.starts.clear();
        self.single = true;
    }
}

/// A `call` captured into the graph itself, whose nodes are found when the capture has ended
/// (`graph/call.rs`).
#[derive(Debug, Clone, Copy)]
pub(super) struct PendingCall {
    /// Its operation's index.
    pub(super) index: u32,
    /// The node its stream depended on after the op: its exit (`None`: on none).
    pub(super) exit: Option<NodeHandle>,
    /// The nodes its stream depended on before the op.
    pub(super) start: CallStart,
}

/// The nodes a `call`'s stream depended on before its op: where its work starts.
#[derive(Debug, Clone, Copy)]
pub(super) enum CallStart {
    /// None (nothing was issued on the stream in this capture yet).
    None,
    /// One node, as mostly.
    One(NodeHandle),
    /// Several: [`PendingCalls::starts`]`[.0...1]`.
    Many(u32, u32),
}

impl PendingCall {
    /// The nodes its stream depended on before the op; `all` is
    /// [`PendingCalls::starts`].
    #[inline]
    pub(super) fn starts<'a>(&'a self, all: &'a [NodeHandle]) -> &'a [NodeHandle] {
        match &self.start {
            CallStart::None => &[],
            CallStart::One(node) => std::slice::from_ref(node),
            CallStart::Many(from, to) => &all[*from as usize..*to as usize],
        }
    }
}
