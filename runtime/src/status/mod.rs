//! The status every Service API object carries, written by the runtime and never by the author.

pub(crate) mod resources;
pub(crate) mod write;

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Lifecycle phase of a Service API object, as the openMCP runtime reports it: the values of the
/// Go runtime's `StatusPhase*` constants (opencontrolplane-runtime `pkg/serviceprovider/status.go`,
/// openmcp-operator `api/common/status_types.go`).
///
/// In the CRD it is a plain string, as Go's `commonapi.Status.Phase` is, so a status a Go
/// provider writes is never refused; a value outside this set reads as no phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// The service is installed and reported ready.
    Ready,
    /// Access is being set up, the service is being installed, or something failed and is retried.
    Progressing,
    /// The object is being deleted.
    Terminating,
}

impl Phase {
    /// The phase as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Ready => "Ready",
            Phase::Progressing => "Progressing",
            Phase::Terminating => "Terminating",
        }
    }
}

impl JsonSchema for Phase {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Phase".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        resources::known_values_schema(
            "Lifecycle phase of a Service API object, as the openMCP runtime reports it: Ready, \
             Progressing or Terminating.",
        )
    }
}

/// Extra status fields a provider author declares with `status = T`.
///
/// Blanket-implemented; the bound exists so the runtime can compare, store and serialize them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the `status` of a service provider",
    label = "needs Clone, Debug, Default, PartialEq, Serialize, Deserialize and JsonSchema",
    note = "declare it with `#[service_provider::api_type]` and `#[derive(Clone, Debug, Default, PartialEq)]`"
)]
pub trait ExtraStatus:
    Clone
    + Debug
    + Default
    + PartialEq
    + Serialize
    + DeserializeOwned
    + JsonSchema
    + Send
    + Sync
    + 'static
{
}

impl<T> ExtraStatus for T where
    T: Clone
        + Debug
        + Default
        + PartialEq
        + Serialize
        + DeserializeOwned
        + JsonSchema
        + Send
        + Sync
        + 'static
{
}

/// The extra status of a provider that declares none: no fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoStatus {}

/// Status of a Service API object: the fields common to every openMCP service (`observedGeneration`,
/// `phase`, `conditions`) followed by the author's own.
//
// Reading it never fails: the status is the runtime's own output, so one it cannot parse (written
// by another controller, or under another schema) reads as the empty status, which the runtime
// treats as absent and replaces whole on its next status write. Only the spec can make a Service
// API object unreadable. (A `//` comment: the `///` text above is also the CRD's description.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceStatus<X = NoStatus> {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Ready, Progressing or Terminating.
    // Any other string (a Go provider may have written `""` or `Failed`) reads as `None`, so the
    // object still decodes; the runtime writes only its own phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// Conditions, keyed by `type`; `Ready` summarises the object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::openmcp::common::conditions_schema")]
    pub conditions: Vec<Condition>,
    /// The objects the provider manages for this tenant, one entry each, with phase and
    /// location (written by the runtime from the tenant's resource sets).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<resources::ManagedResource>,
    /// The author's extra status fields.
    #[serde(flatten)]
    pub extra: X,
}

/// Reads a phase, mapping a phase the runtime does not write to `None` instead of failing.
fn lenient_phase<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Phase>, D::Error> {
    let phase: Option<String> = Option::deserialize(d)?;
    Ok(match phase.as_deref() {
        Some("Ready") => Some(Phase::Ready),
        Some("Progressing") => Some(Phase::Progressing),
        Some("Terminating") => Some(Phase::Terminating),
        _ => None,
    })
}

/// [`ServiceStatus`] as read strictly, the first attempt of its lenient `Deserialize`. Private,
/// so the public type has one way to be read. Its fields and their defaults mirror
/// `ServiceStatus`'s; the `From` below names every field, so a field added there and not here
/// does not compile.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StrictStatus<X> {
    #[serde(default)]
    observed_generation: Option<i64>,
    #[serde(default, deserialize_with = "lenient_phase")]
    phase: Option<Phase>,
    #[serde(default)]
    conditions: Vec<Condition>,
    #[serde(default)]
    resources: Vec<resources::ManagedResource>,
    #[serde(flatten)]
    extra: X,
}

