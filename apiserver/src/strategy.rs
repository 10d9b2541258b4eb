//! Per-resource behaviour on create and update, as kube-apiserver's registry strategies: which fields
//! the server owns, status subresource semantics, generation, defaults, and resource-specific rules.

use serde_json::{Map, Value, json};

use crate::error::Cause;
use crate::meta::{self, metadata_mut, now_rfc3339};
use crate::registry::{ResourceInfo, Strategy};

/// Metadata fields only the server sets.
const SERVER_OWNED: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
];

/// Prepares a new object: server-owned metadata, reset status, generation, resource defaults.
pub(crate) fn prepare_create(info: &ResourceInfo, obj: &mut Value, namespace: &str) {
    let m = metadata_mut(obj);
    for f in SERVER_OWNED {
        m.remove(*f);
    }
    if info.namespaced {
        m.insert("namespace".into(), Value::String(namespace.into()));
    } else {
        m.remove("namespace");
    }
    m.insert("uid".into(), Value::String(meta::new_uid()));
    m.insert("creationTimestamp".into(), Value::String(now_rfc3339()));
    if info.generation {
        m.insert("generation".into(), json!(1));
    }
    if info.status
        && let Value::Object(o) = obj
    {
        o.remove("status");
    }
    default_subjects(info, obj);
    match info.strategy {
        Strategy::Namespace => {
            let name = meta::meta_str(obj, "name").unwrap_or_default().to_string();
            let m = metadata_mut(obj);
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert("kubernetes.io/metadata.name".into(), Value::String(name));
            }
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
            obj["status"] = json!({"phase": "Active"});
        }
        Strategy::Secret => fold_string_data(obj),
        Strategy::Service => {
            normalize_cluster_ips(obj, None);
            default_service(obj);
        }
        Strategy::Deployment => {
            default_deployment(obj);
            obj["status"] = json!({});
        }
        Strategy::Workload => {
            default_workload(info, obj);
            // The status a new workload has before its controller acts (the required fields of
            // its type, zero).
            obj["status"] = match info.resource.as_str() {
                "daemonsets" => json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0,
                    "numberMisscheduled": 0, "numberReady": 0}),
                "statefulsets" => json!({"replicas": 0, "availableReplicas": 0}),
                _ => json!({}),
            };
        }
        Strategy::Pod => {
            default_pod_spec(obj, "/spec");
            obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
        }
        Strategy::Crd => {
            default_crd(obj);
            obj["status"] = crd_status(obj, None);
        }
        _ => {}
    }
}

/// Prepares an update: keeps server-owned metadata, applies status-subresource semantics, bumps the
/// generation on spec changes.
pub(crate) fn prepare_update(
    info: &ResourceInfo,
    new: &mut Value,
    old: &Value,
    subresource: Option<&str>,
) {
    if subresource == Some("status") {
        // `/status` changes only `.status` (and managedFields, which track that change).
        let status = new.get("status").cloned();
        let managed = new
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .cloned();
        *new = old.clone();
        match status {
            Some(s) => new["status"] = s,
            None => {
                if let Value::Object(o) = new {
                    o.remove("status");
                }
            }
        }
        if let Some(mf) = managed {
            metadata_mut(new).insert("managedFields".into(), mf);
        }
        return;
    }
    if subresource == Some("approval") {
        // `/approval` on CSRs changes only the conditions of `.status`.
        keep_old_except(old, new, "status", "conditions");
        return;
    }
    if subresource == Some("ephemeralcontainers") {
        // `/ephemeralcontainers` changes only `spec.ephemeralContainers`.
        keep_old_except(old, new, "spec", "ephemeralContainers");
        return;
    }
    if subresource == Some("finalize") {
        // `/finalize` on namespaces changes only `spec.finalizers`.
        let fins = new.get("spec").and_then(|s| s.get("finalizers")).cloned();
        *new = old.clone();
        new["spec"]["finalizers"] = fins.unwrap_or_else(|| json!([]));
        return;
    }
    let old_meta = old
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let m = metadata_mut(new);
    for f in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "selfLink",
    ] {
        match old_meta.get(f) {
            Some(v) => {
                m.insert(f.into(), v.clone());
            }
            None => {
                m.remove(f);
            }
        }
    }
    if info.status {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Value::Object(o) = new {
                    o.remove("status");
                }
            }
        }
    }
    default_subjects(info, new);
    match info.strategy {
        Strategy::Namespace => {
            new["spec"] = old.get("spec").cloned().unwrap_or_else(|| json!({}));
            let name = meta::meta_str(new, "name").unwrap_or_default().to_string();
            let labels = metadata_mut(new)
                .entry("labels")
                .or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert("kubernetes.io/metadata.name".into(), Value::String(name));
            }
        }
        Strategy::Secret => fold_string_data(new),
        Strategy::Service => {
            normalize_cluster_ips(new, Some(old));
            default_service(new);
            drop_type_dependent_fields(new, old);
        }
        Strategy::Deployment => default_deployment(new),
        Strategy::Workload => default_workload(info, new),
        Strategy::Pod => default_pod_spec(new, "/spec"),
        Strategy::Crd => {
            default_crd(new);
            new["status"] = crd_status(new, old.get("status"));
        }
        _ => {}
    }
    if info.generation && spec_changed(info, new, old) {
        let g = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            + 1;
        metadata_mut(new).insert("generation".into(), json!(g));
    }
}

