//! The built-in resources every cluster serves: every GA type of the enabled Kubernetes version, as
//! k8s-openapi describes it (the list in `types.rs` is generated from k8s-openapi's sources by
//! `cargo xtask builtins`), with kube-apiserver's short names, categories, verbs, subresources
//! and behaviour added per resource below.
//!
//! This is the one place per-kind information lives: [`api_types`] for what k8s-openapi says about
//! a type (group, version, kind, plural, scope, list kind, definition name), [`builtins`] for the
//! served [`ResourceInfo`]s.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock, OnceLock};

use schemars::JsonSchema;
use schemars::generate::SchemaGenerator;

use crate::patch::TypeShape;
use crate::registry::{ApiSet, ResourceInfo, ScaleSpec, Strategy};
use crate::schema::NameRule;
use crate::store::StoreKey;
use crate::validation::Validator;

/// The verbs of an ordinary stored resource.
pub(crate) const STANDARD_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Where the objects of a type live, from k8s-openapi's `Resource::Scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// In namespaces.
    Namespaced,
    /// Cluster-wide.
    Cluster,
    /// Only as the body of a subresource (`Scale`, `Eviction`, `TokenRequest`).
    Subresource,
}

/// Maps k8s-openapi's scope marker types to [`Scope`].
trait ScopeOf {
    const SCOPE: Scope;
}

impl ScopeOf for k8s_openapi::NamespaceResourceScope {
    const SCOPE: Scope = Scope::Namespaced;
}

impl ScopeOf for k8s_openapi::ClusterResourceScope {
    const SCOPE: Scope = Scope::Cluster;
}

impl ScopeOf for k8s_openapi::SubResourceScope {
    const SCOPE: Scope = Scope::Subresource;
}

/// One API type of k8s-openapi, as its traits describe it.
#[derive(Debug)]
pub(crate) struct ApiType {
    /// API group (`""` for core).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Plural resource name in URLs (`Resource::URL_PATH_SEGMENT`).
    pub plural: &'static str,
    /// The list kind, for types that are stored and listed.
    pub list_kind: Option<&'static str>,
    /// Where objects live.
    pub scope: Scope,
    /// The OpenAPI definition name (`io.k8s.api.apps.v1.StatefulSet`).
    pub definition: Cow<'static, str>,
    add_schema: fn(&mut SchemaGenerator),
}

impl ApiType {
    fn stored<T>() -> Self
    where
        T: k8s_openapi::ListableResource + JsonSchema,
        T::Scope: ScopeOf,
    {
        ApiType {
            list_kind: Some(T::LIST_KIND),
            ..Self::other::<T>()
        }
    }

    fn other<T>() -> Self
    where
        T: k8s_openapi::Resource + JsonSchema,
        T::Scope: ScopeOf,
    {
        ApiType {
            group: T::GROUP,
            version: T::VERSION,
            kind: T::KIND,
            plural: T::URL_PATH_SEGMENT,
            list_kind: None,
            scope: <T::Scope as ScopeOf>::SCOPE,
            definition: T::schema_name(),
            add_schema: |g| {
                let _ = g.subschema_for::<T>();
            },
        }
    }

    /// Adds this type's definition (and what it references) to a schema generator.
    pub(crate) fn add_schema(&self, generator: &mut SchemaGenerator) {
        (self.add_schema)(generator)
    }
}

/// Turns the generated list into [`ApiType`]s.
macro_rules! builtin_types {
    (kubernetes: $k8s:literal, stored: [$($($s:ident)::+),* $(,)?], other: [$($($o:ident)::+),* $(,)?] $(,)?) => {
        pub(super) const KUBERNETES_VERSION: &str = $k8s;

        pub(super) fn api_types() -> Vec<super::ApiType> {
            vec![
                $(super::ApiType::stored::<k8s_openapi::$($s)::+>(),)*
                $(super::ApiType::other::<k8s_openapi::$($o)::+>(),)*
            ]
        }
    };
}

/// The generated list of k8s-openapi's GA types, one `builtin_types!` call per Kubernetes version.
mod types;

