//! Pure parts of the runtime that need no GPU: priority clamping, launch dimensions, address
//! ranges, fill patterns and error messages.
// Tests fail loudly on purpose: an unwrap names the failing call.
#![allow(clippy::unwrap_used)]

use streamgraph::{
    clamp_priority, DeviceRange, Dim3, Error, FillPattern, FillValue, Location, Statement,
    StatementKind,
};

#[test]
fn priorities_clamp_to_the_nearest_valid_value() {
    // CUDA's range: least = 0 (lowest priority), greatest = -5 (highest).
    let range = (0, -5);
    assert_eq!(clamp_priority(0, range), 0);
    assert_eq!(clamp_priority(-1, range), -1);
    assert_eq!(clamp_priority(-5, range), -5);
    assert_eq!(
        clamp_priority(10, range),
        0,
        "large positive: lowest priority"
    );
    assert_eq!(
        clamp_priority(-10, range),
        -5,
        "large negative: highest priority"
    );
    assert_eq!(clamp_priority(i32::MAX, range), 0);
    assert_eq!(clamp_priority(i32::MIN, range), -5);
    assert_eq!(clamp_priority(-3, (0, 0)), 0, "a device without priorities");
}

#[test]
fn launch_dimensions_fill_missing_extents_with_one() {
    assert_eq!(Dim3::from(7), Dim3 { x: 7, y: 1, z: 1 });
    assert_eq!(Dim3::from((7, 3)), Dim3 { x: 7, y: 3, z: 1 });
    assert_eq!(Dim3::from((7, 3, 2)), Dim3 { x: 7, y: 3, z: 2 });
}

fn range(device: i32, ptr: u64, bytes: usize) -> DeviceRange {
    DeviceRange { device, ptr, bytes }
}

#[test]
fn device_ranges_overlap_only_when_they_share_a_byte() {
    let a = range(0, 1000, 100);
    assert!(a.overlaps(&a));
    assert!(a.overlaps(&range(0, 1099, 1)), "last byte");
    assert!(a.overlaps(&range(0, 900, 101)), "first byte");
    assert!(a.overlaps(&range(0, 1010, 10)), "inside");
    assert!(range(0, 1010, 10).overlaps(&a), "symmetric");
    assert!(!a.overlaps(&range(0, 1100, 10)), "adjacent after");
    assert!(!a.overlaps(&range(0, 900, 100)), "adjacent before");
    assert!(!a.overlaps(&range(1, 1000, 100)), "another device");
    assert!(!a.overlaps(&range(0, 1000, 0)), "empty");
    assert!(
        range(0, u64::MAX - 1, 10).overlaps(&range(0, u64::MAX - 1, 1)),
        "no overflow"
    );
}

#[test]
fn fill_values_become_memset_patterns_of_their_width() {
    assert_eq!(0xabu8.pattern(), FillPattern::U8(0xab));
    assert_eq!((-1i8).pattern(), FillPattern::U8(0xff));
    assert_eq!(0x1234u16.pattern(), FillPattern::U16(0x1234));
    assert_eq!(i16::MIN.pattern(), FillPattern::U16(0x8000));
    assert_eq!(0xdead_beefu32.pattern(), FillPattern::U32(0xdead_beef));
    assert_eq!((-2i32).pattern(), FillPattern::U32(0xffff_fffe));
    assert_eq!(1.5f32.pattern(), FillPattern::U32(1.5f32.to_bits()));
    assert_eq!((-0.0f32).pattern(), FillPattern::U32(0x8000_0000));
}

static STATEMENT: Statement = Statement {
    id: 3,
    stream: 1,
    kind: StatementKind::Copy,
    text: "side: copy y <- x",
    accesses: &[],
    location: Location {
        file: "src/main.rs",
        line: 12,
        column: 9,
    },
};

#[test]
fn errors_name_the_statement_once() {
    let err = Error::InvalidArgument("sizes differ".into()).in_statement(&STATEMENT);
    let message = err.to_string();
    assert!(message.contains("side: copy y <- x"), "{message}");
    assert!(message.contains("src/main.rs:12:9"), "{message}");
    assert!(message.contains("sizes differ"), "{message}");
    let twice = err.in_statement(&STATEMENT).to_string();
    assert_eq!(
        twice, message,
        "wrapping again does not repeat the statement"
    );
}

#[test]
fn timing_errors_say_what_to_do() {
    assert!(Error::TimingDisabled
        .to_string()
        .contains("Event::with_timing"));
    assert!(Error::EventNotRecorded.to_string().contains("record"));
}

#[test]
fn handles_are_send_and_sync_where_true() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<streamgraph::Device>();
    send_sync::<streamgraph::Stream>();
    send_sync::<streamgraph::Event>();
    send_sync::<streamgraph::Module>();
    send_sync::<streamgraph::Kernel>();
    send_sync::<streamgraph::DeviceBuffer<f32>>();
    send_sync::<streamgraph::DeviceView<'static, f32>>();
    send_sync::<streamgraph::PinnedBuffer<f32>>();
    send::<streamgraph::Eager>();
}
