//! Cluster access ordered on the platform cluster: the ClusterRequests and AccessRequests a
//! provider creates for each tenant, waiting for them to be granted, and giving them back.
//!
//! This is the advanced cluster-access library of `openmcp-operator/lib/clusteraccess/advanced`
//! as the Go runtime uses it, with the same names, labels and finalizer, so a Rust provider adopts
//! what a Go provider created and the platform operator cannot tell them apart:
//!
//! - requests live in `StableMCPNamespace(name, namespace)` of the tenant (created when missing);
//! - they are named `StableRequestName(<provider>, <name>, <suffix>)` (`velero--my-mcp--mcp`);
//! - they carry the labels `openmcp.cloud/managed-by`, `openmcp.cloud/managed-purpose`
//!   (`<namespace>.<name>.<id>`), `openmcp.cloud/onboarding-name` and `-namespace`, and the
//!   finalizer `clusters.openmcp.cloud/clusteraccess`; a request whose labels differ is not
//!   adopted;
//! - access is ready when the ClusterRequest (if we created it) is `Granted` and the
//!   AccessRequest is `Granted` with `observedGeneration == generation`;
//! - teardown deletes the AccessRequest, removes our finalizer once it is the only one left,
//!   then does the same for the ClusterRequest we created, and is done when both are gone.
//!
//! Unlike the Go library, which polls every few seconds, the state comes from watches on the
//! requests (label `openmcp.cloud/managed-by=<provider>`), so a grant is acted on at once and a
//! reconcile that finds access ready makes no API call.

pub mod clients;
pub mod kubeconfigs;
pub mod onboarding;
pub mod retry;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};

use crate::cache::{Cache, ObjectKey};
use crate::openmcp::clusters::RequestStatus;
use crate::openmcp::constants::{
    CLUSTER_ACCESS_FINALIZER, MANAGED_BY_LABEL, MANAGED_PURPOSE_LABEL, MCP_CLUSTER_ID,
    MCP_REQUEST_SUFFIX, ONBOARDING_NAME_LABEL, ONBOARDING_NAMESPACE_LABEL, PURPOSE_WORKLOAD,
    WORKLOAD_CLUSTER_ID, WORKLOAD_REQUEST_SUFFIX,
};
use crate::openmcp::naming::{
    NamingError, request_labels, stable_mcp_namespace, stable_request_name,
};
use crate::openmcp::{
    AccessRequest, AccessRequestSpec, ClusterRequest, ClusterRequestSpec, ObjectReference,
    TokenConfig,
};
use crate::tenant::{ClusterAccess, Identity};

pub use kubeconfigs::KubeconfigStore;

/// Which cluster a registration asks access for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestedCluster {
    /// The cluster of the tenant's ControlPlane: the ClusterRequest the ControlPlane controller
    /// created, named like the tenant object, in the tenant's platform namespace
    /// (`advanced.ExistingClusterRequest`). Only an AccessRequest is created.
    ControlPlane,
    /// A new ClusterRequest with this purpose (`advanced.NewClusterRequest`), then an
    /// AccessRequest for the cluster it is granted.
    New {
        /// `spec.purpose` of the ClusterRequest.
        purpose: String,
    },
}

/// One cluster the runtime orders for every tenant (a Go `ClusterRegistration`).
#[derive(Clone, Debug, PartialEq)]
pub struct Registration {
    /// Registration id: the last part of the `managed-purpose` label (`mcp`, `workload`).
    pub id: &'static str,
    /// Name suffix of the requests (`mcp`, `wl`).
    pub suffix: &'static str,
    /// Which cluster.
    pub cluster: RequestedCluster,
    /// The permissions asked for in the AccessRequest.
    pub token: TokenConfig,
}

/// Whether two token configs grant the same: the same permission requests and role references,
/// compared as sets, each rule's lists as sets, an absent list as an empty one. Text differences
/// (order, `resourceNames: []` against none, duplicates) are no reason to rewrite a request —
/// every rewrite bumps its generation and makes the operator grant it again.
pub fn grants_same(a: &TokenConfig, b: &TokenConfig) -> bool {
    normalized(a) == normalized(b)
}

