//! The AccessRequest controller with the simulated cluster provider's grant: labels and
//! `clusterRef` as openmcp-operator fills them; in the target cluster a ServiceAccount bound to
//! the requested permissions and role references; a TokenRequest token in a kubeconfig Secret on
//! the platform; `Granted` with `observedGeneration` and `secretRef`. Deletion revokes it all.
//! Requests the simulation cannot satisfy are `Denied` with a reason and message.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use super::scheduler::{CONDITION_GRANTED, condition, denial};
use super::{
    Context, ENVIRONMENT, Grant, ObjKey, PROFILE, PROVIDER, ReconcileError, Result, Shared, code,
    create_if_missing, operation, set_finalizers, with_finalizer, without_finalizer,
};
use crate::dev::hosting::ClusterHandle;
use crate::dev::queue::Next;
use crate::openmcp::clusters::TokenConfig;
use crate::openmcp::common::RoleKind;
use crate::openmcp::constants::{
    CLUSTER_ACCESS_FINALIZER, PROFILE_LABEL, PROVIDER_LABEL, REQUEST_GRANTED, SECRET_KEY_CA_CRT,
    SECRET_KEY_CREATION_TIMESTAMP, SECRET_KEY_EXPIRATION_TIMESTAMP, SECRET_KEY_HOST,
    SECRET_KEY_KUBECONFIG, SECRET_KEY_TOKEN,
};
use crate::openmcp::naming::k8s_name_uuid;
use crate::openmcp::{AccessRequest, Cluster, ClusterRequest, RequestStatus};

/// Label on every object the grant creates in the target cluster: the AccessRequest's name.
pub(super) const ACCESS_NAME_LABEL: &str = "accessrequest.clusters.openmcp.cloud/name";
/// Label on every object the grant creates in the target cluster: the AccessRequest's namespace.
pub(super) const ACCESS_NAMESPACE_LABEL: &str = "accessrequest.clusters.openmcp.cloud/namespace";
/// Field manager of the simulated operator's server-side applies.
const MANAGER: &str = "openmcp-operator";
/// kube-apiserver refuses TokenRequests shorter than 10 minutes.
pub(crate) const KUBE_MIN_TOKEN_SECONDS: i64 = 600;
/// Share of a token's validity after which it is renewed (openMCP's cluster providers: 80%).
const RENEW_AFTER: f64 = 0.8;

