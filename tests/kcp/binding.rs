//! A consumer deletes its APIBinding while the provider is installing its object: kcp deletes the
//! bound objects, the runtime runs the delete path (the author's `delete`, workload access,
//! workspace credential, finalizer), the binding goes, the workspace is disengaged — and no access
//! is left behind.

use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use serde_json::json;
use service_provider::kube::Api;
use service_provider::kube::api::{DeleteParams, ListParams, ObjectMeta};
use service_provider::openmcp::AccessRequest;
use service_provider::prelude::*;
use service_provider::testing::{TestError, eventually};
use service_provider_runtime::kcp_api::v1alpha2::APIBinding;
use tokio::sync::Semaphore;

use crate::support::{self, TIMEOUT};

/// Install steps that reached the gate.
static ENTERED: AtomicUsize = AtomicUsize::new(0);
/// Uninstalls that finished.
static DELETED: AtomicUsize = AtomicUsize::new(0);
/// Install steps wait here until the test lets them through.
static GATE: Semaphore = Semaphore::const_new(0);

/// A provider whose install puts a ConfigMap on the workload cluster and then waits for the test.
#[service_provider(
    group = "gated.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "Gated",
    workload_cluster = required,
    kcp
)]
pub(crate) struct GatedSpec {
    /// Anything.
    #[serde(default)]
    pub value: String,
}

fn marker(cx: &Context<Gated>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("gated-{}", cx.identity().stable_id())),
            namespace: Some("default".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

impl Reconcile for Gated {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
        let mut set = cx.apply_set(
            cx.workload(),
            format!("gated-{}", cx.identity().stable_id()),
        );
        set.add(&marker(cx))?;
        set.apply().await?;
        ENTERED.fetch_add(1, Ordering::SeqCst);
        GATE.acquire().await.map_err(Error::transient)?.forget();
        Ok(Outcome::ready())
    }

    async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {
        cx.apply_set(
            cx.workload(),
            format!("gated-{}", cx.identity().stable_id()),
        )
        .delete()
        .await?;
        DELETED.fetch_add(1, Ordering::SeqCst);
        Ok(Deletion::done())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_deleted_during_the_install_leaves_no_access_behind() -> Result<(), TestError> {
    let platform = support::platform::<Gated>(json!({ "pollInterval": "1m" }))
        .modes([Mode::Kcp])
        .start()
        .await?;
    let env = platform.env();
    let ws = platform
        .create_kcp_tenant("gated", json!({ "value": "x" }))
        .await?;
    let cluster = crate::workspace_cluster(&ws).to_owned();
    eventually("the install to start", TIMEOUT, || async {
        (ENTERED.load(Ordering::SeqCst) > 0).then_some(())
    })
    .await?;
    let workload = env
        .workload_clusters()
        .into_iter()
        .next()
        .expect("a workload cluster");
    let markers: Api<ConfigMap> = Api::namespaced(workload.client(), "default");
    let installed = markers.list(&ListParams::default()).await.unwrap();
    assert!(installed.items.iter().any(|c| {
        c.metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with("gated-"))
    }));
    let admin = ws.mcp().client();
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "openmcp-system");
    assert!(
        sas.get_opt("gated").await.unwrap().is_some(),
        "the install had access"
    );

    // The end user unbinds the export mid-install.
    let export = env.kcp().unwrap().export_name().unwrap().to_owned();
    let bindings: Api<APIBinding> = Api::all(admin.clone());
    bindings
        .delete(&export, &DeleteParams::default())
        .await
        .unwrap();
    // The install finishes (its result no longer matters); every later one passes at once.
    GATE.add_permits(1000);

    support::wait(&bindings, &export, |o: Option<&APIBinding>| o.is_none()).await;
    let source = platform.kcp_source().expect("kcp mode runs");
    eventually("the workspace to be disengaged", TIMEOUT, || async {
        (!source.is_engaged(&cluster)).then_some(())
    })
    .await?;
    assert!(
        sas.get_opt("gated").await.unwrap().is_none(),
        "the ServiceAccount is revoked"
    );
    // The author's delete ran; with its only tenant gone the workload cluster itself may have
    // been given back as well.
    let leftovers: Vec<String> = match markers.list(&ListParams::default()).await {
        Ok(list) => list
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .filter(|n| n.starts_with("gated-"))
            .collect(),
        Err(service_provider::kube::Error::Api(s)) if s.code == 404 => Vec::new(),
        // A real kube-apiserver is stopped with its cluster, not answering 404.
        Err(_) if workload.is_shut_down() => Vec::new(),
        Err(err) => panic!("listing the workload cluster: {err}"),
    };
    assert_eq!(leftovers, Vec::<String>::new(), "the author's delete ran");
    assert_eq!(
        DELETED.load(Ordering::SeqCst),
        1,
        "the author's delete ran once"
    );
    let requests = Api::<AccessRequest>::all(env.platform().client())
        .list(&ListParams::default().labels("openmcp.cloud/managed-by=gated"))
        .await
        .unwrap();
    assert_eq!(requests.items.len(), 0, "no AccessRequest left");
    assert_eq!(
        service_provider_runtime::controller::Source::keys(source),
        Vec::<service_provider::Identity>::new(),
        "nothing left to reconcile"
    );
    platform.stop().await;
    Ok(())
}
