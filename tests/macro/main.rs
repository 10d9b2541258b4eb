//! Tests of `#[service_provider]` and everything generated from it: the CRDs against hand-written
//! kube-derive, the structural schema rules, kcp schema naming and the checked-in manifests. The
//! macro's compile errors and passing declarations are trybuild cases in `ui-tests/`, a package of
//! its own (see its manifest for why).

// The examples are compiled in here as modules (a binary's `pub` items are unreachable in a
// module, hence the allows), so their manifests are checked in-process; the
// examples' own tests (`hello::tests`, the README's test-kit example) run here too.
#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/cert-manager/main.rs"]
mod cert_manager;
#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/external-secrets/main.rs"]
mod eso;
#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/hello/main.rs"]
mod hello;
#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/velero/main.rs"]
mod velero;
// The twin shares `examples/velero/install.rs` with the example: loaded twice on purpose, once
// for each declaration of `Velero`.
#[allow(dead_code, unreachable_pub, clippy::duplicate_mod)]
#[path = "../../xtask/macro-cost/velero_by_hand.rs"]
mod velero_by_hand;

mod kitchen_sink;
mod manifests;
mod readme;
// README's provider example as copied, so it compiles; kept byte for byte as README has it.
#[allow(dead_code, unreachable_pub)]
#[rustfmt::skip]
mod readme_provider;
mod real_rules;
mod schema_names;
mod ship;
mod structural;
mod versions;
#[allow(unreachable_pub)]
#[path = "../support/widget.rs"]
mod widget;
