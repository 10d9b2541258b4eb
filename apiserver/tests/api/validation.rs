//! kube-apiserver's kind-specific validation of built-ins: what it refuses, with which status,
//! reason, causes and message.

use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::*;

fn api(
    client: &kube::Client,
    gvk: (&str, &str, &str),
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2), plural);
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

fn obj(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

/// The (field, reason, message) of each cause of a 422 `Invalid`, checking status and reason.
fn causes(e: kube::Error) -> Vec<(String, String, String)> {
    let s = status(e);
    assert_eq!(
        (s.code, s.reason.as_str()),
        (422, "Invalid"),
        "{}",
        s.message
    );
    s.details
        .unwrap()
        .causes
        .into_iter()
        .map(|c| (c.field, c.reason, c.message))
        .collect()
}

fn cause(field: &str, reason: &str, message: &str) -> (String, String, String) {
    (field.into(), reason.into(), message.into())
}

async fn replace(
    api: &Api<DynamicObject>,
    name: &str,
    f: impl FnOnce(&mut Value),
) -> Result<DynamicObject, kube::Error> {
    let cur = api.get(name).await.unwrap();
    let mut v = serde_json::to_value(&cur).unwrap();
    f(&mut v);
    api.replace(name, &PostParams::default(), &obj(v)).await
}

#[tokio::test]
async fn immutable_secrets_and_configmaps_keep_their_data_and_type() {
    let c = cluster().await;
    let client = c.client();
    let secrets = api(&client, ("", "v1", "Secret"), "secrets", Some("default"));
    secrets
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s"}, "data": {"a": "YQ=="}, "immutable": true})),
        )
        .await
        .unwrap();
    let e = replace(&secrets, "s", |v| {
        v["data"]["a"] = json!("Yg==");
        v["immutable"] = json!(false);
    })
    .await
    .unwrap_err();
    assert_eq!(
        causes(e),
        [
            cause(
                "immutable",
                "FieldValueForbidden",
                "Forbidden: field is immutable when `immutable` is set"
            ),
            cause(
                "data",
                "FieldValueForbidden",
                "Forbidden: field is immutable when `immutable` is set"
            ),
        ]
    );
    // Metadata of an immutable Secret may still change.
    replace(&secrets, "s", |v| {
        v["metadata"]["labels"] = json!({"x": "y"})
    })
    .await
    .unwrap();

    secrets
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "t"}, "stringData": {"a": "b"}})),
        )
        .await
        .unwrap();
    let e = replace(&secrets, "t", |v| {
        v["type"] = json!("kubernetes.io/basic-auth")
    })
    .await
    .unwrap_err();
    // ValidateSecretUpdate validates the new Secret as a whole too: its type's keys are missing.
    assert_eq!(
        causes(e),
        [
            cause(
                "type",
                "FieldValueInvalid",
                "Invalid value: \"kubernetes.io/basic-auth\": field is immutable"
            ),
            cause("data[username]", "FieldValueRequired", "Required value"),
            cause("data[password]", "FieldValueRequired", "Required value"),
        ]
    );

    let cms = api(
        &client,
        ("", "v1", "ConfigMap"),
        "configmaps",
        Some("default"),
    );
    cms.create(
        &PostParams::default(),
        &obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c"}, "data": {"a": "1"}, "immutable": true})),
    )
    .await
    .unwrap();
    let e = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"binaryData": {"b": "eA=="}})),
        )
        .await
        .unwrap_err();
    let s = status(e);
    assert_eq!(
        s.message,
        "ConfigMap \"c\" is invalid: binaryData: Forbidden: field is immutable when `immutable` is set"
    );
}

#[tokio::test]
async fn secret_data_that_is_not_base64_is_a_bad_request() {
    let c = cluster().await;
    let secrets = api(
        &c.client(),
        ("", "v1", "Secret"),
        "secrets",
        Some("default"),
    );
    let e = secrets
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s"}, "data": {"a": "YWJj!"}})),
        )
        .await
        .unwrap_err();
    let s = status(e);
    assert_eq!(
        (s.code, s.reason.as_str(), s.message.as_str()),
        (
            400,
            "BadRequest",
            "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 4"
        )
    );
    // An empty value is empty bytes, not an error.
    secrets
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "empty"}, "data": {"a": ""}})),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn workload_selectors_are_immutable_and_must_select_their_template() {
    let c = cluster().await;
    let client = c.client();
    let deployments = api(
        &client,
        ("apps", "v1", "Deployment"),
        "deployments",
        Some("default"),
    );
    let deployment = |name: &str, selector: Value, labels: Value| {
        obj(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": selector, "template": {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        )
    };
    let e = deployments
        .create(
            &PostParams::default(),
            &deployment(
                "d",
                json!({"matchLabels": {"app": "a"}}),
                json!({"app": "b"}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec.template.metadata.labels",
            "FieldValueInvalid",
            r#"Invalid value: {"app":"b"}: `selector` does not match template `labels`"#
        )]
    );
    let e = deployments
        .create(
            &PostParams::default(),
            &deployment("d", json!({}), json!({"app": "b"})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec.selector",
            "FieldValueInvalid",
            "Invalid value: {}: empty selector is invalid for deployment"
        )]
    );
    deployments
        .create(
            &PostParams::default(),
            &deployment(
                "d",
                json!({"matchLabels": {"app": "a"}}),
                json!({"app": "a", "v": "1"}),
            ),
        )
        .await
        .unwrap();
    let e = replace(&deployments, "d", |v| {
        v["spec"]["selector"] = json!({"matchLabels": {"app": "a", "v": "1"}})
    })
    .await
    .unwrap_err();
    let s = status(e);
    assert_eq!(s.code, 422);
    assert_eq!(
        s.message,
        r#"Deployment.apps "d" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"a","v":"1"}}: field is immutable"#
    );
    // The template may change as long as it stays selected.
    replace(&deployments, "d", |v| {
        v["spec"]["template"]["metadata"]["labels"]["v"] = json!("2")
    })
    .await
    .unwrap();

    let daemonsets = api(
        &client,
        ("apps", "v1", "DaemonSet"),
        "daemonsets",
        Some("default"),
    );
    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds"},
        "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}});
    let e = daemonsets
        .create(&PostParams::default(), &obj(ds.clone()))
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec.template.spec.restartPolicy",
            "FieldValueNotSupported",
            "Unsupported value: \"Never\": supported values: \"Always\""
        )]
    );

    let statefulsets = api(
        &client,
        ("apps", "v1", "StatefulSet"),
        "statefulsets",
        Some("default"),
    );
    statefulsets
        .create(&PostParams::default(), &obj(json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})))
        .await
        .unwrap();
    replace(&statefulsets, "db", |v| v["spec"]["replicas"] = json!(3))
        .await
        .unwrap();
    let e = replace(&statefulsets, "db", |v| {
        v["spec"]["serviceName"] = json!("other")
    })
    .await
    .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec",
            "FieldValueForbidden",
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
        )]
    );
}