/// Did anything outside `metadata` (and `status`, when it is a subresource) change?
fn spec_changed(info: &ResourceInfo, new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        let mut m = v.as_object().cloned().unwrap_or_default();
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if info.status {
            m.remove("status");
        }
        m
    };
    strip(new) != strip(old)
}

/// Resource-specific validation beyond the schema.
pub(crate) fn validate(
    info: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
    subresource: Option<&str>,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let (Some(old), Some(new_fins)) = (
        old,
        obj.pointer("/metadata/finalizers")
            .and_then(Value::as_array),
    ) && old.pointer("/metadata/deletionTimestamp").is_some()
    {
        let old_fins = meta::finalizers(old);
        let added: Vec<&str> = new_fins
            .iter()
            .filter_map(Value::as_str)
            .filter(|f| !old_fins.iter().any(|o| o == f))
            .collect();
        if !added.is_empty() {
            causes.push(Cause {
                    reason: "FieldValueForbidden".into(),
                    message: format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                        added.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ")
                    ),
                    field: "metadata.finalizers".into(),
                });
        }
    }
    if info.strategy == Strategy::Crd {
        causes.extend(crate::controllers::crd::validate(obj, old));
        if subresource != Some("status") {
            causes.extend(crate::controllers::crd::validate_stored_versions(obj));
        }
    }
    causes.extend(
        crate::validation::builtin::validate(info, obj, old)
            .iter()
            .map(crate::validation::cause),
    );
    if info.strategy == Strategy::Deployment
        && let Some(r) = obj.pointer("/spec/replicas").and_then(Value::as_i64)
        && r < 0
    {
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {r}: must be greater than or equal to 0"),
            field: "spec.replicas".into(),
        });
    }
    causes
}

fn fold_string_data(obj: &mut Value) {
    use base64::Engine;
    if let Some(Value::Object(sd)) = obj.as_object_mut().and_then(|o| o.remove("stringData")) {
        let data = obj
            .as_object_mut()
            .map(|o| o.entry("data").or_insert_with(|| json!({})));
        if let Some(Value::Object(d)) = data {
            for (k, v) in sd {
                let s = v.as_str().unwrap_or_default();
                d.insert(
                    k,
                    Value::String(base64::engine::general_purpose::STANDARD.encode(s)),
                );
            }
        }
    }
    if obj.get("type").is_none_or(Value::is_null) {
        obj["type"] = json!("Opaque");
    }
}

