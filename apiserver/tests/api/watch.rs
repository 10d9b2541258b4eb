//! watch: resume by resourceVersion, the per-resource watch window, bookmarks, 410 Expired,
//! restarts, selector transitions, streaming lists.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::common::*;

fn cm(name: &str, v: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("v".to_string(), v.to_string())])),
        ..Default::default()
    }
}

/// Creates `count` Leases `l0`, `l1`, … one after the other; returns the first.
async fn create_leases(leases: &Api<Lease>, count: usize) -> Lease {
    let mut first = None;
    for n in 0..count {
        let lease: Lease =
            serde_json::from_value(json!({"metadata": {"name": format!("l{n}")}})).unwrap();
        let created = leases.create(&PostParams::default(), &lease).await.unwrap();
        first.get_or_insert(created);
    }
    first.expect("at least one lease")
}

async fn next_event<K>(
    s: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin),
) -> WatchEvent<K> {
    tokio::time::timeout(TIMEOUT, s.next())
        .await
        .expect("event in time")
        .expect("stream open")
        .expect("no error")
}

#[tokio::test]
async fn watch_from_resource_version_replays_history() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let a = api
        .create(&PostParams::default(), &cm("a", "1"))
        .await
        .unwrap();
    let rv = a.resource_version().unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    api.create(&PostParams::default(), &cm("b", "1"))
        .await
        .unwrap();
    api.delete("a", &Default::default()).await.unwrap();

    let mut s = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    match next_event(&mut s).await {
        WatchEvent::Modified(o) => assert_eq!(
            (o.name_any(), o.data.unwrap()["v"].as_str()),
            ("a".to_string(), "2")
        ),
        e => panic!("unexpected {e:?}"),
    }
    assert!(matches!(next_event(&mut s).await, WatchEvent::Added(o) if o.name_any() == "b"));
    match next_event(&mut s).await {
        WatchEvent::Deleted(o) => {
            assert_eq!(o.name_any(), "a");
            assert!(
                o.resource_version().unwrap().parse::<u64>().unwrap() > rv.parse::<u64>().unwrap()
            );
        }
        e => panic!("unexpected {e:?}"),
    }
    // Live events follow.
    api.create(&PostParams::default(), &cm("c", "1"))
        .await
        .unwrap();
    assert!(matches!(next_event(&mut s).await, WatchEvent::Added(o) if o.name_any() == "c"));
}