#[tokio::test]
async fn job_templates_and_selectors_are_immutable() {
    let c = cluster().await;
    let jobs = api(&c.client(), ("batch", "v1", "Job"), "jobs", Some("default"));
    jobs.create(
        &PostParams::default(),
        &obj(
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
        ),
    )
    .await
    .unwrap();
    let e = replace(&jobs, "j", |v| {
        v["spec"]["template"]["spec"]["containers"][0]["image"] = json!("alpine")
    })
    .await
    .unwrap_err();
    let cs = causes(e);
    assert_eq!(
        (cs[0].0.as_str(), cs[0].1.as_str()),
        ("spec.template", "FieldValueInvalid")
    );
    assert!(cs[0].2.ends_with(": field is immutable"), "{}", cs[0].2);
    let e = replace(&jobs, "j", |v| {
        v["spec"]["selector"] = json!({"matchLabels": {"x": "y"}})
    })
    .await
    .unwrap_err();
    let fields: Vec<String> = causes(e).into_iter().map(|c| c.0).collect();
    assert_eq!(fields, ["spec.template.metadata.labels", "spec.selector"]);
    // A Job's pods may not restart always.
    let e = jobs
        .create(&PostParams::default(), &obj(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "k"},
            "spec": {"template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "busybox"}]}}}})))
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec.template.spec.restartPolicy",
            "FieldValueNotSupported",
            "Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
        )]
    );

    let cronjobs = api(
        &c.client(),
        ("batch", "v1", "CronJob"),
        "cronjobs",
        Some("default"),
    );
    let long = "c".repeat(53);
    let e = cronjobs
        .create(&PostParams::default(), &obj(json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": long},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}}})))
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "metadata.name",
            "FieldValueInvalid",
            &format!("Invalid value: \"{long}\": must be no more than 52 characters")
        )]
    );
}

fn svc(name: &str, spec: Value) -> Service {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec}))
    .unwrap()
}

fn node_ports_of(s: &Service) -> Vec<i32> {
    s.spec
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .filter_map(|p| p.node_port)
        .collect()
}

