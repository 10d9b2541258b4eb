//! Credentials for a worker on the workload cluster that must reach the tenant's cluster (a
//! Velero server, a metrics or OpenTelemetry collector): a ServiceAccount the runtime keeps in the
//! tenant's cluster with only the rules the author declares, and on the workload cluster a
//! Secret with a kubeconfig for it, its token minted with TokenRequest and renewed before it
//! expires. All of them are members of the tenant's resource set, so readiness,
//! `status.resources` and deletion are a set's; deleting the ServiceAccount invalidates every
//! token minted for it, so an uninstalled tenant leaves no working credential behind.
//!
//! The worker never gets the provider's own access to the tenant's cluster, which is what the
//! Go providers copy today (velero, metrics-operator and otel-operator each mint their own
//! token the same way instead).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kube::config::{AuthInfo, Context as KubeContext, Kubeconfig, NamedAuthInfo, NamedContext};

use crate::context::Context;
use crate::error::Error;
use crate::provider::ServiceProvider;
use crate::resources::apply::{ApplySet, MemberRef, Readiness};
use crate::status::resources::Location;

/// Key of the kubeconfig in the worker's Secret.
pub(crate) const WORKER_KUBECONFIG_KEY: &str = "kubeconfig";
/// Annotation on the worker's Secret: when its token expires (RFC 3339), so a reconcile knows
/// whether to renew it without decoding the token.
pub(crate) const TOKEN_EXPIRES_ANNOTATION: &str = "service-provider.openmcp.cloud/token-expires";
/// A token's lifetime when the author names none: one hour, as the Go providers mint them.
pub(crate) const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// How soon a tenant whose worker's ServiceAccount could not be created yet is looked at again.
const NOT_YET_RETRY: Duration = Duration::from_secs(1);
/// kube-apiserver refuses TokenRequests for less.
const MIN_TOKEN_LIFETIME: Duration = Duration::from_secs(600);

/// What a worker on the workload cluster may do in the tenant's cluster, and where its
/// credentials go.
#[derive(Clone, Debug, Default)]
pub struct WorkerAccess {
    /// Name of the ServiceAccount in the tenant's cluster and of the Secret on the workload
    /// cluster. Its ClusterRole and ClusterRoleBinding get the provider-prefixed name
    /// ([`Context::provider_prefixed_name`]), since other providers share the tenant's cluster.
    pub name: String,
    /// Namespace of the ServiceAccount in the tenant's cluster (add the Namespace to the set
    /// unless it is one that always exists, such as `default`).
    pub service_account_namespace: String,
    /// Namespace of the Secret on the workload cluster, where the worker runs.
    pub secret_namespace: String,
    /// What the worker may do, cluster-wide, in the tenant's cluster: nothing else is granted.
    pub rules: Vec<PolicyRule>,
    /// How long each token lives (at least 10 minutes; default one hour). A token is renewed
    /// when a third of its life is left.
    pub token_lifetime: Option<Duration>,
}

/// The members a [`Context::worker_credentials`] added.
#[derive(Clone, Debug)]
pub struct WorkerCredentials {
    /// The Secret on the workload cluster: mount it and point the worker's `--kubeconfig` at
    /// its key `kubeconfig`.
    pub secret: MemberRef,
    /// Its name.
    pub secret_name: String,
    /// The ServiceAccount in the tenant's cluster.
    pub service_account: MemberRef,
}

