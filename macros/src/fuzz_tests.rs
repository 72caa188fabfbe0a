//! Fuzzing of the macro's front end, run as a library: [`crate::expand::pipeline`] (parse →
//! model → validate → expand) on mutated `pipeline!` inputs from the workspace and on generated
//! programs. Every input must come back as tokens (errors as `compile_error!`s) without a
//! panic and within [`TIME_LIMIT`]; every [`PARSE_EVERY`]th output must also parse as Rust
//! items.
//!
//! Seeds are the bodies of the `pipeline!` invocations in `tests/ui`, `examples`, `tests` and
//! `benches/harness`, embedded at compile time. Input `i` depends only on `i`, so a failure
//! report's index reproduces it.
//!
//! `STREAMGRAPH_FUZZ=N` sets the number of inputs (default [`DEFAULT_INPUTS`]) and
//! `STREAMGRAPH_FUZZ_FIRST=I` the first one (default 0), e.g.
//! `STREAMGRAPH_FUZZ=1000000 cargo test -p streamgraph-macros --release fuzz -- --nocapture`,
//! or `STREAMGRAPH_FUZZ_FIRST=I STREAMGRAPH_FUZZ=1` to run input `I` alone.
//!
//! Inputs run on one thread per core. An input over the time limit is timed again at the end,
//! alone, and judged by the best of three runs, so that a busy machine does not fail the test.

use std::fmt;
use std::io::Write;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use proc_macro2::{Delimiter, Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};

/// `(path, text)` of a workspace file, the path relative to the workspace root.
macro_rules! source {
    ($path:literal) => {
        ($path, include_str!(concat!("../../", $path)))
    };
}

