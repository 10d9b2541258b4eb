//! `apis.kcp.io/v1alpha2` APIExport, kcp's storage version: resources are listed with their group
//! and storage, and permission claims carry verbs.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

pub use super::v1alpha1::{APIExportStatus, Identity, SecretReference, VirtualWorkspace};

/// Spec of an APIExport: the resources it offers and what it may touch in consumer workspaces.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha2",
    kind = "APIExport",
    plural = "apiexports",
    status = "APIExportStatus",
    schema = "disabled",
    doc = "Offers resources to other workspaces, which bind them with an APIBinding."
)]
#[serde(rename_all = "camelCase")]
pub struct APIExportSpec {
    /// The exported resources, each pointing at an APIResourceSchema.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceSchema>,
    /// The Secret whose key defines the export's identity; kcp creates one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// Resources in consumer workspaces the provider asks to access.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission_claims: Vec<PermissionClaim>,
}

/// One exported resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSchema {
    /// Plural resource name; the schema name ends in `.<name>.<group>`.
    pub name: String,
    /// API group.
    pub group: String,
    /// Name of the APIResourceSchema.
    pub schema: String,
    /// How kcp stores the objects; `crd: {}` for ordinary storage.
    pub storage: ResourceSchemaStorage,
}

/// Storage of an exported resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceSchemaStorage {
    /// Ordinary CRD-like storage (serialized as `{}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crd: Option<CrdStorage>,
}

/// Marker for CRD storage: an empty object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrdStorage {}

/// Access the provider asks for to a resource in each consumer workspace; the consumer accepts
/// or rejects it in its APIBinding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionClaim {
    /// API group; empty for the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Plural resource name.
    pub resource: String,
    /// Verbs the provider uses on the resource.
    pub verbs: Vec<String>,
    /// Identity hash of the export that owns the resource; empty for built-in resources.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
}

/// Spec of an APIBinding: the export a consumer workspace binds and the claims it answers. The
/// runtime only reads bindings (through the virtual workspace, where they are read-only).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha2",
    kind = "APIBinding",
    plural = "apibindings",
    status = "APIBindingStatus",
    schema = "disabled",
    doc = "Binds a consumer workspace to an APIExport, serving its resources there."
)]
#[serde(rename_all = "camelCase")]
pub struct APIBindingSpec {
    /// The export this binding refers to.
    #[serde(default)]
    pub reference: BindingReference,
}

/// What an APIBinding binds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindingReference {
    /// The export, by workspace path and name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<super::v1alpha1::ExportReference>,
}

/// Status of an APIBinding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIBindingStatus {
    /// Logical cluster name of the export's workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_export_cluster_name: Option<String>,
    /// `Binding`, then `Bound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Conditions; `Ready` says whether the binding is usable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<super::Condition>,
}

impl APIBinding {
    /// Whether the binding's `Ready` condition is `True`.
    pub fn is_ready(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
    }
}