/// The Kubernetes version (`1.33`) whose API is served: k8s-openapi's enabled version, recorded
/// in the generated list.
pub(crate) const KUBERNETES_VERSION: &str = types::KUBERNETES_VERSION;

/// Every GA API type of the enabled Kubernetes version in k8s-openapi: stored resources,
/// create-only ones (reviews, `Binding`) and subresource bodies (`Scale`, `Eviction`,
/// `TokenRequest`).
pub(crate) fn api_types() -> &'static [ApiType] {
    static TYPES: LazyLock<Vec<ApiType>> = LazyLock::new(types::api_types);
    &TYPES
}

/// What kube-apiserver adds to a k8s-openapi type for one resource: names, verbs, behaviour.
struct Policy {
    singular: Option<&'static str>,
    short: &'static [&'static str],
    categories: &'static [&'static str],
    verbs: Option<&'static [&'static str]>,
    strategy: Strategy,
    name_rule: NameRule,
    field_selectors: &'static [&'static str],
    scale: bool,
    generation: bool,
}

const PLAIN: Policy = Policy {
    singular: None,
    short: &[],
    categories: &[],
    verbs: None,
    strategy: Strategy::Plain,
    name_rule: NameRule::DnsSubdomain,
    field_selectors: &[],
    scale: false,
    generation: false,
};

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

/// The categories `kubectl get all` reads, and the API-extension kinds.
const ALL: &[&str] = &["all"];
const API_EXTENSIONS: &[&str] = &["api-extensions"];
const CREATE: &[&str] = &["create"];

