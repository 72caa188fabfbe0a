//! Properties of the model on random programs (proptest).
#![allow(clippy::unwrap_used)] // tests may unwrap

mod plan_support;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use plan_support::{plan_with, Region};
use proptest::prelude::*;
use streamgraph::testing::verify_edges;
use streamgraph::AccessMode::{self, Read, Write};
use streamgraph::{BufferAccess, Program};
use streamgraph::{Plan, ProgramBuilder};

/// One command of a random program; indices are reduced modulo the declared counts.
#[derive(Debug, Clone, Copy)]
enum Cmd {
    Launch {
        stream: usize,
        buffers: [usize; 2],
        writes: [bool; 2],
        two: bool,
    },
    Record {
        stream: usize,
        event: usize,
    },
    Wait {
        stream: usize,
        event: usize,
    },
    WaitStream {
        stream: usize,
        other: usize,
    },
}

#[derive(Debug, Clone)]
struct Random {
    streams: usize,
    events: usize,
    cmds: Vec<Cmd>,
}

fn cmd() -> impl Strategy<Value = Cmd> {
    let idx = 0usize..64;
    prop_oneof![
        3 => (idx.clone(), [0usize..5, 0usize..5], any::<[bool; 2]>(), any::<bool>())
            .prop_map(|(stream, buffers, writes, two)| Cmd::Launch { stream, buffers, writes, two }),
        2 => (idx.clone(), idx.clone()).prop_map(|(stream, event)| Cmd::Record { stream, event }),
        2 => (idx.clone(), idx.clone()).prop_map(|(stream, event)| Cmd::Wait { stream, event }),
        1 => (idx.clone(), idx).prop_map(|(stream, other)| Cmd::WaitStream { stream, other }),
    ]
}

fn random() -> impl Strategy<Value = Random> {
    (2usize..=6, 1usize..=4, prop::collection::vec(cmd(), 0..=64)).prop_map(
        |(streams, events, cmds)| Random {
            streams,
            events,
            cmds,
        },
    )
}

/// Buffer names and the memory behind them: `x`, two overlapping parts of it, `y`, and `z`
/// at `y`'s addresses on another device (so never overlapping it).
const BUFFERS: [&str; 5] = ["x", "x_lo", "x_hi", "y", "z"];

fn regions() -> HashMap<&'static str, Region> {
    HashMap::from([
        ("x", Region::new(0x1000, 0x200)),
        ("x_lo", Region::new(0x1000, 0x100)),
        ("x_hi", Region::new(0x10c0, 0x140)),
        ("y", Region::new(0x4000, 0x100)),
        (
            "z",
            Region {
                device: 3,
                ptr: 0x4000,
                bytes: 0x100,
            },
        ),
    ])
}

/// Builds the program; with `expand_wait_stream`, each `wait_stream(s, t)` is written as
/// `record(tmp, t); wait(s, tmp)` on an extra event.
fn build(r: &Random, expand_wait_stream: bool) -> (&'static Program, Vec<usize>) {
    let mut b = ProgramBuilder::new("Random");
    for s in 0..r.streams {
        b.stream(&format!("s{s}"));
    }
    for e in 0..r.events {
        b.event(&format!("e{e}"));
    }
    let tmp = b.event("tmp");
    let mode = |w: bool| if w { Write } else { Read };
    for &c in &r.cmds {
        match c {
            Cmd::Launch {
                stream,
                buffers,
                writes,
                two,
            } => {
                let mut args: Vec<(&str, AccessMode)> =
                    vec![(BUFFERS[buffers[0]], mode(writes[0]))];
                if two {
                    args.push((BUFFERS[buffers[1]], mode(writes[1])));
                }
                b.launch(stream % r.streams, "k", &args);
            }
            Cmd::Record { stream, event } => {
                b.record(stream % r.streams, event % r.events);
            }
            Cmd::Wait { stream, event } => {
                b.wait(stream % r.streams, event % r.events);
            }
            Cmd::WaitStream { stream, other } if expand_wait_stream => {
                b.record(other % r.streams, tmp);
                b.wait(stream % r.streams, tmp);
            }
            Cmd::WaitStream { stream, other } => {
                b.wait_stream(stream % r.streams, other % r.streams);
            }
        }
    }
    let script = (0..b.len()).collect();
    (b.build(), script)
}

fn plan_of(r: &Random, expand: bool) -> Plan {
    let (program, script) = build(r, expand);
    plan_with(program, &script, &regions())
}

