//! `clusters.openmcp.cloud/v1alpha1`: the ClusterRequest a provider orders a cluster with, the
//! AccessRequest it orders credentials with, and the Cluster they resolve to. All three are
//! namespaced objects on the platform cluster.

// kube's `#[kube(printcolumn(..), shortname = ..)]` repeats arguments by design; clippy's
// duplicated-attributes lint mistakes the repetition for a mistake.
#![allow(clippy::duplicated_attributes)]
// `#[x_kube(validation = ..)]` makes kube's `KubeSchema` derive emit a private copy of the struct
// for schema generation, with the struct's span; the lint reports the copy on the public struct.
#![allow(unreachable_pub)]

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::duration::Duration;
use crate::openmcp::common::{
    CommonStatus, LocalObjectReference, ObjectReference, OidcProviderConfig, RoleRef,
};
use crate::openmcp::constants::{REQUEST_DENIED, REQUEST_GRANTED, REQUEST_PENDING};

/// What a ClusterRequest asks for. The whole spec is immutable.
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "clusters.openmcp.cloud",
    version = "v1alpha1",
    kind = "ClusterRequest",
    namespaced,
    status = "ClusterRequestStatus",
    shortname = "cr",
    shortname = "creq",
    label("openmcp.cloud/cluster", "platform"),
    printcolumn(name = "Purpose", type_ = "string", json_path = ".spec.purpose"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Cluster", type_ = "string", json_path = ".status.cluster.name"),
    printcolumn(
        name = "Cluster-NS",
        type_ = "string",
        json_path = ".status.cluster.namespace"
    ),
    selectable = ".spec.purpose",
    selectable = ".status.phase",
    doc = "ClusterRequest is the Schema for the clusters API",
    derive = "PartialEq",
    derive = "Default"
)]
#[x_kube(validation = Rule::new("self == oldSelf").message("spec is immutable"))]
#[serde(rename_all = "camelCase")]
pub struct ClusterRequestSpec {
    /// Purpose is the purpose of the requested cluster (`mcp`, `workload`, `onboarding`, …).
    #[schemars(length(min = 1))]
    pub purpose: String,
    /// WaitForClusterDeletion makes the request's deletion wait until the Cluster is deleted.
    /// Defaults to true for exclusive clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_for_cluster_deletion: Option<bool>,
}

/// The answer to a ClusterRequest.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[x_kube(validation = Rule::new("!has(oldSelf.cluster) || has(self.cluster)").message("cluster may not be removed once set"))]
#[serde(rename_all = "camelCase")]
pub struct ClusterRequestStatus {
    /// ObservedGeneration, Phase (`Pending`, `Granted`, `Denied`) and Conditions.
    #[serde(flatten)]
    pub common: CommonStatus,
    /// Cluster is the reference to the Cluster that was returned as a result of a granted request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("cluster is immutable"))]
    pub cluster: Option<ObjectReference>,
}

/// The answer phase of a ClusterRequest or AccessRequest.
pub trait RequestStatus {
    /// The phase; empty before the operator answered.
    fn phase(&self) -> &str;

    /// Whether the request was granted.
    fn is_granted(&self) -> bool {
        self.phase() == REQUEST_GRANTED
    }

    /// Whether the request was denied.
    fn is_denied(&self) -> bool {
        self.phase() == REQUEST_DENIED
    }

    /// Whether the request waits for an answer.
    fn is_pending(&self) -> bool {
        self.phase().is_empty() || self.phase() == REQUEST_PENDING
    }
}

impl RequestStatus for ClusterRequestStatus {
    fn phase(&self) -> &str {
        &self.common.phase
    }
}

