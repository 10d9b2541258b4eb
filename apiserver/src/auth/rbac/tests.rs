//! Tests of the RBAC authorizer against kube-apiserver's and kcp's observable behaviour.

use serde_json::{Value, json};

use super::*;
use crate::auth::bootstrap;

fn role(rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "rules": rules})
}

fn cluster_role(labels: Value, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"labels": labels}, "rules": rules})
}

fn binding(role_kind: &str, role: &str, subjects: Value) -> Value {
    json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}, "subjects": subjects})
}

fn sa(ns: &str, name: &str) -> UserInfo {
    UserInfo::service_account(ns, name, "uid")
}

fn put(rbac: &Rbac, kind: RbacKind, ns: &str, name: &str, object: Value) {
    rbac.update(kind, ns, name, 0, Some(&object))
        .expect("valid RBAC object");
}

fn allowed(rbac: &Rbac, user: &UserInfo, attrs: &Attributes) -> bool {
    rbac.authorize(user, attrs).is_allowed()
}

fn forbidden_message(rbac: &Rbac, user: &UserInfo, attrs: &Attributes) -> String {
    match rbac.authorize(user, attrs) {
        Decision::Deny(denial) => denial.status(user, attrs).message,
        Decision::Allow { reason } => panic!("unexpectedly allowed: {reason}"),
    }
}

#[test]
fn role_binding_grants_in_its_namespace_only() {
    let rbac = Rbac::new();
    put(
        &rbac,
        RbacKind::Role,
        "default",
        "cm-reader",
        role(json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}])),
    );
    put(
        &rbac,
        RbacKind::RoleBinding,
        "default",
        "x-reads",
        binding(
            "Role",
            "cm-reader",
            json!([{"kind": "ServiceAccount", "name": "x"}]),
        ),
    );
    let x = sa("default", "x");
    assert!(allowed(
        &rbac,
        &x,
        &Attributes::resource("get", "", "configmaps", "default", "foo")
    ));
    assert!(allowed(
        &rbac,
        &x,
        &Attributes::resource("list", "", "configmaps", "default", "")
    ));
    assert!(!allowed(
        &rbac,
        &x,
        &Attributes::resource("get", "", "configmaps", "other", "foo")
    ));
    assert!(!allowed(
        &rbac,
        &x,
        &Attributes::resource("list", "", "configmaps", "", "")
    ));
    assert!(!allowed(
        &rbac,
        &x,
        &Attributes::resource("delete", "", "configmaps", "default", "foo")
    ));
    // The ServiceAccount subject without namespace means the binding's namespace.
    assert!(!allowed(
        &rbac,
        &sa("other", "x"),
        &Attributes::resource("get", "", "configmaps", "default", "foo")
    ));
    assert_eq!(
        rbac.authorize(&x, &Attributes::resource("get", "", "configmaps", "default", "foo")),
        Decision::Allow {
            reason: "RBAC: allowed by RoleBinding \"x-reads/default\" of Role \"cm-reader\" to ServiceAccount \"x/default\"".into()
        }
    );
}

#[test]
fn exact_forbidden_messages() {
    let rbac = Rbac::new();
    let x = sa("default", "x");
    assert_eq!(
        forbidden_message(
            &rbac,
            &x,
            &Attributes::resource("get", "", "configmaps", "default", "foo")
        ),
        "configmaps \"foo\" is forbidden: User \"system:serviceaccount:default:x\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(
        forbidden_message(
            &rbac,
            &x,
            &Attributes::resource("list", "", "configmaps", "default", "")
        ),
        "configmaps is forbidden: User \"system:serviceaccount:default:x\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(
        forbidden_message(
            &rbac,
            &x,
            &Attributes::resource(
                "list",
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                "",
                ""
            )
        ),
        "customresourcedefinitions.apiextensions.k8s.io is forbidden: User \"system:serviceaccount:default:x\" cannot list resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope"
    );
    assert_eq!(
        forbidden_message(
            &rbac,
            &x,
            &Attributes::resource("create", "", "serviceaccounts", "default", "x")
                .with_subresource("token")
        ),
        "serviceaccounts \"x\" is forbidden: User \"system:serviceaccount:default:x\" cannot create resource \"serviceaccounts/token\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(
        forbidden_message(
            &rbac,
            &UserInfo::new("x", Vec::<String>::new()),
            &Attributes::non_resource("get", "/metrics")
        ),
        "forbidden: User \"x\" cannot get path \"/metrics\""
    );
}

