//! The kcp side of the test environment: an embedded kcp with a provider workspace and N consumer
//! workspaces; with a kcp-capable provider, its APIResourceSchema and APIExport in the provider
//! workspace, an APIBinding (claims accepted) in every consumer workspace, and a provider identity
//! holding exactly the generated provider-workspace ClusterRole.

use std::collections::HashSet;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use service_provider_apiserver::kcp::{Kcp, KcpOptions, WorkspaceInfo};

use crate::dev::DevError;
use crate::dev::hosting::prefixed_client;
use crate::manifests::{Manifest, Place};

/// Field manager of the builder's server-side applies.
const MANAGER: &str = "service-provider-dev";
/// Namespace of the provider's ServiceAccount in the provider workspace.
const PROVIDER_SA_NAMESPACE: &str = "default";

/// What the builder's `.kcp(..)` asks for.
#[derive(Clone, Debug)]
pub(crate) struct KcpSetup {
    pub consumers: usize,
    pub provider_workspace: String,
    pub options: KcpOptions,
}

fn ar(kind: &str, plural: &str, version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("apis.kcp.io", version, kind), plural)
}

fn kcp_err(what: &str) -> impl FnOnce(service_provider_apiserver::kcp::KcpError) -> DevError + '_ {
    move |e| DevError::Start(format!("{what}: {e}"))
}

/// The running kcp side.
#[derive(Clone)]
pub struct KcpEnv {
    kcp: Kcp,
    admin: kube::Client,
    provider: WorkspaceInfo,
    consumers: Vec<WorkspaceInfo>,
    export: Option<String>,
    provider_kubeconfig: Option<String>,
    /// The APIBinding every consumer applies (export reference, claims accepted), when a kcp
    /// provider is installed; [`KcpEnv::bind_workspace`] binds more workspaces with it.
    binding: Option<Value>,
    timeout: Duration,
}

impl std::fmt::Debug for KcpEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KcpEnv")
            .field("url", &self.kcp.url())
            .field("provider", &self.provider.path)
            .field("consumers", &self.consumers.len())
            .field("export", &self.export)
            .finish()
    }
}

impl KcpEnv {
    /// The embedded kcp (shards, faults, counters, users, workspace creation).
    pub fn kcp(&self) -> &Kcp {
        &self.kcp
    }

    /// The provider workspace (holds the APIExport).
    pub fn provider_workspace(&self) -> &WorkspaceInfo {
        &self.provider
    }

    /// The consumer workspaces, `root:consumer-0` …, each bound to the export when a kcp
    /// provider is installed.
    pub fn consumers(&self) -> &[WorkspaceInfo] {
        &self.consumers
    }

    /// The APIExport's name (the Service API group), when a kcp provider is installed. Its
    /// APIExportEndpointSlice has the same name.
    pub fn export_name(&self) -> Option<&str> {
        self.export.as_deref()
    }

    /// A kubeconfig for the provider workspace with the provider's own identity (a
    /// ServiceAccount holding exactly the generated provider-workspace ClusterRole), when a kcp
    /// provider is installed: what `--kcp-kubeconfig` takes.
    pub fn provider_kubeconfig(&self) -> Option<&str> {
        self.provider_kubeconfig.as_deref()
    }

    /// Creates workspace `path` (and its parents) unless it exists, binds it to the provider's
    /// export with every permission claim accepted, and waits until the binding is Bound: a
    /// tenant workspace added after start. Fails when no kcp provider is installed.
    pub async fn bind_workspace(&self, path: &str) -> Result<WorkspaceInfo, DevError> {
        let (Some(body), Some(export)) = (&self.binding, &self.export) else {
            return Err(DevError::Start(format!(
                "cannot bind workspace {path}: no provider declared with `kcp` is installed"
            )));
        };
        let ws = create_workspace(&self.kcp, path).await?;
        let client = self.client(&ws.path);
        let binding_ar = ar("APIBinding", "apibindings", "v1alpha2");
        apply(&client, &binding_ar, body, "APIBinding").await?;
        let bindings = Api::<DynamicObject>::all_with(client, &binding_ar);
        wait_object(
            &bindings,
            export,
            self.timeout,
            &format!("the APIBinding in {path} to become Bound"),
            |b| b.data.pointer("/status/phase") == Some(&json!("Bound")),
        )
        .await?;
        Ok(ws)
    }

