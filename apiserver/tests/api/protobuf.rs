//! `application/vnd.kubernetes.protobuf` as client-go's typed clients speak it: bodies, lists,
//! errors and watch streams for built-in kinds; custom resources refuse it as kube-apiserver does.

use bytes::Bytes;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use service_provider_apiserver::Cluster;
use service_provider_apiserver::protobuf::{self, MEDIA_TYPE, WATCH_MEDIA_TYPE};

use crate::common::{TIMEOUT, cluster, install_widgets};

/// One request with raw bytes: (status, content type, body).
async fn send(
    c: &Cluster,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, String, Bytes) {
    let mut req = http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = c
        .client()
        .send(req.body(body).unwrap().map(kube::client::Body::from))
        .await
        .unwrap();
    let code = resp.status().as_u16();
    let ct = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    (code, ct, bytes)
}

const CLIENT_GO: &[(&str, &str)] = &[
    (
        "accept",
        "application/vnd.kubernetes.protobuf, application/json",
    ),
    ("content-type", "application/vnd.kubernetes.protobuf"),
];

#[tokio::test]
async fn built_in_objects_lists_and_errors_in_protobuf() {
    let c = cluster().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "pb", "labels": {"a": "b"}}, "data": {"k": "v", "empty": ""}});
    let path = "/api/v1/namespaces/default/configmaps";
    let (code, ct, body) = send(
        &c,
        "POST",
        path,
        CLIENT_GO,
        protobuf::encode(&cm).unwrap().to_vec(),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    assert_eq!(ct, MEDIA_TYPE);
    let created = protobuf::decode(&body).unwrap();
    assert_eq!(created["data"], cm["data"]);
    assert_eq!(created["metadata"]["namespace"], "default");
    assert!(created["metadata"]["uid"].is_string(), "{created}");
    // What was stored is what a JSON client reads.
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(c.client());
    let got = api.get("pb").await.unwrap();
    assert_eq!(got.data.unwrap()["k"], "v");
    assert_eq!(
        got.metadata.creation_timestamp.map(|t| t.0.to_string()),
        created["metadata"]["creationTimestamp"]
            .as_str()
            .map(|t| t.parse::<jiff::Timestamp>().unwrap().to_string())
    );

    let (code, ct, body) = send(&c, "GET", path, CLIENT_GO, Vec::new()).await;
    assert_eq!((code, ct.as_str()), (200, MEDIA_TYPE));
    let list = protobuf::decode(&body).unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert!(names.contains(&"pb"), "{names:?}");
    assert!(list["metadata"]["resourceVersion"].is_string(), "{list}");

    // Errors are protobuf Status objects.
    let (code, ct, body) = send(&c, "GET", &format!("{path}/missing"), CLIENT_GO, Vec::new()).await;
    assert_eq!((code, ct.as_str()), (404, MEDIA_TYPE));
    let status = protobuf::decode(&body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["code"], 404);
    assert_eq!(status["details"]["name"], "missing");

    // A body that is not protobuf is a 400, as kube-apiserver's decoder answers.
    let (code, _, body) = send(&c, "POST", path, CLIENT_GO, b"{}".to_vec()).await;
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&body));

    // PartialObjectMetadata in protobuf (client-go's metadata informers).
    let meta = [(
        "accept",
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
    )];
    let (code, ct, body) = send(&c, "GET", path, &meta, Vec::new()).await;
    assert_eq!((code, ct.as_str()), (200, MEDIA_TYPE));
    let list = protobuf::decode(&body).unwrap();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i.get("data").is_none() && i["metadata"]["name"].is_string())
    );

    // DELETE with protobuf DeleteOptions (typed clients send their content type).
    let opts = json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
        "preconditions": {"uid": created["metadata"]["uid"]}});
    let (code, ct, body) = send(
        &c,
        "DELETE",
        &format!("{path}/pb"),
        CLIENT_GO,
        protobuf::encode(&opts).unwrap().to_vec(),
    )
    .await;
    assert_eq!(
        (code, ct.as_str()),
        (200, MEDIA_TYPE),
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(protobuf::decode(&body).unwrap()["status"], "Success");
}

#[tokio::test]
async fn watch_streams_are_length_prefixed_watch_events() {
    let c = cluster().await;
    let path = "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0&allowWatchBookmarks=true";
    let req = http::Request::builder()
        .uri(path)
        .header(
            "accept",
            "application/vnd.kubernetes.protobuf, application/json",
        )
        .body(Vec::new())
        .unwrap();
    let resp = c
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()[http::header::CONTENT_TYPE], WATCH_MEDIA_TYPE);
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(c.client());
    let cm = serde_json::from_value(json!({"metadata": {"name": "watched"}, "data": {"a": "1"}}))
        .unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();

    let mut body = resp.into_body();
    let mut buf: Vec<u8> = Vec::new();
    let found = tokio::time::timeout(TIMEOUT, async {
        loop {
            while let Some((ty, obj, rest)) = protobuf::next_watch_event(&buf).unwrap() {
                let hit = ty == "ADDED" && obj["metadata"]["name"] == "watched";
                let obj: Value = obj;
                buf = rest.to_vec();
                if hit {
                    return obj;
                }
            }
            let frame = http_body_util::BodyExt::frame(&mut body)
                .await
                .expect("the stream stays open")
                .unwrap();
            if let Ok(d) = frame.into_data() {
                buf.extend_from_slice(&d);
            }
        }
    })
    .await
    .expect("the ADDED event arrives");
    assert_eq!(found["kind"], "ConfigMap");
    assert_eq!(found["data"]["a"], "1");
}

#[tokio::test]
async fn custom_resources_are_json_only() {
    let c = cluster().await;
    install_widgets(&c.client()).await;
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let (code, ct, body) = send(&c, "GET", path, &[("accept", MEDIA_TYPE)], Vec::new()).await;
    assert_eq!((code, ct.as_str()), (406, "application/json"));
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status["reason"], "NotAcceptable");
    assert_eq!(
        status["message"],
        "only the following media types are accepted: application/json, application/yaml"
    );
    // client-go's default Accept falls back to JSON.
    let (code, ct, _) = send(&c, "GET", path, CLIENT_GO[..1].as_ref(), Vec::new()).await;
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    // A protobuf body is refused.
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    let (code, _, body) = send(
        &c,
        "POST",
        path,
        CLIENT_GO,
        serde_json::to_vec(&widget).unwrap(),
    )
    .await;
    assert_eq!(code, 415);
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status["reason"], "UnsupportedMediaType");
    // Metadata-only reads are protobuf for every kind.
    let meta = [(
        "accept",
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    )];
    let (code, ct, _) = send(&c, "GET", path, &meta, Vec::new()).await;
    assert_eq!((code, ct.as_str()), (200, MEDIA_TYPE));
}