/// Every Rust file of [`SOURCE_DIRS`]; `every_source_file_is_embedded` keeps the list complete.
const SOURCES: &[(&str, &str)] = &[
    source!("benches/harness/collective.rs"),
    source!("benches/harness/decode.rs"),
    source!("benches/harness/decode_shapes.rs"),
    source!("benches/harness/diamond.rs"),
    source!("benches/harness/few_graphs.rs"),
    source!("benches/harness/gpu.rs"),
    source!("benches/harness/kernels.rs"),
    source!("benches/harness/launch_probe.rs"),
    source!("benches/harness/many_shapes.rs"),
    source!("benches/harness/mlp.rs"),
    source!("benches/harness/one_graph.rs"),
    source!("benches/harness/overlap.rs"),
    source!("benches/harness/raw.rs"),
    source!("benches/harness/report.rs"),
    source!("benches/harness/runner.rs"),
    source!("benches/harness/stats.rs"),
    source!("benches/harness/streamgraph.rs"),
    source!("benches/harness/workloads.rs"),
    source!("examples/converge.rs"),
    source!("examples/eager_vs_captured.rs"),
    source!("examples/many_shapes.rs"),
    source!("examples/mlp.rs"),
    source!("examples/overlap.rs"),
    source!("examples/pipeline_basics.rs"),
    source!("examples/replay_loop.rs"),
    source!("examples/streams.rs"),
    source!("examples/with_cudarc.rs"),
    source!("tests/blas_calls.rs"),
    source!("tests/capture_cpu.rs"),
    source!("tests/call_statements.rs"),
    source!("tests/capture_faults.rs"),
    source!("tests/capture_random.rs"),
    source!("tests/capture_random_blocks.rs"),
    source!("tests/capture_random_switches.rs"),
    source!("tests/capture_update.rs"),
    source!("tests/collectives_gpu.rs"),
    source!("tests/device_blocks.rs"),
    source!("tests/device_blocks_stress.rs"),
    source!("tests/event_arrays.rs"),
    source!("tests/capture_update_args.rs"),
    source!("tests/faults.rs"),
    source!("tests/floors.rs"),
    source!("tests/graph_sets.rs"),
    source!("tests/interop.rs"),
    source!("tests/macro_program.rs"),
    source!("tests/multi_device.rs"),
    source!("tests/observe.rs"),
    source!("tests/pinned_views.rs"),
    source!("tests/pipelines.rs"),
    source!("tests/plan_collectives.rs"),
    source!("tests/plan_dot.rs"),
    source!("tests/plan_model.rs"),
    source!("tests/plan_props.rs"),
    source!("tests/plan_races.rs"),
    source!("tests/plan_random.rs"),
    source!("tests/plan_random_temps.rs"),
    source!("tests/random_calls.rs"),
    source!("tests/runtime_cpu.rs"),
    source!("tests/runtime_eager.rs"),
    source!("tests/runtime_event.rs"),
    source!("tests/runtime_memory.rs"),
    source!("tests/runtime_no_driver.rs"),
    source!("tests/runtime_stream.rs"),
    source!("tests/soundness.rs"),
    source!("tests/soundness_edges.rs"),
    source!("tests/signalled_loops.rs"),
    source!("tests/switch_blocks.rs"),
    source!("tests/temporaries.rs"),
    source!("tests/temporaries_macro.rs"),
    source!("tests/temporaries_placement.rs"),
    source!("tests/ui.rs"),
    source!("tests/ui_pass.rs"),
    source!("tests/ui/block_else_if.rs"),
    source!("tests/ui/block_flag_not_device_flag.rs"),
    source!("tests/ui/block_flag_not_parameter.rs"),
    source!("tests/ui/block_host_fn.rs"),
    source!("tests/ui/call_bound_call_sealed.rs"),
    source!("tests/ui/call_not_an_op.rs"),
    source!("tests/ui/indexed_maybe_race_denied.rs"),
    source!("tests/ui/indexed_race.rs"),
    source!("tests/ui/kernel_value_of_ones_own.rs"),
    source!("tests/ui/launch_config_type.rs"),
    source!("tests/ui/pass_copy_into_slice_mut.rs"),
    source!("tests/ui/pass_indexed_maybe_race.rs"),
    source!("tests/ui/call_op_not_for_bodies.rs"),
    source!("tests/ui/call_operand_not_memory.rs"),
    source!("tests/ui/call_operand_not_parameter.rs"),
    source!("tests/ui/call_race.rs"),
    source!("tests/ui/call_read_where_op_writes.rs"),
    source!("tests/ui/pass_call.rs"),
    source!("tests/ui/collective_buffer_not_mut.rs"),
    source!("tests/ui/collective_in_device_block.rs"),
    source!("tests/ui/collective_options.rs"),
    source!("tests/ui/collective_race.rs"),
    source!("tests/ui/collective_stream_twice.rs"),
    source!("tests/ui/collective_unknown_comm.rs"),
    source!("tests/ui/collective_wrong_types.rs"),
    source!("tests/ui/copy_into_shared_device_view.rs"),
    source!("tests/ui/block_race_in_body.rs"),
    source!("tests/ui/block_race_with_outside.rs"),
    source!("tests/ui/block_record_inside_wait_outside.rs"),
    source!("tests/ui/block_wait_outside_record.rs"),
    source!("tests/ui/pass_copy_source_moves.rs"),
    source!("tests/ui/pass_device_blocks.rs"),
    source!("tests/ui/pass_switch_blocks.rs"),
    source!("tests/ui/pass_signalled_loops.rs"),
    source!("tests/ui/signalled_flag_written_in_nested_block.rs"),
    source!("tests/ui/signalled_flag_written_without_kernel.rs"),
    source!("tests/ui/signalled_limit.rs"),
    source!("tests/ui/signalled_nested_on_same_flag.rs"),
    source!("tests/ui/while_options.rs"),
    source!("tests/ui/switch_arm_bodies.rs"),
    source!("tests/ui/switch_arm_patterns.rs"),
    source!("tests/ui/switch_default_not_last.rs"),
    source!("tests/ui/switch_default_twice.rs"),
    source!("tests/ui/switch_duplicate_arm.rs"),
    source!("tests/ui/switch_empty.rs"),
    source!("tests/ui/switch_index_not_device_flag.rs"),
    source!("tests/ui/switch_index_not_parameter.rs"),
    source!("tests/ui/pass_event_arrays.rs"),
    source!("tests/ui/event_array_misuse.rs"),
    source!("tests/ui/event_array_race.rs"),
    source!("tests/ui/bool_buffer.rs"),
    source!("tests/ui/buffer_by_value.rs"),
    source!("tests/ui/buffer_expression.rs"),
    source!("tests/ui/buffer_not_parameter.rs"),
    source!("tests/ui/copy_into_shared_pinned.rs"),
    source!("tests/ui/copy_into_shared_pinned_view.rs"),
    source!("tests/ui/copy_not_memory_target.rs"),
    source!("tests/ui/copy_pageable.rs"),
    source!("tests/ui/copy_wrong_memory.rs"),
    source!("tests/ui/duplicate_event.rs"),
    source!("tests/ui/duplicate_parameter.rs"),
    source!("tests/ui/duplicate_stream.rs"),
    source!("tests/ui/fill_not_device_memory.rs"),
    source!("tests/ui/fill_value_mismatch.rs"),
    source!("tests/ui/fill_wrong_type.rs"),
    source!("tests/ui/graph_exec_borrow.rs"),
    source!("tests/ui/graph_exec_not_sync.rs"),
    source!("tests/ui/graph_set_not_sync.rs"),
    source!("tests/ui/host_vec_parameter.rs"),
    source!("tests/ui/kernel_not_a_kernel.rs"),
    source!("tests/ui/launch_missing_block.rs"),
    source!("tests/ui/launch_missing_close.rs"),
    source!("tests/ui/launch_too_many_items.rs"),
    source!("tests/ui/many_parse_errors.rs"),
    source!("tests/ui/memory_ref_fields.rs"),
    source!("tests/ui/memory_ref_from_raw.rs"),
    source!("tests/ui/method_call_record_event.rs"),
    source!("tests/ui/method_call_wait_event.rs"),
    source!("tests/ui/method_call_wait_stream.rs"),
    source!("tests/ui/missing_colon.rs"),
    source!("tests/ui/missing_stream_prefix.rs"),
    source!("tests/ui/name_error_no_race.rs"),
    source!("tests/ui/nested_pipeline.rs"),
    source!("tests/ui/nested_pipeline_macro.rs"),
    source!("tests/ui/nesting_too_deep.rs"),
    source!("tests/ui/no_stream.rs"),
    source!("tests/ui/not_device_memory.rs"),
    source!("tests/ui/pass_aliased_buffers.rs"),
    source!("tests/ui/pass_all_forms.rs"),
    source!("tests/ui/pass_race_check_incomplete.rs"),
    source!("tests/ui/pass_temporaries.rs"),
    source!("tests/ui/pass_uncertain_races.rs"),
    source!("tests/ui/pass_write_parts.rs"),
    source!("tests/ui/race_aliased_buffer.rs"),
    source!("tests/ui/race_check_incomplete_denied.rs"),
    source!("tests/ui/race_in_every_branch.rs"),
    source!("tests/ui/race_loop_carried.rs"),
    source!("tests/ui/race_many_capped.rs"),
    source!("tests/ui/race_write_read.rs"),
    source!("tests/ui/temp_escapes.rs"),
    source!("tests/ui/temp_in_block.rs"),
    source!("tests/ui/temp_maybe_read_before_write_denied.rs"),
    source!("tests/ui/temp_missing_len.rs"),
    source!("tests/ui/temp_name_clash.rs"),
    source!("tests/ui/temp_never_used.rs"),
    source!("tests/ui/temp_read_before_write.rs"),
    source!("tests/ui/temp_unordered_use.rs"),
    source!("tests/ui/temp_wrong_length_type.rs"),
    source!("tests/ui/unknown_event.rs"),
    source!("tests/ui/unknown_operation.rs"),
    source!("tests/ui/unknown_parameter_typo.rs"),
    source!("tests/ui/unknown_stream.rs"),
    source!("tests/ui/unknown_wait_stream.rs"),
    source!("tests/ui/unsafe_memory_impl.rs"),
    source!("tests/ui/value_parameter_not_copy.rs"),
    source!("tests/ui/vec_value_parameter.rs"),
    source!("tests/ui/view_by_value.rs"),
    source!("tests/ui/view_not_copy.rs"),
    source!("tests/ui/view_outlives_mut.rs"),
    source!("tests/ui/wait_stream_self.rs"),
    source!("tests/ui/wait_unrecorded.rs"),
    source!("tests/ui/write_form_unsupported.rs"),
    source!("tests/ui/write_shared_alias.rs"),
    source!("tests/ui/write_shared_kernel_arg.rs"),
    source!("tests/ui/write_shared_under_mut.rs"),
    source!("tests/ui/write_through_shared.rs"),
    source!("tests/write_borrows.rs"),
];

/// The directories whose `*.rs` files are searched for seeds.
const SOURCE_DIRS: &[&str] = &["tests/ui", "examples", "tests", "benches/harness"];