fn set_default(obj: &mut Value, ptr: &str, v: Value) {
    if obj.pointer(ptr).is_none_or(Value::is_null) {
        let mut cur = obj;
        let parts: Vec<&str> = ptr.trim_start_matches('/').split('/').collect();
        for (i, p) in parts.iter().enumerate() {
            if !cur.is_object() {
                return;
            }
            if i == parts.len() - 1 {
                cur[*p] = v;
                return;
            }
            if cur.get(*p).is_none_or(Value::is_null) {
                cur[*p] = json!({});
            }
            cur = &mut cur[*p];
        }
    }
}

/// Relates `spec.clusterIP` and `spec.clusterIPs` as kube-apiserver's Service strategy does
/// (pkg/registry/core/service/strategy.go `NormalizeClusterIPs`, and the REST storage's
/// `patchAllocatedValues`): a client that sets only the singular field gets the plural one, and
/// an update that omits both keeps the allocated addresses.
fn normalize_cluster_ips(new: &mut Value, old: Option<&Value>) {
    let ip_of = |v: &Value| {
        v.pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let ips_of = |v: &Value| {
        v.pointer("/spec/clusterIPs")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (ip, ips) = (ip_of(new), ips_of(new));
    match old {
        None => {
            if !ip.is_empty() && ips.is_empty() {
                new["spec"]["clusterIPs"] = json!([ip]);
            }
        }
        Some(old) => {
            let (old_ip, old_ips) = (ip_of(old), ips_of(old));
            let external =
                new.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName");
            if ip.is_empty() && ips.is_empty() && !external && !old_ip.is_empty() {
                new["spec"]["clusterIP"] = json!(old_ip);
                new["spec"]["clusterIPs"] = json!(old_ips);
            } else if ips.is_empty() && ip == old_ip && !old_ips.is_empty() {
                new["spec"]["clusterIPs"] = json!(old_ips);
            } else if !ip.is_empty() && ip != old_ip && ips == old_ips {
                new["spec"]["clusterIPs"] = json!([ip]);
            }
        }
    }
}

/// A Service whose type changes loses the fields of its old type that the client sent back
/// unchanged (pkg/registry/core/service/strategy.go `dropTypeDependentFields`): cluster IPs and
/// IP families when it becomes an ExternalName, node ports (released with them, as the allocator
/// sees only stored Services) and the external traffic policy when it is no longer a NodePort or
/// LoadBalancer, and the LoadBalancer-only fields and status when it is no longer a LoadBalancer.
fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let ty = |v: &Value| {
        v.pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (new_ty, old_ty) = (ty(new), ty(old));
    let same = |new: &Value, ptr: &str| {
        let absent = |v: Option<&Value>| v.is_none_or(Value::is_null);
        let (a, b) = (new.pointer(ptr), old.pointer(ptr));
        a == b || (absent(a) && absent(b))
    };
    let mut drop = Vec::new();
    if old_ty != "ExternalName" && new_ty == "ExternalName" {
        if same(new, "/spec/clusterIP") && same(new, "/spec/clusterIPs") {
            drop.extend(["clusterIP", "clusterIPs"]);
        }
        if same(new, "/spec/ipFamilies") {
            drop.push("ipFamilies");
        }
        if same(new, "/spec/ipFamilyPolicy") {
            drop.push("ipFamilyPolicy");
        }
    }
    let node_ports = |v: &Value| -> Vec<i64> {
        v.pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
            .filter(|n| *n != 0)
            .collect()
    };
    let exposed = |t: &str| t == "NodePort" || t == "LoadBalancer";
    // sameNodePorts: no node port the old Service did not hold.
    let old_ports = node_ports(old);
    if exposed(&old_ty)
        && !exposed(&new_ty)
        && node_ports(new).iter().all(|n| old_ports.contains(n))
        && let Some(ports) = new.pointer_mut("/spec/ports").and_then(Value::as_array_mut)
    {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            p.remove("nodePort");
        }
    }
    let local_lb = |v: &Value, t: &str| {
        t == "LoadBalancer"
            && v.pointer("/spec/externalTrafficPolicy")
                .and_then(Value::as_str)
                == Some("Local")
    };
    if local_lb(old, &old_ty) && !local_lb(new, &new_ty) && same(new, "/spec/healthCheckNodePort") {
        drop.push("healthCheckNodePort");
    }
    if old_ty == "LoadBalancer" && new_ty != "LoadBalancer" {
        let flag = "/spec/allocateLoadBalancerNodePorts";
        if new.pointer(flag).is_some_and(Value::is_boolean)
            && old.pointer(flag).is_some_and(Value::is_boolean)
            && same(new, flag)
        {
            drop.push("allocateLoadBalancerNodePorts");
        }
        if same(new, "/spec/loadBalancerClass") {
            drop.push("loadBalancerClass");
        }
    }
    if exposed(&old_ty) && !exposed(&new_ty) && same(new, "/spec/externalTrafficPolicy") {
        drop.push("externalTrafficPolicy");
    }
    if new_ty != "LoadBalancer" && new.pointer("/status/loadBalancer").is_some() {
        new["status"]["loadBalancer"] = json!({});
    }
    if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
        for f in drop {
            spec.remove(f);
        }
    }
}

