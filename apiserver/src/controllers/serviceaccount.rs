//! Per-namespace defaults kube-controller-manager maintains: the `default` ServiceAccount and the
//! `kube-root-ca.crt` ConfigMap with the cluster's CA.

use std::sync::Arc;

use serde_json::json;

use crate::shard::Shard;
use crate::storage;
use crate::store::{Event, EventType, WatchFilter};

/// Ensures the defaults in every active namespace, re-creating them when deleted.
pub(crate) struct NamespaceDefaults;

pub(crate) fn start(shard: &Arc<Shard>) {
    super::spawn(shard, WatchFilter::default(), NamespaceDefaults);
}

fn ensure(shard: &Shard, cluster: &Arc<str>, ns: &str) {
    if shard.namespace_phase(cluster, ns) != Some(false) {
        return;
    }
    let api = shard.api(cluster);
    let sas = storage::core("serviceaccounts");
    if api.get(&sas, ns, "default").is_err() {
        let _ = api.create(
            &sas,
            ns,
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
        );
    }
    if let Some(ca) = &shard.options().root_ca_pem {
        let cms = storage::core("configmaps");
        if api.get(&cms, ns, "kube-root-ca.crt").is_err() {
            let _ = api.create(
                &cms,
                ns,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt"}, "data": {"ca.crt": ca}}),
            );
        }
    }
}

impl super::Reconciler for NamespaceDefaults {
    fn event(&mut self, shard: &Shard, ev: &Event) {
        let store = &*ev.resource.0;
        let key = &ev.object.key;
        match (store, ev.kind) {
            ("/namespaces", EventType::Added) => ensure(shard, &key.cluster, &key.name),
            ("/serviceaccounts", EventType::Deleted) if &*key.name == "default" => {
                ensure(shard, &key.cluster, &key.namespace)
            }
            ("/configmaps", EventType::Deleted) if &*key.name == "kube-root-ca.crt" => {
                ensure(shard, &key.cluster, &key.namespace)
            }
            _ => {}
        }
    }
}
