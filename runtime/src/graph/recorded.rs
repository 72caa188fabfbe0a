//! What a capture recorded ([`Recorded`]): the operations in issue order, the launches'
//! shapes, the values the graph's nodes were made of, the memory they touch, the ordering
//! statements between them, and the nodes known as they were made (block bodies, collective
//! participants). The node book builds it while a capture issues (`graph/book.rs`); the
//! graph owns it whole.

use std::cell::OnceCell;

use crate::exec::record::Issued;
use crate::ffi::conditional::BodyGraph;
use crate::ffi::graph::NodeHandle;
use crate::ffi::memory::HolderKind;
use crate::ffi::KernelArg;
use crate::operand::{DeviceRange, FillPattern, Memory};
use crate::program::Statement;

/// What a capture recorded, as its graph keeps it: made by the node book while the pipeline
/// is issued ([`crate::exec::record::Recorder`]) and handed to the graph whole when the
/// capture has ended (`NodeBook::finish`), never taken apart.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    /// The operations, in issue order.
    pub(crate) ops: Vec<CapturedOp>,
    /// `(operation index, node)` of the operations whose nodes were known as they were made
    /// (a block's, a body's, a collective participant's), in operation order.
    pub(crate) known: Vec<(u32, NodeHandle)>,
    /// The device memory the operations touch, unsorted, each range once in a row (sorted and
    /// merged when the graph first needs them).
    pub(crate) touched: Vec<DeviceRange>,
    /// The values of every operation (see [`encode`]), one after the other.
    pub(crate) values: Vec<u8>,
    /// The ordering statements (record, wait, wait_stream) issued: `(position, id)`, where
    /// `position` is the number of operations booked before it. With `ops` it gives every
    /// statement issued, in order: two issues with equal `ops` statements and `orderings` build
    /// graphs of one topology (what an argument update checks).
    pub(crate) orderings: Vec<(u32, u32)>,
    /// Whether a temporary's allocation made a memory node (it was not placed in memory of
    /// the graph's own or its graph set's).
    pub(crate) memory_nodes: bool,
    /// The body graphs of device blocks and the runtime's own nodes; `None` without them.
    pub(crate) blocks: Option<Box<Blocks>>,
    /// The node of every operation (`None` for those that made none): made by the capture in
    /// cross-check mode, else read back from the driver when first needed ([`node_map`]).
    pub(crate) nodes: OnceCell<Vec<Option<NodeHandle>>>,
}

/// How a capture's operations spread over the graph and its device blocks' body graphs.
#[derive(Debug, Default)]
pub(crate) struct Blocks {
    /// The body graphs of device blocks, in the order captured.
    pub(crate) bodies: Vec<CapturedBody>,
    /// The built-in kernels before conditional nodes, and second `IF` nodes (and the other
    /// nodes of a collective's participants).
    pub(crate) internal: Vec<InternalNode>,
}

impl Recorded {
    /// The body graphs of device blocks.
    #[inline]
    pub(crate) fn bodies(&self) -> &[CapturedBody] {
        self.blocks.as_deref().map_or(&[], |b| &b.bodies)
    }

    /// The runtime's own nodes.
    #[inline]
    pub(crate) fn internal(&self) -> &[InternalNode] {
        self.blocks.as_deref().map_or(&[], |b| &b.internal)
    }

    /// The blocks, made when the first body or internal node is recorded.
    pub(crate) fn blocks_mut(&mut self) -> &mut Blocks {
        self.blocks.get_or_insert_with(Box::default)
    }
}

/// One captured operation: the statement issue it came from, what it made, where its values
/// are kept and, for a launch, its shape. Written once per operation on a capture's hot path,
/// in one push (a launch's shape inside it rather than in a list of its own); its node is
/// kept apart ([`Recorded::known`], or mapped by creation order when the capture has ended).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CapturedOp {
    /// The statement.
    pub(crate) statement: &'static Statement,
    /// Which issue of the statement, from 1.
    pub(crate) occurrence: u32,
    /// How many nodes of its graph the operation created: 1 (0 for an empty copy or fill); a
    /// device block its built-in kernel and its conditional node(s).
    pub(crate) created: u32,
    /// Where the operation's values (see [`encode`]) lie in [`Recorded::values`];
    /// [`OPAQUE`] as length when they cannot be compared.
    pub(crate) values: (u32, u32),
    /// The graph it is a node of: 0 for the captured graph, `k + 1` for
    /// [`Recorded::bodies`]`[k]`. Nodes of bodies, and of blocks, are known as they are made
    /// ([`Recorded::known`]); only the captured graph's other nodes are mapped in
    /// creation order.
    pub(crate) part: u32,
    /// For launches: its shape (the kernel, its configuration and number of arguments, from
    /// which `GraphExec::set_kernel_args` rebuilds the node's parameters without asking the
    /// driver); `None` for other operations.
    pub(crate) shape: Option<LaunchShape>,
}