#[tokio::test]
async fn too_old_resource_version_is_410_and_watcher_relists() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let a = api
        .create(&PostParams::default(), &cm("a", "1"))
        .await
        .unwrap();
    let old_rv = a.resource_version().unwrap();
    api.create(&PostParams::default(), &cm("b", "1"))
        .await
        .unwrap();
    c.expire_resource_versions();
    let mut s = api
        .watch(&WatchParams::default(), &old_rv)
        .await
        .unwrap()
        .boxed();
    match next_event(&mut s).await {
        WatchEvent::Error(e) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        e => panic!("expected 410, got {e:?}"),
    }

    // kube-runtime's watcher copes: a 410 makes it relist and it still sees every object.
    c.set_history(3);
    let stream = watcher::watcher(api.clone(), watcher::Config::default()).applied_objects();
    futures::pin_mut!(stream);
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 3 {
        let o = tokio::time::timeout(TIMEOUT, stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.insert(o.name_any());
    }
    // Many writes overflow the small history; the watcher keeps up (re-listing when it must).
    for i in 0..20 {
        api.create(&PostParams::default(), &cm(&format!("n{i}"), "1"))
            .await
            .unwrap();
    }
    c.expire_resource_versions();
    c.drop_watches();
    api.create(&PostParams::default(), &cm("last", "1"))
        .await
        .unwrap();
    // The watcher reports the 410 as an error item, then relists on its next poll.
    let mut saw_expired = false;
    loop {
        match tokio::time::timeout(TIMEOUT, stream.next())
            .await
            .unwrap()
            .unwrap()
        {
            Ok(o) if o.name_any() == "last" => break,
            Ok(_) => {}
            Err(watcher::Error::WatchError(s)) if s.code == 410 => saw_expired = true,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert!(saw_expired);
}

#[tokio::test]
async fn watch_resumes_after_restart() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let stream = watcher::watcher(api.clone(), watcher::Config::default()).applied_objects();
    futures::pin_mut!(stream);
    api.create(&PostParams::default(), &cm("before", "1"))
        .await
        .unwrap();
    loop {
        let o = tokio::time::timeout(TIMEOUT, stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if o.name_any() == "before" {
            break;
        }
    }
    c.restart().await.unwrap();
    // A client made after the restart writes; the old watcher reconnects and sees it.
    let api2: Api<ConfigMap> = Api::default_namespaced(c.client());
    api2.create(&PostParams::default(), &cm("after", "1"))
        .await
        .unwrap();
    loop {
        let next = tokio::time::timeout(TIMEOUT, stream.next())
            .await
            .expect("event in time");
        match next {
            Some(Ok(o)) if o.name_any() == "after" => break,
            Some(_) => continue,
            None => panic!("watcher ended"),
        }
    }
    assert_eq!(
        api2.get("before").await.unwrap().data.unwrap()["v"],
        "1",
        "storage survives a restart"
    );
}

#[tokio::test]
async fn stop_and_start_refuse_then_serve_again() {
    let c = cluster().await;
    let mut cfg = c.config();
    cfg.default_retry = false;
    cfg.connect_timeout = Some(std::time::Duration::from_secs(2));
    let api: Api<ConfigMap> = Api::default_namespaced(kube::Client::try_from(cfg).unwrap());
    api.create(&PostParams::default(), &cm("x", "1"))
        .await
        .unwrap();
    let url = c.url();
    c.stop().await;
    assert!(!c.is_running());
    assert!(
        api.get("x").await.is_err(),
        "a stopped cluster refuses connections"
    );
    c.start().await.unwrap();
    assert_eq!(c.url(), url);
    assert_eq!(api.get("x").await.unwrap().name_any(), "x");
}

#[tokio::test]
async fn bookmarks_and_timeouts() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let a = api
        .create(&PostParams::default(), &cm("a", "1"))
        .await
        .unwrap();
    // A watch with a timeout ends by itself.
    let s = api
        .watch(
            &WatchParams::default().timeout(1),
            &a.resource_version().unwrap(),
        )
        .await
        .unwrap();
    let events: Vec<_> = tokio::time::timeout(TIMEOUT, s.collect::<Vec<_>>())
        .await
        .expect("the watch ends at its timeout");
    assert!(events.is_empty());
    // Bookmarks carry a resourceVersion and nothing else, and come at kube-apiserver's cadence:
    // about once a minute and 2 s before the watch's timeout — so a 12 s watch gets exactly one
    // (it used to get one every 5 s), and it comes before the stream ends.
    let s = api
        .watch(
            &WatchParams {
                bookmarks: true,
                ..WatchParams::default()
            }
            .timeout(12),
            &a.resource_version().unwrap(),
        )
        .await
        .unwrap();
    let events: Vec<_> = tokio::time::timeout(TIMEOUT * 3, s.collect::<Vec<_>>())
        .await
        .expect("the watch ends at its timeout");
    assert_eq!(events.len(), 1, "{events:?}");
    match &events[0] {
        Ok(WatchEvent::Bookmark(b)) => assert!(
            b.metadata.resource_version.parse::<u64>().unwrap()
                >= a.resource_version().unwrap().parse::<u64>().unwrap()
        ),
        e => panic!("expected a bookmark, got {e:?}"),
    }
}

#[tokio::test]
async fn label_selector_watch_sees_objects_enter_and_leave() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let a = api
        .create(&PostParams::default(), &cm("a", "1"))
        .await
        .unwrap();
    let mut s = api
        .watch(
            &WatchParams::default().labels("sel=yes"),
            &a.resource_version().unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"sel": "yes"}}})),
    )
    .await
    .unwrap();
    assert!(matches!(next_event(&mut s).await, WatchEvent::Added(o) if o.name_any() == "a"));
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    assert!(matches!(next_event(&mut s).await, WatchEvent::Modified(_)));
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"sel": "no"}}})),
    )
    .await
    .unwrap();
    assert!(matches!(next_event(&mut s).await, WatchEvent::Deleted(o) if o.name_any() == "a"));
}