    /// Rolls out the next release of the provider in its workspace as the platform operator
    /// applies its manifests (`manifests`, e.g. [`crate::manifests::manifests`]): its
    /// APIResourceSchema, the APIExport pointing at it, the ClusterRole of its identity. The
    /// consumers' bindings stay as they are.
    pub async fn roll_out(&self, manifests: &[Manifest]) -> Result<(), DevError> {
        let release = KcpRelease::of(manifests).ok_or_else(|| {
            DevError::Start(
                "the release has no kcp manifests: declare it with `kcp` to roll it out to kcp"
                    .into(),
            )
        })?;
        release
            .apply(&self.client(&self.provider.path), self.timeout)
            .await?;
        Ok(())
    }

    /// An admin kubeconfig for a workspace (path or logical cluster name).
    pub fn admin_kubeconfig(&self, workspace: &str) -> String {
        self.kcp.kubeconfig(workspace)
    }

    /// An admin client for a workspace, sharing one connection pool with every other workspace
    /// client of this environment.
    pub fn client(&self, workspace: &str) -> kube::Client {
        prefixed_client(&self.admin, &format!("/clusters/{workspace}"))
    }

    /// The ProviderConfig `kcp` block pointing at the provider workspace, given the Secret that
    /// holds [`KcpEnv::provider_kubeconfig`] (see `ProviderEnv::kcp_kubeconfig_secret`).
    pub fn provider_config_block(&self, secret_namespace: &str, secret_name: &str) -> Value {
        json!({
            "providerWorkspace": self.provider.path,
            "kubeconfigSecretRef": {"name": secret_name, "namespace": secret_namespace},
        })
    }

    /// The kubeconfig files of [`crate::dev::TestEnv::write_kubeconfigs`]: the provider
    /// workspace (admin and, with a provider, its own identity) and every consumer (admin).
    pub(crate) fn kubeconfigs(&self) -> Vec<(String, String)> {
        let mut v = vec![(
            "kcp-provider".to_string(),
            self.kcp.kubeconfig(&self.provider.path),
        )];
        if let Some(k) = &self.provider_kubeconfig {
            v.push(("kcp-provider-identity".into(), k.clone()));
        }
        for c in &self.consumers {
            v.push((
                workspace_kubeconfig_stem(&c.path),
                self.kcp.kubeconfig(&c.path),
            ));
        }
        v
    }
}

/// The name (without `.kubeconfig`) of the admin kubeconfig file
/// [`crate::dev::TestEnv::write_kubeconfigs`] writes for workspace `path`: `root:consumer-0` →
/// `kcp-root-consumer-0`.
pub fn workspace_kubeconfig_stem(path: &str) -> String {
    format!("kcp-{}", path.replace(':', "-"))
}

/// What a provider release puts into its kcp provider workspace: the APIResourceSchema, the
/// APIExport pointing at it, and the ClusterRole of the provider's identity there.
struct KcpRelease<'a> {
    schema: &'a Manifest,
    export: &'a Manifest,
    role: &'a Manifest,
}

impl<'a> KcpRelease<'a> {
    /// The release's provider-workspace manifests; `None` for a provider without kcp mode.
    fn of(manifests: &'a [Manifest]) -> Option<Self> {
        let in_workspace = || {
            manifests
                .iter()
                .filter(|m| m.place == Place::KcpProviderWorkspace)
        };
        Some(KcpRelease {
            schema: in_workspace().find(|m| m.kind() == "APIResourceSchema")?,
            export: in_workspace().find(|m| {
                m.kind() == "APIExport" && m.object["apiVersion"] == "apis.kcp.io/v1alpha2"
            })?,
            role: in_workspace().find(|m| m.kind() == "ClusterRole")?,
        })
    }

    /// Applies the schema, the export and the role in the provider workspace `client` points
    /// at, as the platform operator applies a release's manifests, and waits until the export
    /// has its identity; returns the export's name.
    async fn apply(&self, client: &kube::Client, timeout: Duration) -> Result<String, DevError> {
        apply(
            client,
            &ar("APIResourceSchema", "apiresourceschemas", "v1alpha1"),
            &self.schema.object,
            "APIResourceSchema",
        )
        .await?;
        let exports = ar("APIExport", "apiexports", "v1alpha2");
        apply(client, &exports, &self.export.object, "APIExport").await?;
        let export_name = self.export.name().to_string();
        wait_object(
            &Api::<DynamicObject>::all_with(client.clone(), &exports),
            &export_name,
            timeout,
            "the APIExport's identity",
            |o| o.data.pointer("/status/identityHash").is_some(),
        )
        .await?;
        let rbac = ApiResource::erase::<k8s_openapi::api::rbac::v1::ClusterRole>(&());
        apply(client, &rbac, &self.role.object, "ClusterRole").await?;
        Ok(export_name)
    }
}

