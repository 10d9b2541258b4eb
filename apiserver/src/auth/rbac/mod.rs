//! kube-apiserver's RBAC authorizer for one cluster (or one kcp logical cluster): an index of the
//! cluster's Roles, ClusterRoles and bindings, kept current by the server core, that decides
//! each request and words the refusal.
//!
//! The core calls [`Rbac::update`] for every write to an RBAC object, before it acknowledges the
//! write, so the next request sees it. Updates carry the store's resourceVersion, and an update
//! older than the one already applied for that object is ignored, so concurrent writers cannot
//! leave the index behind the store. Decisions read a consistent state under a read lock; the
//! subject index keeps them proportional to the bindings that name the user, not to all bindings.

mod escalation;
pub(crate) mod rules;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use parking_lot::RwLock;
use serde_json::Value;

use crate::auth::attributes::Attributes;
use crate::auth::user::{
    SYSTEM_ANONYMOUS, SYSTEM_AUTHENTICATED, UserInfo, parse_service_account_username,
    service_account_username,
};
use crate::error::{ApiError, go_quote};
use rules::{Rule, selector_matches};

/// Called per applicable binding with its description and its role's rules (or the error
/// resolving the role); returns whether to go on.
type BindingVisitor<'a> = dyn FnMut(&dyn Fn() -> String, Result<Arc<[Rule]>, String>) -> bool + 'a;

/// The four RBAC kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RbacKind {
    /// `Role` (namespaced).
    Role,
    /// `ClusterRole`.
    ClusterRole,
    /// `RoleBinding` (namespaced).
    RoleBinding,
    /// `ClusterRoleBinding`.
    ClusterRoleBinding,
}

impl RbacKind {
    /// The kind for a resource plural of `rbac.authorization.k8s.io` (`roles`, `clusterroles`, …).
    pub fn from_resource(resource: &str) -> Option<Self> {
        Some(match resource {
            "roles" => RbacKind::Role,
            "clusterroles" => RbacKind::ClusterRole,
            "rolebindings" => RbacKind::RoleBinding,
            "clusterrolebindings" => RbacKind::ClusterRoleBinding,
            _ => return None,
        })
    }

    /// The kind for a `kind` name (`Role`, `ClusterRole`, …).
    pub fn from_kind(kind: &str) -> Option<Self> {
        Some(match kind {
            "Role" => RbacKind::Role,
            "ClusterRole" => RbacKind::ClusterRole,
            "RoleBinding" => RbacKind::RoleBinding,
            "ClusterRoleBinding" => RbacKind::ClusterRoleBinding,
            _ => return None,
        })
    }
}

/// Why an RBAC object could not be indexed.
#[derive(Debug, thiserror::Error)]
#[error("cannot index {kind:?} {name:?}: {source}")]
pub struct RbacError {
    kind: RbacKind,
    name: String,
    source: serde_json::Error,
}

/// The outcome of authorization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed; the reason names the binding that allowed it (`RBAC: allowed by …`), or is empty
    /// for `system:masters`.
    Allow {
        /// kube-apiserver's reason, reported in SubjectAccessReviews.
        reason: String,
    },
    /// Refused.
    Deny(Denial),
}

impl Decision {
    /// Whether the request is allowed.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow { .. })
    }

    /// This decision when allowed, else `denied()`.
    fn or_else(self, denied: impl FnOnce() -> Decision) -> Decision {
        if self.is_allowed() { self } else { denied() }
    }
}

/// A refused request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// The authorizer's reason: empty, `RBAC: <resolution errors>`, or kcp's `access denied`.
    pub reason: String,
    /// kcp: the identity is outside its scope (a ServiceAccount of another logical cluster), and
    /// kcp answers it with an opaque 404 so it cannot learn whether the workspace exists.
    pub opaque: bool,
}

