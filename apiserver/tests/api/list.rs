//! list semantics clients depend on: pages served from the first page's snapshot,
//! `remainingItemCount`, `resourceVersion` + `resourceVersionMatch` and kube-apiserver's refusals
//! of invalid combinations.

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{ListParams, ObjectList, PostParams, VersionMatch};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::common::*;

fn lease(name: &str, holder: &str) -> Lease {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"holderIdentity": holder},
    }))
    .unwrap()
}

fn names(l: &ObjectList<Lease>) -> Vec<String> {
    l.items.iter().map(ResourceExt::name_any).collect()
}

fn holder(l: &ObjectList<Lease>, name: &str) -> Option<String> {
    l.items
        .iter()
        .find(|o| o.name_any() == name)
        .and_then(|o| o.spec.as_ref()?.holder_identity.clone())
}

/// A GET of `path` that must fail; its Status.
async fn refused(c: &service_provider_apiserver::Cluster, path: &str) -> kube::core::Status {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    match c.client().request::<Value>(req).await {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("{path}: expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn pages_come_from_the_first_pages_snapshot() {
    let c = cluster().await;
    let api: Api<Lease> = Api::default_namespaced(c.client());
    for n in ["a", "b", "c", "d"] {
        api.create(&PostParams::default(), &lease(n, "one"))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(names(&first), ["a", "b"]);
    assert_eq!(first.metadata.remaining_item_count, Some(2));
    let token = first.metadata.continue_.clone().expect("a continue token");
    // Between the pages: an object is created, one deleted, one changed.
    api.create(&PostParams::default(), &lease("bb", "one"))
        .await
        .unwrap();
    api.delete("c", &Default::default()).await.unwrap();
    let mut d = api.get("d").await.unwrap();
    d.spec.as_mut().unwrap().holder_identity = Some("two".into());
    api.replace("d", &PostParams::default(), &d).await.unwrap();

    let second = api
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(&second), ["c", "d"], "the first page's snapshot");
    assert_eq!(holder(&second, "d").as_deref(), Some("one"));
    assert_eq!(
        second.metadata.resource_version, first.metadata.resource_version,
        "every page reports the snapshot's version"
    );
    assert_eq!(second.metadata.continue_, None);
    assert_eq!(second.metadata.remaining_item_count, None);

    // A new list sees the changes; a filtered page does not count what follows it.
    let now = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&now), ["a", "b", "bb", "d"]);
    assert_eq!(holder(&now, "d").as_deref(), Some("two"));
    let filtered = api
        .list(
            &ListParams::default()
                .limit(1)
                .fields("metadata.namespace=default"),
        )
        .await
        .unwrap();
    assert!(filtered.metadata.continue_.is_some());
    assert_eq!(filtered.metadata.remaining_item_count, None);
}

