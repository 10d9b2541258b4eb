//! The resource registry: which resources a logical cluster serves, and how.
//!
//! Built-in resources are one shared, immutable set. Every logical cluster adds its own dynamic
//! resources — from CustomResourceDefinitions now, and from kcp APIBindings later — registered under a
//! *source* id (e.g. `crd/widgets.example.com`) so that each contributor replaces only its own entries.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;

use crate::store::StoreKey;
use crate::validation::Validator;

/// Which built-in behaviour (strategy) a resource has beyond generic storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Plain storage, no special behaviour (configmaps, leases, RBAC objects, custom resources, …).
    Plain,
    /// Namespaces: phase, `kubernetes` finalizer, deletion of their contents.
    Namespace,
    /// Secrets: `stringData` folded into `data`, default type.
    Secret,
    /// ServiceAccounts (token subresource).
    ServiceAccount,
    /// core/v1 Events (shared storage with events.k8s.io/v1).
    Event,
    /// events.k8s.io/v1 Events, converted to and from core/v1 storage.
    EventsV1,
    /// Services: defaults and a cluster IP.
    Service,
    /// apps/v1 Deployments: defaults, scale subresource, optional simulated availability.
    Deployment,
    /// StatefulSets, DaemonSets and Jobs: no pods run here, but with the cluster's availability
    /// switch on their status is filled as if they had (see `controllers::deployment`).
    Workload,
    /// Pods: the `ephemeralcontainers`, `eviction` and `binding` subresources.
    Pod,
    /// core/v1 Bindings: create-only, sets a pod's `spec.nodeName`, never stored.
    Binding,
    /// CertificateSigningRequests: the `approval` subresource.
    Csr,
    /// HorizontalPodAutoscalers: autoscaling/v1 is a view of the autoscaling/v2 objects.
    Autoscaling,
    /// CustomResourceDefinitions: names and conditions set by the server, resources registered.
    Crd,
    /// TokenReviews: create-only, answered by the authenticator, never stored.
    TokenReview,
    /// SubjectAccessReviews (all kinds) and SelfSubjectRulesReviews: create-only, answered by the
    /// authorizer, never stored.
    AccessReview,
    /// SelfSubjectReviews (`kubectl auth whoami`): create-only, never stored.
    SelfSubjectReview,
    /// Custom resources.
    Custom,
}

