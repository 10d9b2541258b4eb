//! kube-apiserver's kind-specific validation of the built-ins providers write, beyond what their
//! OpenAPI schemas say: immutable fields, selectors that must match their pod templates,
//! containers with names and images, port ranges, Service rules and NodePort allocation, the keys
//! of ConfigMaps and Secrets (and those of Secrets' well-known types), CronJob schedules and time
//! zones, RBAC rules and bindings, Events' required fields, and the `[]byte` fields whose base64
//! the decoder refuses.
//!
//! The per-kind rules are data ([`RULES`]); the few checks that need code are functions named in
//! the table. Messages and field paths follow the Go code cited at each rule, so that `kubectl`
//! prints what it prints against a real cluster.

use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value};

use crate::error::go_quote;
use crate::registry::ResourceInfo;
use crate::schema::{BadValue, FieldError};
use crate::schema::{
    dns1035_label, dns1123_label, dns1123_subdomain, go_string_slice, key, qualified_name,
};

/// `FieldImmutableErrorMsg` (apimachinery/pkg/api/validation/generic.go).
const IMMUTABLE: &str = "field is immutable";
/// The message of ConfigMaps and Secrets with `immutable: true` (core/validation/validation.go,
/// `ValidateSecretUpdate`, `ValidateConfigMapUpdate`).
const FROZEN: &str = "field is immutable when `immutable` is set";
/// The NodePort range kube-apiserver serves by default (`--service-node-port-range`).
pub(crate) const NODE_PORT_RANGE: std::ops::RangeInclusive<i64> = 30000..=32767;

/// How kube prints the value of an immutable field (`field.Invalid(path, value, …)`).
#[derive(Clone, Copy)]
enum Shown {
    /// A string or named string type: `%q`.
    Str,
    /// A `*metav1.LabelSelector`: Go's `%#v` of the struct.
    LabelSelector,
    /// Anything else: the JSON value in Go syntax (kube prints the internal Go struct there).
    Json,
}

/// A field that may not change once set (`ValidateImmutableField`): JSON pointer, field path,
/// how its value is shown.
type Immutable = (&'static str, &'static str, Shown);

/// A field whose change kube reports as `Forbidden` with its own message.
type Forbidden = (&'static str, &'static str, &'static str);

/// A workload's selector and the pod template it must select.
struct Selected {
    /// The selector, a `LabelSelector` (JSON pointer).
    selector: &'static str,
    /// The pod template (JSON pointer).
    template: &'static str,
    /// The word of "empty selector is invalid for <kind>" (`None`: an empty selector is allowed,
    /// as for Jobs whose selector the server generates).
    empty: Option<&'static str>,
    /// The restart policies the template may have.
    restart: &'static [&'static str],
}

/// A check that needs code: the object, the stored one on update, the errors to add to.
type Check = fn(&Value, Option<&Value>, &mut Vec<FieldError>);

/// What kube-apiserver checks for one built-in resource beyond its schema.
struct Rules {
    group: &'static str,
    resource: &'static str,
    /// `ValidateImmutableField` on update.
    immutable: &'static [Immutable],
    /// Changes refused with a `Forbidden` of their own wording.
    forbidden: &'static [Forbidden],
    /// Fields frozen once the stored object has `immutable: true`.
    frozen: &'static [(&'static str, &'static str)],
    /// Selector and template, for workloads.
    selected: Option<Selected>,
    /// Where pod specs sit (container ports are checked there).
    pod_spec: Option<&'static str>,
    /// Checks that need code.
    check: Option<Check>,
}

const NONE: Rules = Rules {
    group: "",
    resource: "",
    immutable: &[],
    forbidden: &[],
    frozen: &[],
    selected: None,
    pod_spec: None,
    check: None,
};

const SELECTOR: Immutable = ("/spec/selector", "spec.selector", Shown::LabelSelector);
const TEMPLATE_SPEC: &str = "/spec/template/spec";
const ALWAYS: &[&str] = &["Always"];

/// The rules, per (group, resource). Sources, all in kubernetes/kubernetes:
/// - configmaps, secrets: pkg/apis/core/validation/validation.go `ValidateConfigMap` (keys, size),
///   `ValidateConfigMapUpdate`, `ValidateSecretUpdate` (type immutable, data frozen when
///   `immutable`), `ValidateSecret` (data keys, size, the keys of each well-known type);
/// - services: `ValidateService` (ExternalName without cluster IPs),
///   `validateServiceExternalTrafficPolicy`, `validateServicePort`, `ValidateServiceUpdate`
///   (`validateUpgradeDowngradeClusterIPs`); NodePorts: pkg/registry/core/service/storage
///   (allocator), see [`allocate_node_ports`];
/// - persistentvolumeclaims: `ValidatePersistentVolumeClaimUpdate`;
/// - deployments, replicasets, daemonsets: pkg/apis/apps/validation/validation.go
///   `ValidateDeploymentSpec`, `ValidateReplicaSetSpec`, `ValidateDaemonSetSpec`
///   (`ValidatePodTemplateSpecForReplicaSet`), selectors immutable in apps/v1 by
///   pkg/registry/apps/<kind>/strategy.go `ValidateUpdate`;
/// - statefulsets: `ValidateStatefulSetSpec`, `ValidateStatefulSetUpdate`;
/// - jobs, cronjobs: pkg/apis/batch/validation/validation.go `validateJobSpec`,
///   `ValidateJobSpecUpdate` (selector, completionMode, template), `ValidateCronJobCreate`
///   (name length), `validateCronJobSpec` (`validateScheduleFormat` with robfig/cron's
///   `ParseStandard`, `validateTimeZone`);
/// - storageclasses: pkg/apis/storage/validation/validation.go `ValidateStorageClassUpdate`;
/// - events.k8s.io events: pkg/apis/core/validation/events.go `ValidateEventCreate`;
/// - ingresses: pkg/apis/networking/validation/validation.go `ValidateIngressSpec` (rules, hosts,
///   paths, backends, `validateIngressTLS`; wildcard hosts unchecked);
/// - roles, clusterroles, rolebindings, clusterrolebindings: pkg/apis/rbac/validation/validation.go
///   `ValidatePolicyRule`, `ValidateRoleBinding`, `ValidateClusterRoleBinding` (and their
///   `Update`s: the roleRef is immutable), `validateRoleBindingSubject`.
const RULES: &[Rules] = &[
    Rules {
        resource: "configmaps",
        frozen: &[("/data", "data"), ("/binaryData", "binaryData")],
        check: Some(configmap),
        ..NONE
    },
    Rules {
        resource: "secrets",
        immutable: &[("/type", "type", Shown::Str)],
        frozen: &[("/data", "data")],
        check: Some(secret),
        ..NONE
    },
    Rules {
        resource: "services",
        check: Some(service),
        ..NONE
    },
    Rules {
        resource: "persistentvolumeclaims",
        check: Some(pvc),
        ..NONE
    },
    Rules {
        resource: "pods",
        pod_spec: Some("/spec"),
        ..NONE
    },
    Rules {
        resource: "podtemplates",
        pod_spec: Some("/template/spec"),
        ..NONE
    },
    Rules {
        resource: "replicationcontrollers",
        pod_spec: Some(TEMPLATE_SPEC),
        ..NONE
    },
    Rules {
        group: "apps",
        resource: "deployments",
        immutable: &[SELECTOR],
        selected: Some(Selected {
            selector: "/spec/selector",
            template: "/spec/template",
            empty: Some("deployment"),
            restart: ALWAYS,
        }),
        pod_spec: Some(TEMPLATE_SPEC),
        ..NONE
    },
    Rules {
        group: "apps",
        resource: "replicasets",
        immutable: &[SELECTOR],
        selected: Some(Selected {
            selector: "/spec/selector",
            template: "/spec/template",
            // sic: ValidateReplicaSetSpec says "deployment".
            empty: Some("deployment"),
            restart: ALWAYS,
        }),
        pod_spec: Some(TEMPLATE_SPEC),
        ..NONE
    },
    Rules {
        group: "apps",
        resource: "daemonsets",
        immutable: &[SELECTOR],
        selected: Some(Selected {
            selector: "/spec/selector",
            template: "/spec/template",
            empty: Some("daemonset"),
            restart: ALWAYS,
        }),
        pod_spec: Some(TEMPLATE_SPEC),
        ..NONE
    },
    Rules {
        group: "apps",
        resource: "statefulsets",
        selected: Some(Selected {
            selector: "/spec/selector",
            template: "/spec/template",
            empty: Some("statefulset"),
            restart: ALWAYS,
        }),
        pod_spec: Some(TEMPLATE_SPEC),
        check: Some(statefulset),
        ..NONE
    },
    Rules {
        group: "batch",
        resource: "jobs",
        immutable: &[
            SELECTOR,
            ("/spec/completionMode", "spec.completionMode", Shown::Str),
        ],
        selected: Some(Selected {
            selector: "/spec/selector",
            template: "/spec/template",
            empty: None,
            restart: &["OnFailure", "Never"],
        }),
        pod_spec: Some(TEMPLATE_SPEC),
        check: Some(job),
        ..NONE
    },
    Rules {
        group: "batch",
        resource: "cronjobs",
        pod_spec: Some("/spec/jobTemplate/spec/template/spec"),
        check: Some(cronjob),
        ..NONE
    },
    Rules {
        group: "storage.k8s.io",
        resource: "storageclasses",
        immutable: &[("/volumeBindingMode", "volumeBindingMode", Shown::Str)],
        forbidden: &[
            (
                "/parameters",
                "parameters",
                "updates to parameters are forbidden.",
            ),
            (
                "/provisioner",
                "provisioner",
                "updates to provisioner are forbidden.",
            ),
            (
                "/reclaimPolicy",
                "reclaimPolicy",
                "updates to reclaimPolicy are forbidden.",
            ),
        ],
        ..NONE
    },
    Rules {
        group: "events.k8s.io",
        resource: "events",
        check: Some(event_v1),
        ..NONE
    },
    Rules {
        group: "networking.k8s.io",
        resource: "ingresses",
        check: Some(ingress),
        ..NONE
    },
    Rules {
        group: RBAC,
        resource: "roles",
        check: Some(|obj, _, errs| policy_rules(obj, true, errs)),
        ..NONE
    },
    Rules {
        group: RBAC,
        resource: "clusterroles",
        check: Some(|obj, _, errs| policy_rules(obj, false, errs)),
        ..NONE
    },
    Rules {
        group: RBAC,
        resource: "rolebindings",
        check: Some(|obj, old, errs| binding(obj, old, true, errs)),
        ..NONE
    },
    Rules {
        group: RBAC,
        resource: "clusterrolebindings",
        check: Some(|obj, old, errs| binding(obj, old, false, errs)),
        ..NONE
    },
];

