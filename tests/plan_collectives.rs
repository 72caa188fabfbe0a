//! Collectives in `pipeline!` and in the plan, without a GPU: one operation per
//! participating stream, the happens-before pairs a collective adds, and races around it.
#![allow(clippy::unwrap_used)] // tests may unwrap

use streamgraph::{
    pipeline, Collective, Communicator, DeviceBuffer, Kernel, Plan, Planner, StatementKind,
};

pipeline! {
    /// Two ranks, each producing its part, all-reducing it, then using the sum.
    pipeline TwoRanks(
        x0: &mut DeviceBuffer<f32>,
        x1: &mut DeviceBuffer<f32>,
        comm: &Communicator,
        k: &Kernel,
        n: u32,
    ) {
        stream s0;
        stream s1;

        s0: launch k<<<1, 256>>>(&mut x0, n);
        s1: launch k<<<1, 256>>>(&mut x1, n);
        all_reduce(comm, sum) { s0: &mut x0, s1: &mut x1 };
        s0: launch k<<<1, 256>>>(&mut x0, n);
        s1: launch k<<<1, 256>>>(&mut x1, n);
    }
}

pipeline! {
    /// Every collective, out of place where it must be.
    pipeline Every(
        a0: &mut DeviceBuffer<f32>,
        a1: &mut DeviceBuffer<f32>,
        g0: &mut DeviceBuffer<f32>,
        g1: &mut DeviceBuffer<f32>,
        comm: &Communicator,
    ) {
        stream s0;
        stream s1;

        all_reduce(comm, max) { s0: &mut a0, s1: &mut a1 };
        all_gather(comm) { s0: &a0 => &mut g0, s1: &a1 => &mut g1 };
        reduce_scatter(comm, avg) { s0: &g0 => &mut a0, s1: &g1 => &mut a1 };
        broadcast(comm, root = s1) { s0: &mut a0, s1: &mut a1 };
    }
}

fn buffers(n: usize) -> (DeviceBuffer<f32>, DeviceBuffer<f32>) {
    (
        DeviceBuffer::for_planning(n).unwrap(),
        DeviceBuffer::for_planning(n).unwrap(),
    )
}

#[test]
fn a_collective_is_one_statement_per_participant() {
    let p = TwoRanks::PROGRAM;
    assert_eq!(p.statements.len(), 6);
    for (id, stream) in [(2, 0), (3, 1)] {
        let st = &p.statements[id];
        assert_eq!(st.stream, stream);
        assert_eq!(
            st.kind,
            StatementKind::Collective {
                op: Collective::AllReduce,
                first: 2,
                count: 2
            }
        );
        assert_eq!(
            st.text,
            "all_reduce(comm, sum) { s0: &mut x0, s1: &mut x1 }"
        );
        assert_eq!(st.accesses.len(), 1);
    }
    assert_eq!(p.statements[2].accesses[0].buffer, "x0");
    assert_eq!(p.statements[3].accesses[0].buffer, "x1");
    assert_eq!(p.statements[2].kind.participants(), Some(2..4));
    assert!(p.statements[2].kind.is_operation());
}

#[test]
fn the_plan_orders_later_work_after_every_participants_earlier_work() {
    let (mut x0, mut x1) = buffers(256);
    let comm = Communicator::for_planning(2);
    let k = Kernel::for_planning("k");
    let plan = Plan::build(&TwoRanks::new(&mut x0, &mut x1, &comm, &k, 256)).unwrap();
    assert_eq!(plan.len(), 6);
    // Graph edges: stream order only.
    assert_eq!(
        plan.edges().into_iter().collect::<Vec<_>>(),
        [(0, 2), (1, 3), (2, 4), (3, 5)]
    );
    assert_eq!(
        plan.sync_edges().iter().copied().collect::<Vec<_>>(),
        [(0, 5), (1, 4)]
    );
    assert!(plan.happens_before(1, 4) && plan.happens_before(0, 5));
    assert!(!plan.happens_before(2, 5) && !plan.happens_before(3, 4));
    plan.check_races().unwrap();
    assert_eq!(plan.final_frontier(), [4, 5]);
}