type NormalRule = [std::collections::BTreeSet<String>; 5];
type NormalPermission = (String, String, bool, std::collections::BTreeSet<NormalRule>);

fn normalized(
    token: &TokenConfig,
) -> (
    std::collections::BTreeSet<NormalPermission>,
    std::collections::BTreeSet<(String, String, String)>,
) {
    let set = |v: Option<&Vec<String>>| v.into_iter().flatten().cloned().collect();
    let permissions = token
        .permissions
        .iter()
        .map(|p| {
            let rules = p
                .rules
                .iter()
                .map(|r| {
                    [
                        set(r.api_groups.as_ref()),
                        set(r.resources.as_ref()),
                        set(Some(&r.verbs)),
                        set(r.resource_names.as_ref()),
                        set(r.non_resource_urls.as_ref()),
                    ]
                })
                .collect();
            (
                p.name.clone(),
                p.namespace.clone(),
                p.disable_automatic_namespace_creation,
                rules,
            )
        })
        .collect();
    let role_refs = token
        .role_refs
        .iter()
        .map(|r| (r.name.clone(), r.namespace.clone(), format!("{:?}", r.kind)))
        .collect();
    (permissions, role_refs)
}

impl Registration {
    /// The tenant's MCP cluster (id `mcp`, suffix `mcp`), asking for `token`.
    pub fn mcp(token: TokenConfig) -> Self {
        Registration {
            id: MCP_CLUSTER_ID,
            suffix: MCP_REQUEST_SUFFIX,
            cluster: RequestedCluster::ControlPlane,
            token,
        }
    }

    /// A workload cluster (id `workload`, suffix `wl`) of `purpose` (`workload` by default),
    /// asking for `token`.
    pub fn workload(purpose: Option<&str>, token: TokenConfig) -> Self {
        Registration {
            id: WORKLOAD_CLUSTER_ID,
            suffix: WORKLOAD_REQUEST_SUFFIX,
            cluster: RequestedCluster::New {
                purpose: purpose
                    .filter(|p| !p.is_empty())
                    .unwrap_or(PURPOSE_WORKLOAD)
                    .to_owned(),
            },
            token,
        }
    }
}

/// Where a tenant's access stands.
#[derive(Clone, Debug)]
pub enum AccessState {
    /// Granted; here is the cluster.
    Ready(ClusterAccess),
    /// Not granted yet.
    Waiting {
        /// Why, for the object's status (e.g. the request being deleted).
        message: String,
    },
    /// The platform refused.
    Denied {
        /// The platform's reason.
        message: String,
    },
}

/// Why access could not be ordered or given back.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// A name could not be derived from the tenant's.
    #[error("cannot derive access object names: {0}")]
    Naming(#[from] NamingError),
    /// A request with our name exists but belongs to someone else; the message names the
    /// request and the label that differs.
    #[error("{0}")]
    NotManaged(String),
    /// A call to the platform cluster failed.
    #[error("{doing}: {source}")]
    Api {
        /// What was being done.
        doing: String,
        /// What failed.
        source: Box<kube::Error>,
    },
    /// The kubeconfig Secret of a granted request is unusable.
    #[error(transparent)]
    Kubeconfig(Box<kubeconfigs::KubeconfigError>),
}

/// The tenant a request is for: the key of the Service API object, with the logical cluster
/// folded into the namespace in kcp mode (see [`Identity::access_namespace`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tenant {
    /// `namespace`, or `<cluster>_<namespace>` in kcp mode.
    pub namespace: String,
    /// Name of the Service API object.
    pub name: String,
}

impl From<&Identity> for Tenant {
    fn from(id: &Identity) -> Self {
        Tenant {
            namespace: id.access_namespace(),
            name: id.name.clone(),
        }
    }
}