/// Services created at the same time never share a node port: the ports chosen for each are
/// still free when it is stored, and of several asking for one port, one gets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_services_never_share_a_node_port() {
    let c = cluster().await;
    let services: Api<Service> = Api::default_namespaced(c.client());
    let create_all = |names: Vec<String>, spec: Value| {
        let services = services.clone();
        futures::future::join_all(names.into_iter().map(move |name| {
            let (services, spec) = (services.clone(), spec.clone());
            async move {
                services
                    .create(&PostParams::default(), &svc(&name, spec))
                    .await
            }
        }))
    };
    let created = create_all(
        (0..60).map(|i| format!("auto-{i}")).collect(),
        json!({"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}),
    )
    .await;
    let mut taken = std::collections::HashSet::new();
    for s in created {
        for p in node_ports_of(&s.unwrap()) {
            assert!(taken.insert(p), "node port {p} handed out twice");
        }
    }
    assert_eq!(taken.len(), 120);

    let wanted = (30000..=32767).find(|p| !taken.contains(p)).unwrap();
    let results = create_all(
        (0..20).map(|i| format!("same-{i}")).collect(),
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": wanted}]}),
    )
    .await;
    let (won, lost): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    assert_eq!(won.len(), 1, "exactly one Service gets node port {wanted}");
    for e in lost {
        assert_eq!(
            causes(e.unwrap_err()),
            [cause(
                "spec.ports[0].nodePort",
                "FieldValueInvalid",
                &format!("Invalid value: {wanted}: provided port is already allocated")
            )]
        );
    }
}

/// A Service that stops being a NodePort or LoadBalancer one loses the node ports (and other
/// fields of its old type) it sent back unchanged, and its ports are free for others.
#[tokio::test]
async fn services_changing_type_release_what_the_old_type_held() {
    let c = cluster().await;
    let services: Api<Service> = Api::default_namespaced(c.client());
    let lb = services
        .create(
            &PostParams::default(),
            &svc(
                "lb",
                json!({"type": "LoadBalancer", "ports": [{"name": "a", "port": 80, "nodePort": 30777}, {"name": "b", "port": 81}]}),
            ),
        )
        .await
        .unwrap();
    let held = node_ports_of(&lb);
    assert_eq!(held.len(), 2);
    let mut as_cluster_ip = lb.clone();
    as_cluster_ip.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
    let changed = services
        .replace("lb", &PostParams::default(), &as_cluster_ip)
        .await
        .unwrap();
    assert_eq!(node_ports_of(&changed), Vec::<i32>::new());
    let spec = changed.spec.unwrap();
    assert_eq!(spec.allocate_load_balancer_node_ports, None);
    assert_eq!(spec.external_traffic_policy, None);
    assert_eq!(spec.cluster_ip, lb.spec.as_ref().unwrap().cluster_ip);
    let reuse = services
        .create(
            &PostParams::default(),
            &svc(
                "reuse",
                json!({"type": "NodePort", "ports": [{"name": "a", "port": 80, "nodePort": held[0]}, {"name": "b", "port": 81, "nodePort": held[1]}]}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(node_ports_of(&reuse), held);

    // A new node port with the type change is refused, not dropped.
    let mut sneaky = reuse.clone();
    let spec = sneaky.spec.as_mut().unwrap();
    spec.type_ = Some("ClusterIP".into());
    spec.ports.as_mut().unwrap()[0].node_port = Some(30999);
    assert_eq!(
        causes(
            services
                .replace("reuse", &PostParams::default(), &sneaky)
                .await
                .unwrap_err()
        ),
        [
            cause(
                "spec.ports[0].nodePort",
                "FieldValueForbidden",
                "Forbidden: may not be used when `type` is 'ClusterIP'"
            ),
            cause(
                "spec.ports[1].nodePort",
                "FieldValueForbidden",
                "Forbidden: may not be used when `type` is 'ClusterIP'"
            ),
        ]
    );
}

#[tokio::test]
async fn services_keep_their_cluster_ip_and_get_node_ports_in_range() {
    let c = cluster().await;
    let client = c.client();
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let np = services
        .create(&PostParams::default(), &svc("np", json!({"type": "NodePort", "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443, "nodePort": 30443}]})))
        .await
        .unwrap();
    let spec = np.spec.clone().unwrap();
    let ports = spec.ports.unwrap();
    let allocated = ports[0].node_port.unwrap();
    assert!((30000..=32767).contains(&allocated), "{allocated}");
    assert_eq!(ports[1].node_port, Some(30443));
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Cluster"));
    let ip = spec.cluster_ip.unwrap();
    assert_eq!(spec.cluster_ips, Some(vec![ip.clone()]));

    // A PUT that omits the allocated values keeps them.
    let kept = services
        .replace("np", &PostParams::default(), &{
            let mut s = svc("np", json!({"type": "NodePort", "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}));
            s.metadata.resource_version = np.metadata.resource_version.clone();
            s
        })
        .await
        .unwrap();
    let kept_spec = kept.spec.unwrap();
    assert_eq!(kept_spec.cluster_ip.as_deref(), Some(ip.as_str()));
    let kept_ports: Vec<Option<i32>> = kept_spec
        .ports
        .unwrap()
        .iter()
        .map(|p| p.node_port)
        .collect();
    assert_eq!(kept_ports, [Some(allocated), Some(30443)]);

    let dynamic = api(&client, ("", "v1", "Service"), "services", Some("default"));
    let e = replace(&dynamic, "np", |v| {
        v["spec"]["clusterIP"] = json!("10.96.0.99");
        v["spec"]["clusterIPs"] = json!(["10.96.0.99"]);
    })
    .await
    .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec.clusterIPs[0]",
            "FieldValueInvalid",
            "Invalid value: []string{\"10.96.0.99\"}: may not change once set"
        )]
    );

    let e = services
        .create(
            &PostParams::default(),
            &svc(
                "taken",
                json!({"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 30443}]}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec.ports[0].nodePort",
            "FieldValueInvalid",
            "Invalid value: 30443: provided port is already allocated"
        )]
    );
    let e = services
        .create(
            &PostParams::default(),
            &svc(
                "low",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 8080}]}),
            ),
        )
        .await
        .unwrap_err();
    let s = status(e);
    assert_eq!(
        s.message,
        "Service \"low\" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767"
    );
    // Deleting a Service frees its node ports.
    services.delete("np", &Default::default()).await.unwrap();
    services
        .create(
            &PostParams::default(),
            &svc(
                "again",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30443}]}),
            ),
        )
        .await
        .unwrap();

    let e = services
        .create(&PostParams::default(), &svc("ports", json!({"ports": [{"port": 0}, {"name": "b", "port": 70000, "targetPort": "Bad_Name"}]})))
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [
            cause("spec.ports[0].name", "FieldValueRequired", "Required value"),
            cause(
                "spec.ports[0].port",
                "FieldValueInvalid",
                "Invalid value: 0: must be between 1 and 65535, inclusive"
            ),
            // The target port defaults to the port, and is checked too.
            cause(
                "spec.ports[0].targetPort",
                "FieldValueInvalid",
                "Invalid value: 0: must be between 1 and 65535, inclusive"
            ),
            cause(
                "spec.ports[1].port",
                "FieldValueInvalid",
                "Invalid value: 70000: must be between 1 and 65535, inclusive"
            ),
            cause(
                "spec.ports[1].targetPort",
                "FieldValueInvalid",
                "Invalid value: \"Bad_Name\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
            ),
        ]
    );
    let e = services
        .create(
            &PostParams::default(),
            &svc("cip", json!({"ports": [{"port": 80, "nodePort": 30100}]})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec.ports[0].nodePort",
            "FieldValueForbidden",
            "Forbidden: may not be used when `type` is 'ClusterIP'"
        )]
    );
    let e = services
        .create(
            &PostParams::default(),
            &svc(
                "etp",
                json!({"ports": [{"port": 80}], "externalTrafficPolicy": "Local"}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec.externalTrafficPolicy",
            "FieldValueInvalid",
            "Invalid value: \"Local\": may only be set for externally-accessible services"
        )]
    );
    // Service names are RFC 1035 labels.
    let e = services
        .create(
            &PostParams::default(),
            &svc("1svc", json!({"ports": [{"port": 80}]})),
        )
        .await
        .unwrap_err();
    let cs = causes(e);
    assert_eq!(cs[0].0, "metadata.name");
    assert!(
        cs[0].2.contains("a lowercase RFC 1035 label"),
        "{}",
        cs[0].2
    );
}