#[tokio::test]
async fn streaming_list_initial_events() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    api.create(&PostParams::default(), &cm("a", "1"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("b", "1"))
        .await
        .unwrap();
    let stream = watcher::watcher(api.clone(), watcher::Config::default().streaming_lists())
        .default_backoff();
    futures::pin_mut!(stream);
    let mut init = Vec::new();
    loop {
        match tokio::time::timeout(TIMEOUT, stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            Event::Init => {}
            Event::InitApply(o) => init.push(o.name_any()),
            Event::InitDone => break,
            e => panic!("unexpected {e:?}"),
        }
    }
    init.sort();
    assert_eq!(init, ["a", "b", "kube-root-ca.crt"]);
    api.create(&PostParams::default(), &cm("c", "1"))
        .await
        .unwrap();
    match tokio::time::timeout(TIMEOUT, stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
    {
        Event::Apply(o) => assert_eq!(o.name_any(), "c"),
        e => panic!("unexpected {e:?}"),
    }
}

/// The watch window is per resource, as kube-apiserver's watch cache: a client resuming from a
/// version its resource's window no longer reaches gets 410 Expired — no fault injected — while
/// another resource's window is untouched by the first one's writes.
#[tokio::test]
async fn resuming_from_before_the_watch_window_is_410() {
    let c = service_provider_apiserver::ApiServer::start_with(
        "window",
        service_provider_apiserver::ClusterOptions::default()
            .watch_window(3, std::time::Duration::ZERO),
    )
    .await
    .unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let leases: Api<Lease> = Api::default_namespaced(c.client());
    let first = cms
        .create(&PostParams::default(), &cm("first", "1"))
        .await
        .unwrap();
    let l0 = create_leases(&leases, 6).await;
    // Leases keep their 3 newest events: resuming from the first lease is too old.
    let mut s = leases
        .watch(&WatchParams::default(), &l0.resource_version().unwrap())
        .await
        .unwrap()
        .boxed();
    match next_event(&mut s).await {
        WatchEvent::Error(e) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        e => panic!("expected 410, got {e:?}"),
    }
    // ConfigMaps' window still reaches back before all those lease writes.
    cms.create(&PostParams::default(), &cm("second", "1"))
        .await
        .unwrap();
    let mut s = cms
        .watch(&WatchParams::default(), &first.resource_version().unwrap())
        .await
        .unwrap()
        .boxed();
    match next_event(&mut s).await {
        WatchEvent::Added(o) => assert_eq!(o.name_any(), "second"),
        e => panic!("expected the second ConfigMap, got {e:?}"),
    }
}

/// With kube-apiserver's default window, a burst of writes stays resumable: events younger than
/// 75 s are all kept.
#[tokio::test]
async fn a_burst_stays_inside_the_default_watch_window() {
    let c = cluster().await;
    let leases: Api<Lease> = Api::default_namespaced(c.client());
    let l0 = create_leases(&leases, 150).await;
    let mut s = leases
        .watch(&WatchParams::default(), &l0.resource_version().unwrap())
        .await
        .unwrap()
        .boxed();
    match next_event(&mut s).await {
        WatchEvent::Added(o) => assert_eq!(o.name_any(), "l1"),
        e => panic!("expected the second lease, got {e:?}"),
    }
}
