//! Shared by `plan_random`, `plan_random_temps` and `capture_random`: what a random program
//! computes when its launches run the `node` kernel of `capture_random`, and which of those
//! values no race can change.
//!
//! Random programs race: two operations on different streams may touch the same words with
//! nothing ordering them. [`Model::new`] decides, word by word, which values every execution
//! the plan allows computes alike ("clean" values), and what they are:
//!
//! - a read of word `w` by operation `x` is clean when every other operation writing `w` is
//!   ordered with `x` (before or after it), the writes ordered before `x` are themselves
//!   totally ordered (their last one, `m`, is what `x` reads), and `m` wrote a clean value (or
//!   no write comes before `x`: the initial value is read);
//! - a launch or fill writes clean values (they depend on nothing racy: a launch's values
//!   depend only on its ancestors' slots, which are ordered before it); a copy writes a clean
//!   value where it read a clean one;
//! - a word's final value is clean when all its writes are totally ordered and the last one
//!   wrote a clean value; a reading launch's observation is clean when all the words it read
//!   were.
//!
//! Temporaries' words come after the buffers' (they are not read back: [`Words::observable`]
//! counts the words that are); their contents are undefined ("poison") from their allocation
//! on and again after their release, and [`simulate`] panics when an operation reads poison
//! (the generator promises that every read of a temporary follows a write of it). Their
//! allocation and release write every word, so a use unordered with either is a race.
//!
//! Clean values are those of issue order (a linearisation of happens-before), which
//! [`simulate`] computes; `plan_random` checks the analysis against random topological orders.
#![allow(dead_code)]

use streamgraph::testing::{Call, Memory, RandomProgram};
use streamgraph::{AccessMode, Plan};

/// The hash the `node` kernel uses.
pub fn mix(h: u32, v: u32) -> u32 {
    let h = h ^ v
        .wrapping_add(0x9e37_79b9)
        .wrapping_add(h << 6)
        .wrapping_add(h >> 2);
    h.wrapping_mul(0x85eb_ca6b)
}

/// The initial value of word `j` of device buffer `b`.
pub fn initial_device(b: usize, j: usize) -> u32 {
    mix(0xd0d0 + b as u32, j as u32)
}

/// The initial value of word `j` of pinned buffer `p`.
pub fn initial_pinned(p: usize, j: usize) -> u32 {
    mix(0x7070 + p as u32, j as u32)
}

/// Memory words: device buffers first, then pinned buffers, then temporaries.
#[derive(Debug, Clone)]
pub struct Words {
    pub buffers: usize,
    pub buffer_len: usize,
    pub pinned: usize,
    pub pinned_len: usize,
    /// Each temporary's length.
    pub temps: Vec<usize>,
}

/// What a temporary's words hold where the model knows nothing (any value the kernel might
/// read there is not compared: reading it is a failure of the generator).
pub const POISON: u32 = 0xdead_beef;

impl Words {
    pub fn of(random: &RandomProgram) -> Words {
        Words {
            buffers: random.buffers(),
            buffer_len: random.buffer_len(),
            pinned: random.pinned(),
            pinned_len: random.pinned_len(),
            temps: random.temps().to_vec(),
        }
    }

    /// The words read back after a run: the device and pinned buffers'.
    pub fn observable(&self) -> usize {
        self.buffers * self.buffer_len + self.pinned * self.pinned_len
    }

    pub fn count(&self) -> usize {
        self.observable() + self.temps.iter().sum::<usize>()
    }

    pub fn device(&self, b: usize, j: usize) -> usize {
        b * self.buffer_len + j
    }

    pub fn pinned(&self, p: usize, j: usize) -> usize {
        self.buffers * self.buffer_len + p * self.pinned_len + j
    }

    pub fn temp(&self, t: usize, j: usize) -> usize {
        self.observable() + self.temps[..t].iter().sum::<usize>() + j
    }

    /// Word `j` of `memory`.
    pub fn word(&self, memory: Memory, j: usize) -> usize {
        match memory {
            Memory::Buffer(b) => self.device(b, j),
            Memory::Pinned(p) => self.pinned(p, j),
            Memory::Temp(t) => self.temp(t, j),
        }
    }

    /// The words of all of `memory`.
    pub fn all(&self, memory: Memory) -> std::ops::Range<usize> {
        let len = match memory {
            Memory::Buffer(_) => self.buffer_len,
            Memory::Pinned(_) => self.pinned_len,
            Memory::Temp(t) => self.temps[t],
        };
        self.word(memory, 0)..self.word(memory, 0) + len
    }

    pub fn initial(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.count());
        for b in 0..self.buffers {
            out.extend((0..self.buffer_len).map(|j| initial_device(b, j)));
        }
        for p in 0..self.pinned {
            out.extend((0..self.pinned_len).map(|j| initial_pinned(p, j)));
        }
        out.resize(self.count(), POISON);
        out
    }
}

/// The words an operation reads and writes: `(written, read from)` pairs for copies,
/// `(written, None)` for launches and fills that write and for the allocation and release
/// of a temporary, and the words a reading launch reads.
pub struct Access {
    pub writes: Vec<(usize, Option<usize>)>,
    pub reads: Vec<usize>,
}

