//! The provider as a process: command-line errors, `init`, `dev`, logs without credentials, and
//! SIGTERM. The processes are this test binary re-executed into [`provider_process`], which runs
//! the same `App` the example binaries run.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;
use service_provider::dev::TestEnv;
use service_provider::kube::Api;
use service_provider::kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use service_provider::openmcp::{AccessRequest, ClusterRequest, ServiceProviderObject};
use service_provider::testing::TestPlatform;
use service_provider::{Mode, Reconcile};

use crate::flaky::Flaky;
use crate::support::{self, TIMEOUT};
use crate::velero::Velero;

/// What service-provider-velero's `main.go` passes to `clusteraccess.NewClusterAccessManager`.
const GO_VELERO_CONTROLLER: &str = "velero.velero.services.openmcp.cloud";
/// service-provider-velero's `LeaderElectionID`.
const GO_VELERO_LEADER_ELECTION_ID: &str = "services.open-control-plane.io.velero";

/// The simulated platform with provider `P` installed as `init` leaves it, standard mode only,
/// and the provider not running: these tests run it as a process.
async fn installed<P: Reconcile>(config: serde_json::Value) -> TestPlatform<P> {
    support::platform::<P>(config)
        .modes([Mode::Standard])
        .start_without_provider()
        .await
        .expect("the simulated platform starts")
}

/// Not a test of its own: the entry point of the provider processes the tests below start. It
/// does nothing unless `SP_TEST_ARGS` is set.
#[test]
fn provider_process() {
    let Ok(args) = std::env::var("SP_TEST_ARGS") else {
        return;
    };
    let args: Vec<String> = serde_json::from_str(&args).expect("SP_TEST_ARGS is a JSON list");
    let code = match std::env::var("SP_TEST_PROVIDER").as_deref() {
        Ok("flaky") => service_provider::App::<Flaky>::new().run_with_args(args),
        Ok("hello") => service_provider::App::<crate::hello::Hello>::new().run_with_args(args),
        Ok("widget") => service_provider::App::<crate::widget::Widget>::new().run_with_args(args),
        // The template's Go provider, written with this framework.
        Ok("takeover") => crate::takeover::app().run_with_args(args),
        // The names service-provider-velero's main.go chose, for taking over from it.
        Ok("velero-go-names") => crate::velero::app()
            .onboarding_controller(GO_VELERO_CONTROLLER)
            .leader_election_id(GO_VELERO_LEADER_ELECTION_ID)
            .run_with_args(args),
        _ => crate::velero::app().run_with_args(args),
    };
    let code = if code == std::process::ExitCode::SUCCESS {
        0
    } else if code == std::process::ExitCode::from(2) {
        2
    } else {
        1
    };
    std::process::exit(code);
}

/// A provider process with its output collected.
pub(crate) struct Provider {
    pub(crate) child: std::process::Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

fn collect(stream: impl std::io::Read + Send + 'static) -> Arc<Mutex<String>> {
    let out = Arc::new(Mutex::new(String::new()));
    let sink = out.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let mut sink = sink.lock().unwrap();
            sink.push_str(&line);
            sink.push('\n');
        }
    });
    out
}

impl Provider {
    pub(crate) fn spawn(provider: &str, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut argv = vec![provider.to_owned()];
        argv.extend(args.iter().map(|a| a.to_string()));
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                "process::provider_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("SP_TEST_ARGS", serde_json::to_string(&argv).unwrap())
            .env("SP_TEST_PROVIDER", provider)
            .env_remove("POD_NAMESPACE")
            .env_remove("RUST_LOG")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBECONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("the provider process starts");
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        Provider {
            child,
            stdout,
            stderr,
        }
    }

    fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// SIGTERM, as the kubelet sends it.
    pub(crate) fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    pub(crate) async fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the reader threads drain the pipes.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return status;
            }
            if started.elapsed() > timeout {
                let _ = self.child.kill();
                panic!(
                    "the provider process did not exit within {timeout:?}; stderr:\n{}",
                    self.stderr()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) async fn run_to_end(
    provider: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (ExitStatus, String) {
    let mut process = Provider::spawn(provider, args, env);
    let status = process.wait(TIMEOUT).await;
    (status, process.stderr())
}

/// The provider's platform kubeconfig (its ServiceAccount, bound to the generated ClusterRole
/// only) in a file of its own, for a process's `--kubeconfig` or `KUBECONFIG`.
pub(crate) fn provider_kubeconfig(env: &TestEnv) -> PathBuf {
    static FILES: AtomicUsize = AtomicUsize::new(0);
    let dir = tempdir(&format!(
        "kubeconfig-{}",
        FILES.fetch_add(1, Ordering::SeqCst)
    ));
    let file = dir.join("provider.kubeconfig");
    let provider = env.provider().expect("a provider is installed");
    std::fs::write(&file, provider.platform_kubeconfig()).unwrap();
    file
}

impl Provider {
    /// `run` of `app` against `env`'s platform, as the provider's ServiceAccount, with `flags`
    /// after `--provider-name`, `--kubeconfig` and `POD_NAMESPACE`. Metrics and probes are off
    /// unless `flags` bind them, so that tests running in parallel never share a port.
    pub(crate) fn run(app: &str, env: &TestEnv, flags: &[&str]) -> Self {
        let kubeconfig = provider_kubeconfig(env);
        let provider = env.provider().expect("a provider is installed").name();
        let mut args = vec![
            "run",
            "--provider-name",
            provider,
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ];
        for endpoint in ["--metrics-bind-address", "--health-probe-bind-address"] {
            if !flags.contains(&endpoint) {
                args.extend([endpoint, "0"]);
            }
        }
        args.extend(flags);
        Self::spawn(app, &args, &[("POD_NAMESPACE", env.pod_namespace())])
    }
}

/// Provider `app` as the openMCP operator starts it: its init Job's and Deployment's arguments
/// and `POD_*` environment, with the platform cluster from `KUBECONFIG` where a pod has its
/// in-cluster config — a list whose first file does not exist, as client-go reads it.
pub(crate) struct Operated<'e> {
    app: &'e str,
    env: &'e TestEnv,
    provider: &'e str,
    kubeconfig: String,
}

/// A `run` container the operator started, with its probe and metrics addresses.
pub(crate) struct Deployed {
    pub(crate) process: Provider,
    pub(crate) probes: SocketAddr,
    pub(crate) metrics: SocketAddr,
}

impl<'e> Operated<'e> {
    /// `app`'s containers against `env`'s platform, as the provider's ServiceAccount.
    pub(crate) fn new(app: &'e str, env: &'e TestEnv) -> Self {
        let file = provider_kubeconfig(env);
        let absent = file.with_file_name("absent.kubeconfig");
        let kubeconfig = std::env::join_paths([absent, file])
            .unwrap()
            .into_string()
            .unwrap();
        let provider = env.provider().expect("a provider is installed").name();
        Operated {
            app,
            env,
            provider,
            kubeconfig,
        }
    }

    /// The environment of pod `pod`: the downward API's, and `KUBECONFIG`.
    fn pod_env(&self, pod: &str) -> Vec<(String, String)> {
        let service_account = format!("sp-{}", self.provider);
        let mut vars = operator_env(pod, self.env.pod_namespace(), &service_account);
        vars.push(("KUBECONFIG".into(), self.kubeconfig.clone()));
        vars
    }

    /// The init Job's container, run to its end: its exit status and stderr.
    pub(crate) async fn init(&self) -> (ExitStatus, String) {
        self.init_with(&["init"]).await
    }

    /// The init Job's container with the ServiceProvider's `initCommand` `command`.
    pub(crate) async fn init_with(&self, command: &[&str]) -> (ExitStatus, String) {
        let env = self.pod_env(&format!("sp-{}-init-x7k2p", self.provider));
        let args = operator_args(command, self.provider);
        run_to_end(self.app, &strs(&args), &pairs(&env)).await
    }

    /// The Deployment's container in pod `pod`, for `replicas` replicas: `--leader-elect=true`
    /// for more than one, and `--metrics-bind-address=:<port> --metrics-secure=false` on a free
    /// port (`deployment.go`). The probe port comes from the ServiceProvider's runCommand (the
    /// operator appends after it), so that parallel tests on this machine never share :8081.
    pub(crate) fn run(&self, pod: &str, replicas: u32) -> Deployed {
        self.run_with(pod, replicas, &[])
    }

    /// The Deployment's container with `flags` added to the ServiceProvider's `runCommand`.
    pub(crate) fn run_with(&self, pod: &str, replicas: u32, flags: &[&str]) -> Deployed {
        let probe_port = support::free_port();
        let metrics_port = support::free_port();
        let probe_flag = format!("--health-probe-bind-address=:{probe_port}");
        let mut command = vec!["run", &probe_flag];
        command.extend(flags);
        let mut args = operator_args(&command, self.provider);
        if replicas > 1 {
            args.push("--leader-elect=true".into());
        }
        args.extend([
            format!("--metrics-bind-address=:{metrics_port}"),
            "--metrics-secure=false".into(),
        ]);
        let process = Provider::spawn(self.app, &strs(&args), &pairs(&self.pod_env(pod)));
        Deployed {
            process,
            probes: ([127, 0, 0, 1], probe_port).into(),
            metrics: ([127, 0, 0, 1], metrics_port).into(),
        }
    }
}

/// The arguments the openMCP operator gives both of a provider's containers
/// (openmcp-operator `internal/controllers/provider/install/`, `job.go` and `deployment.go`): the
/// ServiceProvider's `initCommand` or `runCommand` (default `["init"]`, `["run"]`), then
/// `--environment`, `--verbosity` and `--provider-name`; this environment is `test`, INFO.
fn operator_args(command: &[&str], provider: &str) -> Vec<String> {
    let mut args: Vec<String> = command.iter().map(|a| a.to_string()).collect();
    args.extend([
        "--environment=test".to_owned(),
        "--verbosity=INFO".to_owned(),
        format!("--provider-name={provider}"),
    ]);
    args
}

/// The environment the operator gives both containers (`values.go` `EnvironmentVariables`):
/// the pod's name, namespace, IP and ServiceAccount from the downward API.
fn operator_env(
    pod_name: &str,
    pod_namespace: &str,
    service_account: &str,
) -> Vec<(String, String)> {
    vec![
        ("POD_NAME".into(), pod_name.into()),
        ("POD_NAMESPACE".into(), pod_namespace.into()),
        ("POD_IP".into(), "10.244.0.17".into()),
        ("POD_SERVICE_ACCOUNT_NAME".into(), service_account.into()),
    ]
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

fn pairs(vars: &[(String, String)]) -> Vec<(&str, &str)> {
    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

fn one_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected exactly one line, got:\n{stderr}");
    lines[0]
}

#[tokio::test]
async fn bad_flags_and_broken_kubeconfigs_end_with_one_line() {
    let (status, stderr) = run_to_end("velero", &["run", "--verbosity", "LOUD"], &[]).await;
    assert_eq!(status.code(), Some(2));
    let line = one_line(&stderr);
    assert!(
        line.starts_with("error: ")
            && line.contains("--verbosity")
            && line.contains("DEBUG, INFO or ERROR"),
        "{line}"
    );

    let (status, stderr) = run_to_end("velero", &["run", "--log-format", "yaml"], &[]).await;
    assert_eq!(status.code(), Some(2));
    let line = one_line(&stderr);
    assert!(
        line.contains("--log-format") && line.contains("use json or text"),
        "{line}"
    );

    let (status, stderr) = run_to_end("velero", &["run", "--no-such-flag"], &[]).await;
    assert_eq!(status.code(), Some(2));
    assert!(one_line(&stderr).contains("--no-such-flag"));

    let (status, stderr) =
        run_to_end("velero", &["run", "--metrics-bind-address", "nowhere"], &[]).await;
    assert_ne!(status.code(), Some(0));
    assert!(one_line(&stderr).contains("--metrics-bind-address"));

    let dir = tempdir("broken");
    let broken = dir.join("broken.kubeconfig");
    std::fs::write(&broken, "clusters: [ this is not a kubeconfig").unwrap();
    let (status, stderr) = run_to_end(
        "velero",
        &["run", "--kubeconfig", broken.to_str().unwrap()],
        &[("POD_NAMESPACE", "x")],
    )
    .await;
    assert_ne!(status.code(), Some(0));
    let line = one_line(&stderr);
    assert!(
        line.contains("--kubeconfig") && line.contains("valid kubeconfig"),
        "{line}"
    );

    let missing = dir.join("missing.kubeconfig");
    let (status, stderr) = run_to_end(
        "velero",
        &["run", "--kubeconfig", missing.to_str().unwrap()],
        &[("POD_NAMESPACE", "x")],
    )
    .await;
    assert_ne!(status.code(), Some(0));
    assert!(one_line(&stderr).contains("cannot read --kubeconfig"));
}

/// A fresh directory `name` of this test process under the system temp dir.
pub(crate) fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sp-standard-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every credential the platform holds: tokens in Secrets, and every cluster's admin token.
async fn credentials(env: &TestEnv) -> Vec<String> {
    let mut out = Vec::new();
    let secrets: Api<Secret> = Api::all(env.platform().client());
    for secret in secrets.list(&ListParams::default()).await.unwrap().items {
        for (key, value) in secret.data.unwrap_or_default() {
            if (key == "token" || key == "kubeconfig")
                && let Ok(text) = String::from_utf8(value.0)
            {
                if key == "token" {
                    out.push(text);
                } else if let Some(token) =
                    text.lines().find_map(|l| l.trim().strip_prefix("token: "))
                {
                    out.push(token.trim().to_owned());
                }
            }
        }
    }
    for cluster in [env.platform(), env.onboarding()]
        .into_iter()
        .cloned()
        .chain(env.clusters().into_iter().map(|c| c.handle))
    {
        out.push(cluster.admin_token().to_owned());
    }
    if let Some(provider) = env.provider()
        && let Some(token) = provider
            .platform_kubeconfig()
            .lines()
            .find_map(|l| l.trim().strip_prefix("token: "))
    {
        out.push(token.trim().to_owned());
    }
    out.retain(|t| t.len() >= 16);
    out.sort();
    out.dedup();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_never_show_credentials_and_sigterm_stops_the_process() {
    let platform = installed::<Velero>(crate::velero_config()).await;
    let env = platform.env();
    let mut process = Provider::run(
        "velero",
        env,
        &[
            "--verbosity",
            "DEBUG",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
        ],
    );
    let tenant = platform
        .create_tenant("project-logs--ws-a/logged", json!({ "version": "1.15.0" }))
        .await
        .expect("the tenant is created");
    tenant.wait_ready().await.expect("the tenant is Ready");

    process.terminate();
    let status = process.wait(TIMEOUT).await;
    assert_eq!(
        status.code(),
        Some(0),
        "graceful exit after SIGTERM; stderr:\n{}",
        process.stderr()
    );
    let logs = process.stderr();
    assert!(
        logs.contains("reconciling") && logs.contains(r#""level":"debug""#),
        "DEBUG logs were written (JSON lines, the default of run):\n{logs}"
    );
    let credentials = credentials(env).await;
    assert!(
        credentials.len() >= 5,
        "the platform holds tokens to look for: {}",
        credentials.len()
    );
    for credential in &credentials {
        assert!(
            !logs.contains(credential.as_str()),
            "a token appears in the logs"
        );
    }
    for marker in [
        "certificate-authority-data",
        "client-key-data",
        "BEGIN CERTIFICATE",
        "Bearer ",
        "token: ",
    ] {
        assert!(!logs.contains(marker), "{marker:?} appears in the logs");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_running_reconcile_finish() {
    let platform = installed::<Flaky>(json!({})).await;
    let mut process = Provider::run("flaky", platform.env(), &[]);
    let tenant = platform
        .create_tenant("project-sigterm--ws-a/slow", json!({ "delaySeconds": 3 }))
        .await
        .expect("the tenant is created");
    let config_maps: Api<ConfigMap> = Api::namespaced(tenant.mcp().client(), "default");
    support::wait(&config_maps, "started", |o: Option<&ConfigMap>| o.is_some()).await;

    // The reconcile is running: stop the process now.
    process.terminate();
    let status = process.wait(TIMEOUT).await;
    assert_eq!(status.code(), Some(0), "stderr:\n{}", process.stderr());
    let flaky = tenant.get().await.unwrap();
    assert!(
        support::ready(Some(&flaky)),
        "the running reconcile finished and wrote its status: {:?}",
        flaky.status
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_installs_the_crds_and_registers_the_service_api() {
    let platform = installed::<Velero>(crate::velero_config()).await;
    let env = platform.env();
    // Undo what the environment pre-installed, so `init` has to do it.
    let crds: Api<CustomResourceDefinition> = Api::all(env.onboarding().client());
    crds.delete(
        "veleroes.velero.services.open-control-plane.io",
        &DeleteParams::default(),
    )
    .await
    .unwrap();
    support::wait(
        &crds,
        "veleroes.velero.services.open-control-plane.io",
        |o: Option<&CustomResourceDefinition>| o.is_none(),
    )
    .await;
    // What an earlier version registered: RegisterGVKsAtServiceProvider replaces it.
    let sps: Api<ServiceProviderObject> = Api::all(env.platform().client());
    sps.patch_status(
        "velero",
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": { "resources": [
            { "group": "velero.services.openmcp.cloud", "version": "v1alpha1", "kind": "Velero" },
            { "group": "velero.services.open-control-plane.io", "version": "v1alpha1", "kind": "Velero" },
        ] } })),
    )
    .await
    .unwrap();

    let kubeconfig = provider_kubeconfig(env);
    let args = [
        "init",
        "--environment",
        "test",
        "--verbosity",
        "INFO",
        "--provider-name",
        "velero",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
    ];
    for attempt in 0..2 {
        let (status, stderr) =
            run_to_end("velero", &args, &[("POD_NAMESPACE", env.pod_namespace())]).await;
        assert_eq!(status.code(), Some(0), "init #{attempt} failed:\n{stderr}");
    }
    let crd = crds
        .get("veleroes.velero.services.open-control-plane.io")
        .await
        .expect("the Service API CRD");
    assert_eq!(
        crd.metadata.labels.unwrap()["openmcp.cloud/cluster"],
        "onboarding"
    );
    let resources = sps.get("velero").await.unwrap().status.unwrap().resources;
    assert_eq!(
        resources.len(),
        1,
        "registered once, the stale GVK gone: {resources:?}"
    );
    assert_eq!(
        (resources[0].group.as_str(), resources[0].kind.as_str()),
        ("velero.services.open-control-plane.io", "Velero")
    );
    let name = "velero.services.open-control-plane.io--onboarding-init";
    Api::<ClusterRequest>::namespaced(env.platform().client(), env.pod_namespace())
        .get(name)
        .await
        .expect("onboarding-init ClusterRequest");

    // The CRD as a Go provider's init left it: the same name (controller-gen's plural), written
    // by another manager, with a schema and a column ours does not have. `init` takes it over
    // whole, as Go's CRDManager replaces the spec, rather than merging or adding a second CRD.
    let mut go_crd = crds
        .get("veleroes.velero.services.open-control-plane.io")
        .await
        .unwrap();
    let version = &mut go_crd.spec.versions[0];
    let spec_schema = version
        .schema
        .as_mut()
        .and_then(|s| s.open_api_v3_schema.as_mut())
        .and_then(|s| s.properties.as_mut())
        .and_then(|p| p.get_mut("spec"))
        .expect("a spec schema");
    spec_schema
        .properties
        .get_or_insert_with(Default::default)
        .insert(
            "goOnly".into(),
            serde_json::from_value(json!({ "type": "string" })).unwrap(),
        );
    spec_schema
        .required
        .get_or_insert_with(Vec::new)
        .push("goOnly".into());
    version
        .additional_printer_columns
        .get_or_insert_with(Vec::new)
        .push(
            serde_json::from_value(
                json!({ "name": "GoOnly", "type": "string", "jsonPath": ".spec.goOnly" }),
            )
            .unwrap(),
        );
    go_crd
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            "controller-gen.kubebuilder.io/version".into(),
            "v0.18.0".into(),
        );
    go_crd.metadata.managed_fields = None;
    crds.replace(
        "veleroes.velero.services.open-control-plane.io",
        &service_provider::kube::api::PostParams {
            field_manager: Some("manager".into()),
            ..Default::default()
        },
        &go_crd,
    )
    .await
    .unwrap();
    let (status, stderr) =
        run_to_end("velero", &args, &[("POD_NAMESPACE", env.pod_namespace())]).await;
    assert_eq!(
        status.code(),
        Some(0),
        "init over the Go CRD failed:\n{stderr}"
    );
    let taken_over = crds
        .get("veleroes.velero.services.open-control-plane.io")
        .await
        .unwrap();
    let version = &taken_over.spec.versions[0];
    let columns: Vec<&str> = version
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| c.name.as_str())
        .collect();
    assert!(
        !columns.contains(&"GoOnly"),
        "the Go column is gone: {columns:?}"
    );
    let required = version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| s.properties.as_ref())
        .and_then(|p| p.get("spec"))
        .and_then(|s| s.required.clone())
        .unwrap_or_default();
    assert!(!required.contains(&"goOnly".to_owned()), "{required:?}");
    assert_eq!(
        taken_over.metadata.annotations.unwrap()["controller-gen.kubebuilder.io/version"],
        "v0.18.0",
        "annotations are added to, as Go's CRDManager does"
    );
    let velero_crds: Vec<String> = crds
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| {
            c.spec.group == "velero.services.open-control-plane.io" && c.spec.names.kind == "Velero"
        })
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(
        velero_crds,
        ["veleroes.velero.services.open-control-plane.io"]
    );
    Api::<AccessRequest>::namespaced(env.platform().client(), env.pod_namespace())
        .get(name)
        .await
        .expect("onboarding-init AccessRequest");
}

