//! Server-side apply of a set of objects into a cluster, pruning what an earlier apply of the set
//! installed and this one leaves out — the `kubectl apply --prune --applyset` model (KEP-3659).
//!
//! The set's inventory is a ConfigMap in the target cluster (the ApplySet *parent*), so it
//! survives restarts of the provider and moves with the cluster: labelled
//! `applyset.kubernetes.io/id`, annotated with the tooling and the member group-kinds as kubectl
//! does, and listing every member explicitly (group, version, kind, resource, namespace, name), so
//! pruning and deleting need neither discovery nor list permissions. Members carry the label
//! `applyset.kubernetes.io/part-of`.
//!
//! An apply first widens the inventory to old ∪ new (a crash half-way leaves nothing untracked),
//! applies the members (namespaces and CRDs first), deletes the members that left the set (in
//! reverse order), and then narrows the inventory to the new set.

use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet};

use base64::Engine;
use k8s_openapi::ClusterResourceScope;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams};
use kube::{Api, Resource};
use serde::{Deserialize, Serialize};

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

    fn api(&self, client: &kube::Client) -> Api<DynamicObject> {
        let resource = self.api_resource();
        match &self.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        }
    }

    /// Namespaces, then CRDs, then RBAC and configuration, then everything else.
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

/// What an apply did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// Members applied.
    pub applied: Vec<Member>,
    /// Members of the previous apply that were deleted.
    pub pruned: Vec<Member>,
}

/// A named set of objects for one cluster. Build it with [`add`](Self::add), then
/// [`apply`](Self::apply); or [`delete`](Self::delete) everything an earlier apply installed.
pub struct ApplySet {
    client: kube::Client,
    name: String,
    namespace: String,
    field_manager: String,
    objects: Vec<(Member, serde_json::Value)>,
}