pub fn access(words: &Words, call: &Call) -> Access {
    let mut a = Access {
        writes: Vec::new(),
        reads: Vec::new(),
    };
    match *call {
        Call::Launch { memory, mode, .. } => {
            let all = words.all(memory);
            match mode {
                AccessMode::Write => a.writes.extend(all.map(|w| (w, None))),
                AccessMode::Read => a.reads.extend(all),
            }
        }
        Call::Fill {
            memory, start, end, ..
        } => a
            .writes
            .extend((start..end).map(|j| (words.word(memory, j), None))),
        Call::Copy { dst, src, .. } => {
            for k in 0..dst.len() {
                let d = words.word(dst.memory, dst.start + k);
                let s = words.word(src.memory, src.start + k);
                a.writes.push((d, Some(s)));
                a.reads.push(s);
            }
        }
        Call::Alloc { temp, .. } | Call::Free { temp, .. } => a
            .writes
            .extend(words.all(Memory::Temp(temp)).map(|w| (w, None))),
        _ => {}
    }
    a
}

/// The operations' calls, by operation index.
pub fn ops(random: &RandomProgram) -> Vec<Call> {
    random
        .calls
        .iter()
        .filter(|c| c.value().is_some())
        .cloned()
        .collect()
}

/// For each operation, the launches that happen before it (its slot hash reads their slots),
/// in increasing order.
pub fn launch_ancestors(ops: &[Call], plan: &Plan) -> Vec<Vec<u32>> {
    (0..ops.len())
        .map(|op| {
            (0..op)
                .filter(|&a| matches!(ops[a], Call::Launch { .. }) && plan.happens_before(a, op))
                .map(|a| a as u32)
                .collect()
        })
        .collect()
}

/// What one execution in `order` (a topological order of the plan) leaves: every word, the
/// slots and the observations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub words: Vec<u32>,
    pub slots: Vec<u32>,
    pub obs: Vec<u32>,
}

pub fn simulate(
    words: &Words,
    ops: &[Call],
    ancestors: &[Vec<u32>],
    order: impl IntoIterator<Item = usize>,
) -> Outcome {
    let mut all = words.initial();
    // Which words hold a value the model knows (a temporary's do not until written).
    let mut known: Vec<bool> = (0..words.count()).map(|w| w < words.observable()).collect();
    let mut out = Outcome {
        words: Vec::new(),
        slots: vec![0; ops.len()],
        obs: vec![0; ops.len()],
    };
    let read = |all: &[u32], known: &[bool], op: usize, w: usize| {
        assert!(
            known[w],
            "operation {op} ({}) reads a word of a temporary not written since its allocation \
             (word {w})",
            ops[op].statement().text
        );
        all[w]
    };
    for op in order {
        match ops[op] {
            Call::Launch {
                memory,
                mode,
                value,
                ..
            } => {
                let mut h = mix(0x12345, value);
                for &a in &ancestors[op] {
                    h = mix(h, out.slots[a as usize]);
                }
                let slot = h | 1;
                out.slots[op] = slot;
                match mode {
                    AccessMode::Write => {
                        for (j, w) in words.all(memory).enumerate() {
                            all[w] = mix(slot, j as u32);
                            known[w] = true;
                        }
                    }
                    AccessMode::Read => {
                        let mut o = mix(slot, 0xabcd);
                        for w in words.all(memory) {
                            o = mix(o, read(&all, &known, op, w));
                        }
                        out.obs[op] = o | 1;
                    }
                }
            }
            Call::Fill {
                memory,
                start,
                end,
                value,
                ..
            } => {
                for j in start..end {
                    let w = words.word(memory, j);
                    all[w] = value;
                    known[w] = true;
                }
            }
            Call::Copy { .. } => {
                // Read everything first: the two sides never overlap, but stay exact anyway.
                let a = access(words, &ops[op]);
                let values: Vec<u32> = a.reads.iter().map(|&s| read(&all, &known, op, s)).collect();
                for ((w, _), v) in a.writes.iter().zip(values) {
                    all[*w] = v;
                    known[*w] = true;
                }
            }
            Call::Alloc { temp, .. } | Call::Free { temp, .. } => {
                for w in words.all(Memory::Temp(temp)) {
                    all[w] = POISON;
                    known[w] = false;
                }
            }
            _ => {}
        }
    }
    all.truncate(words.observable());
    out.words = all;
    out
}

/// The values of one random program that no race decides.
#[derive(Debug, Clone)]
pub struct Model {
    pub words: Words,
    /// Every operation's launch ancestors (the `node` kernel's predecessor lists).
    pub ancestors: Vec<Vec<u32>>,
    /// The issue-order outcome.
    pub expected: Outcome,
    /// Which final words are clean.
    pub clean_words: Vec<bool>,
    /// Which observations are clean (every operation but a reading launch observes 0: clean).
    pub clean_obs: Vec<bool>,
}