impl CapturedOp {
    /// The graph part it is a node of (see [`CapturedOp::part`]).
    pub(crate) fn part(&self) -> usize {
        self.part as usize
    }

    /// The stream index it was issued on (its statement's).
    pub(crate) fn stream(&self) -> usize {
        self.statement.stream
    }

    /// Whether the operation made a graph node (not an empty copy or fill).
    pub(crate) fn makes_node(&self) -> bool {
        self.created > 0
    }

    /// Whether its nodes were known as they were made (a device block's, a collective
    /// participant's, a `call`'s), so that the creation-order map skips the `created` nodes
    /// it made.
    pub(crate) fn node_known(&self) -> bool {
        matches!(
            self.statement.kind,
            crate::program::StatementKind::Collective { .. }
                | crate::program::StatementKind::Call { .. }
        ) || self.statement.kind.is_block()
    }
}

/// A body graph of a captured device block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CapturedBody {
    /// The body graph.
    pub(crate) graph: BodyGraph,
    /// The block's index in [`Recorded::ops`].
    pub(crate) block: usize,
    /// 0 for a `while` body or `then`, 1 for `else`.
    pub(crate) branch: usize,
    /// The built-in kernel at the end of a `while` body, which follows all of the body's
    /// work, or the empty built-in kernel of a body that captured nothing.
    pub(crate) sink: Option<NodeHandle>,
    /// The empty built-in kernel before `sink` in a `while` body that captured nothing.
    pub(crate) filler: Option<NodeHandle>,
}

/// A node the runtime added that is no statement's and is part of a block's operation: the
/// built-in kernel before its conditional node, or the second `IF` node of an `if`/`else`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InternalNode {
    pub(crate) part: usize,
    pub(crate) node: NodeHandle,
    /// The operation (a block) it belongs to.
    pub(crate) op: usize,
}

/// The length of [`CapturedOp::values`] for values that cannot be compared.
pub(crate) const OPAQUE: u32 = u32::MAX;

/// Appends what a launch's node is made of — its argument values, one after the other — to
/// `out`, in a form that two issues of one statement compare by bytes. `false` when a value
/// cannot be compared (an argument whose type is not primitive), with what was appended of it
/// left for the caller to cut.
#[inline]
pub(crate) fn encode_launch(args: &[KernelArg<'_>], out: &mut Vec<u8>) -> bool {
    args.iter().all(|a| a.encode_value(out))
}

/// What [`encode_launch_over`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rewritten {
    /// The values were written over the old ones, which they fit exactly.
    Fits,
    /// They do not fit there, or a value cannot be compared: `out` is in an unspecified
    /// state, and some arguments may not have been shown to `moved`.
    DoesNotFit,
    /// `moved` refused an argument.
    Refused,
}