/// What a request resolves to.
enum Resolution {
    /// Grant access to this Cluster.
    Cluster(ObjKey),
    /// The referenced ClusterRequest is not granted yet: its watch event brings us back.
    Wait,
    /// Cannot be satisfied.
    Deny(&'static str, String),
}

/// The Secret holding the kubeconfig of an AccessRequest.
pub(crate) fn secret_name(ar_name: &str) -> String {
    format!("{ar_name}.kubeconfig")
}

/// Handles one AccessRequest.
pub(crate) async fn reconcile(sh: &Arc<Shared>, key: &ObjKey) -> Result<Next> {
    let Some(ar) = sh.stores.access_requests.get(&key.oref()) else {
        return Ok(Next::Done);
    };
    let api = Api::<AccessRequest>::namespaced(sh.platform.clone(), &key.namespace);
    if operation(&api, ar.as_ref()).await? {
        return Ok(Next::Done);
    }
    if ar.metadata.deletion_timestamp.is_some() {
        return revoke(sh, &api, &ar).await;
    }
    let cluster = match resolve(sh, &ar).await? {
        Resolution::Cluster(c) => c,
        Resolution::Wait => return Ok(Next::Done),
        Resolution::Deny(reason, message) => return deny(sh, &api, &ar, reason, &message).await,
    };
    let token = match (&ar.spec.token, &ar.spec.oidc) {
        (_, Some(_)) => {
            let msg = "OIDC access is not simulated by the embedded platform; ask for token access";
            return deny(sh, &api, &ar, "ConfigurationProblem", msg).await;
        }
        (Some(t), None) => t.clone(),
        (None, None) => {
            let msg = "exactly one of spec.token or spec.oidc must be set";
            return deny(sh, &api, &ar, "ConfigurationProblem", msg).await;
        }
    };
    if let Err(msg) = validate(&token) {
        return deny(sh, &api, &ar, "InvalidPermissions", &msg).await;
    }
    let Some(target) = sh.handle(&cluster) else {
        let msg = format!("Cluster '{cluster}' is not served by the simulated platform");
        return deny(sh, &api, &ar, "InvalidReference", &msg).await;
    };
    let ar = ensure_metadata(&api, ar.as_ref(), &cluster).await?;
    let uid = ar.uid().unwrap_or_default();
    let generation = ar.metadata.generation.unwrap_or(0);

    let previous = sh.grants.lock().get(&uid).cloned();
    let status = ar.status.clone().unwrap_or_default();
    if let Some(g) = &previous
        && status.common.phase == REQUEST_GRANTED
        && status.common.observed_generation == generation
        && g.generation == generation
        && g.cluster == cluster
        && let Ok(left) = g.renew_at.duration_since(SystemTime::now())
    {
        return Ok(Next::After(left));
    }
    // A changed request: remove what the previous grant created before granting anew.
    if let Some(g) = &previous
        && (g.generation != generation || g.cluster != cluster)
        && let Some(old) = sh.handle(&g.cluster)
    {
        cleanup(&old.client(), key).await?;
    }

    let ttl = ar
        .spec
        .ttl
        .map(std::time::Duration::from)
        .unwrap_or(sh.cfg.token_ttl);
    let issued = match grant(sh, &cluster, &target, key, &token, ttl).await {
        Ok(issued) => issued,
        Err(GrantError::Invalid(msg)) => {
            return deny(sh, &api, &ar, "InvalidPermissions", &msg).await;
        }
        Err(GrantError::Failed(e)) => return Err(e),
    };

    let created = SystemTime::now();
    let validity = issued
        .expires
        .duration_since(created)
        .unwrap_or(Duration::ZERO);
    let renew_at = created + validity.mul_f64(RENEW_AFTER);
    let secret = secret_name(&key.name);
    write_secret(sh, &ar, &secret, &target, &issued, created).await?;

    let message = format!("granted access to cluster {cluster}");
    let patch = json!({"status": {
        "phase": REQUEST_GRANTED,
        "observedGeneration": generation,
        "secretRef": {"name": secret},
        "conditions": [condition(CONDITION_GRANTED, true, "Granted", &message, generation)],
    }});
    api.patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .ctx(|| format!("granting AccessRequest {key}"))?;
    sh.grants.lock().insert(
        uid,
        Grant {
            generation,
            cluster,
            renew_at,
        },
    );
    Ok(Next::After(
        renew_at
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    ))
}

/// Finds the Cluster a request is for: `clusterRef`, else the cluster granted to the
/// ClusterRequest named by `requestRef`. A reference missing from the cache is read live before
/// it is called missing, so a request created right after its ClusterRequest is never denied.
async fn resolve(sh: &Shared, ar: &AccessRequest) -> Result<Resolution> {
    if let Some(r) = &ar.spec.cluster_ref {
        let key = ObjKey::new(&r.namespace, &r.name);
        let exists = match sh.stores.clusters.get(&key.oref()) {
            Some(_) => true,
            None => Api::<Cluster>::namespaced(sh.platform.clone(), &key.namespace)
                .get_opt(&key.name)
                .await
                .ctx(|| format!("reading Cluster {key}"))?
                .is_some(),
        };
        if !exists {
            return Ok(Resolution::Deny(
                "InvalidReference",
                format!("referenced Cluster '{key}' not found"),
            ));
        }
        return Ok(Resolution::Cluster(key));
    }
    let Some(r) = &ar.spec.request_ref else {
        return Ok(Resolution::Deny(
            "ConfigurationProblem",
            format!(
                "invalid AccessRequest resource '{}/{}': neither clusterRef nor requestRef is set",
                ar.namespace().unwrap_or_default(),
                ar.name_any()
            ),
        ));
    };
    let key = ObjKey::new(&r.namespace, &r.name);
    let cr = match sh.stores.cluster_requests.get(&key.oref()) {
        Some(cr) => Some(cr.as_ref().clone()),
        None => Api::<ClusterRequest>::namespaced(sh.platform.clone(), &key.namespace)
            .get_opt(&key.name)
            .await
            .ctx(|| format!("reading ClusterRequest {key}"))?,
    };
    let Some(cr) = cr else {
        return Ok(Resolution::Deny(
            "InvalidReference",
            format!("ClusterRequest '{key}' not found"),
        ));
    };
    let status = cr.status.clone().unwrap_or_default();
    if status.is_denied() {
        let why = status
            .common
            .condition(CONDITION_GRANTED)
            .map(|c| c.message.clone())
            .unwrap_or_default();
        return Ok(Resolution::Deny(
            "InvalidReference",
            format!("ClusterRequest '{key}' is denied: {why}"),
        ));
    }
    match (status.is_granted(), status.cluster) {
        (true, Some(c)) => Ok(Resolution::Cluster(ObjKey::new(c.namespace, c.name))),
        _ => Ok(Resolution::Wait),
    }
}

/// The checks kube-apiserver's RBAC validation makes on the rules, plus the role-reference
/// rules of the AccessRequest API; a message naming the offending field otherwise.
fn validate(token: &TokenConfig) -> std::result::Result<(), String> {
    for (i, p) in token.permissions.iter().enumerate() {
        for (j, r) in p.rules.iter().enumerate() {
            let at = format!("spec.token.permissions[{i}].rules[{j}]");
            if r.verbs.is_empty() {
                return Err(format!(
                    "{at}.verbs: Required value: verbs must contain at least one value"
                ));
            }
            let non_resource = r.non_resource_urls.as_ref().is_some_and(|u| !u.is_empty());
            let groups = r.api_groups.as_ref().is_some_and(|g| !g.is_empty());
            let resources = r.resources.as_ref().is_some_and(|g| !g.is_empty());
            if non_resource {
                if !p.namespace.is_empty() {
                    return Err(format!(
                        "{at}.nonResourceURLs: Invalid value: namespaced rules cannot apply to non-resource URLs"
                    ));
                }
                if groups || resources {
                    return Err(format!(
                        "{at}.nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs"
                    ));
                }
            } else {
                if !groups {
                    return Err(format!(
                        "{at}.apiGroups: Required value: resource rules must supply at least one api group"
                    ));
                }
                if !resources {
                    return Err(format!(
                        "{at}.resources: Required value: resource rules must supply at least one resource"
                    ));
                }
            }
        }
    }
    for (j, r) in token.role_refs.iter().enumerate() {
        match (r.kind, r.namespace.is_empty()) {
            (RoleKind::Role, true) => {
                return Err(format!(
                    "spec.token.roleRefs[{j}].namespace: Required value: a reference to a Role must name its namespace"
                ));
            }
            (RoleKind::ClusterRole, false) => {
                return Err(format!(
                    "spec.token.roleRefs[{j}].namespace: Invalid value: a reference to a ClusterRole must not name a namespace"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The operator's labels, the clusterAccess finalizer and `clusterRef` (from `requestRef`), in
/// one patch guarded by the resourceVersion.
async fn ensure_metadata(
    api: &Api<AccessRequest>,
    ar: &AccessRequest,
    cluster: &ObjKey,
) -> Result<AccessRequest> {
    let labels = ar.labels();
    let mut meta = serde_json::Map::new();
    let mut spec = serde_json::Map::new();
    if labels.get(PROVIDER_LABEL).map(String::as_str) != Some(PROVIDER)
        || labels.get(PROFILE_LABEL).map(String::as_str) != Some(PROFILE)
    {
        meta.insert(
            "labels".into(),
            json!({PROVIDER_LABEL: PROVIDER, PROFILE_LABEL: PROFILE}),
        );
    }
    if let Some(fins) = with_finalizer(ar, CLUSTER_ACCESS_FINALIZER) {
        meta.insert("finalizers".into(), json!(fins));
    }
    if ar.spec.cluster_ref.is_none() {
        spec.insert(
            "clusterRef".into(),
            json!({"name": cluster.name, "namespace": cluster.namespace}),
        );
    }
    if meta.is_empty() && spec.is_empty() {
        return Ok(ar.clone());
    }
    meta.insert("resourceVersion".into(), json!(ar.resource_version()));
    let mut patch = json!({"metadata": meta});
    if !spec.is_empty() {
        patch["spec"] = serde_json::Value::Object(spec);
    }
    api.patch(
        &ar.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .ctx(|| format!("labelling AccessRequest {}", ar.name_any()))
}

/// Writes `Denied` with a reason, unless the status says so already. Access granted for an
/// earlier spec is revoked first: a denied request holds no credentials.
async fn deny(
    sh: &Shared,
    api: &Api<AccessRequest>,
    ar: &AccessRequest,
    reason: &str,
    message: &str,
) -> Result<Next> {
    let uid = ar.uid().unwrap_or_default();
    let previous = sh.grants.lock().get(&uid).cloned();
    if let Some(g) = previous {
        let key = ObjKey::new(ar.namespace().unwrap_or_default(), ar.name_any());
        if let Some(handle) = sh.handle(&g.cluster) {
            cleanup(&handle.client(), &key).await?;
        }
        delete_secret(sh, &key).await?;
        sh.grants.lock().remove(&uid);
    }
    let generation = ar.metadata.generation.unwrap_or(0);
    let status = ar.status.clone().unwrap_or_default();
    let Some(mut patch) = denial(&status.common, generation, reason, message) else {
        return Ok(Next::Done);
    };
    // A denied request holds no kubeconfig any more.
    patch["status"]["secretRef"] = serde_json::Value::Null;
    api.patch_status(
        &ar.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .ctx(|| format!("denying AccessRequest {}", ar.name_any()))?;
    Ok(Next::Done)
}

/// A token handed out.
struct Issued {
    token: String,
    expires: SystemTime,
}

enum GrantError {
    /// The target cluster refused the requested RBAC as invalid.
    Invalid(String),
    /// Anything else: retried.
    Failed(ReconcileError),
}

impl From<ReconcileError> for GrantError {
    fn from(e: ReconcileError) -> Self {
        GrantError::Failed(e)
    }
}

/// Sorts a target cluster's answer: 400/422 means the requested RBAC is invalid.
fn target_err(what: impl FnOnce() -> String) -> impl FnOnce(kube::Error) -> GrantError {
    move |e| match code(&e) {
        Some(400 | 422) => GrantError::Invalid(match &e {
            kube::Error::Api(s) => s.message.clone(),
            other => other.to_string(),
        }),
        _ => GrantError::Failed(ReconcileError::Kube {
            what: what(),
            source: e,
        }),
    }
}

fn managed_meta(name: &str, namespace: Option<&str>, ar: &ObjKey) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(String::from),
        labels: Some(BTreeMap::from([
            (ACCESS_NAME_LABEL.to_string(), ar.name.clone()),
            (ACCESS_NAMESPACE_LABEL.to_string(), ar.namespace.clone()),
        ])),
        ..Default::default()
    }
}

/// Server-side applies `o` (create or update in one request).
async fn apply<K>(
    api: &Api<K>,
    name: &str,
    o: &serde_json::Value,
) -> std::result::Result<(), GrantError>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(o))
        .await
        .map(|_| ())
        .map_err(target_err(|| format!("applying {name}")))
}

/// Creates namespace `ns` in the target cluster once.
async fn ensure_namespace(
    sh: &Shared,
    cluster: &ObjKey,
    client: &kube::Client,
    ns: &str,
) -> Result<()> {
    let marker = (cluster.clone(), ns.to_string());
    if sh.namespaces_ensured.lock().contains(&marker) {
        return Ok(());
    }
    let obj = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    create_if_missing(&Api::<Namespace>::all(client.clone()), &obj).await?;
    sh.namespaces_ensured.lock().insert(marker);
    Ok(())
}

/// Creates the ServiceAccount and its RBAC in the target cluster and mints a token.
async fn grant(
    sh: &Shared,
    cluster: &ObjKey,
    target: &ClusterHandle,
    key: &ObjKey,
    token: &TokenConfig,
    ttl: Duration,
) -> std::result::Result<Issued, GrantError> {
    let client = target.client();
    let sa_ns = sh.cfg.access_namespace.as_str();
    let uuid = k8s_name_uuid(&[ENVIRONMENT, PROVIDER, &key.namespace, &key.name])
        .map_err(|e| GrantError::Failed(ReconcileError::Other(e.to_string())))?;
    ensure_namespace(sh, cluster, &client, sa_ns).await?;
    let sa = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": serde_json::to_value(managed_meta(&uuid, Some(sa_ns), key)).unwrap_or_default(),
    });
    apply(
        &Api::<ServiceAccount>::namespaced(client.clone(), sa_ns),
        &uuid,
        &sa,
    )
    .await?;
    let subjects = json!([{"kind": "ServiceAccount", "name": uuid, "namespace": sa_ns}]);
    let meta = |name: &str, ns: Option<&str>| {
        let mut m = serde_json::to_value(managed_meta(name, ns, key)).unwrap_or_default();
        if m.is_null() {
            m = json!({});
        }
        m
    };
    let binding = |kind: &str, name: &str, ns: Option<&str>, role_kind: &str, role: &str| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": meta(name, ns),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": subjects,
        })
    };

