//! Access to the onboarding cluster at start-up: the ClusterRequest and AccessRequest
//! `<group>--onboarding-init` (for `init`) or `<group>--onboarding-run` (for `run`) in the
//! provider's own namespace, as `clusteraccess.Manager.CreateAndWaitForCluster` of the Go library
//! creates them, and the client built from the granted kubeconfig.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};

use crate::access::clients::ClientFactory;
use crate::access::is_status;
use crate::context::ClusterAccess;
use crate::context::SecretRef;
use crate::openmcp::clusters::RequestStatus;
use crate::openmcp::constants::{MANAGED_BY_LABEL, PURPOSE_ONBOARDING, SECRET_KEY_KUBECONFIG};
use crate::openmcp::naming::{label_value, stable_request_name};
use crate::openmcp::{
    AccessRequest, AccessRequestSpec, ClusterRequest, ClusterRequestSpec, ObjectReference,
    PermissionsRequest, TokenConfig,
};

/// Why onboarding access could not be obtained.
#[derive(Debug, thiserror::Error)]
pub enum OnboardingError {
    /// A call to the platform cluster failed.
    #[error("{doing}: {source}")]
    Api {
        /// What was being done.
        doing: String,
        /// What failed.
        source: kube::Error,
    },
    /// The platform denied the request.
    #[error(
        "{kind} {namespace}/{name} was denied by the platform; check the platform operator's logs"
    )]
    Denied {
        /// ClusterRequest or AccessRequest.
        kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The request was not answered in time.
    #[error(
        "{kind} {namespace}/{name} was not granted within {timeout:?}; is the openMCP platform operator running?"
    )]
    Timeout {
        /// ClusterRequest or AccessRequest.
        kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// How long we waited.
        timeout: Duration,
    },
    /// The granted Secret is unusable.
    #[error("the onboarding kubeconfig in Secret {namespace}/{name}: {message}")]
    Kubeconfig {
        /// Namespace of the Secret.
        namespace: String,
        /// Name of the Secret.
        name: String,
        /// What is wrong with it.
        message: String,
    },
    /// A name could not be derived.
    #[error("cannot derive the onboarding request name: {0}")]
    Naming(#[from] crate::openmcp::naming::NamingError),
}