/// Inputs run when `STREAMGRAPH_FUZZ` is not set.
const DEFAULT_INPUTS: usize = 10_000;

/// The most one input may take, in debug builds too (the largest generated inputs are
/// checked against it).
const TIME_LIMIT: Duration = Duration::from_secs(10);

/// After this long on one input the fuzzer gives up waiting: it names the input and aborts.
const HANG_LIMIT: Duration = Duration::from_secs(60);

/// Inputs per worker thread. `proc_macro2` outside a procedural macro keeps the text of every
/// token stream parsed on a thread until the thread ends (for span locations); fresh threads
/// keep that memory, and the 32-bit span offsets, bounded on long runs.
const CHUNK: usize = 256;

/// Every how many inputs the output is also parsed as Rust items (generated code and
/// `compile_error!`s alike).
const PARSE_EVERY: usize = 16;

/// Every how many inputs one is generated at the largest size.
const LARGEST_EVERY: usize = 5000;

/// Identifiers replacement may use besides those of the input.
const KEYWORDS: &[&str] = &[
    "stream",
    "event",
    "temp",
    "launch",
    "copy",
    "fill",
    "host",
    "record",
    "wait",
    "wait_stream",
    "for",
    "if",
    "else",
    "pipeline",
];

/// Punctuation (and `mut`) replacement uses.
const PUNCTS: &[&str] = &[";", ":", ",", "<", ">", "&", "mut", "<-", "="];

// ---------------------------------------------------------------------------------------------
// Seeds

/// The bodies of the `pipeline! { ... }` invocations (also `( ... )` and `[ ... ]`) in the Rust
/// source `src`, found by bracket matching outside comments and string and character literals.
fn invocations(src: &str) -> Vec<&str> {
    const NAME: &str = "pipeline!";
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if let Some(next) = skip_non_code(src, i) {
            i = next;
            continue;
        }
        if src[i..].starts_with(NAME) && (i == 0 || !is_ident_byte(b[i - 1])) {
            let mut open = i + NAME.len();
            while open < b.len() && b[open].is_ascii_whitespace() {
                open += 1;
            }
            if open < b.len()
                && matches!(b[open], b'{' | b'(' | b'[')
                && let Some(close) = matching_close(src, open)
            {
                out.push(&src[open + 1..close]);
                i = close + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Where the comment, string or character literal starting at `i` ends (the index after it),
/// or `None` when none starts there. A lifetime's `'` is skipped alone.
fn skip_non_code(src: &str, i: usize) -> Option<usize> {
    let b = src.as_bytes();
    let at = |j: usize| b.get(j).copied();
    match b[i] {
        b'/' if at(i + 1) == Some(b'/') => Some(src[i..].find('\n').map_or(b.len(), |n| i + n + 1)),
        b'/' if at(i + 1) == Some(b'*') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        return Some(j);
                    }
                } else {
                    j += 1;
                }
            }
            Some(b.len())
        }
        b'"' => {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            Some((j + 1).min(b.len()))
        }
        b'r' if (i == 0
            || !is_ident_byte(b[i - 1])
            || (b[i - 1] == b'b' && (i < 2 || !is_ident_byte(b[i - 2])))) =>
        {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if at(i + 1 + hashes) != Some(b'"') {
                return None;
            }
            let close = format!("\"{}", "#".repeat(hashes));
            let body = i + 2 + hashes;
            Some(
                src[body..]
                    .find(&close)
                    .map_or(b.len(), |n| body + n + close.len()),
            )
        }
        b'\'' => {
            if at(i + 1) == Some(b'\\') {
                let end = src.get(i + 3..).and_then(|rest| rest.find('\''));
                return Some(end.map_or(b.len(), |n| i + 3 + n + 1));
            }
            let c = src[i + 1..].chars().next()?;
            if at(i + 1 + c.len_utf8()) == Some(b'\'') {
                Some(i + 2 + c.len_utf8())
            } else {
                Some(i + 1)
            }
        }
        _ => None,
    }
}

