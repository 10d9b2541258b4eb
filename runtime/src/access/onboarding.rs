//! Access to the onboarding cluster at start-up: the ClusterRequest and AccessRequest
//! `<group>--onboarding-init` (for `init`) or `<group>--onboarding-run` (for `run`) in the
//! provider's own namespace, as `clusteraccess.Manager.CreateAndWaitForCluster` of the Go library
//! creates them, and the client built from the granted kubeconfig.
//!
//! Where the Go library polls every 10 s, the requests and the Secret are watched (kube-runtime's
//! `await_condition`, a watch on one name), so a grant is taken up at once. The platform identity
//! may list and watch them: the runtime's platform ClusterRole says so, and openMCP makes the
//! provider's and its init Job's ServiceAccounts `cluster-admin` on the platform.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;

use crate::access::clients::ClientFactory;
use crate::access::{is_status, watch_error};
use crate::openmcp::clusters::RequestStatus;
use crate::openmcp::constants::{MANAGED_BY_LABEL, PURPOSE_ONBOARDING, SECRET_KEY_KUBECONFIG};
use crate::openmcp::naming::{label_value, stable_request_name};
use crate::openmcp::{
    AccessRequest, AccessRequestSpec, ClusterRequest, ClusterRequestSpec, ObjectReference,
    PermissionsRequest, TokenConfig,
};
use crate::tenant::ClusterAccess;
use crate::tenant::SecretRef;

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
    /// The request was not answered, or its kubeconfig Secret not written, in time.
    #[error(
        "{kind} {namespace}/{name} was not ready within {timeout:?}; is the openMCP platform operator running?"
    )]
    Timeout {
        /// ClusterRequest, AccessRequest or Secret.
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
    wait(
        &crs,
        "ClusterRequest",
        namespace,
        &name,
        timeout,
        |cr| match cr.and_then(|cr| cr.status.as_ref()) {
            Some(s) if s.is_granted() => Answer::Granted(()),
            Some(s) if s.is_denied() => Answer::Denied,
            _ => Answer::Pending,
        },
    )
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
    let secret = wait(&ars, "AccessRequest", namespace, &name, timeout, |ar| {
        let Some(ar) = ar else {
            return Answer::Pending;
        };
        let secret = ar
            .status
            .as_ref()
            .and_then(|s| s.secret_ref.as_ref())
            .map(|s| s.name.clone());
        match (&ar.status, secret) {
            (Some(s), _) if s.is_denied() => Answer::Denied,
            (_, Some(secret)) if ar.is_ready() => Answer::Granted(secret),
            _ => Answer::Pending,
        }
    })
    .await?;

    // The operator writes the Secret before it grants the request; one written after the grant
    // is waited for as long again.
    let secrets: Api<Secret> = Api::namespaced(platform.clone(), namespace);
    let data = wait(
        &secrets,
        "Secret",
        namespace,
        &secret,
        timeout,
        |secret| match secret {
            Some(secret) => Answer::Granted(secret.data.clone()),
            None => Answer::Pending,
        },
    )
    .await?;
    let kubeconfig_error = |message: String| OnboardingError::Kubeconfig {
        namespace: namespace.to_owned(),
        name: secret.clone(),
        message,
    };
    let data = data
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

/// How a watched object stands.
enum Answer<T> {
    /// Not answered yet (or not there yet).
    Pending,
    /// Granted, with what the caller needs of it.
    Granted(T),
    /// Denied by the platform.
    Denied,
}

/// After this long without an answer, say (once) that we are waiting for the platform.
const PATIENCE: Duration = Duration::from_secs(1);

/// Watches object `name` of `api` until `answer` is not [`Answer::Pending`] or `timeout`
/// passes. A failed watch ends the wait, as a failed read ends the Go library's poll.
async fn wait<K, T>(
    api: &Api<K>,
    kind: &'static str,
    namespace: &str,
    name: &str,
    timeout: Duration,
    answer: impl Fn(Option<&K>) -> Answer<T>,
) -> Result<T, OnboardingError>
where
    K: kube::Resource + Clone + std::fmt::Debug + Send + serde::de::DeserializeOwned + 'static,
{
    let answered = |object: Option<&K>| !matches!(answer(object), Answer::Pending);
    let watch = tokio::time::timeout(timeout, await_condition(api.clone(), name, answered));
    tokio::pin!(watch);
    let watched = match tokio::time::timeout(PATIENCE, &mut watch).await {
        Ok(watched) => watched,
        Err(_) => {
            tracing::info!(%namespace, %name, kind, "waiting for the platform to grant onboarding access");
            watch.await
        }
    };
    let object = watched
        .map_err(|_| OnboardingError::Timeout {
            kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            timeout,
        })?
        .map_err(|err| OnboardingError::Api {
            doing: format!("watching {kind} {namespace}/{name}"),
            source: watch_error(err),
        })?;
    match answer(object.as_ref()) {
        Answer::Granted(value) => Ok(value),
        Answer::Denied => Err(OnboardingError::Denied {
            kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }),
        Answer::Pending => unreachable!("await_condition returns once the object is answered"),
    }
}
