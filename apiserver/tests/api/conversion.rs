//! CRD conversion webhooks: a Knob CRD whose v1 (`spec.size`) and v2 (`spec.length`, the
//! storage version) are converted by an HTTPS webhook started by the test, as kube-apiserver
//! converts them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use http_body_util::{BodyExt, Full};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use kube::{Client, ResourceExt};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::common::*;

/// What the test webhook does with a review.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Converts `spec.size` (v1) ↔ `spec.length` (v2).
    Convert,
    /// Answers `result.status: Failure`.
    Fail,
    /// Converts, but renames the object.
    Rename,
}

/// An HTTPS conversion webhook on 127.0.0.1 with its own CA, on a thread and runtime of its own
/// (a conversion blocks the API server's caller until the webhook answers).
struct Webhook {
    url: String,
    ca_pem: String,
    mode: Arc<Mutex<Mode>>,
    /// `(desiredAPIVersion, number of objects)` of every review received.
    reviews: Arc<Mutex<Vec<(String, usize)>>>,
    calls: Arc<AtomicUsize>,
}

impl Webhook {
    fn start() -> Webhook {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            // Unique: a CA bundle of another webhook must not look like this one's issuer.
            .push(
                rcgen::DnType::CommonName,
                format!("conversion-webhook-ca-{}", uuid::Uuid::new_v4()),
            );
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("https://{}/convert", listener.local_addr().unwrap());
        let mode = Arc::new(Mutex::new(Mode::Convert));
        let reviews = Arc::new(Mutex::new(Vec::new()));
        let calls = Arc::new(AtomicUsize::new(0));
        let state = (mode.clone(), reviews.clone(), calls.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        continue;
                    };
                    let acceptor = acceptor.clone();
                    let state = state.clone();
                    tokio::spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let service = hyper::service::service_fn(
                            move |req: http::Request<hyper::body::Incoming>| {
                                let state = state.clone();
                                async move {
                                    let body = req.into_body().collect().await?.to_bytes();
                                    let reply = answer(&state, &body);
                                    Ok::<_, hyper::Error>(
                                        http::Response::builder()
                                            .header("content-type", "application/json")
                                            .body(Full::new(Bytes::from(reply)))
                                            .unwrap(),
                                    )
                                }
                            },
                        );
                        let _ = hyper_util::server::conn::auto::Builder::new(
                            hyper_util::rt::TokioExecutor::new(),
                        )
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                    });
                }
            });
        });
        Webhook {
            url,
            ca_pem: ca.pem(),
            mode,
            reviews,
            calls,
        }
    }

    fn set_mode(&self, mode: Mode) {
        *self.mode.lock() = mode;
    }

    fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

type State = (
    Arc<Mutex<Mode>>,
    Arc<Mutex<Vec<(String, usize)>>>,
    Arc<AtomicUsize>,
);

/// The webhook's ConversionReview reply.
fn answer(state: &State, body: &[u8]) -> Vec<u8> {
    let (mode, reviews, calls) = state;
    calls.fetch_add(1, Ordering::SeqCst);
    let review: Value = serde_json::from_slice(body).unwrap();
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap().to_string();
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    reviews.lock().push((desired.clone(), objects.len()));
    let mode = *mode.lock();
    let result = if mode == Mode::Fail {
        json!({"status": "Failure", "message": "knobs do not turn today"})
    } else {
        json!({"status": "Success"})
    };
    let converted: Vec<Value> = objects
        .into_iter()
        .map(|mut o| {
            let spec = o["spec"].as_object_mut().unwrap();
            let (from, to) = if desired.ends_with("/v2") {
                ("size", "length")
            } else {
                ("length", "size")
            };
            if let Some(v) = spec.remove(from) {
                spec.insert(to.into(), v);
            }
            o["apiVersion"] = json!(desired);
            if mode == Mode::Rename {
                let name = o["metadata"]["name"].as_str().unwrap().to_string();
                o["metadata"]["name"] = json!(format!("{name}-renamed"));
            }
            o
        })
        .collect();
    serde_json::to_vec(&json!({
        "apiVersion": review["apiVersion"],
        "kind": "ConversionReview",
        "response": {"uid": request["uid"], "convertedObjects": converted, "result": result},
    }))
    .unwrap()
}

fn knob_crd(client_config: Value) -> Value {
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {field: {"type": "integer"}}},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "knobs.conv.example.com"},
        "spec": {
            "group": "conv.example.com",
            "names": {"kind": "Knob", "plural": "knobs", "singular": "knob"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": false, "schema": schema("size"),
                 "subresources": {"status": {}}, "selectableFields": [{"jsonPath": ".spec.size"}]},
                {"name": "v2", "served": true, "storage": true, "schema": schema("length"),
                 "subresources": {"status": {}}},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": client_config, "conversionReviewVersions": ["v1", "v1beta1"]}},
        }
    })
}

