//! Structural changes cannot happen under running writers, and the compiler is what refuses
//! them: each program in `tests/ui/` makes one such change (a removal while an overlay borrows
//! the store, an add from inside a writer of `run_parallel`) and must fail to compile with the
//! borrow error recorded beside it, not with any other error.

#[test]
fn structural_changes_under_running_writers_do_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