#[tokio::test]
async fn pod_templates_get_port_ranges_checked() {
    let c = cluster().await;
    let deployments = api(
        &c.client(),
        ("apps", "v1", "Deployment"),
        "deployments",
        Some("default"),
    );
    let e = deployments
        .create(&PostParams::default(), &obj(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 65536}, {"containerPort": 80, "hostPort": -1, "name": "http"}]}]}}}})))
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [
            cause(
                "spec.template.spec.containers[0].ports[0].containerPort",
                "FieldValueInvalid",
                "Invalid value: 65536: must be between 1 and 65535, inclusive"
            ),
            cause(
                "spec.template.spec.containers[0].ports[1].hostPort",
                "FieldValueInvalid",
                "Invalid value: -1: must be between 1 and 65535, inclusive"
            ),
        ]
    );
}

#[tokio::test]
async fn claims_and_storage_classes_refuse_changes_kube_refuses() {
    let c = cluster().await;
    let client = c.client();
    let pvcs = api(
        &client,
        ("", "v1", "PersistentVolumeClaim"),
        "persistentvolumeclaims",
        Some("default"),
    );
    pvcs.create(&PostParams::default(), &obj(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})))
        .await
        .unwrap();
    let e = replace(&pvcs, "data", |v| {
        v["spec"]["accessModes"] = json!(["ReadWriteMany"])
    })
    .await
    .unwrap_err();
    let cs = causes(e);
    assert_eq!(
        (cs[0].0.as_str(), cs[0].1.as_str()),
        ("spec", "FieldValueForbidden")
    );
    assert!(
        cs[0].2.starts_with("Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"),
        "{}",
        cs[0].2
    );
    // The binder sets the volume name once.
    replace(&pvcs, "data", |v| v["spec"]["volumeName"] = json!("pv-1"))
        .await
        .unwrap();

    let classes = api(
        &client,
        ("storage.k8s.io", "v1", "StorageClass"),
        "storageclasses",
        None,
    );
    classes
        .create(&PostParams::default(), &obj(json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
            "provisioner": "example.com/disk", "parameters": {"type": "ssd"}})))
        .await
        .unwrap();
    let e = replace(&classes, "fast", |v| {
        v["parameters"]["type"] = json!("hdd");
        v["provisioner"] = json!("example.com/other");
    })
    .await
    .unwrap_err();
    assert_eq!(
        causes(e),
        [
            cause(
                "parameters",
                "FieldValueForbidden",
                "Forbidden: updates to parameters are forbidden."
            ),
            cause(
                "provisioner",
                "FieldValueForbidden",
                "Forbidden: updates to provisioner are forbidden."
            ),
        ]
    );
    replace(&classes, "fast", |v| {
        v["metadata"]["labels"] = json!({"tier": "gold"})
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn names_labels_and_annotations_follow_kube_rules() {
    let c = cluster().await;
    let client = c.client();
    let namespaces = api(&client, ("", "v1", "Namespace"), "namespaces", None);
    let e = namespaces
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "metadata.name",
            "FieldValueInvalid",
            "Invalid value: \"a.b\": must not contain dots"
        )]
    );
    // RBAC names are path segments: upper case and colons are fine.
    let roles = api(
        &client,
        ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        "clusterroles",
        None,
    );
    roles
        .create(&PostParams::default(), &obj(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:Reader"}})))
        .await
        .unwrap();
    let cms = api(
        &client,
        ("", "v1", "ConfigMap"),
        "configmaps",
        Some("default"),
    );
    let e = cms
        .create(&PostParams::default(), &obj(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "labels": {"bad key": "v", "ok": "-bad-"}, "annotations": {"big": "x".repeat(256 * 1024)}}})))
        .await
        .unwrap_err();
    let fields: Vec<(String, String)> = causes(e).into_iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(
        fields,
        [
            ("metadata.labels".into(), "FieldValueInvalid".into()),
            ("metadata.labels".into(), "FieldValueInvalid".into()),
            ("metadata.annotations".into(), "FieldValueTooLong".into()),
        ]
    );
}