impl Denial {
    /// The response to the refused request made by `user` with `attributes`: kube-apiserver's
    /// 403, or the opaque 404 for identities outside their kcp scope.
    pub fn status(&self, user: &UserInfo, attributes: &Attributes) -> ApiError {
        if self.opaque {
            ApiError::no_route()
        } else {
            attributes.forbidden(&user.username, &self.reason)
        }
    }
}

/// The subject index of a set of bindings: which bindings name a user, group or ServiceAccount.
#[derive(Debug, Default)]
struct SubjectIndex {
    users: HashMap<String, BTreeSet<String>>,
    groups: HashMap<String, BTreeSet<String>>,
    /// Keyed by the ServiceAccount's username, so a lookup needs no allocation.
    service_accounts: HashMap<String, BTreeSet<String>>,
}

impl SubjectIndex {
    fn keys(binding: &Binding) -> Vec<SubjectKey> {
        binding
            .subjects
            .iter()
            .filter_map(|s| match s.kind.as_str() {
                "User" => Some(SubjectKey::User(s.name.clone())),
                "Group" => Some(SubjectKey::Group(s.name.clone())),
                "ServiceAccount" => {
                    // A RoleBinding's ServiceAccount subject defaults to the binding's namespace;
                    // a ClusterRoleBinding's needs one.
                    let ns = s
                        .namespace
                        .clone()
                        .filter(|n| !n.is_empty())
                        .unwrap_or_else(|| binding.namespace.clone());
                    (!ns.is_empty())
                        .then(|| SubjectKey::ServiceAccount(service_account_username(&ns, &s.name)))
                }
                _ => None,
            })
            .collect()
    }

    fn insert(&mut self, binding: &Binding) {
        for key in Self::keys(binding) {
            let set = match key {
                SubjectKey::User(u) => self.users.entry(u).or_default(),
                SubjectKey::Group(g) => self.groups.entry(g).or_default(),
                SubjectKey::ServiceAccount(u) => self.service_accounts.entry(u).or_default(),
            };
            set.insert(binding.name.clone());
        }
    }

    fn remove(&mut self, binding: &Binding) {
        for key in Self::keys(binding) {
            match key {
                SubjectKey::User(u) => remove_from(&mut self.users, &u, &binding.name),
                SubjectKey::Group(g) => remove_from(&mut self.groups, &g, &binding.name),
                SubjectKey::ServiceAccount(u) => {
                    remove_from(&mut self.service_accounts, &u, &binding.name)
                }
            }
        }
    }

    /// Names of the bindings that may apply to `user`, in name order.
    fn candidates<'a>(&'a self, user: &UserInfo) -> BTreeSet<&'a str> {
        let mut out = BTreeSet::new();
        let mut add = |set: Option<&'a BTreeSet<String>>| {
            out.extend(set.into_iter().flatten().map(String::as_str))
        };
        add(self.users.get(&user.username));
        for group in &user.groups {
            add(self.groups.get(group));
        }
        add(self.service_accounts.get(&user.username));
        out
    }
}

fn remove_from<K: std::hash::Hash + Eq>(
    map: &mut HashMap<K, BTreeSet<String>>,
    key: &K,
    name: &str,
) {
    if let Some(set) = map.get_mut(key) {
        set.remove(name);
        if set.is_empty() {
            map.remove(key);
        }
    }
}

enum SubjectKey {
    User(String),
    Group(String),
    /// `system:serviceaccount:<ns>:<name>`.
    ServiceAccount(String),
}

/// A binding as indexed.
#[derive(Debug)]
struct Binding {
    name: String,
    /// Empty for ClusterRoleBindings.
    namespace: String,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

impl Binding {
    /// The first subject that names `user`, like kube-apiserver's `appliesTo`.
    fn subject_for(&self, user: &UserInfo) -> Option<&Subject> {
        self.subjects.iter().find(|s| match s.kind.as_str() {
            "User" => s.name == user.username,
            "Group" => user.in_group(&s.name),
            "ServiceAccount" => {
                let ns = s
                    .namespace
                    .as_deref()
                    .filter(|n| !n.is_empty())
                    .unwrap_or(&self.namespace);
                !ns.is_empty()
                    && parse_service_account_username(&user.username) == Some((ns, s.name.as_str()))
            }
            _ => false,
        })
    }