const RBAC: &str = "rbac.authorization.k8s.io";

/// `[]byte` fields of built-ins: the JSON decoder refuses their values unless they are standard
/// base64 (a 400, before any validation). Group, resource, and where the fields are: a JSON
/// pointer in which `*` stands for every member of an object or array.
const BYTE_FIELDS: &[(&str, &str, &str)] = &[
    ("", "secrets", "/data/*"),
    ("", "configmaps", "/binaryData/*"),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        "/spec/request",
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        "/webhooks/*/clientConfig/caBundle",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        "/webhooks/*/clientConfig/caBundle",
    ),
    ("apiregistration.k8s.io", "apiservices", "/spec/caBundle"),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "/spec/conversion/webhook/clientConfig/caBundle",
    ),
];

fn rules(info: &ResourceInfo) -> Option<&'static Rules> {
    RULES
        .iter()
        .find(|r| r.group == info.group && r.resource == info.resource)
}

/// The values at `path` (segments of a JSON pointer, `*` for every member).
fn values_at<'v>(v: &'v Value, path: &[&str], out: &mut Vec<&'v Value>) {
    let Some((first, rest)) = path.split_first() else {
        out.push(v);
        return;
    };
    match (*first, v) {
        ("*", Value::Object(m)) => m.values().for_each(|c| values_at(c, rest, out)),
        ("*", Value::Array(a)) => a.iter().for_each(|c| values_at(c, rest, out)),
        (k, Value::Object(m)) => {
            if let Some(c) = m.get(k) {
                values_at(c, rest, out);
            }
        }
        _ => {}
    }
}

/// Checks the `[]byte` fields of a decoded request body as Go's decoder does: `Err` is the detail
/// of kube-apiserver's 400 (`illegal base64 data at input byte N`).
pub(crate) fn check_bytes(info: &ResourceInfo, obj: &Value) -> Result<(), String> {
    for (group, resource, ptr) in BYTE_FIELDS {
        if *group != info.group || *resource != info.resource {
            continue;
        }
        let path: Vec<&str> = ptr.trim_start_matches('/').split('/').collect();
        let mut values = Vec::new();
        values_at(obj, &path, &mut values);
        for s in values.into_iter().filter_map(Value::as_str) {
            if let Some(at) = go_base64_error(s.as_bytes()) {
                return Err(format!("illegal base64 data at input byte {at}"));
            }
        }
    }
    Ok(())
}

/// Where Go's `base64.StdEncoding.DecodeString` fails on `src` (`CorruptInputError`), or `None`
/// when it decodes. Follows `decodeQuantum` in Go's encoding/base64: newlines are skipped,
/// padding is required, nothing may follow it.
fn go_base64_error(src: &[u8]) -> Option<usize> {
    let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    let newline = |b: u8| b == b'\n' || b == b'\r';
    let mut si = 0;
    loop {
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                return match j {
                    0 => None,
                    _ => Some(si - j),
                };
            }
            let c = src[si];
            si += 1;
            if valid(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' {
                return Some(si - 1);
            }
            // Padding: only after two or three characters of a quantum.
            match j {
                0 | 1 => return Some(si - 1),
                2 => {
                    while si < src.len() && newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return Some(src.len());
                    }
                    if src[si] != b'=' {
                        return Some(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && newline(src[si]) {
                si += 1;
            }
            return (si < src.len()).then_some(si);
        }
    }
}

/// The errors of kube-apiserver's kind-specific validation of `obj` (`old`: the stored object,
/// on update).
pub(crate) fn validate(info: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(r) = rules(info) else {
        return errs;
    };
    if let Some(s) = &r.selected {
        selected(s, obj, &mut errs);
    }
    if let Some(p) = r.pod_spec
        && let Some(spec) = obj.pointer(p)
    {
        pod_spec(spec, &path_of(p), &mut errs);
    }
    if let Some(old) = old {
        for (ptr, field, shown) in r.immutable {
            let (new_v, old_v) = (obj.pointer(ptr), old.pointer(ptr));
            if !same(new_v, old_v) {
                errs.push(FieldError::invalid(
                    field,
                    show(new_v.unwrap_or(&Value::Null), *shown),
                    IMMUTABLE,
                ));
            }
        }
        for (ptr, field, message) in r.forbidden {
            if !same(obj.pointer(ptr), old.pointer(ptr)) {
                errs.push(FieldError::forbidden(field, *message));
            }
        }
        if old.get("immutable").and_then(Value::as_bool) == Some(true) {
            if obj.get("immutable").and_then(Value::as_bool) != Some(true) {
                errs.push(FieldError::forbidden("immutable", FROZEN));
            }
            for (ptr, field) in r.frozen {
                if !same(obj.pointer(ptr), old.pointer(ptr)) {
                    errs.push(FieldError::forbidden(field, FROZEN));
                }
            }
        }
    }
    if let Some(check) = r.check {
        check(obj, old, &mut errs);
    }
    errs
}

/// Absent, `null` and empty maps are the same value to Go's typed objects.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    let norm = |v: Option<&Value>| match v {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) if m.is_empty() => None,
        Some(v) => Some(v.clone()),
    };
    norm(a) == norm(b)
}