impl std::fmt::Debug for ApplySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApplySet")
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .field(
                "members",
                &self.objects.iter().map(|(m, _)| m).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl ApplySet {
    /// A set named `name` whose inventory is the ConfigMap `name` in `inventory_namespace` of the
    /// cluster `client` talks to; objects are applied as `field_manager`.
    pub fn new(
        client: kube::Client,
        name: impl Into<String>,
        inventory_namespace: impl Into<String>,
        field_manager: impl Into<String>,
    ) -> Self {
        ApplySet {
            client,
            name: name.into(),
            namespace: inventory_namespace.into(),
            field_manager: field_manager.into(),
            objects: Vec::new(),
        }
    }

    /// Keeps the inventory in `namespace` instead (it must exist and must not be a member).
    pub fn inventory_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The set's id: `applyset-<base64url(sha256(<name>.<namespace>.ConfigMap.))>-v1`, as KEP-3659
    /// derives it from the parent.
    pub fn id(&self) -> String {
        let digest = ring::digest::digest(
            &ring::digest::SHA256,
            format!("{}.{}.ConfigMap.", self.name, self.namespace).as_bytes(),
        );
        format!(
            "applyset-{}-v1",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
        )
    }

    /// Adds a typed object. Namespaced objects must name their namespace.
    pub fn add<K>(&mut self, object: &K) -> Result<&mut Self, ApplyError>
    where
        K: Resource<DynamicType = ()> + Serialize,
        K::Scope: 'static,
    {
        let resource = ApiResource::erase::<K>(&());
        let cluster_scoped = TypeId::of::<K::Scope>() == TypeId::of::<ClusterResourceScope>();
        let json = serde_json::to_value(object).map_err(|e| {
            ApplyError::Invalid(format!("{} does not serialize: {e}", resource.kind))
        })?;
        self.add_json(&resource, !cluster_scoped, json)
    }

    /// Adds an object of a type known only at run time (`namespaced` says its scope).
    pub fn add_dynamic(
        &mut self,
        object: &DynamicObject,
        resource: &ApiResource,
        namespaced: bool,
    ) -> Result<&mut Self, ApplyError> {
        let json = serde_json::to_value(object).map_err(|e| {
            ApplyError::Invalid(format!("{} does not serialize: {e}", resource.kind))
        })?;
        self.add_json(resource, namespaced, json)
    }

    fn add_json(
        &mut self,
        resource: &ApiResource,
        namespaced: bool,
        mut json: serde_json::Value,
    ) -> Result<&mut Self, ApplyError> {
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
        let member = Member {
            group: resource.group.clone(),
            version: resource.version.clone(),
            kind: resource.kind.clone(),
            resource: resource.plural.clone(),
            namespace,
            name,
        };
        if self.objects.iter().any(|(m, _)| *m == member) {
            return Err(ApplyError::Invalid(format!("{member} is in the set twice")));
        }
        // Server-side apply needs apiVersion and kind in the body.
        if let Some(obj) = json.as_object_mut() {
            obj.insert("apiVersion".into(), resource.api_version.clone().into());
            obj.insert("kind".into(), resource.kind.clone().into());
            let labels = obj
                .entry("metadata")
                .or_insert_with(|| serde_json::json!({}))
                .as_object_mut()
                .map(|m| m.entry("labels").or_insert_with(|| serde_json::json!({})));
            if let Some(serde_json::Value::Object(labels)) = labels {
                labels.insert(PART_OF_LABEL.into(), self.id().into());
            }
            // Never send a resourceVersion or managedFields with an apply.
            if let Some(serde_json::Value::Object(meta)) = obj.get_mut("metadata") {
                meta.remove("resourceVersion");
                meta.remove("managedFields");
                meta.remove("uid");
                meta.remove("creationTimestamp");
            }
        }
        self.objects.push((member, json));
        Ok(self)
    }

    fn inventory_api(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The members recorded by the last apply.
    pub async fn inventory(&self) -> Result<BTreeSet<Member>, ApplyError> {
        let parent = self
            .inventory_api()
            .get_opt(&self.name)
            .await
            .map_err(|source| ApplyError::Api {
                doing: format!(
                    "reading the inventory ConfigMap {}/{}",
                    self.namespace, self.name
                ),
                source,
            })?;
        let Some(members) = parent
            .as_ref()
            .and_then(|p| p.data.as_ref())
            .and_then(|d| d.get(MEMBERS_KEY))
        else {
            return Ok(BTreeSet::new());
        };
        serde_json::from_str(members).map_err(|e| ApplyError::Inventory {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            message: e.to_string(),
        })
    }

    async fn write_inventory(&self, members: &BTreeSet<Member>) -> Result<(), ApplyError> {
        let group_kinds: BTreeSet<String> = members.iter().map(Member::group_kind).collect();
        let members_json = serde_json::to_string(members).map_err(|e| ApplyError::Inventory {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            message: e.to_string(),
        })?;
        let parent = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": { ID_LABEL: self.id() },
                "annotations": {
                    TOOLING_ANNOTATION: TOOLING,
                    GROUP_KINDS_ANNOTATION: group_kinds.into_iter().collect::<Vec<_>>().join(","),
                },
            },
            "data": { MEMBERS_KEY: members_json },
        });
        self.inventory_api()
            .patch(
                &self.name,
                &PatchParams::apply(&self.field_manager).force(),
                &Patch::Apply(&parent),
            )
            .await
            .map_err(|source| ApplyError::Api {
                doing: format!(
                    "writing the inventory ConfigMap {}/{}",
                    self.namespace, self.name
                ),
                source,
            })?;
        Ok(())
    }

    /// Applies every object of the set and prunes what the last apply installed and this one
    /// omits.
    pub async fn apply(&self) -> Result<ApplyReport, ApplyError> {
        let previous = self.inventory().await?;
        let current: BTreeSet<Member> = self.objects.iter().map(|(m, _)| m.clone()).collect();
        let union: BTreeSet<Member> = previous.union(&current).cloned().collect();
        if union != previous {
            self.write_inventory(&union).await?;
        }

        let mut ordered: Vec<&(Member, serde_json::Value)> = self.objects.iter().collect();
        ordered.sort_by_key(|(m, _)| m.order());
        let params = PatchParams::apply(&self.field_manager).force();
        let mut report = ApplyReport::default();
        for (member, body) in ordered {
            member
                .api(&self.client)
                .patch(&member.name, &params, &Patch::Apply(body))
                .await
                .map_err(|source| ApplyError::Api {
                    doing: format!("applying {member}"),
                    source,
                })?;
            report.applied.push(member.clone());
        }

        let mut stale: Vec<Member> = previous.difference(&current).cloned().collect();
        stale.sort_by_key(|m| std::cmp::Reverse(m.order()));
        for member in stale {
            self.delete_member(&member).await?;
            report.pruned.push(member);
        }
        if union != current {
            self.write_inventory(&current).await?;
        }
        Ok(report)
    }

    /// Deletes every member the last apply recorded, then the inventory itself. The objects
    /// added to this set are ignored.
    pub async fn delete(&self) -> Result<Vec<Member>, ApplyError> {
        let mut members: Vec<Member> = self.inventory().await?.into_iter().collect();
        members.sort_by_key(|m| std::cmp::Reverse(m.order()));
        for member in &members {
            self.delete_member(member).await?;
        }
        match self
            .inventory_api()
            .delete(&self.name, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(source) => {
                return Err(ApplyError::Api {
                    doing: format!(
                        "deleting the inventory ConfigMap {}/{}",
                        self.namespace, self.name
                    ),
                    source,
                });
            }
        }
        Ok(members)
    }

    async fn delete_member(&self, member: &Member) -> Result<(), ApplyError> {
        match member
            .api(&self.client)
            .delete(&member.name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(source) => Err(ApplyError::Api {
                doing: format!("deleting {member}"),
                source,
            }),
        }
    }

    /// The objects added so far, in apply order.
    pub fn members(&self) -> Vec<Member> {
        let mut members: Vec<Member> = self.objects.iter().map(|(m, _)| m.clone()).collect();
        members.sort_by_key(Member::order);
        members
    }
}

/// Labels identifying a set's members, e.g. to list them: `applyset.kubernetes.io/part-of=<id>`.
pub fn member_selector(set: &ApplySet) -> BTreeMap<String, String> {
    BTreeMap::from([(PART_OF_LABEL.to_owned(), set.id())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Secret};

    fn client() -> kube::Client {
        let config = kube::Config::new(http::Uri::from_static("http://127.0.0.1:1"));
        kube::Client::try_from(config).unwrap()
    }

    #[tokio::test]
    async fn members_are_typed_ordered_and_labelled() {
        let mut set = ApplySet::new(client(), "velero", "default", "velero");
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("tenant".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some("kubeconfig".into()),
                namespace: Some("tenant".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let deployment = Deployment {
            metadata: ObjectMeta {
                name: Some("velero".into()),
                namespace: Some("tenant".into()),
                ..Default::default()
            },
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
        let (_, body) = &set.objects[0];
        assert_eq!(body["apiVersion"], "apps/v1");
        assert_eq!(body["metadata"]["labels"][PART_OF_LABEL], set.id());
        assert!(set.id().starts_with("applyset-") && set.id().ends_with("-v1"));

        let unnamespaced = Secret {
            metadata: ObjectMeta {
                name: Some("x".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let err = set.add(&unnamespaced).unwrap_err();
        assert!(err.to_string().contains("set metadata.namespace"), "{err}");
        assert!(set.add(&ns).unwrap_err().to_string().contains("twice"));
    }
}