impl<X> From<StrictStatus<X>> for ServiceStatus<X> {
    fn from(strict: StrictStatus<X>) -> Self {
        let StrictStatus {
            observed_generation,
            phase,
            conditions,
            resources,
            extra,
        } = strict;
        ServiceStatus {
            observed_generation,
            phase,
            conditions,
            resources,
            extra,
        }
    }
}

impl<'de, X: DeserializeOwned + Default> Deserialize<'de> for ServiceStatus<X> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Buffered, so that a failure can fall back instead of failing the object around it.
        let value = serde_json::Value::deserialize(d)?;
        Ok(match StrictStatus::<X>::deserialize(value) {
            Ok(strict) => strict.into(),
            Err(err) => {
                tracing::warn!(
                    error = %err,
                    "cannot read a Service API object's status; treating it as absent, the \
                     runtime rewrites it"
                );
                ServiceStatus::default()
            }
        })
    }
}

impl<X> ServiceStatus<X> {
    /// The condition of the given type, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phase_string_reads() {
        for (phase, read) in [
            ("Ready", Some(Phase::Ready)),
            ("Terminating", Some(Phase::Terminating)),
            ("", None),
            ("Failed", None),
        ] {
            let status: ServiceStatus =
                serde_json::from_value(serde_json::json!({ "phase": phase })).unwrap();
            assert_eq!(status.phase, read, "{phase:?}");
        }
        let status: ServiceStatus = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(status.phase, None);
        assert_eq!(status.observed_generation, None);
    }

    use crate::status::resources::{Location, ResourcePhase};
    use serde_json::json;

    /// A status as Go's service-provider-velero v1.1.2 writes it: `commonapi.Status` inline
    /// (`observedGeneration`, `phase`, `conditions` of `metav1.Condition`) and `resources` of
    /// `ManagedResource` (a `TypedObjectReference` without `apiGroup`, `phase` from its
    /// `InstancePhase` constants, `message`, `location` from its `ResourceLocation` constants).
    fn go_velero_status() -> serde_json::Value {
        json!({
            "observedGeneration": 3,
            "phase": "Progressing",
            "conditions": [{
                "type": "Ready",
                "status": "False",
                "observedGeneration": 3,
                "lastTransitionTime": "2026-12-04T10:00:00Z",
                "reason": "ReconcileError",
                "message": "resources contain reconcile errors",
            }],
            "resources": [
                { "kind": "Namespace", "name": "velero", "phase": "Ready",
                  "message": "Resource exists.", "location": "ManagedControlPlane" },
                { "kind": "Deployment", "name": "velero", "namespace": "velero-abc",
                  "phase": "Progressing", "message": "Waiting for all pods to become ready.",
                  "location": "WorkloadCluster" },
                { "kind": "Secret", "name": "pull", "namespace": "velero-abc",
                  "phase": "Pending", "message": "Resource has not been created yet.",
                  "location": "WorkloadCluster" },
                { "kind": "ServiceAccount", "name": "velero-server", "namespace": "velero",
                  "phase": "Unknown", "message": "No status function defined.",
                  "location": "ManagedControlPlane" },
                { "kind": "Deployment", "name": "velero", "namespace": "velero",
                  "phase": "Terminating", "message": "Deployment is terminating.",
                  "location": "ManagedControlPlane" },
                { "kind": "Job", "name": "x", "phase": "Failed" },
            ],
        })
    }

    #[test]
    fn a_go_providers_status_reads_in_full_and_writes_back_unchanged() {
        let wire = go_velero_status();
        let status: ServiceStatus = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(status.observed_generation, Some(3));
        assert_eq!(status.phase, Some(Phase::Progressing));
        assert_eq!(status.condition("Ready").unwrap().reason, "ReconcileError");
        let phases: Vec<ResourcePhase> = status.resources.iter().map(|r| r.phase).collect();
        assert_eq!(
            phases,
            [
                ResourcePhase::Ready,
                ResourcePhase::Progressing,
                ResourcePhase::Pending,
                ResourcePhase::Unknown,
                ResourcePhase::Terminating,
                ResourcePhase::Failed,
            ]
        );
        assert_eq!(
            status.resources[1].location,
            Some(Location::WorkloadCluster)
        );
        assert_eq!(serde_json::to_value(&status).unwrap(), wire);
    }

    #[test]
    fn resource_values_outside_gos_sets_read_instead_of_failing() {
        let status: ServiceStatus = serde_json::from_value(json!({
            "phase": "Ready",
            "resources": [{ "kind": "A", "name": "a", "phase": "Deleting", "location": "Elsewhere" }],
        }))
        .unwrap();
        assert_eq!(status.phase, Some(Phase::Ready));
        assert_eq!(status.resources[0].phase, ResourcePhase::Unknown);
        assert_eq!(status.resources[0].location, None);
        for phase in ResourcePhase::ALL {
            assert_eq!(ResourcePhase::parse(phase.as_str()), phase);
        }
    }

    /// An object around an unreadable status, as the generated Service API type holds it.
    #[derive(Debug, Deserialize)]
    struct Object {
        spec: serde_json::Value,
        status: Option<ServiceStatus>,
    }

    #[test]
    fn an_unreadable_status_reads_as_empty_and_the_object_still_decodes() {
        for status in [
            json!({ "observedGeneration": "three" }),
            json!({ "conditions": "none" }),
            json!({ "resources": [{ "kind": "A" }] }),
            json!("not an object"),
        ] {
            let object: Object =
                serde_json::from_value(json!({ "spec": { "v": 1 }, "status": status })).unwrap();
            assert_eq!(object.status, Some(ServiceStatus::default()), "{status}");
            assert_eq!(object.spec, json!({ "v": 1 }));
        }
    }

    /// An extra status whose field is required: a status without it (a Go provider's) reads as
    /// empty rather than failing the object.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    struct Strict {
        required: String,
    }

    #[test]
    fn an_extra_status_that_does_not_read_empties_the_status() {
        let status: ServiceStatus<Strict> = serde_json::from_value(go_velero_status()).unwrap();
        assert_eq!(status, ServiceStatus::default());
        let status: ServiceStatus<Strict> =
            serde_json::from_value(json!({ "phase": "Ready", "required": "x" })).unwrap();
        assert_eq!(status.extra.required, "x");
    }

    #[test]
    fn the_status_schema_has_no_enum_a_go_write_could_break() {
        fn enums(path: &str, v: &serde_json::Value, found: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(map) => {
                    for (k, v) in map {
                        if k == "enum" {
                            found.push(path.to_owned());
                        }
                        enums(&format!("{path}.{k}"), v, found);
                    }
                }
                serde_json::Value::Array(items) => {
                    for v in items {
                        enums(path, v, found);
                    }
                }
                _ => {}
            }
        }
        // The settings kube-derive generates a CRD's schema with.
        let schema = schemars::generate::SchemaSettings::openapi3()
            .with(|s| {
                s.inline_subschemas = true;
                s.meta_schema = None;
            })
            .with_transform(schemars::transform::AddNullable::default())
            .with_transform(kube::core::schema::StructuralSchemaRewriter)
            .with_transform(kube::core::schema::OptionalEnum)
            .into_generator()
            .into_root_schema_for::<ServiceStatus>();
        let mut found = Vec::new();
        enums("", &serde_json::to_value(&schema).unwrap(), &mut found);
        assert_eq!(found, Vec::<String>::new());
        let text = serde_json::to_string(&schema).unwrap();
        for known in ["Progressing", "Terminating", "Pending", "WorkloadCluster"] {
            assert!(text.contains(known), "the docs list {known}");
        }
    }
}
