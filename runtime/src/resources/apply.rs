//! Managed resources: server-side apply of a tenant's objects into its clusters, in dependency
//! order and gated on readiness, pruning what left the set — the `kubectl apply --prune
//! --applyset` model (KEP-3659) grown into the "managed object" manager every openMCP provider
//! used to carry privately.
//!
//! A set spans the tenant's clusters (each a [`Location`]: the tenant's control plane, the
//! workload cluster, the platform cluster). Each cluster keeps the set's inventory in a ConfigMap
//! (the ApplySet *parent*), so it survives restarts of the provider and moves with the cluster:
//! labelled `applyset.kubernetes.io/id`, annotated with the tooling and the member group-kinds as
//! kubectl does, and listing every member explicitly (group, version, kind, resource, namespace,
//! name, with its deletion policy and dependencies), so pruning and deleting need neither
//! discovery nor list permissions. Members carry the label `applyset.kubernetes.io/part-of`.
//!
//! **Apply** widens each inventory to old ∪ new (a crash half-way leaves nothing untracked), then
//! walks the members in dependency order — explicit [`Entry::depends_on`], plus a namespace
//! before what lives in it and a CRD before its custom resources — applying a member only once
//! every dependency is [ready](Readiness); an object whose live state already holds everything the
//! set declares is not written again, so a reconcile with nothing to do makes no write. Members
//! that left the set are deleted (or orphaned), and the inventory is narrowed to the new set.
//!
//! **Delete** removes the recorded members in reverse dependency order: a member is deleted only
//! once everything depending on it is gone; an [`DeletionPolicy::Orphan`] member stays and loses
//! its set label.
//!
//! Every apply and delete reports one [`ManagedResource`] per member, in the shape of the Go
//! providers' `status.resources`; a set made by [`Context`] hands them to the
//! runtime, which writes them into the Service API object's status and holds it `Progressing`
//! until every member is ready.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use base64::Engine;
use k8s_openapi::ClusterResourceScope;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams};
use kube::{Api, Resource};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::Context;
use crate::observed::{Collection, TenantView};
use crate::provider::ServiceProvider;
use crate::status::resources::{Location, ManagedResource, ResourcePhase, ResourceSink};
use crate::tenant::ClusterAccess;
use crate::waits::{Until, Wait};

/// Label on every member: the id of the set it belongs to.
pub const PART_OF_LABEL: &str = "applyset.kubernetes.io/part-of";
/// Label on the parent: the set's id.
pub const ID_LABEL: &str = "applyset.kubernetes.io/id";
/// Annotation on the parent: the tool that manages the set.
pub const TOOLING_ANNOTATION: &str = "applyset.kubernetes.io/tooling";
/// Annotation on the parent: the group-kinds of its members.
pub const GROUP_KINDS_ANNOTATION: &str = "applyset.kubernetes.io/contains-group-kinds";
/// Key in the parent's data listing the members.
pub const MEMBERS_KEY: &str = "members";
const TOOLING: &str = "service-provider/v1";

/// Why an apply, prune or delete failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// An object cannot be a member.
    #[error("{0}")]
    Invalid(String),
    /// A call to the cluster failed.
    #[error("{doing}: {source}")]
    Api {
        /// What was being done.
        doing: String,
        /// What failed.
        source: kube::Error,
    },
    /// The inventory ConfigMap holds something we cannot read.
    #[error(
        "the inventory ConfigMap {namespace}/{name} is corrupt ({message}); delete it to start over"
    )]
    Inventory {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What is wrong.
        message: String,
    },
}

/// What happens to a member when the set is deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeletionPolicy {
    /// The object is deleted (the default).
    #[default]
    Delete,
    /// The object stays, without its set label — e.g. a namespace that may hold end-user data.
    Orphan,
}

/// Whether a member is ready, as a [readiness check](Entry::ready_when) sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Ready: what depends on it may be applied.
    Ready,
    /// Not ready yet; the message says what it waits for.
    Pending(String),
    /// Failed; the message says why. Reported on the Service API object.
    Failed(String),
}

/// A member's own readiness check: the author's, for kinds the built-in rules do not know.
pub type ReadyCheck = Arc<dyn Fn(&DynamicObject) -> Readiness + Send + Sync>;

/// One member of a set, as recorded in the inventory.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Member {
    /// API group (empty for the core group).
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Resource (plural).
    pub resource: String,
    /// Namespace; `None` for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl Member {
    fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: if self.group.is_empty() {
                self.version.clone()
            } else {
                format!("{}/{}", self.group, self.version)
            },
            kind: self.kind.clone(),
            plural: self.resource.clone(),
        }
    }

    /// A wait for this object in the cluster `client` reaches.
    fn wait(&self, location: Location, client: &kube::Client, until: Until) -> Wait {
        Wait::new(
            location.describe(),
            client,
            &self.api_resource(),
            self.namespace.as_deref(),
            &self.name,
            until,
        )
    }

    fn api(&self, client: &kube::Client) -> Api<DynamicObject> {
        let resource = self.api_resource();
        match &self.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        }
    }

    /// Namespaces, then CRDs, then RBAC and configuration, then everything else: the order among
    /// members no dependency orders.
    fn order(&self) -> u8 {
        match (self.group.as_str(), self.kind.as_str()) {
            ("", "Namespace") => 0,
            ("apiextensions.k8s.io", "CustomResourceDefinition") => 1,
            ("", "ServiceAccount") | ("rbac.authorization.k8s.io", _) => 2,
            ("", "ConfigMap" | "Secret") => 3,
            _ => 4,
        }
    }

    fn group_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }
}

impl std::fmt::Display for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ", self.group_kind())?;
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}/")?;
        }
        f.write_str(&self.name)
    }
}

/// A member and the cluster it lives in: what [`Entry::depends_on`] names.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MemberRef {
    /// The cluster.
    pub location: Location,
    /// The object.
    #[serde(flatten)]
    pub member: Member,
}

impl std::fmt::Display for MemberRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} on the {}", self.member, self.location.describe())
    }
}

/// One line of a cluster's inventory: the member, and what deleting it needs to know.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Recorded {
    #[serde(flatten)]
    member: Member,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    orphan: bool,
    #[serde(default, rename = "dependsOn", skip_serializing_if = "Vec::is_empty")]
    depends_on: Vec<MemberRef>,
}

/// What an apply did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// Members written (created or changed).
    pub applied: Vec<Member>,
    /// Members whose live state already matched: not written.
    pub unchanged: Vec<Member>,
    /// Members not applied because a dependency is not ready.
    pub waiting: Vec<Member>,
    /// Members of the previous apply that were deleted or orphaned.
    pub pruned: Vec<Member>,
    /// One entry per member, in apply order.
    pub resources: Vec<ManagedResource>,
}

impl ApplyReport {
    /// Whether every member is ready.
    pub fn ready(&self) -> bool {
        self.resources
            .iter()
            .all(|r| r.phase == ResourcePhase::Ready)
    }
}

/// What a delete did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteReport {
    /// Members gone (deleted now or earlier).
    pub deleted: Vec<Member>,
    /// Members left in place without their set label.
    pub orphaned: Vec<Member>,
    /// Members still present: being deleted, or waiting for what depends on them to go.
    pub remaining: Vec<ManagedResource>,
}