    /// kube-apiserver's binding describer, for `RBAC: allowed by …`.
    fn describe(&self, subject: &Subject) -> String {
        let subject_text = if subject.kind == "ServiceAccount" {
            let ns = subject
                .namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or(&self.namespace);
            format!(
                "{} {}",
                subject.kind,
                go_quote(&format!("{}/{ns}", subject.name))
            )
        } else {
            format!("{} {}", subject.kind, go_quote(&subject.name))
        };
        if self.namespace.is_empty() {
            format!(
                "ClusterRoleBinding {} of {} {} to {subject_text}",
                go_quote(&self.name),
                self.role_ref.kind,
                go_quote(&self.role_ref.name)
            )
        } else {
            format!(
                "RoleBinding {} of {} {} to {subject_text}",
                go_quote(&format!("{}/{}", self.name, self.namespace)),
                self.role_ref.kind,
                go_quote(&self.role_ref.name)
            )
        }
    }
}

/// A ClusterRole as stored, plus what aggregation needs.
#[derive(Debug)]
struct StoredClusterRole {
    labels: BTreeMap<String, String>,
    aggregation: Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>>,
    rules: Vec<PolicyRule>,
}

#[derive(Debug, Default)]
struct State {
    cluster_roles: HashMap<String, StoredClusterRole>,
    /// Every ClusterRole's rules after aggregation, compiled.
    effective: HashMap<String, Arc<[Rule]>>,
    roles: HashMap<(String, String), Arc<[Rule]>>,
    cluster_role_bindings: BTreeMap<String, Arc<Binding>>,
    role_bindings: HashMap<String, BTreeMap<String, Arc<Binding>>>,
    cluster_index: SubjectIndex,
    namespace_index: HashMap<String, SubjectIndex>,
    /// Last applied resourceVersion per object, deletions included.
    versions: HashMap<(RbacKind, String, String), u64>,
}

impl State {
    /// Recomputes the effective rules of every ClusterRole: aggregated ones take the rules of the
    /// ClusterRoles their selectors match (sorted by name, duplicates dropped, themselves excluded),
    /// as kube-controller-manager's aggregation controller writes them.
    fn recompute_cluster_roles(&mut self) {
        let mut resolved: HashMap<String, Vec<PolicyRule>> = HashMap::new();
        let mut names: Vec<&String> = self.cluster_roles.keys().collect();
        names.sort();
        for name in names {
            let mut visiting = BTreeSet::new();
            let rules = self.effective_rules(name, &mut visiting, &mut resolved);
            resolved.insert(name.clone(), rules);
        }
        self.effective = resolved
            .into_iter()
            .map(|(name, rules)| (name, compile(&rules)))
            .collect();
    }

    fn effective_rules(
        &self,
        name: &str,
        visiting: &mut BTreeSet<String>,
        resolved: &mut HashMap<String, Vec<PolicyRule>>,
    ) -> Vec<PolicyRule> {
        if let Some(done) = resolved.get(name) {
            return done.clone();
        }
        let Some(role) = self.cluster_roles.get(name) else {
            return Vec::new();
        };
        let Some(selectors) = &role.aggregation else {
            return role.rules.clone();
        };
        if !visiting.insert(name.to_string()) {
            // An aggregation cycle: use what is stored, as the controller would have written it.
            return role.rules.clone();
        }
        let mut rules: Vec<PolicyRule> = Vec::new();
        for selector in selectors {
            let mut matching: Vec<&String> = self
                .cluster_roles
                .iter()
                .filter(|(other, r)| {
                    other.as_str() != name && selector_matches(selector, &r.labels)
                })
                .map(|(other, _)| other)
                .collect();
            matching.sort();
            for other in matching {
                for rule in self.effective_rules(other, visiting, resolved) {
                    if !rules.contains(&rule) {
                        rules.push(rule);
                    }
                }
            }
        }
        visiting.remove(name);
        resolved.insert(name.to_string(), rules.clone());
        rules
    }
}

fn compile(rules: &[PolicyRule]) -> Arc<[Rule]> {
    rules.iter().map(Rule::new).collect()
}

/// Where the authorizer runs, which changes how it treats identities and words refusals.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Scope {
    /// A plain Kubernetes cluster.
    Cluster,
    /// A kcp logical cluster.
    Kcp { cluster: String },
}

