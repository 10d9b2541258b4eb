//! RBAC's escalation prevention: a user may only write a Role or ClusterRole granting what they
//! hold themselves (or with the `escalate` verb), and only bind a role whose permissions they hold
//! (or with the `bind` verb), as kube-apiserver's RBAC storage enforces.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef,
};
use serde_json::Value;

use crate::auth::attributes::Attributes;
use crate::auth::rbac::{Rbac, RbacKind};
use crate::auth::user::UserInfo;
use crate::error::{ApiError, go_quote, go_quote_list};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn resource_of(kind: RbacKind) -> &'static str {
    match kind {
        RbacKind::Role => "roles",
        RbacKind::ClusterRole => "clusterroles",
        RbacKind::RoleBinding => "rolebindings",
        RbacKind::ClusterRoleBinding => "clusterrolebindings",
    }
}

impl Rbac {
    /// Checks that `user` may create or update the RBAC object `object` (kind `kind`, named `name`
    /// in `namespace`): 403 with kube-apiserver's message when it would grant permissions the
    /// user does not hold. Call it on create and update of RBAC objects, after authorization.
    pub fn check_escalation(
        &self,
        user: &UserInfo,
        kind: RbacKind,
        namespace: &str,
        name: &str,
        object: &Value,
    ) -> Result<(), ApiError> {
        if user.is_privileged() {
            return Ok(());
        }
        let resource = resource_of(kind);
        let forbidden = |message: String| ApiError::forbidden(RBAC_GROUP, resource, name, &message);
        let malformed =
            |e: serde_json::Error| ApiError::bad_request(format!("the {kind:?} is malformed: {e}"));
        match kind {
            RbacKind::Role | RbacKind::ClusterRole => {
                let verb = Attributes::resource("escalate", RBAC_GROUP, resource, namespace, name);
                if self.authorize(user, &verb).is_allowed() {
                    return Ok(());
                }
                let (rules, aggregated) = if kind == RbacKind::Role {
                    (
                        serde_json::from_value::<Role>(object.clone())
                            .map_err(malformed)?
                            .rules
                            .unwrap_or_default(),
                        false,
                    )
                } else {
                    let role: ClusterRole =
                        serde_json::from_value(object.clone()).map_err(malformed)?;
                    (
                        role.rules.unwrap_or_default(),
                        role.aggregation_rule.is_some(),
                    )
                };
                if aggregated {
                    let all = |v: &str| Some(vec![v.to_string()]);
                    let full = [
                        PolicyRule {
                            verbs: vec!["*".into()],
                            api_groups: all("*"),
                            resources: all("*"),
                            ..PolicyRule::default()
                        },
                        PolicyRule {
                            verbs: vec!["*".into()],
                            non_resource_urls: all("*"),
                            ..PolicyRule::default()
                        },
                    ];
                    if self.missing_rules(user, namespace, &full).is_err() {
                        return Err(forbidden(
                            "must have cluster-admin privileges to use an aggregationRule".into(),
                        ));
                    }
                }
                self.missing_rules(user, namespace, &rules)
                    .map_err(forbidden)
            }
            RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
                let role_ref: RoleRef = if kind == RbacKind::RoleBinding {
                    serde_json::from_value::<RoleBinding>(object.clone())
                        .map_err(malformed)?
                        .role_ref
                } else {
                    serde_json::from_value::<ClusterRoleBinding>(object.clone())
                        .map_err(malformed)?
                        .role_ref
                };
                let role_resource = if role_ref.kind == "Role" {
                    "roles"
                } else {
                    "clusterroles"
                };
                let bind = Attributes::resource(
                    "bind",
                    RBAC_GROUP,
                    role_resource,
                    namespace,
                    &role_ref.name,
                );
                if self.authorize(user, &bind).is_allowed() {
                    return Ok(());
                }
                let rules = {
                    let state = self.state.read();
                    self.role_rules(&state, &role_ref, namespace)
                        .map_err(|e| forbidden(e.clone()))?
                };
                let rules: Vec<PolicyRule> =
                    rules.iter().map(|r| r.policy_rule().clone()).collect();
                self.missing_rules(user, namespace, &rules)
                    .map_err(forbidden)
            }
        }
    }

    /// kube-apiserver's `ConfirmNoEscalation`: Ok when the user's rules in `namespace` cover
    /// `rules`, else the message listing what is missing.
    fn missing_rules(
        &self,
        user: &UserInfo,
        namespace: &str,
        rules: &[PolicyRule],
    ) -> Result<(), String> {
        let (owner, errors) = self.rules_for(user, namespace);
        let missing: Vec<PolicyRule> = rules
            .iter()
            .flat_map(breakdown)
            .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let described: BTreeSet<String> = compact(missing).iter().map(compact_string).collect();
        let mut message = format!(
            "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
            go_quote(&user.username),
            go_quote_list(&user.groups),
            described.into_iter().collect::<Vec<_>>().join("\n")
        );
        if !errors.is_empty() {
            message.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
        }
        Err(message)
    }
}