/// kube-apiserver's additions per (group, plural); anything not named is plain storage with
/// DNS-subdomain names. Short names and categories as kube-apiserver's REST storages declare
/// them (`ShortNames()`, `Categories()` in pkg/registry/<group>/<resource>/storage).
fn policy(group: &str, plural: &str) -> Policy {
    match (group, plural) {
        ("", "namespaces") => Policy {
            short: &["ns"],
            verbs: Some(&[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ]),
            strategy: Strategy::Namespace,
            name_rule: NameRule::DnsLabel,
            field_selectors: &["status.phase"],
            ..PLAIN
        },
        ("", "configmaps") => Policy {
            short: &["cm"],
            ..PLAIN
        },
        ("", "secrets") => Policy {
            strategy: Strategy::Secret,
            field_selectors: &["type"],
            ..PLAIN
        },
        ("", "serviceaccounts") => Policy {
            short: &["sa"],
            strategy: Strategy::ServiceAccount,
            ..PLAIN
        },
        // core/v1 Events get no name validation of their own (`ValidateEventCreate` checks
        // names only for events.k8s.io/v1), just the generic path-segment rule of
        // apiserver/pkg/registry/rest/create.go `BeforeCreate`.
        ("", "events") => Policy {
            short: &["ev"],
            strategy: Strategy::Event,
            name_rule: NameRule::PathSegment,
            field_selectors: EVENT_FIELDS,
            ..PLAIN
        },
        ("events.k8s.io", "events") => Policy {
            short: &["ev"],
            strategy: Strategy::EventsV1,
            ..PLAIN
        },
        ("", "services") => Policy {
            short: &["svc"],
            categories: ALL,
            strategy: Strategy::Service,
            name_rule: NameRule::Dns1035Label,
            ..PLAIN
        },
        ("", "pods") => Policy {
            short: &["po"],
            categories: ALL,
            strategy: Strategy::Pod,
            field_selectors: &[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ],
            ..PLAIN
        },
        ("", "bindings") => Policy {
            verbs: Some(CREATE),
            strategy: Strategy::Binding,
            ..PLAIN
        },
        ("", "componentstatuses") => Policy {
            short: &["cs"],
            verbs: Some(&["get", "list"]),
            ..PLAIN
        },
        ("", "resourcequotas") => Policy {
            short: &["quota"],
            ..PLAIN
        },
        ("", "limitranges") => Policy {
            short: &["limits"],
            ..PLAIN
        },
        ("", "endpoints") => Policy {
            singular: Some("endpoints"),
            short: &["ep"],
            ..PLAIN
        },
        ("", "nodes") => Policy {
            short: &["no"],
            ..PLAIN
        },
        ("", "persistentvolumes") => Policy {
            short: &["pv"],
            ..PLAIN
        },
        ("", "persistentvolumeclaims") => Policy {
            short: &["pvc"],
            ..PLAIN
        },
        ("", "replicationcontrollers") => Policy {
            short: &["rc"],
            categories: ALL,
            scale: true,
            generation: true,
            ..PLAIN
        },
        ("apps", "deployments") => Policy {
            short: &["deploy"],
            categories: ALL,
            strategy: Strategy::Deployment,
            scale: true,
            generation: true,
            ..PLAIN
        },
        ("apps", "replicasets") => Policy {
            short: &["rs"],
            categories: ALL,
            scale: true,
            generation: true,
            ..PLAIN
        },
        ("apps", "statefulsets") => Policy {
            short: &["sts"],
            categories: ALL,
            strategy: Strategy::Workload,
            scale: true,
            generation: true,
            ..PLAIN
        },
        ("apps", "daemonsets") => Policy {
            short: &["ds"],
            categories: ALL,
            strategy: Strategy::Workload,
            generation: true,
            ..PLAIN
        },
        ("batch", "jobs") => Policy {
            categories: ALL,
            strategy: Strategy::Workload,
            generation: true,
            field_selectors: &["status.successful"],
            ..PLAIN
        },
        ("batch", "cronjobs") => Policy {
            short: &["cj"],
            categories: ALL,
            generation: true,
            ..PLAIN
        },
        ("autoscaling", "horizontalpodautoscalers") => Policy {
            short: &["hpa"],
            categories: ALL,
            strategy: Strategy::Autoscaling,
            generation: true,
            ..PLAIN
        },
        ("policy", "poddisruptionbudgets") => Policy {
            short: &["pdb"],
            generation: true,
            ..PLAIN
        },
        ("networking.k8s.io", "ingresses") => Policy {
            short: &["ing"],
            generation: true,
            ..PLAIN
        },
        ("networking.k8s.io", "ipaddresses") => Policy {
            short: &["ip"],
            ..PLAIN
        },
        ("networking.k8s.io", "networkpolicies") => Policy {
            short: &["netpol"],
            generation: true,
            ..PLAIN
        },
        // pkg/apis/certificates/validation: "We don't care what you call your certificate
        // requests" — only `BeforeCreate`'s path-segment rule applies.
        ("certificates.k8s.io", "certificatesigningrequests") => Policy {
            short: &["csr"],
            strategy: Strategy::Csr,
            name_rule: NameRule::PathSegment,
            ..PLAIN
        },
        ("scheduling.k8s.io", "priorityclasses") => Policy {
            short: &["pc"],
            ..PLAIN
        },
        ("storage.k8s.io", "storageclasses") => Policy {
            short: &["sc"],
            ..PLAIN
        },
        ("storage.k8s.io", "volumeattributesclasses") => Policy {
            short: &["vac"],
            ..PLAIN
        },
        ("admissionregistration.k8s.io", _) => Policy {
            categories: API_EXTENSIONS,
            generation: true,
            ..PLAIN
        },
        ("apiregistration.k8s.io", "apiservices") => Policy {
            categories: API_EXTENSIONS,
            ..PLAIN
        },
        ("apiextensions.k8s.io", "customresourcedefinitions") => Policy {
            short: &["crd", "crds"],
            categories: API_EXTENSIONS,
            strategy: Strategy::Crd,
            generation: true,
            ..PLAIN
        },
        ("authentication.k8s.io", "tokenreviews") => Policy {
            verbs: Some(CREATE),
            strategy: Strategy::TokenReview,
            ..PLAIN
        },
        ("authentication.k8s.io", "selfsubjectreviews") => Policy {
            verbs: Some(CREATE),
            strategy: Strategy::SelfSubjectReview,
            ..PLAIN
        },
        ("authorization.k8s.io", _) => Policy {
            verbs: Some(CREATE),
            strategy: Strategy::AccessReview,
            ..PLAIN
        },
        ("rbac.authorization.k8s.io", _) => Policy {
            name_rule: NameRule::PathSegment,
            ..PLAIN
        },
        _ => PLAIN,
    }
}