/// The names and labels of one tenant's requests for one registration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestNames {
    /// The tenant's namespace on the platform cluster.
    pub namespace: String,
    /// Name of the ClusterRequest we create (`New`) and of the AccessRequest.
    pub request: String,
    /// The ClusterRequest the AccessRequest refers to.
    pub cluster_request: ObjectReference,
    /// Labels of the requests.
    pub labels: BTreeMap<String, String>,
}

impl RequestNames {
    /// Computes them as the Go library does.
    pub fn new(controller: &str, reg: &Registration, tenant: &Tenant) -> Result<Self, NamingError> {
        let namespace = stable_mcp_namespace(&tenant.name, &tenant.namespace)?;
        let request = stable_request_name(controller, &tenant.name, reg.suffix)?;
        let cluster_request = match &reg.cluster {
            RequestedCluster::ControlPlane => ObjectReference {
                name: tenant.name.clone(),
                namespace: namespace.clone(),
            },
            RequestedCluster::New { .. } => ObjectReference {
                name: request.clone(),
                namespace: namespace.clone(),
            },
        };
        Ok(RequestNames {
            labels: request_labels(controller, &tenant.namespace, &tenant.name, reg.id),
            namespace,
            request,
            cluster_request,
        })
    }

    /// Key of the AccessRequest.
    pub fn access_request(&self) -> ObjectKey {
        ObjectKey::new(&self.namespace, &self.request)
    }
}

/// The tenant a request names in its `onboarding-name`/`-namespace` labels. The values may be
/// shortened (a name or kcp identity longer than 63 characters), so a caller must check the
/// candidate against the request's namespace, as [`AccessManager::owner_of`] does.
fn owner_from_labels(labels: &BTreeMap<String, String>) -> Option<Identity> {
    let name = labels.get(ONBOARDING_NAME_LABEL)?;
    let namespace = labels.get(ONBOARDING_NAMESPACE_LABEL)?;
    Some(Identity::from_access_namespace(namespace, name))
}

/// The tenant the labels of a request in platform namespace `namespace` name, when its own
/// platform namespace is `namespace` (so the labels were not shortened).
fn labelled_owner(namespace: &str, labels: &BTreeMap<String, String>) -> Option<Identity> {
    owner_from_labels(labels).filter(|candidate| {
        stable_mcp_namespace(&candidate.name, &candidate.access_namespace())
            .is_ok_and(|ns| ns == namespace)
    })
}

/// Orders and gives back access for tenants, from watch caches of this provider's requests.
/// Cheap to clone.
#[derive(Clone)]
pub struct AccessManager {
    platform: kube::Client,
    controller: Arc<str>,
    field_manager: Arc<str>,
    access_requests: Cache<ObjectKey, AccessRequest>,
    cluster_requests: Cache<ObjectKey, ClusterRequest>,
    kubeconfigs: KubeconfigStore,
    /// Tenants whose onboarding labels are shortened, by their platform namespace: their
    /// requests' labels no longer name them, so a request change finds its tenant here.
    shortened: Arc<std::sync::Mutex<HashMap<String, Identity>>>,
}

impl AccessManager {
    /// A manager creating requests as `controller` (the provider name: `managed-by` label and
    /// name prefix), reading their state from the given caches.
    pub fn new(
        platform: kube::Client,
        controller: &str,
        access_requests: Cache<ObjectKey, AccessRequest>,
        cluster_requests: Cache<ObjectKey, ClusterRequest>,
        kubeconfigs: KubeconfigStore,
    ) -> Self {
        AccessManager {
            platform,
            controller: controller.into(),
            field_manager: controller.into(),
            access_requests,
            cluster_requests,
            kubeconfigs,
            shortened: Arc::default(),
        }
    }

    /// The provider name requests are created for.
    pub fn controller(&self) -> &str {
        &self.controller
    }

    /// The cache of this provider's AccessRequests.
    pub fn access_requests(&self) -> &Cache<ObjectKey, AccessRequest> {
        &self.access_requests
    }

    /// The cache of this provider's ClusterRequests.
    pub fn cluster_requests(&self) -> &Cache<ObjectKey, ClusterRequest> {
        &self.cluster_requests
    }