impl Model {
    pub fn new(random: &RandomProgram, plan: &Plan) -> Model {
        let words = Words::of(random);
        let ops = ops(random);
        assert_eq!(ops.len(), plan.len(), "seed {}", random.seed);
        let ancestors = launch_ancestors(&ops, plan);
        let expected = simulate(&words, &ops, &ancestors, 0..ops.len());
        assert_eq!(expected.words.len(), words.observable());
        let accesses: Vec<Access> = ops.iter().map(|c| access(&words, c)).collect();
        let mut writers: Vec<Vec<usize>> = vec![Vec::new(); words.count()];
        for (op, a) in accesses.iter().enumerate() {
            for &(w, _) in &a.writes {
                writers[w].push(op);
            }
        }
        let hb = |a: usize, b: usize| plan.happens_before(a, b);
        // Whether operation `op` wrote a clean value into each of its written words.
        let mut wrote_clean: Vec<Vec<bool>> = Vec::with_capacity(ops.len());
        // The last write of `w` ordered before `x`, when what `x` reads of `w` is clean;
        // `Some(None)` for the initial value.
        let read_from = |wrote_clean: &[Vec<bool>], x: usize, w: usize| -> bool {
            let others = writers[w].iter().copied().filter(|&y| y != x);
            if others.clone().any(|y| !hb(y, x) && !hb(x, y)) {
                return false;
            }
            let before: Vec<usize> = others.filter(|&y| hb(y, x)).collect();
            let Some(&last) = before.iter().max() else {
                return true;
            };
            before.iter().all(|&y| y == last || hb(y, last)) && {
                let i = accesses[last]
                    .writes
                    .iter()
                    .position(|&(v, _)| v == w)
                    .expect("a writer writes the word");
                wrote_clean[last][i]
            }
        };
        let mut clean_obs = vec![true; ops.len()];
        for (x, a) in accesses.iter().enumerate() {
            let clean: Vec<bool> = a
                .writes
                .iter()
                .map(|&(_, src)| src.is_none_or(|s| read_from(&wrote_clean, x, s)))
                .collect();
            wrote_clean.push(clean);
            if matches!(
                ops[x],
                Call::Launch {
                    mode: AccessMode::Read,
                    ..
                }
            ) {
                clean_obs[x] = a.reads.iter().all(|&w| read_from(&wrote_clean, x, w));
            }
        }
        let clean_words = (0..words.observable())
            .map(|w| {
                let Some(&last) = writers[w].last() else {
                    return true;
                };
                writers[w].iter().all(|&y| y == last || hb(y, last)) && {
                    let i = accesses[last]
                        .writes
                        .iter()
                        .position(|&(v, _)| v == w)
                        .expect("a writer writes the word");
                    wrote_clean[last][i]
                }
            })
            .collect();
        Model {
            words,
            ancestors,
            expected,
            clean_words,
            clean_obs,
        }
    }

    /// The differences between `got` and the model on clean values, described.
    pub fn differences(&self, got: &Outcome) -> Vec<String> {
        let mut out = Vec::new();
        for (op, (&g, &e)) in got.slots.iter().zip(&self.expected.slots).enumerate() {
            if g != e {
                out.push(format!("slot of operation {op}: {g:#x}, expected {e:#x}"));
            }
        }
        for (op, (&g, &e)) in got.obs.iter().zip(&self.expected.obs).enumerate() {
            if self.clean_obs[op] && g != e {
                out.push(format!(
                    "observation of operation {op}: {g:#x}, expected {e:#x}"
                ));
            }
        }
        for (w, (&g, &e)) in got.words.iter().zip(&self.expected.words).enumerate() {
            if self.clean_words[w] && g != e {
                out.push(format!("{}: {g:#x}, expected {e:#x}", self.word_name(w)));
            }
        }
        out
    }

    pub fn word_name(&self, w: usize) -> String {
        let device = self.words.buffers * self.words.buffer_len;
        if w >= self.words.observable() {
            let mut j = w - self.words.observable();
            for (t, &len) in self.words.temps.iter().enumerate() {
                if j < len {
                    return format!("t{t}[{j}]");
                }
                j -= len;
            }
            format!("word {w}")
        } else if w < device {
            format!(
                "b{}[{}]",
                w / self.words.buffer_len,
                w % self.words.buffer_len
            )
        } else {
            let p = w - device;
            format!(
                "h{}[{}]",
                p / self.words.pinned_len,
                p % self.words.pinned_len
            )
        }
    }
}

/// A random topological order of the plan (Kahn's algorithm with a seeded choice).
pub fn random_order(plan: &Plan, seed: u64) -> Vec<usize> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut indegree: Vec<usize> = (0..plan.len())
        .map(|op| plan.predecessors(op).len())
        .collect();
    let mut ready: Vec<usize> = (0..plan.len()).filter(|&op| indegree[op] == 0).collect();
    let mut order = Vec::with_capacity(plan.len());
    while !ready.is_empty() {
        let op = ready.swap_remove(next(ready.len()));
        order.push(op);
        for &s in plan.successors(op) {
            indegree[s] -= 1;
            if indegree[s] == 0 {
                ready.push(s);
            }
        }
    }
    assert_eq!(order.len(), plan.len());
    order
}