impl DeleteReport {
    /// Whether everything is gone (or orphaned) and the inventories are deleted.
    pub fn done(&self) -> bool {
        self.remaining.is_empty()
    }
}

/// The `status.resources` entry of a member.
fn managed_resource(
    key: &MemberRef,
    phase: ResourcePhase,
    message: impl Into<String>,
) -> ManagedResource {
    let m = &key.member;
    ManagedResource {
        api_group: (!m.group.is_empty()).then(|| m.group.clone()),
        kind: m.kind.clone(),
        name: m.name.clone(),
        namespace: m.namespace.clone(),
        phase,
        message: Some(message.into()),
        location: Some(key.location),
    }
}

/// One cluster of a set.
#[derive(Clone)]
struct Target {
    location: Location,
    client: kube::Client,
    namespace: String,
}

/// One object added to a set.
struct Declared {
    key: MemberRef,
    body: Value,
    depends_on: Vec<MemberRef>,
    policy: DeletionPolicy,
    check: Option<ReadyCheck>,
}

/// A named set of objects across a tenant's clusters. Build it with [`add`](Self::add) /
/// [`add_to`](Self::add_to), then [`apply`](Self::apply); or [`delete`](Self::delete) everything
/// an earlier apply installed.
pub struct ApplySet {
    name: String,
    field_manager: String,
    targets: Vec<Target>,
    objects: Vec<Declared>,
    sink: Option<ResourceSink>,
}

impl std::fmt::Debug for ApplySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApplySet")
            .field("name", &self.name)
            .field(
                "clusters",
                &self
                    .targets
                    .iter()
                    .map(|t| (t.location, &t.namespace))
                    .collect::<Vec<_>>(),
            )
            .field(
                "members",
                &self.objects.iter().map(|d| &d.key).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A member just added, to declare its dependencies, deletion policy or readiness check.
pub struct Entry<'a> {
    declared: &'a mut Declared,
}

impl Entry<'_> {
    /// Applies this member only once `dependency` is ready, and deletes it before `dependency`.
    pub fn depends_on(self, dependency: &MemberRef) -> Self {
        if !self.declared.depends_on.contains(dependency) {
            self.declared.depends_on.push(dependency.clone());
        }
        self
    }

    /// Leaves the object in place when the set is deleted or it leaves the set (only its set
    /// label goes): for a namespace that may hold end-user data.
    pub fn orphan(self) -> Self {
        self.declared.policy = DeletionPolicy::Orphan;
        self
    }

    /// Sets the deletion policy.
    pub fn deletion_policy(self, policy: DeletionPolicy) -> Self {
        self.declared.policy = policy;
        self
    }

    /// Decides readiness with `check` instead of the built-in rules (see [`readiness`]).
    pub fn ready_when(
        self,
        check: impl Fn(&DynamicObject) -> Readiness + Send + Sync + 'static,
    ) -> Self {
        self.declared.check = Some(Arc::new(check));
        self
    }

    /// This member, to name it in another member's [`depends_on`](Self::depends_on).
    pub fn key(&self) -> MemberRef {
        self.declared.key.clone()
    }
}

impl ApplySet {
    /// A set named `name` whose objects go by default into the cluster `client` talks to (at
    /// [`Location::ManagedControlPlane`]), with its inventory in the ConfigMap `name` in
    /// `inventory_namespace` there; objects are applied as `field_manager`.
    pub fn new(
        client: kube::Client,
        name: impl Into<String>,
        inventory_namespace: impl Into<String>,
        field_manager: impl Into<String>,
    ) -> Self {
        ApplySet {
            name: name.into(),
            field_manager: field_manager.into(),
            targets: vec![Target {
                location: Location::ManagedControlPlane,
                client,
                namespace: inventory_namespace.into(),
            }],
            objects: Vec::new(),
            sink: None,
        }
    }

    /// The default cluster is at `location` (reported in `status.resources`).
    pub fn located(mut self, location: Location) -> Self {
        if let Some(first) = self.targets.first_mut() {
            first.location = location;
        }
        self
    }

    /// Adds the cluster `client` talks to at `location`, keeping its inventory in
    /// `inventory_namespace` there (it must exist and must not be a member). Replaces a cluster
    /// already at `location`.
    pub fn with_cluster(
        mut self,
        location: Location,
        client: kube::Client,
        inventory_namespace: impl Into<String>,
    ) -> Self {
        let target = Target {
            location,
            client,
            namespace: inventory_namespace.into(),
        };
        match self.targets.iter_mut().find(|t| t.location == location) {
            Some(existing) => *existing = target,
            None => self.targets.push(target),
        }
        self
    }

    /// Keeps the default cluster's inventory in `namespace` instead (it must exist and must not
    /// be a member).
    pub fn inventory_namespace(mut self, namespace: impl Into<String>) -> Self {
        if let Some(first) = self.targets.first_mut() {
            first.namespace = namespace.into();
        }
        self
    }

    /// Reports every apply and delete into `sink`.
    pub fn report_to(mut self, sink: ResourceSink) -> Self {
        self.sink = Some(sink);
        self
    }

    /// The set's name (its inventory ConfigMaps' name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The field manager of the set's server-side applies.
    pub fn field_manager(&self) -> &str {
        &self.field_manager
    }

    /// The set's id in its default cluster: `applyset-<base64url(sha256(<name>.<namespace>.ConfigMap.))>-v1`,
    /// as KEP-3659 derives it from the parent.
    pub fn id(&self) -> String {
        let namespace = self
            .targets
            .first()
            .map(|t| t.namespace.as_str())
            .unwrap_or_default();
        set_id(&self.name, namespace)
    }

    fn target(&self, location: Location) -> Result<usize, ApplyError> {
        self.targets
            .iter()
            .position(|t| t.location == location)
            .ok_or_else(|| {
                ApplyError::Invalid(format!(
                    "the set {} has no {}: add it with ApplySet::with_cluster",
                    self.name,
                    location.describe()
                ))
            })
    }

    /// Adds a typed object to the default cluster. Namespaced objects must name their namespace.
    pub fn add<K>(&mut self, object: &K) -> Result<Entry<'_>, ApplyError>
    where
        K: Resource<DynamicType = ()> + Serialize,
        K::Scope: 'static,
    {
        let location = self.targets[0].location;
        self.add_to(location, object)
    }

    /// Adds a typed object to the cluster at `location`.
    pub fn add_to<K>(&mut self, location: Location, object: &K) -> Result<Entry<'_>, ApplyError>
    where
        K: Resource<DynamicType = ()> + Serialize,
        K::Scope: 'static,
    {
        let resource = ApiResource::erase::<K>(&());
        let cluster_scoped =
            std::any::TypeId::of::<K::Scope>() == std::any::TypeId::of::<ClusterResourceScope>();
        let json = serde_json::to_value(object).map_err(|e| {
            ApplyError::Invalid(format!("{} does not serialize: {e}", resource.kind))
        })?;
        self.add_json(location, &resource, !cluster_scoped, json)
    }

