//! Compile-time diagnostics of `pipeline!`: one `tests/ui/*.rs` case per error, with the
//! expected compiler output next to it. The `pass_*.rs` cases, which must compile, are
//! `tests/ui_pass.rs`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/[!p]*.rs");
}