#[tokio::test]
async fn events_v1_need_their_required_fields() {
    let c = cluster().await;
    let events = api(
        &c.client(),
        ("events.k8s.io", "v1", "Event"),
        "events",
        Some("default"),
    );
    let e = events
        .create(&PostParams::default(), &obj(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}, "type": "Sometimes"})))
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [
            cause(
                "reportingController",
                "FieldValueRequired",
                "Required value"
            ),
            cause(
                "reportingController",
                "FieldValueInvalid",
                "Invalid value: \"\": name part must be non-empty"
            ),
            cause(
                "reportingController",
                "FieldValueInvalid",
                "Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ),
            cause("reportingInstance", "FieldValueRequired", "Required value"),
            cause("action", "FieldValueRequired", "Required value"),
            cause("reason", "FieldValueRequired", "Required value"),
            cause("eventTime", "FieldValueRequired", "Required value"),
            cause(
                "type",
                "FieldValueInvalid",
                "Invalid value: \"\": has invalid value: Sometimes"
            ),
        ]
    );
    events
        .create(&PostParams::default(), &obj(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "ok"},
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}, "type": "Normal", "eventTime": "2025-01-01T00:00:00.000000Z",
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-1", "action": "Sync", "reason": "Synced", "note": "done"})))
        .await
        .unwrap();
}

/// `ValidateSecret`: each well-known Secret type carries the keys its consumers read, JSON
/// docker configs are JSON objects, and data keys are file names.
#[tokio::test]
async fn secrets_of_well_known_types_carry_their_keys() {
    let c = cluster().await;
    let secrets = api(
        &c.client(),
        ("", "v1", "Secret"),
        "secrets",
        Some("default"),
    );
    let create = |name: &str, ty: &str, string_data: Value| {
        let secret = obj(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "type": ty, "stringData": string_data}),
        );
        let secrets = &secrets;
        async move { secrets.create(&PostParams::default(), &secret).await }
    };
    let required = |field: &str| cause(field, "FieldValueRequired", "Required value");
    let redacted = |field: &str, message: &str| {
        cause(
            field,
            "FieldValueInvalid",
            &format!("Invalid value: \"<secret contents redacted>\": {message}"),
        )
    };
    for (ty, data, expected) in [
        (
            "kubernetes.io/tls",
            json!({"tls.crt": "cert"}),
            vec![required("data[tls.key]")],
        ),
        (
            "kubernetes.io/dockerconfigjson",
            json!({}),
            vec![required("data[.dockerconfigjson]")],
        ),
        (
            "kubernetes.io/dockerconfigjson",
            json!({".dockerconfigjson": "{auths: {}}"}),
            vec![redacted(
                "data[.dockerconfigjson]",
                "invalid character 'a' looking for beginning of object key string",
            )],
        ),
        (
            "kubernetes.io/dockercfg",
            json!({".dockercfg": "[]"}),
            vec![redacted(
                "data[.dockercfg]",
                "json: cannot unmarshal array into Go value of type map[string]interface {}",
            )],
        ),
        (
            "kubernetes.io/basic-auth",
            json!({}),
            vec![required("data[username]"), required("data[password]")],
        ),
        (
            "kubernetes.io/ssh-auth",
            json!({"ssh-privatekey": ""}),
            vec![required("data[ssh-privatekey]")],
        ),
        (
            "kubernetes.io/service-account-token",
            json!({}),
            vec![required(
                "metadata.annotations[kubernetes.io/service-account.name]",
            )],
        ),
        (
            "Opaque",
            json!({"a/b": "x"}),
            vec![cause(
                "data[a/b]",
                "FieldValueInvalid",
                "Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
            )],
        ),
    ] {
        let e = create("bad", ty, data).await.unwrap_err();
        assert_eq!(causes(e), expected, "{ty}");
    }
    for (name, ty, data) in [
        (
            "tls",
            "kubernetes.io/tls",
            json!({"tls.crt": "cert", "tls.key": "key"}),
        ),
        (
            "pull",
            "kubernetes.io/dockerconfigjson",
            json!({".dockerconfigjson": "{\"auths\": {}}"}),
        ),
        ("basic", "kubernetes.io/basic-auth", json!({"password": ""})),
        ("custom", "example.com/anything", json!({})),
    ] {
        create(name, ty, data).await.unwrap();
    }
}