#[tokio::test]
async fn resource_version_match_reads_exact_or_not_older_than() {
    let c = cluster().await;
    let api: Api<Lease> = Api::default_namespaced(c.client());
    let a = api
        .create(&PostParams::default(), &lease("a", "one"))
        .await
        .unwrap();
    let at_a = a.resource_version().unwrap();
    api.create(&PostParams::default(), &lease("b", "one"))
        .await
        .unwrap();
    let lp = |rv: &str, m: Option<VersionMatch>| ListParams {
        resource_version: Some(rv.into()),
        version_match: m,
        ..ListParams::default()
    };
    // Exact: the state at that version.
    let exact = api
        .list(&lp(&at_a, Some(VersionMatch::Exact)))
        .await
        .unwrap();
    assert_eq!(names(&exact), ["a"]);
    assert_eq!(exact.metadata.resource_version.as_deref(), Some(&*at_a));
    // A paginated list at a version without a match is exact too (etcd3's legacy behaviour).
    let legacy = api.list(&lp(&at_a, None).limit(5)).await.unwrap();
    assert_eq!(names(&legacy), ["a"]);
    // NotOlderThan: the current state.
    let newer = api
        .list(&lp(&at_a, Some(VersionMatch::NotOlderThan)))
        .await
        .unwrap();
    assert_eq!(names(&newer), ["a", "b"]);
    // A version the server has not reached: 504 with ResourceVersionTooLarge (asked without
    // kube's retries, which would wait out the Retry-After).
    let mut cfg = c.config();
    cfg.default_retry = false;
    let once: Api<Lease> = Api::default_namespaced(kube::Client::try_from(cfg).unwrap());
    let future = (newer
        .metadata
        .resource_version
        .unwrap()
        .parse::<u64>()
        .unwrap()
        + 1000)
        .to_string();
    for m in [VersionMatch::Exact, VersionMatch::NotOlderThan] {
        match once.list(&lp(&future, Some(m))).await.unwrap_err() {
            kube::Error::Api(s) => {
                assert_eq!((s.code, s.reason.as_str()), (504, "Timeout"), "{s:?}");
                assert!(
                    s.message.starts_with("Too large resource version"),
                    "{}",
                    s.message
                );
            }
            e => panic!("expected 504, got {e:?}"),
        }
    }
    // Once the history no longer reaches back to it, an exact version is gone.
    c.set_history(1);
    api.create(&PostParams::default(), &lease("c", "one"))
        .await
        .unwrap();
    match api
        .list(&lp(&at_a, Some(VersionMatch::Exact)))
        .await
        .unwrap_err()
    {
        kube::Error::Api(s) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            assert_eq!(
                s.message,
                "The resourceVersion for the provided list is too old."
            );
        }
        e => panic!("expected 410, got {e:?}"),
    }
}

#[tokio::test]
async fn an_expired_continue_token_is_410() {
    let c = cluster().await;
    let api: Api<Lease> = Api::default_namespaced(c.client());
    for n in ["a", "b", "c"] {
        api.create(&PostParams::default(), &lease(n, "one"))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    let token = first.metadata.continue_.unwrap();
    c.set_history(1);
    api.create(&PostParams::default(), &lease("d", "one"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &lease("e", "one"))
        .await
        .unwrap();
    match api
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap_err()
    {
        kube::Error::Api(s) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            assert!(
                s.message
                    .starts_with("The provided continue parameter is too old"),
                "{}",
                s.message
            );
        }
        e => panic!("expected 410, got {e:?}"),
    }
}

#[tokio::test]
async fn invalid_list_options_are_refused_as_kube_apiserver_does() {
    let c = cluster().await;
    let base = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    for (query, field, message) in [
        (
            "resourceVersionMatch=Exact",
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "resourceVersion=1&resourceVersionMatch=Newest",
            "resourceVersionMatch",
            "Unsupported value: \"Newest\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
        ),
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ),
        (
            "resourceVersion=0&resourceVersionMatch=NotOlderThan&continue=x",
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden when continue is provided",
        ),
        (
            "sendInitialEvents=true",
            "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for list",
        ),
    ] {
        let s = refused(&c, &format!("{base}?{query}")).await;
        assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{query}");
        assert_eq!(
            s.message,
            format!("ListOptions.meta.k8s.io \"\" is invalid: {field}: {message}"),
            "{query}"
        );
        let causes = s.details.unwrap().causes;
        assert_eq!(causes.len(), 1, "{query}");
        assert_eq!(causes[0].field, field);
    }
    // A continue token carries its own version.
    let api: Api<Lease> = Api::default_namespaced(c.client());
    for n in ["a", "b"] {
        api.create(&PostParams::default(), &lease(n, "one"))
            .await
            .unwrap();
    }
    let token = api
        .list(&ListParams::default().limit(1))
        .await
        .unwrap()
        .metadata
        .continue_
        .unwrap();
    let s = refused(
        &c,
        &format!("{base}?limit=1&resourceVersion=5&continue={token}"),
    )
    .await;
    assert_eq!(
        (s.code, s.message.as_str()),
        (
            400,
            "specifying resource version is not allowed when using continue"
        )
    );
}
