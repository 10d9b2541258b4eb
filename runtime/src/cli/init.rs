//! `init`: what a provider does once per version before it runs (`openmcp.md` §2).
//!
//! 1. onboarding access `<group>--onboarding-init` (permissions to install the Service API CRD);
//! 2. every CRD of the provider, created or its spec replaced (as Go's `CRDManager` does) on the
//!    cluster its `openmcp.cloud/cluster` label names (`onboarding`: the Service API; `platform`:
//!    the ProviderConfig) — with the conversion webhook's address and CA bundle when a version
//!    converts in Rust (see [`conversion_webhook`]) — waiting until each is Established, and its objects migrated to its
//!    storage version when an earlier one is still stored (see [`storage_migration`]), so that
//!    a later release may drop that version;
//! 3. the Service API's group/version/kind as `ServiceProvider.status.resources` (what makes the
//!    deletion of a ControlPlane delete its Service API objects first), replacing what was there;
//! 4. the author's extra pre-flight step, if any.
//!
//! Every step is idempotent: `init` runs again whenever the provider version changes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, ResourceExt};

use super::conversion_webhook::{self, WebhookClientOptions, WebhookError};
use super::storage_migration::{self, Migration, MigrationError};
use crate::access::clients::ClientFactory;
use crate::access::onboarding::{OnboardingError, onboarding_access};
use crate::access::watch_error;
use crate::error::Error;
use crate::manifests::rbac;
use crate::manifests::{CLUSTER_LABEL, provider_config_crd, service_crd};
use crate::openmcp::constants::ONBOARDING_INIT_LOCAL_NAME;
use crate::openmcp::{GroupVersionKind, ServiceProviderObject};
use crate::provider::ServiceProvider;
use crate::tenant::ClusterAccess;

/// What the author's pre-flight hook gets.
#[derive(Clone)]
pub struct InitContext {
    /// The platform cluster.
    pub platform: kube::Client,
    /// The onboarding cluster, with `init`'s permissions.
    pub onboarding: ClusterAccess,
    /// `--provider-name`.
    pub provider_name: String,
    /// `--environment`.
    pub environment: String,
    /// The namespace the provider runs in.
    pub pod_namespace: String,
}

/// The author's pre-flight hook (see [`App::on_init`](crate::cli::App::on_init)).
pub type InitHook = Arc<
    dyn Fn(InitContext) -> Pin<Box<dyn Future<Output = Result<(), Error>> + Send>> + Send + Sync,
>;

/// How `init` runs.
#[derive(Clone, Debug)]
pub struct InitOptions {
    /// `--provider-name`.
    pub provider_name: String,
    /// `--environment`.
    pub environment: String,
    /// The namespace the provider runs in (`POD_NAMESPACE`).
    pub pod_namespace: String,
    /// How long to wait for onboarding access.
    pub access_timeout: Duration,
    /// How long to wait for a CRD to become Established.
    pub crd_timeout: Duration,
    /// The controller name of the onboarding requests; `None`: the Service API group.
    pub onboarding_controller: Option<String>,
    /// Where the onboarding cluster's API server reaches the conversion webhook, for a provider
    /// that converts a version in Rust.
    pub webhook: WebhookClientOptions,
}