fn cronjob(name: &str, schedule: &str, time_zone: Option<&str>) -> DynamicObject {
    obj(
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {"schedule": schedule, "timeZone": time_zone, "jobTemplate": {"spec": {"template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
    )
}

/// `validateScheduleFormat` and `validateTimeZone`: a CronJob's schedule parses as cron does, its
/// time zone goes in `timeZone`, not the schedule, and names a zone of the IANA database.
#[tokio::test]
async fn cronjob_schedules_and_time_zones_must_parse() {
    let c = cluster().await;
    let cronjobs = api(
        &c.client(),
        ("batch", "v1", "CronJob"),
        "cronjobs",
        Some("default"),
    );
    let invalid = |field: &str, value: &str, message: &str| {
        cause(
            field,
            "FieldValueInvalid",
            &format!("Invalid value: \"{value}\": {message}"),
        )
    };
    for (schedule, tz, expected) in [
        (
            "61 * * * *",
            None,
            vec![invalid(
                "spec.schedule",
                "61 * * * *",
                "end of range (61) above maximum (59): 61",
            )],
        ),
        (
            "every hour",
            None,
            vec![invalid(
                "spec.schedule",
                "every hour",
                "expected exactly 5 fields, found 2: [every hour]",
            )],
        ),
        (
            "CRON_TZ=UTC 0 * * * *",
            None,
            vec![invalid(
                "spec.schedule",
                "CRON_TZ=UTC 0 * * * *",
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            )],
        ),
        (
            "@hourly",
            Some("Mars/Olympus"),
            vec![invalid(
                "spec.timeZone",
                "Mars/Olympus",
                "unknown time zone Mars/Olympus",
            )],
        ),
        (
            "@hourly",
            Some("Local"),
            vec![invalid(
                "spec.timeZone",
                "Local",
                "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            )],
        ),
    ] {
        let e = cronjobs
            .create(&PostParams::default(), &cronjob("bad", schedule, tz))
            .await
            .unwrap_err();
        assert_eq!(causes(e), expected, "{schedule} {tz:?}");
    }
    for (name, schedule, tz) in [
        ("hourly", "@hourly", Some("Europe/Berlin")),
        ("weekdays", "*/15 9-17 * jan-dec MON-FRI", None),
    ] {
        cronjobs
            .create(&PostParams::default(), &cronjob(name, schedule, tz))
            .await
            .unwrap();
    }
}

/// An ExternalName Service is a DNS name, without the cluster IPs and IP families of other
/// types; a Service becoming one sheds those it sent back unchanged.
#[tokio::test]
async fn external_name_services_have_no_cluster_ips() {
    let c = cluster().await;
    let services: Api<Service> = Api::default_namespaced(c.client());
    let e = services
        .create(
            &PostParams::default(),
            &svc(
                "ext",
                json!({"type": "ExternalName", "externalName": "db.example.com", "clusterIP": "10.96.0.5"}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec.clusterIPs",
            "FieldValueForbidden",
            "Forbidden: may not be set for ExternalName services"
        )]
    );
    let e = services
        .create(
            &PostParams::default(),
            &svc(
                "ext",
                json!({"type": "ExternalName", "externalName": "not_a.dns.name."}),
            ),
        )
        .await
        .unwrap_err();
    let cs = causes(e);
    assert_eq!(
        (cs[0].0.as_str(), cs[0].1.as_str()),
        ("spec.externalName", "FieldValueInvalid"),
        "{cs:?}"
    );
    assert!(
        cs[0]
            .2
            .starts_with("Invalid value: \"not_a.dns.name\": a lowercase RFC 1123 subdomain"),
        "{cs:?}"
    );

    let internal = services
        .create(
            &PostParams::default(),
            &svc("becomes-ext", json!({"ports": [{"port": 80}]})),
        )
        .await
        .unwrap();
    let mut ext = internal.clone();
    let spec = ext.spec.as_mut().unwrap();
    spec.type_ = Some("ExternalName".into());
    spec.external_name = Some("db.example.com".into());
    let ext = services
        .replace("becomes-ext", &PostParams::default(), &ext)
        .await
        .unwrap();
    let spec = ext.spec.unwrap();
    assert_eq!(
        (
            spec.cluster_ip,
            spec.cluster_ips,
            spec.ip_families,
            spec.ip_family_policy
        ),
        (None, None, None, None)
    );
}

/// `caBundle` is `[]byte`: in JSON it is base64, and the decoder refuses anything else with a
/// 400 before validation, in webhook configurations and APIServices alike.
#[tokio::test]
async fn ca_bundles_that_are_not_base64_are_a_bad_request() {
    let c = cluster().await;
    let client = c.client();
    let webhooks = api(
        &client,
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
        ),
        "validatingwebhookconfigurations",
        None,
    );
    let webhook = |ca: &str| {
        obj(json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "hooks"},
            "webhooks": [{"name": "check.example.com", "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": "https://hooks.example.com/check", "caBundle": ca}}]}))
    };
    let s = status(
        webhooks
            .create(&PostParams::default(), &webhook("not base64"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (s.code, s.reason.as_str(), s.message.as_str()),
        (
            400,
            "BadRequest",
            "ValidatingWebhookConfiguration in version \"v1\" cannot be handled as a ValidatingWebhookConfiguration: illegal base64 data at input byte 3"
        )
    );
    webhooks
        .create(&PostParams::default(), &webhook("Y2E="))
        .await
        .unwrap();

    let apiservices = api(
        &client,
        ("apiregistration.k8s.io", "v1", "APIService"),
        "apiservices",
        None,
    );
    let s = status(
        apiservices
            .create(
                &PostParams::default(),
                &obj(
                    json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": "v1.metrics.example.com"},
                    "spec": {"group": "metrics.example.com", "version": "v1",
                        "groupPriorityMinimum": 100, "versionPriority": 10,
                        "service": {"namespace": "default", "name": "metrics"},
                        "caBundle": "Y2E"}}),
                ),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (s.code, s.message.as_str()),
        (
            400,
            "APIService in version \"v1\" cannot be handled as a APIService: illegal base64 data at input byte 0"
        )
    );
}

/// `ValidateConfigMap`: keys are file names, and a key is in `data` or `binaryData`, not both.
#[tokio::test]
async fn configmap_keys_are_file_names_held_once() {
    let c = cluster().await;
    let cms = api(
        &c.client(),
        ("", "v1", "ConfigMap"),
        "configmaps",
        Some("default"),
    );
    let e = cms
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                "data": {"..hidden": "x", "k": "x"}, "binaryData": {"k": "eA==", "bin/ary": "eA=="}})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [
            cause(
                "data[..hidden]",
                "FieldValueInvalid",
                "Invalid value: \"..hidden\": must not start with '..'"
            ),
            cause(
                "data[k]",
                "FieldValueInvalid",
                "Invalid value: \"k\": duplicate of key present in binaryData"
            ),
            cause(
                "binaryData[bin/ary]",
                "FieldValueInvalid",
                "Invalid value: \"bin/ary\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ),
        ]
    );
}