    /// The kubeconfig store.
    pub fn kubeconfigs(&self) -> &KubeconfigStore {
        &self.kubeconfigs
    }

    /// The names of `tenant`'s requests for `reg`.
    pub fn names(&self, reg: &Registration, tenant: &Tenant) -> Result<RequestNames, NamingError> {
        RequestNames::new(&self.controller, reg, tenant)
    }

    /// The names of `id`'s requests for `reg`; remembers `id` when its labels are shortened,
    /// for [`owner_of`](Self::owner_of).
    fn names_of(&self, reg: &Registration, id: &Identity) -> Result<RequestNames, NamingError> {
        let names = self.names(reg, &Tenant::from(id))?;
        if names.labels.get(ONBOARDING_NAME_LABEL) != Some(&id.name)
            || names.labels.get(ONBOARDING_NAMESPACE_LABEL) != Some(&id.access_namespace())
        {
            self.shortened
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(names.namespace.clone(), id.clone());
        }
        Ok(names)
    }

    /// The tenant a request of this provider serves: the one its onboarding labels name when
    /// that tenant's platform namespace is the request's (a shortened label names no tenant
    /// whose namespace hashes to it), else a tenant with shortened labels seen in that
    /// namespace. `None` for a request of no known tenant (the onboarding requests).
    pub fn owner_of(&self, meta: &ObjectMeta) -> Option<Identity> {
        let namespace = meta.namespace.as_deref()?;
        if let Some(owner) = meta
            .labels
            .as_ref()
            .and_then(|labels| labelled_owner(namespace, labels))
        {
            return Some(owner);
        }
        self.shortened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(namespace)
            .cloned()
    }

    /// Orders access for `id` (creating what is missing) and reports where it stands.
    pub async fn ensure(
        &self,
        reg: &Registration,
        id: &Identity,
    ) -> Result<AccessState, AccessError> {
        let names = self.names_of(reg, id)?;
        if let RequestedCluster::New { purpose } = &reg.cluster {
            let key = ObjectKey::new(&names.namespace, &names.request);
            let cr = match self.cluster_requests.get(&key) {
                Some(cr) => cr,
                None => self.create_cluster_request(&names, purpose).await?,
            };
            check_managed("ClusterRequest", &key, cr.labels(), &names.labels)?;
            if cr.metadata.deletion_timestamp.is_some() {
                return Ok(AccessState::Waiting {
                    message: format!("ClusterRequest {key} is being deleted"),
                });
            }
            match &cr.status {
                Some(status) if status.is_granted() => {}
                Some(status) if status.is_denied() => {
                    return Ok(AccessState::Denied {
                        message: format!(
                            "ClusterRequest {key} was denied{}",
                            reason_suffix(&status.common.conditions)
                        ),
                    });
                }
                _ => {
                    return Ok(AccessState::Waiting {
                        message: format!("waiting for ClusterRequest {key} to be granted"),
                    });
                }
            }
        }

        let key = names.access_request();
        let ar = match self.access_requests.get(&key) {
            Some(ar) => {
                check_managed("AccessRequest", &key, ar.labels(), &names.labels)?;
                // Go's CreateOrUpdate sets the registration's token on every reconcile; a
                // request that grants the same (a Go provider's, written in another order) is
                // adopted as it is, without a write and so without a new generation.
                if ar.metadata.deletion_timestamp.is_none()
                    && !ar
                        .spec
                        .token
                        .as_ref()
                        .is_some_and(|token| grants_same(token, &reg.token))
                {
                    self.update_token(&key, &reg.token).await?
                } else {
                    ar
                }
            }
            None => self.create_access_request(&names, reg).await?,
        };
        if ar.metadata.deletion_timestamp.is_some() {
            return Ok(AccessState::Waiting {
                message: format!("AccessRequest {key} is being deleted"),
            });
        }
        if let Some(status) = &ar.status
            && status.is_denied()
        {
            return Ok(AccessState::Denied {
                message: format!(
                    "AccessRequest {key} was denied{}",
                    reason_suffix(&status.common.conditions)
                ),
            });
        }
        if !ar.is_ready() {
            return Ok(AccessState::Waiting {
                message: format!("waiting for AccessRequest {key} to be granted"),
            });
        }
        let Some(secret) = ar.status.as_ref().and_then(|s| s.secret_ref.as_ref()) else {
            return Ok(AccessState::Waiting {
                message: format!("AccessRequest {key} is granted but names no Secret yet"),
            });
        };
        let secret = ObjectKey::new(&key.namespace, &secret.name);
        match self
            .kubeconfigs
            .access(&secret, id)
            .await
            .map_err(|e| AccessError::Kubeconfig(Box::new(e)))?
        {
            Some(access) => Ok(AccessState::Ready(access)),
            None => Ok(AccessState::Waiting {
                message: format!("waiting for Secret {secret} of AccessRequest {key}"),
            }),
        }
    }