    for (i, p) in token.permissions.iter().enumerate() {
        let name = if p.name.is_empty() {
            format!("openmcp:{uuid}:{i}")
        } else {
            p.name.clone()
        };
        let rules = serde_json::to_value(&p.rules).unwrap_or_default();
        if p.namespace.is_empty() {
            let role = json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": meta(&name, None),
                "rules": rules,
            });
            apply(&Api::<ClusterRole>::all(client.clone()), &name, &role).await?;
            let b = binding("ClusterRoleBinding", &name, None, "ClusterRole", &name);
            apply(&Api::<ClusterRoleBinding>::all(client.clone()), &name, &b).await?;
        } else {
            let ns = p.namespace.as_str();
            if p.disable_automatic_namespace_creation {
                let exists = Api::<Namespace>::all(client.clone())
                    .get_opt(ns)
                    .await
                    .map_err(target_err(|| format!("reading namespace {ns}")))?
                    .is_some();
                if !exists {
                    return Err(GrantError::Invalid(format!(
                        "spec.token.permissions[{i}].namespace: namespace '{ns}' does not exist in the target cluster and disableAutomaticNamespaceCreation is set"
                    )));
                }
            } else {
                ensure_namespace(sh, cluster, &client, ns).await?;
            }
            let role = json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": meta(&name, Some(ns)),
                "rules": rules,
            });
            apply(&Api::<Role>::namespaced(client.clone(), ns), &name, &role).await?;
            let b = binding("RoleBinding", &name, Some(ns), "Role", &name);
            apply(
                &Api::<RoleBinding>::namespaced(client.clone(), ns),
                &name,
                &b,
            )
            .await?;
        }
    }
    for (j, r) in token.role_refs.iter().enumerate() {
        let name = format!("openmcp:{uuid}:ref{j}");
        match r.kind {
            RoleKind::ClusterRole => {
                let b = binding("ClusterRoleBinding", &name, None, "ClusterRole", &r.name);
                apply(&Api::<ClusterRoleBinding>::all(client.clone()), &name, &b).await?;
            }
            RoleKind::Role => {
                let b = binding("RoleBinding", &name, Some(&r.namespace), "Role", &r.name);
                apply(
                    &Api::<RoleBinding>::namespaced(client.clone(), &r.namespace),
                    &name,
                    &b,
                )
                .await?;
            }
        }
    }

    let seconds = i64::try_from(ttl.as_secs())
        .unwrap_or(i64::MAX)
        .max(target.min_token_seconds());
    let request: TokenRequest = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }))
    .map_err(|e| {
        GrantError::Failed(ReconcileError::Other(format!(
            "building a TokenRequest: {e}"
        )))
    })?;
    let sas = Api::<ServiceAccount>::namespaced(client, sa_ns);
    let answer = sas
        .create_token_request(&uuid, &PostParams::default(), &request)
        .await
        .map_err(target_err(|| format!("minting a token for {sa_ns}/{uuid}")))?;
    let answer = serde_json::to_value(&answer).unwrap_or_default();
    let token = answer
        .pointer("/status/token")
        .and_then(|t| t.as_str())
        .filter(|t| !t.is_empty());
    let expires = answer
        .pointer("/status/expirationTimestamp")
        .and_then(|t| t.as_str())
        .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok());
    let (Some(token), Some(expires)) = (token, expires) else {
        return Err(GrantError::Failed(ReconcileError::Other(format!(
            "the TokenRequest for {sa_ns}/{uuid} came back without a token or expiry"
        ))));
    };
    let expires = SystemTime::UNIX_EPOCH
        + Duration::from_secs(u64::try_from(expires.as_second()).unwrap_or(0));
    Ok(Issued {
        token: token.to_string(),
        expires,
    })
}