    /// Adds an object of a type known only at run time (`namespaced` says its scope) to the
    /// cluster at `location`.
    pub fn add_dynamic(
        &mut self,
        location: Location,
        object: &DynamicObject,
        resource: &ApiResource,
        namespaced: bool,
    ) -> Result<Entry<'_>, ApplyError> {
        let json = serde_json::to_value(object).map_err(|e| {
            ApplyError::Invalid(format!("{} does not serialize: {e}", resource.kind))
        })?;
        self.add_json(location, resource, namespaced, json)
    }

    fn add_json(
        &mut self,
        location: Location,
        resource: &ApiResource,
        namespaced: bool,
        mut json: Value,
    ) -> Result<Entry<'_>, ApplyError> {
        let target = self.target(location)?;
        let meta: ObjectMeta = json
            .get("metadata")
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| {
                ApplyError::Invalid(format!("{} has invalid metadata: {e}", resource.kind))
            })?
            .unwrap_or_default();
        let name = meta.name.clone().ok_or_else(|| {
            ApplyError::Invalid(format!(
                "a {} in the set has no metadata.name",
                resource.kind
            ))
        })?;
        let namespace = match (namespaced, meta.namespace.clone()) {
            (true, Some(ns)) => Some(ns),
            (true, None) => {
                return Err(ApplyError::Invalid(format!(
                    "{} {name} is namespaced: set metadata.namespace",
                    resource.kind
                )));
            }
            (false, _) => None,
        };
        let key = MemberRef {
            location,
            member: Member {
                group: resource.group.clone(),
                version: resource.version.clone(),
                kind: resource.kind.clone(),
                resource: resource.plural.clone(),
                namespace,
                name,
            },
        };
        if self.objects.iter().any(|d| d.key == key) {
            return Err(ApplyError::Invalid(format!("{key} is in the set twice")));
        }
        let id = set_id(&self.name, &self.targets[target].namespace);
        // Server-side apply needs apiVersion and kind in the body.
        if let Some(obj) = json.as_object_mut() {
            obj.insert("apiVersion".into(), resource.api_version.clone().into());
            obj.insert("kind".into(), resource.kind.clone().into());
            // An absent status is no intent; a status in the body is ignored by the server (it
            // is a subresource) and would make "already applied" never hold.
            obj.remove("status");
            let labels = obj
                .entry("metadata")
                .or_insert_with(|| serde_json::json!({}))
                .as_object_mut()
                .map(|m| m.entry("labels").or_insert_with(|| serde_json::json!({})));
            if let Some(Value::Object(labels)) = labels {
                labels.insert(PART_OF_LABEL.into(), id.into());
            }
            // Never send a resourceVersion or managedFields with an apply.
            if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
                meta.remove("resourceVersion");
                meta.remove("managedFields");
                meta.remove("uid");
                meta.remove("creationTimestamp");
            }
        }
        self.objects.push(Declared {
            key,
            body: json,
            depends_on: Vec::new(),
            policy: DeletionPolicy::Delete,
            check: None,
        });
        let declared = self
            .objects
            .last_mut()
            .ok_or_else(|| ApplyError::Invalid("the set lost a member".into()))?;
        Ok(Entry { declared })
    }

    /// The member `key` added earlier, to declare more about it (e.g. a dependency added by a
    /// helper that did not know it).
    pub fn entry(&mut self, key: &MemberRef) -> Option<Entry<'_>> {
        self.objects
            .iter_mut()
            .find(|d| d.key == *key)
            .map(|declared| Entry { declared })
    }

    fn inventory_api(&self, target: &Target) -> Api<ConfigMap> {
        Api::namespaced(target.client.clone(), &target.namespace)
    }

    /// The members the last apply recorded in the default cluster.
    pub async fn inventory(&self) -> Result<BTreeSet<Member>, ApplyError> {
        Ok(self
            .read_inventory(&self.targets[0])
            .await?
            .0
            .into_iter()
            .map(|r| r.member)
            .collect())
    }

    /// The records of `target`'s inventory and the resourceVersion they were read at (`None`
    /// when there is no inventory).
    async fn read_inventory(
        &self,
        target: &Target,
    ) -> Result<(Vec<Recorded>, Option<String>), ApplyError> {
        let parent = self
            .inventory_api(target)
            .get_opt(&self.name)
            .await
            .map_err(|source| ApplyError::Api {
                doing: format!(
                    "reading the inventory ConfigMap {}/{} on the {}",
                    target.namespace,
                    self.name,
                    target.location.describe()
                ),
                source,
            })?;
        let version = parent
            .as_ref()
            .and_then(|p| p.metadata.resource_version.clone());
        let Some(members) = parent
            .as_ref()
            .and_then(|p| p.data.as_ref())
            .and_then(|d| d.get(MEMBERS_KEY))
        else {
            return Ok((Vec::new(), version));
        };
        let records = serde_json::from_str(members).map_err(|e| ApplyError::Inventory {
            namespace: target.namespace.clone(),
            name: self.name.clone(),
            message: e.to_string(),
        })?;
        Ok((records, version))
    }

    /// The records of `target`'s inventory: as the last reconcile read or wrote them while the
    /// watches show the ConfigMap unchanged, else read.
    async fn recorded(&self, target: &Target) -> Result<Vec<Recorded>, ApplyError> {
        let Some(observed) = self.observed() else {
            return Ok(self.read_inventory(target).await?.0);
        };
        let collection = self.inventory_collection(target);
        let remembered = observed
            .unchanged(
                &collection,
                &target.client,
                &ApiResource::erase::<ConfigMap>(&()),
                Some(&target.namespace),
                &self.name,
            )
            .and_then(|memo| memo.downcast::<Vec<Recorded>>().ok());
        if let Some(records) = remembered {
            return Ok(records.as_ref().clone());
        }
        let (records, version) = self.read_inventory(target).await?;
        if let Some(version) = version {
            self.remember_inventory(target, &version, &records);
        }
        Ok(records)
    }

    fn remember_inventory(&self, target: &Target, version: &str, records: &[Recorded]) {
        if let Some(observed) = self.observed() {
            observed.remember(
                &self.inventory_collection(target),
                Some(&target.namespace),
                &self.name,
                version,
                Arc::new(records.to_vec()),
            );
        }
    }

    /// The inventory ConfigMaps of this set in `target`, as watched.
    fn inventory_collection(&self, target: &Target) -> Collection {
        Collection::new(
            target.location.describe(),
            &ApiResource::erase::<ConfigMap>(&()),
            Some(&target.namespace),
            ID_LABEL,
            &set_id(&self.name, &target.namespace),
        )
    }

    /// The members of `kind` of this set in `target`, as watched.
    fn member_collection(&self, target: &Target, member: &Member) -> Collection {
        Collection::new(
            target.location.describe(),
            &member.api_resource(),
            member.namespace.as_deref(),
            PART_OF_LABEL,
            &set_id(&self.name, &target.namespace),
        )
    }

    fn observed(&self) -> Option<&TenantView> {
        self.sink.as_ref().and_then(ResourceSink::observed)
    }

    async fn write_inventory(
        &self,
        target: &Target,
        members: &[Recorded],
    ) -> Result<(), ApplyError> {
        let group_kinds: BTreeSet<String> = members.iter().map(|r| r.member.group_kind()).collect();
        let members_json = serde_json::to_string(members).map_err(|e| ApplyError::Inventory {
            namespace: target.namespace.clone(),
            name: self.name.clone(),
            message: e.to_string(),
        })?;
        let parent = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": target.namespace,
                "labels": { ID_LABEL: set_id(&self.name, &target.namespace) },
                "annotations": {
                    TOOLING_ANNOTATION: TOOLING,
                    GROUP_KINDS_ANNOTATION: group_kinds.into_iter().collect::<Vec<_>>().join(","),
                },
            },
            "data": { MEMBERS_KEY: members_json },
        });
        let written = self
            .inventory_api(target)
            .patch(
                &self.name,
                &PatchParams::apply(&self.field_manager).force(),
                &Patch::Apply(&parent),
            )
            .await
            .map_err(|source| ApplyError::Api {
                doing: format!(
                    "writing the inventory ConfigMap {}/{} on the {}",
                    target.namespace,
                    self.name,
                    target.location.describe()
                ),
                source,
            })?;
        if let Some(version) = &written.metadata.resource_version {
            self.remember_inventory(target, version, members);
        }
        Ok(())
    }

    async fn delete_inventory(&self, target: &Target) -> Result<(), ApplyError> {
        match self
            .inventory_api(target)
            .delete(&self.name, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(source) => Err(ApplyError::Api {
                doing: format!(
                    "deleting the inventory ConfigMap {}/{} on the {}",
                    target.namespace,
                    self.name,
                    target.location.describe()
                ),
                source,
            }),
        }
    }

    /// Every dependency of each declared member: its own, the namespace it lives in and the CRD
    /// defining its kind when those are in the set too.
    fn dependencies(&self) -> Vec<Vec<MemberRef>> {
        let crds: HashMap<(Location, String, String), &MemberRef> = self
            .objects
            .iter()
            .filter(|d| {
                d.key.member.group == "apiextensions.k8s.io"
                    && d.key.member.kind == "CustomResourceDefinition"
            })
            .filter_map(|d| {
                let group = d.body.pointer("/spec/group")?.as_str()?;
                let kind = d.body.pointer("/spec/names/kind")?.as_str()?;
                Some(((d.key.location, group.to_owned(), kind.to_owned()), &d.key))
            })
            .collect();
        self.objects
            .iter()
            .map(|d| {
                let mut deps = d.depends_on.clone();
                let m = &d.key.member;
                if let Some(ns) = &m.namespace {
                    let namespace = MemberRef {
                        location: d.key.location,
                        member: Member {
                            group: String::new(),
                            version: "v1".into(),
                            kind: "Namespace".into(),
                            resource: "namespaces".into(),
                            namespace: None,
                            name: ns.clone(),
                        },
                    };
                    if self.objects.iter().any(|o| o.key == namespace) && !deps.contains(&namespace)
                    {
                        deps.push(namespace);
                    }
                }
                if let Some(crd) = crds.get(&(d.key.location, m.group.clone(), m.kind.clone()))
                    && !deps.contains(crd)
                {
                    deps.push((*crd).clone());
                }
                deps
            })
            .collect()
    }

    /// Indexes of the declared members in apply order: dependencies first, then by kind
    /// ([`Member::order`]), then as declared. A cycle is an error.
    fn apply_order(&self, deps: &[Vec<MemberRef>]) -> Result<Vec<usize>, ApplyError> {
        let index: HashMap<&MemberRef, usize> = self
            .objects
            .iter()
            .enumerate()
            .map(|(i, d)| (&d.key, i))
            .collect();
        let mut placed = vec![false; self.objects.len()];
        let mut order = Vec::with_capacity(self.objects.len());
        while order.len() < self.objects.len() {
            let next = (0..self.objects.len())
                .filter(|&i| !placed[i])
                .filter(|&i| {
                    deps[i]
                        .iter()
                        .all(|dep| index.get(dep).is_none_or(|&j| placed[j]))
                })
                .min_by_key(|&i| (self.objects[i].key.member.order(), i));
            let Some(next) = next else {
                let stuck: Vec<String> = (0..self.objects.len())
                    .filter(|&i| !placed[i])
                    .map(|i| self.objects[i].key.to_string())
                    .collect();
                return Err(ApplyError::Invalid(format!(
                    "the dependencies of the set {} form a cycle among: {}",
                    self.name,
                    stuck.join(", ")
                )));
            };
            placed[next] = true;
            order.push(next);
        }
        Ok(order)
    }

    /// Applies the set: every member in dependency order once its dependencies are ready,
    /// skipping those whose live state already holds what the set declares; then prunes what the
    /// last apply installed and this one omits. A dependency that is not ready leaves what
    /// depends on it unapplied (reported `Pending`, naming it); apply again later.
    pub async fn apply(&self) -> Result<ApplyReport, ApplyError> {
        let deps = self.dependencies();
        let order = self.apply_order(&deps)?;

        // Widen every inventory first: a crash half-way leaves nothing untracked.
        let mut previous: Vec<Vec<Recorded>> = Vec::with_capacity(self.targets.len());
        let mut current: Vec<Vec<Recorded>> = vec![Vec::new(); self.targets.len()];
        for &i in &order {
            let d = &self.objects[i];
            let t = self.target(d.key.location)?;
            current[t].push(Recorded {
                member: d.key.member.clone(),
                orphan: d.policy == DeletionPolicy::Orphan,
                depends_on: deps[i].clone(),
            });
        }
        for (t, target) in self.targets.iter().enumerate() {
            let old = self.recorded(target).await?;
            let mut union = current[t].clone();
            for r in &old {
                if !union.iter().any(|c| c.member == r.member) {
                    union.push(r.clone());
                }
            }
            if !same_records(&union, &old) {
                self.write_inventory(target, &union).await?;
            }
            previous.push(old);
        }

        let mut report = ApplyReport::default();
        let mut waits = Vec::new();
        let mut ready: HashMap<&MemberRef, ResourcePhase> = HashMap::new();
        let params = PatchParams::apply(&self.field_manager).force();
        for &i in &order {
            let d = &self.objects[i];
            let member = &d.key.member;
            let target = &self.targets[self.target(d.key.location)?];
            let client = &target.client;
            // A dependency outside this set is the author's to vouch for.
            let blocker = deps[i]
                .iter()
                .find(|dep| ready.get(dep).is_some_and(|p| *p != ResourcePhase::Ready));
            if let Some(blocker) = blocker {
                report.waiting.push(member.clone());
                let status = managed_resource(
                    &d.key,
                    ResourcePhase::Pending,
                    format!("waiting for {blocker}"),
                );
                ready.insert(&d.key, status.phase);
                report.resources.push(status);
                continue;
            }
            let collection = self.member_collection(target, member);
            let declared = digest(&d.body);
            // As the last reconcile left it, by the watches: nothing to read or write.
            let remembered = self
                .observed()
                .and_then(|observed| {
                    observed.unchanged(
                        &collection,
                        client,
                        &member.api_resource(),
                        member.namespace.as_deref(),
                        &member.name,
                    )
                })
                .and_then(|memo| memo.downcast::<Concluded>().ok())
                .filter(|concluded| concluded.declared == declared);
            if let Some(concluded) = remembered {
                report.unchanged.push(member.clone());
                ready.insert(&d.key, concluded.status.phase);
                report.resources.push(concluded.status.clone());
                continue;
            }
            let api = member.api(client);
            let live = api
                .get_opt(&member.name)
                .await
                .map_err(|source| ApplyError::Api {
                    doing: format!("reading {}", d.key),
                    source,
                })?;
            let object = match live {
                Some(live)
                    if live.metadata.deletion_timestamp.is_none()
                        && serde_json::to_value(&live).is_ok_and(|l| holds(&l, &d.body)) =>
                {
                    report.unchanged.push(member.clone());
                    live
                }
                _ => {
                    let applied = api
                        .patch(&member.name, &params, &Patch::Apply(&d.body))
                        .await
                        .map_err(|source| ApplyError::Api {
                            doing: format!("applying {}", d.key),
                            source,
                        })?;
                    report.applied.push(member.clone());
                    applied
                }
            };
            let status = status_of(&d.key, &object, d.check.as_ref());
            if let Some(version) = object.metadata.resource_version.clone() {
                match self.observed() {
                    Some(observed) => {
                        // A change from this version triggers the tenant: what is not ready
                        // yet needs no wait of its own once its kind is watched.
                        observed.remember(
                            &collection,
                            member.namespace.as_deref(),
                            &member.name,
                            &version,
                            Arc::new(Concluded {
                                declared,
                                status: status.clone(),
                            }),
                        );
                        if status.phase != ResourcePhase::Ready && !observed.watched(&collection) {
                            waits.push(member.wait(
                                d.key.location,
                                client,
                                Until::Changed(version),
                            ));
                        }
                    }
                    // Not ready yet (or failed, and may recover): watched until it changes.
                    None if status.phase != ResourcePhase::Ready => {
                        waits.push(member.wait(d.key.location, client, Until::Changed(version)));
                    }
                    None => {}
                }
            }
            ready.insert(&d.key, status.phase);
            report.resources.push(status);
        }

        // Prune what left the set, dependants first; then narrow the inventories.
        for (t, target) in self.targets.iter().enumerate() {
            let mut stale: Vec<&Recorded> = previous[t]
                .iter()
                .filter(|r| !current[t].iter().any(|c| c.member == r.member))
                .collect();
            stale.sort_by_key(|r| std::cmp::Reverse(r.member.order()));
            for r in stale {
                if let Some(observed) = self.observed() {
                    observed.forget(
                        &self.member_collection(target, &r.member),
                        r.member.namespace.as_deref(),
                        &r.member.name,
                    );
                }
                if r.orphan {
                    self.orphan_member(target, &r.member).await?;
                } else {
                    self.delete_member(target, &r.member).await?;
                }
                report.pruned.push(r.member.clone());
            }
            let union_differs = previous[t]
                .iter()
                .any(|r| !current[t].iter().any(|c| c.member == r.member));
            if union_differs {
                self.write_inventory(target, &current[t]).await?;
            }
        }
        if let Some(sink) = &self.sink {
            sink.record(&self.name, report.resources.clone(), waits);
        }
        Ok(report)
    }

    /// Deletes every member the last apply recorded, in reverse dependency order: a member goes
    /// only once every member depending on it is gone, an [orphaned](DeletionPolicy::Orphan) one
    /// stays without its set label. Once nothing is left, the inventories go too. Members still
    /// present (finalizers, or waiting for their dependants) are in
    /// [`DeleteReport::remaining`]: delete again later. The objects added to this set are
    /// ignored.
    pub async fn delete(&self) -> Result<DeleteReport, ApplyError> {
        let mut members: Vec<(usize, Recorded)> = Vec::new();
        for (t, target) in self.targets.iter().enumerate() {
            members.extend(
                self.read_inventory(target)
                    .await?
                    .0
                    .into_iter()
                    .map(|r| (t, r)),
            );
        }
        let key = |(t, r): &(usize, Recorded)| MemberRef {
            location: self.targets[*t].location,
            member: r.member.clone(),
        };
        let mut report = DeleteReport::default();
        // Present members and whether their deletion has started; gone ones drop out.
        let mut present: HashMap<MemberRef, bool> = HashMap::new();
        // What the server says holds a member's deletion, where it says so.
        let mut holding: HashMap<MemberRef, String> = HashMap::new();
        for entry in &members {
            let (t, r) = entry;
            let live = r
                .member
                .api(&self.targets[*t].client)
                .get_opt(&r.member.name)
                .await
                .map_err(|source| ApplyError::Api {
                    doing: format!("reading {}", key(entry)),
                    source,
                })?;
            match live {
                Some(o) if r.orphan && !has_set_label(&o) => report.orphaned.push(r.member.clone()),
                Some(o) => {
                    if let Some(why) = deletion_held_by(&o) {
                        holding.insert(key(entry), why);
                    }
                    present.insert(key(entry), o.metadata.deletion_timestamp.is_some());
                }
                None => report.deleted.push(r.member.clone()),
            }
        }
        // Leaves first, as long as that frees more: what goes at once lets its dependencies go
        // in the same call.
        loop {
            let mut progressed = false;
            let mut order: Vec<&(usize, Recorded)> = members.iter().collect();
            order.sort_by_key(|(_, r)| std::cmp::Reverse(r.member.order()));
            for entry in order {
                let (t, r) = entry;
                let this = key(entry);
                let Some(&deleting) = present.get(&this) else {
                    continue;
                };
                let held = members.iter().any(|other| {
                    other.1.depends_on.contains(&this) && present.contains_key(&key(other))
                });
                if held || deleting {
                    continue;
                }
                let target = &self.targets[*t];
                if r.orphan {
                    self.orphan_member(target, &r.member).await?;
                    present.remove(&this);
                    report.orphaned.push(r.member.clone());
                    progressed = true;
                } else if self.delete_member(target, &r.member).await? {
                    present.remove(&this);
                    report.deleted.push(r.member.clone());
                    progressed = true;
                } else {
                    present.insert(this, true);
                }
            }
            if !progressed {
                break;
            }
        }
        let mut waits = Vec::new();
        for entry in &members {
            let this = key(entry);
            let Some(&deleting) = present.get(&this) else {
                continue;
            };
            // Going: watched until it is gone. One held by what depends on it waits for that
            // to go, which is watched.
            if deleting {
                let (t, r) = entry;
                waits.push(
                    r.member
                        .wait(this.location, &self.targets[*t].client, Until::Gone),
                );
            }
            let waiting_for = members.iter().map(key).find(|other| {
                present.contains_key(other)
                    && members.iter().any(|(t, r)| {
                        self.targets[*t].location == other.location
                            && r.member == other.member
                            && r.depends_on.contains(&this)
                    })
            });
            let message = match (deleting, waiting_for) {
                (true, _) => match holding.get(&this) {
                    Some(why) => format!("being deleted ({why})"),
                    None => "being deleted".to_owned(),
                },
                (false, Some(other)) => format!("waiting for {other} to be deleted"),
                (false, None) => "waiting to be deleted".to_owned(),
            };
            report
                .remaining
                .push(managed_resource(&this, ResourcePhase::Terminating, message));
        }
        if report.remaining.is_empty() {
            for target in &self.targets {
                self.delete_inventory(target).await?;
            }
        }
        if let Some(sink) = &self.sink {
            sink.record(&self.name, report.remaining.clone(), waits);
        }
        Ok(report)
    }

    /// Deletes one member; whether it is gone now (`false`: finalizers hold it).
    async fn delete_member(&self, target: &Target, member: &Member) -> Result<bool, ApplyError> {
        match member
            .api(&target.client)
            .delete(&member.name, &DeleteParams::background())
            .await
        {
            Ok(either) => Ok(either.is_right()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(true),
            Err(source) => Err(ApplyError::Api {
                doing: format!("deleting {member} on the {}", target.location.describe()),
                source,
            }),
        }
    }

    /// Leaves a member in place without its set label.
    async fn orphan_member(&self, target: &Target, member: &Member) -> Result<(), ApplyError> {
        let patch = serde_json::json!({ "metadata": { "labels": { PART_OF_LABEL: null } } });
        match member
            .api(&target.client)
            .patch(&member.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(source) => Err(ApplyError::Api {
                doing: format!("orphaning {member} on the {}", target.location.describe()),
                source,
            }),
        }
    }

    /// The objects added so far, in apply order.
    pub fn members(&self) -> Vec<Member> {
        let deps = self.dependencies();
        match self.apply_order(&deps) {
            Ok(order) => order
                .into_iter()
                .map(|i| self.objects[i].key.member.clone())
                .collect(),
            Err(_) => self.objects.iter().map(|d| d.key.member.clone()).collect(),
        }
    }
}

