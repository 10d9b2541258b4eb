//! End-to-end tests of standard mode against the embedded control plane and the simulated
//! openMCP platform. Every provider here runs under only its generated RBAC (the platform
//! identity `TestEnv` gives it, onboarding access from its AccessRequest), and the tests check
//! what end users and platform operators see: status, objects in the clusters, access objects.

#[path = "../../examples/velero/main.rs"]
#[allow(dead_code, unreachable_pub)] // a binary's `pub` items, here in a module
mod velero;

#[path = "../../examples/cert-manager/main.rs"]
#[allow(dead_code, unreachable_pub)] // a binary's `pub` items, here in a module
mod cert_manager;

#[path = "../../examples/external-secrets/main.rs"]
#[allow(dead_code, unreachable_pub)] // a binary's `pub` items, here in a module
mod eso;

#[path = "../../examples/hello/main.rs"]
#[allow(dead_code, unreachable_pub)] // a binary's `pub` items, here in a module
mod hello;

mod adopt;
mod config;
mod conversion;
mod deletion_guard;
mod faults;
mod flaky;
mod go_status;
mod helm_topology;
mod leader;
mod lifecycle;
mod logs;
mod long_names;
mod managed;
mod metrics;
mod newcomer;
mod noop;
mod process;
mod ship;
mod storage_migration;
mod takeover;
mod testkit;
mod timeout;
#[allow(dead_code, unreachable_pub)]
#[path = "../support/widget.rs"]
mod widget;
// Shared with the other end-to-end binary, which uses other parts of it.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

/// The ProviderConfig spec every Velero test starts from.
pub(crate) fn velero_config() -> serde_json::Value {
    serde_json::json!({
        "imageRepository": "registry.test/velero",
        "versions": [{ "version": "1.15.0" }, { "version": "1.16.1", "chartVersion": "v1.16.1" }],
        "pollInterval": "1m",
    })
}
