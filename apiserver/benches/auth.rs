//! Numbers for the authentication and RBAC paths every request takes: `cargo bench -p
//! service-provider-apiserver --bench auth`. Prints nanoseconds per operation; asserts nothing.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use service_provider_apiserver::internals::auth::{
    Attributes, Authenticator, Decision, LiveObject, ObjectLookup, Rbac, RbacKind,
    ServiceAccountRef, TokenIssuer, TokenIssuerConfig, UserInfo, bootstrap,
};

/// Runs `f` repeatedly for about a second and prints the mean time per call.
fn measure(name: &str, mut f: impl FnMut()) {
    for _ in 0..1000 {
        f();
    }
    let mut iterations = 0u64;
    let start = Instant::now();
    while start.elapsed().as_millis() < 1000 {
        for _ in 0..100 {
            f();
        }
        iterations += 100;
    }
    let ns = start.elapsed().as_nanos() as f64 / iterations as f64;
    println!("{name:<58} {ns:>10.0} ns/op  ({:.0}/s)", 1e9 / ns);
}

struct OneServiceAccount;

impl ObjectLookup for OneServiceAccount {
    fn service_account(&self, _: Option<&str>, _: &str, _: &str) -> Option<LiveObject> {
        Some(LiveObject {
            uid: "uid".into(),
            deletion_timestamp: None,
        })
    }
    fn secret(&self, _: Option<&str>, _: &str, _: &str) -> Option<LiveObject> {
        None
    }
}

fn main() {
    // A cluster with the bootstrap policy plus 1,000 namespaces × (1 Role + 1 RoleBinding) and
    // 1,000 ClusterRoleBindings for other users.
    let rbac: Arc<Rbac> = bootstrap::policy(false);
    let role = json!({"rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list", "watch"]}]});
    for i in 0..1000 {
        let ns = format!("ns-{i}");
        rbac.update(RbacKind::Role, &ns, "reader", 0, Some(&role))
            .ok();
        let binding = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "app"}, {"kind": "Group", "name": format!("team-{i}")}]});
        rbac.update(RbacKind::RoleBinding, &ns, "app-reads", 0, Some(&binding))
            .ok();
        let crb = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": format!("user-{i}")}]});
        rbac.update(
            RbacKind::ClusterRoleBinding,
            "",
            &format!("viewer-{i}"),
            0,
            Some(&crb),
        )
        .ok();
    }
    let sa = UserInfo::service_account("ns-500", "app", "uid");
    let allowed = Attributes::resource("get", "", "configmaps", "ns-500", "cm");
    let denied = Attributes::resource("delete", "", "configmaps", "ns-500", "cm");
    let discovery = Attributes::non_resource("get", "/apis/apps/v1");
    let admin = UserInfo::admin();
    measure("authorize: system:masters", || {
        black_box(rbac.authorize(black_box(&admin), &allowed));
    });
    measure(
        "authorize: SA allowed by its RoleBinding (3,000 bindings)",
        || {
            black_box(rbac.authorize(black_box(&sa), &allowed));
        },
    );
    measure("authorize: SA denied, forbidden message built", || {
        if let Decision::Deny(d) = rbac.authorize(black_box(&sa), &denied) {
            black_box(d.status(&sa, &denied));
        }
    });
    measure(
        "authorize: SA discovery via bootstrap ClusterRoleBinding",
        || {
            black_box(rbac.authorize(black_box(&sa), &discovery));
        },
    );

    let issuer = Arc::new(TokenIssuer::new(TokenIssuerConfig::kube()).expect("key generation"));
    let authn = Authenticator::new(issuer.clone());
    let sa_ref = ServiceAccountRef {
        cluster: None,
        namespace: "ns-500",
        name: "app",
        uid: "uid",
    };
    let audiences = issuer.config().api_audiences.clone();
    let token = issuer
        .mint(&sa_ref, &audiences, 3600, None)
        .expect("mint")
        .token;
    let admin_token = authn.add_random_token(UserInfo::admin()).expect("token");
    measure("authenticate: static admin token", || {
        black_box(
            authn
                .authenticate(black_box(&admin_token), &OneServiceAccount)
                .ok(),
        );
    });
    measure(
        "authenticate: ServiceAccount JWT (ES256 verify + lookup)",
        || {
            black_box(
                authn
                    .authenticate(black_box(&token), &OneServiceAccount)
                    .ok(),
            );
        },
    );
    measure("mint: ServiceAccount JWT (ES256 sign)", || {
        black_box(issuer.mint(&sa_ref, &audiences, 3600, None).ok());
    });
}
