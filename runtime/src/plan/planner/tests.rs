//! Unit tests of the planner: copies' accesses and sizes, collectives' operations, edges and
//! checks.
#![allow(clippy::unwrap_used)] // tests may unwrap

use super::Planner;
use crate::comm::Communicator;
use crate::error::Error;
use crate::ffi::memory::{MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::issue::{CollectivePart, Issuer};
use crate::memory::CopySource;
use crate::module::Kernel;
use crate::operand::{BufferAccess, DeviceRange, LaunchConfig, Memory, ReduceOp};
use crate::plan::{Plan, ProgramBuilder};
use crate::program::{AccessMode, Collective, Program, Statement};

fn device(ptr: u64, bytes: usize) -> MemoryRef<'static> {
    MemoryRef::promised_device(
        DeviceRange {
            device: 0,
            ptr,
            bytes,
        },
        4,
        crate::ffi::memory::Holder::FOREIGN,
    )
}

#[test]
fn copies_write_the_destination_and_read_the_source() {
    let mut b = ProgramBuilder::new("Copies");
    let (s0, s1) = (b.stream("s0"), b.stream("s1"));
    b.copy(s0, "d", "h");
    b.copy(s1, "h", "d2");
    let program = b.build();
    let host = crate::memory::PinnedBuffer::<u32>::for_planning(24).unwrap();
    let base = host.copy_source().memory().bytes();
    assert_eq!(base, 96);
    let mut planner = Planner::new(program);
    planner
        .copy(
            &program.statements[0],
            MemoryMut::exclusive(device(0x1000, 64)),
            host.part(0, 16).unwrap(),
        )
        .unwrap();
    planner
        .copy(
            &program.statements[1],
            MemoryMut::exclusive(host.part(8, 16).unwrap()),
            device(0x2000, 64),
        )
        .unwrap();
    let plan = planner.finish();
    let op = &plan.ops()[0];
    assert_eq!(op.accesses[0].mode, AccessMode::Write);
    assert_eq!(
        op.accesses[0].range,
        DeviceRange {
            device: 0,
            ptr: 0x1000,
            bytes: 64
        }
    );
    assert_eq!(op.accesses[1].mode, AccessMode::Read);
    assert_eq!(op.accesses[1].range.device, DeviceRange::HOST);
    // The second copy writes host bytes the first reads, unordered: a race on host memory.
    let races = plan.races();
    assert_eq!(races.len(), 1);
    let Memory::PageableHost { ptr, .. } = host.part(8, 8).unwrap().memory() else {
        panic!("a plan-only pinned buffer is pageable memory")
    };
    assert_eq!(
        races[0].overlap(),
        DeviceRange {
            device: DeviceRange::HOST,
            ptr: ptr as u64,
            bytes: 32
        }
    );
    assert!(Error::Race(races.clone())
        .to_string()
        .contains("of host memory"));
}

#[test]
fn copies_of_different_sizes_are_an_error() {
    let mut b = ProgramBuilder::new("Sizes");
    let s0 = b.stream("s0");
    b.copy(s0, "d", "s");
    let program = b.build();
    let mut planner = Planner::new(program);
    let err = planner
        .copy(
            &program.statements[0],
            MemoryMut::exclusive(device(0, 64)),
            device(0x100, 32),
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`copy d <- s`") && msg.contains("destination 64 bytes, source 32 bytes"),
        "{msg}"
    );
}

const ONE: LaunchConfig = LaunchConfig {
    grid: crate::operand::Dim3 { x: 1, y: 1, z: 1 },
    block: crate::operand::Dim3 { x: 1, y: 1, z: 1 },
    shared_mem_bytes: 0,
};