/// Requested permissions: a Role (with a namespace) or ClusterRole with these rules, bound to
/// the created ServiceAccount (`PermissionsRequest`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionsRequest {
    /// Name is an optional name for the (Cluster)Role that will be created for the requested
    /// permissions; generated when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Namespace is the namespace for which the permissions are requested: empty for a
    /// ClusterRole, else a Role in that namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// DisableAutomaticNamespaceCreation stops the operator from creating `namespace` when it is
    /// missing. Defaults to false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_automatic_namespace_creation: bool,
    /// Rules are the requested RBAC rules.
    pub rules: Vec<PolicyRule>,
}

/// Token-based access: a ServiceAccount in the target cluster with these permissions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenConfig {
    /// Permissions are the requested permissions; Roles and ClusterRoles are created for them and
    /// bound to the ServiceAccount.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<PermissionsRequest>,
    /// RoleRefs are references to existing (Cluster)Roles that should be bound to the created
    /// serviceaccount.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub role_refs: Vec<RoleRef>,
}

/// The grants a provider picks from in `#[service_provider(mcp_access = ..)]`.
impl TokenConfig {
    /// The default grant in a tenant's MCP and workload cluster: one ClusterRole with every verb on
    /// every resource of every API group, and nothing else — no non-resource URLs and no binding of
    /// the cluster's own `cluster-admin` (which the Go template adds on top of the same rules, and
    /// which grows with whatever the cluster aggregates into it). A provider installs software the
    /// runtime cannot foresee (CRDs, RBAC, workloads), so fewer resource rules cannot be derived
    /// for it; an author who knows narrower ones declares them (`mcp_access = path::to::fn`).
    pub fn least_privilege() -> Self {
        TokenConfig {
            permissions: vec![PermissionsRequest {
                rules: vec![PolicyRule {
                    api_groups: Some(vec!["*".to_owned()]),
                    resources: Some(vec!["*".to_owned()]),
                    verbs: vec!["*".to_owned()],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            role_refs: Vec::new(),
        }
    }

    /// Adds a cluster-wide rule with `verbs` on `resource` of `group`, unless this config already
    /// grants them: by a binding of `cluster-admin`, or by a cluster-wide rule whose groups,
    /// resources and verbs include them (`*` included). A config that grants them stays as it is,
    /// so an AccessRequest the platform already granted is not asked for again.
    pub fn grant_unless_granted(&mut self, group: &str, resource: &str, verbs: &[&str]) {
        let admin = self
            .role_refs
            .iter()
            .any(|r| r.name == "cluster-admin" && r.namespace.is_empty());
        let has = |list: &Option<Vec<String>>, item: &str| {
            list.as_ref()
                .is_some_and(|l| l.iter().any(|x| x == "*" || x == item))
        };
        let granted = |rule: &PolicyRule| {
            has(&rule.api_groups, group)
                && has(&rule.resources, resource)
                && verbs
                    .iter()
                    .all(|v| rule.verbs.iter().any(|x| x == "*" || x == v))
        };
        let covered = admin
            || self
                .permissions
                .iter()
                .filter(|p| p.namespace.is_empty())
                .flat_map(|p| &p.rules)
                .any(granted);
        if covered {
            return;
        }
        self.permissions.push(PermissionsRequest {
            rules: vec![PolicyRule {
                api_groups: Some(vec![group.to_owned()]),
                resources: Some(vec![resource.to_owned()]),
                verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
                ..Default::default()
            }],
            ..Default::default()
        });
    }

    /// A binding of the cluster's `cluster-admin` ClusterRole only (`mcp_access = cluster_admin`):
    /// everything, including non-resource URLs.
    pub fn cluster_admin() -> Self {
        TokenConfig {
            permissions: Vec::new(),
            role_refs: vec![RoleRef::cluster_role("cluster-admin")],
        }
    }
}

/// OIDC-based access: the target cluster trusts an OIDC provider, with role bindings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OidcConfig {
    /// The provider and its role bindings.
    #[serde(flatten)]
    pub provider: OidcProviderConfig,
    /// Roles are additional (Cluster)Roles that should be created; they are not bound to anyone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<PermissionsRequest>,
}

/// What an AccessRequest asks for: credentials for the Cluster named by `clusterRef`, or the one
/// granted to the ClusterRequest named by `requestRef`; exactly one of `token` and `oidc`.
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "clusters.openmcp.cloud",
    version = "v1alpha1",
    kind = "AccessRequest",
    namespaced,
    status = "AccessRequestStatus",
    shortname = "ar",
    shortname = "areq",
    label("openmcp.cloud/cluster", "platform"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    selectable = ".status.phase",
    doc = "AccessRequest is the Schema for the accessrequests API",
    derive = "PartialEq",
    derive = "Default"
)]
#[x_kube(validation = Rule::new("!has(oldSelf.clusterRef) || has(self.clusterRef)").message("clusterRef may not be removed once set"))]
#[x_kube(validation = Rule::new("!has(oldSelf.requestRef) || has(self.requestRef)").message("requestRef may not be removed once set"))]
#[x_kube(validation = Rule::new("(has(self.token) && !has(self.oidc)) || (!has(self.token) && has(self.oidc))").message("exactly one of spec.token or spec.oidc must be set"))]
#[serde(rename_all = "camelCase")]
pub struct AccessRequestSpec {
    /// ClusterRef is the reference to the Cluster for which access is requested. If set,
    /// requestRef is ignored. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("clusterRef is immutable"))]
    pub cluster_ref: Option<ObjectReference>,
    /// RequestRef is the reference to the ClusterRequest for whose Cluster access is requested.
    /// Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("requestRef is immutable"))]
    pub request_ref: Option<ObjectReference>,
    /// Token is the configuration for token-based access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<TokenConfig>,
    /// OIDC is the configuration for OIDC-based access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc: Option<Box<OidcConfig>>,
    /// TTL is how long granted credentials stay valid before they are renewed (e.g. `24h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Duration>,
}

/// The answer to an AccessRequest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessRequestStatus {
    /// ObservedGeneration, Phase (`Pending`, `Granted`, `Denied`) and Conditions.
    #[serde(flatten)]
    pub common: CommonStatus,
    /// SecretRef names the Secret, in the AccessRequest's namespace, holding the credentials
    /// (`kubeconfig`, and for tokens `host`, `token`, `expirationTimestamp`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
}

impl RequestStatus for AccessRequestStatus {
    fn phase(&self) -> &str {
        &self.common.phase
    }
}

impl AccessRequest {
    /// Whether the request is granted for its current spec: `Granted` with `observedGeneration`
    /// equal to `metadata.generation`, what the Go runtime waits for.
    pub fn is_ready(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            s.is_granted()
                && self
                    .metadata
                    .generation
                    .is_some_and(|g| g == s.common.observed_generation)
        })
    }
}