#[test]
fn resource_names_and_subresources() {
    let rbac = Rbac::new();
    put(
        &rbac,
        RbacKind::ClusterRole,
        "",
        "token-minter",
        cluster_role(
            json!({}),
            json!([
                {"apiGroups": [""], "resources": ["serviceaccounts/token"], "resourceNames": ["builder"], "verbs": ["create"]},
                {"apiGroups": ["apps"], "resources": ["*/status"], "verbs": ["get", "update"]},
                {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["kubeconfig"], "verbs": ["get"]}
            ]),
        ),
    );
    put(
        &rbac,
        RbacKind::RoleBinding,
        "ns",
        "minter",
        binding(
            "ClusterRole",
            "token-minter",
            json!([{"kind": "User", "name": "op"}]),
        ),
    );
    let op = UserInfo::new("op", Vec::<String>::new());
    let token = |name: &str| {
        Attributes::resource("create", "", "serviceaccounts", "ns", name).with_subresource("token")
    };
    assert!(allowed(&rbac, &op, &token("builder")));
    assert!(!allowed(&rbac, &op, &token("other")));
    assert!(!allowed(
        &rbac,
        &op,
        &Attributes::resource("create", "", "serviceaccounts", "ns", "builder")
    ));
    let status = |res: &str| {
        Attributes::resource("update", "apps", res, "ns", "d").with_subresource("status")
    };
    assert!(allowed(&rbac, &op, &status("deployments")));
    assert!(allowed(&rbac, &op, &status("statefulsets")));
    assert!(!allowed(
        &rbac,
        &op,
        &Attributes::resource("update", "apps", "deployments", "ns", "d")
    ));
    assert!(allowed(
        &rbac,
        &op,
        &Attributes::resource("get", "", "secrets", "ns", "kubeconfig")
    ));
    assert!(!allowed(
        &rbac,
        &op,
        &Attributes::resource("get", "", "secrets", "ns", "other")
    ));
    assert!(!allowed(
        &rbac,
        &op,
        &Attributes::resource("list", "", "secrets", "ns", "")
    ));
    // A ClusterRole bound by a RoleBinding grants nothing at the cluster scope.
    assert!(!allowed(
        &rbac,
        &op,
        &Attributes::resource("get", "", "secrets", "", "kubeconfig")
    ));
}

#[test]
fn cluster_role_binding_subjects() {
    let rbac = bootstrap::policy(false);
    put(
        &rbac,
        RbacKind::ClusterRoleBinding,
        "",
        "viewers",
        binding(
            "ClusterRole",
            "view",
            json!([
                {"kind": "Group", "name": "auditors"},
                {"kind": "ServiceAccount", "name": "watcher", "namespace": "mon"},
                {"kind": "ServiceAccount", "name": "nons"}
            ]),
        ),
    );
    let list_pods = Attributes::resource("list", "", "pods", "", "");
    assert!(allowed(
        &rbac,
        &UserInfo::new("eve", ["auditors"]),
        &list_pods
    ));
    assert!(allowed(&rbac, &sa("mon", "watcher"), &list_pods));
    // A ClusterRoleBinding's ServiceAccount subject without a namespace matches nobody.
    assert!(!allowed(&rbac, &sa("default", "nons"), &list_pods));
    assert!(!allowed(
        &rbac,
        &UserInfo::new("auditors", Vec::<String>::new()),
        &list_pods
    ));
    assert!(!allowed(
        &rbac,
        &UserInfo::new("eve", ["auditors"]),
        &Attributes::resource("delete", "", "pods", "a", "p")
    ));
    assert!(!allowed(
        &rbac,
        &UserInfo::new("eve", ["auditors"]),
        &Attributes::resource("get", "", "secrets", "a", "s")
    ));
}

#[test]
fn masters_bypass_rbac() {
    let rbac = Rbac::new();
    let admin = UserInfo::admin();
    assert!(allowed(
        &rbac,
        &admin,
        &Attributes::resource("delete", "", "namespaces", "", "kube-system")
    ));
    assert!(allowed(
        &rbac,
        &admin,
        &Attributes::non_resource("get", "/metrics")
    ));
}

