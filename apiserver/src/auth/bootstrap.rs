//! The default RBAC objects a cluster starts with: kube-apiserver's user-facing bootstrap roles
//! and bindings (so any authenticated identity can use discovery, health and the self-review
//! APIs), and kcp's workspace-access role.

use std::sync::{Arc, LazyLock};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::auth::rbac::{Rbac, RbacKind};

/// The policy, compiled into the binary from `bootstrap-policy.yaml`.
const POLICY_YAML: &str = include_str!("bootstrap-policy.yaml");

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Policy {
    cluster_roles: Vec<RoleSpec>,
    cluster_role_bindings: Vec<BindingSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleSpec {
    name: String,
    #[serde(default)]
    labels: Map<String, Value>,
    #[serde(default)]
    rules: Vec<Value>,
    aggregation_rule: Option<Value>,
}

#[derive(Deserialize)]
struct BindingSpec {
    name: String,
    role: String,
    groups: Vec<String>,
}

fn metadata(name: &str, extra_labels: &Map<String, Value>) -> Value {
    let mut labels = Map::new();
    labels.insert("kubernetes.io/bootstrapping".into(), "rbac-defaults".into());
    labels.extend(extra_labels.clone());
    json!({
        "name": name,
        "labels": labels,
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

/// Both lists, built once. The YAML is part of the binary and `embedded_policy_parses` covers it.
static POLICY: LazyLock<(Vec<Value>, Vec<Value>)> = LazyLock::new(|| {
    let policy: Policy =
        serde_norway::from_str(POLICY_YAML).expect("the embedded bootstrap-policy.yaml is valid");
    let mut roles: Vec<Value> = policy
        .cluster_roles
        .iter()
        .map(|r| {
            let mut role = json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": metadata(&r.name, &r.labels),
                "rules": r.rules,
            });
            if let Some(aggregation) = &r.aggregation_rule {
                role["aggregationRule"] = aggregation.clone();
            }
            role
        })
        .collect();
    let bindings: Vec<Value> = policy
        .cluster_role_bindings
        .iter()
        .map(|b| {
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": metadata(&b.name, &Map::new()),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": b.role},
                "subjects": b.groups.iter()
                    .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    // Fill in the aggregated roles as kube-controller-manager would right after start.
    let rbac = Rbac::new();
    for role in &roles {
        let name = role["metadata"]["name"].as_str().unwrap_or_default();
        let _ = rbac.update(RbacKind::ClusterRole, "", name, 0, Some(role));
    }
    for (name, rules) in rbac.aggregation_updates() {
        if let Some(role) = roles
            .iter_mut()
            .find(|r| r["metadata"]["name"] == name.as_str())
        {
            role["rules"] = serde_json::to_value(rules).unwrap_or_default();
        }
    }
    (roles, bindings)
});

/// kube-apiserver's bootstrap ClusterRoles: `cluster-admin`, `admin`, `edit`, `view` (with their
/// aggregated rules), the `system:aggregate-to-*` roles, `system:basic-user`,
/// `system:discovery`, `system:public-info-viewer`, `system:monitoring`,
/// `system:auth-delegator` and `system:service-account-issuer-discovery`.
pub fn cluster_roles() -> Vec<Value> {
    POLICY.0.clone()
}

/// kube-apiserver's bootstrap ClusterRoleBindings: `cluster-admin` to `system:masters`,
/// `system:basic-user` and `system:discovery` to `system:authenticated`,
/// `system:public-info-viewer` to everyone, `system:monitoring`, and issuer discovery for
/// ServiceAccounts.
pub fn cluster_role_bindings() -> Vec<Value> {
    POLICY.1.clone()
}

/// Every bootstrap object with its kind, roles first: what the core creates when a cluster starts.
pub fn objects() -> Vec<(RbacKind, Value)> {
    let roles = cluster_roles()
        .into_iter()
        .map(|r| (RbacKind::ClusterRole, r));
    roles
        .chain(
            cluster_role_bindings()
                .into_iter()
                .map(|b| (RbacKind::ClusterRoleBinding, b)),
        )
        .collect()
}

/// kcp's ClusterRole granting entry to a workspace (verb `access` on `/`); in kcp it lives in the
/// shard's bootstrap policy and bindings in any workspace may reference it.
pub fn kcp_cluster_roles() -> Vec<Value> {
    vec![json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata("system:kcp:workspace:access", &Map::new()),
        "rules": [{"nonResourceURLs": ["/"], "verbs": ["access"]}],
    })]
}

/// An [`Rbac`] holding the bootstrap policy (plus kcp's roles when `kcp`): the shared fallback
/// of a kcp shard's logical clusters, or a ready authorizer for tests.
pub fn policy(kcp: bool) -> Arc<Rbac> {
    let rbac = Rbac::new();
    install(&rbac, kcp);
    Arc::new(rbac)
}

/// Loads the bootstrap policy into `rbac`.
pub fn install(rbac: &Rbac, kcp: bool) {
    let extra = if kcp { kcp_cluster_roles() } else { Vec::new() };
    for (kind, object) in objects()
        .into_iter()
        .chain(extra.into_iter().map(|r| (RbacKind::ClusterRole, r)))
    {
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        // The objects are built above from the embedded policy and always parse.
        let _ = rbac.update(kind, "", &name, 0, Some(&object));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::attributes::Attributes;
    use crate::auth::user::UserInfo;

    #[test]
    fn embedded_policy_parses() {
        let policy: Result<Policy, _> = serde_norway::from_str(POLICY_YAML);
        assert!(policy.is_ok(), "{:?}", policy.err());
        let names: Vec<String> = cluster_roles()
            .iter()
            .filter_map(|r| r["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        for expected in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:discovery",
            "system:basic-user",
            "system:public-info-viewer",
        ] {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} missing from {names:?}"
            );
        }
        for (_, object) in objects() {
            assert_eq!(
                object["metadata"]["labels"]["kubernetes.io/bootstrapping"],
                "rbac-defaults"
            );
        }
    }

    #[test]
    fn aggregated_roles_carry_their_rules() {
        let roles = cluster_roles();
        let rules = |name: &str| {
            roles
                .iter()
                .find(|r| r["metadata"]["name"] == name)
                .map(|r| r["rules"].clone())
        };
        let view = rules("view").unwrap_or_default();
        let edit = rules("edit").unwrap_or_default();
        let admin = rules("admin").unwrap_or_default();
        let count = |v: &Value| v.as_array().map_or(0, Vec::len);
        assert!(count(&view) > 5, "{view}");
        assert!(count(&edit) > count(&view));
        assert!(count(&admin) > count(&edit));
        // admin includes what edit includes, which includes view's rules.
        for rule in view.as_array().into_iter().flatten() {
            assert!(edit.as_array().is_some_and(|e| e.contains(rule)));
            assert!(admin.as_array().is_some_and(|a| a.contains(rule)));
        }
        assert!(
            policy(false).aggregation_updates().is_empty(),
            "already aggregated"
        );
    }

    #[test]
    fn authenticated_users_get_discovery_and_self_reviews_only() {
        let rbac = policy(false);
        let sa = UserInfo::service_account("default", "restricted", "u");
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps/v1",
            "/openapi/v2",
            "/openapi/v3/apis/apps/v1",
            "/version",
            "/healthz",
        ] {
            assert!(
                rbac.authorize(&sa, &Attributes::non_resource("get", path))
                    .is_allowed(),
                "{path}"
            );
        }
        assert!(
            !rbac
                .authorize(&sa, &Attributes::non_resource("get", "/metrics"))
                .is_allowed()
        );
        let ssar = Attributes::resource(
            "create",
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "",
            "",
        );
        assert!(rbac.authorize(&sa, &ssar).is_allowed());
        let whoami = Attributes::resource(
            "create",
            "authentication.k8s.io",
            "selfsubjectreviews",
            "",
            "",
        );
        assert!(rbac.authorize(&sa, &whoami).is_allowed());
        assert!(
            !rbac
                .authorize(
                    &sa,
                    &Attributes::resource("list", "", "configmaps", "default", "")
                )
                .is_allowed()
        );
        let anonymous = crate::auth::authenticator::anonymous();
        assert!(
            rbac.authorize(&anonymous, &Attributes::non_resource("get", "/version"))
                .is_allowed()
        );
        assert!(
            !rbac
                .authorize(&anonymous, &Attributes::non_resource("get", "/api"))
                .is_allowed()
        );
    }
}
