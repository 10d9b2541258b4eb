//! A provider using every kind of field an author commonly reaches for, so the structural-schema
//! walk covers more than the examples do.

use std::collections::BTreeMap;

use service_provider::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use service_provider::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use service_provider::prelude::*;

/// Everything at once.
#[service_provider(
    group = "sink.services.example.io",
    version = "v1beta1",
    kind = "Sink",
    config = SinkConfig,
    status = SinkStatus,
    workload_cluster = optional,
    kcp,
    printcolumn(name = "Mode", type = "string", json_path = ".spec.mode"),
    printcolumn(name = "Replicas", type = "integer", json_path = ".status.readyReplicas"),
)]
pub(crate) struct SinkSpec {
    /// A string.
    pub name: String,
    /// An optional string.
    pub description: Option<String>,
    /// Numbers.
    pub replicas: u32,
    /// An optional signed number.
    pub offset: Option<i64>,
    /// A float.
    pub ratio: f64,
    /// A flag.
    #[serde(default)]
    pub enabled: bool,
    /// A map.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// A list of strings.
    #[serde(default)]
    pub tags: Vec<String>,
    /// A unit enum.
    pub mode: Mode,
    /// An optional unit enum.
    pub fallback: Option<Mode>,
    /// A nested struct.
    pub limits: Limits,
    /// An optional nested struct.
    pub backup: Option<Limits>,
    /// A list of structs.
    #[serde(default)]
    pub extra_limits: Vec<Limits>,
    /// Int or string, as Kubernetes ports are.
    pub port: IntOrString,
    /// An optional quantity.
    pub memory: Option<Quantity>,
}

/// How it runs.
#[api_type]
#[derive(Default, PartialEq)]
pub(crate) enum Mode {
    /// Quietly.
    #[default]
    Quiet,
    /// Loudly.
    Loud,
}

/// Limits.
#[api_type]
pub(crate) struct Limits {
    /// CPU.
    pub cpu: Option<Quantity>,
    /// Per-tenant overrides.
    #[serde(default)]
    pub overrides: BTreeMap<String, u32>,
}

/// Operator settings.
#[api_type]
pub(crate) struct SinkConfig {
    /// Default mode.
    pub default_mode: Option<Mode>,
    /// Mirrors by registry.
    #[serde(default)]
    pub mirrors: BTreeMap<String, String>,
}

/// Extra status.
#[api_type]
#[derive(Default, PartialEq)]
pub(crate) struct SinkStatus {
    /// Replicas ready.
    pub ready_replicas: Option<i32>,
    /// Last mode seen.
    pub last_mode: Option<Mode>,
}
