//! A Service API served at three versions: the hub `v1` the reconciler sees, `v1beta1` with the
//! same schema (converted by the API server, `None`) and `v1alpha1` with a spec of its own
//! (converted in Rust, by the author's `From`/`TryFrom`). The generated CRD, and the conversion
//! webhook's answer to a `ConversionReview` as kube-apiserver sends it.

use serde_json::{Value, json};
use service_provider::kube::core::conversion::ConversionReview;
use service_provider_runtime::conversion;

use crate::widget::Widget;

fn crd() -> Value {
    serde_json::to_value(service_provider::manifests::service_crd::<Widget>()).unwrap()
}

#[test]
fn the_crd_serves_every_version_and_stores_the_declared_one() {
    let crd = crd();
    let versions = crd["spec"]["versions"].as_array().unwrap();
    let names: Vec<&str> = versions
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["v1", "v1beta1", "v1alpha1"]);
    let storage: Vec<&str> = versions
        .iter()
        .filter(|v| v["storage"] == true)
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(storage, ["v1alpha1"]);
    assert_eq!(conversion::storage_version::<Widget>(), "v1alpha1");
    assert!(versions.iter().all(|v| v["served"] == true));

    let deprecation = |name: &str| {
        let v = versions.iter().find(|v| v["name"] == name).unwrap();
        (
            v.get("deprecated").cloned(),
            v.get("deprecationWarning").cloned(),
        )
    };
    assert_eq!(deprecation("v1"), (None, None));
    assert_eq!(
        deprecation("v1beta1"),
        (
            Some(json!(true)),
            Some(json!(
                "widgets.versions.test/v1beta1 is deprecated; use widgets.versions.test/v1"
            ))
        )
    );
    assert_eq!(deprecation("v1alpha1"), (Some(json!(true)), None));

    // Each version's spec schema is its own type's; v1beta1 shares the hub's.
    let spec = |name: &str| {
        versions.iter().find(|v| v["name"] == name).unwrap()["schema"]["openAPIV3Schema"]
            ["properties"]["spec"]
            .clone()
    };
    assert_eq!(spec("v1beta1"), spec("v1"));
    assert!(spec("v1")["properties"]["size"]["properties"]["millimetres"].is_object());
    assert!(spec("v1alpha1")["properties"]["sizeMm"].is_object());
    assert_eq!(spec("v1alpha1")["required"], json!(["sizeMm"]));
    // The status and the columns are the same at every version.
    let status = |name: &str| {
        versions.iter().find(|v| v["name"] == name).unwrap()["schema"]["openAPIV3Schema"]
            ["properties"]["status"]
            .clone()
    };
    assert_eq!(status("v1alpha1"), status("v1"));
    let columns = |name: &str| {
        versions.iter().find(|v| v["name"] == name).unwrap()["additionalPrinterColumns"].clone()
    };
    assert_eq!(columns("v1alpha1"), columns("v1"));

    // v1alpha1 converts in Rust: the API server must ask the webhook.
    assert_eq!(
        crd["spec"]["conversion"],
        json!({ "strategy": "Webhook", "webhook": {
            // Where `init` has not written the real address yet: the CRD applies as it is.
            "clientConfig": { "service": { "namespace": "openmcp-system", "name": "widget-webhook",
                "path": "/convert", "port": 443 } },
            "conversionReviewVersions": ["v1"],
        } })
    );
}

/// A `ConversionReview` as kube-apiserver posts it (apiextensions.k8s.io/v1).
fn review(desired: &str, objects: Vec<Value>) -> ConversionReview {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "desiredAPIVersion": desired,
            "objects": objects,
        },
    }))
    .unwrap()
}

fn widget(api_version: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": "Widget",
        "metadata": { "name": name, "namespace": "tenant", "uid": format!("uid-{name}"),
            "resourceVersion": "42", "labels": { "team": "a" },
            "finalizers": ["widgets.versions.test/finalizer"] },
        "spec": spec,
        "status": { "phase": "Ready", "observedGeneration": 3 },
    })
}

