//! Per-workspace credentials: the ServiceAccount the runtime keeps in each consumer workspace and
//! the tokens it mints for it, or the kubeconfig the platform supplies instead.
//!
//! Minting (the default) works like this, for workspace `C` and provider `velero`:
//!
//! 1. Through the virtual workspace, under the export's permission claims: ServiceAccount
//!    `openmcp-system/velero` (the namespace is created when missing), ClusterRoleBinding
//!    `openmcp:velero:workspace-admin` giving it `cluster-admin` in `C`, and ClusterRole +
//!    ClusterRoleBinding `openmcp:velero:token-minter` letting the provider's own identity
//!    create tokens for that ServiceAccount (and enter the workspace). Existing objects are
//!    kept. This happens once per workspace and process.
//! 2. A TokenRequest at `<front>/clusters/C` (the virtual workspace has no token subresource), as
//!    the provider. The token goes into the kubeconfig `cx.mcp()` returns; it works in `C` only.
//! 3. At 80% of the token's lifetime the owner is reconciled and a new token minted; a 401 on the
//!    workspace client drops the token at once and the next reconcile mints one (re-creating
//!    the ServiceAccount if it was deleted).
//! 4. Teardown deletes the ServiceAccount (every token stops working) and the RBAC objects.
//!
//! One token per workspace until it is refreshed: a reconcile that finds a valid token makes no
//! API call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use tokio::time::Instant;

use crate::access::clients::ScopedService;
use crate::access::{AccessState, KubeconfigStore, is_status};
use crate::cache::ObjectKey;
use crate::error::Error;
use crate::modes::kcp::guard::{OnUnauthorized, guarded_client};
use crate::modes::kcp::provider_workspace::{ProviderWorkspace, Subject};
use crate::modes::kcp::settings::WorkspaceCredentials;
use crate::openmcp::constants::MANAGED_BY_LABEL;
use crate::queue::{BackoffPolicy, Queue, Requeue};
use crate::tenant::{ClusterAccess, Identity};

/// Namespace of the runtime's ServiceAccount in each consumer workspace.
pub const ACCESS_NAMESPACE: &str = "openmcp-system";

/// Names of what the runtime creates in a workspace for provider `provider`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessNames {
    /// The ServiceAccount (in [`ACCESS_NAMESPACE`]): the provider name.
    pub service_account: String,
    /// ClusterRoleBinding of the ServiceAccount to `cluster-admin`.
    pub admin_binding: String,
    /// ClusterRole and ClusterRoleBinding letting the provider mint the ServiceAccount's tokens.
    pub minter: String,
}

impl AccessNames {
    /// The names for `provider`.
    pub fn new(provider: &str) -> Self {
        AccessNames {
            service_account: provider.to_owned(),
            admin_binding: format!("openmcp:{provider}:workspace-admin"),
            minter: format!("openmcp:{provider}:token-minter"),
        }
    }

    /// The ServiceAccount's user name.
    pub fn user(&self) -> String {
        format!(
            "system:serviceaccount:{ACCESS_NAMESPACE}:{}",
            self.service_account
        )
    }
}

#[derive(Clone)]
struct Minted {
    token: Arc<str>,
    refresh_at: Instant,
}

#[derive(Default)]
struct Slot {
    minted: Option<Minted>,
    /// The ServiceAccount and RBAC exist (as far as this process knows).
    bootstrapped: bool,
    /// Teardown finished; nothing is left in the workspace.
    released: bool,
}

/// Credentials of every workspace this replica serves. Cheap to share (`Arc`).
pub struct Credentials {
    provider: Arc<ProviderWorkspace>,
    names: AccessNames,
    provider_name: String,
    mode: WorkspaceCredentials,
    kubeconfigs: KubeconfigStore,
    slots: Mutex<HashMap<String, Slot>>,
    /// Workspaces by when their token falls due for refresh.
    refresh: Queue<String>,
    minted: AtomicU64,
}

impl Credentials {
    /// Credentials for `provider_name`'s workspaces, obtained as `mode` says (`kubeconfigs` reads
    /// platform-supplied Secrets).
    pub fn new(
        provider: Arc<ProviderWorkspace>,
        provider_name: &str,
        mode: WorkspaceCredentials,
        kubeconfigs: KubeconfigStore,
    ) -> Self {
        Credentials {
            provider,
            names: AccessNames::new(provider_name),
            provider_name: provider_name.to_owned(),
            mode,
            kubeconfigs,
            slots: Mutex::new(HashMap::new()),
            refresh: Queue::new(BackoffPolicy::default()),
            minted: AtomicU64::new(0),
        }
    }