fn part(stmt: &'static Statement, ptr: u64) -> CollectivePart<'static> {
    CollectivePart {
        statement: stmt,
        send: device(ptr, 64),
        recv: MemoryMut::exclusive(device(ptr, 64)),
        elem: crate::operand::ElementType::F32,
    }
}

/// `s0: launch(x0); s1: launch(x1); all_reduce { s0: x0, s1: x1 }; s0: launch(x0);
/// s1: launch(x1)`, planned with `op` as the collective.
fn two_stream_collective(op: Collective) -> (Plan, &'static Program) {
    let mut b = ProgramBuilder::new("Collective");
    let (s0, s1) = (b.stream("s0"), b.stream("s1"));
    b.launch(s0, "k", &[("x0", AccessMode::Write)]);
    b.launch(s1, "k", &[("x1", AccessMode::Write)]);
    let first = b.collective(op, &[(s0, "x0"), (s1, "x1")]);
    b.launch(s0, "k", &[("x0", AccessMode::Write)]);
    b.launch(s1, "k", &[("x1", AccessMode::Write)]);
    let program = b.build();
    let st = &program.statements;
    let k = Kernel::for_planning("k");
    let arg = |ptr| {
        [KernelArg::buffer(
            BufferAccess {
                range: DeviceRange {
                    device: 0,
                    ptr,
                    bytes: 64,
                },
                mode: AccessMode::Write,
            },
            crate::ffi::memory::Holder::FOREIGN,
        )]
    };
    let mut planner = Planner::new(program);
    let config = ONE;
    planner.launch(&st[0], &k, config, &arg(0x1000)).unwrap();
    planner.launch(&st[1], &k, config, &arg(0x2000)).unwrap();
    planner
        .collective(
            &st[first],
            &Communicator::for_planning(2),
            ReduceOp::Sum,
            &[part(&st[first], 0x1000), part(&st[first + 1], 0x2000)],
        )
        .unwrap();
    planner.launch(&st[4], &k, config, &arg(0x1000)).unwrap();
    planner.launch(&st[5], &k, config, &arg(0x2000)).unwrap();
    (planner.finish(), program)
}

#[test]
fn a_collective_is_one_operation_per_stream_joined_like_a_barrier() {
    let (plan, _) = two_stream_collective(Collective::AllReduce);
    // ops: 0 = k on s0, 1 = k on s1, 2 = all_reduce on s0, 3 = all_reduce on s1,
    // 4 = k on s0, 5 = k on s1.
    assert_eq!(plan.len(), 6);
    assert_eq!(plan.stream_of(2), Some(0));
    assert_eq!(plan.stream_of(3), Some(1));
    // The graph's edges are stream order only: NCCL synchronises inside its kernels.
    let edges: Vec<_> = plan.edges().into_iter().collect();
    assert_eq!(edges, [(0, 2), (1, 3), (2, 4), (3, 5)]);
    // Every participant's earlier work happens before each participant completes.
    let sync: Vec<_> = plan.sync_edges().iter().copied().collect();
    assert_eq!(sync, [(0, 5), (1, 4)]);
    assert!(plan.happens_before(1, 4));
    assert!(plan.happens_before(0, 5));
    // A participant starts without waiting for the other streams' work …
    assert!(!plan.happens_before(1, 2));
    assert!(!plan.happens_before(0, 3));
    // … and does not wait for another participant to finish.
    assert!(!plan.happens_before(3, 4));
    assert!(!plan.happens_before(2, 5));
    // Verification of a capture compares the edges' relation only.
    assert!(!plan.graph_reach().reaches(1, 4));
    assert!(plan.same_happens_before(&plan.edges(), 6));
    assert_eq!(plan.final_frontier(), [4, 5]);
    // Each participant touches its own buffer: no race.
    assert!(plan.races().is_empty(), "{:?}", plan.races());
    assert!(plan.to_dot().contains("collective"));
}

#[test]
fn a_broadcast_orders_only_after_the_root() {
    let (plan, _) = two_stream_collective(Collective::Broadcast { root: 0 });
    let sync: Vec<_> = plan.sync_edges().iter().copied().collect();
    assert_eq!(sync, [(0, 5)]);
    assert!(plan.happens_before(0, 5));
    assert!(!plan.happens_before(1, 4));
}

#[test]
fn collectives_check_their_participants() {
    let mut b = ProgramBuilder::new("Parts");
    let (s0, s1) = (b.stream("s0"), b.stream("s1"));
    let first = b.collective(Collective::AllReduce, &[(s0, "x0"), (s1, "x1")]);
    let twice = b.collective(Collective::AllReduce, &[(s0, "x0"), (s0, "x1")]);
    let program = b.build();
    let st = &program.statements;
    let two = Communicator::for_planning(2);
    let mut planner = Planner::new(program);
    let wrong_comm = planner
        .collective(
            &st[first],
            &Communicator::for_planning(3),
            ReduceOp::Sum,
            &[part(&st[first], 0x1000), part(&st[first + 1], 0x2000)],
        )
        .unwrap_err()
        .to_string();
    assert!(wrong_comm.contains("3 local rank(s)"), "{wrong_comm}");
    let missing = planner
        .collective(&st[first], &two, ReduceOp::Sum, &[part(&st[first], 0x1000)])
        .unwrap_err()
        .to_string();
    assert!(missing.contains("1 participant(s)"), "{missing}");
    let swapped = planner
        .collective(
            &st[first],
            &two,
            ReduceOp::Sum,
            &[part(&st[first + 1], 0x1000), part(&st[first], 0x2000)],
        )
        .unwrap_err()
        .to_string();
    assert!(swapped.contains("participant 0"), "{swapped}");
    let not_first = planner
        .collective(
            &st[first + 1],
            &two,
            ReduceOp::Sum,
            &[part(&st[first], 0x1000), part(&st[first + 1], 0x2000)],
        )
        .unwrap_err()
        .to_string();
    assert!(not_first.contains("collective"), "{not_first}");
    let same_stream = planner
        .collective(
            &st[twice],
            &two,
            ReduceOp::Sum,
            &[part(&st[twice], 0x1000), part(&st[twice + 1], 0x2000)],
        )
        .unwrap_err()
        .to_string();
    assert!(same_stream.contains("takes part twice"), "{same_stream}");
    assert!(planner.ops().is_empty());
    let launch = planner
        .launch(&st[first], &Kernel::for_planning("k"), ONE, &[])
        .unwrap_err()
        .to_string();
    assert!(launch.contains("issued as a `launch`"), "{launch}");
}
