//! Every permission the runtime uses, in one place: the rules for each cluster it acts in and the
//! permission claims its APIExport asks of consumer workspaces.
//!
//! The lists are exact: each verb here is one the runtime issues, and nothing is a wildcard. When
//! the runtime starts using a new verb or resource, it is added here and nowhere else; the
//! manifests (ClusterRoles, APIExport claims) and the onboarding AccessRequest follow.

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::kcp_api::v1alpha2::PermissionClaim;
use crate::provider::ProviderInfo;

/// A place the runtime acts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    /// The platform cluster: ProviderConfig, access objects, kubeconfig Secrets, `init`.
    Platform,
    /// The onboarding cluster: the Service API objects of standard-mode tenants.
    Onboarding,
    /// The kcp workspace holding the provider's APIExport.
    KcpProviderWorkspace,
}

impl Place {
    /// Every place, in a fixed order.
    pub const ALL: [Place; 3] = [
        Place::Platform,
        Place::Onboarding,
        Place::KcpProviderWorkspace,
    ];

    /// `platform`, `onboarding` or `kcp`: the value of the `openmcp.cloud/cluster` label where
    /// openMCP defines one, and the directory name in the manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Place::Platform => crate::openmcp::constants::PURPOSE_PLATFORM,
            Place::Onboarding => crate::openmcp::constants::PURPOSE_ONBOARDING,
            Place::KcpProviderWorkspace => "kcp",
        }
    }
}

const GET: &str = "get";
const LIST: &str = "list";
const WATCH: &str = "watch";
const CREATE: &str = "create";
const UPDATE: &str = "update";
const PATCH: &str = "patch";
const DELETE: &str = "delete";

const CORE: &str = "";
const OPENMCP_CLUSTERS: &str = crate::openmcp::constants::CLUSTERS_GROUP;
const OPENMCP: &str = crate::openmcp::constants::OPENMCP_GROUP;
const COORDINATION: &str = "coordination.k8s.io";
// kube-runtime's event recorder writes `events.k8s.io/v1` Events (create, then patch for a series).
const EVENTS: &str = "events.k8s.io";
const APIEXTENSIONS: &str = "apiextensions.k8s.io";
const RBAC: &str = "rbac.authorization.k8s.io";
const KCP_APIS: &str = crate::kcp_api::GROUP;
const AUTHENTICATION: &str = "authentication.k8s.io";

fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..Default::default()
    }
}

/// The rules the runtime needs in `place`.
///
/// For the kcp provider workspace, `api_export_name` is the APIExport whose virtual workspace the
/// runtime uses (`apiexports/content` is granted for that export only).
pub(crate) fn rules(info: &ProviderInfo, place: Place, api_export_name: &str) -> Vec<PolicyRule> {
    match place {
        Place::Platform => platform_rules(info),
        Place::Onboarding => onboarding_rules(info),
        Place::KcpProviderWorkspace => kcp_provider_workspace_rules(api_export_name),
    }
}

/// Platform cluster: the provider's own ProviderConfig (watched by name; its status says whether
/// it is valid); ClusterRequests and AccessRequests for MCP, workload and onboarding access
/// (created, watched, deleted, their finalizer removed by patch; read after a create conflict);
/// the kubeconfig Secrets they produce (watched metadata-only, read on use) and the
/// Secrets/ConfigMaps a ProviderConfig refers to; the tenant namespaces `mcp--<uuid>` (created
/// when missing); kcp mode's leader election Lease (created, read and updated as client-go does);
/// and for `init`, the ServiceProvider status (registering the Service API GVK) and the
/// ProviderConfig CRD (created or updated, watched until Established, its objects migrated to
/// its storage version).
pub(crate) fn platform_rules(info: &ProviderInfo) -> Vec<PolicyRule> {
    vec![
        rule(info.group, &["providerconfigs"], &[GET, LIST, WATCH]),
        rule(info.group, &["providerconfigs/status"], &[PATCH]),
        rule(
            OPENMCP_CLUSTERS,
            &["clusterrequests", "accessrequests"],
            &[GET, LIST, WATCH, CREATE, PATCH, DELETE],
        ),
        rule(CORE, &["secrets", "configmaps"], &[GET, LIST, WATCH]),
        rule(CORE, &["namespaces"], &[CREATE]),
        rule(COORDINATION, &["leases"], &[GET, CREATE, UPDATE]),
        rule(OPENMCP, &["serviceproviders"], &[GET]),
        rule(OPENMCP, &["serviceproviders/status"], &[PATCH]),
        rule(
            APIEXTENSIONS,
            &["customresourcedefinitions"],
            &[GET, LIST, WATCH, CREATE, UPDATE],
        ),
        // `init`'s storage migration: ProviderConfigs written back, the CRD's stored versions
        // trimmed.
        rule(info.group, &["providerconfigs"], &[UPDATE]),
        crd_status_rule(&format!("providerconfigs.{}", info.group)),
    ]
}