/// Writes what [`encode_launch`] appends for `args` over `out`, the values they replace,
/// which must be exactly as long; on the way, shows `moved` each buffer argument whose
/// address is not the one it replaces (when `moved` is `false` the write stops).
#[inline]
pub(crate) fn encode_launch_over(
    args: &[KernelArg<'_>],
    out: &mut [u8],
    mut moved: impl FnMut(&KernelArg<'_>) -> bool,
) -> Rewritten {
    let mut at = 0;
    for a in args {
        let Some(rest) = out.get_mut(at..) else {
            return Rewritten::DoesNotFit;
        };
        // Asked before the address is written: a refused buffer's address never enters the
        // state (a later walk would take it for one the node ran, and not ask again).
        if a.moves_over(rest) && !moved(a) {
            return Rewritten::Refused;
        }
        match a.encode_over(rest) {
            Some(n) => at += n,
            None => return Rewritten::DoesNotFit,
        }
    }
    if at == out.len() {
        Rewritten::Fits
    } else {
        Rewritten::DoesNotFit
    }
}

/// Whether `recorded` is what [`encode_launch`] appends for `args`, compared in place: if so,
/// whether `held` accepts the holder of every argument that addresses memory, else `None`.
/// One pass over the arguments, what an argument update asks of every unchanged launch.
#[inline(always)]
pub(crate) fn same_launch_values(
    args: &[KernelArg<'_>],
    recorded: &[u8],
    held: impl Fn(HolderKind<'_>) -> bool,
) -> Option<bool> {
    let mut rest = recorded;
    let mut all_held = true;
    for a in args {
        rest = rest.get(a.matches_encoded(rest)?..)?;
        if a.addresses_memory() {
            all_held &= held(a.holder());
        }
    }
    rest.is_empty().then_some(all_held)
}

/// Appends what a copy's or a fill's node is made of — its operands — to `out`, in a form
/// that two issues of one statement compare by bytes (see [`encode_launch`]). Host functions
/// are not compared (a graph keeps the ones it captured).
#[inline]
pub(crate) fn encode(issued: &Issued<'_>, out: &mut Vec<u8>) -> bool {
    match issued {
        Issued::Copy(dst, src) => {
            memory_signature(dst.memory(), out);
            memory_signature(src.memory(), out);
        }
        Issued::Fill(dst, pattern) => {
            memory_signature(dst.memory(), out);
            match *pattern {
                FillPattern::U8(v) => out.extend_from_slice(&[1, v]),
                FillPattern::U16(v) => {
                    out.push(2);
                    out.extend_from_slice(&v.to_le_bytes());
                }
                FillPattern::U32(v) => {
                    out.push(4);
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        Issued::Host => {}
        // A temporary's node is made of its memory: the same address and size on every issue
        // (a graph's memory nodes keep the addresses they were captured with).
        Issued::Alloc(range, _) | Issued::Free(range, _) => {
            memory_signature(Memory::Device(*range), out)
        }
    }
    true
}

/// A `call`'s signature for argument updates: the identity of what the op keeps (held by the
/// graph, so never another op's while the graph lives), the op's parameter bytes and its
/// operands' memory and modes; `false` when the op's work may depend on more
/// ([`crate::StreamOp::fixed_work`]).
pub(crate) fn encode_call(
    call: &dyn crate::call::BoundCall,
    owner: Option<&std::sync::Arc<dyn std::any::Any + Send + Sync>>,
    out: &mut Vec<u8>,
) -> bool {
    let Some(owner) = owner else {
        return false;
    };
    let identity = std::sync::Arc::as_ptr(owner) as *const () as usize as u64;
    out.extend_from_slice(&identity.to_le_bytes());
    for access in call.accesses() {
        // One write per operand: kind, mode, device, address, size.
        let (kind, device, ptr, bytes) = match access.memory.memory() {
            Memory::Device(r) => (0u8, r.device, r.ptr, r.bytes),
            Memory::PinnedHost { ptr, bytes } => (1, DeviceRange::HOST, ptr as u64, bytes),
            Memory::PageableHost { ptr, bytes } => (2, DeviceRange::HOST, ptr as u64, bytes),
        };
        let mut sig = [0u8; 22];
        sig[0] = kind;
        sig[1] = u8::from(access.mode == crate::program::AccessMode::Write);
        sig[2..6].copy_from_slice(&device.to_le_bytes());
        sig[6..14].copy_from_slice(&ptr.to_le_bytes());
        sig[14..22].copy_from_slice(&(bytes as u64).to_le_bytes());
        out.extend_from_slice(&sig);
    }
    call.fixed_work(out)
}

/// A device block's signature for argument updates: its flag's memory and its iteration limit,
/// what its built-in kernels read besides the graph's own iteration counter (its bodies are
/// compared statement by statement).
pub(crate) fn encode_block(
    flag: &crate::memory::DeviceFlag,
    limit: Option<u32>,
    out: &mut Vec<u8>,
) {
    memory_signature(flag.whole().memory(), out);
    out.push(u8::from(limit.is_some()));
    out.extend_from_slice(&limit.unwrap_or(0).to_le_bytes());
}

/// The memory of a temporary's node as `recorded::encode` wrote it (kind, device, address,
/// size).
pub(crate) fn decode_range(values: &[u8]) -> Option<crate::operand::DeviceRange> {
    let (&kind, rest) = values.split_first()?;
    if kind != 0 || rest.len() != 20 {
        return None;
    }
    Some(crate::operand::DeviceRange {
        device: i32::from_le_bytes(rest[0..4].try_into().ok()?),
        ptr: u64::from_le_bytes(rest[4..12].try_into().ok()?),
        bytes: usize::try_from(u64::from_le_bytes(rest[12..20].try_into().ok()?)).ok()?,
    })
}

fn memory_signature(m: Memory, out: &mut Vec<u8>) {
    let (kind, device, ptr, bytes) = match m {
        Memory::Device(r) => (0u8, r.device, r.ptr, r.bytes),
        Memory::PinnedHost { ptr, bytes } => (1, DeviceRange::HOST, ptr as u64, bytes),
        Memory::PageableHost { ptr, bytes } => (2, DeviceRange::HOST, ptr as u64, bytes),
    };
    out.push(kind);
    out.extend_from_slice(&device.to_le_bytes());
    out.extend_from_slice(&ptr.to_le_bytes());
    out.extend_from_slice(&(bytes as u64).to_le_bytes());
}

/// The node of every operation in `ops`: those in `known` (`(operation index, node)` in
/// operation order: nodes known as they were made) have theirs; the captured graph's other
/// operations that made a node get `listed` (its nodes as `cuGraphGetNodes` lists them, in
/// creation order) in turn, past the nodes that known operations created.
pub(crate) fn node_map(
    ops: &[CapturedOp],
    known: &[(u32, NodeHandle)],
    listed: &[NodeHandle],
) -> Vec<Option<NodeHandle>> {
    let mut known = known.iter().peekable();
    let mut next = listed.iter().copied();
    ops.iter()
        .enumerate()
        .map(|(i, op)| {
            let own = known
                .next_if(|&&(at, _)| at as usize == i)
                .map(|&(_, node)| node);
            if op.part != 0 {
                // A body graph's node.
                own
            } else if op.node_known() {
                // Its nodes are skipped in the creation order.
                for _ in 0..op.created {
                    next.next();
                }
                own
            } else if op.makes_node() {
                next.next()
            } else {
                None
            }
        })
        .collect()
}

/// The captured shape of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaunchShape {
    pub(crate) func: crate::ffi::FunctionHandle,
    pub(crate) config: crate::operand::LaunchConfig,
    /// How many arguments it takes (`u32`, so that the shape packs into 40 bytes).
    pub(crate) args: u32,
}

impl LaunchShape {
    /// How many arguments it takes.
    pub(crate) fn arity(&self) -> usize {
        self.args as usize
    }
}

/// Notes that an operation touches `range` (nothing for an empty range, once for a range the
/// previous operation touched too).
#[inline]
pub(super) fn remember(memory: &mut Vec<DeviceRange>, range: DeviceRange) {
    if range.bytes > 0 && memory.last() != Some(&range) {
        memory.push(range);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ffi::memory::Holder;

    /// An argument update compares a launch's values in place (`same_launch_values`): equal
    /// exactly when the encoding would be.
    #[test]
    fn values_compared_in_place_agree_with_their_encoding() {
        let (a, b, c, d) = (7u32, 2.5f64, 9u16, [1u8, 2, 3]);
        let args = [
            KernelArg::by_ref(&a, None, Holder::FOREIGN),
            KernelArg::by_ref(&b, None, Holder::FOREIGN),
            KernelArg::by_ref(&c, None, Holder::FOREIGN),
        ];
        let mut out = Vec::new();
        assert!(encode_launch(&args, &mut out));
        assert_eq!(same_launch_values(&args, &out, |_| true), Some(true));
        // Any byte off, a byte short or a byte more: not the same.
        for i in 0..out.len() {
            let mut off = out.clone();
            off[i] ^= 1;
            assert!(
                same_launch_values(&args, &off, |_| true).is_none(),
                "byte {i}"
            );
        }
        assert!(same_launch_values(&args, &out[..out.len() - 1], |_| true).is_none());
        let mut longer = out.clone();
        longer.push(0);
        assert!(same_launch_values(&args, &longer, |_| true).is_none());
        // A value that cannot be compared (not a primitive) never matches.
        let odd = [KernelArg::by_ref(&d, None, Holder::FOREIGN)];
        assert!(same_launch_values(&odd, &[3, 1, 2, 3], |_| true).is_none());
        assert_eq!(same_launch_values(&[], &[], |_| false), Some(true));
    }

    /// A changed launch's values written over the old ones show the walk exactly the buffers
    /// at another address than the ones they replace: the memory at an old address is held.
    #[test]
    fn values_written_over_show_the_buffers_that_moved() {
        use crate::operand::{BufferAccess, DeviceRange};
        use crate::program::AccessMode;
        let buffer = |ptr: u64| {
            let range = DeviceRange {
                device: 0,
                ptr,
                bytes: 16,
            };
            let access = BufferAccess {
                range,
                mode: AccessMode::Write,
            };
            KernelArg::buffer(access, Holder::FOREIGN)
        };
        let (v, w) = (5u32, 6u32);
        let old = [
            buffer(0x1000),
            KernelArg::by_ref(&v, None, Holder::FOREIGN),
            buffer(0x2000),
        ];
        let mut own = Vec::new();
        assert!(encode_launch(&old, &mut own));
        let new = [
            buffer(0x1000),
            KernelArg::by_ref(&w, None, Holder::FOREIGN),
            buffer(0x3000),
        ];
        let mut shown = Vec::new();
        let mut out = own.clone();
        let done = encode_launch_over(&new, &mut out, |a| {
            shown.push(a.access().map(|x| x.range.ptr));
            true
        });
        assert_eq!(done, Rewritten::Fits);
        assert_eq!(shown, [Some(0x3000)], "only the buffer that moved");
        let mut expected = Vec::new();
        assert!(encode_launch(&new, &mut expected));
        assert_eq!(out, expected);
        // Refused: the write stops there, before the refused buffer's address, which a
        // later rewrite of the same arguments shows to `moved` again.
        let mut out = own.clone();
        assert_eq!(
            encode_launch_over(&new, &mut out, |_| false),
            Rewritten::Refused
        );
        assert_eq!(out[out.len() - 9..], own[own.len() - 9..]);
        let mut shown = 0;
        let again = encode_launch_over(&new, &mut out, |_| {
            shown += 1;
            false
        });
        assert_eq!((again, shown), (Rewritten::Refused, 1));
        // Over bytes that are no buffer's (stale values of another kind): every buffer moved.
        let mut out = vec![0u8; own.len()];
        let mut moved = 0;
        let done = encode_launch_over(&new, &mut out, |_| {
            moved += 1;
            true
        });
        assert_eq!((done, moved), (Rewritten::Fits, 2));
        // Another length: does not fit.
        let mut short = own[..own.len() - 1].to_vec();
        assert_eq!(
            encode_launch_over(&new, &mut short, |_| true),
            Rewritten::DoesNotFit
        );
    }

    #[test]
    fn values_encode_arguments_and_operands() {
        let encoded = |a: u32, b: f32| {
            let args = [
                KernelArg::by_ref(&a, None, Holder::FOREIGN),
                KernelArg::by_ref(&b, None, Holder::FOREIGN),
            ];
            let mut out = Vec::new();
            assert!(encode_launch(&args, &mut out));
            out
        };
        assert_eq!(encoded(1, 2.0), encoded(1, 2.0));
        assert_ne!(encoded(1, 2.0), encoded(2, 2.0));
        assert_ne!(encoded(1, 2.0), encoded(1, 2.5));
        assert_eq!(encoded(7, 0.0).len(), 2 + 4 + 4);

        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Pair {
            a: u8,
            b: u32,
        }
        let p = Pair { a: 1, b: 2 };
        let args = [KernelArg::by_ref(&p, None, Holder::FOREIGN)];
        assert!(!encode_launch(&args, &mut Vec::new()));
        assert_eq!((p.a, p.b), (1, 2));
    }
}