/// The RBAC state and authorizer of one cluster or kcp logical cluster.
#[derive(Debug)]
pub struct Rbac {
    scope: Scope,
    state: RwLock<State>,
    /// kcp: the shard's bootstrap policy (the `system:admin` logical cluster), whose ClusterRoles
    /// bindings here may reference and whose bindings apply here too.
    bootstrap: Option<Arc<Rbac>>,
}

impl Default for Rbac {
    fn default() -> Self {
        Rbac::new()
    }
}

/// Where a rule came from and what went wrong resolving roles, while visiting.
struct Visit<'a> {
    attributes: &'a Attributes,
    allowed_by: Option<String>,
    errors: Vec<String>,
}

impl Rbac {
    /// The authorizer of a plain Kubernetes cluster.
    pub fn new() -> Self {
        Rbac {
            scope: Scope::Cluster,
            state: RwLock::new(State::default()),
            bootstrap: None,
        }
    }

    /// The authorizer of the kcp logical cluster `cluster`, falling back to the shard's
    /// `bootstrap` policy for ClusterRoles and bindings.
    pub fn for_logical_cluster(cluster: impl Into<String>, bootstrap: Option<Arc<Rbac>>) -> Self {
        Rbac {
            scope: Scope::Kcp {
                cluster: cluster.into(),
            },
            state: RwLock::new(State::default()),
            bootstrap,
        }
    }

