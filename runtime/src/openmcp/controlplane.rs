//! `core.open-control-plane.io/v2alpha1` ControlPlane: an end user's managed control plane, a
//! namespaced object on the onboarding cluster. Service API objects are named like the
//! ControlPlane they serve.

// kube's `#[kube(printcolumn(..), shortname = ..)]` repeats arguments by design; clippy's
// duplicated-attributes lint mistakes the repetition for a mistake.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::openmcp::clusters::PermissionsRequest;
use crate::openmcp::common::{CommonStatus, LocalObjectReference, RoleBindings, RoleRef};

/// What the end user asks of their control plane.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.open-control-plane.io",
    version = "v2alpha1",
    kind = "ControlPlane",
    namespaced,
    status = "ControlPlaneStatus",
    shortname = "cp",
    shortname = "ctrlp",
    label("openmcp.cloud/cluster", "onboarding"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    selectable = ".status.phase",
    derive = "PartialEq",
    derive = "Default"
)]
pub struct ControlPlaneSpec {
    /// IAM contains the access management configuration for the ControlPlane.
    pub iam: Iam,
}

/// Access management of a ControlPlane.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Iam {
    /// OIDC is the OIDC-based access configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc: Option<IamOidc>,
    /// Tokens is a list of token-based access configurations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<IamToken>,
}

/// OIDC access to a ControlPlane.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IamOidc {
    /// DefaultProvider is the platform's standard OIDC provider, enabled for every ControlPlane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_provider: Option<DefaultOidcProvider>,
    /// ExtraProviders are additional OIDC providers for this ControlPlane.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_providers: Vec<ExtraOidcProvider>,
}

/// Role bindings for the platform's standard OIDC provider; none disables it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultOidcProvider {
    /// RoleBindings binds subjects of the standard provider to roles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub role_bindings: Vec<RoleBindings>,
}

/// An additional OIDC provider of a ControlPlane.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtraOidcProvider {
    /// Name of the provider; also the prefix (`<name>:`) of its users and groups.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Issuer URL.
    #[schemars(length(min = 1))]
    pub issuer: String,
    /// Client ID.
    #[serde(rename = "clientID")]
    #[schemars(length(min = 1))]
    pub client_id: String,
    /// Claim holding the groups (default `groups`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub groups_claim: String,
    /// Claim holding the username (default `sub`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username_claim: String,
    /// Extra scopes to request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_scopes: Vec<String>,
    /// Role bindings of the provider's subjects.
    pub role_bindings: Vec<RoleBindings>,
}

/// A static token for a ControlPlane: a ServiceAccount with these permissions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IamToken {
    /// Name of this token configuration; unique in the ControlPlane, names its Secret.
    pub name: String,
    /// Permissions to create and bind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<PermissionsRequest>,
    /// Existing (Cluster)Roles to bind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub role_refs: Vec<RoleRef>,
}

/// The observed state of a ControlPlane.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ControlPlaneStatus {
    /// ObservedGeneration, Phase and Conditions.
    #[serde(flatten)]
    pub common: CommonStatus,
    /// Access maps OIDC provider names (`default` for the standard one, or for token access) to
    /// the Secrets holding their kubeconfigs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub access: BTreeMap<String, LocalObjectReference>,
}
