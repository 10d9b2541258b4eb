//! The status every Service API object carries, written by the runtime and never by the author.

pub(crate) mod write;

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Lifecycle phase of a Service API object, as the openMCP runtime reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceStatus<X = NoStatus> {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Ready, Progressing or Terminating. Any other string (a Go provider may have written
    /// `""` or `Failed`) reads as `None`, so the object still decodes; the runtime writes only
    /// its own phases.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_phase"
    )]
    pub phase: Option<Phase>,
    /// Conditions, keyed by `type`; `Ready` summarises the object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::status::conditions_schema")]
    pub conditions: Vec<Condition>,
    /// The objects the provider manages for this tenant, one entry each, with phase and
    /// location (written by the runtime from the tenant's resource sets).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<crate::resources::apply::ManagedResource>,
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

impl<X> ServiceStatus<X> {
    /// The condition of the given type, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// Schema of `status.conditions`: a list of `metav1.Condition` that is a map keyed by `type`, so
/// server-side apply merges conditions per type instead of replacing the list.
pub(crate) fn conditions_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = generator.subschema_for::<Vec<Condition>>();
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        serde_json::json!(["type"]),
    );
    schema
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
}