/// Asks for onboarding access named `local_name` (`onboarding-init` or `onboarding-run`) with
/// `rules`, waits up to `timeout` for it, and returns the cluster.
pub async fn onboarding_access(
    platform: &kube::Client,
    factory: &ClientFactory,
    controller: &str,
    namespace: &str,
    local_name: &str,
    rules: Vec<PolicyRule>,
    timeout: Duration,
) -> Result<ClusterAccess, OnboardingError> {
    let name = stable_request_name(controller, local_name, "")?;
    // Go sets the controller name unshortened (and fails on a longer one); shortening changes
    // nothing where Go works.
    let labels = BTreeMap::from([(MANAGED_BY_LABEL.to_owned(), label_value(controller))]);
    let meta = ObjectMeta {
        name: Some(name.clone()),
        namespace: Some(namespace.to_owned()),
        labels: Some(labels),
        ..Default::default()
    };
    let api_err = |doing: String| move |source| OnboardingError::Api { doing, source };

    let crs: Api<ClusterRequest> = Api::namespaced(platform.clone(), namespace);
    let cr = ClusterRequest {
        metadata: meta.clone(),
        spec: ClusterRequestSpec {
            purpose: PURPOSE_ONBOARDING.to_owned(),
            wait_for_cluster_deletion: None,
        },
        status: None,
    };
    match crs.create(&PostParams::default(), &cr).await {
        Ok(_) => tracing::info!(%namespace, %name, "created onboarding ClusterRequest"),
        // The spec is immutable; an existing request from an earlier start is reused.
        Err(err) if is_status(&err, 409) => {}
        Err(err) => {
            return Err(api_err(format!(
                "creating ClusterRequest {namespace}/{name}"
            ))(err));
        }
    }
    wait("ClusterRequest", namespace, &name, timeout, || async {
        let cr = crs.get(&name).await.map_err(api_err(format!(
            "reading ClusterRequest {namespace}/{name}"
        )))?;
        Ok(match cr.status {
            Some(s) if s.is_granted() => Answer::Granted(()),
            Some(s) if s.is_denied() => Answer::Denied,
            _ => Answer::Pending,
        })
    })
    .await?;

    let ars: Api<AccessRequest> = Api::namespaced(platform.clone(), namespace);
    let token = TokenConfig {
        permissions: vec![PermissionsRequest {
            rules,
            ..Default::default()
        }],
        role_refs: Vec::new(),
    };
    let ar = AccessRequest {
        metadata: meta,
        spec: AccessRequestSpec {
            request_ref: Some(ObjectReference {
                name: name.clone(),
                namespace: namespace.to_owned(),
            }),
            token: Some(token.clone()),
            ..Default::default()
        },
        status: None,
    };
    match ars.create(&PostParams::default(), &ar).await {
        Ok(_) => tracing::info!(%namespace, %name, "created onboarding AccessRequest"),
        Err(err) if is_status(&err, 409) => {
            // An earlier version of the provider may have asked for other permissions.
            let patch = serde_json::json!({ "spec": { "token": token } });
            ars.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(api_err(format!(
                    "updating AccessRequest {namespace}/{name}"
                )))?;
        }
        Err(err) => {
            return Err(api_err(format!(
                "creating AccessRequest {namespace}/{name}"
            ))(err));
        }
    }
    let secret = wait("AccessRequest", namespace, &name, timeout, || async {
        let ar = ars
            .get(&name)
            .await
            .map_err(api_err(format!("reading AccessRequest {namespace}/{name}")))?;
        let secret = ar
            .status
            .as_ref()
            .and_then(|s| s.secret_ref.as_ref())
            .map(|s| s.name.clone());
        Ok(match (&ar.status, secret) {
            (Some(s), _) if s.is_denied() => Answer::Denied,
            (_, Some(secret)) if ar.is_ready() => Answer::Granted(secret),
            _ => Answer::Pending,
        })
    })
    .await?;

    let secrets: Api<Secret> = Api::namespaced(platform.clone(), namespace);
    let kubeconfig_error = |message: String| OnboardingError::Kubeconfig {
        namespace: namespace.to_owned(),
        name: secret.clone(),
        message,
    };
    let data = secrets
        .get(&secret)
        .await
        .map_err(api_err(format!("reading Secret {namespace}/{secret}")))?
        .data
        .and_then(|mut d| d.remove(SECRET_KEY_KUBECONFIG))
        .ok_or_else(|| kubeconfig_error(format!("it has no {SECRET_KEY_KUBECONFIG:?} key")))?;
    let client = factory
        .client(&data.0)
        .await
        .map_err(|e| kubeconfig_error(e.to_string()))?;
    Ok(ClusterAccess::new(
        client,
        data.0,
        Some(SecretRef {
            namespace: namespace.to_owned(),
            name: secret,
        }),
    ))
}

enum Answer<T> {
    Pending,
    Granted(T),
    Denied,
}

/// Polls `check` with a growing interval (100 ms to 2 s) until the request is answered or
/// `timeout` passes. Start-up only, so a watch would buy nothing.
async fn wait<T, F, Fut>(
    kind: &'static str,
    namespace: &str,
    name: &str,
    timeout: Duration,
    mut check: F,
) -> Result<T, OnboardingError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Answer<T>, OnboardingError>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut interval = Duration::from_millis(100);
    let mut logged = false;
    loop {
        match check().await {
            Ok(Answer::Granted(value)) => return Ok(value),
            Ok(Answer::Denied) => {
                return Err(OnboardingError::Denied {
                    kind,
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                });
            }
            Ok(Answer::Pending) => {}
            // The platform may be briefly unavailable while we start; keep trying until the
            // deadline, then report the last failure.
            Err(err) if tokio::time::Instant::now() >= deadline => return Err(err),
            Err(err) => tracing::debug!(error = %err, "waiting for onboarding access"),
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(OnboardingError::Timeout {
                kind,
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                timeout,
            });
        }
        if !logged && interval >= Duration::from_secs(1) {
            tracing::info!(%namespace, %name, kind, "waiting for the platform to grant onboarding access");
            logged = true;
        }
        tokio::time::sleep(interval).await;
        interval = (interval * 2).min(Duration::from_secs(2));
    }
}