/// What an apply concluded of a member, kept while the watches show it unchanged.
struct Concluded {
    /// [`digest`] of the body declared then: a different declaration is applied.
    declared: u64,
    status: ManagedResource,
}

/// A fingerprint of a declared body, to tell whether this reconcile declares what the last one
/// did. Only compared within the process.
fn digest(body: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.to_string().hash(&mut hasher);
    hasher.finish()
}

fn set_id(name: &str, namespace: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{name}.{namespace}.ConfigMap.").as_bytes(),
    );
    format!(
        "applyset-{}-v1",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
    )
}

fn same_records(a: &[Recorded], b: &[Recorded]) -> bool {
    a.len() == b.len() && a.iter().all(|x| b.contains(x))
}

/// What the server reports on an object being deleted about what its deletion waits for: a
/// CustomResourceDefinition's `Terminating` condition (kube's CRD finalizer deleting the
/// instances, or why it cannot), a namespace's deletion conditions. `reason: message` of the
/// first that is true.
fn deletion_held_by(object: &DynamicObject) -> Option<String> {
    const HOLDING: &[&str] = &[
        "Terminating",
        "NamespaceDeletionDiscoveryFailure",
        "NamespaceDeletionGroupVersionParsingFailure",
        "NamespaceDeletionContentFailure",
        "NamespaceContentRemaining",
        "NamespaceFinalizersRemaining",
    ];
    object.metadata.deletion_timestamp.as_ref()?;
    let conditions = object.data.get("status")?.get("conditions")?.as_array()?;
    conditions.iter().find_map(|c| {
        let field = |name: &str| c.get(name).and_then(serde_json::Value::as_str);
        (HOLDING.contains(&field("type")?) && field("status")? == "True").then(|| {
            match (field("reason"), field("message")) {
                (Some(reason), Some(message)) => format!("{reason}: {message}"),
                (Some(text), None) | (None, Some(text)) => text.to_owned(),
                (None, None) => field("type").unwrap_or_default().to_owned(),
            }
        })
    })
}

