//! The built-in resources every cluster serves, with kube-apiserver's names, scopes, verbs and
//! subresources.

use std::sync::{Arc, OnceLock};

use crate::patch::TypeShape;
use crate::registry::{ApiSet, ResourceInfo, ScaleSpec, Strategy};
use crate::store::StoreKey;
use crate::validation::Validator;

/// The verbs of an ordinary stored resource.
pub const STANDARD_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

struct Def {
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    categories: &'static [&'static str],
    verbs: &'static [&'static str],
    status: bool,
    strategy: Strategy,
    generation: bool,
    field_selectors: &'static [&'static str],
}

const fn def(
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> Def {
    Def {
        group,
        version,
        resource,
        singular,
        kind,
        namespaced,
        short: &[],
        categories: &[],
        verbs: STANDARD_VERBS,
        status: false,
        strategy: Strategy::Plain,
        generation: false,
        field_selectors: &[],
    }
}

const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

fn defs() -> Vec<Def> {
    vec![
        Def {
            short: &["ns"],
            verbs: &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ],
            status: true,
            strategy: Strategy::Namespace,
            field_selectors: &["status.phase"],
            ..def("", "v1", "namespaces", "namespace", "Namespace", false)
        },
        Def {
            short: &["cm"],
            ..def("", "v1", "configmaps", "configmap", "ConfigMap", true)
        },
        Def {
            strategy: Strategy::Secret,
            field_selectors: &["type"],
            ..def("", "v1", "secrets", "secret", "Secret", true)
        },
        Def {
            short: &["sa"],
            strategy: Strategy::ServiceAccount,
            ..def(
                "",
                "v1",
                "serviceaccounts",
                "serviceaccount",
                "ServiceAccount",
                true,
            )
        },
        Def {
            short: &["ev"],
            strategy: Strategy::Event,
            field_selectors: EVENT_FIELDS,
            ..def("", "v1", "events", "event", "Event", true)
        },
        Def {
            short: &["svc"],
            categories: &["all"],
            status: true,
            strategy: Strategy::Service,
            ..def("", "v1", "services", "service", "Service", true)
        },
        Def {
            short: &["po"],
            categories: &["all"],
            status: true,
            field_selectors: &["spec.nodeName", "status.phase"],
            ..def("", "v1", "pods", "pod", "Pod", true)
        },
        Def {
            short: &["quota"],
            status: true,
            ..def(
                "",
                "v1",
                "resourcequotas",
                "resourcequota",
                "ResourceQuota",
                true,
            )
        },
        Def {
            short: &["limits"],
            ..def("", "v1", "limitranges", "limitrange", "LimitRange", true)
        },
        Def {
            short: &["ep"],
            ..def("", "v1", "endpoints", "endpoints", "Endpoints", true)
        },
        Def {
            short: &["deploy"],
            categories: &["all"],
            status: true,
            strategy: Strategy::Deployment,
            generation: true,
            ..def(
                "apps",
                "v1",
                "deployments",
                "deployment",
                "Deployment",
                true,
            )
        },
        Def {
            short: &["rs"],
            categories: &["all"],
            status: true,
            generation: true,
            ..def(
                "apps",
                "v1",
                "replicasets",
                "replicaset",
                "ReplicaSet",
                true,
            )
        },
        Def {
            short: &["ev"],
            strategy: Strategy::EventsV1,
            ..def("events.k8s.io", "v1", "events", "event", "Event", true)
        },
        Def {
            verbs: &["create"],
            strategy: Strategy::TokenReview,
            ..def(
                "authentication.k8s.io",
                "v1",
                "tokenreviews",
                "tokenreview",
                "TokenReview",
                false,
            )
        },
        Def {
            verbs: &["create"],
            strategy: Strategy::SelfSubjectReview,
            ..def(
                "authentication.k8s.io",
                "v1",
                "selfsubjectreviews",
                "selfsubjectreview",
                "SelfSubjectReview",
                false,
            )
        },
        Def {
            verbs: &["create"],
            strategy: Strategy::AccessReview,
            ..def(
                "authorization.k8s.io",
                "v1",
                "selfsubjectrulesreviews",
                "selfsubjectrulesreview",
                "SelfSubjectRulesReview",
                false,
            )
        },
        Def {
            verbs: &["create"],
            strategy: Strategy::AccessReview,
            ..def(
                "authorization.k8s.io",
                "v1",
                "localsubjectaccessreviews",
                "localsubjectaccessreview",
                "LocalSubjectAccessReview",
                true,
            )
        },
        Def {
            verbs: &["create"],
            strategy: Strategy::AccessReview,
            ..def(
                "authorization.k8s.io",
                "v1",
                "selfsubjectaccessreviews",
                "selfsubjectaccessreview",
                "SelfSubjectAccessReview",
                false,
            )
        },
        Def {
            verbs: &["create"],
            strategy: Strategy::AccessReview,
            ..def(
                "authorization.k8s.io",
                "v1",
                "subjectaccessreviews",
                "subjectaccessreview",
                "SubjectAccessReview",
                false,
            )
        },
        def(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "clusterrolebinding",
            "ClusterRoleBinding",
            false,
        ),
        def(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "clusterrole",
            "ClusterRole",
            false,
        ),
        def(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "rolebinding",
            "RoleBinding",
            true,
        ),
        def(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            "role",
            "Role",
            true,
        ),
        Def {
            short: &["crd", "crds"],
            categories: &["api-extensions"],
            status: true,
            strategy: Strategy::Crd,
            generation: true,
            ..def(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "customresourcedefinition",
                "CustomResourceDefinition",
                false,
            )
        },
        def(
            "coordination.k8s.io",
            "v1",
            "leases",
            "lease",
            "Lease",
            true,
        ),
    ]
}

