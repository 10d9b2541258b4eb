//! The openMCP types read and write the objects of the Go platform unchanged, and their CRDs say
//! what the Go CRDs say.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use super::*;

fn crd_json(crd: &CustomResourceDefinition) -> Value {
    serde_json::to_value(crd).expect("CRDs serialize")
}

/// Serializes `value` back and checks nothing was renamed, dropped or added.
fn round_trips<T: serde::de::DeserializeOwned + serde::Serialize>(value: Value) -> T {
    let typed: T = serde_json::from_value(value.clone()).expect("the Go object parses");
    assert_eq!(serde_json::to_value(&typed).expect("serializes"), value);
    typed
}

#[test]
fn crds_have_the_go_names_scopes_and_labels() {
    let expected = [
        (
            "clusterrequests.clusters.openmcp.cloud",
            "Namespaced",
            "platform",
            vec!["cr", "creq"],
        ),
        (
            "accessrequests.clusters.openmcp.cloud",
            "Namespaced",
            "platform",
            vec!["ar", "areq"],
        ),
        (
            "clusters.clusters.openmcp.cloud",
            "Namespaced",
            "platform",
            vec![],
        ),
        (
            "serviceproviders.openmcp.cloud",
            "Cluster",
            "platform",
            vec![],
        ),
        (
            "controlplanes.core.open-control-plane.io",
            "Namespaced",
            "onboarding",
            vec!["cp", "ctrlp"],
        ),
    ];
    let crds = crds();
    assert_eq!(crds.len(), expected.len());
    for (crd, (name, scope, cluster, short)) in crds.iter().zip(expected) {
        let j = crd_json(crd);
        assert_eq!(j["metadata"]["name"], name);
        assert_eq!(j["spec"]["scope"], scope, "{name}");
        assert_eq!(
            j["metadata"]["labels"]["openmcp.cloud/cluster"], cluster,
            "{name}"
        );
        let shortnames: Vec<&str> = j["spec"]["names"]["shortNames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(shortnames, short, "{name}");
        assert_eq!(
            j["spec"]["versions"][0]["subresources"]["status"],
            json!({}),
            "{name}"
        );
        assert_eq!(j["spec"]["versions"][0]["served"], true);
        assert_eq!(j["spec"]["versions"][0]["storage"], true);
    }
    assert_eq!(platform_crds().len(), 4);
    assert_eq!(onboarding_crds().len(), 1);
}

#[test]
fn printer_columns_and_selectable_fields_match_go() {
    let cr = crd_json(&ClusterRequest::crd());
    let version = &cr["spec"]["versions"][0];
    let columns: Vec<(&str, &str)> = version["additionalPrinterColumns"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c["name"].as_str()?, c["jsonPath"].as_str()?)))
        .collect();
    assert_eq!(
        columns,
        [
            ("Purpose", ".spec.purpose"),
            ("Phase", ".status.phase"),
            ("Cluster", ".status.cluster.name"),
            ("Cluster-NS", ".status.cluster.namespace")
        ]
    );
    assert_eq!(
        version["selectableFields"],
        json!([{"jsonPath": ".spec.purpose"}, {"jsonPath": ".status.phase"}])
    );
    let ar = crd_json(&AccessRequest::crd());
    assert_eq!(
        ar["spec"]["versions"][0]["additionalPrinterColumns"][0]["jsonPath"],
        ".status.phase"
    );
}

