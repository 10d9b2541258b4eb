//! The macro's compile errors and passing declarations, with trybuild.
//!
//! Refresh the `.stderr` snapshots after an intended message change with
//! `TRYBUILD=overwrite cargo test -p service-provider-ui-tests` and review the diff.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("pass/*.rs");
    cases.compile_fail("fail/*.rs");
}