fn build(d: Def) -> ResourceInfo {
    // events.k8s.io/v1 Events share storage with core/v1 Events, as in kube-apiserver.
    let (store, storage_api_version) = if d.strategy == Strategy::EventsV1 {
        (StoreKey::new("", "events"), "v1".to_string())
    } else {
        (
            StoreKey::new(d.group, d.resource),
            crate::registry::api_version(d.group, d.version),
        )
    };
    ResourceInfo {
        group: d.group.into(),
        version: d.version.into(),
        resource: d.resource.into(),
        singular: d.singular.into(),
        kind: d.kind.into(),
        list_kind: format!("{}List", d.kind),
        namespaced: d.namespaced,
        short_names: d.short.iter().map(|s| s.to_string()).collect(),
        categories: d.categories.iter().map(|s| s.to_string()).collect(),
        verbs: d.verbs.iter().map(|s| s.to_string()).collect(),
        status: d.status,
        scale: (d.strategy == Strategy::Deployment).then(|| ScaleSpec {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".status.selector".into()),
        }),
        store,
        storage_api_version,
        strategy: d.strategy,
        generation: d.generation,
        printer_columns: Vec::new(),
        validator: Validator::builtin(d.group, d.version, d.kind).map(Arc::new),
        field_selectors: d.field_selectors.iter().map(|s| s.to_string()).collect(),
        shape: Arc::new(shape_of(d.group, d.kind)),
        openapi_schema: None,
        source: "builtin".into(),
        source_uid: None,
        deprecated: false,
    }
}

/// The type graph of a built-in kind, from its k8s-openapi schema.
fn shape_of(group: &str, kind: &str) -> TypeShape {
    use k8s_openapi::api::{apps, coordination, core, events, rbac};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    match (group, kind) {
        ("", "Namespace") => TypeShape::of::<core::v1::Namespace>(),
        ("", "ConfigMap") => TypeShape::of::<core::v1::ConfigMap>(),
        ("", "Secret") => TypeShape::of::<core::v1::Secret>(),
        ("", "ServiceAccount") => TypeShape::of::<core::v1::ServiceAccount>(),
        ("", "Event") => TypeShape::of::<core::v1::Event>(),
        ("", "Service") => TypeShape::of::<core::v1::Service>(),
        ("", "Pod") => TypeShape::of::<core::v1::Pod>(),
        ("", "ResourceQuota") => TypeShape::of::<core::v1::ResourceQuota>(),
        ("", "LimitRange") => TypeShape::of::<core::v1::LimitRange>(),
        ("", "Endpoints") => TypeShape::of::<core::v1::Endpoints>(),
        ("apps", "Deployment") => TypeShape::of::<apps::v1::Deployment>(),
        ("apps", "ReplicaSet") => TypeShape::of::<apps::v1::ReplicaSet>(),
        ("events.k8s.io", "Event") => TypeShape::of::<events::v1::Event>(),
        ("coordination.k8s.io", "Lease") => TypeShape::of::<coordination::v1::Lease>(),
        ("rbac.authorization.k8s.io", "Role") => TypeShape::of::<rbac::v1::Role>(),
        ("rbac.authorization.k8s.io", "ClusterRole") => TypeShape::of::<rbac::v1::ClusterRole>(),
        ("rbac.authorization.k8s.io", "RoleBinding") => TypeShape::of::<rbac::v1::RoleBinding>(),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            TypeShape::of::<rbac::v1::ClusterRoleBinding>()
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            TypeShape::of::<apiext::CustomResourceDefinition>()
        }
        _ => TypeShape::untyped(),
    }
}

/// The built-in resources, built once per process and shared by every shard.
pub fn builtins() -> Arc<ApiSet> {
    static SET: OnceLock<Arc<ApiSet>> = OnceLock::new();
    SET.get_or_init(|| Arc::new(ApiSet::new(defs().into_iter().map(|d| Arc::new(build(d))))))
        .clone()
}