#[test]
fn crds_carry_the_go_cel_rules() {
    let rules = |crd: &CustomResourceDefinition, pointer: &str| -> Vec<String> {
        crd_json(crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            .pointer(pointer)
            .and_then(|s| s["x-kubernetes-validations"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|r| r["rule"].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(
        rules(&ClusterRequest::crd(), "/properties/spec"),
        ["self == oldSelf"]
    );
    assert_eq!(
        rules(
            &ClusterRequest::crd(),
            "/properties/status/properties/cluster"
        ),
        ["self == oldSelf"]
    );
    let ar_spec = rules(&AccessRequest::crd(), "/properties/spec");
    assert!(
        ar_spec
            .iter()
            .any(|r| r.contains("has(self.token) && !has(self.oidc)")),
        "{ar_spec:?}"
    );
    assert_eq!(ar_spec.len(), 3);
    assert_eq!(
        rules(
            &AccessRequest::crd(),
            "/properties/spec/properties/clusterRef"
        ),
        ["self == oldSelf"]
    );
    assert_eq!(
        rules(
            &AccessRequest::crd(),
            "/properties/spec/properties/requestRef"
        ),
        ["self == oldSelf"]
    );
    assert_eq!(
        rules(&Cluster::crd(), "/properties/spec/properties/profile"),
        ["self == oldSelf"]
    );
}

#[test]
fn schemas_require_what_go_requires() {
    let schema = |crd: &CustomResourceDefinition| {
        crd_json(crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
    };
    let cr = schema(&ClusterRequest::crd());
    assert_eq!(cr["properties"]["spec"]["required"], json!(["purpose"]));
    let mut status_required: Vec<String> =
        serde_json::from_value(cr["properties"]["status"]["required"].clone()).unwrap_or_default();
    status_required.sort();
    assert_eq!(status_required, ["observedGeneration", "phase"]);
    let ar = schema(&AccessRequest::crd());
    let permission =
        &ar["properties"]["spec"]["properties"]["token"]["properties"]["permissions"]["items"];
    assert_eq!(permission["required"], json!(["rules"]));
    assert!(permission["properties"]["disableAutomaticNamespaceCreation"].is_object());
    let role_ref =
        &ar["properties"]["spec"]["properties"]["token"]["properties"]["roleRefs"]["items"];
    let mut required: Vec<String> =
        serde_json::from_value(role_ref["required"].clone()).unwrap_or_default();
    required.sort();
    assert_eq!(required, ["kind", "name"]);
    assert_eq!(
        role_ref["properties"]["kind"]["enum"],
        json!(["Role", "ClusterRole"])
    );
    let sp = schema(&ServiceProviderObject::crd());
    assert_eq!(sp["properties"]["spec"]["required"], json!(["image"]));
    assert_eq!(
        sp["properties"]["spec"]["properties"]["env"]["x-kubernetes-list-map-keys"],
        json!(["name"])
    );
    assert_eq!(
        sp["properties"]["spec"]["properties"]["verbosity"]["default"],
        "INFO"
    );
    let cluster = schema(&Cluster::crd());
    assert_eq!(
        cluster["properties"]["spec"]["properties"]["tenancy"]["enum"],
        json!(["Exclusive", "Shared"])
    );
    assert_eq!(
        cluster["properties"]["status"]["properties"]["providerStatus"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
    let cp = schema(&ControlPlane::crd());
    assert_eq!(cp["properties"]["spec"]["required"], json!(["iam"]));
    let mut ar_status: Vec<String> =
        serde_json::from_value(ar["properties"]["status"]["required"].clone()).unwrap_or_default();
    ar_status.sort();
    assert_eq!(ar_status, ["observedGeneration", "phase"]);
    assert_eq!(
        sp["properties"]["status"]["required"],
        json!(["observedGeneration"])
    );
}

/// Go's `encoding/json` reads a missing field as its zero value; so do we, so that a status
/// written without `observedGeneration` or `phase` leaves its object readable.
#[test]
fn a_status_without_observed_generation_reads() {
    let ar: AccessRequest = serde_json::from_value(json!({
        "apiVersion": "clusters.openmcp.cloud/v1alpha1",
        "kind": "AccessRequest",
        "metadata": {"name": "a", "namespace": "n"},
        "spec": {"token": {"roleRefs": [{"name": "view", "kind": "ClusterRole"}]}},
        "status": {"secretRef": {"name": "a.kubeconfig"}},
    }))
    .expect("an AccessRequest whose status has neither observedGeneration nor phase");
    let status = ar.status.expect("status");
    assert_eq!(
        (
            status.common.observed_generation,
            status.common.phase.as_str()
        ),
        (0, "")
    );
    assert!(status.is_pending(), "no phase: not answered yet");
    let sp: ServiceProviderObject = serde_json::from_value(json!({
        "apiVersion": "openmcp.cloud/v1alpha1",
        "kind": "ServiceProvider",
        "metadata": {"name": "velero"},
        "spec": {"image": "velero:1"},
        "status": {"phase": "Ready"},
    }))
    .expect("a ServiceProvider whose status has no observedGeneration");
    assert_eq!(sp.status.expect("status").observed_generation, 0);
}

#[test]
fn cluster_request_reads_the_go_object() {
    let cr: ClusterRequest = round_trips(json!({
        "apiVersion": "clusters.openmcp.cloud/v1alpha1",
        "kind": "ClusterRequest",
        "metadata": {
            "name": "velero--my-mcp--wl",
            "namespace": "mcp--ed00e8ed-8a09-8c62-a9b8-e6fc20255174",
            "labels": {
                "openmcp.cloud/managed-by": "velero",
                "openmcp.cloud/managed-purpose": "project-p--ws-w.my-mcp.workload",
                "openmcp.cloud/onboarding-name": "my-mcp",
                "openmcp.cloud/onboarding-namespace": "project-p--ws-w"
            },
            "finalizers": ["clusters.openmcp.cloud/clusteraccess"]
        },
        "spec": {"purpose": "workload", "waitForClusterDeletion": true},
        "status": {
            "phase": "Granted",
            "cluster": {"name": "workload-1", "namespace": "openmcp-system"},
            "observedGeneration": 1
        }
    }));
    assert!(cr.is_granted());
    assert_eq!(cr.spec.purpose, "workload");
    let status = cr.status.as_ref().expect("status");
    assert_eq!(
        status.cluster.as_ref().map(|c| c.name.as_str()),
        Some("workload-1")
    );
    assert!(!status.is_pending() && !status.is_denied());
}

#[test]
fn access_request_reads_the_go_object() {
    let ar: AccessRequest = round_trips(json!({
        "apiVersion": "clusters.openmcp.cloud/v1alpha1",
        "kind": "AccessRequest",
        "metadata": {"name": "velero--my-mcp--mcp", "namespace": "mcp--x", "generation": 2},
        "spec": {
            "requestRef": {"name": "my-mcp", "namespace": "mcp--x"},
            "token": {
                "permissions": [{
                    "name": "velero-admin",
                    "namespace": "velero",
                    "disableAutomaticNamespaceCreation": true,
                    "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
                }],
                "roleRefs": [{"name": "cluster-admin", "kind": "ClusterRole"}, {"name": "r", "namespace": "n", "kind": "Role"}]
            },
            "ttl": "24h"
        },
        "status": {"phase": "Granted", "observedGeneration": 2, "secretRef": {"name": "velero--my-mcp--mcp.kubeconfig"}}
    }));
    assert!(ar.is_ready());
    let token = ar.spec.token.as_ref().expect("token");
    assert_eq!(token.role_refs[0], RoleRef::cluster_role("cluster-admin"));
    assert_eq!(token.role_refs[1], RoleRef::role("n", "r"));
    assert!(token.permissions[0].disable_automatic_namespace_creation);
    assert_eq!(
        ar.spec.ttl.map(std::time::Duration::from),
        Some(std::time::Duration::from_secs(86400))
    );

    // Granted for an older generation is not ready.
    let mut stale = ar.clone();
    stale.metadata.generation = Some(3);
    assert!(!stale.is_ready());
    let pending = AccessRequest::new("x", AccessRequestSpec::default());
    assert!(!pending.is_ready());
}

#[test]
fn oidc_access_request_reads_the_go_object() {
    let ar: AccessRequest = round_trips(json!({
        "apiVersion": "clusters.openmcp.cloud/v1alpha1",
        "kind": "AccessRequest",
        "metadata": {"name": "oidc", "namespace": "mcp--x"},
        "spec": {
            "clusterRef": {"name": "c", "namespace": "ns"},
            "oidc": {
                "name": "openmcp",
                "issuer": "https://oidc.example.com",
                "clientID": "client",
                "groupsClaim": "groups",
                "groupsPrefix": "openmcp:",
                "usernameClaim": "sub",
                "usernamePrefix": "openmcp:",
                "extraScopes": ["foo"],
                "roleBindings": [{
                    "subjects": [{"kind": "User", "name": "alice"}],
                    "roleRefs": [{"name": "view", "kind": "ClusterRole"}]
                }],
                "roles": [{"name": "extra", "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}]
            }
        }
    }));
    let oidc = ar.spec.oidc.expect("oidc");
    assert_eq!(oidc.provider.client_id, "client");
    assert_eq!(oidc.roles[0].name, "extra");
}

#[test]
fn cluster_and_service_provider_read_the_go_objects() {
    let cluster: Cluster = round_trips(json!({
        "apiVersion": "clusters.openmcp.cloud/v1alpha1",
        "kind": "Cluster",
        "metadata": {
            "name": "workload-1",
            "namespace": "openmcp-system",
            "finalizers": ["request.clusters.openmcp.cloud/u1", "request.clusters.openmcp.cloud/u2", "request.clusters.openmcp.cloud/u1", "other"]
        },
        "spec": {"profile": "kind", "kubernetes": {"version": "1.33"}, "purposes": ["workload"], "tenancy": "Shared"},
        "status": {
            "phase": "Ready",
            "observedGeneration": 1,
            "apiServer": "https://127.0.0.1:6443",
            "endpoints": {"apiserver-internal": "https://workload-1.internal:6443"},
            "providerStatus": {"anything": ["goes"]}
        }
    }));
    assert_eq!(cluster.tenancy_count(), 2);
    assert_eq!(cluster.spec.tenancy, Tenancy::Shared);

    let sp: ServiceProviderObject = round_trips(json!({
        "apiVersion": "openmcp.cloud/v1alpha1",
        "kind": "ServiceProvider",
        "metadata": {"name": "velero"},
        "spec": {
            "image": "ghcr.io/openmcp-project/images/service-provider-velero:v1.1.2",
            "imagePullSecrets": [{"name": "x"}],
            "initCommand": ["init"],
            "runCommand": ["run"],
            "env": [{"name": "A", "value": "b"}],
            "verbosity": "INFO",
            "runReplicas": 2,
            // Go writes `disabled` always (no omitempty), and the CRD requires it.
            "metrics": {"disabled": false, "path": "/metrics", "port": 8080}
        },
        "status": {
            "phase": "Ready",
            "observedGeneration": 3,
            "resources": [{"group": "velero.services.open-control-plane.io", "version": "v1alpha1", "kind": "Velero"}]
        }
    }));
    let status = sp.status.expect("status");
    assert_eq!(status.resources[0].kind, "Velero");
}

#[test]
fn control_plane_reads_the_go_object() {
    let cp: ControlPlane = round_trips(json!({
        "apiVersion": "core.open-control-plane.io/v2alpha1",
        "kind": "ControlPlane",
        "metadata": {"name": "mcp-01", "namespace": "project-p--ws-w"},
        "spec": {
            "iam": {
                "oidc": {
                    "defaultProvider": {"roleBindings": [{
                        "subjects": [{"kind": "User", "name": "john.doe@example.com"}],
                        "roleRefs": [{"kind": "ClusterRole", "name": "cluster-admin"}]
                    }]},
                    "extraProviders": [{
                        "name": "my-oidc-provider",
                        "issuer": "https://oidc.example.com",
                        "clientID": "my-client-id",
                        "extraScopes": ["foo"],
                        "roleBindings": []
                    }]
                },
                "tokens": [{"name": "admin", "roleRefs": [{"kind": "ClusterRole", "name": "cluster-admin"}]}]
            }
        },
        "status": {"phase": "Ready", "observedGeneration": 1, "access": {"default": {"name": "mcp-01.kubeconfig"}}}
    }));
    assert_eq!(cp.spec.iam.tokens[0].name, "admin");
    assert_eq!(
        cp.status.expect("status").access["default"].name,
        "mcp-01.kubeconfig"
    );
}

#[test]
fn names_of_a_tenant_fit_together() -> Result<(), naming::NamingError> {
    // The objects a Go provider named `velero` creates for Service API object `project-p--ws-w/my-mcp`.
    let ns = naming::stable_mcp_namespace("my-mcp", "project-p--ws-w")?;
    assert!(ns.starts_with("mcp--"));
    let mcp_ar = naming::stable_request_name("velero", "my-mcp", constants::MCP_REQUEST_SUFFIX)?;
    let wl = naming::stable_request_name("velero", "my-mcp", constants::WORKLOAD_REQUEST_SUFFIX)?;
    assert_eq!(
        (mcp_ar.as_str(), wl.as_str()),
        ("velero--my-mcp--mcp", "velero--my-mcp--wl")
    );
    let labels = naming::request_labels(
        "velero",
        "project-p--ws-w",
        "my-mcp",
        constants::WORKLOAD_CLUSTER_ID,
    );
    assert_eq!(
        labels[constants::MANAGED_PURPOSE_LABEL],
        "project-p--ws-w.my-mcp.workload"
    );
    Ok(())
}

/// One tenant's names and labels, as a Go provider named `velero` writes them.
struct Vector {
    namespace: String,
    name: String,
    platform_namespace: &'static str,
    mcp_request: &'static str,
    workload_request: &'static str,
    mcp_purpose: &'static str,
    workload_purpose: &'static str,
    onboarding_name: String,
}

/// The naming vectors of issue 10. The expected strings come from an independent implementation
/// of the Go helpers (Python's `hashlib.shake_128` and `base64.b32encode`, checked against the
/// upstream vectors of controller-utils `hash_test.go`), not from this crate.
#[test]
fn naming_vectors_for_long_and_empty_names() -> Result<(), naming::NamingError> {
    let vectors = [
        // A 63-character name in a 63-character namespace: both onboarding labels fit, the
        // joined managed-purpose does not.
        Vector {
            namespace: format!("ns-{}", "a".repeat(60)),
            name: format!("name-{}", "b".repeat(58)),
            platform_namespace: "mcp--c7ab853b-677f-87d1-bbad-9a7a2d8efd46",
            mcp_request: "velero--name-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb--xh5xfin2--mcp",
            workload_request: "velero--name-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb--xh5xfin2--wl",
            mcp_purpose: "ns-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa--c5gp5btr",
            workload_purpose: "ns-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa--dl2yrlkg",
            onboarding_name: format!("name-{}", "b".repeat(58)),
        },
        // A 253-character name (the longest object name): even the onboarding-name label is
        // shortened; the cut after a '.' keeps it (only trailing '-'/'.' of the prefix go).
        Vector {
            namespace: "project-p--ws-w".into(),
            name: format!(
                "{}{}",
                format!("{}.", "x".repeat(50)).repeat(4),
                "y".repeat(49)
            ),
            platform_namespace: "mcp--fbc7f7c6-8f1a-89e4-9ec1-277e7f00a276",
            mcp_request: "velero--xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx--wxvpth7l--mcp",
            workload_request: "velero--xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx--wxvpth7l--wl",
            mcp_purpose: "project-p--ws-w.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx--sox7lx6k",
            workload_purpose: "project-p--ws-w.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx--2rli272e",
            onboarding_name: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.xx--nk6k3ca4"
                .into(),
        },
        // No namespace: no leading '.' in managed-purpose; the namespace hash covers "/my-mcp".
        Vector {
            namespace: String::new(),
            name: "my-mcp".into(),
            platform_namespace: "mcp--397e5d5d-36a7-8f57-ac25-b95b67934d2b",
            mcp_request: "velero--my-mcp--mcp",
            workload_request: "velero--my-mcp--wl",
            mcp_purpose: "my-mcp.mcp",
            workload_purpose: "my-mcp.workload",
            onboarding_name: "my-mcp".into(),
        },
        // The takeover test's long tenant: a 63-character name in a 40-character namespace.
        Vector {
            namespace: format!("project-takeover--ws-{}", "w".repeat(19)),
            name: format!("tenant-{}", "c".repeat(56)),
            platform_namespace: "mcp--993d3990-0d11-8c7f-9ec2-d80dd01eb916",
            mcp_request: "velero--tenant-ccccccccccccccccccccccccccccccccc--yxqn4ppj--mcp",
            workload_request: "velero--tenant-cccccccccccccccccccccccccccccccccc--yxqn4ppj--wl",
            mcp_purpose: "project-takeover--ws-wwwwwwwwwwwwwwwwwww.tenant-ccccc--fk6imna5",
            workload_purpose: "project-takeover--ws-wwwwwwwwwwwwwwwwwww.tenant-ccccc--5o7asy6o",
            onboarding_name: format!("tenant-{}", "c".repeat(56)),
        },
    ];
    let valid_label_value = |v: &str| {
        v.len() <= 63
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && v.bytes().next().is_none_or(|b| b.is_ascii_alphanumeric())
            && v.bytes().last().is_none_or(|b| b.is_ascii_alphanumeric())
    };
    for v in &vectors {
        let what = format!("{}/{}", v.namespace, v.name);
        assert_eq!(
            naming::stable_mcp_namespace(&v.name, &v.namespace)?,
            v.platform_namespace,
            "{what}"
        );
        assert_eq!(
            naming::stable_request_name("velero", &v.name, constants::MCP_REQUEST_SUFFIX)?,
            v.mcp_request,
            "{what}"
        );
        assert_eq!(
            naming::stable_request_name("velero", &v.name, constants::WORKLOAD_REQUEST_SUFFIX)?,
            v.workload_request,
            "{what}"
        );
        for (id, purpose) in [
            (constants::MCP_CLUSTER_ID, v.mcp_purpose),
            (constants::WORKLOAD_CLUSTER_ID, v.workload_purpose),
        ] {
            let labels = naming::request_labels("velero", &v.namespace, &v.name, id);
            assert_eq!(labels[constants::MANAGED_BY_LABEL], "velero", "{what}");
            assert_eq!(labels[constants::MANAGED_PURPOSE_LABEL], purpose, "{what}");
            assert_eq!(
                labels[constants::ONBOARDING_NAME_LABEL],
                v.onboarding_name,
                "{what}"
            );
            assert_eq!(
                labels[constants::ONBOARDING_NAMESPACE_LABEL],
                v.namespace,
                "{what}"
            );
            for (key, value) in &labels {
                assert!(valid_label_value(value), "{what}: {key}={value:?}");
            }
        }
    }
    // A controller name longer than a label value (a long API group as the onboarding requests'
    // controller) is shortened like every other value.
    let long_group = format!("{}.services.open-control-plane.io", "v".repeat(40));
    assert_eq!(
        naming::label_value(&long_group),
        naming::shorten_to_x_characters(&long_group, 63)?
    );
    assert_eq!(naming::label_value(&long_group).len(), 63);
    Ok(())
}