/// Why `init` failed.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// Onboarding access failed.
    #[error("onboarding access: {0}")]
    Onboarding(#[from] OnboardingError),
    /// A CRD could not be installed.
    #[error("installing CRD {name} on the {cluster} cluster: {source}")]
    Crd {
        /// The CRD.
        name: String,
        /// `platform` or `onboarding`.
        cluster: String,
        /// What failed.
        source: kube::Error,
    },
    /// A CRD names a cluster `init` does not know.
    #[error("CRD {name} has {CLUSTER_LABEL}={cluster:?}; expected platform or onboarding")]
    UnknownCluster {
        /// The CRD.
        name: String,
        /// The label's value.
        cluster: String,
    },
    /// The objects of a CRD could not be migrated to its storage version.
    #[error(
        "migrating the objects of CRD {name} on the {cluster} cluster to its storage version: {source}; run init again to resume"
    )]
    Migration {
        /// The CRD.
        name: String,
        /// `platform` or `onboarding`.
        cluster: String,
        /// What failed.
        source: MigrationError,
    },
    /// A CRD did not become Established.
    #[error("CRD {0} did not become Established in time; check the API server's logs")]
    NotEstablished(String),
    /// The ServiceProvider is missing.
    #[error(
        "there is no ServiceProvider {0:?} on the platform cluster; --provider-name must name the ServiceProvider that deploys this provider"
    )]
    NoServiceProvider(String),
    /// Registering the GVK failed.
    #[error("registering the Service API at ServiceProvider {name}: {source}")]
    Register {
        /// The ServiceProvider.
        name: String,
        /// What failed.
        source: kube::Error,
    },
    /// The conversion webhook could not be wired into the Service API CRD.
    #[error("{0}")]
    Webhook(#[from] WebhookError),
    /// The author's hook failed.
    #[error("the provider's init hook failed: {0}")]
    Hook(Error),
}

/// Runs `init` for provider `P` against the platform cluster `platform`.
pub async fn init<P: ServiceProvider>(
    platform: kube::Client,
    options: &InitOptions,
    hook: Option<InitHook>,
) -> Result<(), InitError> {
    let info = P::INFO;
    let factory = ClientFactory::new();
    tracing::info!(provider = %options.provider_name, "init: requesting onboarding access");
    let onboarding = onboarding_access(
        &platform,
        &factory,
        options
            .onboarding_controller
            .as_deref()
            .unwrap_or(info.group),
        &options.pod_namespace,
        ONBOARDING_INIT_LOCAL_NAME,
        rbac::onboarding_init_rules(&info),
        options.access_timeout,
    )
    .await?;

    for mut crd in [service_crd::<P>(), provider_config_crd::<P>()] {
        conversion_webhook::wire(&mut crd, info.kind, &platform, &options.webhook).await?;
        let name = crd.name_any();
        let cluster = crd.labels().get(CLUSTER_LABEL).cloned().unwrap_or_default();
        let client = match cluster.as_str() {
            "platform" => platform.clone(),
            "onboarding" => onboarding.client().clone(),
            _ => return Err(InitError::UnknownCluster { name, cluster }),
        };
        let installed = install_crd(
            client.clone(),
            &crd,
            &options.provider_name,
            &cluster,
            options.crd_timeout,
        )
        .await?;
        tracing::info!(crd = %name, %cluster, "init: CRD installed");
        if migrates_in_run(&installed) {
            tracing::info!(crd = %name, %cluster, "init: the stored objects are migrated by run, which serves the conversion webhook the migration reads them through");
            continue;
        }
        let migration =
            storage_migration::migrate(&client, &installed, storage_migration::PAGE_SIZE)
                .await
                .map_err(|source| InitError::Migration {
                    name: name.clone(),
                    cluster: cluster.clone(),
                    source,
                })?;
        if let Migration::Migrated {
            storage,
            dropped,
            rewritten,
        } = migration
        {
            tracing::info!(crd = %name, %cluster, %storage, ?dropped, rewritten, "init: stored objects migrated to the storage version");
        }
    }

    register_gvk::<P>(&platform, &options.provider_name).await?;
    tracing::info!(
        service_provider = %options.provider_name,
        "init: Service API registered in ServiceProvider.status.resources"
    );

    if let Some(hook) = hook {
        hook(InitContext {
            platform,
            onboarding,
            provider_name: options.provider_name.clone(),
            environment: options.environment.clone(),
            pod_namespace: options.pod_namespace.clone(),
        })
        .await
        .map_err(InitError::Hook)?;
    }
    tracing::info!("init: done");
    Ok(())
}