/// rbac/v1 `SetDefaults_Subject`: a binding's User and Group subjects are of the RBAC API group.
fn default_subjects(info: &ResourceInfo, obj: &mut Value) {
    if info.group != "rbac.authorization.k8s.io" {
        return;
    }
    let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) else {
        return;
    };
    for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
        let user_or_group = matches!(
            s.get("kind").and_then(Value::as_str),
            Some("User" | "Group")
        );
        if user_or_group
            && s.get("apiGroup")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            s.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
        }
    }
}

fn default_service(obj: &mut Value) {
    set_default(obj, "/spec/type", json!("ClusterIP"));
    set_default(obj, "/spec/sessionAffinity", json!("None"));
    // pkg/apis/core/v1/defaults.go SetDefaults_Service.
    let ty = obj
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if ty == "NodePort" || ty == "LoadBalancer" {
        set_default(obj, "/spec/externalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        set_default(obj, "/spec/allocateLoadBalancerNodePorts", json!(true));
    }
    let headless_or_external =
        obj.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName");
    if !headless_or_external {
        if obj.pointer("/spec/clusterIP").is_none_or(Value::is_null) {
            let uid = meta::meta_str(obj, "uid")
                .unwrap_or_default()
                .as_bytes()
                .to_vec();
            let (a, b) = (
                uid.first().copied().unwrap_or(1) % 250 + 1,
                uid.get(1).copied().unwrap_or(1) % 250 + 1,
            );
            let ip = format!("10.96.{a}.{b}");
            obj["spec"]["clusterIP"] = json!(ip);
            obj["spec"]["clusterIPs"] = json!([ip]);
        }
        set_default(obj, "/spec/ipFamilies", json!(["IPv4"]));
        set_default(obj, "/spec/ipFamilyPolicy", json!("SingleStack"));
        set_default(obj, "/spec/internalTrafficPolicy", json!("Cluster"));
    }
    if let Some(ports) = obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
        for p in ports {
            set_default(p, "/protocol", json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                set_default(p, "/targetPort", port);
            }
        }
    }
    if obj.get("status").is_none() {
        obj["status"] = json!({"loadBalancer": {}});
    }
}

fn default_deployment(obj: &mut Value) {
    set_default(obj, "/spec/replicas", json!(1));
    set_default(obj, "/spec/revisionHistoryLimit", json!(10));
    set_default(obj, "/spec/progressDeadlineSeconds", json!(600));
    set_default(obj, "/spec/strategy/type", json!("RollingUpdate"));
    if obj.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("RollingUpdate") {
        set_default(
            obj,
            "/spec/strategy/rollingUpdate/maxUnavailable",
            json!("25%"),
        );
        set_default(obj, "/spec/strategy/rollingUpdate/maxSurge", json!("25%"));
    }
    default_pod_spec(obj, "/spec/template/spec");
}

