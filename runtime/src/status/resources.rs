//! The `status.resources` entries: one per managed object, with its phase and the cluster it lives
//! in, as the Go providers write them; and the sink a reconcile's sets report them into.

use std::sync::{Arc, Mutex};

use crate::observed::TenantView;
use crate::waits::Wait;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which of the tenant's clusters an object lives in, as the Go providers' `status.resources`
/// name it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum Location {
    /// The tenant's control plane: the MCP cluster, or the kcp workspace.
    ManagedControlPlane,
    /// The workload cluster the provider runs the tenant's workers on.
    WorkloadCluster,
    /// The platform cluster.
    PlatformCluster,
}

impl Location {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Location::ManagedControlPlane => "ManagedControlPlane",
            Location::WorkloadCluster => "WorkloadCluster",
            Location::PlatformCluster => "PlatformCluster",
        }
    }

    /// For messages: "tenant cluster", "workload cluster", "platform cluster".
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Location::ManagedControlPlane => "tenant cluster",
            Location::WorkloadCluster => "workload cluster",
            Location::PlatformCluster => "platform cluster",
        }
    }
}

/// Phase of one managed object in `status.resources`: the Go providers' `InstancePhase` values
/// (service-provider-velero `api/v1alpha1/velero_types.go`: Pending, Progressing, Ready, Failed,
/// Terminating, Unknown), so a status a Go provider wrote reads, and reads back, unchanged.
///
/// The runtime itself reports `Ready`, `Pending`, `Failed` and `Terminating`; `Progressing` and
/// `Unknown` are read from Go providers. On the wire it is a plain string (the CRD has no enum, as
/// under Go's controller-gen CRD, so a Go provider's status write is never refused): a value
/// outside Go's set reads as `Unknown` instead of failing the whole object, and the runtime
/// rewrites it on its next status write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourcePhase {
    /// The object exists and is ready.
    Ready,
    /// Not applied yet, or applied and not ready yet (Go: not created yet).
    Pending,
    /// Go: created and not ready yet (e.g. a Deployment waiting for its pods). The runtime
    /// reports this as `Pending`.
    Progressing,
    /// The object reports a failure.
    Failed,
    /// Being deleted.
    Terminating,
    /// Go: the provider has no status function for the object; also what any value outside
    /// Go's set reads as.
    Unknown,
}

impl ResourcePhase {
    /// Every phase, in the order of Go's constants.
    pub const ALL: [ResourcePhase; 6] = [
        ResourcePhase::Pending,
        ResourcePhase::Progressing,
        ResourcePhase::Ready,
        ResourcePhase::Failed,
        ResourcePhase::Terminating,
        ResourcePhase::Unknown,
    ];

    /// The phase as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourcePhase::Ready => "Ready",
            ResourcePhase::Pending => "Pending",
            ResourcePhase::Progressing => "Progressing",
            ResourcePhase::Failed => "Failed",
            ResourcePhase::Terminating => "Terminating",
            ResourcePhase::Unknown => "Unknown",
        }
    }

    /// The phase written as `s`; `Unknown` for a value outside Go's set.
    pub fn parse(s: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .unwrap_or(ResourcePhase::Unknown)
    }
}

impl Serialize for ResourcePhase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResourcePhase {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Any string reads: the status is the runtime's own output, rewritten on the next
        // write; refusing a value would make the whole object unreadable.
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        Ok(ResourcePhase::parse(&s))
    }
}

impl JsonSchema for ResourcePhase {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ResourcePhase".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        known_values_schema(
            "Phase of the object: Ready, Pending, Failed or Terminating as this runtime writes \
             it; Progressing and Unknown as Go providers write it.",
        )
    }
}

/// A string field the runtime writes from a known set of values and reads leniently: no `enum`
/// in the schema, so the API server never refuses what a Go provider writes there.
pub(crate) fn known_values_schema(description: &str) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "description": description,
    })
}

/// Reads `status.resources[].location`: a value the runtime does not know (another provider's
/// cluster name) reads as absent instead of failing the whole object. [`Location`] itself stays
/// strict, since the set inventories key members by it.
fn lenient_location<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Location>, D::Error> {
    let location: Option<std::borrow::Cow<'de, str>> = Option::deserialize(d)?;
    Ok(location.and_then(|l| {
        [
            Location::ManagedControlPlane,
            Location::WorkloadCluster,
            Location::PlatformCluster,
        ]
        .into_iter()
        .find(|known| known.as_str() == l)
    }))
}