impl ClusterRequest {
    /// Whether the request is granted.
    pub fn is_granted(&self) -> bool {
        self.status.as_ref().is_some_and(RequestStatus::is_granted)
    }
}

/// Whether a cluster is shared between tenants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Tenancy {
    /// The cluster belongs to one tenant.
    #[default]
    Exclusive,
    /// Several tenants share the cluster.
    Shared,
}

/// Kubernetes settings of a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct K8sConfiguration {
    /// Version is the k8s version of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A cluster the platform manages.
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "clusters.openmcp.cloud",
    version = "v1alpha1",
    kind = "Cluster",
    namespaced,
    status = "ClusterStatus",
    label("openmcp.cloud/cluster", "platform"),
    printcolumn(name = "Purposes", type_ = "string", json_path = ".spec.purposes"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".metadata.labels[\"clusters.openmcp.cloud/k8sversion\"]"
    ),
    printcolumn(
        name = "Provider",
        type_ = "string",
        json_path = ".metadata.labels[\"clusters.openmcp.cloud/provider\"]"
    ),
    printcolumn(
        name = "Profile",
        type_ = "string",
        json_path = ".spec.profile",
        priority = 10
    ),
    printcolumn(
        name = "Info",
        type_ = "string",
        json_path = ".metadata.annotations[\"clusters.openmcp.cloud/providerinfo\"]",
        priority = 10
    ),
    printcolumn(
        name = "APIServer",
        type_ = "string",
        json_path = ".status.apiServer",
        priority = 10
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    selectable = ".spec.profile",
    doc = "Cluster is the Schema for the clusters API",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Profile is a reference to the cluster provider. Immutable.
    #[x_kube(validation = Rule::new("self == oldSelf").message("profile is immutable"))]
    pub profile: String,
    /// ClusterConfigs references provider-specific cluster configuration objects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_configs: Vec<LocalObjectReference>,
    /// Kubernetes configuration for the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<K8sConfiguration>,
    /// Purposes lists the purposes this cluster is intended for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub purposes: Vec<String>,
    /// Tenancy is the tenancy model of the cluster.
    pub tenancy: Tenancy,
}