/// How `metadata.name` of a built-in resource is checked (`None`: objects are never stored).
pub(crate) fn name_rule(t: &ApiType) -> Option<NameRule> {
    t.list_kind?;
    Some(policy(t.group, t.plural).name_rule)
}

/// The order groups appear in discovery: kube-apiserver's (core first, then its group priority
/// list, pkg/controlplane/apiserver/options), then anything newer by name.
const GROUP_ORDER: &[&str] = &[
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "resource.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "storagemigration.k8s.io",
];

fn build(t: &'static ApiType, preferred: &str) -> ResourceInfo {
    let p = policy(t.group, t.plural);
    // One store per (group, resource): versions of a kind share it, kept in the group's preferred
    // version; events.k8s.io/v1 Events share core/v1's storage, as in kube-apiserver.
    let (store, storage_api_version) = if p.strategy == Strategy::EventsV1 {
        (StoreKey::new("", "events"), "v1".to_string())
    } else {
        (
            StoreKey::new(t.group, t.plural),
            crate::registry::api_version(t.group, preferred),
        )
    };
    let stored = t.list_kind.is_some();
    let definitions = crate::schema::builtin_definitions();
    // kube-apiserver serves a `status` subresource for every stored kind whose type has a status.
    let status = stored
        && definitions
            .get(t.definition.as_ref())
            .and_then(|d| d.pointer("/properties/status"))
            .is_some();
    let verbs = p
        .verbs
        .unwrap_or(if stored { STANDARD_VERBS } else { CREATE });
    let root = serde_json::json!({"$ref": format!("#/components/schemas/{}", t.definition)});
    ResourceInfo {
        group: t.group.into(),
        version: t.version.into(),
        resource: t.plural.into(),
        singular: p
            .singular
            .map(str::to_string)
            .unwrap_or_else(|| t.kind.to_lowercase()),
        kind: t.kind.into(),
        list_kind: t
            .list_kind
            .map(str::to_string)
            .unwrap_or_else(|| format!("{}List", t.kind)),
        namespaced: t.scope == Scope::Namespaced,
        short_names: p.short.iter().map(|s| s.to_string()).collect(),
        categories: p.categories.iter().map(|s| s.to_string()).collect(),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        status,
        scale: p.scale.then(|| ScaleSpec {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
        }),
        store,
        storage_api_version,
        strategy: p.strategy,
        generation: p.generation,
        printer_columns: Vec::new(),
        validator: Validator::builtin(t.group, t.version, t.kind).map(Arc::new),
        field_selectors: p.field_selectors.iter().map(|s| s.to_string()).collect(),
        shape: Arc::new(TypeShape::from_openapi(&root, definitions)),
        openapi_schema: None,
        source: "builtin".into(),
        source_uid: None,
        deprecated: false,
        conversion: None,
    }
}

/// The built-in resources, built once per process and shared by every shard.
pub(crate) fn builtins() -> Arc<ApiSet> {
    static SET: OnceLock<Arc<ApiSet>> = OnceLock::new();
    SET.get_or_init(|| {
        let mut served: Vec<&'static ApiType> = api_types()
            .iter()
            .filter(|t| t.scope != Scope::Subresource)
            .collect();
        let rank = |g: &str| {
            GROUP_ORDER
                .iter()
                .position(|x| *x == g)
                .unwrap_or(GROUP_ORDER.len())
        };
        // Within a group by resource name, as kube-apiserver lists them (`clusterrolebindings`
        // before `clusterroles`); stable, so a resource's versions keep k8s-openapi's order.
        served.sort_by(|a, b| {
            rank(a.group)
                .cmp(&rank(b.group))
                .then(a.group.cmp(b.group))
                .then(a.plural.cmp(b.plural))
        });
        let preferred = |t: &ApiType| {
            served
                .iter()
                .filter(|o| o.group == t.group && o.plural == t.plural)
                .map(|o| o.version)
                .min_by(|a, b| crate::registry::version_priority_cmp(a, b))
                .unwrap_or(t.version)
        };
        let infos: Vec<Arc<ResourceInfo>> = served
            .iter()
            .map(|t| Arc::new(build(t, preferred(t))))
            .collect();
        Arc::new(ApiSet::new(infos))
    })
    .clone()
}