    /// Whether `id`'s AccessRequest for `reg` is gone or being deleted (from the cache).
    pub fn released(&self, reg: &Registration, id: &Identity) -> Result<bool, AccessError> {
        let names = self.names_of(reg, id)?;
        Ok(match self.access_requests.get(&names.access_request()) {
            None => true,
            Some(ar) => ar.metadata.deletion_timestamp.is_some(),
        })
    }

    /// Gives back `id`'s access for `reg`; `true` once its requests are gone.
    pub async fn teardown(&self, reg: &Registration, id: &Identity) -> Result<bool, AccessError> {
        let names = self.names_of(reg, id)?;
        let ar_key = names.access_request();
        if let Some(ar) = self.access_requests.get(&ar_key) {
            if !is_managed(ar.labels(), &names.labels) {
                tracing::info!(request = %ar_key, "not deleting AccessRequest: it is not managed by this provider");
            } else {
                self.release::<AccessRequest>(&ar_key, &ar.metadata).await?;
                if let Some(secret) = ar.status.as_ref().and_then(|s| s.secret_ref.as_ref()) {
                    self.kubeconfigs
                        .forget(&ObjectKey::new(&ar_key.namespace, &secret.name));
                }
                return Ok(false);
            }
        }
        if let RequestedCluster::New { .. } = reg.cluster {
            let cr_key = ObjectKey::new(&names.namespace, &names.request);
            if let Some(cr) = self.cluster_requests.get(&cr_key) {
                if !is_managed(cr.labels(), &names.labels) {
                    tracing::info!(request = %cr_key, "not deleting ClusterRequest: it is not managed by this provider");
                } else {
                    self.release::<ClusterRequest>(&cr_key, &cr.metadata)
                        .await?;
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Deletes a request (once) and removes our finalizer when it is the only one left.
    async fn release<K>(&self, key: &ObjectKey, meta: &ObjectMeta) -> Result<(), AccessError>
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned,
    {
        let kind = K::kind(&());
        let api: Api<K> = Api::namespaced(self.platform.clone(), &key.namespace);
        let mut meta = meta.clone();
        if meta.deletion_timestamp.is_none() {
            tracing::info!(request = %key, kind = %kind, "deleting");
            match api.delete(&key.name, &DeleteParams::default()).await {
                // Still there, held by finalizers: continue with what the server returned.
                Ok(either::Either::Left(object)) => meta = object.meta().clone(),
                Ok(either::Either::Right(_)) => return Ok(()),
                Err(err) if is_status(&err, 404) => return Ok(()),
                Err(source) => {
                    return Err(api_error(format!("deleting {kind} {key}"), source));
                }
            }
        }
        let finalizers = meta.finalizers.as_deref().unwrap_or_default();
        if finalizers.len() == 1 && finalizers[0] == CLUSTER_ACCESS_FINALIZER {
            // Go removes the list with a JSON patch; a merge patch with the resourceVersion as
            // precondition has the same effect and fails (409) instead of dropping a finalizer
            // another controller added meanwhile.
            let patch = serde_json::json!({
                "metadata": {
                    "finalizers": null,
                    "resourceVersion": meta.resource_version,
                }
            });
            match api
                .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {}
                // Gone already, or changed meanwhile: the watch brings us back.
                Err(err) if is_status(&err, 404) || is_status(&err, 409) => {}
                Err(source) => {
                    return Err(api_error(
                        format!("removing the finalizer of {kind} {key}"),
                        source,
                    ));
                }
            }
        }
        Ok(())
    }

    async fn create_cluster_request(
        &self,
        names: &RequestNames,
        purpose: &str,
    ) -> Result<Arc<ClusterRequest>, AccessError> {
        let key = ObjectKey::new(&names.namespace, &names.request);
        let cr = ClusterRequest {
            metadata: request_meta(names),
            spec: ClusterRequestSpec {
                purpose: purpose.to_owned(),
                wait_for_cluster_deletion: None,
            },
            status: None,
        };
        tracing::info!(request = %key, purpose, "creating ClusterRequest");
        let api: Api<ClusterRequest> = Api::namespaced(self.platform.clone(), &names.namespace);
        let created = self
            .create_in_namespace(&api, &names.namespace, &cr, &key)
            .await?;
        let created = Arc::new(created);
        self.cluster_requests.insert_if_newer(key, created.clone());
        Ok(created)
    }

    async fn create_access_request(
        &self,
        names: &RequestNames,
        reg: &Registration,
    ) -> Result<Arc<AccessRequest>, AccessError> {
        let key = names.access_request();
        let ar = AccessRequest {
            metadata: request_meta(names),
            spec: AccessRequestSpec {
                request_ref: Some(names.cluster_request.clone()),
                token: Some(reg.token.clone()),
                ..Default::default()
            },
            status: None,
        };
        tracing::info!(request = %key, "creating AccessRequest");
        let api: Api<AccessRequest> = Api::namespaced(self.platform.clone(), &names.namespace);
        let created = self
            .create_in_namespace(&api, &names.namespace, &ar, &key)
            .await?;
        let created = Arc::new(created);
        self.access_requests.insert_if_newer(key, created.clone());
        Ok(created)
    }

    async fn update_token(
        &self,
        key: &ObjectKey,
        token: &TokenConfig,
    ) -> Result<Arc<AccessRequest>, AccessError> {
        tracing::info!(request = %key, "updating the permissions of AccessRequest");
        let api: Api<AccessRequest> = Api::namespaced(self.platform.clone(), &key.namespace);
        // Both lists are written, an empty one as null: a merge patch leaves out what it does
        // not name, and a `roleRefs` left behind would keep a grant the provider no longer
        // asks for.
        let list = |v: serde_json::Value| match v {
            serde_json::Value::Array(a) if a.is_empty() => serde_json::Value::Null,
            other => other,
        };
        let patch = serde_json::json!({ "spec": { "token": {
            "permissions": list(serde_json::json!(token.permissions)),
            "roleRefs": list(serde_json::json!(token.role_refs)),
        } } });
        let updated = api
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| api_error(format!("updating AccessRequest {key}"), source))?;
        let updated = Arc::new(updated);
        self.access_requests
            .insert_if_newer(key.clone(), updated.clone());
        Ok(updated)
    }

    /// Creates `object`; when its namespace is missing, creates the namespace and tries again.
    /// An object that already exists (our cache lags behind) is read instead.
    async fn create_in_namespace<K>(
        &self,
        api: &Api<K>,
        namespace: &str,
        object: &K,
        key: &ObjectKey,
    ) -> Result<K, AccessError>
    where
        K: kube::Resource
            + Clone
            + std::fmt::Debug
            + serde::Serialize
            + serde::de::DeserializeOwned,
        K::DynamicType: Default,
    {
        let kind = K::kind(&Default::default()).into_owned();
        let api_err = |doing: &str, source| api_error(format!("{doing} {kind} {key}"), source);
        match api.create(&PostParams::default(), object).await {
            Ok(created) => return Ok(created),
            Err(err) if is_status(&err, 409) => {
                return api.get(&key.name).await.map_err(|e| api_err("reading", e));
            }
            Err(err) if is_status(&err, 404) => {}
            Err(err) => return Err(api_err("creating", err)),
        }
        tracing::info!(namespace, "creating platform namespace");
        let namespaces: Api<Namespace> = Api::all(self.platform.clone());
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(namespace.to_owned()),
                ..Default::default()
            },
            ..Default::default()
        };
        match namespaces.create(&PostParams::default(), &ns).await {
            Ok(_) => {}
            Err(err) if is_status(&err, 409) => {}
            Err(source) => {
                return Err(api_error(format!("creating namespace {namespace}"), source));
            }
        }
        match api.create(&PostParams::default(), object).await {
            Ok(created) => Ok(created),
            Err(err) if is_status(&err, 409) => {
                api.get(&key.name).await.map_err(|e| api_err("reading", e))
            }
            Err(err) => Err(api_err("creating", err)),
        }
    }

