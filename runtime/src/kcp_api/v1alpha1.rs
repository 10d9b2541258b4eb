//! `apis.kcp.io/v1alpha1` APIExport, for kcp releases before v1alpha2: resources are listed by
//! schema name and claims have no verbs.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::Condition;

/// Spec of an APIExport.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha1",
    kind = "APIExport",
    plural = "apiexports",
    status = "APIExportStatus",
    schema = "disabled",
    doc = "Offers resources to other workspaces, which bind them with an APIBinding."
)]
#[serde(rename_all = "camelCase")]
pub struct APIExportSpec {
    /// Names of the exported APIResourceSchemas (a set).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latest_resource_schemas: Vec<String>,
    /// The Secret whose key defines the export's identity; kcp creates one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// Resources in consumer workspaces the provider asks to access.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission_claims: Vec<PermissionClaim>,
}

/// Where an export's identity key lives.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// The Secret holding `key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
}

/// A Secret by namespace and name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretReference {
    /// Namespace of the Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Access the provider asks for to a resource in each consumer workspace (v1alpha1 form: all
/// verbs, all objects or selected ones).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionClaim {
    /// API group; empty for the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Plural resource name.
    pub resource: String,
    /// Claim every object of the resource (exclusive with `resourceSelector`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// Identity hash of the export that owns the resource; empty for built-in resources.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
}

/// Status of an APIExport (the same in v1alpha1 and v1alpha2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIExportStatus {
    /// Hex SHA-256 of the identity key; bindings and claims refer to the export by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_hash: Option<String>,
    /// Conditions such as `IdentityValid`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Deprecated virtual workspace URLs; use the APIExportEndpointSlice instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub virtual_workspaces: Vec<VirtualWorkspace>,
}

/// A deprecated virtual workspace URL of an export.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VirtualWorkspace {
    /// The URL.
    pub url: String,
}

/// Spec of an APIExportEndpointSlice: which export's virtual-workspace URLs it lists.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha1",
    kind = "APIExportEndpointSlice",
    plural = "apiexportendpointslices",
    status = "APIExportEndpointSliceStatus",
    schema = "disabled",
    doc = "The virtual-workspace URLs of an APIExport, one per shard with at least one APIBinding to it."
)]
#[serde(rename_all = "camelCase")]
pub struct APIExportEndpointSliceSpec {
    /// The export (immutable).
    #[serde(default)]
    pub export: ExportReference,
}

/// An APIExport by workspace path and name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportReference {
    /// Workspace path of the export; empty for the slice's own workspace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Name of the export.
    #[serde(default)]
    pub name: String,
}

/// Status of an APIExportEndpointSlice.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIExportEndpointSliceStatus {
    /// The virtual-workspace URLs: `<shard>/services/apiexport/<export cluster>/<export>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<Endpoint>,
    /// Conditions such as `APIExportValid`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// One virtual-workspace URL of an export.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// The URL, used verbatim.
    pub url: String,
}
