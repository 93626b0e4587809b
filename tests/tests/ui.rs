//! Compile-fail cases (one rule each, named after the rule) and compile-pass cases for `#[tool]`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/fail/*.rs");
    t.pass("ui/pass/*.rs");
}