/// The observed state of a Cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// ObservedGeneration, Phase and Conditions.
    #[serde(flatten)]
    pub common: CommonStatus,
    /// APIServer is the API server endpoint of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server: Option<String>,
    /// Further API server endpoints by name; `apiserver-internal` is the one workloads inside the
    /// platform reach the cluster at. Shape inferred from `openmcp.md` §5 (Go's local-access
    /// wrapper reads `status.endpoints["apiserver-internal"]`), not read in the Go source.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, String>,
    /// ProviderStatus is the provider-specific status of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::openmcp::clusters::preserve_unknown_object")]
    pub provider_status: Option<Value>,
}

/// The endpoint name of the API server as reached from inside the platform.
pub const API_SERVER_INTERNAL_ENDPOINT: &str = "apiserver-internal";

impl Cluster {
    /// How many ClusterRequests point at this cluster: its `request.clusters.openmcp.cloud/<uid>`
    /// finalizers, counted once each (`GetTenancyCount`).
    pub fn tenancy_count(&self) -> usize {
        let prefix = crate::openmcp::constants::REQUEST_FINALIZER_ON_CLUSTER_PREFIX;
        let mut uids: Vec<&str> = self
            .metadata
            .finalizers
            .iter()
            .flatten()
            .filter_map(|f| f.strip_prefix(prefix))
            .collect();
        uids.sort_unstable();
        uids.dedup();
        uids.len()
    }
}

/// Schema of a free-form object: `type: object` with `x-kubernetes-preserve-unknown-fields`.
pub fn preserve_unknown_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_added_only_where_it_is_missing() {
        let mut everything = TokenConfig::least_privilege();
        everything.grant_unless_granted("velero.io", "backups", &["list", "watch"]);
        assert_eq!(everything, TokenConfig::least_privilege());

        let mut admin = TokenConfig::cluster_admin();
        admin.grant_unless_granted("velero.io", "backups", &["list", "watch"]);
        assert_eq!(admin, TokenConfig::cluster_admin());

        let mut narrow = TokenConfig {
            permissions: vec![PermissionsRequest {
                rules: vec![PolicyRule {
                    api_groups: Some(vec!["velero.io".into()]),
                    resources: Some(vec!["backups".into()]),
                    verbs: vec!["list".into()],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            role_refs: Vec::new(),
        };
        narrow.grant_unless_granted("velero.io", "backups", &["list", "watch"]);
        assert_eq!(narrow.permissions.len(), 2);
        let added = &narrow.permissions[1].rules[0];
        assert_eq!(added.verbs, ["list", "watch"]);
        assert_eq!(
            added.resources.as_deref(),
            Some(&["backups".to_owned()][..])
        );
        let again = narrow.clone();
        narrow.grant_unless_granted("velero.io", "backups", &["watch"]);
        assert_eq!(narrow, again);
    }
}