    fn slots(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many tokens this process minted.
    pub fn minted(&self) -> u64 {
        self.minted.load(Ordering::Relaxed)
    }

    /// The names of what the runtime creates in each workspace.
    pub fn names(&self) -> &AccessNames {
        &self.names
    }

    /// Calls `due` with each workspace as its token falls due for refresh, until dropped.
    pub async fn run_refresh(&self, due: impl Fn(&str)) {
        while let Some(cluster) = self.refresh.next().await {
            due(&cluster);
            self.refresh.done(&cluster, Requeue::Never);
        }
    }

    /// Access to workspace `cluster` for `owner`: from a valid token without any API call, else
    /// by minting one (`vw` makes the virtual-workspace client for the set-up). An unreachable
    /// workspace (no longer bound) gets whatever token is left, or none. `on_unauthorized` runs
    /// when the workspace answers 401 to the token handed out.
    pub async fn access(
        &self,
        cluster: &str,
        owner: &Identity,
        reachable: bool,
        vw: impl Fn() -> kube::Client,
        on_unauthorized: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<AccessState, Error> {
        if let WorkspaceCredentials::Secret { namespace } = &self.mode {
            let key = ObjectKey::new(namespace, WorkspaceCredentials::secret_name(cluster));
            return match self.kubeconfigs.access(&key, owner).await {
                Ok(Some(access)) => {
                    self.slots().entry(cluster.to_owned()).or_default().released = false;
                    Ok(AccessState::Ready(access))
                }
                Ok(None) => Ok(AccessState::Waiting {
                    message: format!(
                        "waiting for Secret {key} with the kubeconfig of workspace {cluster} from the platform"
                    ),
                }),
                Err(err) => Err(Error::transient(err)),
            };
        }
        let current = self.slots().get(cluster).and_then(|s| s.minted.clone());
        let minted = match current {
            Some(m) if Instant::now() < m.refresh_at || !reachable => m,
            _ if !reachable => {
                return Ok(AccessState::Denied {
                    message: format!("workspace {cluster} is no longer bound to the export"),
                });
            }
            _ => self.mint(cluster, &vw).await?,
        };
        let token = minted.token.clone();
        let on_unauthorized: OnUnauthorized = {
            let token = token.clone();
            Arc::new(move || on_unauthorized(&token))
        };
        let client = guarded_client(
            ScopedService::new(
                self.provider.anonymous_front(),
                &format!("/clusters/{cluster}"),
                Some(&token),
            ),
            cluster,
            on_unauthorized,
        );
        let kubeconfig = self
            .provider
            .kubeconfig(cluster, &self.names.user(), &token);
        Ok(AccessState::Ready(ClusterAccess::new(
            client, kubeconfig, None,
        )))
    }

    /// Drops `token` of `cluster` after a 401, unless a newer one replaced it already; true when
    /// it was dropped.
    pub fn invalidate(&self, cluster: &str, token: &str) -> bool {
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(cluster) else {
            return false;
        };
        if slot.minted.as_ref().is_some_and(|m| &*m.token == token) {
            slot.minted = None;
            tracing::info!(
                workspace = cluster,
                "the workspace refused its token (401); a new one is minted on the next reconcile"
            );
            true
        } else {
            false
        }
    }

    /// Whether a token for `cluster` is at hand.
    pub fn has_token(&self, cluster: &str) -> bool {
        self.slots()
            .get(cluster)
            .is_some_and(|s| s.minted.is_some())
    }

    /// Whether the workspace's access was given back already.
    pub fn released(&self, cluster: &str) -> bool {
        self.slots().get(cluster).is_some_and(|s| s.released)
    }

    /// Gives the workspace's access back: deletes the ServiceAccount (revoking every token) and
    /// the RBAC objects, through the virtual workspace (`vw`, `None` when the workspace is no
    /// longer bound), else with the workspace's own token. True once done.
    pub async fn release(&self, cluster: &str, vw: Option<kube::Client>) -> Result<bool, Error> {
        if !matches!(self.mode, WorkspaceCredentials::Mint { .. }) {
            // The platform owns supplied credentials.
            self.slots().entry(cluster.to_owned()).or_default().released = true;
            return Ok(true);
        }
        let (released, token) = {
            let slots = self.slots();
            let slot = slots.get(cluster);
            (
                slot.is_some_and(|s| s.released),
                slot.and_then(|s| s.minted.as_ref().map(|m| m.token.clone())),
            )
        };
        if released {
            return Ok(true);
        }
        self.refresh.forget(&cluster.to_owned());
        let mut through_vw = false;
        if let Some(vw) = vw {
            match self.delete_all(&vw, true).await {
                Ok(()) => through_vw = true,
                // The workspace is not bound any more: fall back to its own token.
                Err(err) if is_status(&err, 403) => {}
                Err(err) => {
                    return Err(Error::transient(err)
                        .context(format!("revoking the access to workspace {cluster}")));
                }
            }
        }
        if !through_vw {
            match token {
                Some(token) => {
                    // The ServiceAccount deletes its own grants, then itself; its admin binding
                    // cannot outlive it and stays (it names a ServiceAccount that is gone).
                    let client = self.provider.token_client(cluster, &token);
                    if let Err(err) = self.delete_all(&client, false).await
                        && !is_status(&err, 401)
                    {
                        return Err(Error::transient(err)
                            .context(format!("revoking the access to workspace {cluster}")));
                    }
                }
                None => tracing::warn!(
                    workspace = cluster,
                    service_account = %self.names.user(),
                    "cannot revoke the workspace's ServiceAccount: the workspace is no longer bound and no token is left; delete it there by hand"
                ),
            }
        }
        let mut slots = self.slots();
        let slot = slots.entry(cluster.to_owned()).or_default();
        slot.minted = None;
        slot.bootstrapped = false;
        slot.released = true;
        tracing::info!(workspace = cluster, "revoked the workspace access");
        Ok(true)
    }

    /// Forgets workspace `cluster` (no object there is served any more).
    pub fn forget(&self, cluster: &str) {
        self.refresh.forget(&cluster.to_owned());
        self.slots().remove(cluster);
    }

    async fn mint(&self, cluster: &str, vw: &impl Fn() -> kube::Client) -> Result<Minted, Error> {
        let WorkspaceCredentials::Mint { lifetime } = &self.mode else {
            return Err(Error::transient_msg("minting is off"));
        };
        for attempt in 0..2 {
            let bootstrapped = self.slots().get(cluster).is_some_and(|s| s.bootstrapped);
            if !bootstrapped {
                self.bootstrap(cluster, &vw()).await?;
                let mut slots = self.slots();
                let slot = slots.entry(cluster.to_owned()).or_default();
                slot.bootstrapped = true;
                slot.released = false;
            }
            match self.request_token(cluster, *lifetime).await {
                Ok((token, valid_for)) => {
                    self.minted.fetch_add(1, Ordering::Relaxed);
                    let refresh_in = valid_for.mul_f64(0.8);
                    let minted = Minted {
                        token: token.into(),
                        refresh_at: Instant::now() + refresh_in,
                    };
                    self.slots().entry(cluster.to_owned()).or_default().minted =
                        Some(minted.clone());
                    // A token minted early (after a 401) moves the refresh later.
                    self.refresh
                        .reschedule_after(cluster.to_owned(), refresh_in);
                    tracing::debug!(
                        workspace = cluster,
                        valid_for_s = valid_for.as_secs(),
                        "minted a workspace token"
                    );
                    return Ok(minted);
                }
                // The ServiceAccount or the grant to mint for it is gone (revoked by someone):
                // set them up again, once.
                Err(err) if attempt == 0 && (is_status(&err, 404) || is_status(&err, 403)) => {
                    tracing::info!(
                        workspace = cluster,
                        "the workspace ServiceAccount or its grant is missing; setting them up again"
                    );
                    if let Some(slot) = self.slots().get_mut(cluster) {
                        slot.bootstrapped = false;
                    }
                }
                Err(err) => {
                    return Err(Error::transient(err)
                        .context(format!("minting a token in workspace {cluster}")));
                }
            }
        }
        Err(Error::transient_msg(format!(
            "minting a token in workspace {cluster}: the ServiceAccount disappeared again"
        )))
    }

    /// Creates the ServiceAccount and its RBAC through the virtual workspace; what exists is
    /// kept.
    async fn bootstrap(&self, cluster: &str, vw: &kube::Client) -> Result<(), Error> {
        let context = |what: &str| format!("setting up {what} in workspace {cluster}");
        let labels = json!({ MANAGED_BY_LABEL: self.provider_name });
        let sas: Api<ServiceAccount> = Api::namespaced(vw.clone(), ACCESS_NAMESPACE);
        let sa: ServiceAccount = from_json(json!({
            "metadata": {"name": self.names.service_account, "labels": labels},
        }))?;
        match create(&sas, &sa).await {
            Err(err) if is_status(&err, 404) => {
                let namespaces: Api<Namespace> = Api::all(vw.clone());
                let ns: Namespace = from_json(json!({"metadata": {"name": ACCESS_NAMESPACE}}))?;
                create(&namespaces, &ns)
                    .await
                    .map_err(|e| Error::transient(e).context(context("the namespace")))?;
                create(&sas, &sa)
                    .await
                    .map_err(|e| Error::transient(e).context(context("the ServiceAccount")))?;
            }
            other => {
                other.map_err(|e| Error::transient(e).context(context("the ServiceAccount")))?
            }
        }
        let bindings: Api<ClusterRoleBinding> = Api::all(vw.clone());
        let admin: ClusterRoleBinding = from_json(json!({
            "metadata": {"name": self.names.admin_binding, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": self.names.service_account, "namespace": ACCESS_NAMESPACE}],
        }))?;
        create(&bindings, &admin).await.map_err(|e| {
            Error::transient(e).context(context("the ServiceAccount's permissions"))
        })?;
        let mut rules = vec![json!({
            "apiGroups": [""],
            "resources": ["serviceaccounts/token"],
            "resourceNames": [self.names.service_account],
            "verbs": ["create"],
        })];
        if matches!(self.provider.subject(), Subject::User(_)) {
            // Only identities from elsewhere in kcp need to be let into the workspace.
            rules.push(json!({"nonResourceURLs": ["/"], "verbs": ["access"]}));
        }
        let role: ClusterRole = from_json(json!({
            "metadata": {"name": self.names.minter, "labels": labels},
            "rules": rules,
        }))?;
        create(&Api::<ClusterRole>::all(vw.clone()), &role)
            .await
            .map_err(|e| Error::transient(e).context(context("the token minter role")))?;
        let minter: ClusterRoleBinding = from_json(json!({
            "metadata": {"name": self.names.minter, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": self.names.minter},
            "subjects": [self.provider.subject().rbac_subject()],
        }))?;
        create(&bindings, &minter)
            .await
            .map_err(|e| Error::transient(e).context(context("the token minter binding")))?;
        Ok(())
    }

    /// A TokenRequest at the workspace URL; the token and how long it is valid.
    async fn request_token(
        &self,
        cluster: &str,
        lifetime: Duration,
    ) -> Result<(String, Duration), kube::Error> {
        let sas: Api<ServiceAccount> =
            Api::namespaced(self.provider.workspace_client(cluster), ACCESS_NAMESPACE);
        let request = serde_json::from_value(json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": lifetime.as_secs().max(1)},
        }))
        .map_err(kube::Error::SerdeError)?;
        let answer = sas
            .create_token_request(
                &self.names.service_account,
                &PostParams::default(),
                &request,
            )
            .await?;
        let answer = serde_json::to_value(&answer).map_err(kube::Error::SerdeError)?;
        let token = answer
            .pointer("/status/token")
            .and_then(|t| t.as_str())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                kube::Error::Service("the TokenRequest was answered without a token".into())
            })?
            .to_owned();
        let valid_for = answer
            .pointer("/status/expirationTimestamp")
            .and_then(|t| t.as_str())
            .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
            .and_then(|expires| {
                let left = expires.duration_since(k8s_openapi::jiff::Timestamp::now());
                Duration::try_from(left).ok()
            })
            .unwrap_or(lifetime);
        Ok((token, valid_for))
    }