    /// Applies a write to an RBAC object: `Some(object)` after create/update, `None` after delete.
    ///
    /// `resource_version` is the store's resourceVersion of this write (of the deletion, for
    /// deletes); an update older than the last one applied for the object is ignored. Pass 0 to
    /// apply unconditionally. Malformed objects are refused and leave the index unchanged.
    pub fn update(
        &self,
        kind: RbacKind,
        namespace: &str,
        name: &str,
        resource_version: u64,
        object: Option<&Value>,
    ) -> Result<(), RbacError> {
        let err = |source| RbacError {
            kind,
            name: name.to_string(),
            source,
        };
        // Parse outside the lock.
        enum Parsed {
            Role(Arc<[Rule]>),
            ClusterRole(StoredClusterRole),
            Binding(Arc<Binding>),
            Gone,
        }
        let parsed = match (kind, object) {
            (_, None) => Parsed::Gone,
            (RbacKind::Role, Some(v)) => {
                let role: Role = serde_json::from_value(v.clone()).map_err(err)?;
                Parsed::Role(compile(&role.rules.unwrap_or_default()))
            }
            (RbacKind::ClusterRole, Some(v)) => {
                let role: ClusterRole = serde_json::from_value(v.clone()).map_err(err)?;
                Parsed::ClusterRole(StoredClusterRole {
                    labels: role.metadata.labels.unwrap_or_default(),
                    aggregation: role
                        .aggregation_rule
                        .map(|a| a.cluster_role_selectors.unwrap_or_default()),
                    rules: role.rules.unwrap_or_default(),
                })
            }
            (RbacKind::RoleBinding, Some(v)) => {
                let b: RoleBinding = serde_json::from_value(v.clone()).map_err(err)?;
                Parsed::Binding(Arc::new(Binding {
                    name: name.to_string(),
                    namespace: namespace.to_string(),
                    role_ref: b.role_ref,
                    subjects: b.subjects.unwrap_or_default(),
                }))
            }
            (RbacKind::ClusterRoleBinding, Some(v)) => {
                let b: ClusterRoleBinding = serde_json::from_value(v.clone()).map_err(err)?;
                Parsed::Binding(Arc::new(Binding {
                    name: name.to_string(),
                    namespace: String::new(),
                    role_ref: b.role_ref,
                    subjects: b.subjects.unwrap_or_default(),
                }))
            }
        };

        let mut state = self.state.write();
        let key = (kind, namespace.to_string(), name.to_string());
        if resource_version != 0 {
            match state.versions.get(&key) {
                Some(&applied) if applied > resource_version => return Ok(()),
                _ => {
                    state.versions.insert(key, resource_version);
                }
            }
        }
        match (kind, parsed) {
            (RbacKind::Role, Parsed::Role(rules)) => {
                state
                    .roles
                    .insert((namespace.to_string(), name.to_string()), rules);
            }
            (RbacKind::Role, _) => {
                state
                    .roles
                    .remove(&(namespace.to_string(), name.to_string()));
            }
            (RbacKind::ClusterRole, parsed) => {
                match parsed {
                    Parsed::ClusterRole(role) => state.cluster_roles.insert(name.to_string(), role),
                    _ => state.cluster_roles.remove(name),
                };
                state.recompute_cluster_roles();
            }
            (RbacKind::RoleBinding, parsed) => {
                let State {
                    role_bindings,
                    namespace_index,
                    ..
                } = &mut *state;
                let bindings = role_bindings.entry(namespace.to_string()).or_default();
                let index = namespace_index.entry(namespace.to_string()).or_default();
                if let Some(old) = bindings.remove(name) {
                    index.remove(&old);
                }
                if let Parsed::Binding(binding) = parsed {
                    index.insert(&binding);
                    bindings.insert(name.to_string(), binding);
                }
                if bindings.is_empty() {
                    role_bindings.remove(namespace);
                    namespace_index.remove(namespace);
                }
            }
            (RbacKind::ClusterRoleBinding, parsed) => {
                let State {
                    cluster_role_bindings,
                    cluster_index,
                    ..
                } = &mut *state;
                if let Some(old) = cluster_role_bindings.remove(name) {
                    cluster_index.remove(&old);
                }
                if let Parsed::Binding(binding) = parsed {
                    cluster_index.insert(&binding);
                    cluster_role_bindings.insert(name.to_string(), binding);
                }
            }
        }
        Ok(())
    }

    /// Forgets everything in `namespace` (its Roles and RoleBindings), for when the namespace is
    /// removed without per-object deletes.
    pub fn remove_namespace(&self, namespace: &str) {
        let mut state = self.state.write();
        state.roles.retain(|(ns, _), _| ns != namespace);
        state.role_bindings.remove(namespace);
        state.namespace_index.remove(namespace);
        state.versions.retain(|(kind, ns, _), _| {
            !(ns == namespace && matches!(kind, RbacKind::Role | RbacKind::RoleBinding))
        });
    }