/// `init` and `run` started exactly as the openMCP operator's init Job and Deployment start
/// them — its arguments, its `POD_*` environment — with the cluster from `KUBECONFIG` (a list,
/// as client-go reads it) where a pod has its in-cluster config: `init` succeeds, and `run`
/// serves its probes and plain-HTTP metrics where the operator said, takes the Lease
/// (`--leader-elect=true` for two replicas) and gets an object Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_command_lines_start_and_serve() {
    let platform = installed::<Velero>(crate::velero_config()).await;
    let env = platform.env();
    let operated = Operated::new("velero", env);
    let (status, stderr) = operated.init().await;
    assert_eq!(status.code(), Some(0), "init failed:\n{stderr}");
    let Deployed {
        mut process,
        probes,
        metrics,
    } = operated.run("sp-velero-6d5f8b7c9-q2w4e", 2);
    let tenant = platform
        .create_tenant(
            "project-operated--ws-a/operated",
            json!({ "version": "1.15.0" }),
        )
        .await
        .expect("the tenant is created");
    tenant.wait_ready().await.expect("the tenant is Ready");
    if let Ok(Some(status)) = process.child.try_wait() {
        panic!("run exited with {status}:\n{}", process.stderr());
    }
    let healthz = support::http_get(probes, "/healthz").await.unwrap();
    assert!(healthz.starts_with("HTTP/1.1 200"), "{healthz}");
    let readyz = support::http_get(probes, "/readyz").await.unwrap();
    assert!(readyz.starts_with("HTTP/1.1 200"), "{readyz}");
    let body = support::http_get(metrics, "/metrics").await.unwrap();
    assert!(
        body.starts_with("HTTP/1.1 200") && body.contains("# TYPE") && body.contains("# EOF"),
        "plain-HTTP metrics on {metrics}:\n{body}"
    );
    // --leader-elect=true: the Lease where a Go provider's manager holds it — the onboarding
    // cluster, the pod's namespace — held by this pod.
    let lease = Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(
        env.onboarding().client(),
        env.pod_namespace(),
    )
    .get("velero-standard")
    .await
    .expect("the standard-mode Lease on the onboarding cluster");
    let holder = lease.spec.unwrap().holder_identity.unwrap_or_default();
    assert!(holder.starts_with("sp-velero-6d5f8b7c9-q2w4e_"), "{holder}");

    process.terminate();
    let status = process.wait(TIMEOUT).await;
    assert_eq!(status.code(), Some(0), "stderr:\n{}", process.stderr());
}