fn unix_seconds(t: SystemTime) -> String {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
        .to_string()
}

/// The kubeconfig Secret on the platform, owned by the AccessRequest. Timestamps are Unix
/// seconds, as openMCP's cluster providers write them.
async fn write_secret(
    sh: &Shared,
    ar: &AccessRequest,
    name: &str,
    target: &ClusterHandle,
    issued: &Issued,
    created: SystemTime,
) -> Result<()> {
    let ns = ar.namespace().unwrap_or_default();
    let user = format!("{}--{}", ns, ar.name_any());
    let kubeconfig = target.kubeconfig_for(&user, &issued.token);
    let mut data = BTreeMap::from([
        (SECRET_KEY_KUBECONFIG.to_string(), kubeconfig.into_bytes()),
        (SECRET_KEY_HOST.to_string(), target.url().into_bytes()),
        (
            SECRET_KEY_TOKEN.to_string(),
            issued.token.clone().into_bytes(),
        ),
        (
            SECRET_KEY_EXPIRATION_TIMESTAMP.to_string(),
            unix_seconds(issued.expires).into_bytes(),
        ),
        (
            SECRET_KEY_CREATION_TIMESTAMP.to_string(),
            unix_seconds(created).into_bytes(),
        ),
    ]);
    if let Some(ca) = target.ca_pem() {
        data.insert(SECRET_KEY_CA_CRT.to_string(), ca.as_bytes().to_vec());
    }
    let data: serde_json::Map<String, serde_json::Value> = data
        .into_iter()
        .map(|(k, v)| (k, serde_json::to_value(ByteString(v)).unwrap_or_default()))
        .collect();
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": ns,
            "ownerReferences": [{
                "apiVersion": AccessRequest::api_version(&()),
                "kind": AccessRequest::kind(&()),
                "name": ar.name_any(),
                "uid": ar.uid().unwrap_or_default(),
                "controller": true,
            }],
        },
        "type": "Opaque",
        "data": data,
    });
    Api::<Secret>::namespaced(sh.platform.clone(), &ns)
        .patch(
            name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await
        .ctx(|| format!("writing Secret {ns}/{name}"))?;
    Ok(())
}

