//! Declared deletion guards: kinds of the end user's objects that, while any of them exist in the
//! tenant's cluster, hold the uninstall (`deletion_guard(...)` in `#[service_provider]`).
//!
//! Before the author's `delete` runs, the runtime lists each guarded kind in the tenant's cluster
//! (the MCP in standard mode, the workspace in kcp mode). While one is present the object stays
//! Terminating with `DeletionBlocked=True`, reason [`REASON_USER_RESOURCES`], naming the first
//! objects; a kind whose CRD is not installed counts as none. While blocked, the runtime watches
//! the guarded kind there and reconciles the tenant again as soon as one is deleted, so the
//! uninstall goes on as the last one goes rather than at the next re-check.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event, watcher};

use crate::queue::Triggers;
use crate::tenant::Identity;
use crate::waits::WatchTask;

/// Reason of the `DeletionBlocked` condition while guarded objects remain (the Go template's and
/// the metrics-operator provider's reason for the same wait).
pub const REASON_USER_RESOURCES: &str = "UserResourcesPresent";

/// How many objects the blocked message names.
const NAMED: usize = 3;

/// One guarded kind: while the end user has an object of it (in `namespace`, matching `labels`,
/// when given), the provider is not uninstalled from their cluster.
///
/// Declared in the attribute, not built by hand:
/// `deletion_guard(group = "velero.io", version = "v1", kind = "Backup")`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeletionGuard {
    /// API group; `""` for the core group.
    pub group: &'static str,
    /// API version, e.g. `v1`.
    pub version: &'static str,
    /// Kind, e.g. `Backup`.
    pub kind: &'static str,
    /// Resource (plural) name, e.g. `backups`.
    pub plural: &'static str,
    /// Only objects in this namespace count; every namespace when `None`.
    pub namespace: Option<&'static str>,
    /// Only objects matching this label selector count, e.g. `app.kubernetes.io/managed-by=helm`.
    pub labels: Option<&'static str>,
}

impl DeletionGuard {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn api(&self, client: &kube::Client) -> Api<DynamicObject> {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group, self.version, self.kind),
            self.plural,
        );
        match self.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        }
    }

    /// The guarded objects in the cluster `client` reaches: their number and the first names.
    async fn remaining(&self, client: &kube::Client) -> Result<Remaining, kube::Error> {
        let mut params = ListParams::default().limit(NAMED as u32);
        if let Some(labels) = self.labels {
            params = params.labels(labels);
        }
        let list = match self.api(client).list(&params).await {
            Ok(list) => list,
            // The kind is not served (its CRD is gone or was never installed): none remain.
            Err(err) if crate::access::is_status(&err, 404) => return Ok(Remaining::default()),
            Err(err) => return Err(err),
        };
        let more = more_than_listed(&list.metadata);
        Ok(Remaining {
            names: list
                .items
                .iter()
                .map(|o| match (&o.metadata.namespace, &o.metadata.name) {
                    (Some(ns), Some(name)) => format!("{ns}/{name}"),
                    (None, Some(name)) => name.clone(),
                    _ => String::new(),
                })
                .collect(),
            more,
        })
    }

    fn blocked_message(&self, remaining: &Remaining) -> String {
        let mut message = format!(
            "{} {} object(s) ({}) remain in the cluster: {}",
            match remaining.more {
                Some(0) => format!("more than {}", remaining.names.len()),
                Some(n) => (remaining.names.len() + n).to_string(),
                None => remaining.names.len().to_string(),
            },
            self.kind,
            self.api_version(),
            remaining.names.join(", "),
        );
        match remaining.more {
            Some(0) => message.push_str(" and more"),
            Some(n) => {
                let _ = write!(message, " and {n} more");
            }
            None => {}
        }
        if let Some(ns) = self.namespace {
            let _ = write!(message, " (in namespace {ns})");
        }
        if let Some(labels) = self.labels {
            let _ = write!(message, " (labelled {labels})");
        }
        message.push_str("; delete them to uninstall");
        message
    }
}

/// How many more objects than a limited list returned exist: `Some(0)` when more exist but
/// their number is unknown. Only a non-empty `continue` says the list was cut short: a real
/// kube-apiserver answers a list that fits with `remainingItemCount: 0` and no `continue`.
fn more_than_listed(meta: &ListMeta) -> Option<usize> {
    let cut_short = meta.continue_.as_deref().is_some_and(|c| !c.is_empty());
    cut_short.then(|| {
        meta.remaining_item_count
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0)
    })
}

#[derive(Debug, Default)]
struct Remaining {
    names: Vec<String>,
    /// How many more than `names` exist: `Some(0)` when more exist but their number is unknown.
    more: Option<usize>,
}