#[test]
fn every_collective_plans() {
    let (mut a0, mut a1) = buffers(256);
    let (mut g0, mut g1) = buffers(512);
    let comm = Communicator::for_planning(2);
    let plan = Plan::build(&Every::new(&mut a0, &mut a1, &mut g0, &mut g1, &comm)).unwrap();
    assert_eq!(plan.len(), 8);
    let kinds: Vec<_> = Every::PROGRAM
        .statements
        .iter()
        .step_by(2)
        .map(|s| match s.kind {
            StatementKind::Collective { op, .. } => op,
            _ => panic!("not a collective: {s}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            Collective::AllReduce,
            Collective::AllGather,
            Collective::ReduceScatter,
            Collective::Broadcast { root: 1 }
        ]
    );
    // The all_gather on s0 reads a0 after the all_reduce on s0 wrote it, and a1 only on s1:
    // every pair is ordered through the streams and the collectives' synchronisation.
    plan.check_races().unwrap();
    // A participant does not wait for the other streams' earlier work itself (op 6, the
    // broadcast on s0, and op 5, the reduce_scatter on s1), only what follows it does; the
    // broadcast on s1 (op 7) follows the all_gather on s0 (op 2) through the reduce_scatter,
    // the reduce_scatter on s1 (op 5) does not.
    assert!(!plan.happens_before(5, 6));
    assert!(plan.happens_before(4, 6));
    assert!(plan.happens_before(2, 7));
    assert!(!plan.happens_before(2, 5));
}

#[test]
fn a_communicator_of_another_size_is_a_typed_error() {
    let (mut x0, mut x1) = buffers(256);
    let comm = Communicator::for_planning(1);
    let k = Kernel::for_planning("k");
    let err = Plan::build(&TwoRanks::new(&mut x0, &mut x1, &comm, &k, 256)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("1 local rank(s)"), "{text}");
    assert!(text.contains("all_reduce(comm, sum)"), "{text}");
}

#[test]
fn issuers_without_collectives_refuse_them_with_a_typed_error() {
    struct Refusing(Planner);
    impl streamgraph::Issuer for Refusing {
        fn launch(
            &mut self,
            stmt: &'static streamgraph::Statement,
            kernel: &Kernel,
            config: streamgraph::LaunchConfig,
            args: &[streamgraph::KernelArg<'_>],
        ) -> streamgraph::Result<()> {
            self.0.launch(stmt, kernel, config, args)
        }
        fn copy(
            &mut self,
            stmt: &'static streamgraph::Statement,
            dst: streamgraph::MemoryMut<'_>,
            src: streamgraph::MemoryRef<'_>,
        ) -> streamgraph::Result<()> {
            self.0.copy(stmt, dst, src)
        }
        fn fill(
            &mut self,
            stmt: &'static streamgraph::Statement,
            dst: streamgraph::MemoryMut<'_>,
            pattern: streamgraph::FillPattern,
        ) -> streamgraph::Result<()> {
            self.0.fill(stmt, dst, pattern)
        }
        fn host(
            &mut self,
            stmt: &'static streamgraph::Statement,
            f: streamgraph::HostFn,
        ) -> streamgraph::Result<()> {
            self.0.host(stmt, f)
        }
        fn record(&mut self, stmt: &'static streamgraph::Statement) -> streamgraph::Result<()> {
            self.0.record(stmt)
        }
        fn wait(&mut self, stmt: &'static streamgraph::Statement) -> streamgraph::Result<()> {
            self.0.wait(stmt)
        }
        fn wait_stream(
            &mut self,
            stmt: &'static streamgraph::Statement,
        ) -> streamgraph::Result<()> {
            self.0.wait_stream(stmt)
        }
    }
    use streamgraph::Pipeline;
    let (mut x0, mut x1) = buffers(256);
    let comm = Communicator::for_planning(2);
    let k = Kernel::for_planning("k");
    let pipeline = TwoRanks::new(&mut x0, &mut x1, &comm, &k, 256);
    let mut issuer = Refusing(Planner::new(TwoRanks::PROGRAM));
    let err = pipeline.issue(&mut issuer).unwrap_err().to_string();
    assert!(err.contains("does not run collectives"), "{err}");
}

#[test]
fn buffer_lengths_are_checked_per_collective() {
    // all_gather receives ranks × send length; reduce_scatter sends ranks × receive length.
    let (mut a0, mut a1) = buffers(256);
    let (mut g0, mut g1) = buffers(500);
    let comm = Communicator::for_planning(2);
    let err = Plan::build(&Every::new(&mut a0, &mut a1, &mut g0, &mut g1, &comm))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("participant 0 sends 256 and receives 500 element(s) over 2 rank(s)"),
        "{err}"
    );
    assert!(err.contains("all_gather(comm)"), "{err}");
    let (mut a0, mut a1) = buffers(256);
    let (mut g0, _) = buffers(512);
    let mut g1 = DeviceBuffer::<f32>::for_planning(256).unwrap();
    let err = Plan::build(&Every::new(&mut a0, &mut a1, &mut g0, &mut g1, &comm))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("participant 1 sends 256 and receives 256"),
        "{err}"
    );
}