#[test]
fn missing_role_is_reported_in_the_reason() {
    let rbac = Rbac::new();
    put(
        &rbac,
        RbacKind::ClusterRoleBinding,
        "",
        "dangling",
        binding(
            "ClusterRole",
            "gone",
            json!([{"kind": "User", "name": "u"}]),
        ),
    );
    let u = UserInfo::new("u", Vec::<String>::new());
    assert_eq!(
        forbidden_message(
            &rbac,
            &u,
            &Attributes::resource("get", "", "pods", "ns", "p")
        ),
        "pods \"p\" is forbidden: User \"u\" cannot get resource \"pods\" in API group \"\" in the namespace \"ns\": RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found"
    );
    put(
        &rbac,
        RbacKind::RoleBinding,
        "ns",
        "dangling2",
        binding("Role", "gone-too", json!([{"kind": "User", "name": "u"}])),
    );
    match rbac.authorize(&u, &Attributes::resource("get", "", "pods", "ns", "p")) {
        Decision::Deny(d) => assert_eq!(
            d.reason,
            "RBAC: [clusterrole.rbac.authorization.k8s.io \"gone\" not found, role.rbac.authorization.k8s.io \"gone-too\" not found]"
        ),
        other => panic!("{other:?}"),
    }
    // Creating the role repairs the binding.
    put(
        &rbac,
        RbacKind::ClusterRole,
        "",
        "gone",
        cluster_role(
            json!({}),
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
        ),
    );
    assert!(allowed(
        &rbac,
        &u,
        &Attributes::resource("get", "", "pods", "ns", "p")
    ));
}

#[test]
fn updates_and_deletes_take_effect_and_stale_ones_are_ignored() {
    let rbac = Rbac::new();
    let u = UserInfo::new("u", Vec::<String>::new());
    let get = Attributes::resource("get", "", "pods", "ns", "p");
    let reader = role(json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]));
    rbac.update(RbacKind::Role, "ns", "r", 5, Some(&reader))
        .expect("valid");
    rbac.update(
        RbacKind::RoleBinding,
        "ns",
        "b",
        6,
        Some(&binding(
            "Role",
            "r",
            json!([{"kind": "User", "name": "u"}]),
        )),
    )
    .expect("valid");
    assert!(allowed(&rbac, &u, &get));
    // The binding moves to another subject.
    rbac.update(
        RbacKind::RoleBinding,
        "ns",
        "b",
        8,
        Some(&binding(
            "Role",
            "r",
            json!([{"kind": "User", "name": "v"}]),
        )),
    )
    .expect("valid");
    assert!(!allowed(&rbac, &u, &get));
    // A late-arriving older write does not bring the old subject back.
    rbac.update(
        RbacKind::RoleBinding,
        "ns",
        "b",
        7,
        Some(&binding(
            "Role",
            "r",
            json!([{"kind": "User", "name": "u"}]),
        )),
    )
    .expect("valid");
    assert!(!allowed(&rbac, &u, &get));
    assert!(allowed(
        &rbac,
        &UserInfo::new("v", Vec::<String>::new()),
        &get
    ));
    // Deleting the role revokes; an older re-create is ignored.
    rbac.update(RbacKind::Role, "ns", "r", 9, None)
        .expect("delete");
    assert!(!allowed(
        &rbac,
        &UserInfo::new("v", Vec::<String>::new()),
        &get
    ));
    rbac.update(RbacKind::Role, "ns", "r", 4, Some(&reader))
        .expect("valid");
    assert!(!allowed(
        &rbac,
        &UserInfo::new("v", Vec::<String>::new()),
        &get
    ));
    rbac.update(RbacKind::Role, "ns", "r", 10, Some(&reader))
        .expect("valid");
    assert!(allowed(
        &rbac,
        &UserInfo::new("v", Vec::<String>::new()),
        &get
    ));
    rbac.remove_namespace("ns");
    assert!(!allowed(
        &rbac,
        &UserInfo::new("v", Vec::<String>::new()),
        &get
    ));
}