/// The defaults of StatefulSets, DaemonSets and Jobs (pkg/apis/<group>/v1/defaults.go).
fn default_workload(info: &ResourceInfo, obj: &mut Value) {
    match info.resource.as_str() {
        "statefulsets" => {
            set_default(obj, "/spec/replicas", json!(1));
            set_default(obj, "/spec/podManagementPolicy", json!("OrderedReady"));
            set_default(obj, "/spec/revisionHistoryLimit", json!(10));
            set_default(obj, "/spec/updateStrategy/type", json!("RollingUpdate"));
            if obj
                .pointer("/spec/updateStrategy/type")
                .and_then(Value::as_str)
                == Some("RollingUpdate")
            {
                set_default(
                    obj,
                    "/spec/updateStrategy/rollingUpdate/partition",
                    json!(0),
                );
            }
            set_default(
                obj,
                "/spec/persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
        }
        "daemonsets" => {
            set_default(obj, "/spec/revisionHistoryLimit", json!(10));
            set_default(obj, "/spec/updateStrategy/type", json!("RollingUpdate"));
            if obj
                .pointer("/spec/updateStrategy/type")
                .and_then(Value::as_str)
                == Some("RollingUpdate")
            {
                set_default(
                    obj,
                    "/spec/updateStrategy/rollingUpdate/maxUnavailable",
                    json!(1),
                );
                set_default(obj, "/spec/updateStrategy/rollingUpdate/maxSurge", json!(0));
            }
        }
        "jobs" => {
            set_default(obj, "/spec/parallelism", json!(1));
            set_default(obj, "/spec/completions", json!(1));
            set_default(obj, "/spec/backoffLimit", json!(6));
            set_default(obj, "/spec/completionMode", json!("NonIndexed"));
            set_default(obj, "/spec/suspend", json!(false));
            set_default(
                obj,
                "/spec/podReplacementPolicy",
                json!("TerminatingOrFailed"),
            );
            generate_job_selector(obj);
            set_default(obj, "/spec/template/spec/restartPolicy", json!("Never"));
        }
        _ => {}
    }
    default_pod_spec(obj, "/spec/template/spec");
}

/// Unless `spec.manualSelector` is set, kube-apiserver selects a Job's pods by its uid: it writes
/// the selector and the matching template labels (pkg/registry/batch/job/strategy.go
/// `generateSelector`).
fn generate_job_selector(obj: &mut Value) {
    if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let Some(uid) = meta::meta_str(obj, "uid").map(str::to_string) else {
        return;
    };
    let name = meta::meta_str(obj, "name").unwrap_or_default().to_string();
    if obj.pointer("/spec/selector").is_none_or(Value::is_null) {
        obj["spec"]["selector"] =
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
    }
    let labels = &mut obj["spec"]["template"]["metadata"]["labels"];
    if !labels.is_object() {
        *labels = json!({});
    }
    if let Some(l) = labels.as_object_mut() {
        for (k, v) in [
            ("batch.kubernetes.io/controller-uid", &uid),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("job-name", &name),
        ] {
            l.entry(k).or_insert_with(|| json!(v));
        }
    }
}

/// The defaults of a pod spec at `ptr` (pkg/apis/core/v1/defaults.go).
fn default_pod_spec(obj: &mut Value, ptr: &str) {
    if obj.pointer(ptr).is_none() {
        return;
    }
    set_default(obj, &format!("{ptr}/restartPolicy"), json!("Always"));
    set_default(
        obj,
        &format!("{ptr}/terminationGracePeriodSeconds"),
        json!(30),
    );
    set_default(obj, &format!("{ptr}/dnsPolicy"), json!("ClusterFirst"));
    set_default(
        obj,
        &format!("{ptr}/schedulerName"),
        json!("default-scheduler"),
    );
    set_default(obj, &format!("{ptr}/securityContext"), json!({}));
    for list in ["initContainers", "containers"] {
        let Some(cs) = obj
            .pointer_mut(&format!("{ptr}/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in cs {
            if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports {
                    set_default(p, "/protocol", json!("TCP"));
                }
            }
            set_default(c, "/terminationMessagePath", json!("/dev/termination-log"));
            set_default(c, "/terminationMessagePolicy", json!("File"));
            let latest = c
                .get("image")
                .and_then(Value::as_str)
                .is_some_and(|i| i.ends_with(":latest") || !i.contains(':'));
            set_default(
                c,
                "/imagePullPolicy",
                json!(if latest { "Always" } else { "IfNotPresent" }),
            );
            set_default(c, "/resources", json!({}));
        }
    }
}

fn default_crd(obj: &mut Value) {
    if let Some(kind) = obj
        .pointer("/spec/names/kind")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        set_default(obj, "/spec/names/singular", json!(kind.to_lowercase()));
        set_default(obj, "/spec/names/listKind", json!(format!("{kind}List")));
    }
    set_default(obj, "/spec/conversion/strategy", json!("None"));
    // apiextensions v1 `SetDefaults_ServiceReference`.
    if obj
        .pointer("/spec/conversion/webhook/clientConfig/service")
        .is_some_and(Value::is_object)
    {
        set_default(
            obj,
            "/spec/conversion/webhook/clientConfig/service/port",
            json!(443),
        );
    }
}