#[test]
fn the_webhook_converts_through_the_hub_and_keeps_metadata_and_status() {
    let answer = conversion::review::<Widget>(review(
        "widgets.versions.test/v1alpha1",
        vec![
            widget(
                "widgets.versions.test/v1",
                "a",
                json!({ "size": { "millimetres": 12 }, "colour": "red" }),
            ),
            // v1beta1 has the hub's schema: its spec passes through unchanged.
            widget(
                "widgets.versions.test/v1beta1",
                "b",
                json!({ "size": { "millimetres": 7 }, "colour": "blue" }),
            ),
            // Already at the desired version: returned as it is.
            widget(
                "widgets.versions.test/v1alpha1",
                "c",
                json!({ "sizeMm": 3 }),
            ),
        ],
    ));
    let json = serde_json::to_value(&answer).unwrap();
    assert_eq!(json["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(json["kind"], "ConversionReview");
    let response = &json["response"];
    assert_eq!(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(response["result"]["status"], "Success");
    let converted = response["convertedObjects"].as_array().unwrap();
    assert_eq!(converted.len(), 3);
    for object in converted {
        assert_eq!(object["apiVersion"], "widgets.versions.test/v1alpha1");
        assert_eq!(object["kind"], "Widget");
        assert_eq!(
            object["status"],
            json!({ "phase": "Ready", "observedGeneration": 3 })
        );
        assert_eq!(object["metadata"]["labels"], json!({ "team": "a" }));
        assert_eq!(object["metadata"]["resourceVersion"], "42");
    }
    assert_eq!(
        converted[0]["spec"],
        json!({ "sizeMm": 12, "color": "red" })
    );
    assert_eq!(
        converted[1]["spec"],
        json!({ "sizeMm": 7, "color": "blue" })
    );
    assert_eq!(converted[2]["spec"], json!({ "sizeMm": 3 }));
}

#[test]
fn every_version_pair_round_trips_without_losing_a_field() {
    let at = |version: &str| format!("widgets.versions.test/{version}");
    let start = [
        (
            "v1",
            json!({ "size": { "millimetres": 12 }, "colour": "red" }),
        ),
        (
            "v1beta1",
            json!({ "size": { "millimetres": 12 }, "colour": "red" }),
        ),
        ("v1alpha1", json!({ "sizeMm": 12, "color": "red" })),
    ];
    for (from, spec) in &start {
        for (to, _) in &start {
            let object = widget(&at(from), "w", spec.clone());
            let there = conversion::convert::<Widget>(object.clone(), &at(to)).unwrap();
            let back = conversion::convert::<Widget>(there, &at(from)).unwrap();
            assert_eq!(back, object, "{from} → {to} → {from}");
        }
    }
}

#[test]
fn a_failed_conversion_fails_the_whole_review_and_says_which_object() {
    let answer = conversion::review::<Widget>(review(
        "widgets.versions.test/v1",
        vec![
            widget(
                "widgets.versions.test/v1alpha1",
                "fine",
                json!({ "sizeMm": 1 }),
            ),
            widget(
                "widgets.versions.test/v1alpha1",
                "negative",
                json!({ "sizeMm": -4 }),
            ),
        ],
    ));
    let response = serde_json::to_value(&answer).unwrap()["response"].clone();
    assert_eq!(response["result"]["status"], "Failure");
    assert_eq!(
        response["result"]["message"],
        "converting negative to widgets.versions.test/v1: v1alpha1 → v1: sizeMm -4 is negative"
    );
    assert_eq!(response["convertedObjects"], json!([]));

    let unknown = conversion::review::<Widget>(review(
        "widgets.versions.test/v2",
        vec![widget("widgets.versions.test/v1", "w", json!({}))],
    ));
    let response = serde_json::to_value(&unknown).unwrap()["response"].clone();
    assert_eq!(response["result"]["status"], "Failure");
    assert_eq!(
        response["result"]["message"],
        "converting w to widgets.versions.test/v2: widgets.versions.test/v2 is not a version of Widget this provider serves"
    );
}

/// The provider's webhook server as kube-apiserver meets it: HTTPS with the certificate the CRD's
/// `caBundle` trusts, `POST /convert` with a `ConversionReview`.
#[tokio::test]
async fn the_webhook_answers_a_conversion_review_over_https() -> anyhow::Result<()> {
    use service_provider_runtime::ops::ServingCert;
    use service_provider_runtime::ops::tls::{acceptor, self_signed_pem};

    let dir = std::env::temp_dir().join(format!("sp-conversion-webhook-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (cert, key) = self_signed_pem(&["localhost"])?;
    std::fs::write(dir.join("tls.crt"), &cert)?;
    std::fs::write(dir.join("tls.key"), &key)?;
    let tls = acceptor(&ServingCert::Files {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    })?;
    std::fs::remove_dir_all(&dir)?;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let addr = service_provider_runtime::ops::serve_webhook(
        "127.0.0.1:0".parse()?,
        tls,
        conversion::review::<Widget>,
        shutdown.clone(),
    )
    .await?;

    // A client that trusts only the webhook's certificate, as kube-apiserver with the caBundle.
    let mut config =
        service_provider::kube::Config::new(format!("https://localhost:{}", addr.port()).parse()?);
    let der: String = cert.lines().filter(|l| !l.starts_with("-----")).collect();
    config.root_cert = Some(vec![base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        der,
    )?]);
    let client = service_provider::kube::Client::try_from(config)?;
    let post = |body: Vec<u8>| {
        http::Request::post("/convert")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
    };
    let asked = review(
        "widgets.versions.test/v1",
        vec![widget(
            "widgets.versions.test/v1alpha1",
            "a",
            json!({ "sizeMm": 5 }),
        )],
    );
    let answer: Value = client.request(post(serde_json::to_vec(&asked)?)?).await?;
    assert_eq!(
        answer["response"]["uid"],
        "705ab4f5-6393-11e8-b7cc-42010a800002"
    );
    assert_eq!(answer["response"]["result"]["status"], "Success");
    assert_eq!(
        answer["response"]["convertedObjects"][0]["spec"],
        json!({ "size": { "millimetres": 5 }, "colour": "black" })
    );

    // Not a ConversionReview: refused, saying so.
    let refused = client.request_text(post(b"{\"kind\": 7}".to_vec())?).await;
    let message = format!("{refused:?}");
    assert!(message.contains("not a ConversionReview"), "{message}");
    shutdown.cancel();
    Ok(())
}

#[test]
fn a_provider_converting_in_rust_may_make_its_certificate_and_mounts_it() {
    let manifests = service_provider::manifests::<Widget>();
    let role = manifests
        .iter()
        .find(|m| m.path == "platform/clusterrole.yaml")
        .unwrap();
    let secret_rules: Vec<&Value> = role.object["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["resources"] == json!(["secrets"]))
        .collect();
    assert_eq!(
        secret_rules,
        [&json!({ "apiGroups": [""], "resources": ["secrets"], "verbs": ["create"] })]
    );

    let deployment =
        service_provider_runtime::manifests::deployment::<Widget>("widget", "widget:1", None);
    let spec = &deployment[0].object["spec"];
    assert_eq!(
        spec["extraVolumes"],
        json!([{ "name": "webhook-certificate", "secret": { "secretName": "widget-webhook-tls" } }])
    );
    assert_eq!(
        spec["extraVolumeMounts"],
        json!([{ "name": "webhook-certificate", "mountPath": "/tmp/k8s-webhook-server/serving-certs",
            "readOnly": true }])
    );
}