/// The index of the bracket closing the one at `open`.
fn matching_close(src: &str, open: usize) -> Option<usize> {
    let b = src.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        if let Some(next) = skip_non_code(src, i) {
            i = next;
            continue;
        }
        match b[i] {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Every seed: its file and its text.
fn seed_texts() -> Vec<(&'static str, &'static str)> {
    SOURCES
        .iter()
        .flat_map(|&(file, text)| invocations(text).into_iter().map(move |s| (file, s)))
        .collect()
}

/// The seeds as tokens (on the current thread), and their files.
fn parse_seeds(texts: &[(&'static str, &str)]) -> (Vec<Vec<TokenTree>>, Vec<&'static str>) {
    let seeds = texts
        .iter()
        .map(|(file, text)| {
            TokenStream::from_str(text)
                .unwrap_or_else(|e| panic!("a seed of {file} does not tokenize: {e}"))
                .into_iter()
                .collect()
        })
        .collect();
    (seeds, texts.iter().map(|(file, _)| *file).collect())
}

// ---------------------------------------------------------------------------------------------
// Randomness

/// xorshift64, seeded per input.
struct Rng(u64);

impl Rng {
    /// The generator for input `index` (splitmix64 of the index, so that neighbours differ).
    fn for_input(index: u64) -> Rng {
        let mut z = index.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

// ---------------------------------------------------------------------------------------------
// Mutations

#[derive(Debug, Clone, Copy)]
enum Mutation {
    Delete,
    Duplicate,
    Swap,
    ReplaceIdent,
    ReplacePunct,
    Truncate,
    Splice,
    Flatten,
    Nest,
}

const MUTATIONS: &[Mutation] = &[
    Mutation::Delete,
    Mutation::Duplicate,
    Mutation::Swap,
    Mutation::ReplaceIdent,
    Mutation::ReplacePunct,
    Mutation::Truncate,
    Mutation::Splice,
    Mutation::Flatten,
    Mutation::Nest,
];

/// Every identifier in `tokens`, groups included.
fn identifiers(tokens: &[TokenTree], out: &mut Vec<Ident>) {
    for t in tokens {
        match t {
            TokenTree::Ident(i) => out.push(i.clone()),
            TokenTree::Group(g) => identifiers(&g.stream().into_iter().collect::<Vec<_>>(), out),
            _ => {}
        }
    }
}

fn positions(v: &[TokenTree], f: impl Fn(&TokenTree) -> bool) -> Vec<usize> {
    (0..v.len()).filter(|&i| f(&v[i])).collect()
}

/// A random position among those `f` accepts, or any position when none does.
fn position(v: &[TokenTree], rng: &mut Rng, f: impl Fn(&TokenTree) -> bool) -> Option<usize> {
    let p = positions(v, f);
    if !p.is_empty() {
        Some(rng.pick(&p))
    } else if v.is_empty() {
        None
    } else {
        Some(rng.below(v.len()))
    }
}

fn group(
    delimiter: Delimiter,
    tokens: impl IntoIterator<Item = TokenTree>,
    span: Span,
) -> TokenTree {
    let mut g = Group::new(delimiter, tokens.into_iter().collect());
    g.set_span(span);
    TokenTree::Group(g)
}

/// Applies `f` to the token list of `v` or, two times in three, of one of its groups (chosen
/// the same way, recursively).
fn at_level(
    mut v: Vec<TokenTree>,
    rng: &mut Rng,
    f: &mut dyn FnMut(&mut Vec<TokenTree>, &mut Rng),
) -> Vec<TokenTree> {
    let groups = positions(&v, |t| matches!(t, TokenTree::Group(_)));
    if !groups.is_empty() && rng.below(3) != 0 {
        let i = rng.pick(&groups);
        if let TokenTree::Group(g) = &v[i] {
            let inner = at_level(g.stream().into_iter().collect(), rng, f);
            v[i] = group(g.delimiter(), inner, g.span());
        }
    } else {
        f(&mut v, rng);
    }
    v
}

fn punct_tokens(p: &str, span: Span) -> Vec<TokenTree> {
    if p == "mut" {
        return vec![TokenTree::Ident(Ident::new("mut", span))];
    }
    let n = p.chars().count();
    p.chars()
        .enumerate()
        .map(|(i, c)| {
            let spacing = if i + 1 < n {
                Spacing::Joint
            } else {
                Spacing::Alone
            };
            let mut punct = Punct::new(c, spacing);
            punct.set_span(span);
            TokenTree::Punct(punct)
        })
        .collect()
}

/// The index of the last brace-delimited group of `v`: a pipeline's body.
fn body_index(v: &[TokenTree]) -> Option<usize> {
    v.iter()
        .rposition(|t| matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace))
}

fn mutate(
    v: Vec<TokenTree>,
    m: Mutation,
    rng: &mut Rng,
    seeds: &[Vec<TokenTree>],
    pool: &[Ident],
) -> Vec<TokenTree> {
    match m {
        Mutation::Splice => {
            let other = &seeds[rng.below(seeds.len())];
            if let (Some(a), Some(b), false) = (body_index(&v), body_index(other), rng.one_in(3)) {
                // Statements of one body, then statements of the other.
                let (TokenTree::Group(ga), TokenTree::Group(gb)) = (&v[a], &other[b]) else {
                    unreachable!("body_index finds groups")
                };
                let mine: Vec<TokenTree> = ga.stream().into_iter().collect();
                let theirs: Vec<TokenTree> = gb.stream().into_iter().collect();
                let cut_a = rng.below(mine.len() + 1);
                let cut_b = rng.below(theirs.len() + 1);
                let body = mine[..cut_a].iter().chain(&theirs[cut_b..]).cloned();
                let body = group(Delimiter::Brace, body, ga.span());
                let mut v = v;
                v[a] = body;
                v
            } else {
                let cut_a = rng.below(v.len() + 1);
                let cut_b = rng.below(other.len() + 1);
                v[..cut_a].iter().chain(&other[cut_b..]).cloned().collect()
            }
        }
        _ => at_level(v, rng, &mut |v, rng| mutate_level(v, m, rng, pool)),
    }
}

/// One mutation of the token list `v` itself.
fn mutate_level(v: &mut Vec<TokenTree>, m: Mutation, rng: &mut Rng, pool: &[Ident]) {
    let is_group = |t: &TokenTree| matches!(t, TokenTree::Group(_));
    match m {
        Mutation::Delete if !v.is_empty() => {
            v.remove(rng.below(v.len()));
        }
        Mutation::Duplicate if !v.is_empty() => {
            let i = rng.below(v.len());
            v.insert(i, v[i].clone());
        }
        Mutation::Swap if v.len() >= 2 => {
            let (i, j) = (rng.below(v.len()), rng.below(v.len()));
            v.swap(i, j);
        }
        Mutation::ReplaceIdent => {
            let Some(i) = position(v, rng, |t| matches!(t, TokenTree::Ident(_))) else {
                return;
            };
            let span = v[i].span();
            let mut ident = if !pool.is_empty() && rng.one_in(2) {
                pool[rng.below(pool.len())].clone()
            } else {
                Ident::new(rng.pick(KEYWORDS), span)
            };
            ident.set_span(span);
            v[i] = TokenTree::Ident(ident);
        }
        Mutation::ReplacePunct => {
            let Some(i) = position(v, rng, |t| matches!(t, TokenTree::Punct(_))) else {
                return;
            };
            let tokens = punct_tokens(rng.pick(PUNCTS), v[i].span());
            v.splice(i..=i, tokens);
        }
        Mutation::Truncate => v.truncate(rng.below(v.len() + 1)),
        Mutation::Flatten => {
            let p = positions(v, is_group);
            if let Some(i) = (!p.is_empty()).then(|| rng.pick(&p))
                && let TokenTree::Group(g) = v[i].clone()
            {
                v.splice(i..=i, g.stream());
            }
        }
        Mutation::Nest => {
            let p = positions(v, is_group);
            if let Some(i) = (!p.is_empty()).then(|| rng.pick(&p)) {
                // The group holds a copy of itself among its own tokens.
                if let TokenTree::Group(g) = v[i].clone() {
                    let mut inner: Vec<TokenTree> = g.stream().into_iter().collect();
                    inner.insert(rng.below(inner.len() + 1), TokenTree::Group(g.clone()));
                    v[i] = group(g.delimiter(), inner, g.span());
                }
            } else if !v.is_empty() {
                // No group here: wrap a run of tokens in one.
                let a = rng.below(v.len());
                let b = rng.between(a, v.len());
                let delimiter = rng.pick(&[
                    Delimiter::Brace,
                    Delimiter::Parenthesis,
                    Delimiter::Bracket,
                    Delimiter::None,
                ]);
                let inner: Vec<TokenTree> = v.drain(a..b).collect();
                v.insert(a, group(delimiter, inner, Span::call_site()));
            }
        }
        _ => {}
    }
}

/// `count` random mutations of `tokens`.
fn mutated(
    tokens: Vec<TokenTree>,
    count: usize,
    rng: &mut Rng,
    seeds: &[Vec<TokenTree>],
) -> TokenStream {
    let mut pool = Vec::new();
    identifiers(&tokens, &mut pool);
    let mut v = tokens;
    for _ in 0..count {
        let m = rng.pick(MUTATIONS);
        v = mutate(v, m, rng, seeds, &pool);
    }
    v.into_iter().collect()
}

// ---------------------------------------------------------------------------------------------
// Generated pipelines

/// Upper bounds for one generated pipeline.
#[derive(Debug, Clone, Copy)]
struct Size {
    statements: usize,
    streams: usize,
    events: usize,
    buffers: usize,
    /// Temporaries (`temp tK: f32[n as usize];`), named by statements as buffers are.
    temps: usize,
    depth: usize,
}

impl Size {
    const LARGEST: Size = Size {
        statements: 3000,
        streams: 500,
        events: 100,
        buffers: 32,
        temps: 8,
        depth: 3,
    };

    fn random(rng: &mut Rng) -> Size {
        let (statements, streams, events, buffers, temps) = match rng.below(1000) {
            0..=949 => (40, 6, 6, 6, 3),
            950..=996 => (200, 64, 32, 16, 6),
            _ => (3000, 500, 100, 32, 8),
        };
        Size {
            statements: rng.below(statements + 1),
            streams: rng.between(1, streams),
            events: rng.below(events + 1),
            buffers: rng.between(1, buffers),
            // Half the pipelines have none: their generated code must not change.
            temps: if rng.one_in(2) {
                0
            } else {
                rng.below(temps + 1)
            },
            depth: rng.below(5),
        }
    }
}

/// What a generated pipeline holds.
#[derive(Debug, Clone, Copy, Default)]
struct Shape {
    statements: usize,
    streams: usize,
    events: usize,
    temps: usize,
    depth: usize,
}

struct Gen<'r> {
    rng: &'r mut Rng,
    size: Size,
    out: String,
    left: usize,
    shape: Shape,
}

/// A random pipeline within `size`: mostly declared names, every statement form, `for` loops
/// and `if`s nested up to `size.depth`, and now and then an error (an unknown name, a
/// malformed launch, a write through a shared parameter, pageable host memory).
fn generate(rng: &mut Rng, size: Size) -> (String, Shape) {
    let mut g = Gen {
        rng,
        size,
        out: String::with_capacity(64 * size.statements + 32 * size.streams + 256),
        left: size.statements,
        shape: Shape {
            streams: size.streams,
            events: size.events,
            temps: size.temps,
            ..Shape::default()
        },
    };
    g.header();
    g.out.push('{');
    for s in 0..size.streams {
        g.out.push_str(&format!("stream s{s}"));
        match g.rng.below(16) {
            0 | 1 => g.out.push_str("(priority = -1)"),
            2 => g.out.push_str("(device = 0, priority = n as i32)"),
            3 if g.rng.one_in(8) => g.out.push_str("(priority = 0, priority = 1)"),
            _ => {}
        }
        g.out.push_str(";\n");
    }
    for e in 0..size.events {
        g.out.push_str(&format!("event e{e};\n"));
    }
    for t in 0..size.temps {
        g.temp(t);
    }
    while g.left > 0 {
        g.statement(0);
    }
    g.out.push('}');
    g.shape.statements = size.statements - g.left;
    (g.out, g.shape)
}

impl Gen<'_> {
    fn header(&mut self) {
        if self.rng.one_in(2) {
            self.out.push_str("/// A generated pipeline.\n");
        }
        self.out.push_str(
            self.rng
                .pick(&["", "pub ", "pub(crate) ", "#[allow(dead_code)] "]),
        );
        self.out.push_str("pipeline Generated");
        let generic = self.rng.one_in(8);
        if generic {
            self.out.push_str("<'k, T: Copy>");
        }
        self.out.push_str("(k: &Kernels, n: u32, flag: bool, ");
        for b in 0..self.size.buffers {
            let ty = match self.rng.below(100) {
                0..=59 => "&mut DeviceBuffer<f32>",
                60..=74 => "&DeviceBuffer<f32>",
                75..=84 => "&mut PinnedBuffer<f32>",
                85..=89 => "&'k PinnedBuffer<f32>",
                90..=93 => "&[f32]",
                94..=96 => "Vec<f32>",
                _ => "u32",
            };
            self.out.push_str(&format!("b{b}: {ty}, "));
        }
        if generic {
            self.out.push_str("extra: T) where T: Send ");
        } else {
            self.out.push_str(") ");
        }
    }

    /// `temp tT: …;`, now and then with a length of the wrong type, a name that clashes or
    /// no length.
    fn temp(&mut self, t: usize) {
        let decl = match self.rng.below(200) {
            0 => format!("temp t{t}: f32[n];\n"),
            1 => format!("temp b0: f32[n as usize];\ntemp t{t}: f32[4];\n"),
            2 => format!("temp t{t}: f32;\n"),
            3..=19 => format!("temp t{t}: u32[2 * n as usize + 1];\n"),
            _ => format!("temp t{t}: f32[n as usize];\n"),
        };
        self.out.push_str(&decl);
    }

    fn stream(&mut self) -> String {
        if self.rng.one_in(300) {
            "nowhere".to_owned()
        } else {
            format!("s{}", self.rng.below(self.size.streams))
        }
    }

    fn event(&mut self) -> String {
        if self.size.events == 0 || self.rng.one_in(300) {
            "never".to_owned()
        } else {
            format!("e{}", self.rng.below(self.size.events))
        }
    }

    fn buffer(&mut self) -> String {
        if self.size.temps > 0 && self.rng.one_in(4) {
            let t = self.rng.below(self.size.temps);
            return match self.rng.below(4) {
                0 => format!("t{t}.slice(0..1)"),
                _ => format!("t{t}"),
            };
        }
        let b = self.rng.below(self.size.buffers);
        match self.rng.below(100) {
            0..=69 => format!("b{b}"),
            70..=89 => format!("b{b}.slice(0..n as usize)"),
            90..=94 => format!("(b{b})"),
            95..=97 => format!("b{b}.slice(1..3).slice(0..1)"),
            98 => "k.scratch".to_owned(),
            _ => "missing".to_owned(),
        }
    }

    fn config_item(&mut self) -> &'static str {
        self.rng.pick(&[
            "n",
            "(n + 255) / 256",
            "256",
            "(n, 2)",
            "(1, 1, 1)",
            "grid(n)",
            "32u32",
        ])
    }

    /// One statement (counted against the budget), control flow included.
    fn statement(&mut self, depth: usize) {
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        self.shape.depth = self.shape.depth.max(depth);
        let nested = depth < self.size.depth;
        match self.rng.below(100) {
            0..=5 if nested => {
                let pat = self.rng.pick(&["i", "_", "(a, b)", "ref j"]);
                let range = self.rng.pick(&["0..n", "0..2", "pairs(n)", "(0..n).rev()"]);
                self.out.push_str(&format!("for {pat} in {range} {{\n"));
                self.block(depth + 1);
                self.out.push_str("}\n");
            }
            6..=11 if nested => {
                self.if_chain(depth);
            }
            // Misplaced: temporaries are top-level items.
            12 if depth > 0 && self.rng.one_in(20) => {
                self.out.push_str("temp inner: f32[4];\n");
            }
            _ => self.op(),
        }
    }

    /// A block's statements: usually a few, at times most of what is left.
    fn block(&mut self, depth: usize) {
        let n = if self.rng.one_in(8) {
            self.rng.below(self.left + 1)
        } else {
            self.rng.below(9)
        };
        for _ in 0..n {
            self.statement(depth);
        }
    }

    fn if_chain(&mut self, depth: usize) {
        let cond = self
            .rng
            .pick(&["flag", "n > 2", "n % 2 == 0 && flag", "!flag"]);
        self.out.push_str(&format!("if {cond} {{\n"));
        self.block(depth + 1);
        self.out.push('}');
        match self.rng.below(3) {
            0 => self.out.push('\n'),
            1 => {
                self.out.push_str(" else {\n");
                self.block(depth + 1);
                self.out.push_str("}\n");
            }
            _ => {
                self.out.push_str(" else ");
                self.if_chain(depth);
            }
        }
    }

    fn op(&mut self) {
        let stream = self.stream();
        let op = match self.rng.below(100) {
            0..=29 => {
                let kernel = self.rng.pick(&["k.f", "k.g()", "k", "kernels[0]"]);
                let items = match self.rng.below(100) {
                    0..=4 => 1,
                    5..=84 => 2,
                    85..=97 => 3,
                    _ => 4,
                };
                let config: Vec<&str> = (0..items).map(|_| self.config_item()).collect();
                let args: Vec<String> = (0..self.rng.below(5))
                    .map(|_| match self.rng.below(6) {
                        0 | 1 => format!("&mut {}", self.buffer()),
                        2 | 3 => format!("&{}", self.buffer()),
                        4 => "n".to_owned(),
                        _ => "1.0f32".to_owned(),
                    })
                    .collect();
                format!(
                    "launch {kernel}<<<{}>>>({})",
                    config.join(", "),
                    args.join(", ")
                )
            }
            30..=39 => format!("copy {} <- {}", self.buffer(), self.buffer()),
            40..=49 => format!("fill {} = 0.0f32", self.buffer()),
            50..=54 => self
                .rng
                .pick(&["host || {}", "host move || { let _ = n; }"])
                .to_string(),
            55..=69 => format!("record {}", self.event()),
            70..=84 => format!("wait {}", self.event()),
            _ => format!("wait_stream {}", self.stream()),
        };
        self.out.push_str(&format!("{stream}: {op};\n"));
    }
}

// ---------------------------------------------------------------------------------------------
// Running

/// Where an input comes from.
enum Origin {
    Mutated {
        seed: usize,
        file: &'static str,
        mutations: usize,
    },
    Generated {
        shape: Shape,
        mutations: usize,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Mutated {
                seed,
                file,
                mutations,
            } => write!(f, "seed {seed} ({file}) with {mutations} mutations"),
            Origin::Generated { shape, mutations } => {
                write!(
                    f,
                    "generated: {} statements, {} streams, {} events, {} temps, depth {}",
                    shape.statements, shape.streams, shape.events, shape.temps, shape.depth
                )?;
                if *mutations > 0 {
                    write!(f, ", then {mutations} mutations")?;
                }
                Ok(())
            }
        }
    }
}

/// Input `index`: a mutated seed four times in five, otherwise a generated pipeline (of the
/// largest size every [`LARGEST_EVERY`] inputs), a small one now and then mutated too.
fn input(index: usize, seeds: &[Vec<TokenTree>], files: &[&'static str]) -> (TokenStream, Origin) {
    let mut rng = Rng::for_input(index as u64);
    let largest = index % LARGEST_EVERY == LARGEST_EVERY / 2;
    if !largest && rng.below(10) < 8 {
        let seed = rng.below(seeds.len());
        let mutations = rng.between(1, 4);
        let tokens = mutated(seeds[seed].clone(), mutations, &mut rng, seeds);
        let file = files[seed];
        return (
            tokens,
            Origin::Mutated {
                seed,
                file,
                mutations,
            },
        );
    }
    let size = if largest {
        Size::LARGEST
    } else {
        Size::random(&mut rng)
    };
    let (text, shape) = generate(&mut rng, size);
    let tokens = TokenStream::from_str(&text).expect("generated pipelines tokenize");
    let mutations = if shape.statements <= 40 && rng.one_in(4) {
        rng.between(1, 3)
    } else {
        0
    };
    let tokens = if mutations > 0 {
        mutated(tokens.into_iter().collect(), mutations, &mut rng, seeds)
    } else {
        tokens
    };
    (tokens, Origin::Generated { shape, mutations })
}

/// One input's failure.
struct Failure {
    index: usize,
    origin: String,
    what: String,
    input: String,
}

#[derive(Default)]
struct Stats {
    inputs: usize,
    mutated: usize,
    generated: usize,
    /// Time spent in the front end on mutated and on generated inputs.
    mutated_time: Duration,
    generated_time: Duration,
    /// The slowest input: its time, index and origin.
    slowest: Option<(Duration, usize, String)>,
    panics: usize,
    failures: Vec<Failure>,
    /// Inputs over the time limit on their first run, to be timed again.
    slow: Vec<usize>,
}

impl Stats {
    fn merge(&mut self, other: Stats) {
        self.inputs += other.inputs;
        self.mutated += other.mutated;
        self.generated += other.generated;
        self.panics += other.panics;
        self.mutated_time += other.mutated_time;
        self.generated_time += other.generated_time;
        self.failures.extend(other.failures);
        self.slow.extend(other.slow);
        if let Some(s) = other.slowest
            && self.slowest.as_ref().is_none_or(|t| s.0 > t.0)
        {
            self.slowest = Some(s);
        }
    }

    /// Counts `elapsed` for the slowest input.
    fn time(&mut self, elapsed: Duration, index: usize, origin: &dyn fmt::Display) {
        if self.slowest.as_ref().is_none_or(|s| elapsed > s.0) {
            self.slowest = Some((elapsed, index, origin.to_string()));
        }
    }
}

/// What the hang watchdog sees: per worker, the input running and since when.
struct Watch {
    epoch: Instant,
    /// Per worker: nanoseconds after `epoch` its input started (`u64::MAX` when none runs),
    /// and the input.
    slots: Vec<(AtomicU64, AtomicU64)>,
    done: AtomicBool,
}

impl Watch {
    fn new(workers: usize) -> Watch {
        Watch {
            epoch: Instant::now(),
            slots: (0..workers)
                .map(|_| (AtomicU64::new(u64::MAX), AtomicU64::new(0)))
                .collect(),
            done: AtomicBool::new(false),
        }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn begin(&self, worker: usize, index: usize) {
        let (since, input) = &self.slots[worker];
        input.store(index as u64, Ordering::SeqCst);
        since.store(self.now(), Ordering::SeqCst);
    }

    fn end(&self, worker: usize) {
        self.slots[worker].0.store(u64::MAX, Ordering::SeqCst);
    }

    /// Aborts the process, naming the input, when one input runs past [`HANG_LIMIT`]: the
    /// front end does not give control back, so failing the test is not an option.
    fn watch(&self) {
        while !self.done.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(200));
            for (since, input) in &self.slots {
                let since = since.load(Ordering::SeqCst);
                if since != u64::MAX
                    && self.now().saturating_sub(since) > HANG_LIMIT.as_nanos() as u64
                {
                    let index = input.load(Ordering::SeqCst);
                    let _ = writeln!(
                        std::io::stderr(),
                        "fuzz: input {index} has run for over {HANG_LIMIT:?}: the front end hangs"
                    );
                    std::process::abort();
                }
            }
        }
    }
}

fn excerpt(tokens: &TokenStream) -> String {
    let text = tokens.to_string();
    match text.char_indices().nth(2000) {
        Some((cut, _)) => format!("{} …", &text[..cut]),
        None => text,
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_owned()
    }
}

/// Runs the front end on `tokens`: its output (or panic message) and how long it took.
fn run(
    tokens: TokenStream,
    worker: usize,
    index: usize,
    watch: &Watch,
) -> (Result<TokenStream, String>, Duration) {
    watch.begin(worker, index);
    let start = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| crate::expand::pipeline(tokens)));
    let elapsed = start.elapsed();
    watch.end(worker);
    (result.map_err(|payload| panic_message(&*payload)), elapsed)
}