/// `status.resources[].location`: a string without `enum` (documented on the field), nullable
/// like every optional field of the CRD.
fn location_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "nullable": true,
    })
}

/// One managed object in a Service API object's `status.resources`: the shape of
/// `ManagedResource` in service-provider-velero and -external-secrets (a `TypedObjectReference`
/// inline, then phase, message and location), so dashboards built for them keep working.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedResource {
    /// API group; absent for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_group: Option<String>,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
    /// Namespace; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Ready, Pending, Failed or Terminating; Go providers also write Progressing and Unknown.
    pub phase: ResourcePhase,
    /// What the phase means for this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The cluster it lives in: ManagedControlPlane (the tenant's control plane),
    /// WorkloadCluster or PlatformCluster.
    // A name the runtime does not know reads as `None` (see `lenient_location`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_location"
    )]
    #[schemars(schema_with = "location_schema")]
    pub location: Option<Location>,
}

impl ManagedResource {
    /// `Kind namespace/name on the <location>`, for messages.
    pub fn describe(&self) -> String {
        let mut out = self.kind.clone();
        out.push(' ');
        if let Some(ns) = &self.namespace {
            out.push_str(ns);
            out.push('/');
        }
        out.push_str(&self.name);
        if let Some(location) = self.location {
            out.push_str(" on the ");
            out.push_str(location.describe());
        }
        out
    }
}

/// Where a [`Context`](crate::Context)'s sets report their members, for the runtime to write
/// into `status.resources`.
#[derive(Clone, Default)]
pub struct ResourceSink {
    reported: Arc<Mutex<Reported>>,
    /// The tenant's set members as the runtime's watches see them; `None` outside the runtime
    /// (a set then reads every member).
    observed: Option<TenantView>,
}

impl std::fmt::Debug for ResourceSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceSink")
            .field("reported", &self.reported)
            .field("observed", &self.observed.is_some())
            .finish()
    }
}

/// Each set's members and the objects it waits for, by set name.
#[derive(Debug, Default)]
struct Reported {
    sets: Vec<(String, Vec<ManagedResource>)>,
    waits: Vec<(String, Vec<Wait>)>,
    /// The soonest a member asked the tenant to be reconciled again (a token to renew).
    revisit: Option<std::time::Duration>,
}

impl ResourceSink {
    /// A sink for one reconcile of a tenant whose members `observed` sees.
    pub(crate) fn observing(observed: TenantView) -> Self {
        ResourceSink {
            reported: Arc::default(),
            observed: Some(observed),
        }
    }

    /// The tenant's set members as the runtime's watches see them.
    pub(crate) fn observed(&self) -> Option<&TenantView> {
        self.observed.as_ref()
    }

    /// Records what `set`'s last apply or delete reported: its members, and the objects it
    /// waits for.
    pub(crate) fn record(&self, set: &str, resources: Vec<ManagedResource>, waits: Vec<Wait>) {
        let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        match reported.sets.iter_mut().find(|(name, _)| name == set) {
            Some((_, old)) => *old = resources,
            None => reported.sets.push((set.to_owned(), resources)),
        }
        match reported.waits.iter_mut().find(|(name, _)| name == set) {
            Some((_, old)) => *old = waits,
            None => reported.waits.push((set.to_owned(), waits)),
        }
    }

    /// Every member reported so far, set by set in the order they were first applied; `None`
    /// when no set reported.
    pub fn take(&self) -> Option<Vec<ManagedResource>> {
        let sets =
            std::mem::take(&mut self.reported.lock().unwrap_or_else(|e| e.into_inner()).sets);
        (!sets.is_empty()).then(|| sets.into_iter().flat_map(|(_, r)| r).collect())
    }

    /// Asks for the tenant to be reconciled again within `after`, whatever the poll interval
    /// (a member that expires, such as a worker's token); the soonest request wins.
    pub(crate) fn revisit_within(&self, after: std::time::Duration) {
        let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        reported.revisit = Some(reported.revisit.map_or(after, |r| r.min(after)));
    }

    /// The soonest revisit asked for since the last call.
    pub(crate) fn take_revisit(&self) -> Option<std::time::Duration> {
        self.reported
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .revisit
            .take()
    }

    /// The objects the sets wait for, to watch until the next reconcile.
    pub(crate) fn take_waits(&self) -> Vec<Wait> {
        let waits = std::mem::take(
            &mut self
                .reported
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .waits,
        );
        waits.into_iter().flat_map(|(_, w)| w).collect()
    }
}