    /// The field manager used for writes.
    pub fn field_manager(&self) -> &str {
        &self.field_manager
    }
}

fn request_meta(names: &RequestNames) -> ObjectMeta {
    ObjectMeta {
        name: Some(names.request.clone()),
        namespace: Some(names.namespace.clone()),
        labels: Some(names.labels.clone()),
        finalizers: Some(vec![CLUSTER_ACCESS_FINALIZER.to_owned()]),
        ..Default::default()
    }
}

/// The managed-by and managed-purpose labels decide adoption, as in the Go library.
fn check_managed(
    kind: &'static str,
    key: &ObjectKey,
    actual: &BTreeMap<String, String>,
    expected: &BTreeMap<String, String>,
) -> Result<(), AccessError> {
    for label in [MANAGED_BY_LABEL, MANAGED_PURPOSE_LABEL] {
        let want = expected.get(label).map(String::as_str).unwrap_or_default();
        let have = actual.get(label).map(String::as_str);
        if have != Some(want) {
            return Err(AccessError::NotManaged(format!(
                "{kind} {key} already exists but is not managed by this provider (label {label:?} is {:?}, expected {want:?})",
                have.unwrap_or("<none>")
            )));
        }
    }
    Ok(())
}

fn is_managed(actual: &BTreeMap<String, String>, expected: &BTreeMap<String, String>) -> bool {
    [MANAGED_BY_LABEL, MANAGED_PURPOSE_LABEL]
        .iter()
        .all(|l| actual.get(*l) == expected.get(*l))
}