fn list(v: &Option<Vec<String>>) -> &[String] {
    v.as_deref().unwrap_or_default()
}

/// One rule per (group, resource, verb[, name]) and per (url, verb): `BreakdownRule`.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| Some(vec![s.clone()]);
    let mut out = Vec::new();
    for group in list(&rule.api_groups) {
        for resource in list(&rule.resources) {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: vec![verb.clone()],
                    ..PolicyRule::default()
                };
                if list(&rule.resource_names).is_empty() {
                    out.push(base);
                } else {
                    out.extend(list(&rule.resource_names).iter().map(|n| PolicyRule {
                        resource_names: one(n),
                        ..base.clone()
                    }));
                }
            }
        }
    }
    for url in list(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: vec![verb.clone()],
                ..PolicyRule::default()
            });
        }
    }
    out
}

fn has(set: &[String], value: &str) -> bool {
    set.iter().any(|s| s == value)
}

fn has_all(set: &[String], values: &[String]) -> bool {
    values.iter().all(|v| has(set, v))
}

/// `ruleCovers` of kube-apiserver's RBAC validation.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let owner_resources = list(&owner.resources);
    let resources_covered = has(owner_resources, "*")
        || list(&sub.resources).iter().all(|path| {
            has(owner_resources, path)
                || path.split_once('/').is_some_and(|(_, subresource)| {
                    has(owner_resources, &format!("*/{subresource}"))
                })
        });
    let urls_covered = list(&sub.non_resource_urls).iter().all(|path| {
        list(&owner.non_resource_urls).iter().any(|o| {
            o == path
                || o.strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
        })
    });
    let names_covered = list(&owner.resource_names).is_empty()
        || (!list(&sub.resource_names).is_empty()
            && has_all(list(&owner.resource_names), list(&sub.resource_names)));
    (has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs))
        && (has(list(&owner.api_groups), "*")
            || has_all(list(&owner.api_groups), list(&sub.api_groups)))
        && resources_covered
        && urls_covered
        && names_covered
}

/// `CompactRules`: simple rules (one group, one resource, no names, no URLs) merge their verbs.
fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut simple: BTreeMap<(String, String), PolicyRule> = BTreeMap::new();
    let mut out = Vec::new();
    for rule in rules {
        let (groups, resources) = (list(&rule.api_groups), list(&rule.resources));
        let is_simple = groups.len() == 1
            && resources.len() == 1
            && list(&rule.resource_names).is_empty()
            && list(&rule.non_resource_urls).is_empty();
        if !is_simple {
            out.push(rule);
            continue;
        }
        let key = (groups[0].clone(), resources[0].clone());
        match simple.get_mut(&key) {
            Some(existing) => {
                for verb in rule.verbs {
                    if !existing.verbs.contains(&verb) {
                        existing.verbs.push(verb);
                    }
                }
            }
            None => {
                simple.insert(key, rule);
            }
        }
    }
    out.extend(simple.into_values());
    out
}