/// A provider that takes over from service-provider-velero names its onboarding requests as the
/// Go provider did (`<its controller name>--onboarding-init`), so `init` reuses the requests the Go
/// provider left instead of ordering a second set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_uses_the_go_providers_onboarding_controller_name() {
    let platform = installed::<Velero>(crate::velero_config()).await;
    let env = platform.env();
    let kubeconfig = provider_kubeconfig(env);
    let name = format!("{GO_VELERO_CONTROLLER}--onboarding-init");
    let crs: Api<ClusterRequest> = Api::namespaced(env.platform().client(), env.pod_namespace());
    // The ClusterRequest the Go provider's init created (its spec is immutable, so reusing it is
    // the only way not to order a second onboarding cluster).
    let go_request: ClusterRequest = serde_json::from_value(json!({
        "apiVersion": "clusters.openmcp.cloud/v1alpha1",
        "kind": "ClusterRequest",
        "metadata": {
            "name": name,
            "namespace": env.pod_namespace(),
            "labels": { "openmcp.cloud/managed-by": GO_VELERO_CONTROLLER },
        },
        "spec": { "purpose": "onboarding" },
    }))
    .unwrap();
    crs.create(&Default::default(), &go_request).await.unwrap();
    let args = operator_args(&["init"], "velero");
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--kubeconfig", kubeconfig.to_str().unwrap()]);
    let (status, stderr) = run_to_end(
        "velero-go-names",
        &args,
        &[("POD_NAMESPACE", env.pod_namespace())],
    )
    .await;
    assert_eq!(status.code(), Some(0), "init failed:\n{stderr}");
    let ours = ListParams::default().labels(&format!(
        "openmcp.cloud/managed-by in ({GO_VELERO_CONTROLLER},velero.services.open-control-plane.io)"
    ));
    let names: Vec<String> = crs
        .list(&ours)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|cr| cr.metadata.name)
        .collect();
    assert_eq!(
        names,
        [name.as_str()],
        "one onboarding ClusterRequest, the Go one"
    );
    let ar = Api::<AccessRequest>::namespaced(env.platform().client(), env.pod_namespace())
        .get(&name)
        .await
        .expect("the onboarding-init AccessRequest under the Go name");
    assert_eq!(
        ar.metadata.labels.unwrap()["openmcp.cloud/managed-by"],
        GO_VELERO_CONTROLLER
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_serves_a_ready_object_and_writes_kubeconfigs() {
    let dir = tempdir("dev");
    // No subcommand and no cluster configured: `dev`, as `cargo run --example velero` does.
    let mut process = Provider::spawn("velero", &["--kubeconfig-dir", dir.to_str().unwrap()], &[]);
    let started = Instant::now();
    while !process.stdout().contains("serving until Ctrl-C") {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "dev did not come up:\n{}\n{}",
            process.stdout(),
            process.stderr()
        );
        if let Some(status) = process.child.try_wait().unwrap() {
            panic!(
                "dev exited with {status}:\n{}\n{}",
                process.stdout(),
                process.stderr()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stdout = process.stdout();
    assert!(
        stdout.contains("Velero dev: Ready"),
        "progress was shown:\n{stdout}"
    );
    let onboarding =
        std::fs::read(dir.join("onboarding.kubeconfig")).expect("onboarding.kubeconfig");
    let client = service_provider_runtime::access::clients::ClientFactory::new()
        .client(&onboarding)
        .await
        .unwrap();
    let velero = Api::<Velero>::namespaced(client, "project-dev--ws-dev")
        .get("dev")
        .await
        .unwrap();
    assert!(support::ready(Some(&velero)), "{:?}", velero.status);
    for file in [
        "platform.kubeconfig",
        "mcp-project-dev--ws-dev-dev.kubeconfig",
    ] {
        assert!(dir.join(file).exists(), "{file} written");
    }
    // Velero is declared with `kcp`: two consumer workspaces bound to its export, each with a
    // sample object served by kcp mode, their kubeconfigs written and printed.
    for ws in ["root:consumer-0", "root:consumer-1"] {
        let file = dir.join(format!("kcp-{}.kubeconfig", ws.replace(':', "-")));
        assert!(
            stdout.contains(&file.display().to_string()),
            "{} printed:\n{stdout}",
            file.display()
        );
        let kubeconfig = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let client = service_provider_runtime::access::clients::ClientFactory::new()
            .client(&kubeconfig)
            .await
            .unwrap();
        let velero = support::wait(
            &Api::<Velero>::namespaced(client, "default"),
            "dev",
            support::ready::<Velero>,
        )
        .await;
        assert!(velero.is_some(), "the sample Velero in {ws} is Ready");
        let kubectl = tokio::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&file)
            .args(["get", "veleroes", "-A"])
            .output()
            .await
            .expect("kubectl runs");
        let out = String::from_utf8_lossy(&kubectl.stdout);
        assert!(
            kubectl.status.success(),
            "kubectl get veleroes -A in {ws}: {}",
            String::from_utf8_lossy(&kubectl.stderr)
        );
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().take(2).eq(["default", "dev"])),
            "kubectl lists the sample in {ws}:\n{out}"
        );
    }
    process.terminate();
    assert_eq!(process.wait(TIMEOUT).await.code(), Some(0));
}