/// Whether `crd` converts through the provider's conversion webhook. Its objects are then read
/// through a webhook only `run` serves — when a release first adds a version converted in Rust,
/// nothing serves it while `init` runs — so `run` migrates them, not `init`.
pub(crate) fn migrates_in_run(crd: &CustomResourceDefinition) -> bool {
    crd.spec
        .conversion
        .as_ref()
        .is_some_and(|c| c.strategy == "Webhook")
}

/// Installs `crd` as the Go `CRDManager` does (controller-utils `resources.CreateOrUpdateResource`
/// with the CRD mutator): created when missing, else its spec replaced whole and its labels and
/// annotations added — so a CRD a Go provider installed under the same name (controller-gen's
/// plural) is taken over as it is, not merged with a schema it no longer has — then watches it
/// until it is Established, which it returns.
async fn install_crd(
    client: kube::Client,
    crd: &CustomResourceDefinition,
    field_manager: &str,
    cluster: &str,
    timeout: Duration,
) -> Result<CustomResourceDefinition, InitError> {
    let name = crd.name_any();
    let api: Api<CustomResourceDefinition> = Api::all(client);
    let crd_error = |source| InitError::Crd {
        name: name.clone(),
        cluster: cluster.to_owned(),
        source,
    };
    let params = PostParams {
        field_manager: Some(field_manager.to_owned()),
        ..Default::default()
    };
    let mut conflicts = 0;
    loop {
        let written = match api.get_opt(&name).await.map_err(crd_error)? {
            None => api.create(&params, crd).await.map(|_| ()),
            Some(mut current) => {
                current.spec = crd.spec.clone();
                for (key, value) in crd.labels() {
                    current.labels_mut().insert(key.clone(), value.clone());
                }
                for (key, value) in crd.annotations() {
                    current.annotations_mut().insert(key.clone(), value.clone());
                }
                api.replace(&name, &params, &current).await.map(|_| ())
            }
        };
        match written {
            Ok(()) => break,
            // Someone else wrote it between our read and our write: read it again.
            Err(err) if crate::access::is_status(&err, 409) && conflicts < 5 => conflicts += 1,
            Err(err) => return Err(crd_error(err)),
        }
    }
    let established = await_condition(api, &name, conditions::is_crd_established());
    match tokio::time::timeout(timeout, established).await {
        Ok(Ok(Some(crd))) => Ok(crd),
        // Deleted while it was being waited for: it never became Established.
        Ok(Ok(None)) => Err(InitError::NotEstablished(name)),
        Ok(Err(err)) => Err(crd_error(watch_error(err))),
        Err(_) => Err(InitError::NotEstablished(name)),
    }
}

/// `RegisterGVKsAtServiceProvider` (openmcp-operator `lib/utils/provider.go`): sets the
/// ServiceProvider's `status.resources` to the Service API's GVK, replacing what an earlier
/// version registered — a GVK the provider no longer serves would block the deletion of every
/// ControlPlane. Writes nothing when it is already so.
pub async fn register_gvk<P: ServiceProvider>(
    platform: &kube::Client,
    provider_name: &str,
) -> Result<(), InitError> {
    let info = P::INFO;
    let resources = vec![GroupVersionKind {
        group: info.group.to_owned(),
        version: info.version.to_owned(),
        kind: info.kind.to_owned(),
    }];
    let api: Api<ServiceProviderObject> = Api::all(platform.clone());
    let register_error = |source| InitError::Register {
        name: provider_name.to_owned(),
        source,
    };
    let current = api
        .get_opt(provider_name)
        .await
        .map_err(register_error)?
        .ok_or_else(|| InitError::NoServiceProvider(provider_name.to_owned()))?;
    if current.status.map(|s| s.resources).unwrap_or_default() == resources {
        return Ok(());
    }
    let patch = serde_json::json!({ "status": { "resources": resources } });
    api.patch_status(
        provider_name,
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map_err(register_error)?;
    Ok(())
}