fn has_set_label(object: &DynamicObject) -> bool {
    object
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(PART_OF_LABEL))
}

/// Whether `live` already holds everything `want` declares: every field of `want` is in `live`
/// with the same value (lists element by element). Fields the server added (defaults, status,
/// metadata) do not matter, so a reconcile that changes nothing writes nothing, while a field
/// someone changed by hand is applied again.
fn holds(live: &Value, want: &Value) -> bool {
    match (live, want) {
        (Value::Object(live), Value::Object(want)) => want
            .iter()
            .all(|(k, w)| live.get(k).is_some_and(|l| holds(l, w))),
        (Value::Array(live), Value::Array(want)) => {
            live.len() == want.len() && live.iter().zip(want).all(|(l, w)| holds(l, w))
        }
        (Value::Number(l), Value::Number(w)) => l.as_f64() == w.as_f64(),
        _ => live == want,
    }
}

fn status_of(
    key: &MemberRef,
    object: &DynamicObject,
    check: Option<&ReadyCheck>,
) -> ManagedResource {
    if object.metadata.deletion_timestamp.is_some() {
        return managed_resource(key, ResourcePhase::Terminating, "being deleted");
    }
    let readiness = match check {
        Some(check) => check(object),
        None => readiness(&key.member.group, &key.member.kind, object),
    };
    match readiness {
        Readiness::Ready => managed_resource(key, ResourcePhase::Ready, "ready"),
        Readiness::Pending(m) => managed_resource(key, ResourcePhase::Pending, m),
        Readiness::Failed(m) => managed_resource(key, ResourcePhase::Failed, m),
    }
}