/// `/spec/template/spec` → `spec.template.spec`.
fn path_of(ptr: &str) -> String {
    ptr.trim_start_matches('/').replace('/', ".")
}

fn show(v: &Value, shown: Shown) -> BadValue {
    match shown {
        Shown::Str => match v {
            Value::Null => BadValue::Rendered("null".into()),
            other => BadValue::Json(other.clone()),
        },
        Shown::LabelSelector => BadValue::Rendered(go_label_selector(v)),
        Shown::Json => BadValue::Json(v.clone()),
    }
}

/// A `map[string]string` as kube-apiserver shows a bad value since 1.34: JSON, keys sorted (as
/// Go's encoder writes maps), `null` when unset.
fn go_string_map(v: Option<&Value>) -> String {
    match v.and_then(Value::as_object) {
        None => "null".to_string(),
        Some(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::from(k.as_str()), m[k]))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
    }
}

/// A `metav1.LabelSelector` as kube-apiserver shows a changed selector since 1.34: Go's JSON of
/// the struct, fields in declaration order, empty ones omitted:
/// `{"matchLabels":{"app":"a"}}`.
fn go_label_selector(v: &Value) -> String {
    if v.is_null() {
        return "null".to_string();
    }
    let mut fields = Vec::new();
    if v.get("matchLabels")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
    {
        fields.push(format!(
            "\"matchLabels\":{}",
            go_string_map(v.get("matchLabels"))
        ));
    }
    if let Some(items) = v
        .get("matchExpressions")
        .and_then(Value::as_array)
        .filter(|items| !items.is_empty())
    {
        let inner: Vec<String> = items
            .iter()
            .map(|e| {
                let mut out = format!(
                    "{{\"key\":{},\"operator\":{}",
                    Value::from(str_at(e, "/key")),
                    Value::from(str_at(e, "/operator"))
                );
                if let Some(values) = e
                    .get("values")
                    .and_then(Value::as_array)
                    .filter(|vs| !vs.is_empty())
                {
                    out.push_str(&format!(",\"values\":{}", Value::Array(values.clone())));
                }
                out.push('}');
                out
            })
            .collect();
        fields.push(format!("\"matchExpressions\":[{}]", inner.join(",")));
    }
    format!("{{{}}}", fields.join(","))
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or_default()
}

fn int_at(v: &Value, ptr: &str) -> Option<i64> {
    v.pointer(ptr).and_then(Value::as_i64)
}

/// Whether a `LabelSelector` selects `labels` (`metav1.LabelSelectorAsSelector(..).Matches`);
/// `None` when the selector is malformed.
fn selects(selector: &Value, labels: &Map<String, Value>) -> Option<bool> {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    if let Some(m) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            if label(k) != v.as_str() {
                return Some(false);
            }
        }
    }
    for e in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = str_at(e, "/key");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let ok = match str_at(e, "/operator") {
            "In" => label(key).is_some_and(|l| values.contains(&l)),
            "NotIn" => label(key).is_none_or(|l| !values.contains(&l)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => return None,
        };
        if !ok {
            return Some(false);
        }
    }
    Some(true)
}

/// A workload's selector is non-empty (where required), selects its template's labels, and the
/// template's restart policy is one the kind runs.
fn selected(s: &Selected, obj: &Value, errs: &mut Vec<FieldError>) {
    let sel_path = path_of(s.selector);
    let tpl_path = path_of(s.template);
    let selector = obj.pointer(s.selector).filter(|v| !v.is_null());
    let Some(selector) = selector else {
        errs.push(FieldError::required(&sel_path, ""));
        return;
    };
    let empty = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
        && selector
            .get("matchExpressions")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
    if empty && let Some(kind) = s.empty {
        errs.push(FieldError::invalid(
            &sel_path,
            BadValue::Rendered(go_label_selector(selector)),
            format!("empty selector is invalid for {kind}"),
        ));
    }
    let labels_v = obj.pointer(&format!("{}/metadata/labels", s.template));
    let empty_map = Map::new();
    let labels = labels_v.and_then(Value::as_object).unwrap_or(&empty_map);
    if !empty && selects(selector, labels) == Some(false) {
        errs.push(FieldError::invalid(
            &format!("{tpl_path}.metadata.labels"),
            BadValue::Rendered(go_string_map(labels_v)),
            "`selector` does not match template `labels`",
        ));
    }
    let restart = str_at(obj, &format!("{}/spec/restartPolicy", s.template));
    if !restart.is_empty() && !s.restart.contains(&restart) {
        errs.push(FieldError::not_supported(
            &format!("{tpl_path}.spec.restartPolicy"),
            BadValue::str(restart),
            s.restart,
        ));
    }
}

/// `IsValidPortNum`.
fn port_num(port: i64) -> Option<&'static str> {
    (!(1..=65535).contains(&port)).then_some("must be between 1 and 65535, inclusive")
}

/// `IsValidPortName` (an IANA service name).
fn port_name(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

/// The containers of a pod spec at `path` (`validateContainers`, then `validateInitContainers`,
/// whose names may not repeat the regular containers' either).
fn pod_spec(spec: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if spec
        .get("containers")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        errs.push(FieldError::required(&format!("{path}.containers"), ""));
    }
    let mut names = HashSet::new();
    for list in ["containers", "initContainers"] {
        let containers = spec.get(list).and_then(Value::as_array);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            let cp = format!("{path}.{list}[{i}]");
            container(c, &cp, errs);
            let name = str_at(c, "/name");
            if !names.insert(name) {
                errs.push(FieldError::duplicate(
                    &format!("{cp}.name"),
                    BadValue::str(name),
                ));
            }
        }
    }
}

/// A name kube requires and checks with `rule`: "Required value" when empty, else each of
/// `rule`'s messages.
fn required_name(
    name: &str,
    path: &str,
    rule: fn(&str) -> Vec<String>,
    errs: &mut Vec<FieldError>,
) {
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    for m in rule(name) {
        errs.push(FieldError::invalid(path, BadValue::str(name), m));
    }
}

/// `validateContainerCommon`: a DNS label for a name, an image, and `validateContainerPorts`.
fn container(c: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let name = str_at(c, "/name");
    required_name(name, &format!("{path}.name"), dns1123_label, errs);
    if str_at(c, "/image").is_empty() {
        errs.push(FieldError::required(&format!("{path}.image"), ""));
    }
    let ports = c.get("ports").and_then(Value::as_array);
    let mut names = HashSet::new();
    for (j, p) in ports.into_iter().flatten().enumerate() {
        let pp = format!("{path}.ports[{j}]");
        let name = str_at(p, "/name");
        if !name.is_empty() {
            let msgs = port_name(name);
            if !msgs.is_empty() {
                for m in msgs {
                    errs.push(FieldError::invalid(
                        &format!("{pp}.name"),
                        BadValue::str(name),
                        m,
                    ));
                }
            } else if !names.insert(name) {
                errs.push(FieldError::duplicate(
                    &format!("{pp}.name"),
                    BadValue::str(name),
                ));
            }
        }
        match int_at(p, "/containerPort") {
            None | Some(0) => errs.push(FieldError::required(&format!("{pp}.containerPort"), "")),
            Some(n) => {
                if let Some(m) = port_num(n) {
                    errs.push(FieldError::invalid(
                        &format!("{pp}.containerPort"),
                        BadValue::Json(n.into()),
                        m,
                    ));
                }
            }
        }
        if let Some(h) = int_at(p, "/hostPort").filter(|h| *h != 0)
            && let Some(m) = port_num(h)
        {
            errs.push(FieldError::invalid(
                &format!("{pp}.hostPort"),
                BadValue::Json(h.into()),
                m,
            ));
        }
        let proto = str_at(p, "/protocol");
        if !proto.is_empty() && !PROTOCOLS.contains(&proto) {
            errs.push(FieldError::not_supported(
                &format!("{pp}.protocol"),
                BadValue::str(proto),
                PROTOCOLS,
            ));
        }
    }
}