    /// ClusterRoles whose stored `rules` differ from what their `aggregationRule` selects, with the
    /// rules to write: the work of kube-controller-manager's aggregation controller, for a core
    /// that wants `kubectl get clusterrole admin -o yaml` to show them. Authorization already
    /// uses the aggregated rules either way.
    pub fn aggregation_updates(&self) -> Vec<(String, Vec<PolicyRule>)> {
        let state = self.state.read();
        let mut out: Vec<(String, Vec<PolicyRule>)> = state
            .cluster_roles
            .iter()
            .filter(|(_, role)| role.aggregation.is_some())
            .filter_map(|(name, role)| {
                let effective: Vec<PolicyRule> = state
                    .effective
                    .get(name)?
                    .iter()
                    .map(|r| r.policy_rule().clone())
                    .collect();
                (effective != role.rules).then(|| (name.clone(), effective))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Decides whether `user` may do what `attributes` describe.
    ///
    /// `system:masters` is allowed everything. In a kcp logical cluster, an identity limited to
    /// other logical clusters (a ServiceAccount token minted elsewhere) counts only as
    /// `system:anonymous` in `system:authenticated` and `system:cluster:<home>`, and a refusal
    /// of it is opaque (404); other users need verb `access` on `/` to enter the workspace, and
    /// refusals carry kcp's anonymized reason `access denied`.
    pub fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        if user.is_privileged() {
            return Decision::Allow {
                reason: String::new(),
            };
        }
        if let Attributes::Resource(r) = attributes
            && r.subresource.is_empty()
            && user.claim_allows(&r.group, &r.resource, &r.verb)
        {
            return Decision::Allow {
                reason: "allowed by an accepted APIExport permission claim".into(),
            };
        }
        let Scope::Kcp { cluster } = &self.scope else {
            return self.evaluate(user, attributes);
        };
        let deny = |opaque| {
            Decision::Deny(Denial {
                reason: "access denied".into(),
                opaque,
            })
        };
        let in_scope = user
            .kcp_scope()
            .map(|scope| scope.iter().any(|c| c == cluster));
        match in_scope {
            Some(false) => match self.evaluate(&effective_user(user, cluster), attributes) {
                allowed @ Decision::Allow { .. } => allowed,
                Decision::Deny(_) => deny(true),
            },
            // A ServiceAccount of this logical cluster may enter it; anyone else needs `access`.
            Some(true) => self.evaluate(user, attributes).or_else(|| deny(false)),
            None if !self
                .evaluate(user, &Attributes::non_resource("access", "/"))
                .is_allowed() =>
            {
                deny(false)
            }
            None => self.evaluate(user, attributes).or_else(|| deny(false)),
        }
    }

    /// kcp's deep SubjectAccessReview: RBAC of the logical cluster (with the bootstrap policy)
    /// without the workspace-access gate, as kcp checks `bind` on an APIExport for identities
    /// that cannot enter the export's workspace. Identities scoped to other logical clusters count
    /// as their effective user there.
    pub fn authorize_deep(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        if user.is_privileged() {
            return Decision::Allow {
                reason: String::new(),
            };
        }
        match &self.scope {
            Scope::Kcp { cluster } => self.evaluate(&effective_user(user, cluster), attributes),
            Scope::Cluster => self.evaluate(user, attributes),
        }
    }

    /// Plain RBAC evaluation, kube-apiserver's `RBACAuthorizer.Authorize`.
    fn evaluate(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        let mut visit = Visit {
            attributes,
            allowed_by: None,
            errors: Vec::new(),
        };
        self.visit(user, attributes.namespace(), &mut visit);
        if visit.allowed_by.is_none()
            && let Some(bootstrap) = &self.bootstrap
        {
            bootstrap.visit(user, attributes.namespace(), &mut visit);
        }
        match visit.allowed_by {
            Some(by) => Decision::Allow {
                reason: format!("RBAC: allowed by {by}"),
            },
            None => {
                let reason = match visit.errors.len() {
                    0 => String::new(),
                    1 => format!("RBAC: {}", visit.errors[0]),
                    _ => format!("RBAC: [{}]", visit.errors.join(", ")),
                };
                Decision::Deny(Denial {
                    reason,
                    opaque: false,
                })
            }
        }
    }

    /// Every rule that applies to `user` in `namespace` (cluster-wide ones included), and the
    /// role-resolution errors met: what a SelfSubjectRulesReview reports.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        if user.is_privileged() {
            let all = |v: &str| Some(vec![v.to_string()]);
            rules.push(PolicyRule {
                verbs: vec!["*".into()],
                api_groups: all("*"),
                resources: all("*"),
                ..PolicyRule::default()
            });
            rules.push(PolicyRule {
                verbs: vec!["*".into()],
                non_resource_urls: all("*"),
                ..PolicyRule::default()
            });
            return (rules, errors);
        }
        let mut collect = |rbac: &Rbac| {
            rbac.for_each_binding(user, namespace, &mut |_, resolved| match resolved {
                Ok(found) => {
                    rules.extend(found.iter().map(|r| r.policy_rule().clone()));
                    true
                }
                Err(e) => {
                    errors.push(e);
                    true
                }
            })
        };
        collect(self);
        if let Some(bootstrap) = &self.bootstrap {
            collect(bootstrap);
        }
        (rules, errors)
    }