fn reason_suffix(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
) -> String {
    conditions
        .iter()
        .find(|c| c.status == "False" || !c.message.is_empty())
        .map(|c| {
            if c.message.is_empty() {
                format!(": {}", c.reason)
            } else {
                format!(": {}", c.message)
            }
        })
        .unwrap_or_default()
}

fn api_error(doing: impl Into<String>, source: kube::Error) -> AccessError {
    AccessError::Api {
        doing: doing.into(),
        source: Box::new(source),
    }
}

/// Whether `err` is an API error with HTTP status `code`.
pub fn is_status(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == code)
}

/// The client error behind a failed `kube::runtime::wait::await_condition`, so a watch that
/// fails reads like the request that failed (a 403 is a 403).
pub(crate) fn watch_error(err: kube::runtime::wait::Error) -> kube::Error {
    use kube::runtime::watcher::Error as Watch;
    let kube::runtime::wait::Error::ProbeFailed(err) = err;
    match err {
        Watch::InitialListFailed(err) | Watch::WatchStartFailed(err) | Watch::WatchFailed(err) => {
            err
        }
        Watch::WatchError(status) => kube::Error::Api(status),
        Watch::NoResourceVersion => kube::Error::Service(Box::new(Watch::NoResourceVersion)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_go_library() {
        let tenant = Tenant {
            namespace: "project-a--ws-b".into(),
            name: "my-mcp".into(),
        };
        let mcp = RequestNames::new(
            "velero",
            &Registration::mcp(TokenConfig::least_privilege()),
            &tenant,
        )
        .unwrap();
        assert_eq!(mcp.request, "velero--my-mcp--mcp");
        assert!(mcp.namespace.starts_with("mcp--"));
        assert_eq!(mcp.cluster_request.name, "my-mcp");
        assert_eq!(mcp.cluster_request.namespace, mcp.namespace);
        assert_eq!(
            mcp.labels.get(MANAGED_PURPOSE_LABEL).map(String::as_str),
            Some("project-a--ws-b.my-mcp.mcp")
        );
        let wl = RequestNames::new(
            "velero",
            &Registration::workload(None, TokenConfig::least_privilege()),
            &tenant,
        )
        .unwrap();
        assert_eq!(wl.request, "velero--my-mcp--wl");
        assert_eq!(wl.namespace, mcp.namespace);
        assert_eq!(wl.cluster_request.name, "velero--my-mcp--wl");
        assert_eq!(
            wl.labels.get(MANAGED_PURPOSE_LABEL).map(String::as_str),
            Some("project-a--ws-b.my-mcp.workload")
        );
    }

    #[test]
    fn owners_come_from_labels_that_were_not_shortened() {
        let ns = stable_mcp_namespace("a", "ns").unwrap();
        let labels = request_labels("velero", "ns", "a", "mcp");
        assert_eq!(
            labelled_owner(&ns, &labels),
            Some(Identity {
                cluster: None,
                namespace: "ns".into(),
                name: "a".into()
            })
        );
        // The labels of another tenant's namespace name no owner here.
        assert_eq!(labelled_owner("mcp--other", &labels), None);
        let kcp = stable_mcp_namespace("a", "1abc_ns").unwrap();
        let labels = request_labels("velero", "1abc_ns", "a", "mcp");
        assert_eq!(
            labelled_owner(&kcp, &labels).unwrap().cluster.as_deref(),
            Some("1abc")
        );
        // A shortened onboarding-name names a tenant that does not exist: no owner from labels.
        let long = "n".repeat(80);
        let ns = stable_mcp_namespace(&long, "ns").unwrap();
        let labels = request_labels("velero", "ns", &long, "mcp");
        assert_ne!(labels[ONBOARDING_NAME_LABEL], long);
        assert_eq!(labelled_owner(&ns, &labels), None);
    }

    #[test]
    fn token_configs_compare_as_sets() {
        let go: TokenConfig = serde_json::from_value(serde_json::json!({
            "permissions": [{"rules": [
                {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]},
                {"apiGroups": [""], "resources": ["serviceaccounts", "namespaces"], "verbs": ["*"], "resourceNames": []},
            ]}],
        }))
        .unwrap();
        let ours: TokenConfig = serde_json::from_value(serde_json::json!({
            "permissions": [{"name": "", "rules": [
                {"apiGroups": [""], "resources": ["namespaces", "serviceaccounts"], "verbs": ["*"]},
                {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*", "*"]},
            ]}],
            "roleRefs": [],
        }))
        .unwrap();
        assert!(grants_same(&go, &ours));
        // A role reference on top is a wider grant, not the same one.
        let mut wider = ours.clone();
        wider
            .role_refs
            .push(crate::openmcp::RoleRef::cluster_role("cluster-admin"));
        assert!(!grants_same(&go, &wider));
        // One verb fewer is a narrower one.
        let mut narrower = ours;
        narrower.permissions[0].rules[1].verbs = vec!["get".into()];
        assert!(!grants_same(&go, &narrower));
        assert!(!grants_same(
            &TokenConfig::least_privilege(),
            &TokenConfig::cluster_admin()
        ));
    }

    #[test]
    fn adoption_needs_matching_labels() {
        let expected = request_labels("velero", "ns", "a", "mcp");
        let mut other = expected.clone();
        other.insert(MANAGED_BY_LABEL.into(), "flux".into());
        let key = ObjectKey::new("x", "y");
        assert!(check_managed("AccessRequest", &key, &expected, &expected).is_ok());
        let err = check_managed("AccessRequest", &key, &other, &expected).unwrap_err();
        assert!(
            err.to_string().contains("not managed by this provider"),
            "{err}"
        );
    }
}
