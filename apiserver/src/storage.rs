//! Kubernetes semantics on top of the store, shared by the HTTP handlers and the in-process
//! controllers: create, update (with status-subresource rules and no-op detection), delete with
//! finalizers and propagation, admission and validation — kube-apiserver's generic registry.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::admission::{Attributes, Operation};
use crate::auth::UserInfo;
use crate::convert;
use crate::error::{ApiError, ApiResult, Cause};
use crate::managed::FieldManager;
use crate::meta::{self, metadata_mut};
use crate::registry::{ResourceInfo, Strategy};
use crate::schema::FieldValidation;
use crate::shard::Shard;
use crate::store::{ObjKey, Precondition, StoreError, StoredObject, Write};
use crate::strategy;
use std::cell::RefCell;

/// A built-in resource of the core group by plural name (for controllers).
pub fn core(resource: &str) -> Arc<ResourceInfo> {
    builtin("", "v1", resource)
}

/// A built-in resource by group, version and plural name (for controllers).
///
/// # Panics
/// When the resource is not built in — a programming error in this crate, never caused by input.
pub(crate) fn builtin(group: &str, version: &str, resource: &str) -> Arc<ResourceInfo> {
    crate::builtin::builtins()
        .all()
        .find(|i| i.group == group && i.version == version && i.resource == resource)
        .cloned()
        .unwrap_or_else(|| panic!("{group}/{version} {resource} is not a built-in resource"))
}

/// How dependents are treated when their owner is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Propagation {
    /// Delete the owner now; the garbage collector deletes dependents afterwards.
    Background,
    /// Delete dependents first; the owner goes once they are gone.
    Foreground,
    /// Leave dependents, removing their owner references.
    Orphan,
}

impl Propagation {
    /// Parses `propagationPolicy`.
    pub(crate) fn parse(s: &str) -> ApiResult<Self> {
        match s {
            "Background" => Ok(Propagation::Background),
            "Foreground" => Ok(Propagation::Foreground),
            "Orphan" => Ok(Propagation::Orphan),
            other => Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
            ))),
        }
    }
}

/// Options of a delete.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    /// Propagation policy (default: Background).
    pub propagation: Option<Propagation>,
    /// Preconditions.
    pub precondition: Precondition,
}

/// The result of a delete.
#[derive(Debug, Clone)]
pub(crate) enum Deleted {
    /// The object is gone (its last state).
    Gone(Arc<StoredObject>),
    /// The object is marked for deletion and waits for finalizers.
    Pending(Arc<StoredObject>),
}

/// The finalizer the garbage collector uses for orphaning.
pub(crate) const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer the garbage collector uses for foreground deletion.
pub(crate) const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// A programmatic client for one logical cluster of a shard, with kube-apiserver semantics.
pub struct ClusterApi<'a> {
    shard: &'a Shard,
    cluster: Arc<str>,
    user: UserInfo,
    dry_run: bool,
    manager: String,
    field_validation: FieldValidation,
    warnings: RefCell<Vec<String>>,
}

impl<'a> ClusterApi<'a> {
    /// A client acting as `user`.
    pub fn new(shard: &'a Shard, cluster: Arc<str>, user: UserInfo) -> Self {
        ClusterApi {
            shard,
            cluster,
            user,
            dry_run: false,
            manager: "kube-controller-manager".into(),
            field_validation: FieldValidation::Ignore,
            warnings: RefCell::new(Vec::new()),
        }
    }

    /// How unknown fields in written objects are treated (`fieldValidation`; in-process callers
    /// default to `Ignore`).
    pub(crate) fn field_validation(mut self, fv: FieldValidation) -> Self {
        self.field_validation = fv;
        self
    }