/// `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`.
fn compact_string(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    for (label, values) in [
        ("APIGroups", list(&rule.api_groups)),
        ("Resources", list(&rule.resources)),
        ("NonResourceURLs", list(&rule.non_resource_urls)),
        ("ResourceNames", list(&rule.resource_names)),
        ("Verbs", rule.verbs.as_slice()),
    ] {
        if !values.is_empty() {
            parts.push(format!("{label}:{}", go_quote_list(values)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::auth::bootstrap;

    fn setup() -> std::sync::Arc<Rbac> {
        let rbac = bootstrap::policy(false);
        let b = json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "edit"}, "subjects": [{"kind": "User", "name": "dev"}]});
        rbac.update(RbacKind::RoleBinding, "team", "dev-edit", 0, Some(&b))
            .expect("valid");
        let admin = json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "admin"}, "subjects": [{"kind": "User", "name": "lead"}]});
        rbac.update(RbacKind::RoleBinding, "team", "lead-admin", 0, Some(&admin))
            .expect("valid");
        rbac
    }

    #[test]
    fn role_within_held_permissions_is_allowed() {
        let rbac = setup();
        let lead = UserInfo::new("lead", Vec::<String>::new());
        let role = json!({"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]});
        assert_eq!(
            rbac.check_escalation(&lead, RbacKind::Role, "team", "cm", &role),
            Ok(())
        );
    }

    #[test]
    fn role_beyond_held_permissions_is_forbidden() {
        let rbac = setup();
        let lead = UserInfo::new("lead", Vec::<String>::new());
        let role = json!({"rules": [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
        ]});
        let err = rbac
            .check_escalation(&lead, RbacKind::Role, "team", "nodes", &role)
            .expect_err("escalation");
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "roles.rbac.authorization.k8s.io \"nodes\" is forbidden: user \"lead\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\" \"list\"]}"
        );
    }

    #[test]
    fn binding_needs_the_roles_permissions_or_bind() {
        let rbac = setup();
        let dev = UserInfo::new("dev", Vec::<String>::new());
        let to_view = json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"}, "subjects": [{"kind": "User", "name": "x"}]});
        // edit covers view in the namespace, but edit has no rights on rolebindings; the check
        // itself only looks at the referenced role's rules.
        assert_eq!(
            rbac.check_escalation(&dev, RbacKind::RoleBinding, "team", "x-view", &to_view),
            Ok(())
        );
        let to_admin = json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "admin"}, "subjects": [{"kind": "User", "name": "x"}]});
        let err = rbac
            .check_escalation(&dev, RbacKind::RoleBinding, "team", "x-admin", &to_admin)
            .expect_err("escalation");
        assert!(
            err.message.starts_with(
                "rolebindings.rbac.authorization.k8s.io \"x-admin\" is forbidden: user \"dev\""
            ),
            "{}",
            err.message
        );
        assert!(
            err.message.contains(
                "{APIGroups:[\"rbac.authorization.k8s.io\"], Resources:[\"rolebindings\"]"
            ),
            "{}",
            err.message
        );
        // With `bind` on the role, the binding is allowed without holding its permissions.
        let binder = json!({"rules": [{"apiGroups": [RBAC_GROUP], "resources": ["clusterroles"], "resourceNames": ["admin"], "verbs": ["bind"]}]});
        rbac.update(RbacKind::Role, "team", "binder", 0, Some(&binder))
            .expect("valid");
        let grant = json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "binder"}, "subjects": [{"kind": "User", "name": "dev"}]});
        rbac.update(RbacKind::RoleBinding, "team", "dev-binder", 0, Some(&grant))
            .expect("valid");
        assert_eq!(
            rbac.check_escalation(&dev, RbacKind::RoleBinding, "team", "x-admin", &to_admin),
            Ok(())
        );
        // A cluster-wide binding of admin is still an escalation.
        assert!(
            rbac.check_escalation(&dev, RbacKind::ClusterRoleBinding, "", "x-admin", &to_admin)
                .is_err()
        );
    }

    #[test]
    fn binding_a_missing_role_is_forbidden() {
        let rbac = setup();
        let dev = UserInfo::new("dev", Vec::<String>::new());
        let b = json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "ghost"}, "subjects": []});
        let err = rbac
            .check_escalation(&dev, RbacKind::RoleBinding, "team", "b", &b)
            .expect_err("missing role");
        assert_eq!(
            err.message,
            "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: clusterrole.rbac.authorization.k8s.io \"ghost\" not found"
        );
    }

    #[test]
    fn aggregation_rules_need_cluster_admin() {
        let rbac = setup();
        let lead = UserInfo::new("lead", Vec::<String>::new());
        let role =
            json!({"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}});
        let err = rbac
            .check_escalation(&lead, RbacKind::ClusterRole, "", "agg", &role)
            .expect_err("needs admin");
        assert!(
            err.message
                .ends_with("must have cluster-admin privileges to use an aggregationRule")
        );
        assert_eq!(
            rbac.check_escalation(&UserInfo::admin(), RbacKind::ClusterRole, "", "agg", &role),
            Ok(())
        );
    }

    #[test]
    fn covers_subresources_wildcards_and_urls() {
        let rule = |v: Value| serde_json::from_value::<PolicyRule>(v).expect("rule");
        let owner =
            rule(json!({"apiGroups": ["*"], "resources": ["*/status", "pods"], "verbs": ["get"]}));
        for sub in breakdown(&rule(
            json!({"apiGroups": ["apps"], "resources": ["deployments/status", "pods"], "verbs": ["get"]}),
        )) {
            assert!(rule_covers(&owner, &sub), "{sub:?}");
        }
        assert!(!rule_covers(
            &owner,
            &rule(json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}))
        ));
        let named = rule(
            json!({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"], "verbs": ["get"]}),
        );
        assert!(!rule_covers(
            &named,
            &rule(json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}))
        ));
        assert!(rule_covers(
            &named,
            &rule(
                json!({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"], "verbs": ["get"]})
            )
        ));
        let urls = rule(json!({"nonResourceURLs": ["/apis/*"], "verbs": ["get"]}));
        assert!(rule_covers(
            &urls,
            &rule(json!({"nonResourceURLs": ["/apis/apps"], "verbs": ["get"]}))
        ));
        assert!(!rule_covers(
            &urls,
            &rule(json!({"nonResourceURLs": ["/api"], "verbs": ["get"]}))
        ));
    }
}
