//! Compile-time diagnostics of `pipeline!`: one `tests/ui/*.rs` case per error, with the
//! expected compiler output next to it; `pass_*.rs` cases must compile.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass_*.rs");
    t.compile_fail("tests/ui/[!p]*.rs");
}