const SERVICE_TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

fn service_type(obj: &Value) -> &str {
    str_at(obj, "/spec/type")
}

fn headless(obj: &Value) -> bool {
    str_at(obj, "/spec/clusterIP") == "None"
}

/// Whether a Service gets node ports (`NeedsNodePort`: NodePort, and LoadBalancer unless
/// `allocateLoadBalancerNodePorts` is false).
fn needs_node_ports(obj: &Value) -> bool {
    match service_type(obj) {
        "NodePort" => true,
        "LoadBalancer" => {
            obj.pointer("/spec/allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool)
                != Some(false)
        }
        _ => false,
    }
}

/// `ValidateService` (ports, type, ExternalName) and `ValidateServiceUpdate` (cluster IPs).
fn service(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let ty = service_type(obj);
    let ports: &[Value] = obj
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if ports.is_empty() && !headless(obj) && ty != "ExternalName" {
        errs.push(FieldError::required("spec.ports", ""));
    }
    match ty {
        "LoadBalancer" | "NodePort" if headless(obj) => {
            errs.push(FieldError::invalid(
                "spec.clusterIPs[0]",
                BadValue::str("None"),
                format!("may not be set to 'None' for {ty} services"),
            ));
        }
        "ExternalName" => {
            // The cluster IPs and families a Service had before becoming an ExternalName one
            // are dropped when sent back unchanged (`drop_type_dependent_fields`).
            let set = |ptr: &str| {
                obj.pointer(ptr)
                    .is_some_and(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
            };
            for (ptr, field) in [
                ("/spec/clusterIPs", "spec.clusterIPs"),
                ("/spec/ipFamilies", "spec.ipFamilies"),
                ("/spec/ipFamilyPolicy", "spec.ipFamilyPolicy"),
            ] {
                if set(ptr) {
                    errs.push(FieldError::forbidden(
                        field,
                        "may not be set for ExternalName services",
                    ));
                }
            }
            let cname = str_at(obj, "/spec/externalName");
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                errs.push(FieldError::required("spec.externalName", ""));
            } else {
                for m in dns1123_subdomain(cname) {
                    errs.push(FieldError::invalid(
                        "spec.externalName",
                        BadValue::str(cname),
                        m,
                    ));
                }
            }
        }
        _ => {}
    }
    let mut names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let pp = format!("spec.ports[{i}]");
        let name = str_at(p, "/name");
        if ports.len() > 1 && name.is_empty() {
            errs.push(FieldError::required(&format!("{pp}.name"), ""));
        } else if !name.is_empty() {
            for m in dns1123_label(name) {
                errs.push(FieldError::invalid(
                    &format!("{pp}.name"),
                    BadValue::str(name),
                    m,
                ));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(
                    &format!("{pp}.name"),
                    BadValue::str(name),
                ));
            }
        }
        let port = int_at(p, "/port").unwrap_or(0);
        if let Some(m) = port_num(port) {
            errs.push(FieldError::invalid(
                &format!("{pp}.port"),
                BadValue::Json(port.into()),
                m,
            ));
        }
        let proto = str_at(p, "/protocol");
        if proto.is_empty() {
            errs.push(FieldError::required(&format!("{pp}.protocol"), ""));
        } else if !PROTOCOLS.contains(&proto) {
            errs.push(FieldError::not_supported(
                &format!("{pp}.protocol"),
                BadValue::str(proto),
                PROTOCOLS,
            ));
        }
        match p.get("targetPort") {
            Some(Value::Number(n)) => {
                let n = n.as_i64().unwrap_or(0);
                if let Some(m) = port_num(n) {
                    errs.push(FieldError::invalid(
                        &format!("{pp}.targetPort"),
                        BadValue::Json(n.into()),
                        m,
                    ));
                }
            }
            Some(Value::String(s)) => {
                for m in port_name(s) {
                    errs.push(FieldError::invalid(
                        &format!("{pp}.targetPort"),
                        BadValue::str(s.clone()),
                        m,
                    ));
                }
            }
            _ => {}
        }
        if let Some(ap) = p.get("appProtocol").and_then(Value::as_str) {
            for m in qualified_name(ap) {
                errs.push(FieldError::invalid(
                    &format!("{pp}.appProtocol"),
                    BadValue::str(ap),
                    m,
                ));
            }
        }
    }
    if ty.is_empty() {
        errs.push(FieldError::required("spec.type", ""));
    } else if !SERVICE_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(
            "spec.type",
            BadValue::str(ty),
            SERVICE_TYPES,
        ));
    }
    // validateServiceExternalTrafficPolicy: the policy is about traffic from outside.
    let external_ips = obj
        .pointer("/spec/externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let externally_accessible =
        ty == "NodePort" || ty == "LoadBalancer" || (ty == "ClusterIP" && external_ips);
    let policy = str_at(obj, "/spec/externalTrafficPolicy");
    if !externally_accessible && !policy.is_empty() {
        errs.push(FieldError::invalid(
            "spec.externalTrafficPolicy",
            BadValue::str(policy),
            "may only be set for externally-accessible services",
        ));
    }
    if ty == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if int_at(p, "/nodePort").is_some_and(|n| n != 0) {
                errs.push(FieldError::forbidden(
                    &format!("spec.ports[{i}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = HashSet::new();
    let mut seen = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let proto = str_at(p, "/protocol");
        if let Some(np) = int_at(p, "/nodePort").filter(|n| *n != 0)
            && !node_ports.insert((proto, np))
        {
            errs.push(FieldError::duplicate(
                &format!("spec.ports[{i}].nodePort"),
                BadValue::Json(np.into()),
            ));
        }
        let port = int_at(p, "/port").unwrap_or(0);
        if !seen.insert((proto, port)) {
            // The key kube reports: a core.ServicePort with only protocol and port set.
            errs.push(FieldError::duplicate(
                &format!("spec.ports[{i}]"),
                BadValue::Rendered(format!(
                    "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{port}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                    go_quote(proto)
                )),
            ));
        }
    }
    // validateUpgradeDowngradeClusterIPs: the cluster IPs stay what they were, unless the
    // Service is or was an ExternalName one.
    if let Some(old) = old
        && ty != "ExternalName"
        && service_type(old) != "ExternalName"
        && !(headless(obj) && headless(old))
    {
        let ips = |v: &Value| -> Vec<String> {
            v.pointer("/spec/clusterIPs")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let (new_ips, old_ips) = (ips(obj), ips(old));
        let shown = BadValue::Rendered(if new_ips.is_empty() {
            "[]string(nil)".into()
        } else {
            go_string_slice(&new_ips)
        });
        if new_ips.is_empty() && !old_ips.is_empty() {
            errs.push(FieldError::invalid(
                "spec.clusterIPs[0]",
                shown,
                "primary clusterIP can not be unset",
            ));
        } else if old_ips.iter().zip(&new_ips).any(|(a, b)| a != b) {
            errs.push(FieldError::invalid(
                "spec.clusterIPs[0]",
                shown,
                "may not change once set",
            ));
        }
    }
}

/// Gives a Service the node ports it needs, as kube-apiserver's NodePort allocator: ports
/// without one get a free port of [`NODE_PORT_RANGE`] (on update, the one the port of the same
/// name had); a requested port outside the range or in use by another Service is refused. `used`
/// holds the node ports of every other Service of the cluster.
pub(crate) fn allocate_node_ports(
    obj: &mut Value,
    old: Option<&Value>,
    used: &HashSet<i64>,
) -> Result<(), Vec<FieldError>> {
    if !needs_node_ports(obj) {
        return Ok(());
    }
    // patchAllocatedValues: an update that omits a node port keeps the old one, by port name.
    let previous: Vec<(String, i64)> = old
        .filter(|o| needs_node_ports(o))
        .and_then(|o| o.pointer("/spec/ports").and_then(Value::as_array))
        .map(|ps| {
            ps.iter()
                .filter_map(|p| Some((str_at(p, "/name").to_string(), int_at(p, "/nodePort")?)))
                .collect()
        })
        .unwrap_or_default();
    let Some(ports) = obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    let requested: HashSet<i64> = ports
        .iter()
        .filter_map(|p| int_at(p, "/nodePort"))
        .collect();
    for p in ports.iter_mut() {
        if int_at(p, "/nodePort").unwrap_or(0) == 0
            && let Some((_, np)) = previous.iter().find(|(n, _)| n == str_at(p, "/name"))
            && !requested.contains(np)
        {
            p["nodePort"] = (*np).into();
        }
    }
    let mut errs = Vec::new();
    let mut taken: HashSet<i64> = used.clone();
    for (i, p) in ports.iter().enumerate() {
        let Some(np) = int_at(p, "/nodePort").filter(|n| *n != 0) else {
            continue;
        };
        let path = format!("spec.ports[{i}].nodePort");
        if !NODE_PORT_RANGE.contains(&np) {
            errs.push(FieldError::invalid(
                &path,
                BadValue::Json(np.into()),
                format!(
                    "provided port is not in the valid range. The range of valid ports is {}-{}",
                    NODE_PORT_RANGE.start(),
                    NODE_PORT_RANGE.end()
                ),
            ));
        } else if used.contains(&np) {
            errs.push(FieldError::invalid(
                &path,
                BadValue::Json(np.into()),
                "provided port is already allocated",
            ));
        }
        taken.insert(np);
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    // Free ports are handed out from a start that depends on the Service, so that Services
    // created one after another do not all probe the same ports first.
    let span = NODE_PORT_RANGE.end() - NODE_PORT_RANGE.start() + 1;
    let seed = crate::meta::meta_str(obj, "uid")
        .unwrap_or_default()
        .bytes()
        .fold(0i64, |h, b| (h * 31 + b as i64) % span);
    let Some(ports) = obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for (i, p) in ports.iter_mut().enumerate() {
        if int_at(p, "/nodePort").unwrap_or(0) != 0 {
            continue;
        }
        let free = (0..span)
            .map(|k| NODE_PORT_RANGE.start() + (seed + k) % span)
            .find(|c| !taken.contains(c));
        match free {
            Some(np) => {
                p["nodePort"] = np.into();
                taken.insert(np);
            }
            None => {
                return Err(vec![FieldError::invalid(
                    &format!("spec.ports[{i}].nodePort"),
                    BadValue::Json(0.into()),
                    "range is full",
                )]);
            }
        }
    }
    Ok(())
}

/// The node ports a stored Service holds.
pub(crate) fn node_ports(obj: &Value) -> impl Iterator<Item = i64> + '_ {
    obj.pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| int_at(p, "/nodePort"))
        .filter(|n| *n != 0)
}

/// `IsConfigMapKey`: the key of a ConfigMap's or Secret's data, a file name when mounted.
fn config_map_key(k: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if k.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if k.is_empty()
        || !k
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        errs.push("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".to_string());
    }
    match k {
        "." => errs.push("must not be '.'".to_string()),
        ".." => errs.push("must not be '..'".to_string()),
        k if k.starts_with("..") => errs.push("must not start with '..'".to_string()),
        _ => {}
    }
    errs
}

/// `core.MaxSecretSize`, the limit of ConfigMaps too.
const MAX_SECRET_SIZE: usize = 1024 * 1024;

/// The decoded bytes of a `[]byte` field's base64 (checked on decoding by [`check_bytes`]; Go
/// skips newlines in it).
fn decoded(v: &Value) -> Option<Vec<u8>> {
    use base64::Engine;
    let s: String = v
        .as_str()?
        .chars()
        .filter(|c| *c != '\n' && *c != '\r')
        .collect();
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

/// A map's keys in order (Go ranges over maps in random order; sorted is one of them).
fn sorted_keys(m: &Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    keys
}

/// `ValidateConfigMap`: keys of both maps are config keys, none in both, and everything fits.
fn configmap(obj: &Value, _old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let empty = Map::new();
    let data = obj.get("data").and_then(Value::as_object).unwrap_or(&empty);
    let binary = obj
        .get("binaryData")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut total = 0;
    for k in sorted_keys(data) {
        for m in config_map_key(k) {
            errs.push(FieldError::invalid(
                &key("data", k),
                BadValue::str(k.as_str()),
                m,
            ));
        }
        if binary.contains_key(k) {
            errs.push(FieldError::invalid(
                &key("data", k),
                BadValue::str(k.as_str()),
                "duplicate of key present in binaryData",
            ));
        }
        total += data[k].as_str().map_or(0, str::len);
    }
    for k in sorted_keys(binary) {
        for m in config_map_key(k) {
            errs.push(FieldError::invalid(
                &key("binaryData", k),
                BadValue::str(k.as_str()),
                m,
            ));
        }
        total += decoded(&binary[k]).map_or(0, |b| b.len());
    }
    if total > MAX_SECRET_SIZE {
        // kube reports this of the whole object, with an empty path.
        errs.push(FieldError::too_long("", Some(MAX_SECRET_SIZE as i64)));
    }
}

/// `ValidateSecret`: data keys are file names, the data fits in etcd, and each well-known type
/// has the keys (or annotation) its consumers read.
fn secret(obj: &Value, _old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let empty = Map::new();
    let data = obj.get("data").and_then(Value::as_object).unwrap_or(&empty);
    let bytes = |k: &str| data.get(k).and_then(decoded);
    let mut total = 0;
    for k in sorted_keys(data) {
        for m in config_map_key(k) {
            errs.push(FieldError::invalid(
                &key("data", k),
                BadValue::str(k.as_str()),
                m,
            ));
        }
        total += bytes(k).map_or(0, |b| b.len());
    }
    if total > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long("data", Some(MAX_SECRET_SIZE as i64)));
    }
    let required = |k: &str| FieldError::required(&key("data", k), "");
    match str_at(obj, "/type") {
        "kubernetes.io/service-account-token" => {
            let annotation = "kubernetes.io/service-account.name";
            if str_at(
                obj,
                &format!("/metadata/annotations/{}", annotation.replace('/', "~1")),
            )
            .is_empty()
            {
                errs.push(FieldError::required(
                    &key("metadata.annotations", annotation),
                    "",
                ));
            }
        }
        ty @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let k = if ty == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            if !data.contains_key(k) {
                errs.push(required(k));
            } else if let Some(e) =
                super::gojson::unmarshal_object_error(&bytes(k).unwrap_or_default())
            {
                errs.push(FieldError::invalid(
                    &key("data", k),
                    BadValue::str("<secret contents redacted>"),
                    e,
                ));
            }
        }
        // Username or password may be empty, but one of them must be there.
        "kubernetes.io/basic-auth"
            if !data.contains_key("username") && !data.contains_key("password") =>
        {
            errs.push(required("username"));
            errs.push(required("password"));
        }
        "kubernetes.io/ssh-auth" if bytes("ssh-privatekey").is_none_or(|b| b.is_empty()) => {
            errs.push(required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !data.contains_key(k) {
                    errs.push(required(k));
                }
            }
        }
        _ => {}
    }
}

