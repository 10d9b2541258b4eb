//! The macro's compile errors and passing declarations, with trybuild.
//!
//! Refresh the `.stderr` snapshots after an intended message change with
//! `TRYBUILD=overwrite cargo test --test macro ui` and review the diff.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui-tests/pass/*.rs");
    cases.compile_fail("ui-tests/fail/*.rs");
}