/// Onboarding cluster, as `run` uses it: the Service API objects (watched; the finalizer and the
/// operation annotation written by patch) and their status (patched), Events on them, and
/// standard mode's leader election Lease (where a Go provider's manager holds it; created, read
/// and updated as client-go does) and its namespace, created when the onboarding cluster lacks
/// the provider's namespace. This is what `run` asks for in its `<group>--onboarding-run`
/// AccessRequest.
pub(crate) fn onboarding_run_rules(info: &ProviderInfo) -> Vec<PolicyRule> {
    let status = format!("{}/status", info.plural);
    vec![
        rule(info.group, &[info.plural], &[GET, LIST, WATCH, PATCH]),
        rule(info.group, &[&status], &[PATCH]),
        rule(EVENTS, &["events"], &[CREATE, PATCH]),
        rule(COORDINATION, &["leases"], &[GET, CREATE, UPDATE]),
        rule(CORE, &["namespaces"], &[CREATE]),
    ]
}

/// Onboarding cluster, as `init` uses it: the Service API CRD (created or updated, watched until
/// Established, its objects migrated to its storage version). This is what `init` asks for in its `<group>--onboarding-init` AccessRequest.
pub(crate) fn onboarding_init_rules(info: &ProviderInfo) -> Vec<PolicyRule> {
    vec![rule(
        APIEXTENSIONS,
        &["customresourcedefinitions"],
        &[GET, LIST, WATCH, CREATE, UPDATE],
    )]
    .into_iter()
    .chain(storage_migration_rules(info))
    .collect()
}

/// Onboarding cluster, for the storage migration of the Service API's objects: the objects listed
/// and written back, the CRD's stored versions trimmed. `init` migrates; a provider converting a
/// version in Rust migrates in `run` instead, once its conversion webhook serves, and asks for
/// these and for reading its CRD in its `<group>--onboarding-run` AccessRequest.
pub(crate) fn storage_migration_rules(info: &ProviderInfo) -> Vec<PolicyRule> {
    vec![
        rule(info.group, &[info.plural], &[LIST, UPDATE]),
        crd_status_rule(&service_crd_name(info)),
    ]
}

/// Reading the Service API CRD only (`run` reads it before migrating its objects).
pub(crate) fn service_crd_read_rule(info: &ProviderInfo) -> PolicyRule {
    PolicyRule {
        resource_names: Some(vec![service_crd_name(info)]),
        ..rule(APIEXTENSIONS, &["customresourcedefinitions"], &[GET])
    }
}

fn service_crd_name(info: &ProviderInfo) -> String {
    format!("{}.{}", info.plural, info.group)
}

/// For a provider that converts a version in Rust, `init` makes the conversion webhook's
/// certificate Secret when it does not exist (and reads it with the `get` every provider has).
pub(crate) fn webhook_certificate_rule() -> PolicyRule {
    rule(CORE, &["secrets"], &[CREATE])
}

/// Patching the status of CRD `name` only (`init` trims its stored versions).
fn crd_status_rule(name: &str) -> PolicyRule {
    PolicyRule {
        resource_names: Some(vec![name.to_owned()]),
        ..rule(
            APIEXTENSIONS,
            &["customresourcedefinitions/status"],
            &[PATCH],
        )
    }
}

/// Onboarding cluster, everything: what `run` and `init` use, for a platform that grants the
/// provider's onboarding identity with the generated ClusterRole instead of AccessRequests.
pub(crate) fn onboarding_rules(info: &ProviderInfo) -> Vec<PolicyRule> {
    let mut rules = onboarding_run_rules(info);
    rules.extend(onboarding_init_rules(info));
    rules
}

/// kcp provider workspace: ask who the provider is (a SelfSubjectReview, for the grant that lets
/// it mint tokens in consumer workspaces); follow the export's endpoint slice; provision the
/// content-addressed APIResourceSchema (created once, never updated: kcp forbids it) and upsert
/// the APIExport (read, created, or merge-patched); and use the export's virtual workspace.
///
/// kcp authorizes each virtual-workspace request by `apiexports/content` on the export with the
/// request's own verb, so those verbs are the union of what the runtime does through it: read,
/// update and patch Service API objects and their status, and the claimed resources' verbs.
pub(crate) fn kcp_provider_workspace_rules(api_export_name: &str) -> Vec<PolicyRule> {
    vec![
        rule(AUTHENTICATION, &["selfsubjectreviews"], &[CREATE]),
        rule(KCP_APIS, &["apiexportendpointslices"], &[GET, LIST, WATCH]),
        rule(KCP_APIS, &["apiresourceschemas"], &[CREATE]),
        rule(KCP_APIS, &["apiexports"], &[GET, CREATE, PATCH]),
        PolicyRule {
            resource_names: Some(vec![api_export_name.to_owned()]),
            ..rule(
                KCP_APIS,
                &["apiexports/content"],
                &virtual_workspace_verbs(),
            )
        },
    ]
}

/// Verbs the runtime uses on Service API objects in consumer workspaces, through the virtual
/// workspace: the same as on the onboarding cluster.
const SERVICE_OBJECT_VERBS: [&str; 5] = [GET, LIST, WATCH, UPDATE, PATCH];