/// The built-in readiness of an object of `group`/`kind`:
/// - Namespace: `status.phase` Active;
/// - CustomResourceDefinition: condition `Established=True`;
/// - Deployment, StatefulSet, DaemonSet: rollout complete for the observed generation;
/// - Job: condition `Complete=True`; `Failed=True` is a failure with its message;
/// - Service, ConfigMap, Secret, ServiceAccount, RBAC and anything without a status: it exists;
/// - Flux kinds and any object with a `Ready` condition: `Ready=True` for the current generation
///   (`Ready=False` while not reconciling is a failure with its reason);
/// - any other object with `status.phase`: Ready, Active, Running, Bound, Succeeded, Available
///   are ready, Failed is a failure.
pub fn readiness(group: &str, kind: &str, object: &DynamicObject) -> Readiness {
    let status = object.data.get("status");
    let generation = object.metadata.generation;
    let int = |path: &str| status.and_then(|s| s.pointer(path)).and_then(Value::as_i64);
    let observed_current = || match (generation, int("/observedGeneration")) {
        (Some(g), Some(o)) => o >= g,
        (Some(_), None) => false,
        (None, _) => true,
    };
    match (group, kind) {
        ("", "Namespace") => match status.and_then(|s| s.get("phase")).and_then(Value::as_str) {
            Some("Active") | None => Readiness::Ready,
            Some(phase) => Readiness::Pending(format!("namespace is {phase}")),
        },
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            match condition(status, "Established") {
                Some(("True", _, _)) => Readiness::Ready,
                _ => Readiness::Pending("not established yet".into()),
            }
        }
        ("apps", "Deployment" | "StatefulSet") => {
            let want = object
                .data
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let ready_field = if kind == "Deployment" {
                "/availableReplicas"
            } else {
                "/readyReplicas"
            };
            let updated = int("/updatedReplicas").unwrap_or(0);
            let ready = int(ready_field).unwrap_or(0);
            if observed_current() && updated >= want && ready >= want {
                Readiness::Ready
            } else {
                Readiness::Pending(format!("{ready} of {want} replicas ready"))
            }
        }
        ("apps", "DaemonSet") => {
            let desired = int("/desiredNumberScheduled").unwrap_or(0);
            let ready = int("/numberReady").unwrap_or(0);
            let updated = int("/updatedNumberScheduled").unwrap_or(0);
            if observed_current() && ready >= desired && updated >= desired {
                Readiness::Ready
            } else {
                Readiness::Pending(format!("{ready} of {desired} pods ready"))
            }
        }
        ("batch", "Job") => match (condition(status, "Complete"), condition(status, "Failed")) {
            (_, Some(("True", reason, message))) => {
                Readiness::Failed(format!("{reason}: {message}"))
            }
            (Some(("True", _, _)), _) => Readiness::Ready,
            _ => Readiness::Pending("not complete yet".into()),
        },
        ("", "Service" | "ConfigMap" | "Secret" | "ServiceAccount")
        | ("rbac.authorization.k8s.io", _) => Readiness::Ready,
        _ => {
            if let Some((value, reason, message)) = condition(status, "Ready") {
                let condition_generation = status
                    .and_then(|s| s.get("conditions"))
                    .and_then(Value::as_array)
                    .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
                    .and_then(|c| c.get("observedGeneration"))
                    .and_then(Value::as_i64);
                let current = match (generation, condition_generation) {
                    (Some(g), Some(o)) => o >= g,
                    _ => observed_current() || int("/observedGeneration").is_none(),
                };
                let reconciling = matches!(condition(status, "Reconciling"), Some(("True", _, _)));
                return match value {
                    "True" if current => Readiness::Ready,
                    "False" if current && !reconciling => {
                        Readiness::Failed(format!("{reason}: {message}"))
                    }
                    _ if message.is_empty() => Readiness::Pending("not ready yet".into()),
                    _ => Readiness::Pending(message.to_owned()),
                };
            }
            if group.ends_with(".toolkit.fluxcd.io") {
                return Readiness::Pending("not reconciled yet".into());
            }
            match status.and_then(|s| s.get("phase")).and_then(Value::as_str) {
                Some("Ready" | "Active" | "Running" | "Bound" | "Succeeded" | "Available") => {
                    Readiness::Ready
                }
                Some("Failed") => Readiness::Failed("phase Failed".into()),
                Some(phase) => Readiness::Pending(format!("phase {phase}")),
                None => Readiness::Ready,
            }
        }
    }
}