#[test]
fn malformed_objects_are_refused() {
    let rbac = Rbac::new();
    let bad = json!({"roleRef": "not an object"});
    assert!(
        rbac.update(RbacKind::RoleBinding, "ns", "b", 1, Some(&bad))
            .is_err()
    );
    assert!(
        rbac.update(
            RbacKind::ClusterRole,
            "",
            "c",
            1,
            Some(&json!({"rules": [{"verbs": "get"}]}))
        )
        .is_err()
    );
}

#[test]
fn aggregation_follows_labelled_roles() {
    let rbac = bootstrap::policy(false);
    put(
        &rbac,
        RbacKind::RoleBinding,
        "ns",
        "viewer",
        binding(
            "ClusterRole",
            "view",
            json!([{"kind": "User", "name": "u"}]),
        ),
    );
    let u = UserInfo::new("u", Vec::<String>::new());
    let widgets = Attributes::resource("list", "example.com", "widgets", "ns", "");
    assert!(!allowed(&rbac, &u, &widgets));
    put(
        &rbac,
        RbacKind::ClusterRole,
        "",
        "widget-viewer",
        cluster_role(
            json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"}),
            json!([{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}]),
        ),
    );
    assert!(allowed(&rbac, &u, &widgets), "aggregated into view");
    // view aggregates into edit and admin too.
    put(
        &rbac,
        RbacKind::RoleBinding,
        "ns",
        "admins",
        binding(
            "ClusterRole",
            "admin",
            json!([{"kind": "User", "name": "a"}]),
        ),
    );
    assert!(allowed(
        &rbac,
        &UserInfo::new("a", Vec::<String>::new()),
        &widgets
    ));
    let updates = rbac.aggregation_updates();
    let names: Vec<&str> = updates.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["admin", "edit", "view"]);
    rbac.update(RbacKind::ClusterRole, "", "widget-viewer", 0, None)
        .expect("delete");
    assert!(!allowed(&rbac, &u, &widgets));
    assert!(rbac.aggregation_updates().is_empty());
}

#[test]
fn aggregation_cycles_terminate() {
    let rbac = Rbac::new();
    let agg = |select: &str, label: &str| {
        json!({
            "metadata": {"labels": {label: "true"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {select: "true"}}]},
            "rules": [{"apiGroups": [""], "resources": [label], "verbs": ["get"]}]
        })
    };
    put(&rbac, RbacKind::ClusterRole, "", "a", agg("b", "a"));
    put(&rbac, RbacKind::ClusterRole, "", "b", agg("a", "b"));
    put(
        &rbac,
        RbacKind::ClusterRoleBinding,
        "",
        "u-a",
        binding("ClusterRole", "a", json!([{"kind": "User", "name": "u"}])),
    );
    // Each aggregates the other; evaluation terminates and grants what the cycle's first step
    // stored, without looping.
    let u = UserInfo::new("u", Vec::<String>::new());
    let granted = ["a", "b"]
        .iter()
        .filter(|r| allowed(&rbac, &u, &Attributes::resource("get", "", r, "", "")))
        .count();
    assert_eq!(granted, 1);
    assert!(rbac.aggregation_updates().len() <= 2);
}

#[test]
fn discovery_works_for_a_restricted_service_account() {
    let rbac = bootstrap::policy(false);
    let x = sa("default", "restricted");
    for path in [
        "/api",
        "/apis",
        "/api/v1",
        "/apis/apps/v1",
        "/openapi/v2",
        "/version",
    ] {
        assert!(
            allowed(&rbac, &x, &Attributes::non_resource("get", path)),
            "{path}"
        );
    }
    assert!(allowed(
        &rbac,
        &x,
        &Attributes::resource(
            "create",
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "",
            ""
        )
    ));
}