    /// The warnings collected from writes so far (for `Warning` headers).
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut self.warnings.borrow_mut())
    }

    /// Prunes unknown fields (per `fieldValidation`), applies schema defaults and, for built-in
    /// kinds, writes their times as Go does.
    fn decode(&self, info: &ResourceInfo, obj: &mut Value) -> ApiResult<()> {
        if let Some(v) = &info.validator {
            let w = v.decode(obj, self.field_validation)?;
            self.warnings.borrow_mut().extend(w);
        }
        if info.strategy != Strategy::Custom {
            crate::schema::normalise_times(&info.group, &info.version, &info.kind, obj);
        }
        crate::validation::builtin::check_bytes(info, obj).map_err(|detail| {
            ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {detail}",
                info.kind, info.version, info.kind
            ))
        })
    }

    /// Gives a Service the node ports it needs, refusing requested ones that are out of range or
    /// held by another Service of this cluster (kube-apiserver's NodePort allocator). The store
    /// is scanned rather than an allocation bitmap kept, since Services are few. The returned
    /// guard keeps other Service writes from allocating until it is dropped: the caller holds it
    /// until the Service is committed, so that the ports chosen are still free then.
    fn allocate_node_ports(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> ApiResult<Option<parking_lot::MutexGuard<'a, ()>>> {
        if info.strategy != Strategy::Service {
            return Ok(None);
        }
        let guard = self.shard.lock_node_ports();
        let mut used = std::collections::HashSet::new();
        self.shard
            .store()
            .scan(&info.store, Some(&self.cluster), None, None, |o| {
                if (&*o.key.namespace, &*o.key.name) != (ns, name)
                    && let Ok(v) = serde_json::from_slice::<Value>(&o.bytes)
                {
                    used.extend(crate::validation::builtin::node_ports(&v));
                }
                true
            });
        crate::validation::builtin::allocate_node_ports(obj, old, &used).map_err(|errs| {
            ApiError::invalid(
                &info.group,
                &info.kind,
                name,
                errs.iter().map(crate::validation::cause).collect(),
            )
        })?;
        Ok(Some(guard))
    }

    /// Makes writes dry runs (`dryRun=All`).
    pub(crate) fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    fn key(&self, info: &ResourceInfo, ns: &str, name: &str) -> ObjKey {
        ObjKey::new(
            self.cluster.clone(),
            if info.namespaced { ns } else { "" },
            name,
        )
    }

    /// Reads one object (404 when missing).
    pub(crate) fn get(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
    ) -> ApiResult<Arc<StoredObject>> {
        self.shard
            .store()
            .get(&info.store, &self.key(info, ns, name))
            .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))
    }

    /// Lists the objects of a resource (in a namespace, or all).
    pub(crate) fn list(&self, info: &ResourceInfo, ns: Option<&str>) -> Vec<Arc<StoredObject>> {
        let mut out = Vec::new();
        self.shard.store().scan(
            &info.store,
            Some(&self.cluster),
            ns.filter(|_| info.namespaced),
            None,
            |o| {
                out.push(o.clone());
                true
            },
        );
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn admit(
        &self,
        op: Operation,
        info: &ResourceInfo,
        sub: Option<&str>,
        ns: &str,
        name: &str,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> ApiResult<()> {
        let mut attrs = Attributes {
            operation: op,
            info,
            subresource: sub,
            cluster: &self.cluster,
            namespace: ns,
            name,
            user: &self.user,
            object,
            old,
        };
        for p in self.shard.admission_plugins() {
            p.admit(self.shard, &mut attrs)?;
        }
        Ok(())
    }

    fn validate(
        &self,
        info: &ResourceInfo,
        obj: &Value,
        old: Option<&Value>,
        sub: Option<&str>,
    ) -> ApiResult<()> {
        let name = meta::meta_str(obj, "name").unwrap_or_default();
        let mut causes = Vec::new();
        let schema_checks_metadata = info
            .validator
            .as_ref()
            .is_some_and(|v| v.validates_metadata());
        if !schema_checks_metadata {
            if old.is_none() {
                causes.extend(validate_name(info, obj));
            }
            causes.extend(validate_metadata(obj));
        }
        if let Some(v) = &info.validator {
            causes.extend(v.validate(obj, old));
        }
        let kind_rules = strategy::validate(info, obj, old, sub);
        // A field the OpenAPI schema requires that kube's own validation reports as required
        // too is reported once, in kube's words.
        causes.retain(|c| {
            c.reason != "FieldValueRequired"
                || !kind_rules
                    .iter()
                    .any(|k| k.field == c.field && k.reason == c.reason)
        });
        causes.extend(kind_rules);
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(&info.group, &info.kind, name, causes))
        }
    }

    fn finish_value(&self, info: &ResourceInfo, obj: Value) -> ApiResult<Value> {
        // A dry run is never encoded for storage (apiserver `registry/generic/registry/
        // dryrun.go` copies the object instead), so it calls no conversion webhook; the object
        // stays in the request's version, which is also what it answers.
        let mut stored = if self.dry_run && info.conversion.is_some() {
            obj
        } else {
            convert::to_storage(info, obj)?
        };
        if let Some(a) = &self.shard.options().cluster_annotation {
            let m = metadata_mut(&mut stored);
            let ann = m.entry("annotations").or_insert_with(|| json!({}));
            if let Some(o) = ann.as_object_mut() {
                o.insert(a.clone(), Value::String(self.cluster.to_string()));
            }
        }
        Ok(stored)
    }

    /// Creates an object given in `info`'s version.
    pub fn create(
        &self,
        info: &ResourceInfo,
        ns: &str,
        obj: Value,
    ) -> ApiResult<Arc<StoredObject>> {
        self.create_with(info, ns, obj, FieldManager::Record(&self.manager))
    }

    /// Creates an object, recording `manager` in managedFields.
    pub(crate) fn create_with(
        &self,
        info: &ResourceInfo,
        ns: &str,
        mut obj: Value,
        manager: FieldManager<'_>,
    ) -> ApiResult<Arc<StoredObject>> {
        check_type(info, &mut obj)?;
        let ns = if info.namespaced {
            match meta::meta_str(&obj, "namespace") {
                Some(body_ns) if !body_ns.is_empty() && body_ns != ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                _ => ns,
            }
        } else {
            ""
        };
        self.decode(info, &mut obj)?;
        let generate = meta::meta_str(&obj, "name").is_none_or(str::is_empty)
            && meta::meta_str(&obj, "generateName").is_some_and(|g| !g.is_empty());
        for attempt in 0..8 {
            let mut obj = obj.clone();
            if generate {
                let prefix = meta::meta_str(&obj, "generateName")
                    .unwrap_or_default()
                    .to_string();
                metadata_mut(&mut obj).insert(
                    "name".into(),
                    Value::String(format!("{prefix}{}", meta::generate_suffix())),
                );
            }
            let name = meta::meta_str(&obj, "name").unwrap_or_default().to_string();
            strategy::prepare_create(info, &mut obj, ns);
            let allocation = self.allocate_node_ports(info, ns, &name, &mut obj, None)?;
            self.admit(
                Operation::Create,
                info,
                None,
                ns,
                &name,
                Some(&mut obj),
                None,
            )?;
            self.validate(info, &obj, None, None)?;
            crate::managed::on_create(info, &mut obj, manager);
            let stored = self.finish_value(info, obj)?;
            let key = self.key(info, ns, &name);
            if self.dry_run {
                if self.shard.store().get(&info.store, &key).is_some() {
                    return Err(ApiError::already_exists(&info.group, &info.resource, &name));
                }
                return StoredObject::build(key, 0, &stored)
                    .map(Arc::new)
                    .map_err(store_err(info, &name));
            }
            let committed = self
                .shard
                .store()
                .commit(&info.store, &key, Write::Create(stored));
            drop(allocation);
            match committed {
                Ok(ev) => {
                    crate::controllers::after_write(self.shard, &self.cluster, info, &ev);
                    return Ok(ev.object.clone());
                }
                Err(StoreError::AlreadyExists) if generate && attempt < 7 => continue,
                Err(e) => return Err(store_err(info, &name)(e)),
            }
        }
        Err(ApiError::already_exists(&info.group, &info.resource, ""))
    }

    /// Replaces an object, recording `manager` in managedFields.
    pub(crate) fn update_with_manager(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        mut obj: Value,
        sub: Option<&str>,
        manager: FieldManager<'_>,
    ) -> ApiResult<Arc<StoredObject>> {
        check_type(info, &mut obj)?;
        match meta::meta_str(&obj, "name") {
            Some(n) if !n.is_empty() && n != name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            Some(n) if !n.is_empty() => {}
            _ => {
                metadata_mut(&mut obj).insert("name".into(), Value::String(name.into()));
            }
        }
        if info.namespaced
            && let Some(body_ns) = meta::meta_str(&obj, "namespace")
            && !body_ns.is_empty()
            && body_ns != ns
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        if info.namespaced && meta::meta_str(&obj, "namespace").is_none_or(str::is_empty) {
            // EnsureObjectNamespaceMatchesRequestNamespace: an object without a namespace takes
            // the request's.
            metadata_mut(&mut obj).insert("namespace".into(), Value::String(ns.into()));
        }
        let body_rv = match meta::meta_str(&obj, "resourceVersion") {
            Some(rv) if !rv.is_empty() => Some(meta::parse_rv(rv)?),
            _ => None,
        };
        if body_rv.is_none() && info.strategy == Strategy::Custom && sub.is_none() {
            return Err(ApiError::invalid(
                &info.group,
                &info.kind,
                name,
                vec![Cause {
                    reason: "FieldValueInvalid".into(),
                    message: "Invalid value: 0: must be specified for an update".into(),
                    field: "metadata.resourceVersion".into(),
                }],
            ));
        }
        loop {
            let cur = self.get(info, ns, name)?;
            if body_rv.is_some_and(|rv| rv != cur.rv) {
                return Err(ApiError::conflict(&info.group, &info.resource, name));
            }
            if let Some(uid) = meta::meta_str(&obj, "uid")
                && !uid.is_empty()
                && uid != &*cur.uid
            {
                return Err(ApiError::conflict_msg(
                    &info.group,
                    &info.resource,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        cur.uid
                    ),
                ));
            }
            match self.commit_update(info, ns, name, &cur, obj.clone(), sub, manager) {
                Err(e) if e.code == 409 && e.reason == "Conflict" && body_rv.is_none() => continue,
                r => return r,
            }
        }
    }

    /// Read-modify-write with retries on conflicts: `f` edits the current object (in `info`'s version)
    /// and returns false to leave it unchanged.
    pub(crate) fn modify(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        f: impl FnMut(&mut Value) -> ApiResult<bool>,
    ) -> ApiResult<Arc<StoredObject>> {
        self.modify_as(info, ns, name, sub, FieldManager::Record(&self.manager), f)
    }

    /// [`modify`](Self::modify) on behalf of a client's field manager (its fields are recorded
    /// for it, as an Update of `sub`).
    pub(crate) fn modify_as(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        manager: FieldManager<'_>,
        mut f: impl FnMut(&mut Value) -> ApiResult<bool>,
    ) -> ApiResult<Arc<StoredObject>> {
        loop {
            let cur = self.get(info, ns, name)?;
            let mut v = convert::served_value(info, &cur)?;
            if !f(&mut v)? {
                return Ok(cur);
            }
            match self.commit_update(info, ns, name, &cur, v, sub, manager) {
                Err(e) if e.code == 409 && e.reason == "Conflict" => continue,
                r => return r,
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn commit_update(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        cur: &Arc<StoredObject>,
        mut obj: Value,
        sub: Option<&str>,
        manager: FieldManager<'_>,
    ) -> ApiResult<Arc<StoredObject>> {
        let old = convert::served_value(info, cur)?;
        self.decode(info, &mut obj)?;
        strategy::prepare_update(info, &mut obj, &old, sub);
        let allocation = self.allocate_node_ports(info, ns, name, &mut obj, Some(&old))?;
        self.admit(
            Operation::Update,
            info,
            sub,
            ns,
            name,
            Some(&mut obj),
            Some(&old),
        )?;
        self.validate(info, &obj, Some(&old), sub)?;
        crate::managed::on_update(info, &mut obj, &old, manager, sub);
        metadata_mut(&mut obj).insert("resourceVersion".into(), Value::String(cur.rv.to_string()));
        if same_ignoring_managed_fields(&obj, &old) && convert::stored_at_storage_version(info, cur)
        {
            return Ok(cur.clone());
        }
        let key = self.key(info, ns, name);
        let pre = Precondition {
            rv: Some(cur.rv),
            uid: None,
        };
        let deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
        let no_finalizers = meta::finalizers(&obj).is_empty()
            && !(info.strategy == Strategy::Namespace
                && obj
                    .pointer("/spec/finalizers")
                    .and_then(Value::as_array)
                    .is_some_and(|f| !f.is_empty()));
        let stored = self.finish_value(info, obj)?;
        if self.dry_run {
            return StoredObject::build(key, cur.rv, &stored)
                .map(Arc::new)
                .map_err(store_err(info, name));
        }
        // Removing the last finalizer of an object being deleted deletes it.
        let write = if deleting && no_finalizers {
            Write::Delete(pre, Some(stored))
        } else {
            Write::Update(stored, pre)
        };
        let committed = self.shard.store().commit(&info.store, &key, write);
        drop(allocation);
        let ev = committed.map_err(store_err(info, name))?;
        crate::controllers::after_write(self.shard, &self.cluster, info, &ev);
        Ok(ev.object.clone())
    }

    /// Deletes an object: with finalizers (or a propagation policy that needs them) it is marked with
    /// `deletionTimestamp` and stays until they are removed; otherwise it is removed at once.
    pub(crate) fn delete(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<Deleted> {
        loop {
            let cur = self.get(info, ns, name)?;
            if opts
                .precondition
                .uid
                .as_deref()
                .is_some_and(|u| u != &*cur.uid)
            {
                // A deletion's preconditions fail as etcd3's store words it, naming the kind.
                return Err(ApiError::conflict_msg(
                    &info.group,
                    &info.kind,
                    name,
                    &format!(
                        "the UID in the precondition ({}) does not match the UID in record ({}). \
                         The object might have been deleted and then recreated",
                        opts.precondition.uid.as_deref().unwrap_or_default(),
                        cur.uid
                    ),
                ));
            }
            if opts.precondition.rv.is_some_and(|rv| rv != cur.rv) {
                return Err(ApiError::conflict_msg(
                    &info.group,
                    &info.kind,
                    name,
                    &format!(
                        "the ResourceVersion in the precondition ({}) does not match the \
                         ResourceVersion in record ({}). The object might have been modified",
                        opts.precondition.rv.unwrap_or_default(),
                        cur.rv
                    ),
                ));
            }
            let old = cur.value();
            self.admit(Operation::Delete, info, None, ns, name, None, Some(&old))?;
            let mut v = old.clone();
            let mut fins = meta::finalizers(&v);
            match opts.propagation {
                Some(Propagation::Orphan) => {
                    fins.retain(|f| f != FOREGROUND_FINALIZER);
                    if !fins.iter().any(|f| f == ORPHAN_FINALIZER) {
                        fins.push(ORPHAN_FINALIZER.into());
                    }
                }
                Some(Propagation::Foreground) => {
                    fins.retain(|f| f != ORPHAN_FINALIZER);
                    if !fins.iter().any(|f| f == FOREGROUND_FINALIZER) {
                        fins.push(FOREGROUND_FINALIZER.into());
                    }
                }
                _ => {}
            }
            // kube-apiserver adds a CRD's cleanup finalizer when it is deleted (apiextensions'
            // `customresourcedefinition/etcd.go`), so that its objects go first.
            if info.strategy == Strategy::Crd
                && !fins
                    .iter()
                    .any(|f| f == crate::controllers::crd::CLEANUP_FINALIZER)
            {
                fins.push(crate::controllers::crd::CLEANUP_FINALIZER.into());
            }
            let ns_finalizers = info.strategy == Strategy::Namespace
                && v.pointer("/spec/finalizers")
                    .and_then(Value::as_array)
                    .is_some_and(|f| !f.is_empty());
            let key = self.key(info, ns, name);
            let pre = Precondition {
                rv: Some(cur.rv),
                uid: None,
            };
            if fins.is_empty() && !ns_finalizers {
                if self.dry_run {
                    return Ok(Deleted::Gone(cur));
                }
                match self
                    .shard
                    .store()
                    .commit(&info.store, &key, Write::Delete(pre, None))
                {
                    Ok(ev) => {
                        crate::controllers::after_write(self.shard, &self.cluster, info, &ev);
                        return Ok(Deleted::Gone(ev.object.clone()));
                    }
                    Err(StoreError::Conflict) => continue,
                    Err(e) => return Err(store_err(info, name)(e)),
                }
            }
            let already = v.pointer("/metadata/deletionTimestamp").is_some();
            if already && fins == meta::finalizers(&old) {
                return Ok(Deleted::Pending(cur));
            }
            let m = metadata_mut(&mut v);
            if fins.is_empty() {
                m.remove("finalizers");
            } else {
                m.insert("finalizers".into(), json!(fins));
            }
            if !already {
                m.insert(
                    "deletionTimestamp".into(),
                    Value::String(meta::now_rfc3339()),
                );
                // The namespace registry marks a namespace Terminating itself, without the
                // generic registry's grace period.
                if info.strategy != Strategy::Namespace {
                    m.insert("deletionGracePeriodSeconds".into(), json!(0));
                }
                // Marking an object deleted is a change of its desired state: its generation,
                // where it has one, moves on so that controllers comparing observedGeneration
                // see it (generic registry `markAsDeleting`).
                if let Some(g) = m
                    .get("generation")
                    .and_then(Value::as_i64)
                    .filter(|g| *g > 0)
                {
                    m.insert("generation".into(), json!(g + 1));
                }
            }
            if info.strategy == Strategy::Namespace {
                v["status"]["phase"] = json!("Terminating");
            }
            if self.dry_run {
                return StoredObject::build(key, cur.rv, &v)
                    .map(|o| Deleted::Pending(Arc::new(o)))
                    .map_err(store_err(info, name));
            }
            match self
                .shard
                .store()
                .commit(&info.store, &key, Write::Update(v, pre))
            {
                Ok(ev) => {
                    crate::controllers::after_write(self.shard, &self.cluster, info, &ev);
                    return Ok(Deleted::Pending(ev.object.clone()));
                }
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(store_err(info, name)(e)),
            }
        }
    }
}

/// Maps a store error to kube-apiserver's error for the resource and name.
pub(crate) fn store_err<'i>(
    info: &'i ResourceInfo,
    name: &'i str,
) -> impl Fn(StoreError) -> ApiError + 'i {
    move |e| match e {
        StoreError::NotFound => ApiError::not_found(&info.group, &info.resource, name),
        StoreError::AlreadyExists => ApiError::already_exists(&info.group, &info.resource, name),
        StoreError::Conflict => ApiError::conflict(&info.group, &info.resource, name),
        StoreError::Expired { requested, oldest } => ApiError::expired(requested, oldest),
        StoreError::Serialize(m) => ApiError::internal(m),
    }
}

/// Checks (and fills in) `apiVersion` and `kind` of a request body.
fn check_type(info: &ResourceInfo, obj: &mut Value) -> ApiResult<()> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the object provided is not a JSON object",
        ));
    }
    let av = info.api_version();
    match obj.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => obj["apiVersion"] = Value::String(av.clone()),
        Some(a) if a != av => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({a}) does not match the expected API version ({av})"
            )));
        }
        Some(_) => {}
    }
    match obj.get("kind").and_then(Value::as_str) {
        None | Some("") => obj["kind"] = Value::String(info.kind.clone()),
        Some(k) if k != info.kind && info.typed() => {
            // The decoder finds the body's kind and fails to convert it to the internal type
            // the path expects (internal packages are named by the group's first label).
            let internal = info.group.split('.').next().filter(|g| !g.is_empty());
            return Err(ApiError::bad_request(format!(
                "{k} in version {:?} cannot be handled as a {kind}: converting ({}.{k}) to \
                 ({}.{kind}): unknown conversion",
                info.version,
                info.version,
                internal.unwrap_or("core"),
                kind = info.kind,
            )));
        }
        Some(k) if k != info.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.kind
            )));
        }
        Some(_) => {}
    }
    if obj
        .get("metadata")
        .is_some_and(|m| !m.is_object() && !m.is_null())
    {
        return Err(ApiError::bad_request("metadata must be an object"));
    }
    Ok(())
}