/// The §2 rules written again as plainly as possible, independently of the planner.
fn reference_edges(r: &Random) -> BTreeSet<(usize, usize)> {
    let mut frontier: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); r.streams];
    let mut snapshot: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); r.events];
    let mut edges = BTreeSet::new();
    let mut n = 0;
    for &c in &r.cmds {
        match c {
            Cmd::Launch { stream, .. } => {
                let s = stream % r.streams;
                edges.extend(frontier[s].iter().map(|&p| (p, n)));
                frontier[s] = BTreeSet::from([n]);
                n += 1;
            }
            Cmd::Record { stream, event } => {
                snapshot[event % r.events] = frontier[stream % r.streams].clone()
            }
            Cmd::Wait { stream, event } => {
                let add = snapshot[event % r.events].clone();
                frontier[stream % r.streams].extend(add);
            }
            Cmd::WaitStream { stream, other } => {
                let add = frontier[other % r.streams].clone();
                frontier[stream % r.streams].extend(add);
            }
        }
    }
    edges
}

/// Reachability by depth-first search from every node.
fn dfs_reach(n: usize, edges: &BTreeSet<(usize, usize)>) -> Vec<Vec<bool>> {
    let mut succ = vec![Vec::new(); n];
    for &(a, b) in edges {
        succ[a].push(b);
    }
    (0..n)
        .map(|a| {
            let mut seen = vec![false; n];
            let mut stack = succ[a].clone();
            while let Some(b) = stack.pop() {
                if !seen[b] {
                    seen[b] = true;
                    stack.extend(&succ[b]);
                }
            }
            seen
        })
        .collect()
}

/// Every conflicting unordered pair of operations, by comparing all pairs.
fn brute_force_races(p: &Plan) -> BTreeSet<(usize, usize)> {
    let reach = dfs_reach(p.len(), &p.edges());
    let ops = p.ops();
    let mut out = BTreeSet::new();
    for i in 0..ops.len() {
        for j in i + 1..ops.len() {
            if ops[i].stream == ops[j].stream || reach[i][j] || reach[j][i] {
                continue;
            }
            let conflict = ops[i].accesses.iter().any(|a| {
                ops[j]
                    .accesses
                    .iter()
                    .any(|b| a.range.overlaps(&b.range) && (a.mode == Write || b.mode == Write))
            });
            if conflict {
                out.insert((i, j));
            }
        }
    }
    out
}

/// For every racing pair of operations, the pair of accesses a race names: of the pairs that
/// conflict, the first in address order `(device, ptr, op, argument)` by its later access,
/// then by its earlier one (the order an address sweep meets them).
fn named_accesses(p: &Plan) -> BTreeMap<(usize, usize), (BufferAccess, BufferAccess)> {
    let reach = dfs_reach(p.len(), &p.edges());
    let ops = p.ops();
    let key = |op: usize, k: usize| {
        let r = ops[op].accesses[k].range;
        (r.device, r.ptr, op, k)
    };
    let mut out = BTreeMap::new();
    for i in 0..ops.len() {
        for j in i + 1..ops.len() {
            if ops[i].stream == ops[j].stream || reach[i][j] || reach[j][i] {
                continue;
            }
            let mut best = None;
            for (x, a) in ops[i].accesses.iter().enumerate() {
                for (y, b) in ops[j].accesses.iter().enumerate() {
                    if !a.range.overlaps(&b.range) || (a.mode == Read && b.mode == Read) {
                        continue;
                    }
                    let (kx, ky) = (key(i, x), key(j, y));
                    let place = (kx.max(ky), kx.min(ky));
                    if best.is_none_or(|(p, _)| place < p) {
                        best = Some((place, (*a, *b)));
                    }
                }
            }
            if let Some((_, pair)) = best {
                out.insert((i, j), pair);
            }
        }
    }
    out
}