/// `ValidatePersistentVolumeClaimUpdate`: the spec is immutable but for the volume name (set
/// once, by the binder), the storage request of a bound claim and the volume attributes class.
fn pvc(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let Some(old) = old else { return };
    let mut new_spec = obj.get("spec").cloned().unwrap_or_default();
    let mut old_spec = old.get("spec").cloned().unwrap_or_default();
    if str_at(&old_spec, "/volumeName").is_empty()
        && let Some(o) = old_spec.as_object_mut()
    {
        match new_spec.get("volumeName") {
            Some(v) => o.insert("volumeName".into(), v.clone()),
            None => o.remove("volumeName"),
        };
    }
    if str_at(obj, "/status/phase") == "Bound"
        && let Some(storage) = old_spec.pointer("/resources/requests/storage").cloned()
        && let Some(r) = new_spec
            .pointer_mut("/resources/requests")
            .and_then(Value::as_object_mut)
    {
        r.insert("storage".into(), storage);
    }
    for s in [&mut new_spec, &mut old_spec] {
        if let Some(o) = s.as_object_mut() {
            o.remove("volumeAttributesClassName");
        }
    }
    if new_spec != old_spec {
        // kube appends a cmp.Diff of the internal specs; this names the changed fields.
        let keys: BTreeSet<&String> = new_spec
            .as_object()
            .into_iter()
            .chain(old_spec.as_object())
            .flat_map(|m| m.keys())
            .collect();
        let mut diff = String::from("  core.PersistentVolumeClaimSpec{\n");
        for k in keys {
            let (a, b) = (old_spec.get(k), new_spec.get(k));
            if a != b {
                if let Some(a) = a {
                    diff.push_str(&format!("-  {k}: {a}\n"));
                }
                if let Some(b) = b {
                    diff.push_str(&format!("+  {k}: {b}\n"));
                }
            }
        }
        diff.push_str("  }\n");
        errs.push(FieldError::forbidden(
            "spec",
            format!("spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n{diff}"),
        ));
    }
}