/// A column of `kubectl get` output (`additionalPrinterColumns`).
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean`, `date`.
    pub type_: String,
    /// OpenAPI format (`name` for the name column).
    pub format: String,
    /// Description shown by `kubectl explain`-like tools.
    pub description: String,
    /// 0 = shown by default, >0 = only with `-o wide`.
    pub priority: i64,
    /// Simple JSONPath (`.spec.replicas`) the cell is read from.
    pub json_path: String,
}

/// The `scale` subresource mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleSpec {
    /// Path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas: String,
    /// Path of the observed replicas, e.g. `.status.replicas`.
    pub status_replicas: String,
    /// Path of the label selector, if any.
    pub label_selector: Option<String>,
}

/// One served (group, version, resource).
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    /// API group, empty for core.
    pub group: String,
    /// Served version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
    /// Singular name.
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// List kind.
    pub list_kind: String,
    /// Namespaced (else cluster-scoped).
    pub namespaced: bool,
    /// Short names for kubectl.
    pub short_names: Vec<String>,
    /// Categories (`all`, …).
    pub categories: Vec<String>,
    /// Verbs advertised in discovery and allowed.
    pub verbs: Vec<String>,
    /// Has a `status` subresource.
    pub status: bool,
    /// Has a `scale` subresource.
    pub scale: Option<ScaleSpec>,
    /// Where objects are stored.
    pub store: StoreKey,
    /// `apiVersion` of the stored representation (objects are converted to `version` when served).
    pub storage_api_version: String,
    /// Behaviour.
    pub strategy: Strategy,
    /// Whether `metadata.generation` is maintained.
    pub generation: bool,
    /// Columns for Table output (empty: Name and Age).
    pub printer_columns: Vec<PrinterColumn>,
    /// The structural schema of this version, when objects are validated.
    pub validator: Option<Arc<Validator>>,
    /// Field-selector fields beyond `metadata.name`/`metadata.namespace`.
    pub field_selectors: Vec<String>,
    /// The type graph patches and server-side apply walk (list/map semantics, merge keys).
    pub shape: Arc<crate::patch::TypeShape>,
    /// The raw OpenAPI v3 schema of this version (for /openapi and `kubectl explain`), if known.
    pub openapi_schema: Option<Arc<Value>>,
    /// Which contributor registered it (`builtin`, `crd/<name>`, …).
    pub source: String,
    /// The uid of the object that defines it (CRD, kcp APIResourceSchema), if any.
    pub source_uid: Option<String>,
    /// Whether this version is the preferred one of its group in discovery.
    pub deprecated: bool,
    /// The CRD's conversion webhook (`spec.conversion.strategy: Webhook`); `None` converts by
    /// changing `apiVersion` only.
    pub conversion: Option<Arc<crate::convert::webhook::WebhookConverter>>,
}

impl ResourceInfo {
    /// A built-in Go type: kube-apiserver writes the items of its lists without `kind` and
    /// `apiVersion` (they are typed Go structs whose TypeMeta is empty), where the items of a
    /// custom resource keep them.
    pub fn typed(&self) -> bool {
        self.strategy != Strategy::Custom
    }

    /// `apiVersion` of the served version (`v1`, `apps/v1`).
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }

    /// Does this resource keep objects at all (TokenReview and access reviews do not)?
    pub fn stores_objects(&self) -> bool {
        !matches!(
            self.strategy,
            Strategy::TokenReview
                | Strategy::AccessReview
                | Strategy::SelfSubjectReview
                | Strategy::Binding
        )
    }

    /// Does this resource advertise a verb?
    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}

/// `group/version`, or just `version` for the core group.
pub(crate) fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Splits an apiVersion into group and version.
pub(crate) fn split_api_version(av: &str) -> (&str, &str) {
    match av.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", av),
    }
}

/// An immutable set of resources with lookup indexes.
#[derive(Debug, Default)]
pub(crate) struct ApiSet {
    by_gvr: HashMap<(String, String, String), Arc<ResourceInfo>>,
    /// group → version → resources, in registration order.
    groups: BTreeMap<String, BTreeMap<String, Vec<Arc<ResourceInfo>>>>,
    /// Registration order of groups (discovery lists built-ins in kube-apiserver's order).
    group_order: Vec<String>,
}

impl ApiSet {
    /// Builds the indexes for a list of resources.
    pub(crate) fn new(infos: impl IntoIterator<Item = Arc<ResourceInfo>>) -> Self {
        let mut set = ApiSet::default();
        for i in infos {
            set.insert(i);
        }
        set
    }

    fn insert(&mut self, i: Arc<ResourceInfo>) {
        if !self.groups.contains_key(&i.group) {
            self.group_order.push(i.group.clone());
        }
        self.by_gvr.insert(
            (i.group.clone(), i.version.clone(), i.resource.clone()),
            i.clone(),
        );
        self.groups
            .entry(i.group.clone())
            .or_default()
            .entry(i.version.clone())
            .or_default()
            .push(i);
    }

    /// Every resource.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<ResourceInfo>> {
        self.group_order
            .iter()
            .flat_map(|g| self.groups[g].values().flatten())
    }

    /// A resource by group, version and plural.
    pub(crate) fn get(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<ResourceInfo>> {
        self.by_gvr
            .get(&(group.to_string(), version.to_string(), resource.to_string()))
            .cloned()
    }

    /// The groups for discovery, in registration order (a set served on its own, such as a kcp
    /// virtual workspace's).
    pub(crate) fn group_infos(&self) -> Vec<GroupInfo> {
        self.group_order
            .iter()
            .map(|g| GroupInfo {
                name: g.clone(),
                versions: sorted_versions(self.groups[g].keys()),
                resources: self.groups[g].clone(),
            })
            .collect()
    }
}

/// One API group as discovery shows it.
#[derive(Debug, Clone)]
pub(crate) struct GroupInfo {
    /// Group name (empty for core).
    pub name: String,
    /// Versions, preferred first.
    pub versions: Vec<String>,
    /// Resources per version.
    pub resources: BTreeMap<String, Vec<Arc<ResourceInfo>>>,
}

/// Orders versions the way Kubernetes prefers them: GA over beta over alpha, higher numbers first,
/// then non-Kubernetes-style versions alphabetically.
pub(crate) fn version_priority_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 3, 0));
        }
        let (stage, n) = if let Some(n) = tail.strip_prefix("beta") {
            (2, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n)
        } else {
            return None;
        };
        Some((major, stage, n.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((am, as_, an)), Some((bm, bs, bn))) => {
            bs.cmp(&as_).then(bm.cmp(&am)).then(bn.cmp(&an))
        }
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// The registry of a shard: shared built-ins plus per-logical-cluster dynamic resources.
pub(crate) struct Registry {
    builtins: Arc<ApiSet>,
    dynamic: RwLock<HashMap<Arc<str>, ClusterApis>>,
}

#[derive(Default, Clone)]
struct ClusterApis {
    sources: BTreeMap<String, Vec<Arc<ResourceInfo>>>,
    set: Arc<ApiSet>,
    /// Bumped on every change, so derived documents (OpenAPI) know when to rebuild.
    generation: u64,
}

impl Registry {
    /// A registry with the given built-ins.
    pub(crate) fn new(builtins: Arc<ApiSet>) -> Self {
        Registry {
            builtins,
            dynamic: RwLock::new(HashMap::new()),
        }
    }

    /// Replaces what `source` contributes to a logical cluster (an empty list removes it).
    pub(crate) fn set_source(&self, cluster: &str, source: &str, infos: Vec<Arc<ResourceInfo>>) {
        let mut d = self.dynamic.write();
        let apis = d.entry(cluster.into()).or_default();
        if infos.is_empty() {
            apis.sources.remove(source);
        } else {
            apis.sources.insert(source.to_string(), infos);
        }
        apis.set = Arc::new(ApiSet::new(apis.sources.values().flatten().cloned()));
        apis.generation += 1;
    }

    /// A number that changes whenever the dynamic resources of a logical cluster change.
    pub(crate) fn generation(&self, cluster: &str) -> u64 {
        self.dynamic.read().get(cluster).map_or(0, |a| a.generation)
    }

    /// Forgets everything dynamic of a logical cluster.
    pub(crate) fn remove_cluster(&self, cluster: &str) {
        self.dynamic.write().remove(cluster);
    }

    /// The dynamic resources of a logical cluster.
    pub(crate) fn dynamic(&self, cluster: &str) -> Arc<ApiSet> {
        self.dynamic
            .read()
            .get(cluster)
            .map(|a| a.set.clone())
            .unwrap_or_default()
    }

    /// The built-in resources.
    pub(crate) fn builtins(&self) -> &Arc<ApiSet> {
        &self.builtins
    }

    /// Looks a served resource up; built-ins take precedence, as in kube-apiserver.
    pub(crate) fn lookup(
        &self,
        cluster: &str,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<ResourceInfo>> {
        let key = (group.to_string(), version.to_string(), resource.to_string());
        if let Some(i) = self.builtins.by_gvr.get(&key) {
            return Some(i.clone());
        }
        self.dynamic
            .read()
            .get(cluster)?
            .set
            .by_gvr
            .get(&key)
            .cloned()
    }

    /// Looks a resource up by group and kind (any served version; the storage one when possible).
    pub(crate) fn lookup_kind(
        &self,
        cluster: &str,
        group: &str,
        kind: &str,
    ) -> Option<Arc<ResourceInfo>> {
        let find = |set: &ApiSet| -> Option<Arc<ResourceInfo>> {
            let versions = set.groups.get(group)?;
            let mut found: Option<Arc<ResourceInfo>> = None;
            for infos in versions.values() {
                for i in infos {
                    if i.kind == kind {
                        if i.storage_api_version == i.api_version() {
                            return Some(i.clone());
                        }
                        found.get_or_insert_with(|| i.clone());
                    }
                }
            }
            found
        };
        find(&self.builtins).or_else(|| self.dynamic.read().get(cluster).and_then(|a| find(&a.set)))
    }

    /// The resource (its storage version) whose objects live under `store`.
    pub(crate) fn by_store(&self, cluster: &str, store: &StoreKey) -> Option<Arc<ResourceInfo>> {
        let pick = |set: &ApiSet| -> Option<Arc<ResourceInfo>> {
            let mut found = None;
            for i in set.all() {
                if &i.store == store {
                    if i.storage_api_version == i.api_version() {
                        return Some(i.clone());
                    }
                    found.get_or_insert_with(|| i.clone());
                }
            }
            found
        };
        pick(&self.builtins).or_else(|| pick(&self.dynamic(cluster)))
    }

    /// Every resource of a logical cluster.
    pub(crate) fn all(&self, cluster: &str) -> Vec<Arc<ResourceInfo>> {
        let dynamic = self.dynamic(cluster);
        self.builtins.all().chain(dynamic.all()).cloned().collect()
    }

    /// The groups of a logical cluster for discovery, core first, then built-in groups in order, then
    /// dynamic groups sorted by name.
    pub(crate) fn groups(&self, cluster: &str) -> Vec<GroupInfo> {
        let dynamic = self.dynamic(cluster);
        let mut out: Vec<GroupInfo> = Vec::new();
        let mut add = |set: &ApiSet, order: Vec<String>| {
            for g in order {
                let versions = &set.groups[&g];
                if let Some(existing) = out.iter_mut().find(|x| x.name == g) {
                    for (v, rs) in versions {
                        existing
                            .resources
                            .entry(v.clone())
                            .or_default()
                            .extend(rs.iter().cloned());
                    }
                    existing.versions = sorted_versions(existing.resources.keys());
                    continue;
                }
                out.push(GroupInfo {
                    name: g.clone(),
                    versions: sorted_versions(versions.keys()),
                    resources: versions.clone(),
                });
            }
        };
        add(&self.builtins, self.builtins.group_order.clone());
        let mut dyn_groups = dynamic.group_order.clone();
        dyn_groups.sort();
        add(&dynamic, dyn_groups);
        out
    }
}

fn sorted_versions<'a>(vs: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut v: Vec<String> = vs.cloned().collect();
    v.sort_by(|a, b| version_priority_cmp(a, b));
    v
}

#[cfg(test)]
mod tests {
    use super::version_priority_cmp;

    #[test]
    fn kube_version_order() {
        let mut v = vec![
            "v1alpha1", "v1", "foo", "v2beta1", "v1beta2", "v2", "v1beta1", "v10", "bar",
        ];
        v.sort_by(|a, b| version_priority_cmp(a, b));
        assert_eq!(
            v,
            [
                "v10", "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"
            ]
        );
    }
}