impl Remaining {
    fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// The guards of every tenant being deleted: checks them, and keeps a watch on each guarded kind
/// that still holds a tenant's deletion.
#[derive(Default)]
pub(crate) struct Guards {
    watches: Mutex<HashMap<Identity, (&'static DeletionGuard, WatchTask)>>,
}

impl Guards {
    /// Checks `guards` in the tenant's cluster (`client`). `Some((reason, message))` while one
    /// holds the deletion: the tenant is reconciled again when an object of that kind is deleted.
    /// `None` once none does, and the tenant's watches end.
    pub(crate) async fn check(
        &self,
        id: &Identity,
        client: &kube::Client,
        guards: &'static [DeletionGuard],
        triggers: &Triggers,
    ) -> Result<Option<(String, String)>, crate::error::Error> {
        for guard in guards {
            let remaining = guard.remaining(client).await.map_err(|err| {
                crate::error::Error::from(err).context(format!(
                    "failed to list {} ({}) for the deletion guard",
                    guard.kind,
                    guard.api_version()
                ))
            })?;
            if remaining.is_empty() {
                continue;
            }
            self.watch(id, client, guard, triggers);
            return Ok(Some((
                REASON_USER_RESOURCES.to_owned(),
                guard.blocked_message(&remaining),
            )));
        }
        self.stop(id);
        Ok(None)
    }

    /// Watches `guard`'s kind for `id` unless it already does: every deletion reconciles `id`.
    /// One watch per tenant suffices: the guards are checked in order and the first that holds
    /// is the one whose deletions can release the tenant; another guard holding now replaces it.
    fn watch(
        &self,
        id: &Identity,
        client: &kube::Client,
        guard: &'static DeletionGuard,
        triggers: &Triggers,
    ) {
        let mut watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        if watches
            .get(id)
            .is_some_and(|(watched, _)| *watched == guard)
        {
            return;
        }
        let api = guard.api(client);
        let mut config = watcher::Config::default();
        if let Some(labels) = guard.labels {
            config = config.labels(labels);
        }
        let key = id.clone();
        let id = id.clone();
        let triggers = triggers.clone();
        let task = WatchTask::spawn(async move {
            let mut events = std::pin::pin!(watcher(api, config).default_backoff());
            while let Some(event) = events.next().await {
                match event {
                    // An object went, or the initial list is complete (one may have gone
                    // between the check and the watch): check again.
                    Ok(Event::Delete(_) | Event::InitDone) => triggers.trigger(id.clone()),
                    Ok(_) => {}
                    Err(err) => {
                        tracing::debug!(object = %id, error = %err, "deletion guard watch failed; retrying");
                    }
                }
            }
        });
        watches.insert(key, (guard, task));
    }

    /// `id`'s watches end (its guards no longer hold, or it is gone).
    pub(crate) fn stop(&self, id: &Identity) {
        let mut watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        watches.remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BACKUPS: DeletionGuard = DeletionGuard {
        group: "velero.io",
        version: "v1",
        kind: "Backup",
        plural: "backups",
        namespace: None,
        labels: None,
    };

    fn remaining(names: &[&str], more: Option<usize>) -> Remaining {
        Remaining {
            names: names.iter().map(|n| n.to_string()).collect(),
            more,
        }
    }

    #[test]
    fn only_a_list_cut_short_has_more() {
        let meta = |continue_: Option<&str>, remaining: Option<i64>| ListMeta {
            continue_: continue_.map(Into::into),
            remaining_item_count: remaining,
            ..ListMeta::default()
        };
        assert_eq!(more_than_listed(&meta(None, Some(0))), None);
        assert_eq!(more_than_listed(&meta(Some(""), None)), None);
        assert_eq!(more_than_listed(&meta(Some("token"), Some(4))), Some(4));
        assert_eq!(more_than_listed(&meta(Some("token"), None)), Some(0));
    }

    #[test]
    fn the_message_names_the_first_objects_and_counts_the_rest() {
        assert_eq!(
            BACKUPS.blocked_message(&remaining(&["velero/daily", "velero/weekly"], None)),
            "2 Backup object(s) (velero.io/v1) remain in the cluster: velero/daily, velero/weekly; \
             delete them to uninstall"
        );
        let many = BACKUPS.blocked_message(&remaining(&["a/1", "a/2", "a/3"], Some(4)));
        assert!(
            many.starts_with(
                "7 Backup object(s) (velero.io/v1) remain in the cluster: a/1, a/2, a/3 and 4 more;"
            ),
            "{many}"
        );
        let unknown = BACKUPS.blocked_message(&remaining(&["a/1", "a/2", "a/3"], Some(0)));
        assert!(unknown.starts_with("more than 3 Backup"), "{unknown}");
    }

    #[test]
    fn the_message_says_which_objects_count() {
        let scoped = DeletionGuard {
            group: "",
            namespace: Some("team"),
            labels: Some("app=db"),
            kind: "ConfigMap",
            plural: "configmaps",
            version: "v1",
        };
        assert_eq!(scoped.api_version(), "v1");
        let message = scoped.blocked_message(&remaining(&["team/a"], None));
        assert!(
            message.contains("(in namespace team) (labelled app=db)"),
            "{message}"
        );
    }
}