/// Every verb the runtime sends to the virtual workspace, in a fixed order.
fn virtual_workspace_verbs() -> Vec<&'static str> {
    let claimed = claims();
    [GET, LIST, WATCH, CREATE, UPDATE, PATCH, DELETE]
        .into_iter()
        .filter(|verb| {
            SERVICE_OBJECT_VERBS.contains(verb)
                || claimed.iter().any(|c| c.verbs.iter().any(|v| v == verb))
        })
        .collect()
}

fn claim(group: &str, resource: &str, verbs: &[&str]) -> PermissionClaim {
    PermissionClaim {
        group: group.to_owned(),
        resource: resource.to_owned(),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        identity_hash: String::new(),
    }
}

/// The permission claims of the provider's APIExport: what the runtime does in each consumer
/// workspace through the virtual workspace.
///
/// In kcp mode the tenant cluster handed to the author is the consumer workspace itself, reached
/// with a ServiceAccount token minted there (`crate::modes::kcp::credentials`). The virtual workspace
/// has no `serviceaccounts/token` subresource and the provider's own identity is foreign in the
/// consumer workspace, so the runtime sets that access up through claimed resources:
///
/// - `namespaces` create: `openmcp-system`, which holds the runtime's ServiceAccount, when missing;
/// - `serviceaccounts` create/delete: that ServiceAccount (deleting it revokes every token);
/// - `clusterroles` create/delete, plus `escalate` and `bind`: the role that lets the provider's
///   identity `create` `serviceaccounts/token` for that ServiceAccount (and `access` the
///   workspace, for identities from outside kcp), and binding the ServiceAccount to
///   `cluster-admin` — permissions the provider's identity does not hold itself;
/// - `clusterrolebindings` create/delete: those two bindings;
/// - `events` (`events.k8s.io`) create/patch: events on the tenant's Service API object.
///
/// Objects that exist already are kept (a create answered 409), so no `get` or `update` is needed.
pub(crate) fn claims() -> Vec<PermissionClaim> {
    vec![
        claim(CORE, "namespaces", &[CREATE]),
        claim(CORE, "serviceaccounts", &[CREATE, DELETE]),
        claim(RBAC, "clusterroles", &[CREATE, DELETE, "bind", "escalate"]),
        claim(RBAC, "clusterrolebindings", &[CREATE, DELETE]),
        claim(EVENTS, "events", &[CREATE, PATCH]),
    ]
}

/// Name of the ClusterRole for `place`, e.g. `velero.services.open-control-plane.io:platform`.
pub(crate) fn cluster_role_name(info: &ProviderInfo, place: Place) -> String {
    format!("{}:{}", info.group, place.as_str())
}

/// The ClusterRole holding [`rules`] for `place`, to bind to the provider's identity there.
pub(crate) fn cluster_role(
    info: &ProviderInfo,
    place: Place,
    api_export_name: &str,
) -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(cluster_role_name(info, place)),
            ..Default::default()
        },
        rules: Some(rules(info, place, api_export_name)),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: ProviderInfo = ProviderInfo {
        group: "velero.services.open-control-plane.io",
        version: "v1alpha1",
        kind: "Velero",
        plural: "veleroes",
        kcp: true,
    };

    #[test]
    fn no_rule_uses_a_wildcard() {
        for place in Place::ALL {
            for rule in rules(&INFO, place, "export") {
                let strings = rule
                    .verbs
                    .iter()
                    .chain(rule.api_groups.iter().flatten())
                    .chain(rule.resources.iter().flatten())
                    .chain(rule.resource_names.iter().flatten());
                for s in strings {
                    assert_ne!(s, "*", "{place:?}: {rule:?}");
                }
            }
        }
        for claim in claims() {
            assert!(!claim.verbs.iter().any(|v| v == "*"), "{claim:?}");
        }
    }

    #[test]
    fn virtual_workspace_access_is_limited_to_the_export() {
        let rules = rules(&INFO, Place::KcpProviderWorkspace, "velero-export");
        let content = rules
            .iter()
            .find(|r| r.resources.as_deref() == Some(&["apiexports/content".to_owned()]))
            .unwrap();
        assert_eq!(
            content.resource_names.as_deref(),
            Some(&["velero-export".to_owned()][..])
        );
        assert_eq!(
            content.verbs,
            [
                "get", "list", "watch", "create", "update", "patch", "delete"
            ]
        );
    }

    #[test]
    fn onboarding_rules_name_the_service_api() {
        let rules = onboarding_rules(&INFO);
        assert_eq!(
            rules[0].resources.as_deref(),
            Some(&["veleroes".to_owned()][..])
        );
        assert_eq!(
            rules[1].resources.as_deref(),
            Some(&["veleroes/status".to_owned()][..])
        );
        assert_eq!(
            cluster_role_name(&INFO, Place::Onboarding),
            "velero.services.open-control-plane.io:onboarding"
        );
    }
}