    /// Deletes the ServiceAccount and the RBAC objects with `client`. Through the virtual
    /// workspace the ServiceAccount goes first (revoking its tokens at once); with its own token
    /// it goes last, after the grants it can still delete.
    async fn delete_all(&self, client: &kube::Client, vw: bool) -> Result<(), kube::Error> {
        let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), ACCESS_NAMESPACE);
        let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
        let roles: Api<ClusterRole> = Api::all(client.clone());
        if vw {
            delete(&sas, &self.names.service_account).await?;
            delete(&bindings, &self.names.admin_binding).await?;
            delete(&bindings, &self.names.minter).await?;
            delete(&roles, &self.names.minter).await?;
        } else {
            delete(&bindings, &self.names.minter).await?;
            delete(&roles, &self.names.minter).await?;
            delete(&sas, &self.names.service_account).await?;
        }
        Ok(())
    }
}

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, Error> {
    serde_json::from_value(value).map_err(Error::transient)
}

/// Creates `object`; one that exists already is fine.
async fn create<K>(api: &Api<K>, object: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(err) if is_status(&err, 409) => Ok(()),
        Err(err) => Err(err),
    }
}

/// Deletes `name`; one that is gone already is fine.
async fn delete<K>(api: &Api<K>, name: &str) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(err) if is_status(&err, 404) => Ok(()),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_derived_from_the_provider() {
        let names = AccessNames::new("velero");
        assert_eq!(names.user(), "system:serviceaccount:openmcp-system:velero");
        assert_eq!(names.admin_binding, "openmcp:velero:workspace-admin");
        assert_eq!(names.minter, "openmcp:velero:token-minter");
    }
}