/// The status kube-apiserver's CRD controllers converge to: accepted names, `NamesAccepted` and
/// `Established`, stored versions.
fn crd_status(obj: &Value, old: Option<&Value>) -> Value {
    let now = now_rfc3339();
    let names = obj
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut stored: Vec<Value> = old
        .and_then(|s| s.get("storedVersions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(vs) = obj.pointer("/spec/versions").and_then(Value::as_array) {
        for v in vs {
            if v.get("storage").and_then(Value::as_bool) == Some(true)
                && let Some(n) = v.get("name")
                && !stored.contains(n)
            {
                stored.push(n.clone());
            }
        }
    }
    let keep_time = |ty: &str| -> String {
        old.and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
            })
            .and_then(|c| c.get("lastTransitionTime"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| now.clone())
    };
    let mut conditions = vec![
        json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": keep_time("NamesAccepted")}),
        json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": keep_time("Established")}),
    ];
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        conditions.push(json!({"type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress", "message": "CustomResource deletion is in progress", "lastTransitionTime": keep_time("Terminating")}));
    }
    json!({"acceptedNames": names, "conditions": conditions, "storedVersions": stored})
}

/// Makes `new` the old object with only `new`'s `<parent>.<field>` taken over (removed when `new`
/// has none): what a subresource that owns a single field writes.
fn keep_old_except(old: &Value, new: &mut Value, parent: &str, field: &str) {
    let kept = new.get(parent).and_then(|p| p.get(field)).cloned();
    *new = old.clone();
    match kept {
        Some(v) => new[parent][field] = v,
        None => {
            if let Some(p) = new.get_mut(parent).and_then(Value::as_object_mut) {
                p.remove(field);
            }
        }
    }
}

/// The built-in resources whose registry sets `ReturnDeletedObject`: a DELETE that removes one
/// answers with the deleted object; every other resource, custom resources included, answers a
/// `Status` naming it (genericregistry `Store.finalizeDelete`). Upstream, per registry:
/// pkg/registry/core/{pod,serviceaccount,namespace,persistentvolume,persistentvolumeclaim,
/// podtemplate,service}/storage/storage.go and pkg/registry/storage/storageclass/storage/storage.go.
const RETURNS_DELETED_OBJECT: &[(&str, &str)] = &[
    ("", "namespaces"),
    ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"),
    ("", "pods"),
    ("", "podtemplates"),
    ("", "serviceaccounts"),
    ("", "services"),
    ("storage.k8s.io", "storageclasses"),
];

/// Does a DELETE that removes an object of this resource answer with the object (else a
/// `Status`)?
pub(crate) fn returns_deleted_object(info: &ResourceInfo) -> bool {
    info.strategy != crate::registry::Strategy::Custom
        && RETURNS_DELETED_OBJECT.contains(&(info.group.as_str(), info.resource.as_str()))
}
