//! Types the openMCP APIs share (`openmcp-operator/api/common`): references, role references,
//! OIDC provider configuration and the common status.

use k8s_openapi::api::rbac::v1::Subject;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A reference to an object in any namespace (`commonapi.ObjectReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct ObjectReference {
    /// Name is the name of the object.
    pub name: String,
    /// Namespace is the namespace of the object.
    pub namespace: String,
}

/// A reference to an object in the same namespace as the referring one
/// (`commonapi.LocalObjectReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct LocalObjectReference {
    /// Name of the referent.
    #[serde(default)]
    pub name: String,
}

/// The kind of role a [`RoleRef`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum RoleKind {
    /// A namespaced Role; the reference must name its namespace.
    Role,
    /// A ClusterRole; the reference must not name a namespace.
    ClusterRole,
}

/// A reference to an existing (Cluster)Role to bind (`commonapi.RoleRef`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct RoleRef {
    /// Name is the name of the role or cluster role to bind to the subjects.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Namespace is the namespace of the role to bind to the subjects.
    /// It must be set if the kind is 'Role' and may not be set if the kind is 'ClusterRole'.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Kind is the kind of the role to bind to the subjects.
    pub kind: RoleKind,
}

impl RoleRef {
    /// A reference to the ClusterRole `name`.
    pub fn cluster_role(name: impl Into<String>) -> Self {
        RoleRef {
            name: name.into(),
            namespace: String::new(),
            kind: RoleKind::ClusterRole,
        }
    }

    /// A reference to the Role `namespace/name`.
    pub fn role(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        RoleRef {
            name: name.into(),
            namespace: namespace.into(),
            kind: RoleKind::Role,
        }
    }
}

/// Subjects bound to roles (`commonapi.RoleBindings`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoleBindings {
    /// Subjects is a list of subjects that should be bound to the specified roles.
    /// The subjects' names will be prefixed with the username prefix of the OIDC provider.
    pub subjects: Vec<Subject>,
    /// RoleRefs is a list of (cluster) role references that the subjects should be bound to.
    pub role_refs: Vec<RoleRef>,
}

/// An OIDC provider the target cluster should trust (`commonapi.OIDCProviderConfig`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OidcProviderConfig {
    /// Name is the name of the OIDC provider; a valid Kubernetes name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Issuer is the issuer URL of the OIDC provider.
    pub issuer: String,
    /// ClientID is the client ID to use for the OIDC provider.
    #[serde(rename = "clientID")]
    pub client_id: String,
    /// GroupsClaim is the claim in the OIDC token that contains the groups (default `groups`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub groups_claim: String,
    /// GroupsPrefix is added to all group names when referenced in RBAC rules.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub groups_prefix: String,
    /// UsernameClaim is the claim in the OIDC token that contains the username (default `sub`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username_claim: String,
    /// UsernamePrefix is added to all usernames when referenced in RBAC rules.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username_prefix: String,
    /// ExtraScopes is a list of extra scopes that should be requested from the OIDC provider.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_scopes: Vec<String>,
    /// RoleBindings is a list of subjects with (cluster) role bindings that should be created for
    /// them.
    pub role_bindings: Vec<RoleBindings>,
}

/// The status every openMCP resource carries (`commonapi.Status`).
///
/// Both fields are required by the schema, as in Go, but read as zero values when absent, as Go's
/// `encoding/json` reads them: a status another controller wrote without them must not make the
/// whole object unreadable.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("required" = ["observedGeneration", "phase"]))]
pub struct CommonStatus {
    /// ObservedGeneration is the generation of this resource that was last reconciled by the
    /// controller.
    #[serde(default)]
    pub observed_generation: i64,
    /// Phase is the current phase of the resource.
    #[serde(default)]
    pub phase: String,
    /// Conditions contains the conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
}

impl CommonStatus {
    /// The condition of the given type, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// Schema of `status.conditions`: a list of `metav1.Condition` that is a map keyed by `type`, so
/// server-side apply merges conditions per type instead of replacing the list.
pub(crate) fn conditions_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema =
        generator.subschema_for::<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>>();
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        serde_json::json!(["type"]),
    );
    schema
}