impl<P: ServiceProvider> Context<P> {
    /// Declares in `set` a worker's least-privilege access to the tenant's cluster: a
    /// ServiceAccount there bound to a ClusterRole with exactly `access.rules`, and on the
    /// workload cluster a Secret with a kubeconfig for that ServiceAccount (the tenant's API
    /// server and CA, a token minted with TokenRequest). The token is renewed when a third of
    /// its lifetime is left: the runtime reconciles the tenant by then, whatever the poll
    /// interval; until then a reconcile keeps the Secret as it is. Deleting the set deletes the
    /// ServiceAccount, which invalidates every token minted for it. In kcp mode the tenant's
    /// cluster is the workspace.
    ///
    /// A denied TokenRequest is an error naming the ServiceAccount; the provider's own access to
    /// the tenant's cluster must allow `create` on `serviceaccounts/token` (the generated
    /// RBAC and the default access do).
    pub async fn worker_credentials(
        &self,
        set: &mut ApplySet,
        access: WorkerAccess,
    ) -> Result<WorkerCredentials, Error> {
        let lifetime = access
            .token_lifetime
            .unwrap_or(DEFAULT_TOKEN_LIFETIME)
            .max(MIN_TOKEN_LIFETIME);
        let role_name = self.provider_prefixed_name(&access.name)?;
        let tenant = Location::ManagedControlPlane;
        let service_account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(access.name.clone()),
                namespace: Some(access.service_account_namespace.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        let service_account_member = set.add_to(tenant, &service_account)?.key();
        let role = set
            .add_to(
                tenant,
                &ClusterRole {
                    metadata: ObjectMeta {
                        name: Some(role_name.clone()),
                        ..Default::default()
                    },
                    rules: Some(access.rules.clone()),
                    ..Default::default()
                },
            )?
            .key();
        let binding = set
            .add_to(
                tenant,
                &ClusterRoleBinding {
                    metadata: ObjectMeta {
                        name: Some(role_name.clone()),
                        ..Default::default()
                    },
                    role_ref: RoleRef {
                        api_group: Some("rbac.authorization.k8s.io".into()),
                        kind: "ClusterRole".into(),
                        name: role_name,
                    },
                    subjects: Some(vec![Subject {
                        kind: "ServiceAccount".into(),
                        name: access.name.clone(),
                        namespace: Some(access.service_account_namespace.clone()),
                        ..Default::default()
                    }]),
                },
            )?
            .depends_on(&role)
            .depends_on(&service_account_member)
            .key();

        // The token this process issued last, else the one in the Secret, while good.
        let now = SystemTime::now();
        let observed = self.resources().observed();
        let kept_as = format!("worker-token/{}/{}", access.secret_namespace, access.name);
        let recalled = observed
            .and_then(|o| o.recall(&kept_as))
            .and_then(|memo| memo.downcast::<(Vec<u8>, SystemTime)>().ok())
            .map(|issued| issued.as_ref().clone())
            .filter(|(_, expires)| fresh(*expires, lifetime, now));
        let kept = match recalled {
            Some(recalled) => Some(recalled),
            None => {
                let secrets: Api<Secret> =
                    Api::namespaced(self.workload_client()?.clone(), &access.secret_namespace);
                let current = secrets.get_opt(&access.name).await.map_err(|e| {
                    self.worker_error(&access, "reading the worker's kubeconfig Secret", e)
                })?;
                current.as_ref().and_then(|s| still_good(s, lifetime, now))
            }
        };
        let issued = match kept {
            Some(kept) => Some(kept),
            None => match self.mint_token(&access, &service_account, lifetime).await? {
                Some((token, expires)) => Some((
                    worker_kubeconfig(self.mcp().kubeconfig(), &access.name, &token)?,
                    expires,
                )),
                None => None,
            },
        };
        if let (Some(observed), Some(issued)) = (observed, &issued) {
            observed.keep(&kept_as, Arc::new(issued.clone()));
        }
        let (data, annotations) = match &issued {
            Some((kubeconfig, expires)) => {
                // Back before a third of the token's life is left, however long the poll
                // interval.
                let renew_in = expires
                    .checked_sub(lifetime / 3)
                    .and_then(|at| at.duration_since(now).ok())
                    .unwrap_or_default();
                self.resources().revisit_within(renew_in);
                (
                    Some(BTreeMap::from([(
                        WORKER_KUBECONFIG_KEY.to_owned(),
                        ByteString(kubeconfig.clone()),
                    )])),
                    Some(BTreeMap::from([(
                        TOKEN_EXPIRES_ANNOTATION.to_owned(),
                        rfc3339(*expires),
                    )])),
                )
            }
            // The ServiceAccount's namespace is not there yet (this apply creates it): the
            // Secret waits, and the tenant comes back as soon as the apply is done.
            None => {
                self.resources().revisit_within(NOT_YET_RETRY);
                (None, None)
            }
        };
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(access.name.clone()),
                namespace: Some(access.secret_namespace.clone()),
                annotations,
                ..Default::default()
            },
            data,
            ..Default::default()
        };
        let account = format!("{}/{}", access.service_account_namespace, access.name);
        let secret_member = set
            .add_to(Location::WorkloadCluster, &secret)?
            .depends_on(&binding)
            .ready_when(move |secret| {
                if secret.data.pointer("/data/kubeconfig").is_some() {
                    Readiness::Ready
                } else {
                    Readiness::Pending(format!(
                        "waiting for a token of ServiceAccount {account} in the tenant's cluster"
                    ))
                }
            })
            .key();
        Ok(WorkerCredentials {
            secret: secret_member,
            secret_name: access.name,
            service_account: service_account_member,
        })
    }

    fn workload_client(&self) -> Result<&kube::Client, Error> {
        self.workload_access().map(|w| w.client()).ok_or_else(|| {
            Error::invalid_input(
                "worker credentials go to the workload cluster, but this tenant has none: declare \
                 the provider with `workload_cluster = required` (or set workloadCluster in the \
                 ProviderConfig for `optional`)",
            )
        })
    }

    /// A token for the worker's ServiceAccount, creating the ServiceAccount first when this is
    /// the set's first apply (the set applies it again with its labels); `None` while the
    /// ServiceAccount's namespace does not exist yet.
    async fn mint_token(
        &self,
        access: &WorkerAccess,
        service_account: &ServiceAccount,
        lifetime: Duration,
    ) -> Result<Option<(String, SystemTime)>, Error> {
        let accounts: Api<ServiceAccount> = Api::namespaced(
            self.mcp().client().clone(),
            &access.service_account_namespace,
        );
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                expiration_seconds: Some(i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX)),
                ..Default::default()
            }),
            ..Default::default()
        };
        let post = PostParams {
            field_manager: Some(self.field_manager().to_owned()),
            ..Default::default()
        };
        let answer = match accounts
            .create_token_request(&access.name, &post, &request)
            .await
        {
            Err(kube::Error::Api(s)) if s.code == 404 => {
                match accounts.create(&post, service_account).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
                    Err(e) => {
                        return Err(self.worker_error(access, "creating the ServiceAccount", e));
                    }
                }
                accounts
                    .create_token_request(&access.name, &post, &request)
                    .await
            }
            answer => answer,
        }
        .map_err(|e| self.worker_error(access, "minting a token (TokenRequest)", e))?;
        let issued = answer.status.and_then(|s| {
            let token = s.token.filter(|t| !t.is_empty())?;
            let expires = s.expiration_timestamp?.0.as_second();
            Some((token, expires))
        });
        let Some((token, expires)) = issued else {
            return Err(Error::transient_msg(format!(
                "the TokenRequest for ServiceAccount {}/{} came back without a token or expiry",
                access.service_account_namespace, access.name
            )));
        };
        let expires =
            SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(expires).unwrap_or(0));
        Ok(Some((token, expires)))
    }

    fn worker_error(&self, access: &WorkerAccess, doing: &str, e: kube::Error) -> Error {
        let denied = matches!(&e, kube::Error::Api(s) if s.code == 403);
        let message = format!(
            "worker credentials {:?} (ServiceAccount {}/{} in the tenant's cluster): {doing}: {e}",
            access.name, access.service_account_namespace, access.name
        );
        if denied {
            Error::transient_msg(format!(
                "{message}; the provider's access must allow it (create on serviceaccounts/token \
                 in the tenant's cluster, get on secrets on the workload cluster)"
            ))
        } else {
            Error::transient_msg(message)
        }
    }
}