fn validate_name(info: &ResourceInfo, obj: &Value) -> Vec<Cause> {
    let name = meta::meta_str(obj, "name").unwrap_or_default();
    if name.is_empty() {
        return vec![Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value: name or generateName is required".into(),
            field: "metadata.name".into(),
        }];
    }
    let problem = match (info.group.as_str(), info.resource.as_str()) {
        ("", "namespaces") | ("", "services") => meta::check_label(name),
        ("rbac.authorization.k8s.io", _) => meta::check_path_segment(name),
        ("apiextensions.k8s.io", "customresourcedefinitions") => None,
        _ => meta::check_subdomain(name),
    };
    match problem {
        Some(p) => vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {name:?}: {p}"),
            field: "metadata.name".into(),
        }],
        None => vec![],
    }
}

fn validate_metadata(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(labels) = obj.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            let Some(val) = v.as_str() else {
                causes.push(Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!("Invalid value: {v}: label values must be strings"),
                    field: format!("metadata.labels.{k}"),
                });
                continue;
            };
            let ok = val.len() <= 63
                && val
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
                && (val.is_empty()
                    || (val.as_bytes()[0].is_ascii_alphanumeric()
                        && val.as_bytes()[val.len() - 1].is_ascii_alphanumeric()));
            if !ok {
                causes.push(Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!(
                        "Invalid value: {val:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
                    ),
                    field: "metadata.labels".to_string(),
                });
            }
        }
    }
    if let Some(ann) = obj
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        && let Some((k, v)) = ann.iter().find(|(_, v)| !v.is_string())
    {
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {v}: annotation values must be strings"),
            field: format!("metadata.annotations.{k}"),
        });
    }
    causes
}

fn same_ignoring_managed_fields(a: &Value, b: &Value) -> bool {
    if a == b {
        return true;
    }
    // kube-apiserver's IgnoreManagedFieldsTimestampsTransformer: a write that changes nothing
    // but managedFields timestamps is a no-op; one that changes who owns what (a second applier
    // of an identical value becoming a co-owner) is stored.
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(entries) = v
            .pointer_mut("/metadata/managedFields")
            .and_then(Value::as_array_mut)
        {
            for e in entries.iter_mut().filter_map(Value::as_object_mut) {
                e.remove("time");
            }
        }
        v
    };
    strip(a) == strip(b)
}
