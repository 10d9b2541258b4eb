//! The APIExport virtual workspace: a provider's view, through one shard, of every logical cluster
//! bound to its export — exactly the exported resources, the built-in (or other exports')
//! resources its accepted permission claims cover, and read-only `apibindings` — with kcp's
//! authorization (RBAC `apiexports/content` in the export's workspace, then the consumer's
//! APIBinding).

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use serde_json::Value;

use super::controller::binding::BoundEntry;
use super::controller::{self, ExportKey};
use super::server::{KcpInner, ShardState};
use crate::auth::{Attributes, Decision, UserInfo};
use crate::error::{ApiError, ApiResult};
use crate::handler::{ClusterScope, ObjectFilter, Surface, Target};
use crate::registry::{ApiSet, GroupInfo, ResourceInfo, Strategy};
use crate::store::{ObjKey, StoreKey, StoredObject};

/// A permission claim of an export: what it asks consumers for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExportClaim {
    pub group: String,
    pub resource: String,
    pub identity_hash: String,
    pub verbs: Vec<String>,
}

impl ExportClaim {
    /// Parses one `spec.permissionClaims[]` entry of a (v1alpha2) export.
    pub(crate) fn parse(v: &Value) -> Self {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        ExportClaim {
            group: s("group"),
            resource: s("resource"),
            identity_hash: s("identityHash"),
            verbs: v
                .get("verbs")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// What an export's virtual workspace serves, built from the export and its schemas and cached
/// until either changes.
pub(crate) struct VwApis {
    set: ApiSet,
    /// (group, resource, identity) of every claimed resource.
    claimed: Vec<(String, String, String)>,
    export_rv: u64,
    schemas: Vec<(String, Option<Box<str>>)>,
    identity_gen: u64,
}

/// The per-export cache of [`VwApis`].
#[derive(Default)]
pub(crate) struct VwCache {
    map: Mutex<HashMap<ExportKey, Arc<VwApis>>>,
}

fn schema_uid(ss: &ShardState, cluster: &Arc<str>, name: &str) -> Option<Box<str>> {
    ss.shard
        .store()
        .get(
            &StoreKey::new("apis.kcp.io", "apiresourceschemas"),
            &ObjKey::new(cluster.clone(), "", name),
        )
        .map(|o| o.uid.clone())
}

impl VwCache {
    /// The APIs of an export (`None` when the export does not exist).
    pub(crate) fn get(
        &self,
        inner: &KcpInner,
        export_cluster: &str,
        export: &str,
    ) -> Option<Arc<VwApis>> {
        let entry = inner.index.read().by_name(export_cluster).cloned()?;
        let ss = inner.shard(entry.shard)?;
        let obj = ss.shard.store().get(
            &StoreKey::new("apis.kcp.io", "apiexports"),
            &ObjKey::new(entry.name.clone(), "", export),
        )?;
        let key: ExportKey = (entry.name.clone(), export.to_string());
        let identity_gen = inner.state.lock().identity_gen;
        if let Some(c) = self.map.lock().get(&key).cloned()
            && c.export_rv == obj.rv
            && c.identity_gen == identity_gen
            && c.schemas
                .iter()
                .all(|(n, uid)| schema_uid(&ss, &entry.name, n) == *uid)
        {
            return Some(c);
        }
        let built = Arc::new(build(inner, &ss, &entry.name, &obj, identity_gen));
        self.map.lock().insert(key, built.clone());
        Some(built)
    }
}

fn build(
    inner: &KcpInner,
    ss: &ShardState,
    cluster: &Arc<str>,
    obj: &StoredObject,
    identity_gen: u64,
) -> VwApis {
    let v = obj.value();
    let identity = v
        .pointer("/status/identityHash")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut infos: Vec<Arc<ResourceInfo>> = Vec::new();
    let mut schemas = Vec::new();
    for r in v
        .pointer("/spec/resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = r.get("schema").and_then(Value::as_str) else {
            continue;
        };
        let schema = ss.shard.store().get(
            &StoreKey::new("apis.kcp.io", "apiresourceschemas"),
            &ObjKey::new(cluster.clone(), "", name),
        );
        schemas.push((name.to_string(), schema.as_ref().map(|s| s.uid.clone())));
        if let Some(s) = schema
            && !identity.is_empty()
        {
            infos.extend(controller::schema_infos(inner, &s.value(), &identity));
        }
    }
    let builtins = super::apis::builtins();
    let mut claimed = Vec::new();
    for c in v
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(ExportClaim::parse)
    {
        let found: Vec<Arc<ResourceInfo>> = if c.identity_hash.is_empty() {
            builtins
                .all()
                // Reviews (tokenreviews, subjectaccessreviews) are claimable too (kcp ≥ PR #4280).
                .filter(|i| i.group == c.group && i.resource == c.resource)
                .map(|i| {
                    if i.strategy == Strategy::ServiceAccount {
                        // The virtual workspace wires only `status`: no `serviceaccounts/token`.
                        let mut plain = (**i).clone();
                        plain.strategy = Strategy::Plain;
                        Arc::new(plain)
                    } else {
                        i.clone()
                    }
                })
                .collect()
        } else {
            controller::identity_infos(inner, &c.identity_hash)
                .into_iter()
                .filter(|i| i.group == c.group && i.resource == c.resource)
                .collect()
        };
        if found.is_empty() {
            continue;
        }
        claimed.push((c.group.clone(), c.resource.clone(), c.identity_hash.clone()));
        for i in found {
            if !infos
                .iter()
                .any(|x| x.group == i.group && x.version == i.version && x.resource == i.resource)
            {
                infos.push(i);
            }
        }
    }
    for i in builtins
        .all()
        .filter(|i| i.group == "apis.kcp.io" && i.resource == "apibindings")
    {
        if !infos
            .iter()
            .any(|x| x.group == i.group && x.version == i.version && x.resource == i.resource)
        {
            infos.push(i.clone());
        }
    }
    // Core first, as discovery lists it.
    infos.sort_by_key(|i| !i.group.is_empty());
    VwApis {
        set: ApiSet::new(infos),
        claimed,
        export_rv: obj.rv,
        schemas,
        identity_gen,
    }
}

/// One request's view of an export's virtual workspace on one shard.
pub(crate) struct VwSurface {
    inner: Weak<KcpInner>,
    shard: Arc<ShardState>,
    export_cluster: Arc<str>,
    export: String,
    apis: Option<Arc<VwApis>>,
}

impl VwSurface {
    pub(crate) fn new(
        inner: &Arc<KcpInner>,
        shard: Arc<ShardState>,
        export_cluster: &str,
        export: &str,
    ) -> Self {
        VwSurface {
            inner: Arc::downgrade(inner),
            apis: inner.vw_cache.get(inner, export_cluster, export),
            shard,
            export_cluster: export_cluster.into(),
            export: export.to_string(),
        }
    }

    fn binding(&self, cluster: &str) -> Option<Arc<BoundEntry>> {
        self.shard.bindings.read().get(cluster).and_then(|v| {
            v.iter()
                .find(|b| *b.export_cluster == *self.export_cluster && b.export_name == self.export)
                .cloned()
        })
    }

    fn forbidden(user: &UserInfo, attrs: &Attributes, reason: &str) -> ApiError {
        attrs.forbidden(&user.username, reason)
    }

    /// kcp's `apiexports/content` check: RBAC in the export's workspace, with the request's verb.
    fn authorize_content(
        &self,
        inner: &KcpInner,
        user: &UserInfo,
        attrs: &Attributes,
    ) -> ApiResult<()> {
        let content =
            Attributes::resource(attrs.verb(), "apis.kcp.io", "apiexports", "", &self.export)
                .with_subresource("content");
        let decision = match inner.shard_of(&self.export_cluster) {
            Some(ss) => ss
                .shard
                .auth
                .rbac(&self.export_cluster)
                .authorize(user, &content),
            None => Decision::Deny(crate::auth::Denial {
                reason: "access denied".into(),
                opaque: false,
            }),
        };
        match decision {
            Decision::Allow { .. } => Ok(()),
            Decision::Deny(d) => Err(Self::forbidden(
                user,
                attrs,
                &format!(
                    "API export: {:?}, workspace: {:?} RBAC decision: {}",
                    self.export, &*self.export_cluster, d.reason
                ),
            )),
        }
    }
}

const READ_ONLY: &[&str] = &["get", "list", "watch"];

impl Surface for VwSurface {
    fn lookup(
        &self,
        _t: &Target,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<ResourceInfo>> {
        self.apis.as_ref()?.set.get(group, version, resource)
    }

    fn groups(&self, _t: &Target) -> Vec<GroupInfo> {
        self.apis
            .as_ref()
            .map(|a| a.set.group_infos())
            .unwrap_or_default()
    }

    fn authenticate(
        &self,
        t: &Target,
        authorization: Option<&str>,
        cert: Option<&crate::tls::PeerCertificates>,
    ) -> ApiResult<UserInfo> {
        let inner = self
            .inner
            .upgrade()
            .ok_or_else(|| ApiError::service_unavailable("kcp is shutting down"))?;
        let mut user = super::surface::authenticate(&inner, t, authorization, cert)?;
        // kcp forwards a request for one consumer with a warrant for the claims it accepted:
        // checks in the consumer cluster (RBAC escalation) count the claimed verbs as granted.
        if let ClusterScope::One(cluster) = &t.cluster
            && let Some(b) = self.binding(cluster)
        {
            let claimed: Vec<String> = b
                .claims
                .iter()
                .filter(|c| c.identity_hash.is_empty())
                .flat_map(|c| {
                    c.allowed_verbs()
                        .into_iter()
                        .map(move |v| format!("{}/{}:{v}", c.group, c.resource))
                })
                .collect();
            if !claimed.is_empty() {
                user.extra
                    .insert(crate::auth::user::EXTRA_KCP_CLAIMED_VERBS.into(), claimed);
            }
        }
        Ok(user)
    }

    fn authorize(&self, t: &Target, user: &UserInfo, attrs: &Attributes) -> ApiResult<()> {
        let inner = self
            .inner
            .upgrade()
            .ok_or_else(|| ApiError::service_unavailable("kcp is shutting down"))?;
        self.authorize_content(&inner, user, attrs)?;
        if let Attributes::Resource(r) = attrs
            && !r.subresource.is_empty()
            && r.subresource != "status"
        {
            // The virtual workspace wires only `status` (no `scale`, no `serviceaccounts/token`).
            return Err(ApiError::no_route());
        }
        let (ClusterScope::One(cluster), Attributes::Resource(r)) = (&t.cluster, attrs) else {
            // The wildcard and discovery need no binding.
            return Ok(());
        };
        let Some(b) = self.binding(cluster) else {
            return Err(Self::forbidden(
                user,
                attrs,
                "could not find suitable APIBinding in target logical cluster",
            ));
        };
        if b.resources
            .iter()
            .any(|(g, res)| *g == r.group && *res == r.resource)
        {
            return controller::binding::check_policy(&inner, &b, user, attrs);
        }
        if b.claims.iter().any(|c| {
            c.group == r.group
                && c.resource == r.resource
                && c.allowed_verbs().iter().any(|v| v == &r.verb || v == "*")
        }) {
            return Ok(());
        }
        if r.group == "apis.kcp.io" && r.resource == "apibindings" {
            if READ_ONLY.contains(&r.verb.as_str()) {
                return Ok(());
            }
            return Err(Self::forbidden(
                user,
                attrs,
                "write access to APIBinding is not allowed from virtual workspace",
            ));
        }
        Err(Self::forbidden(
            user,
            attrs,
            "failed to find suitable reason to allow access in APIBinding",
        ))
    }

    fn aggregated_discovery(&self) -> bool {
        false
    }

    fn prepare_create(&self, t: &Target, info: &ResourceInfo, obj: &mut Value) {
        let ClusterScope::One(cluster) = &t.cluster else {
            return;
        };
        let Some(b) = self.binding(cluster) else {
            return;
        };
        let Some(claim) = b
            .claims
            .iter()
            .find(|c| c.group == info.group && c.resource == info.resource)
        else {
            return;
        };
        if claim.match_labels.is_empty() {
            return;
        }
        let m = crate::meta::metadata_mut(obj);
        let labels = m
            .entry("labels")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(l) = labels.as_object_mut() {
            for (k, v) in &claim.match_labels {
                l.entry(k.clone())
                    .or_insert_with(|| Value::String(v.clone()));
            }
        }
    }

    fn faults<'a>(&'a self, _t: &'a Target) -> &'a crate::faults::Faults {
        &self.shard.vw_faults
    }

    fn filter(&self, _t: &Target, info: &ResourceInfo) -> Option<ObjectFilter> {
        if info.group == "apis.kcp.io" && info.resource == "apibindings" {
            let label = super::names::export_label_value(&self.export_cluster, &self.export);
            let claimed = self.apis.as_ref().is_some_and(|a| {
                a.claimed
                    .iter()
                    .any(|(g, r, _)| g == "apis.kcp.io" && r == "apibindings")
            });
            if !claimed {
                // Only the bindings to this export.
                return Some(Arc::new(move |o: &StoredObject| {
                    o.label(super::controller::binding::EXPORT_LABEL) == Some(label.as_str())
                }));
            }
        }
        let apis = self.apis.as_ref()?;
        let (group, resource, identity) = apis
            .claimed
            .iter()
            .find(|(g, r, _)| *g == info.group && *r == info.resource)?
            .clone();
        // A claimed object is visible where a binding to this export accepted the claim and its
        // selector matches the object.
        let shard = self.shard.clone();
        let export_cluster = self.export_cluster.clone();
        let export = self.export.clone();
        Some(Arc::new(move |o: &StoredObject| {
            let bindings = shard.bindings.read();
            let Some(entries) = bindings.get(&*o.key.cluster) else {
                return false;
            };
            entries
                .iter()
                .filter(|b| b.export_cluster == export_cluster && b.export_name == export)
                .any(|b| {
                    b.claims.iter().any(|c| {
                        c.group == group
                            && c.resource == resource
                            && c.identity_hash == identity
                            && c.selector
                                .as_ref()
                                .is_none_or(|s| s.matches(|k| o.label(k)))
                    })
                })
        }))
    }
}
