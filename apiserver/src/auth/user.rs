//! The authenticated identity of a request, and the well-known user, group and extra names
//! kube-apiserver and kcp give identities.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Group every member of which is allowed everything, without RBAC (kube-apiserver's
/// privileged-groups authorizer).
pub(crate) const SYSTEM_MASTERS: &str = "system:masters";
/// Group of every authenticated identity.
pub(crate) const SYSTEM_AUTHENTICATED: &str = "system:authenticated";
/// Group of anonymous requests.
pub(crate) const SYSTEM_UNAUTHENTICATED: &str = "system:unauthenticated";
/// Username of anonymous requests, and of kcp identities outside their scope.
pub(crate) const SYSTEM_ANONYMOUS: &str = "system:anonymous";
/// Group of every ServiceAccount.
pub(crate) const SYSTEM_SERVICEACCOUNTS: &str = "system:serviceaccounts";
/// Prefix of ServiceAccount usernames: `system:serviceaccount:<namespace>:<name>`.
pub(crate) const SERVICEACCOUNT_USERNAME_PREFIX: &str = "system:serviceaccount:";
/// Username of the admin a kind cluster's kubeconfig authenticates as.
pub const KUBERNETES_ADMIN: &str = "kubernetes-admin";

/// Extra key with the id of the credential a request authenticated with (`JTI=<jti>` for
/// ServiceAccount tokens), as kube-apiserver ≥ 1.29 sets it.
pub(crate) const EXTRA_CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";
/// kcp: extra key limiting an identity to logical clusters (`cluster:<name>`); elsewhere it counts
/// as `system:anonymous` in `system:authenticated`.
pub(crate) const EXTRA_KCP_SCOPES: &str = "authentication.kcp.io/scopes";
/// kcp: extra key with the logical cluster an identity was authenticated for.
pub(crate) const EXTRA_KCP_CLUSTER_NAME: &str = "authentication.kcp.io/cluster-name";
/// kcp: extra key the APIExport virtual workspace adds to a request it admits for one consumer
/// logical cluster: one `<group>/<resource>:<verb>` per verb of the permission claims the consumer
/// accepted. kcp forwards such a request with a warrant for the claims, so checks the consumer
/// cluster makes during the request (RBAC escalation: `escalate` on roles, `bind` on the role a
/// binding refers to) see the claimed verbs as granted.
pub(crate) const EXTRA_KCP_CLAIMED_VERBS: &str = "apis.kcp.io/claimed-verbs";