/// Deletes everything a grant created in a target cluster (found by label, so objects of an
/// earlier spec go too): the ServiceAccount first, which ends its tokens at once.
async fn cleanup(client: &kube::Client, key: &ObjKey) -> Result<()> {
    let lp = ListParams::default().labels(&format!(
        "{ACCESS_NAME_LABEL}={},{ACCESS_NAMESPACE_LABEL}={}",
        key.name, key.namespace
    ));
    delete_labelled::<ServiceAccount>(client, &lp).await?;
    delete_labelled::<ClusterRoleBinding>(client, &lp).await?;
    delete_labelled::<RoleBinding>(client, &lp).await?;
    delete_labelled::<ClusterRole>(client, &lp).await?;
    delete_labelled::<Role>(client, &lp).await?;
    Ok(())
}

async fn delete_labelled<K>(client: &kube::Client, lp: &ListParams) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let list = Api::<K>::all(client.clone())
        .list_metadata(lp)
        .await
        .ctx(|| format!("listing {} to revoke access", K::plural(&())))?;
    let resource = ApiResource::erase::<K>(&());
    for o in list.items {
        let api = match o.metadata.namespace.as_deref() {
            Some(ns) => Api::<DynamicObject>::namespaced_with(client.clone(), ns, &resource),
            None => Api::<DynamicObject>::all_with(client.clone(), &resource),
        };
        let name = o.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if code(&e) == Some(404) => {}
            Err(e) => return Err(e).ctx(|| format!("deleting {} {name}", K::kind(&()))),
        }
    }
    Ok(())
}