/// The (status, reason, message) of the condition `type_` in `status.conditions`.
fn condition<'a>(status: Option<&'a Value>, type_: &str) -> Option<(&'a str, &'a str, &'a str)> {
    let c = status?
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))?;
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
    Some((s("status"), s("reason"), s("message")))
}

/// Labels identifying a set's members in its default cluster, e.g. to list them:
/// `applyset.kubernetes.io/part-of=<id>`.
pub fn member_selector(set: &ApplySet) -> BTreeMap<String, String> {
    BTreeMap::from([(PART_OF_LABEL.to_owned(), set.id())])
}

/// The sets a reconcile builds, from the tenant's clusters.
impl<P: ServiceProvider> Context<P> {
    /// A set of objects to apply into `cluster` as a whole: objects an earlier apply of the set
    /// `name` installed and this one omits are deleted. The inventory is the ConfigMap `name` in
    /// the namespace `default` of that cluster (see [`ApplySet::inventory_namespace`]); make
    /// `name` unique per tenant when several tenants share the cluster. Its members are reported
    /// in `status.resources`.
    pub fn apply_set(&self, cluster: &ClusterAccess, name: impl Into<String>) -> ApplySet {
        ApplySet::new(
            cluster.client().clone(),
            name,
            "default",
            self.field_manager().to_owned(),
        )
        .located(self.location_of(cluster))
        .report_to(self.resources().clone())
    }