#[test]
fn kcp_service_account_is_scoped_to_its_home_workspace() {
    let bootstrap = bootstrap::policy(true);
    let home = Rbac::for_logical_cluster("home", Some(bootstrap.clone()));
    let other = Rbac::for_logical_cluster("other", Some(bootstrap));
    for rbac in [&home, &other] {
        put(
            rbac,
            RbacKind::ClusterRoleBinding,
            "",
            "sa-admin",
            binding(
                "ClusterRole",
                "cluster-admin",
                json!([
                    {"kind": "ServiceAccount", "name": "bot", "namespace": "default"}
                ]),
            ),
        );
    }
    let mut bot = sa("default", "bot");
    bot.extra.insert(
        crate::auth::user::EXTRA_KCP_SCOPES.into(),
        vec!["cluster:home".into()],
    );
    let get = Attributes::resource("get", "", "configmaps", "default", "c");
    assert!(
        allowed(&home, &bot, &get),
        "at home the SA needs no workspace access grant"
    );
    // Elsewhere a same-named ServiceAccount binding does not apply, and refusal is an opaque 404.
    match other.authorize(&bot, &get) {
        Decision::Deny(denial) => {
            assert!(denial.opaque);
            let status = denial.status(&bot, &get);
            assert_eq!(
                (status.code, status.message.as_str()),
                (404, "the server could not find the requested resource")
            );
        }
        allowed => panic!("{allowed:?}"),
    }
    // Unless RBAC there grants the home cluster's group.
    put(
        &other,
        RbacKind::ClusterRoleBinding,
        "",
        "from-home",
        binding(
            "ClusterRole",
            "view",
            json!([
                {"kind": "Group", "name": "system:cluster:home"}
            ]),
        ),
    );
    assert!(allowed(
        &other,
        &bot,
        &Attributes::resource("get", "", "configmaps", "default", "c")
    ));
    assert!(!allowed(
        &other,
        &bot,
        &Attributes::resource("get", "", "secrets", "default", "s")
    ));
}

#[test]
fn kcp_users_need_workspace_access_and_get_anonymized_reasons() {
    let bootstrap = bootstrap::policy(true);
    let ws = Rbac::for_logical_cluster("ws", Some(bootstrap));
    let alice = UserInfo::new("alice", Vec::<String>::new());
    put(
        &ws,
        RbacKind::RoleBinding,
        "default",
        "alice-edit",
        binding(
            "ClusterRole",
            "edit",
            json!([{"kind": "User", "name": "alice"}]),
        ),
    );
    let create = Attributes::resource("create", "", "configmaps", "default", "");
    assert_eq!(
        forbidden_message(&ws, &alice, &create),
        "configmaps is forbidden: User \"alice\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\": access denied"
    );
    put(
        &ws,
        RbacKind::ClusterRoleBinding,
        "",
        "alice-access",
        binding(
            "ClusterRole",
            "system:kcp:workspace:access",
            json!([{"kind": "User", "name": "alice"}]),
        ),
    );
    assert!(allowed(&ws, &alice, &create));
    assert_eq!(
        forbidden_message(
            &ws,
            &alice,
            &Attributes::resource("create", "", "configmaps", "other", "")
        ),
        "configmaps is forbidden: User \"alice\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"other\": access denied"
    );
    // Discovery comes from the shard's bootstrap policy.
    assert!(allowed(
        &ws,
        &alice,
        &Attributes::non_resource("get", "/apis")
    ));
    assert!(allowed(
        &ws,
        &UserInfo::admin(),
        &Attributes::resource("delete", "", "namespaces", "", "default")
    ));
}

#[test]
fn concurrent_updates_and_decisions() {
    let rbac = bootstrap::policy(false);
    let writers: Vec<_> = (0..4u64)
        .map(|t| {
            let rbac = rbac.clone();
            std::thread::spawn(move || {
                for i in 0..200u64 {
                    let name = format!("b{t}-{i}");
                    let b = binding(
                        "ClusterRole",
                        "view",
                        json!([{"kind": "User", "name": format!("u{t}")}]),
                    );
                    rbac.update(RbacKind::RoleBinding, "ns", &name, i + 1, Some(&b))
                        .expect("valid");
                }
            })
        })
        .collect();
    let reader = {
        let rbac = rbac.clone();
        std::thread::spawn(move || {
            let attrs = Attributes::resource("get", "", "pods", "ns", "p");
            (0..2000)
                .filter(|_| {
                    rbac.authorize(&UserInfo::new("u0", Vec::<String>::new()), &attrs)
                        .is_allowed()
                })
                .count()
        })
    };
    for w in writers {
        w.join().expect("writer");
    }
    reader.join().expect("reader");
    for t in 0..4 {
        assert!(allowed(
            &rbac,
            &UserInfo::new(format!("u{t}"), Vec::<String>::new()),
            &Attributes::resource("get", "", "pods", "ns", "p")
        ));
    }
}