async fn install_knobs(client: &Client, client_config: Value) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(knob_crd(client_config)).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
}

fn knobs(client: &Client, version: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("conv.example.com", version, "Knob"),
        "knobs",
    );
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn knob(name: &str, version: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("conv.example.com/{version}"), "kind": "Knob",
        "metadata": {"name": name}, "spec": spec
    }))
    .unwrap()
}

/// The status error of a failed call.
fn api_error<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(e)) => *e,
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn started() -> (service_provider_apiserver::Cluster, Client, Webhook) {
    let c = cluster().await;
    let client = c.client();
    let hook = Webhook::start();
    install_knobs(
        &client,
        json!({"url": hook.url, "caBundle": hook.ca_bundle()}),
    )
    .await;
    (c, client, hook)
}

#[tokio::test]
async fn an_object_written_at_v1_is_stored_at_v2_and_reads_back_at_both() {
    let (_c, client, hook) = started().await;
    let v1 = knobs(&client, "v1");
    let v2 = knobs(&client, "v2");

    // Create: the body goes to v2 for storage, the stored object back to v1 for the reply.
    let created = v1
        .create(&PostParams::default(), &knob("a", "v1", json!({"size": 3})))
        .await
        .unwrap();
    assert_eq!(created.types.unwrap().api_version, "conv.example.com/v1");
    assert_eq!(created.data["spec"], json!({"size": 3}));
    assert_eq!(
        *hook.reviews.lock(),
        [
            ("conv.example.com/v2".to_string(), 1),
            ("conv.example.com/v1".to_string(), 1)
        ]
    );

    let at_v2 = v2.get("a").await.unwrap();
    assert_eq!(at_v2.types.unwrap().api_version, "conv.example.com/v2");
    assert_eq!(at_v2.data["spec"], json!({"length": 3}));
    assert_eq!(at_v2.metadata.uid, created.metadata.uid);
    let calls = hook.calls();
    // Reading at the storage version needs no call.
    v2.get("a").await.unwrap();
    assert_eq!(hook.calls(), calls);
    assert_eq!(v1.get("a").await.unwrap().data["spec"], json!({"size": 3}));
    assert_eq!(hook.calls(), calls + 1);

    // Update, patches and status at v1 all reach the v2 object.
    let mut at_v1 = v1.get("a").await.unwrap();
    at_v1.data["spec"]["size"] = json!(4);
    v1.replace("a", &PostParams::default(), &at_v1)
        .await
        .unwrap();
    assert_eq!(
        v2.get("a").await.unwrap().data["spec"],
        json!({"length": 4})
    );
    let patched = v1
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["spec"], json!({"size": 5}));
    assert_eq!(
        v2.get("a").await.unwrap().data["spec"],
        json!({"length": 5})
    );
    let applied = v1
        .patch(
            "a",
            &PatchParams::apply("test").force(),
            &Patch::Apply(json!({"apiVersion": "conv.example.com/v1", "kind": "Knob",
                "metadata": {"name": "a"}, "spec": {"size": 6}})),
        )
        .await
        .unwrap();
    assert_eq!(applied.data["spec"], json!({"size": 6}));
    assert_eq!(
        v2.get("a").await.unwrap().data["spec"],
        json!({"length": 6})
    );
    let status = v1
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Turned"}})),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["phase"], "Turned");
    assert_eq!(status.data["spec"], json!({"size": 6}));
    let at_v2 = v2.get("a").await.unwrap();
    assert_eq!(at_v2.data["status"]["phase"], "Turned");
    assert_eq!(at_v2.data["spec"], json!({"length": 6}));
    // Every review carried exactly one object, each to v1 or v2.
    assert!(hook.reviews.lock().iter().all(|(_, n)| *n == 1));
}