/// `ValidatePolicyRule` and the binding validations: rules name verbs and what they apply to,
/// bindings refer to a role of the RBAC group with well-formed subjects, and keep their roleRef.
#[tokio::test]
async fn rbac_rules_and_bindings_are_checked() {
    let c = cluster().await;
    let client = c.client();
    let rbac = |kind: &str, plural: &str, ns: Option<&str>| {
        api(
            &client,
            ("rbac.authorization.k8s.io", "v1", kind),
            plural,
            ns,
        )
    };
    let (roles, cluster_roles) = (
        rbac("Role", "roles", Some("default")),
        rbac("ClusterRole", "clusterroles", None),
    );
    let (bindings, cluster_bindings) = (
        rbac("RoleBinding", "rolebindings", Some("default")),
        rbac("ClusterRoleBinding", "clusterrolebindings", None),
    );
    let object = |kind: &str, name: &str, body: Value| {
        let mut v = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}});
        v.as_object_mut()
            .unwrap()
            .extend(body.as_object().unwrap().clone());
        obj(v)
    };
    let pp = PostParams::default();

    let e = roles
        .create(
            &pp,
            &object(
                "Role",
                "r",
                json!({"rules": [{"resources": ["pods"]},
                    {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [
            cause(
                "rules[0].verbs",
                "FieldValueRequired",
                "Required value: verbs must contain at least one value"
            ),
            cause(
                "rules[0].apiGroups",
                "FieldValueRequired",
                "Required value: resource rules must supply at least one api group"
            ),
            cause(
                "rules[1].nonResourceURLs",
                "FieldValueInvalid",
                "Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs"
            ),
        ]
    );
    let e = cluster_roles
        .create(
            &pp,
            &object(
                "ClusterRole",
                "mixed",
                json!({"rules": [{"verbs": ["get"], "resources": ["pods"], "nonResourceURLs": ["/healthz"]}]}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "rules[0].nonResourceURLs",
            "FieldValueInvalid",
            "Invalid value: []string{\"/healthz\"}: rules cannot apply to both regular resources and non-resource URLs"
        )]
    );
    cluster_roles
        .create(
            &pp,
            &object(
                "ClusterRole",
                "health",
                json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
            ),
        )
        .await
        .unwrap();

    let e = bindings
        .create(
            &pp,
            &object(
                "RoleBinding",
                "b",
                json!({"roleRef": {"kind": "Secret", "name": "r"},
                    "subjects": [{"kind": "ServiceAccount", "name": "sa", "apiGroup": "v1"},
                        {"kind": "Robot", "name": "x"}]}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [
            cause(
                "roleRef.apiGroup",
                "FieldValueNotSupported",
                "Unsupported value: \"\": supported values: \"rbac.authorization.k8s.io\""
            ),
            cause(
                "roleRef.kind",
                "FieldValueNotSupported",
                "Unsupported value: \"Secret\": supported values: \"Role\", \"ClusterRole\""
            ),
            cause(
                "subjects[0].apiGroup",
                "FieldValueNotSupported",
                "Unsupported value: \"v1\": supported values: \"\""
            ),
            cause(
                "subjects[1].kind",
                "FieldValueNotSupported",
                "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\""
            ),
        ]
    );
    let created = bindings
        .create(
            &pp,
            &object(
                "RoleBinding",
                "b",
                json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "health"},
                    "subjects": [{"kind": "User", "name": "dev"}]}),
            ),
        )
        .await
        .unwrap();
    // SetDefaults_Subject: a User is of the RBAC group.
    assert_eq!(
        created.data["subjects"][0]["apiGroup"],
        "rbac.authorization.k8s.io"
    );
    let e = replace(&bindings, "b", |v| v["roleRef"]["name"] = json!("other"))
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "roleRef",
            "FieldValueInvalid",
            r#"Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"other"}: field is immutable"#
        )]
    );

    let e = cluster_bindings
        .create(
            &pp,
            &object(
                "ClusterRoleBinding",
                "cb",
                json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                    "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [
            cause(
                "roleRef.kind",
                "FieldValueNotSupported",
                "Unsupported value: \"Role\": supported values: \"ClusterRole\""
            ),
            cause(
                "subjects[0].namespace",
                "FieldValueRequired",
                "Required value"
            ),
        ]
    );
}