/// A few edges to add to or take from a plan's: from any operation to any other, backward
/// and self edges included.
fn edits() -> impl Strategy<Value = Vec<(bool, usize, usize)>> {
    prop::collection::vec((any::<bool>(), 0usize..64, 0usize..64), 1..4)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_planner_follows_the_rules(r in random()) {
        let p = plan_of(&r, false);
        prop_assert_eq!(p.edges(), reference_edges(&r));
    }

    #[test]
    fn the_model_is_acyclic(r in random()) {
        let p = plan_of(&r, false);
        prop_assert!(p.edges().iter().all(|&(a, b)| a < b));
        let order = p.topological_order();
        prop_assert_eq!(order.len(), p.len());
        let mut pos = vec![usize::MAX; p.len()];
        for (i, &op) in order.iter().enumerate() {
            pos[op] = i;
        }
        for (a, b) in p.edges() {
            prop_assert!(pos[a] < pos[b]);
        }
        for a in 0..p.len() {
            prop_assert!(!p.happens_before(a, a));
        }
    }

    #[test]
    fn every_operation_is_joined(r in random()) {
        let p = plan_of(&r, false);
        let f = p.final_frontier();
        for op in 0..p.len() {
            prop_assert!(f.iter().any(|&j| j == op || p.happens_before(op, j)), "op {} not joined", op);
        }
        // The join is the union of the streams' frontiers: every stream's last op is in it.
        for s in 0..r.streams {
            if let Some(last) = (0..p.len()).rev().find(|&op| p.stream_of(op) == Some(s)) {
                prop_assert!(f.contains(&last));
            }
        }
    }

    #[test]
    fn wait_stream_is_record_then_wait(r in random()) {
        let direct = plan_of(&r, false);
        let expanded = plan_of(&r, true);
        prop_assert_eq!(direct.len(), expanded.len());
        prop_assert_eq!(direct.edges(), expanded.edges());
        prop_assert_eq!(direct.final_frontier(), expanded.final_frontier());
    }

    #[test]
    fn transitive_reduction_keeps_reachability(r in random()) {
        let p = plan_of(&r, false);
        let reduced = p.transitive_reduction();
        prop_assert!(reduced.is_subset(&p.edges()));
        prop_assert!(p.same_happens_before(&reduced, p.len()));
        // The reduced edges reach exactly what the plan's relation says (searched directly;
        // the runtime's `reachability` is internal now).
        prop_assert_eq!(p.reach().len(), p.len());
        for (a, row) in dfs_reach(p.len(), &reduced).iter().enumerate() {
            for (b, &reached) in row.iter().enumerate() {
                prop_assert_eq!(p.reach().reaches(a, b), reached);
            }
        }
        // Minimal: dropping any kept edge changes the relation.
        for &e in reduced.iter().take(8) {
            let mut fewer = reduced.clone();
            fewer.remove(&e);
            prop_assert!(!p.same_happens_before(&fewer, p.len()));
        }
    }

    #[test]
    fn reachability_matches_depth_first_search(r in random()) {
        let p = plan_of(&r, false);
        let reach = dfs_reach(p.len(), &p.edges());
        for (a, row) in reach.iter().enumerate() {
            for (b, &reached) in row.iter().enumerate() {
                prop_assert_eq!(p.happens_before(a, b), reached);
            }
        }
    }

    #[test]
    fn races_match_a_brute_force_check(r in random()) {
        let p = plan_of(&r, false);
        let found: BTreeSet<(usize, usize)> = p.races().iter().map(|x| (x.first.op, x.second.op)).collect();
        prop_assert_eq!(found.len(), p.races().len());
        prop_assert_eq!(found, brute_force_races(&p));
        for race in p.races() {
            prop_assert!(race.first.access.range.overlaps(&race.second.access.range));
            prop_assert!(race.first.access.mode == Write || race.second.access.mode == Write);
            prop_assert!(race.overlap().bytes > 0);
        }
    }

    #[test]
    fn races_name_the_first_conflicting_accesses_in_address_order(r in random()) {
        let p = plan_of(&r, false);
        let named: BTreeMap<(usize, usize), (BufferAccess, BufferAccess)> = p
            .races()
            .iter()
            .map(|x| ((x.first.op, x.second.op), (x.first.access, x.second.access)))
            .collect();
        prop_assert_eq!(named, named_accesses(&p));
    }

    #[test]
    fn other_edge_sets_are_compared_exactly(r in random(), edits in edits()) {
        let p = plan_of(&r, false);
        prop_assume!(!p.is_empty());
        let n = p.len();
        let mut edges = p.edges();
        for (add, a, b) in edits {
            let (a, b) = (a % n, b % n);
            if add {
                edges.insert((a, b));
            } else if let Some(&e) = p.edges().iter().nth((a * 64 + b) % p.edges().len().max(1)) {
                edges.remove(&e);
            }
        }
        let same = dfs_reach(n, &edges) == dfs_reach(n, &p.edges());
        prop_assert_eq!(p.same_happens_before(&edges, n), same);
        match verify_edges(&p, &edges) {
            Ok(_) => prop_assert_eq!(&edges, &p.edges()),
            Err(e) => {
                let text = e.to_string();
                prop_assert_eq!(!text.contains("ordered differently"), same, "{}", text);
            }
        }
    }
}