#[tokio::test]
async fn list_and_watch_at_the_non_storage_version_convert() {
    let (_c, client, hook) = started().await;
    let v1 = knobs(&client, "v1");
    let v2 = knobs(&client, "v2");
    for (name, length) in [("a", 1), ("b", 2)] {
        v2.create(
            &PostParams::default(),
            &knob(name, "v2", json!({"length": length})),
        )
        .await
        .unwrap();
    }
    assert_eq!(
        hook.calls(),
        0,
        "writing at the storage version needs no call"
    );

    let list = v1.list(&ListParams::default()).await.unwrap();
    let sizes: Vec<(String, Value)> = list
        .items
        .iter()
        .map(|k| {
            assert_eq!(k.types.as_ref().unwrap().api_version, "conv.example.com/v1");
            (k.metadata.name.clone().unwrap(), k.data["spec"].clone())
        })
        .collect();
    assert_eq!(
        sizes,
        [
            ("a".to_string(), json!({"size": 1})),
            ("b".to_string(), json!({"size": 2}))
        ]
    );
    // kube-apiserver decodes (so converts) a list's items one by one.
    assert_eq!(
        *hook.reviews.lock(),
        [
            ("conv.example.com/v1".to_string(), 1),
            ("conv.example.com/v1".to_string(), 1)
        ]
    );

    // A field selector selects on the converted objects.
    let selected = v1
        .list(&ListParams::default().fields("spec.size=2"))
        .await
        .unwrap();
    let names: Vec<_> = selected.items.iter().map(|k| k.name_any()).collect();
    assert_eq!(names, ["b"]);

    let mut events = v1
        .watch(
            &WatchParams::default(),
            &list.metadata.resource_version.unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    v2.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"length": 7}})),
    )
    .await
    .unwrap();
    match tokio::time::timeout(TIMEOUT, events.try_next()).await {
        Ok(Ok(Some(WatchEvent::Modified(k)))) => {
            assert_eq!(k.types.unwrap().api_version, "conv.example.com/v1");
            assert_eq!(k.data["spec"], json!({"size": 7}));
        }
        other => panic!("expected a MODIFIED event, got {other:?}"),
    }
}

#[tokio::test]
async fn a_failing_webhook_fails_reads_writes_and_watches_as_kube_does() {
    let (_c, client, hook) = started().await;
    let v1 = knobs(&client, "v1");
    let v2 = knobs(&client, "v2");
    v2.create(
        &PostParams::default(),
        &knob("a", "v2", json!({"length": 1})),
    )
    .await
    .unwrap();
    hook.set_mode(Mode::Fail);

    let e = api_error(v1.get("a").await);
    assert_eq!(e.code, 500);
    assert_eq!(e.reason, "");
    assert_eq!(
        e.message,
        "conversion webhook for conv.example.com/v2, Kind=Knob failed: knobs do not turn today"
    );
    let e = api_error(
        v1.create(&PostParams::default(), &knob("b", "v1", json!({"size": 2})))
            .await,
    );
    assert_eq!(e.code, 500);
    assert_eq!(
        e.message,
        "conversion webhook for conv.example.com/v1, Kind=Knob failed: knobs do not turn today"
    );
    assert!(v2.get_opt("b").await.unwrap().is_none(), "nothing stored");
    // A dry run is not encoded for storage, so it needs no conversion.
    let dry = v1
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &knob("c", "v1", json!({"size": 3})),
        )
        .await
        .unwrap();
    assert_eq!(dry.data["spec"], json!({"size": 3}));
    let e = api_error(v1.list(&ListParams::default()).await);
    assert_eq!(e.code, 500);

    // A watch ends with an ERROR event carrying an InternalError, as the etcd watcher sends.
    let mut events = v1
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    match tokio::time::timeout(TIMEOUT, events.try_next()).await {
        Ok(Ok(Some(WatchEvent::Error(e)))) => {
            assert_eq!(e.code, 500);
            assert_eq!(e.reason, "InternalError");
            assert_eq!(
                e.message,
                "Internal error occurred: conversion webhook for conv.example.com/v2, Kind=Knob failed: knobs do not turn today"
            );
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
    assert!(
        tokio::time::timeout(TIMEOUT, events.next())
            .await
            .unwrap()
            .is_none(),
        "the watch ends after its ERROR event"
    );
}

#[tokio::test]
async fn a_reply_renaming_the_object_is_refused() {
    let (_c, client, hook) = started().await;
    knobs(&client, "v2")
        .create(
            &PostParams::default(),
            &knob("a", "v2", json!({"length": 1})),
        )
        .await
        .unwrap();
    hook.set_mode(Mode::Rename);
    let e = api_error(knobs(&client, "v1").get("a").await);
    assert_eq!(e.code, 500);
    assert_eq!(
        e.message,
        "conversion webhook for conv.example.com/v2, Kind=Knob returned invalid object: must have the same name: a != a-renamed"
    );
}

#[tokio::test]
async fn an_unreachable_webhook_fails_as_kube_does() {
    let c = cluster().await;
    let client = c.client();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    install_knobs(
        &client,
        json!({"url": format!("https://127.0.0.1:{port}/convert")}),
    )
    .await;
    let e = api_error(
        knobs(&client, "v1")
            .create(&PostParams::default(), &knob("a", "v1", json!({"size": 1})))
            .await,
    );
    assert_eq!(e.code, 500);
    assert_eq!(
        e.message,
        format!(
            "conversion webhook for conv.example.com/v1, Kind=Knob failed: Post \"https://127.0.0.1:{port}/convert?timeout=30s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
}

#[tokio::test]
async fn a_webhook_outside_the_ca_bundle_or_behind_a_service_is_not_reached() {
    let c = cluster().await;
    let client = c.client();
    let hook = Webhook::start();
    let other = Webhook::start();
    // Trusting another CA than the one that signed the webhook's certificate.
    install_knobs(
        &client,
        json!({"url": hook.url, "caBundle": other.ca_bundle()}),
    )
    .await;
    let e = api_error(
        knobs(&client, "v1")
            .create(&PostParams::default(), &knob("a", "v1", json!({"size": 1})))
            .await,
    );
    assert_eq!(
        e.message,
        format!(
            "conversion webhook for conv.example.com/v1, Kind=Knob failed: Post \"{}?timeout=30s\": tls: failed to verify certificate: x509: certificate signed by unknown authority",
            hook.url
        )
    );
    assert_eq!(hook.calls(), 0);

    // The embedded server has no Service network: a Service reference does not resolve.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        "knobs.conv.example.com",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"conversion": {"webhook": {"clientConfig": {
            "url": null, "caBundle": null,
            "service": {"namespace": "hooks", "name": "knob-converter", "path": "/convert"}}}}}})),
    )
    .await
    .unwrap();
    let e = api_error(
        knobs(&client, "v1")
            .create(&PostParams::default(), &knob("a", "v1", json!({"size": 1})))
            .await,
    );
    assert_eq!(
        e.message,
        "conversion webhook for conv.example.com/v1, Kind=Knob failed: Post \"https://knob-converter.hooks.svc:443/convert?timeout=30s\": dial tcp: lookup knob-converter.hooks.svc: no such host"
    );
}