/// `validateContainerCommon` and `validateContainers`: every container of a pod template has an
/// image and a unique DNS-label name, and a template has containers.
#[tokio::test]
async fn containers_need_an_image_and_a_unique_name() {
    let c = cluster().await;
    let deployments = api(
        &c.client(),
        ("apps", "v1", "Deployment"),
        "deployments",
        Some("default"),
    );
    let deployment = |containers: Value, init: Value| {
        obj(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": containers, "initContainers": init}}}}),
        )
    };
    let e = deployments
        .create(
            &PostParams::default(),
            &deployment(
                json!([{"name": "app"}, {"name": "App_1", "image": "x"}]),
                json!([{"name": "app", "image": "x"}]),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [
            cause(
                "spec.template.spec.containers[0].image",
                "FieldValueRequired",
                "Required value"
            ),
            cause(
                "spec.template.spec.containers[1].name",
                "FieldValueInvalid",
                "Invalid value: \"App_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ),
            cause(
                "spec.template.spec.initContainers[0].name",
                "FieldValueDuplicate",
                "Duplicate value: \"app\""
            ),
        ]
    );
    let e = deployments
        .create(&PostParams::default(), &deployment(json!([]), json!(null)))
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec.template.spec.containers",
            "FieldValueRequired",
            "Required value"
        )]
    );
}

/// `ValidateIngressSpec`: an Ingress routes somewhere, by DNS host and absolute typed paths, to
/// one service port.
#[tokio::test]
async fn ingresses_route_typed_paths_to_one_service_port() {
    let c = cluster().await;
    let ingresses = api(
        &c.client(),
        ("networking.k8s.io", "v1", "Ingress"),
        "ingresses",
        Some("default"),
    );
    let ingress = |spec: Value| {
        obj(
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "ing"}, "spec": spec}),
        )
    };
    let e = ingresses
        .create(&PostParams::default(), &ingress(json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        causes(e),
        [cause(
            "spec",
            "FieldValueInvalid",
            "Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"
        )]
    );
    let e = ingresses
        .create(
            &PostParams::default(),
            &ingress(json!({"rules": [
                {"host": "10.0.0.1", "http": {"paths": [
                    {"path": "docs", "pathType": "Prefix",
                     "backend": {"service": {"name": "web", "port": {"number": 80, "name": "http"}}}},
                    {"path": "/a//b", "pathType": "Exact", "backend": {"service": {"name": "web"}}},
                    {"path": "/", "pathType": "Regex", "backend": {"service": {"name": "web", "port": {"number": 70000}}}},
                ]}},
                {"host": "example.com", "http": {"paths": []}},
            ]})),
        )
        .await
        .unwrap_err();
    let p = "spec.rules[0].http.paths";
    assert_eq!(
        causes(e),
        [
            cause(
                "spec.rules[0].host",
                "FieldValueInvalid",
                "Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address"
            ),
            cause(
                &format!("{p}[0].path"),
                "FieldValueInvalid",
                "Invalid value: \"docs\": must be an absolute path"
            ),
            cause(
                &format!("{p}[0].backend"),
                "FieldValueInvalid",
                "Invalid value: \"\": cannot set both port name & port number"
            ),
            cause(
                &format!("{p}[1].path"),
                "FieldValueInvalid",
                "Invalid value: \"/a//b\": must not contain '//'"
            ),
            cause(
                &format!("{p}[1].backend"),
                "FieldValueRequired",
                "Required value: port name or number is required"
            ),
            cause(
                &format!("{p}[2].pathType"),
                "FieldValueNotSupported",
                "Unsupported value: \"Regex\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\""
            ),
            cause(
                &format!("{p}[2].backend.service.port.number"),
                "FieldValueInvalid",
                "Invalid value: 70000: must be between 1 and 65535, inclusive"
            ),
            cause(
                "spec.rules[1].http.paths",
                "FieldValueRequired",
                "Required value"
            ),
        ]
    );
    let e = ingresses
        .create(
            &PostParams::default(),
            &ingress(json!({"rules": [{"http": {"paths": [
                {"path": "/", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}]}}]})),
        )
        .await
        .unwrap_err();
    // The schema requires pathType too; kube's words are the ones reported.
    assert_eq!(
        causes(e),
        [cause(
            "spec.rules[0].http.paths[0].pathType",
            "FieldValueRequired",
            "Required value: pathType must be specified"
        )]
    );
    let e = ingresses
        .create(
            &PostParams::default(),
            &ingress(
                json!({"defaultBackend": {"resource": {"kind": "Bucket", "name": "b"}},
                "tls": [{"hosts": ["Not.Valid"], "secretName": "tls_secret"}]}),
            ),
        )
        .await
        .unwrap_err();
    let cs = causes(e);
    let summary: Vec<(&str, &str, bool)> = cs
        .iter()
        .map(|(f, r, m)| {
            let subdomain = m.contains(": a lowercase RFC 1123 subdomain must consist of");
            (f.as_str(), r.as_str(), subdomain)
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("spec.tls[0].hosts[0]", "FieldValueInvalid", true),
            ("spec.tls[0].secretName", "FieldValueInvalid", true),
        ],
        "{cs:?}"
    );
    ingresses
        .create(
            &PostParams::default(),
            &ingress(json!({"ingressClassName": "nginx", "rules": [{"host": "*.example.com", "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}]}}]})),
        )
        .await
        .unwrap();
}