/// `ValidateStatefulSetUpdate`: only some of the spec may change.
fn statefulset(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let Some(old) = old else { return };
    const MUTABLE: &[&str] = &[
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    ];
    let strip = |v: &Value| -> Map<String, Value> {
        let mut m = v
            .get("spec")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        m.retain(|k, v| !MUTABLE.contains(&k.as_str()) && !v.is_null());
        m
    };
    if strip(obj) != strip(old) {
        errs.push(FieldError::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
}

/// `ValidateJobSpecUpdate`'s `validatePodTemplateUpdate`: the template is immutable, except,
/// while a Job is suspended and has never started, its scheduling directives (labels,
/// annotations, node selector, tolerations, affinity, scheduling gates).
fn job(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let Some(old) = old else { return };
    let mut new_t = obj.pointer("/spec/template").cloned().unwrap_or_default();
    let mut old_t = old.pointer("/spec/template").cloned().unwrap_or_default();
    let suspended_unstarted = old.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
        && old.pointer("/status/startTime").is_none_or(Value::is_null);
    if suspended_unstarted {
        for t in [&mut new_t, &mut old_t] {
            if let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("labels");
                m.remove("annotations");
            }
            if let Some(s) = t.get_mut("spec").and_then(Value::as_object_mut) {
                for f in ["nodeSelector", "tolerations", "affinity", "schedulingGates"] {
                    s.remove(f);
                }
            }
        }
    }
    if !same(Some(&new_t), Some(&old_t)) {
        errs.push(FieldError::invalid(
            "spec.template",
            show(
                obj.pointer("/spec/template").unwrap_or(&Value::Null),
                Shown::Json,
            ),
            IMMUTABLE,
        ));
    }
}

/// `validateCronJobSpec` (schedule, time zone) and `ValidateCronJobCreate` (the name leaves
/// room for the 11 characters of a Job's suffix).
fn cronjob(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let schedule = str_at(obj, "/spec/schedule");
    let time_zone = obj.pointer("/spec/timeZone").and_then(Value::as_str);
    // An absent schedule is the schema's required field; an empty one is kube's.
    if obj.pointer("/spec/schedule").is_some() && schedule.is_empty() {
        errs.push(FieldError::required("spec.schedule", ""));
    } else if !schedule.is_empty() {
        // validateScheduleFormat: TZ in the schedule is only kept where it already was.
        let shown = || BadValue::str(schedule);
        if let Err(m) = super::cron::parse_standard(schedule) {
            errs.push(FieldError::invalid("spec.schedule", shown(), m));
        }
        let tz_allowed = old.is_some_and(|o| str_at(o, "/spec/schedule").contains("TZ"));
        if schedule.contains("TZ") {
            if !tz_allowed {
                errs.push(FieldError::invalid(
                    "spec.schedule",
                    shown(),
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                ));
            } else if time_zone.is_some() {
                errs.push(FieldError::invalid(
                    "spec.schedule",
                    shown(),
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                ));
            }
        }
    }
    if let Some(tz) = time_zone {
        time_zone_errors(tz, errs);
    }
    if old.is_none() {
        let name = crate::meta::meta_str(obj, "name").unwrap_or_default();
        if name.len() > 52 {
            errs.push(FieldError::invalid(
                "metadata.name",
                BadValue::str(name),
                "must be no more than 52 characters",
            ));
        }
    }
}

/// `validateTimeZone`: an IANA name (by its naming rules, then by the time zone database).
fn time_zone_errors(tz: &str, errs: &mut Vec<FieldError>) {
    let path = "spec.timeZone";
    if tz.is_empty() {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(tz),
            "timeZone must be nil or non-empty string",
        ));
        return;
    }
    let valid_part = |p: &str| {
        p != "."
            && p != ".."
            && !p.starts_with('-')
            && (1..=14).contains(&p.len())
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'+'))
    };
    if !tz.split('/').all(valid_part) {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(tz),
            format!("unknown time zone {tz}"),
        ));
        return;
    }
    if tz.eq_ignore_ascii_case("Local") {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(tz),
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if let Err(m) = super::cron::load_location(tz) {
        errs.push(FieldError::invalid(path, BadValue::str(tz), m));
    }
}