    /// The tenant's resource set `name` across its clusters: the tenant's control plane (the
    /// default for [`ApplySet::add`]) and, when the provider has one, the workload cluster
    /// ([`ApplySet::add_to`] with [`Location::WorkloadCluster`]). Objects are applied in
    /// dependency order once what they depend on is ready, pruned when they leave the set, and
    /// deleted in reverse order by [`ApplySet::delete`]; the runtime writes every member into
    /// `status.resources` and keeps the object `Progressing` until all are ready.
    ///
    /// The inventories are the ConfigMap `<name>-<tenant id>` in the namespace `default` of each
    /// cluster, so tenants sharing a workload cluster never share a set.
    pub fn resource_set(&self, name: &str) -> ApplySet {
        let name = format!("{name}-{}", self.identity().stable_id());
        let mut set = ApplySet::new(
            self.mcp().client().clone(),
            name,
            "default",
            self.field_manager().to_owned(),
        )
        .report_to(self.resources().clone());
        if let Some(workload) = self.workload_access() {
            set = set.with_cluster(
                Location::WorkloadCluster,
                workload.client().clone(),
                "default",
            );
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Secret};
    use serde_json::json;

    fn client() -> kube::Client {
        let config = kube::Config::new(http::Uri::from_static("http://127.0.0.1:1"));
        kube::Client::try_from(config).unwrap()
    }

    fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: namespace.map(Into::into),
            ..Default::default()
        }
    }

    fn dynamic(json: Value) -> DynamicObject {
        serde_json::from_value(json).unwrap()
    }

    #[tokio::test]
    async fn members_are_typed_ordered_and_labelled() {
        let mut set = ApplySet::new(client(), "velero", "default", "velero");
        let deployment = Deployment {
            metadata: meta("velero", Some("tenant")),
            ..Default::default()
        };
        let secret = Secret {
            metadata: meta("kubeconfig", Some("tenant")),
            ..Default::default()
        };
        let ns = Namespace {
            metadata: meta("tenant", None),
            ..Default::default()
        };
        set.add(&deployment).unwrap();
        set.add(&secret).unwrap();
        set.add(&ns).unwrap();
        let order: Vec<String> = set.members().iter().map(|m| m.to_string()).collect();
        assert_eq!(
            order,
            [
                "Namespace tenant",
                "Secret tenant/kubeconfig",
                "Deployment.apps tenant/velero"
            ]
        );
        let body = &set.objects[0].body;
        assert_eq!(body["apiVersion"], "apps/v1");
        assert_eq!(body["metadata"]["labels"][PART_OF_LABEL], set.id());
        assert!(set.id().starts_with("applyset-") && set.id().ends_with("-v1"));

        let unnamespaced = Secret {
            metadata: meta("x", None),
            ..Default::default()
        };
        let err = set.add(&unnamespaced).err().unwrap();
        assert!(err.to_string().contains("set metadata.namespace"), "{err}");
        assert!(set.add(&ns).err().unwrap().to_string().contains("twice"));
        let err = set.add_to(Location::WorkloadCluster, &ns).err().unwrap();
        assert!(err.to_string().contains("with_cluster"), "{err}");
    }

    #[tokio::test]
    async fn declared_dependencies_order_before_kinds_and_cycles_are_refused() {
        let mut set = ApplySet::new(client(), "s", "default", "fm").with_cluster(
            Location::WorkloadCluster,
            client(),
            "default",
        );
        // A Secret on the workload cluster that must wait for a Deployment on the tenant's.
        let deployment = set
            .add(&Deployment {
                metadata: meta("worker", Some("a")),
                ..Default::default()
            })
            .unwrap()
            .key();
        let secret = set
            .add_to(
                Location::WorkloadCluster,
                &Secret {
                    metadata: meta("s", Some("b")),
                    ..Default::default()
                },
            )
            .unwrap()
            .depends_on(&deployment)
            .key();
        let names: Vec<String> = set.members().iter().map(|m| m.name.clone()).collect();
        assert_eq!(names, ["worker", "s"]);
        set.objects[0].depends_on.push(secret);
        let deps = set.dependencies();
        let err = set.apply_order(&deps).unwrap_err();
        assert!(err.to_string().contains("cycle"), "{err}");
    }

    #[tokio::test]
    async fn namespaces_and_crds_are_implicit_dependencies() {
        let mut set = ApplySet::new(client(), "s", "default", "fm");
        let crd = dynamic(json!({
            "metadata": {"name": "backups.velero.io"},
            "spec": {"group": "velero.io", "names": {"kind": "Backup", "plural": "backups"}}
        }));
        let crd_resource = ApiResource::erase::<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        >(&());
        let backup_resource = ApiResource {
            group: "velero.io".into(),
            version: "v1".into(),
            api_version: "velero.io/v1".into(),
            kind: "Backup".into(),
            plural: "backups".into(),
        };
        let backup = dynamic(json!({"metadata": {"name": "b", "namespace": "velero"}}));
        set.add_dynamic(
            Location::ManagedControlPlane,
            &backup,
            &backup_resource,
            true,
        )
        .unwrap();
        set.add_dynamic(Location::ManagedControlPlane, &crd, &crd_resource, false)
            .unwrap();
        set.add(&Namespace {
            metadata: meta("velero", None),
            ..Default::default()
        })
        .unwrap();
        let deps = set.dependencies();
        let names: Vec<&str> = deps[0].iter().map(|d| d.member.kind.as_str()).collect();
        assert_eq!(names, ["Namespace", "CustomResourceDefinition"]);
        let kinds: Vec<String> = set.members().iter().map(|m| m.kind.clone()).collect();
        assert_eq!(kinds, ["Namespace", "CustomResourceDefinition", "Backup"]);
    }

    #[test]
    fn what_holds_a_deletion_is_what_the_server_says_on_the_object() {
        let crd = |deleting: bool, conditions: Value| {
            let mut object = json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "restores.velero.io"},
                "status": {"conditions": conditions},
            });
            if deleting {
                object["metadata"]["deletionTimestamp"] = json!("2026-12-07T07:00:00Z");
            }
            dynamic(object)
        };
        let stuck = json!([
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"},
            {"type": "Terminating", "status": "True", "reason": "InstanceDeletionFailed",
             "message": "could not list instances: storage is (re)initializing"},
        ]);
        assert_eq!(
            deletion_held_by(&crd(true, stuck.clone())).as_deref(),
            Some("InstanceDeletionFailed: could not list instances: storage is (re)initializing")
        );
        // Not being deleted, or the condition says nothing holds it: nothing to report.
        assert_eq!(deletion_held_by(&crd(false, stuck)), None);
        let done = json!([{"type": "Terminating", "status": "False", "reason": "InstanceDeletionCompleted"}]);
        assert_eq!(deletion_held_by(&crd(true, done)), None);
        let namespace = dynamic(json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "velero", "deletionTimestamp": "2026-12-07T07:00:00Z"},
            "status": {"phase": "Terminating", "conditions": [
                {"type": "NamespaceDeletionContentFailure", "status": "False"},
                {"type": "NamespaceFinalizersRemaining", "status": "True",
                 "reason": "SomeFinalizersRemain", "message": "Some content in the namespace has finalizers remaining: velero.io/backup in 1 resource instances"},
            ]},
        }));
        assert_eq!(
            deletion_held_by(&namespace).as_deref(),
            Some(
                "SomeFinalizersRemain: Some content in the namespace has finalizers remaining: velero.io/backup in 1 resource instances"
            )
        );
    }

    #[test]
    fn a_live_object_holds_what_was_declared_plus_server_fields() {
        let want = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 1, "ports": [{"port": 80}]}});
        let live = json!({"metadata": {"name": "a", "uid": "u", "labels": {"x": "1", "y": "2"}},
            "spec": {"replicas": 1.0, "ports": [{"port": 80, "protocol": "TCP"}], "paused": false},
            "status": {"ok": true}});
        assert!(holds(&live, &want));
        let drifted = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 2, "ports": [{"port": 80}]}});
        assert!(!holds(&drifted, &want));
        let fewer = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 1, "ports": []}});
        assert!(!holds(&fewer, &want));
    }

    #[test]
    fn built_in_readiness_follows_each_kind() {
        let ready = |group: &str, kind: &str, json: Value| readiness(group, kind, &dynamic(json));
        assert_eq!(
            ready(
                "",
                "Namespace",
                json!({"metadata": {"name": "n"}, "status": {"phase": "Terminating"}})
            ),
            Readiness::Pending("namespace is Terminating".into())
        );
        assert_eq!(
            ready(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                json!({"metadata": {"name": "c"},
                "status": {"conditions": [{"type": "Established", "status": "True"}]}})
            ),
            Readiness::Ready
        );
        let deployment = |observed: i64, available: i64| {
            json!({"metadata": {"name": "d", "generation": 2}, "spec": {"replicas": 2},
                "status": {"observedGeneration": observed, "updatedReplicas": 2, "availableReplicas": available}})
        };
        assert_eq!(
            ready("apps", "Deployment", deployment(2, 2)),
            Readiness::Ready
        );
        assert!(matches!(
            ready("apps", "Deployment", deployment(1, 2)),
            Readiness::Pending(_)
        ));
        assert!(matches!(
            ready("apps", "Deployment", deployment(2, 1)),
            Readiness::Pending(_)
        ));
        assert_eq!(
            ready(
                "batch",
                "Job",
                json!({"metadata": {"name": "j"}, "status": {"conditions": [
                {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "too many"}]}})
            ),
            Readiness::Failed("BackoffLimitExceeded: too many".into())
        );
        let flux = |status: &str, reason: &str, observed: i64| {
            json!({"metadata": {"name": "h", "generation": 3}, "status": {"observedGeneration": observed,
                "conditions": [{"type": "Ready", "status": status, "reason": reason, "message": "m",
                    "observedGeneration": observed}]}})
        };
        assert_eq!(
            ready(
                "helm.toolkit.fluxcd.io",
                "HelmRelease",
                flux("True", "Ok", 3)
            ),
            Readiness::Ready
        );
        assert!(matches!(
            ready(
                "helm.toolkit.fluxcd.io",
                "HelmRelease",
                flux("True", "Ok", 2)
            ),
            Readiness::Pending(_)
        ));
        assert_eq!(
            ready(
                "helm.toolkit.fluxcd.io",
                "HelmRelease",
                flux("False", "InstallFailed", 3)
            ),
            Readiness::Failed("InstallFailed: m".into())
        );
        assert!(matches!(
            ready(
                "helm.toolkit.fluxcd.io",
                "HelmRelease",
                json!({"metadata": {"name": "h"}})
            ),
            Readiness::Pending(_)
        ));
        assert_eq!(
            ready("", "ConfigMap", json!({"metadata": {"name": "c"}})),
            Readiness::Ready
        );
        assert_eq!(
            ready(
                "example.io",
                "Thing",
                json!({"metadata": {"name": "t"}, "status": {"phase": "Failed"}})
            ),
            Readiness::Failed("phase Failed".into())
        );
    }
}