/// The Secret's kubeconfig and expiry, if its token has more than a third of `lifetime` left.
fn still_good(
    secret: &Secret,
    lifetime: Duration,
    now: SystemTime,
) -> Option<(Vec<u8>, SystemTime)> {
    let expires = secret
        .metadata
        .annotations
        .as_ref()?
        .get(TOKEN_EXPIRES_ANNOTATION)?
        .parse::<k8s_openapi::jiff::Timestamp>()
        .ok()?;
    let expires =
        SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(expires.as_second()).ok()?);
    let kubeconfig = secret.data.as_ref()?.get(WORKER_KUBECONFIG_KEY)?.0.clone();
    fresh(expires, lifetime, now).then_some((kubeconfig, expires))
}

/// Whether a token expiring at `expires` has more than a third of `lifetime` left.
fn fresh(expires: SystemTime, lifetime: Duration, now: SystemTime) -> bool {
    expires
        .duration_since(now)
        .is_ok_and(|left| left > lifetime / 3)
}

fn rfc3339(t: SystemTime) -> String {
    let seconds = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    k8s_openapi::jiff::Timestamp::from_second(i64::try_from(seconds).unwrap_or(0))
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// A kubeconfig for the tenant's cluster as `tenant_kubeconfig` reaches it (server, CA, TLS
/// name), authenticating with `token` as user `user`.
fn worker_kubeconfig(tenant_kubeconfig: &[u8], user: &str, token: &str) -> Result<Vec<u8>, Error> {
    let invalid = |why: String| {
        Error::transient_msg(format!(
            "building the worker's kubeconfig from the tenant's: {why}"
        ))
    };
    let text = std::str::from_utf8(tenant_kubeconfig).map_err(|e| invalid(e.to_string()))?;
    let parsed = Kubeconfig::from_yaml(text).map_err(|e| invalid(e.to_string()))?;
    let context_name = parsed
        .current_context
        .clone()
        .or_else(|| parsed.contexts.first().map(|c| c.name.clone()))
        .ok_or_else(|| invalid("it has no context".into()))?;
    let cluster_name = parsed
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())
        .ok_or_else(|| invalid(format!("its context {context_name:?} is missing")))?;
    let cluster = parsed
        .clusters
        .into_iter()
        .find(|c| c.name == cluster_name)
        .ok_or_else(|| invalid(format!("its cluster {cluster_name:?} is missing")))?;
    let worker = Kubeconfig {
        clusters: vec![cluster],
        auth_infos: vec![NamedAuthInfo {
            name: user.to_owned(),
            auth_info: Some(AuthInfo {
                token: Some(token.to_owned().into()),
                ..Default::default()
            }),
            other: Default::default(),
        }],
        contexts: vec![NamedContext {
            name: user.to_owned(),
            context: Some(KubeContext {
                cluster: cluster_name,
                user: Some(user.to_owned()),
                ..Default::default()
            }),
            other: Default::default(),
        }],
        current_context: Some(user.to_owned()),
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        ..Default::default()
    };
    serde_norway::to_string(&worker)
        .map(String::into_bytes)
        .map_err(|e| invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_kept_until_a_third_of_its_life_is_left() {
        let now = SystemTime::now();
        let secret = |expires_in: Duration| Secret {
            metadata: ObjectMeta {
                annotations: Some(BTreeMap::from([(
                    TOKEN_EXPIRES_ANNOTATION.to_owned(),
                    rfc3339(now + expires_in),
                )])),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                WORKER_KUBECONFIG_KEY.to_owned(),
                ByteString(b"kept".to_vec()),
            )])),
            ..Default::default()
        };
        let hour = DEFAULT_TOKEN_LIFETIME;
        let kept = still_good(&secret(Duration::from_secs(50 * 60)), hour, now);
        assert_eq!(kept.map(|(k, _)| k), Some(b"kept".to_vec()));
        assert!(still_good(&secret(Duration::from_secs(15 * 60)), hour, now).is_none());
        assert!(still_good(&Secret::default(), hour, now).is_none());
    }

    #[test]
    fn the_worker_kubeconfig_keeps_the_server_and_ca_and_only_the_token() {
        let tenant = b"apiVersion: v1\nkind: Config\ncurrent-context: admin\nclusters:\n- name: mcp\n  cluster:\n    server: https://mcp.example:6443\n    certificate-authority-data: Q0E=\ncontexts:\n- name: admin\n  context:\n    cluster: mcp\n    user: admin\nusers:\n- name: admin\n  user:\n    token: provider-secret\n";
        let worker = worker_kubeconfig(tenant, "velero", "worker-token").unwrap();
        let text = String::from_utf8(worker).unwrap();
        assert!(text.contains("https://mcp.example:6443"), "{text}");
        assert!(text.contains("Q0E="), "{text}");
        assert!(text.contains("worker-token"), "{text}");
        assert!(!text.contains("provider-secret"), "{text}");
        let err = worker_kubeconfig(b"clusters: []", "w", "t").unwrap_err();
        assert!(err.to_string().contains("no context"), "{err}");
    }
}