/// `ValidateIngressSpec` for networking.k8s.io/v1: something to route to, DNS hosts, paths
/// with a type, backends that name one service port or a resource, and TLS hosts and secrets.
fn ingress(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let rules = obj.pointer("/spec/rules").and_then(Value::as_array);
    let default_backend = obj.pointer("/spec/defaultBackend").filter(|v| !v.is_null());
    if rules.is_none_or(Vec::is_empty) && default_backend.is_none() {
        errs.push(FieldError::invalid(
            "spec",
            BadValue::Rendered(match rules {
                Some(_) => "[]networking.IngressRule{}".into(),
                None => "[]networking.IngressRule(nil)".into(),
            }),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(b) = default_backend {
        ingress_backend(b, "spec.defaultBackend", errs);
    }
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let rp = format!("spec.rules[{i}]");
        let host = str_at(rule, "/host");
        if !host.is_empty() {
            if host.parse::<std::net::IpAddr>().is_ok() {
                errs.push(FieldError::invalid(
                    &format!("{rp}.host"),
                    BadValue::str(host),
                    "must be a DNS name, not an IP address",
                ));
            }
            // Wildcard hosts (IsWildcardDNS1123Subdomain) are left unchecked.
            if !host.contains('*') {
                for m in dns1123_subdomain(host) {
                    errs.push(FieldError::invalid(
                        &format!("{rp}.host"),
                        BadValue::str(host),
                        m,
                    ));
                }
            }
        }
        let Some(http) = rule.get("http").filter(|v| !v.is_null()) else {
            continue;
        };
        let paths = http.get("paths").and_then(Value::as_array);
        if paths.is_none_or(Vec::is_empty) {
            errs.push(FieldError::required(&format!("{rp}.http.paths"), ""));
        }
        for (j, path) in paths.into_iter().flatten().enumerate() {
            ingress_path(path, &format!("{rp}.http.paths[{j}]"), errs);
        }
    }
    // validateIngressTLS: hosts as rule hosts; a secret's name, unless the stored Ingress already
    // had an invalid one (allowInvalidSecretName).
    let tls_of = |v: &Value| -> Vec<Value> {
        v.pointer("/spec/tls")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let invalid_secret = |t: &Value| {
        let name = str_at(t, "/secretName");
        !name.is_empty() && !dns1123_subdomain(name).is_empty()
    };
    let allow_invalid_secret = old.is_some_and(|o| tls_of(o).iter().any(invalid_secret));
    for (i, t) in tls_of(obj).iter().enumerate() {
        for (j, host) in strings_at(t, "/hosts").iter().enumerate() {
            // Wildcard hosts (IsWildcardDNS1123Subdomain) are left unchecked.
            if host.contains('*') {
                continue;
            }
            for m in dns1123_subdomain(host) {
                errs.push(FieldError::invalid(
                    &format!("spec.tls[{i}].hosts[{j}]"),
                    BadValue::str(host.as_str()),
                    m,
                ));
            }
        }
        let secret = str_at(t, "/secretName");
        if !secret.is_empty() && !allow_invalid_secret {
            for m in dns1123_subdomain(secret) {
                errs.push(FieldError::invalid(
                    &format!("spec.tls[{i}].secretName"),
                    BadValue::str(secret),
                    m,
                ));
            }
        }
    }
    if let Some(class) = obj
        .pointer("/spec/ingressClassName")
        .and_then(Value::as_str)
    {
        for m in dns1123_subdomain(class) {
            errs.push(FieldError::invalid(
                "spec.ingressClassName",
                BadValue::str(class),
                m,
            ));
        }
    }
}

/// `validateHTTPIngressPath`.
fn ingress_path(path: &Value, at: &str, errs: &mut Vec<FieldError>) {
    let Some(ty) = path.get("pathType").and_then(Value::as_str) else {
        errs.push(FieldError::required(
            &format!("{at}.pathType"),
            "pathType must be specified",
        ));
        return;
    };
    let p = str_at(path, "/path");
    let invalid = |m: String| FieldError::invalid(&format!("{at}.path"), BadValue::str(p), m);
    match ty {
        "Exact" | "Prefix" => {
            if !p.starts_with('/') {
                errs.push(invalid("must be an absolute path".into()));
            }
            if !p.is_empty() {
                for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                    if p.contains(seq) {
                        errs.push(invalid(format!("must not contain '{seq}'")));
                    }
                }
                for suffix in ["/..", "/."] {
                    if p.ends_with(suffix) {
                        errs.push(invalid(format!("cannot end with '{suffix}'")));
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !p.is_empty() && !p.starts_with('/') {
                errs.push(invalid("must be an absolute path".into()));
            }
        }
        other => errs.push(FieldError::not_supported(
            &format!("{at}.pathType"),
            BadValue::str(other),
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    match path.get("backend") {
        Some(b) => ingress_backend(b, &format!("{at}.backend"), errs),
        None => ingress_backend(&Value::Null, &format!("{at}.backend"), errs),
    }
}

/// `validateIngressBackend`: a service (by name, with a port name or number) or a resource.
fn ingress_backend(b: &Value, at: &str, errs: &mut Vec<FieldError>) {
    let set = |f: &str| b.get(f).is_some_and(|v| !v.is_null());
    match (set("resource"), set("service")) {
        (true, true) => errs.push(FieldError::invalid(
            at,
            BadValue::str(""),
            "cannot set both resource and service backends",
        )),
        (true, false) => {}
        (false, true) => {
            let name = str_at(b, "/service/name");
            required_name(name, &format!("{at}.service.name"), dns1035_label, errs);
            let port_name_set = str_at(b, "/service/port/name");
            let number = int_at(b, "/service/port/number").unwrap_or(0);
            match (!port_name_set.is_empty(), number != 0) {
                (true, true) => errs.push(FieldError::invalid(
                    at,
                    BadValue::str(""),
                    "cannot set both port name & port number",
                )),
                (true, false) => {
                    for m in port_name(port_name_set) {
                        errs.push(FieldError::invalid(
                            &format!("{at}.service.port.name"),
                            BadValue::str(port_name_set),
                            m,
                        ));
                    }
                }
                (false, true) => {
                    if let Some(m) = port_num(number) {
                        errs.push(FieldError::invalid(
                            &format!("{at}.service.port.number"),
                            BadValue::Json(number.into()),
                            m,
                        ));
                    }
                }
                (false, false) => {
                    errs.push(FieldError::required(at, "port name or number is required"))
                }
            }
        }
        (false, false) => errs.push(FieldError::invalid(
            at,
            BadValue::str(""),
            "resource or service backend is required",
        )),
    }
}

/// The strings of a JSON array at `ptr` (none when absent).
fn strings_at(v: &Value, ptr: &str) -> Vec<String> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// `ValidatePolicyRule` for each rule of a Role (`namespaced`) or ClusterRole.
fn policy_rules(obj: &Value, namespaced: bool, errs: &mut Vec<FieldError>) {
    let rules = obj.get("rules").and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let path = |f: &str| format!("rules[{i}].{f}");
        let count = |f: &str| strings_at(rule, &format!("/{f}")).len();
        if count("verbs") == 0 {
            errs.push(FieldError::required(
                &path("verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = strings_at(rule, "/nonResourceURLs");
        if !urls.is_empty() {
            let shown = || BadValue::Rendered(go_string_slice(&urls));
            if namespaced {
                errs.push(FieldError::invalid(
                    &path("nonResourceURLs"),
                    shown(),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if count("apiGroups") > 0 || count("resources") > 0 || count("resourceNames") > 0 {
                errs.push(FieldError::invalid(
                    &path("nonResourceURLs"),
                    shown(),
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if count("apiGroups") == 0 {
            errs.push(FieldError::required(
                &path("apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if count("resources") == 0 {
            errs.push(FieldError::required(
                &path("resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

/// `ValidateRoleBinding` (`namespaced`) and `ValidateClusterRoleBinding`, with their updates'
/// immutable roleRef.
fn binding(obj: &Value, old: Option<&Value>, namespaced: bool, errs: &mut Vec<FieldError>) {
    // An absent kind is the schema's required field (kube would call it an unsupported "").
    let present = |v: &Value, ptr: &str| v.pointer(ptr).is_some();
    let api_group = str_at(obj, "/roleRef/apiGroup");
    if api_group != RBAC {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            BadValue::str(api_group),
            &[RBAC],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    let kind = str_at(obj, "/roleRef/kind");
    if present(obj, "/roleRef/kind") && !kinds.contains(&kind) {
        errs.push(FieldError::not_supported(
            "roleRef.kind",
            BadValue::str(kind),
            kinds,
        ));
    }
    let name = str_at(obj, "/roleRef/name");
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else if let Some(m) = crate::meta::check_path_segment(name) {
        errs.push(FieldError::invalid("roleRef.name", BadValue::str(name), m));
    }
    let subjects = obj.get("subjects").and_then(Value::as_array);
    for (i, subject) in subjects.into_iter().flatten().enumerate() {
        let path = |f: &str| format!("subjects[{i}].{f}");
        let name = str_at(subject, "/name");
        let group = str_at(subject, "/apiGroup");
        if name.is_empty() {
            errs.push(FieldError::required(&path("name"), ""));
        }
        if !present(subject, "/kind") {
            continue;
        }
        match str_at(subject, "/kind") {
            "ServiceAccount" => {
                if !name.is_empty() {
                    for m in dns1123_subdomain(name) {
                        errs.push(FieldError::invalid(&path("name"), BadValue::str(name), m));
                    }
                }
                if !group.is_empty() {
                    errs.push(FieldError::not_supported(
                        &path("apiGroup"),
                        BadValue::str(group),
                        &[""],
                    ));
                }
                if !namespaced && str_at(subject, "/namespace").is_empty() {
                    errs.push(FieldError::required(&path("namespace"), ""));
                }
            }
            kind @ ("User" | "Group") => {
                if name.is_empty() {
                    errs.push(FieldError::invalid(
                        &path("name"),
                        BadValue::str(""),
                        format!("{} name cannot be empty", kind.to_lowercase()),
                    ));
                }
                if group != RBAC {
                    errs.push(FieldError::not_supported(
                        &path("apiGroup"),
                        BadValue::str(group),
                        &[RBAC],
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                &path("kind"),
                BadValue::str(other),
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    if let Some(old) = old {
        let role_ref = |v: &Value| {
            ["apiGroup", "kind", "name"].map(|f| str_at(v, &format!("/roleRef/{f}")).to_string())
        };
        if role_ref(obj) != role_ref(old) {
            // Go's JSON of the internal rbac.RoleRef, which has no JSON tags.
            let [g, k, n] = role_ref(obj).map(Value::from);
            errs.push(FieldError::invalid(
                "roleRef",
                BadValue::Rendered(format!(r#"{{"APIGroup":{g},"Kind":{k},"Name":{n}}}"#)),
                "field is immutable",
            ));
        }
    }
}

/// events.k8s.io/v1 `ValidateEventCreate`: an Event of the new API names when, what and who.
/// Field paths are those of the internal Event type kube validates (`message`, `source`, …).
fn event_v1(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    if old.is_some() {
        return;
    }
    let has = |ptr: &str| obj.pointer(ptr).is_some_and(|v| !v.is_null());
    let namespace = crate::meta::meta_str(obj, "namespace").unwrap_or_default();
    let involved_ns = str_at(obj, "/regarding/namespace");
    if involved_ns.is_empty() && namespace != "default" && namespace != "kube-system" {
        errs.push(FieldError::invalid(
            "involvedObject.namespace",
            BadValue::str(involved_ns),
            "does not match event.namespace",
        ));
    }
    let controller = str_at(obj, "/reportingController");
    if controller.is_empty() {
        errs.push(FieldError::required("reportingController", ""));
    }
    for m in qualified_name(controller) {
        errs.push(FieldError::invalid(
            "reportingController",
            BadValue::str(controller),
            m,
        ));
    }
    for (field, ptr, limit, required) in [
        ("reportingInstance", "/reportingInstance", 128, true),
        ("action", "/action", 128, true),
        ("reason", "/reason", 128, true),
        ("message", "/note", 1024, false),
    ] {
        let v = str_at(obj, ptr);
        if required && v.is_empty() {
            errs.push(FieldError::required(field, ""));
        }
        if v.len() > limit {
            errs.push(FieldError::invalid(
                field,
                BadValue::str(""),
                format!("can have at most {limit} characters"),
            ));
        }
    }
    if !has("/eventTime") {
        errs.push(FieldError::required("eventTime", ""));
    }
    let ty = str_at(obj, "/type");
    if ty != "Normal" && ty != "Warning" {
        errs.push(FieldError::invalid(
            "type",
            BadValue::str(""),
            format!("has invalid value: {ty}"),
        ));
    }
    for (field, ptr) in [
        ("firstTimestamp", "/deprecatedFirstTimestamp"),
        ("lastTimestamp", "/deprecatedLastTimestamp"),
    ] {
        if has(ptr) {
            errs.push(FieldError::invalid(
                field,
                BadValue::str(""),
                "needs to be unset",
            ));
        }
    }
    if int_at(obj, "/deprecatedCount").unwrap_or(0) != 0 {
        errs.push(FieldError::invalid(
            "count",
            BadValue::str(""),
            "needs to be unset",
        ));
    }
    if !str_at(obj, "/deprecatedSource/component").is_empty()
        || !str_at(obj, "/deprecatedSource/host").is_empty()
    {
        errs.push(FieldError::invalid(
            "source",
            BadValue::str(""),
            "needs to be unset",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn base64_errors_are_where_go_reports_them() {
        for (s, at) in [
            ("", None),
            ("YWJj", None),
            ("YWI=", None),
            ("YQ==", None),
            ("YW\nJj", None),
            ("YWJj!", Some(4)),
            ("not base64", Some(3)),
            ("YWJ", Some(0)),
            ("YQ=", Some(3)),
            ("Y===", Some(1)),
            ("YQ==YQ==", Some(4)),
            ("YQ=x", Some(2)),
        ] {
            assert_eq!(go_base64_error(s.as_bytes()), at, "{s:?}");
        }
    }

    #[test]
    fn label_selectors_print_as_go_does() {
        assert_eq!(
            go_label_selector(&json!({"matchLabels": {"b": "2", "a": "1"}})),
            r#"{"matchLabels":{"a":"1","b":"2"}}"#
        );
        assert_eq!(
            go_label_selector(
                &json!({"matchExpressions": [{"key": "k", "operator": "In", "values": ["x"]}]})
            ),
            r#"{"matchExpressions":[{"key":"k","operator":"In","values":["x"]}]}"#
        );
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let labels = json!({"app": "a", "tier": "web"});
        let labels = labels.as_object().unwrap();
        assert_eq!(
            selects(&json!({"matchLabels": {"app": "a"}}), labels),
            Some(true)
        );
        assert_eq!(
            selects(&json!({"matchLabels": {"app": "b"}}), labels),
            Some(false)
        );
        assert_eq!(
            selects(
                &json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]},
                {"key": "x", "operator": "DoesNotExist"}]}),
                labels
            ),
            Some(true)
        );
        assert_eq!(
            selects(
                &json!({"matchExpressions": [{"key": "x", "operator": "Exists"}]}),
                labels
            ),
            Some(false)
        );
    }

    #[test]
    fn node_ports_are_allocated_kept_and_refused() {
        let used: HashSet<i64> = [30001].into_iter().collect();
        let mut svc = json!({"metadata": {"uid": "u"}, "spec": {"type": "NodePort", "ports": [
            {"name": "a", "port": 80}, {"name": "b", "port": 81, "nodePort": 30002}]}});
        allocate_node_ports(&mut svc, None, &used).unwrap();
        let a = svc
            .pointer("/spec/ports/0/nodePort")
            .and_then(Value::as_i64)
            .unwrap();
        assert!(NODE_PORT_RANGE.contains(&a) && a != 30001 && a != 30002);
        // An update without node ports keeps them.
        let mut upd = json!({"spec": {"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}});
        allocate_node_ports(&mut upd, Some(&svc), &used).unwrap();
        assert_eq!(upd.pointer("/spec/ports/0/nodePort"), Some(&json!(a)));
        assert_eq!(upd.pointer("/spec/ports/1/nodePort"), Some(&json!(30002)));
        let mut bad = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 80}, {"port": 81, "nodePort": 30001}]}});
        let errs: Vec<String> = allocate_node_ports(&mut bad, None, &used)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            [
                "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767",
                "spec.ports[1].nodePort: Invalid value: 30001: provided port is already allocated"
            ]
        );
        let mut cluster_ip = json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80}]}});
        allocate_node_ports(&mut cluster_ip, None, &used).unwrap();
        assert!(cluster_ip.pointer("/spec/ports/0/nodePort").is_none());
    }
}