/// Runs inputs `range` on the current thread, as worker `worker`.
fn run_chunk(
    range: Range<usize>,
    texts: &[(&'static str, &str)],
    worker: usize,
    watch: &Watch,
) -> Stats {
    let (seeds, files) = parse_seeds(texts);
    let mut stats = Stats::default();
    for index in range {
        let (tokens, origin) = input(index, &seeds, &files);
        stats.inputs += 1;
        let kept = tokens.clone();
        let (result, elapsed) = run(tokens, worker, index, watch);
        match origin {
            Origin::Mutated { .. } => {
                stats.mutated += 1;
                stats.mutated_time += elapsed;
            }
            Origin::Generated { .. } => {
                stats.generated += 1;
                stats.generated_time += elapsed;
            }
        }
        let fail = |what: String| Failure {
            index,
            origin: origin.to_string(),
            what,
            input: excerpt(&kept),
        };
        match result {
            Ok(output) if output.is_empty() => {
                stats.failures.push(fail("the output is empty".to_owned()));
            }
            Ok(output) if index % PARSE_EVERY == 0 => {
                if let Err(e) = syn::parse2::<syn::File>(output) {
                    stats
                        .failures
                        .push(fail(format!("the output is not Rust items: {e}")));
                }
            }
            Ok(_) => {}
            Err(message) => {
                stats.panics += 1;
                stats.failures.push(fail(format!("panicked: {message}")));
            }
        }
        if elapsed > TIME_LIMIT {
            // Timed again on its own once every worker is done.
            stats.slow.push(index);
        } else {
            stats.time(elapsed, index, &origin);
        }
    }
    stats
}

/// Times the inputs `slow` again, one at a time and three times each, and judges each by its
/// fastest run: a busy machine (other workers included) is not a slow front end.
fn retime(slow: &[usize], texts: &[(&'static str, &str)], watch: &Watch) -> Stats {
    let (seeds, files) = parse_seeds(texts);
    let mut stats = Stats::default();
    for &index in slow {
        let (tokens, origin) = input(index, &seeds, &files);
        let elapsed = (0..3)
            .map(|_| run(tokens.clone(), 0, index, watch).1)
            .min()
            .expect("three runs");
        if elapsed > TIME_LIMIT {
            stats.failures.push(Failure {
                index,
                origin: origin.to_string(),
                what: format!("took {elapsed:?} at best of three runs, over {TIME_LIMIT:?}"),
                input: excerpt(&tokens),
            });
        }
        stats.time(elapsed, index, &format!("{origin}, best of three runs"));
    }
    stats
}

/// A number from the environment variable `name`, or `default`.
fn env_number(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(n) => n
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name}={n:?} is not a number")),
        Err(_) => default,
    }
}

/// The inputs to run: `STREAMGRAPH_FUZZ` of them (default [`DEFAULT_INPUTS`]) from
/// `STREAMGRAPH_FUZZ_FIRST` (default 0), which reruns a reported input alone.
fn inputs_to_run() -> Range<usize> {
    let first = env_number("STREAMGRAPH_FUZZ_FIRST", 0);
    first..first + env_number("STREAMGRAPH_FUZZ", DEFAULT_INPUTS)
}

/// Runs the inputs `range` on `workers` threads; each worker takes [`CHUNK`] inputs at a time
/// and runs them on a fresh thread (8 MiB of stack, as rustc gives its threads). A watchdog
/// looks out for hangs.
fn fuzz(range: Range<usize>, workers: usize) -> Stats {
    let texts = seed_texts();
    let watch = Watch::new(workers);
    let next = std::sync::atomic::AtomicUsize::new(range.start);
    let mut stats = Stats::default();
    std::thread::scope(|scope| {
        let watchdog = scope.spawn(|| watch.watch());
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                let (texts, watch, next) = (&texts, &watch, &next);
                scope.spawn(move || {
                    let mut stats = Stats::default();
                    loop {
                        let start = next.fetch_add(CHUNK, Ordering::SeqCst);
                        if start >= range.end {
                            return stats;
                        }
                        let end = range.end.min(start + CHUNK);
                        let chunk = std::thread::Builder::new()
                            .name(format!("fuzz {start}..{end}"))
                            .stack_size(8 << 20)
                            .spawn_scoped(scope, move || {
                                run_chunk(start..end, texts, worker, watch)
                            })
                            .expect("spawning a fuzz thread");
                        stats.merge(
                            chunk
                                .join()
                                .expect("a fuzz thread failed outside the front end"),
                        );
                    }
                })
            })
            .collect();
        for handle in handles {
            stats.merge(handle.join().expect("a fuzz worker failed"));
        }
        let slow = std::mem::take(&mut stats.slow);
        if !slow.is_empty() {
            let retimed = std::thread::scope(|inner| {
                std::thread::Builder::new()
                    .name("fuzz retime".to_owned())
                    .stack_size(8 << 20)
                    .spawn_scoped(inner, || retime(&slow, &texts, &watch))
                    .expect("spawning a fuzz thread")
                    .join()
                    .expect("a fuzz thread failed outside the front end")
            });
            stats.merge(retimed);
        }
        watch.done.store(true, Ordering::SeqCst);
        watchdog.join().expect("the watchdog");
    });
    stats.failures.sort_by_key(|f| f.index);
    stats
}