/// An authenticated identity: kube-apiserver's `user.Info`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserInfo {
    /// The username, e.g. `system:serviceaccount:default:builder`.
    pub username: String,
    /// A unique id; the ServiceAccount's uid for ServiceAccount tokens, empty for static tokens.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The groups, `system:authenticated` included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Additional attributes (`authentication.kubernetes.io/credential-id`, kcp scopes, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with the given name and groups; `system:authenticated` is added when missing, as
    /// kube-apiserver's authenticated-group adder does.
    pub fn new(
        username: impl Into<String>,
        groups: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let mut user = UserInfo {
            username: username.into(),
            groups: groups.into_iter().map(Into::into).collect(),
            ..UserInfo::default()
        };
        user.ensure_group(SYSTEM_AUTHENTICATED);
        user
    }

    /// The cluster admin of a kind cluster: `kubernetes-admin` in `system:masters`.
    pub fn admin() -> Self {
        UserInfo::new(KUBERNETES_ADMIN, [SYSTEM_MASTERS])
    }

    /// The identity a ServiceAccount token authenticates as, before extras:
    /// `system:serviceaccount:<ns>:<name>` in `system:serviceaccounts`,
    /// `system:serviceaccounts:<ns>` and `system:authenticated`.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        let mut user = UserInfo::new(
            service_account_username(namespace, name),
            [
                SYSTEM_SERVICEACCOUNTS.to_string(),
                format!("{SYSTEM_SERVICEACCOUNTS}:{namespace}"),
            ],
        );
        user.uid = uid.to_string();
        user
    }

    /// Adds a group unless the user already has it.
    pub fn ensure_group(&mut self, group: &str) {
        if !self.in_group(group) {
            self.groups.push(group.to_string());
        }
    }

    /// Whether the user is in the group.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Whether the user bypasses authorization (`system:masters`).
    pub fn is_privileged(&self) -> bool {
        self.in_group(SYSTEM_MASTERS)
    }

    /// The ServiceAccount `(namespace, name)` this user is, if it is one.
    pub fn service_account_name(&self) -> Option<(&str, &str)> {
        parse_service_account_username(&self.username)
    }

    /// kcp: whether a permission claim the APIExport virtual workspace admitted this request
    /// under grants `verb` on `group`/`resource` (see [`EXTRA_KCP_CLAIMED_VERBS`]).
    pub fn claim_allows(&self, group: &str, resource: &str, verb: &str) -> bool {
        self.extra
            .get(EXTRA_KCP_CLAIMED_VERBS)
            .is_some_and(|values| {
                values.iter().any(|v| {
                    v.rsplit_once(':').is_some_and(|(gr, claimed)| {
                        (claimed == verb || claimed == "*")
                            && gr.split_once('/') == Some((group, resource))
                    })
                })
            })
    }

    /// kcp: the logical clusters this identity is limited to, or `None` when it is not limited.
    ///
    /// Several `authentication.kcp.io/scopes` values intersect; each value is a comma-separated
    /// list of `cluster:<name>`, as kcp documents.
    pub fn kcp_scope(&self) -> Option<Vec<String>> {
        let values = self.extra.get(EXTRA_KCP_SCOPES)?;
        let mut scope: Option<Vec<String>> = None;
        for value in values {
            let clusters: Vec<String> = value
                .split(',')
                .filter_map(|s| s.trim().strip_prefix("cluster:"))
                .map(str::to_string)
                .collect();
            scope = Some(match scope {
                None => clusters,
                Some(prev) => prev.into_iter().filter(|c| clusters.contains(c)).collect(),
            });
        }
        scope
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub(crate) fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICEACCOUNT_USERNAME_PREFIX}{namespace}:{name}")
}

/// Splits `system:serviceaccount:<namespace>:<name>` into `(namespace, name)`.
pub fn parse_service_account_username(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix(SERVICEACCOUNT_USERNAME_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    if namespace.is_empty() || name.is_empty() || name.contains(':') {
        return None;
    }
    Some((namespace, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_identity_has_kube_groups() {
        let user = UserInfo::service_account("team", "builder", "u1");
        assert_eq!(user.username, "system:serviceaccount:team:builder");
        assert_eq!(user.uid, "u1");
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:team",
                "system:authenticated"
            ]
        );
        assert_eq!(user.service_account_name(), Some(("team", "builder")));
    }

    #[test]
    fn service_account_usernames_parse_strictly() {
        assert_eq!(
            parse_service_account_username("system:serviceaccount:a:b"),
            Some(("a", "b"))
        );
        assert_eq!(
            parse_service_account_username("system:serviceaccount:a"),
            None
        );
        assert_eq!(
            parse_service_account_username("system:serviceaccount::b"),
            None
        );
        assert_eq!(
            parse_service_account_username("system:serviceaccount:a:b:c"),
            None
        );
        assert_eq!(parse_service_account_username("alice"), None);
    }

    #[test]
    fn admin_is_privileged_and_authenticated() {
        let admin = UserInfo::admin();
        assert!(admin.is_privileged());
        assert!(admin.in_group(SYSTEM_AUTHENTICATED));
        assert!(!UserInfo::new("alice", ["dev"]).is_privileged());
    }

    #[test]
    fn kcp_scopes_intersect() {
        let mut user = UserInfo::new("alice", Vec::<String>::new());
        assert_eq!(user.kcp_scope(), None);
        user.extra.insert(
            EXTRA_KCP_SCOPES.into(),
            vec!["cluster:a,cluster:b".into(), "cluster:b,cluster:c".into()],
        );
        assert_eq!(user.kcp_scope(), Some(vec!["b".to_string()]));
    }
}