    fn visit(&self, user: &UserInfo, namespace: &str, visit: &mut Visit<'_>) {
        self.for_each_binding(user, namespace, &mut |source, resolved| match resolved {
            Ok(rules) => {
                if rules.iter().any(|r| r.allows(visit.attributes)) {
                    visit.allowed_by = Some(source());
                    return false;
                }
                true
            }
            Err(e) => {
                visit.errors.push(e);
                true
            }
        });
    }

    /// Calls `f` with each binding that applies to `user` (ClusterRoleBindings, then the
    /// RoleBindings of `namespace`) and its role's rules, or the error resolving the role; stops
    /// when `f` returns false.
    fn for_each_binding(&self, user: &UserInfo, namespace: &str, f: &mut BindingVisitor<'_>) {
        let state = self.state.read();
        let mut bindings: Vec<&Arc<Binding>> = state
            .cluster_index
            .candidates(user)
            .into_iter()
            .filter_map(|name| state.cluster_role_bindings.get(name))
            .collect();
        if !namespace.is_empty()
            && let (Some(index), Some(in_namespace)) = (
                state.namespace_index.get(namespace),
                state.role_bindings.get(namespace),
            )
        {
            bindings.extend(
                index
                    .candidates(user)
                    .into_iter()
                    .filter_map(|name| in_namespace.get(name)),
            );
        }
        for binding in bindings {
            let Some(subject) = binding.subject_for(user) else {
                continue;
            };
            let resolved = self.role_rules(&state, &binding.role_ref, &binding.namespace);
            let describe = || binding.describe(subject);
            if !f(&describe, resolved) {
                return;
            }
        }
    }

    /// The rules a role reference grants, like `GetRoleReferenceRules`.
    fn role_rules(
        &self,
        state: &State,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Arc<[Rule]>, String> {
        match role_ref.kind.as_str() {
            "Role" => state
                .roles
                .get(&(namespace.to_string(), role_ref.name.clone()))
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "role.rbac.authorization.k8s.io {} not found",
                        go_quote(&role_ref.name)
                    )
                }),
            "ClusterRole" => state
                .effective
                .get(&role_ref.name)
                .cloned()
                .or_else(|| {
                    self.bootstrap
                        .as_ref()
                        .and_then(|b| b.state.read().effective.get(&role_ref.name).cloned())
                })
                .ok_or_else(|| {
                    format!(
                        "clusterrole.rbac.authorization.k8s.io {} not found",
                        go_quote(&role_ref.name)
                    )
                }),
            other => Err(format!(
                "unsupported role reference kind: {}",
                go_quote(other)
            )),
        }
    }
}

/// kcp: the identity `user` has inside `cluster`: itself when in scope, else `system:anonymous`
/// in `system:authenticated` (exposed for logging and reviews).
pub(crate) fn effective_user<'a>(user: &'a UserInfo, cluster: &str) -> Cow<'a, UserInfo> {
    match user.kcp_scope() {
        Some(scope) if !scope.iter().any(|c| c == cluster) => {
            let mut groups = vec![SYSTEM_AUTHENTICATED.to_string()];
            groups.extend(scope.iter().map(|c| format!("system:cluster:{c}")));
            Cow::Owned(UserInfo {
                username: SYSTEM_ANONYMOUS.into(),
                groups,
                ..UserInfo::default()
            })
        }
        _ => Cow::Borrowed(user),
    }
}

#[cfg(test)]
mod tests;