#[tokio::test]
async fn a_malformed_conversion_is_refused_with_kubes_field_errors() {
    let c = cluster().await;
    let client = c.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let refused = |conversion: Value| {
        let crds = crds.clone();
        async move {
            let mut crd = knob_crd(json!({}));
            crd["spec"]["conversion"] = conversion;
            let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
            let e = api_error(crds.create(&PostParams::default(), &crd).await);
            assert_eq!(e.code, 422, "{}", e.message);
            e.message
        }
    };
    let prefix =
        "CustomResourceDefinition.apiextensions.k8s.io \"knobs.conv.example.com\" is invalid: ";
    assert_eq!(
        refused(json!({"strategy": "Webhook"})).await,
        format!(
            "{prefix}[spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook, spec.conversion.conversionReviewVersions: Required value]"
        )
    );
    assert_eq!(
        refused(json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://a.example.com", "service": {"namespace": "n", "name": "s"}},
            "conversionReviewVersions": ["v1"]}}))
        .await,
        format!(
            "{prefix}spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"
        )
    );
    assert_eq!(
        refused(json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "http://a.example.com/convert?x=1"},
            "conversionReviewVersions": ["v3"]}}))
        .await,
        format!(
            "{prefix}[spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path], spec.conversion.webhookClientConfig.url: Invalid value: \"x=1\": query parameters are not permitted in the URL, spec.conversion.conversionReviewVersions: Invalid value: [\"v3\"]: must include at least one of v1, v1beta1]"
        )
    );
    let garbage = base64::engine::general_purpose::STANDARD.encode("not a certificate");
    assert_eq!(
        refused(json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://a.example.com", "caBundle": garbage},
            "conversionReviewVersions": ["v1", "v1"]}}))
        .await,
        format!(
            "{prefix}[spec.conversion.webhookClientConfig.caBundle: Invalid value: \"{garbage}\": unable to load root certificates: unable to parse bytes as PEM block, spec.conversion.conversionReviewVersions[1]: Invalid value: \"v1\": duplicate version]"
        )
    );
    assert_eq!(
        refused(json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"namespace": "", "name": "s", "port": 0, "path": "no-slash"}},
            "conversionReviewVersions": ["v1"]}}))
        .await,
        format!(
            "{prefix}[spec.conversion.webhookClientConfig.service.namespace: Required value, spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive, spec.conversion.webhookClientConfig.service.path: Invalid value: \"no-slash\": must start with a '/']"
        )
    );
    assert_eq!(
        refused(json!({"strategy": "None", "webhook": {
            "clientConfig": {"url": "https://a.example.com"}, "conversionReviewVersions": ["v1"]}}))
        .await,
        format!(
            "{prefix}[spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook, spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook]"
        )
    );
    assert_eq!(
        refused(json!({"strategy": "Sometimes"})).await,
        format!(
            "{prefix}spec.conversion.strategy: Unsupported value: \"Sometimes\": supported values: \"None\", \"Webhook\""
        )
    );
}