/// Deletes the kubeconfig Secret of an AccessRequest (gone is fine).
async fn delete_secret(sh: &Shared, key: &ObjKey) -> Result<()> {
    let secrets = Api::<Secret>::namespaced(sh.platform.clone(), &key.namespace);
    match secrets
        .delete(&secret_name(&key.name), &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if code(&e) == Some(404) => Ok(()),
        Err(e) => Err(e).ctx(|| format!("deleting the kubeconfig Secret of {key}")),
    }
}

/// Deletion: revoke the token (ServiceAccount and RBAC in the target cluster, the Secret on the
/// platform), then let the request go.
async fn revoke(sh: &Arc<Shared>, api: &Api<AccessRequest>, ar: &AccessRequest) -> Result<Next> {
    if !ar
        .finalizers()
        .iter()
        .any(|f| f == CLUSTER_ACCESS_FINALIZER)
    {
        return Ok(Next::Done);
    }
    let key = ObjKey::new(ar.namespace().unwrap_or_default(), ar.name_any());
    let uid = ar.uid().unwrap_or_default();
    let cluster = sh
        .grants
        .lock()
        .get(&uid)
        .map(|g| g.cluster.clone())
        .or_else(|| {
            ar.spec
                .cluster_ref
                .as_ref()
                .map(|c| ObjKey::new(&c.namespace, &c.name))
        });
    if let Some(handle) = cluster.and_then(|c| sh.handle(&c)) {
        cleanup(&handle.client(), &key).await?;
    }
    delete_secret(sh, &key).await?;
    sh.grants.lock().remove(&uid);
    if let Some(fins) = without_finalizer(ar, CLUSTER_ACCESS_FINALIZER) {
        match set_finalizers(api, ar, fins).await {
            Ok(_) => {}
            Err(ReconcileError::Kube { source, .. }) if code(&source) == Some(404) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Next::Done)
}