// ---------------------------------------------------------------------------------------------
// Tests

/// The fuzz run: `STREAMGRAPH_FUZZ` inputs (default [`DEFAULT_INPUTS`]); prints one summary
/// line, shown even when the test harness captures output.
#[test]
fn fuzz_front_end() {
    let range = inputs_to_run();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let started = Instant::now();
    let stats = fuzz(range.clone(), workers);
    let (slow_time, slow_index, slow_origin) =
        stats
            .slowest
            .clone()
            .unwrap_or((Duration::ZERO, 0, "none".to_owned()));
    let summary = format!(
        "fuzz: {} inputs ({} mutated from {} seeds: {:.1} s, {} generated: {:.1} s) in {:.1} s \
         on {workers} threads; slowest {:.3} s (input {slow_index}, {slow_origin}); panics: {}; \
         failures: {}",
        stats.inputs,
        stats.mutated,
        seed_texts().len(),
        stats.mutated_time.as_secs_f64(),
        stats.generated,
        stats.generated_time.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        slow_time.as_secs_f64(),
        stats.panics,
        stats.failures.len(),
    );
    let _ = writeln!(std::io::stderr(), "{summary}");
    let report: Vec<String> = stats
        .failures
        .iter()
        .take(10)
        .map(|f| {
            format!(
                "input {} ({}): {}\n  {}",
                f.index, f.origin, f.what, f.input
            )
        })
        .collect();
    assert!(
        stats.failures.is_empty(),
        "{summary}\nfirst failures:\n{}",
        report.join("\n")
    );
    assert_eq!(stats.inputs, range.len());
}

