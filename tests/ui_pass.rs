//! The UI suite's `tests/ui/pass_*.rs` cases: each must compile (most deny every warning) and
//! its program must succeed. They are modules of this test rather than trybuild cases, so that
//! trybuild only checks (`cargo check`) the compile-fail cases instead of building and linking
//! every case with all its dependencies.
#![allow(clippy::unwrap_used)]

#[path = "ui/pass_aliased_buffers.rs"]
pub mod pass_aliased_buffers;
#[path = "ui/pass_all_forms.rs"]
pub mod pass_all_forms;
#[path = "ui/pass_call.rs"]
pub mod pass_call;
#[path = "ui/pass_copy_into_slice_mut.rs"]
pub mod pass_copy_into_slice_mut;
#[path = "ui/pass_copy_source_moves.rs"]
pub mod pass_copy_source_moves;
#[path = "ui/pass_device_blocks.rs"]
pub mod pass_device_blocks;
#[path = "ui/pass_event_arrays.rs"]
pub mod pass_event_arrays;
#[path = "ui/pass_indexed_maybe_race.rs"]
pub mod pass_indexed_maybe_race;
#[path = "ui/pass_race_check_incomplete.rs"]
pub mod pass_race_check_incomplete;
#[path = "ui/pass_signalled_loops.rs"]
pub mod pass_signalled_loops;
#[path = "ui/pass_switch_blocks.rs"]
pub mod pass_switch_blocks;
#[path = "ui/pass_temporaries.rs"]
pub mod pass_temporaries;
#[path = "ui/pass_uncertain_races.rs"]
pub mod pass_uncertain_races;
#[path = "ui/pass_write_parts.rs"]
pub mod pass_write_parts;

#[test]
fn aliased_buffers() {
    pass_aliased_buffers::main().expect("the case's program succeeds");
}

#[test]
fn all_forms() {
    pass_all_forms::main();
}

#[test]
fn call() {
    pass_call::main();
}

#[test]
fn copy_into_slice_mut() {
    pass_copy_into_slice_mut::main();
}

#[test]
fn copy_source_moves() {
    pass_copy_source_moves::main().expect("the case's program succeeds");
}

#[test]
fn device_blocks() {
    pass_device_blocks::main();
}

#[test]
fn switch_blocks() {
    pass_switch_blocks::main();
}

#[test]
fn signalled_loops() {
    pass_signalled_loops::main();
}

#[test]
fn event_arrays() {
    pass_event_arrays::main();
}

#[test]
fn indexed_maybe_race() {
    pass_indexed_maybe_race::main();
}

#[test]
fn race_check_incomplete() {
    pass_race_check_incomplete::main();
}

#[test]
fn uncertain_races() {
    pass_uncertain_races::main();
}

#[test]
fn write_parts() {
    pass_write_parts::main().expect("the case's program succeeds");
}

#[test]
fn temporaries() {
    pass_temporaries::main().expect("the case's program succeeds");
}