/// Starts kcp, the workspaces, and (for a kcp provider) the export, bindings and identity.
pub(crate) async fn start(
    setup: &KcpSetup,
    provider: Option<(&str, &[Manifest])>,
    parallelism: usize,
    timeout: Duration,
) -> Result<KcpEnv, DevError> {
    let kcp = Kcp::start("kcp", setup.options.clone())
        .await
        .map_err(kcp_err("starting kcp"))?;
    let admin = kcp.client_for_url(&kcp.url(), kcp.admin_token());
    let provider_ws = create_workspace(&kcp, &setup.provider_workspace).await?;
    let consumers: Vec<WorkspaceInfo> = futures::stream::iter((0..setup.consumers).map(|i| {
        let kcp = kcp.clone();
        async move { create_workspace(&kcp, &format!("root:consumer-{i}")).await }
    }))
    .buffered(parallelism.max(1))
    .try_collect()
    .await?;

    let mut env = KcpEnv {
        kcp,
        admin,
        provider: provider_ws,
        consumers,
        export: None,
        provider_kubeconfig: None,
        binding: None,
        timeout,
    };
    let Some((provider_name, manifests)) = provider else {
        return Ok(env);
    };
    let Some(release) = KcpRelease::of(manifests) else {
        // Not a kcp provider: workspaces only.
        return Ok(env);
    };
    let pc = env.client(&env.provider.path);
    let export_name = release.apply(&pc, timeout).await?;

    // The provider's identity in its workspace.
    let sa_name = provider_name.to_string();
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa_name, "namespace": PROVIDER_SA_NAMESPACE}});
    let sas = Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(
        pc.clone(),
        PROVIDER_SA_NAMESPACE,
    );
    sas.patch(
        &sa_name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&sa),
    )
    .await
    .map_err(DevError::kube(format!(
        "applying the provider ServiceAccount in {}",
        env.provider.path
    )))?;
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": release.role.name()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": release.role.name()},
        "subjects": [{"kind": "ServiceAccount", "name": sa_name, "namespace": PROVIDER_SA_NAMESPACE}],
    });
    let crb = ApiResource::erase::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>(&());
    apply(&pc, &crb, &binding, "ClusterRoleBinding").await?;
    let request: k8s_openapi::api::authentication::v1::TokenRequest =
        serde_json::from_value(json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 7 * 24 * 3600},
        }))
        .map_err(|e| DevError::Start(format!("building a TokenRequest: {e}")))?;
    let answer = sas
        .create_token_request(&sa_name, &PostParams::default(), &request)
        .await
        .map_err(DevError::kube(format!(
            "minting the provider's token in {}",
            env.provider.path
        )))?;
    let token = serde_json::to_value(&answer)
        .ok()
        .and_then(|v| {
            v.pointer("/status/token")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .ok_or_else(|| {
            DevError::Start("the provider's TokenRequest came back without a token".into())
        })?;
    env.provider_kubeconfig = Some(env.kcp.kubeconfig_for(
        &env.provider.path,
        &format!("system:serviceaccount:{PROVIDER_SA_NAMESPACE}:{sa_name}"),
        &token,
    ));

    // Every consumer binds the export and accepts its permission claims.
    let claims: Vec<Value> = release.export.object["spec"]["permissionClaims"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut c| {
            c["selector"] = json!({"matchAll": true});
            c["state"] = json!("Accepted");
            c
        })
        .collect();
    let binding_ar = ar("APIBinding", "apibindings", "v1alpha2");
    let wanted: HashSet<String> = env.consumers.iter().map(|c| c.name.clone()).collect();
    let shards: HashSet<usize> = env.consumers.iter().map(|c| c.shard).collect();
    let waiter = {
        let kcp = env.kcp.clone();
        let binding_ar = binding_ar.clone();
        let export_name = export_name.clone();
        let wanted = wanted.clone();
        tokio::spawn(
            async move { wait_bound(&kcp, shards, &binding_ar, &export_name, wanted).await },
        )
    };
    let body = json!({
        "apiVersion": "apis.kcp.io/v1alpha2",
        "kind": "APIBinding",
        "metadata": {"name": export_name},
        "spec": {
            "reference": {"export": {"path": env.provider.path, "name": export_name}},
            "permissionClaims": claims,
        },
    });
    futures::stream::iter(env.consumers.iter().map(|c| {
        let client = env.client(&c.path);
        let body = body.clone();
        let binding_ar = binding_ar.clone();
        async move { apply(&client, &binding_ar, &body, "APIBinding").await }
    }))
    .buffer_unordered(parallelism.max(1))
    .try_collect::<Vec<()>>()
    .await?;
    tokio::time::timeout(timeout, waiter)
        .await
        .map_err(|_| DevError::Timeout {
            what: format!("{} APIBindings to become Bound", wanted.len()),
            timeout,
        })?
        .map_err(|e| DevError::Start(format!("waiting for APIBindings: {e}")))??;
    env.export = Some(export_name);
    env.binding = Some(body);
    Ok(env)
}

/// Waits with a watch until object `name` satisfies `pred`.
async fn wait_object(
    api: &Api<DynamicObject>,
    name: &str,
    timeout: Duration,
    what: &str,
    pred: impl Fn(&DynamicObject) -> bool,
) -> Result<(), DevError> {
    let wc = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let stream = watcher(api.clone(), wc).applied_objects().default_backoff();
    let wait = async {
        futures::pin_mut!(stream);
        while let Some(o) = stream
            .try_next()
            .await
            .map_err(|e| DevError::Start(format!("watching {name}: {e}")))?
        {
            if pred(&o) {
                return Ok(());
            }
        }
        Err(DevError::Start(format!("the watch of {name} ended")))
    };
    tokio::time::timeout(timeout, wait)
        .await
        .map_err(|_| DevError::Timeout {
            what: format!("{what} ({name})"),
            timeout,
        })?
}

async fn create_workspace(kcp: &Kcp, path: &str) -> Result<WorkspaceInfo, DevError> {
    if let Some(ws) = kcp.workspace(path) {
        return Ok(ws);
    }
    // Parents first (`root:org:ws` needs `root:org`).
    let mut parent = String::from("root");
    let segments: Vec<&str> = path.split(':').skip(1).collect();
    for seg in &segments[..segments.len().saturating_sub(1)] {
        parent = format!("{parent}:{seg}");
        if kcp.workspace(&parent).is_none() {
            kcp.create_workspace(&parent)
                .await
                .map_err(kcp_err("creating a kcp workspace"))?;
        }
    }
    kcp.create_workspace(path)
        .await
        .map_err(kcp_err("creating a kcp workspace"))
}

async fn apply(
    client: &kube::Client,
    resource: &ApiResource,
    obj: &Value,
    what: &str,
) -> Result<(), DevError> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let api: Api<DynamicObject> = match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    api.patch(
        &name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(obj),
    )
    .await
    .map_err(DevError::kube(format!("applying {what} {name}")))?;
    Ok(())
}

/// Waits with one wildcard watch per shard until every wanted workspace has a Bound APIBinding
/// named `export`.
async fn wait_bound(
    kcp: &Kcp,
    shards: HashSet<usize>,
    binding_ar: &ApiResource,
    export: &str,
    mut wanted: HashSet<String>,
) -> Result<(), DevError> {
    if wanted.is_empty() {
        return Ok(());
    }
    let streams = shards.into_iter().map(|s| {
        let api = Api::<DynamicObject>::all_with(kcp.wildcard_client(s), binding_ar);
        watcher(api, watcher::Config::default())
            .applied_objects()
            .default_backoff()
            .boxed()
    });
    let mut merged = futures::stream::select_all(streams);
    while let Some(b) = merged
        .try_next()
        .await
        .map_err(|e| DevError::Start(format!("watching APIBindings: {e}")))?
    {
        let bound =
            b.name_any() == export && b.data.pointer("/status/phase") == Some(&json!("Bound"));
        if bound && let Some(cluster) = b.annotations().get("kcp.io/cluster") {
            wanted.remove(cluster);
            if wanted.is_empty() {
                return Ok(());
            }
        }
    }
    Err(DevError::Start("the APIBinding watch ended".into()))
}