/// Every Rust file of the seed directories is embedded, so that a new test's pipelines become
/// seeds (or the list is fixed here).
#[test]
fn fuzz_every_source_file_is_embedded() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut on_disk = Vec::new();
    for dir in SOURCE_DIRS {
        for entry in std::fs::read_dir(root.join(dir)).expect("a seed directory") {
            let path = entry.expect("a directory entry").path();
            if path.extension().is_some_and(|e| e == "rs") {
                let name = path.file_name().expect("a file name").to_string_lossy();
                on_disk.push(format!("{dir}/{name}"));
            }
        }
    }
    on_disk.sort();
    let mut embedded: Vec<String> = SOURCES.iter().map(|(p, _)| (*p).to_owned()).collect();
    embedded.sort();
    assert_eq!(
        embedded, on_disk,
        "update SOURCES in macros/src/fuzz_tests.rs"
    );
}

#[test]
fn fuzz_seeds_are_the_invocations() {
    let texts = seed_texts();
    assert!(texts.len() >= 40, "only {} seeds", texts.len());
    for (file, text) in &texts {
        let tokens = TokenStream::from_str(text)
            .unwrap_or_else(|e| panic!("a seed of {file} does not tokenize: {e}"));
        assert!(
            tokens
                .into_iter()
                .any(|t| matches!(&t, TokenTree::Ident(i) if i == "pipeline")),
            "a seed of {file} has no `pipeline`: {text}"
        );
    }
    // Most seeds are accepted as they are; those of the UI tests are also errors.
    let ok = texts
        .iter()
        .filter(|(_, t)| {
            let out = crate::expand::pipeline(TokenStream::from_str(t).expect("tokenizes"));
            !out.to_string().contains("compile_error")
        })
        .count();
    assert!(ok >= 20, "only {ok} seeds expand without errors");
}

#[test]
fn fuzz_invocations_skip_comments_and_literals() {
    let src = r##"
        // pipeline! { not this }
        /* pipeline! { nor /* nested */ this } */
        const S: &str = "pipeline! { nor this }";
        const R: &str = r#"pipeline! { "nor" this }"#;
        my_pipeline! { nor this }
        streamgraph::pipeline! {
            pipeline P<'a>(x: &'a u32) { stream s; s: host || { let _ = ('{', "}", '\''); }; }
        }
        pipeline!(second)
    "##;
    let found = invocations(src);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].trim().starts_with("pipeline P<'a>"),
        "{}",
        found[0]
    );
    assert!(found[0].trim().ends_with("}; }"), "{}", found[0]);
    assert_eq!(found[1], "second");
}

#[test]
fn fuzz_inputs_are_reproducible() {
    let (seeds, files) = parse_seeds(&seed_texts());
    for index in [0, 1, 2, 3, 17, 2500] {
        let (a, _) = input(index, &seeds, &files);
        let (b, _) = input(index, &seeds, &files);
        assert_eq!(a.to_string(), b.to_string());
    }
}
