//! `apis.kcp.io/v1alpha1` APIResourceSchema: an immutable, named snapshot of one resource's schema
//! that an APIExport points at.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceConversion, CustomResourceDefinitionNames,
    CustomResourceSubresources, JSONSchemaProps, SelectableField,
};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// The spec of an APIResourceSchema: what a CRD spec says, except that each version's schema is
/// the bare OpenAPI schema (not wrapped in `openAPIV3Schema`). kcp rejects any change to it.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha1",
    kind = "APIResourceSchema",
    plural = "apiresourceschemas",
    schema = "disabled",
    doc = "An immutable snapshot of one resource's schema, named `<prefix>.<plural>.<group>`."
)]
#[serde(rename_all = "camelCase")]
pub struct APIResourceSchemaSpec {
    /// API group of the resource.
    pub group: String,
    /// Names of the resource, as in a CRD.
    pub names: CustomResourceDefinitionNames,
    /// `Namespaced` or `Cluster`.
    pub scope: String,
    /// The versions; exactly one has `storage: true`.
    pub versions: Vec<APIResourceVersion>,
    /// How objects convert between the versions; kcp requires it when there is more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversion: Option<CustomResourceConversion>,
}

/// One version of an [`APIResourceSchema`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIResourceVersion {
    /// Version name, e.g. `v1alpha1`.
    pub name: String,
    /// Whether the version is served.
    pub served: bool,
    /// Whether objects are stored in this version.
    pub storage: bool,
    /// Whether the version is deprecated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deprecated: bool,
    /// Warning returned to clients of a deprecated version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_warning: Option<String>,
    /// The OpenAPI v3 schema of the resource.
    pub schema: JSONSchemaProps,
    /// Status and scale subresources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresources: Option<CustomResourceSubresources>,
    /// Columns `kubectl get` shows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_printer_columns: Vec<CustomResourceColumnDefinition>,
    /// Fields usable in field selectors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectable_fields: Vec<SelectableField>,
}
