//! Real kube-apiservers for tests: one etcd per [`RealStack`] and one kube-apiserver per
//! simulated cluster, sharing that etcd under a distinct `--etcd-prefix`, on loopback.
//!
//! The binaries are found as controller-runtime's envtest finds them (`TEST_ASSET_KUBE_APISERVER`
//! and `TEST_ASSET_ETCD`, then `KUBEBUILDER_ASSETS`), else in the cache `cargo xtask realstack`
//! builds them into (`$XDG_CACHE_HOME/service-provider/realstack/<kubernetes>-etcd<etcd>/`).
//! kube-apiserver runs with envtest's arguments: secure serving only, with a serving certificate
//! and client CA from a CA generated per [`RealStack`], a ServiceAccount signing key of its own,
//! `--authorization-mode=RBAC`, and the ServiceAccount admission plugin off (no controller
//! manager creates default ServiceAccounts). The admin authenticates with a client certificate
//! in `system:masters`.
//!
//! Every process runs in a process group of its own and is killed with it when its handle is
//! dropped; its directory (data, certificates, log) is removed. On Linux a process is also
//! killed when the test process dies without dropping it (`PR_SET_PDEATHSIG`), and directories
//! left by a dead test process are removed by the next [`RealStack::start`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), service_provider_runtime::dev::realstack::RealStackError> {
//! use service_provider_runtime::dev::realstack::RealStack;
//!
//! let stack = RealStack::start().await?;
//! let cluster = stack.kube_apiserver("mcp-a").await?;
//! let client = cluster.client().await?;
//! let version = client.apiserver_version().await.map_err(|e| e.to_string());
//! # let _ = version; Ok(()) }
//! ```

use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use service_provider_apiserver::tls::ClientCertificate;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The kube-apiserver release `cargo xtask realstack` builds (`realstack/go.mod`).
pub const KUBERNETES_VERSION: &str = "v1.37.2";
/// The etcd release `cargo xtask realstack` builds (`realstack/etcd/go.mod`).
pub const ETCD_VERSION: &str = "v3.7.3";
/// How long a process may take to become ready unless [`RealStack::with_start_timeout`] says.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(90);

/// The admin's user name in its client certificate.
pub(crate) const ADMIN_USER: &str = "realstack-admin";
/// The admin's group: kube-apiserver's superusers.
const ADMIN_GROUP: &str = "system:masters";
/// How often a process that starts is looked at.
const POLL: Duration = Duration::from_millis(100);
/// How often a start that failed on a port taken meanwhile is tried again.
const START_ATTEMPTS: usize = 3;

/// Errors finding, starting or talking to the real control plane.
#[derive(Debug, thiserror::Error)]
pub enum RealStackError {
    /// The binaries are not where they are looked for.
    #[error("{0}")]
    NoBinaries(String),
    /// A file or process operation failed.
    #[error("could not {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: io::Error,
    },
    /// Certificate or key generation failed.
    #[error("could not generate a certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// A process exited before it was ready.
    #[error("{what} exited before it was ready ({status}); the end of its log:\n{log}")]
    Exited {
        /// Which process.
        what: String,
        /// How it exited.
        status: String,
        /// The last lines it wrote.
        log: String,
    },
    /// A process was not ready in time.
    #[error("{what} was not ready after {timeout:?} ({last}); the end of its log:\n{log}")]
    NotReady {
        /// Which process.
        what: String,
        /// How long it was waited for.
        timeout: Duration,
        /// The last answer to the readiness check.
        last: String,
        /// The last lines it wrote.
        log: String,
    },
    /// A kubeconfig or client could not be built.
    #[error("could not build a client for {what}: {detail}")]
    Client {
        /// Which cluster.
        what: String,
        /// Why.
        detail: String,
    },
}

fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> RealStackError {
    let what = what.into();
    move |source| RealStackError::Io { what, source }
}

/// Where `kube-apiserver` and `etcd` are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binaries {
    /// The kube-apiserver binary.
    pub kube_apiserver: PathBuf,
    /// The etcd binary.
    pub etcd: PathBuf,
}

/// The environment variable that asks for the real backend: `kube-apiserver` makes a test that
/// finds no binaries fail ([`Binaries::for_test`]); `cargo xtask test-real` and CI set it.
pub const BACKEND_VAR: &str = "SERVICE_PROVIDER_TEST_BACKEND";

/// Whether [`BACKEND_VAR`] asks for real kube-apiservers.
pub fn real_backend_requested() -> bool {
    std::env::var(BACKEND_VAR).as_deref() == Ok("kube-apiserver")
}

/// The test process's one [`RealStack`] (one etcd), started by the first caller; the clusters
/// the simulated platform starts on real kube-apiservers share it, each under its own prefix.
/// Its etcd lives as long as the process (see the module's doc).
pub async fn shared_stack() -> Result<&'static RealStack, RealStackError> {
    static SHARED: tokio::sync::OnceCell<RealStack> = tokio::sync::OnceCell::const_new();
    SHARED
        .get_or_try_init(|| async {
            RealStack::start_with(Binaries::find()?, DEFAULT_START_TIMEOUT).await
        })
        .await
}

impl Binaries {
    /// The binaries for a test: `None` when they are not built, after a line saying the test is
    /// skipped and how to build them — unless [`BACKEND_VAR`] is `kube-apiserver`, where a test
    /// must not pass without running, and missing binaries panic with the same explanation.
    pub fn for_test() -> Option<Self> {
        match Self::find() {
            Ok(binaries) => Some(binaries),
            Err(e) if real_backend_requested() => {
                panic!("{BACKEND_VAR}=kube-apiserver, but {e}; `cargo xtask test-real` builds them")
            }
            Err(e) => {
                eprintln!("skipped: {e}");
                None
            }
        }
    }

    /// Finds the binaries in this process's environment; see [`Binaries::find_in`].
    pub fn find() -> Result<Self, RealStackError> {
        Self::find_in(|name| std::env::var_os(name).filter(|v| !v.is_empty()))
    }

    /// Finds the binaries with `env` as the environment, in envtest's order: the per-binary
    /// `TEST_ASSET_KUBE_APISERVER` and `TEST_ASSET_ETCD`, then the directory
    /// `KUBEBUILDER_ASSETS`, then the cache of `cargo xtask realstack` (under `XDG_CACHE_HOME`,
    /// else `HOME/.cache`). A location that is named but lacks the binary is an error, not
    /// skipped.
    pub fn find_in(
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, RealStackError> {
        let assets = env("KUBEBUILDER_ASSETS").map(PathBuf::from);
        let cache = cache_dir(
            env("XDG_CACHE_HOME").map(PathBuf::from),
            env("HOME").map(PathBuf::from),
        );
        let find = |name: &str, override_var: &str| -> Result<PathBuf, RealStackError> {
            let (path, source) = if let Some(path) = env(override_var) {
                (PathBuf::from(path), override_var.to_string())
            } else if let Some(dir) = &assets {
                (dir.join(name), "KUBEBUILDER_ASSETS".to_string())
            } else if let Some(dir) = &cache {
                (dir.join(name), "the realstack cache".to_string())
            } else {
                return Err(RealStackError::NoBinaries(format!(
                    "no {name}: set KUBEBUILDER_ASSETS, or HOME for the realstack cache"
                )));
            };
            if path.is_file() {
                Ok(path)
            } else {
                Err(RealStackError::NoBinaries(format!(
                    "no {name} at {} (from {source}): run `cargo xtask realstack` to build \
                     kube-apiserver {KUBERNETES_VERSION} and etcd {ETCD_VERSION}, or set \
                     KUBEBUILDER_ASSETS to a directory holding envtest's binaries",
                    path.display()
                )))
            }
        };
        Ok(Binaries {
            kube_apiserver: find("kube-apiserver", "TEST_ASSET_KUBE_APISERVER")?,
            etcd: find("etcd", "TEST_ASSET_ETCD")?,
        })
    }
}

/// The directory `cargo xtask realstack` builds the pinned versions into.
fn cache_dir(xdg_cache_home: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    let base = xdg_cache_home
        .filter(|p| p.is_absolute())
        .or_else(|| home.filter(|p| p.is_absolute()).map(|h| h.join(".cache")))?;
    Some(
        base.join("service-provider")
            .join("realstack")
            .join(format!(
                "{}-etcd{}",
                KUBERNETES_VERSION.trim_start_matches('v'),
                ETCD_VERSION.trim_start_matches('v')
            )),
    )
}

/// One etcd and the CA of every kube-apiserver started from it; see the module's doc.
pub struct RealStack {
    binaries: Binaries,
    etcd: Arc<Etcd>,
    ca: Arc<Ca>,
    start_timeout: Duration,
}

impl std::fmt::Debug for RealStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealStack")
            .field("binaries", &self.binaries)
            .field("etcd", &self.etcd.url)
            .finish_non_exhaustive()
    }
}

impl RealStack {
    /// Finds the binaries ([`Binaries::find`]) and starts etcd.
    pub async fn start() -> Result<Self, RealStackError> {
        Self::start_with(Binaries::find()?, DEFAULT_START_TIMEOUT).await
    }

    /// Starts etcd from `binaries`, waiting at most `start_timeout` for it and, later, for each
    /// kube-apiserver.
    pub async fn start_with(
        binaries: Binaries,
        start_timeout: Duration,
    ) -> Result<Self, RealStackError> {
        remove_stale_directories();
        let ca = Arc::new(Ca::generate()?);
        let etcd = Arc::new(Etcd::start(&binaries.etcd, start_timeout).await?);
        Ok(RealStack {
            binaries,
            etcd,
            ca,
            start_timeout,
        })
    }

    /// The same stack, waiting at most `timeout` for each kube-apiserver it starts.
    pub fn with_start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// The shared etcd's client URL.
    pub fn etcd_url(&self) -> &str {
        &self.etcd.url
    }

    /// Starts a kube-apiserver for the cluster `name` on the shared etcd, under a prefix no other
    /// kube-apiserver of this process uses, and waits until its `/readyz` answers 200.
    pub async fn kube_apiserver(&self, name: &str) -> Result<KubeApiserver, RealStackError> {
        let mut last = None;
        for _ in 0..START_ATTEMPTS {
            match KubeApiserver::start(self, name).await {
                // A port found free was taken before kube-apiserver bound it: another port.
                Err(RealStackError::Exited { log, .. })
                    if log.contains("address already in use") =>
                {
                    last = Some(log);
                }
                other => return other,
            }
        }
        Err(RealStackError::Exited {
            what: format!("kube-apiserver {name}"),
            status: format!("{START_ATTEMPTS} attempts found no free port"),
            log: last.unwrap_or_default(),
        })
    }
}

/// A kube-apiserver; killed, and its directory removed, when dropped.
pub struct KubeApiserver {
    name: String,
    audit_log: PathBuf,
    url: String,
    etcd_prefix: String,
    ca_pem: String,
    admin: ClientCertificate,
    // Dropped first: the process goes before its directory and before the etcd it uses.
    process: Process,
    _etcd: Arc<Etcd>,
}

impl std::fmt::Debug for KubeApiserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeApiserver")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("etcd_prefix", &self.etcd_prefix)
            .finish_non_exhaustive()
    }
}

impl KubeApiserver {
    async fn start(stack: &RealStack, name: &str) -> Result<Self, RealStackError> {
        let dir = TempDir::new(&format!("kube-apiserver-{name}"))?;
        let port = free_port()?;
        let url = format!("https://127.0.0.1:{port}");
        let etcd_prefix = format!("/service-provider/{}-{name}", dir.seq);
        let sa = KeyPair::generate()?;
        let (sa_key, sa_pub) = (sa.serialize_pem(), sa.public_key_pem());
        let files = [
            ("audit-policy.yaml", AUDIT_POLICY),
            ("ca.crt", stack.ca.ca_pem.as_str()),
            ("apiserver.crt", stack.ca.serving.cert_pem.as_str()),
            ("apiserver.key", stack.ca.serving.key_pem.as_str()),
            ("sa.key", sa_key.as_str()),
            ("sa.pub", sa_pub.as_str()),
        ];
        for (file, content) in files {
            let path = dir.path.join(file);
            std::fs::write(&path, content)
                .map_err(io_error(format!("write {}", path.display())))?;
        }
        let d = |file: &str| dir.path.join(file).display().to_string();
        // envtest's arguments (controller-runtime pkg/internal/testing/controlplane/apiserver.go,
        // defaultArgs, and auth.go's --client-ca-file), with the serving certificate given
        // rather than written into --cert-dir under envtest's file names.
        let args = [
            format!("--etcd-servers={}", stack.etcd.url),
            format!("--etcd-prefix={etcd_prefix}"),
            format!("--cert-dir={}", dir.path.display()),
            format!("--tls-cert-file={}", d("apiserver.crt")),
            format!("--tls-private-key-file={}", d("apiserver.key")),
            format!("--client-ca-file={}", d("ca.crt")),
            "--bind-address=127.0.0.1".to_string(),
            "--advertise-address=127.0.0.1".to_string(),
            // Since 1.37 the endpoint reconciler refuses a loopback address for the `kubernetes`
            // Service's endpoints; nothing here routes to them.
            "--endpoint-reconciler-type=none".to_string(),
            format!("--secure-port={port}"),
            "--service-cluster-ip-range=10.0.0.0/24".to_string(),
            "--allow-privileged=true".to_string(),
            "--disable-admission-plugins=ServiceAccount".to_string(),
            "--authorization-mode=RBAC".to_string(),
            format!("--service-account-issuer={url}/"),
            format!("--service-account-key-file={}", d("sa.pub")),
            format!("--service-account-signing-key-file={}", d("sa.key")),
            // Every request, once, in the order answered: what the tests count and order with
            // the embedded server's request counters (`ClusterHandle::counters`).
            format!("--audit-policy-file={}", d("audit-policy.yaml")),
            format!("--audit-log-path={}", d(AUDIT_LOG)),
            "--audit-log-format=json".to_string(),
            "--audit-log-mode=blocking".to_string(),
            "--audit-log-maxsize=0".to_string(),
        ];
        let what = format!("kube-apiserver {name}");
        let dir_path = dir.path.clone();
        let mut process = Process::spawn(&what, &stack.binaries.kube_apiserver, &args, dir)?;
        let kubeconfig = admin_kubeconfig(name, &url, &stack.ca.ca_pem, &stack.ca.admin);
        let client = client_from_kubeconfig(name, &kubeconfig).await?;
        wait_ready(&mut process, stack.start_timeout, || {
            let client = client.clone();
            async move {
                let request = http::Request::get("/readyz")
                    .body(Vec::new())
                    .map_err(|e| e.to_string())?;
                match tokio::time::timeout(Duration::from_secs(5), client.request_text(request))
                    .await
                {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("no answer in 5s".to_string()),
                }
            }
        })
        .await?;
        Ok(KubeApiserver {
            name: name.to_string(),
            audit_log: dir_path.join(AUDIT_LOG),
            url,
            etcd_prefix,
            ca_pem: stack.ca.ca_pem.clone(),
            admin: stack.ca.admin.clone(),
            process,
            _etcd: stack.etcd.clone(),
        })
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The etcd prefix this kube-apiserver keeps its objects under.
    pub fn etcd_prefix(&self) -> &str {
        &self.etcd_prefix
    }

    /// The CA certificate (PEM) that signed the serving certificate and the client certificates.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The audit log: one JSON line (`audit.k8s.io/v1` Event, level Metadata) per request, written
    /// when the response is complete; [`AuditReader`] reads it.
    pub fn audit_log(&self) -> &Path {
        &self.audit_log
    }

    /// The process id of kube-apiserver.
    pub fn pid(&self) -> u32 {
        self.process.child.id()
    }

    /// A kubeconfig (YAML) for the admin (a client certificate in `system:masters`).
    pub fn kubeconfig(&self) -> String {
        admin_kubeconfig(&self.name, &self.url, &self.ca_pem, &self.admin)
    }

    /// A kubeconfig (YAML) that authenticates with `token` as `user` (e.g. a ServiceAccount's
    /// token from TokenRequest).
    pub fn kubeconfig_for(&self, user: &str, token: &str) -> String {
        service_provider_apiserver::kubeconfig::kubeconfig(
            &self.name,
            &self.url,
            Some(&self.ca_pem),
            user,
            token,
            "default",
        )
    }

    /// A client for the admin.
    pub async fn client(&self) -> Result<kube::Client, RealStackError> {
        client_from_kubeconfig(&self.name, &self.kubeconfig()).await
    }

    /// A client that authenticates with `token`.
    pub async fn client_for_token(&self, token: &str) -> Result<kube::Client, RealStackError> {
        client_from_kubeconfig(&self.name, &self.kubeconfig_for("token-user", token)).await
    }
}

/// The audit log's file name in a kube-apiserver's directory.
const AUDIT_LOG: &str = "audit.log";

/// Metadata of every request, once, when its response is complete.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
";

/// One request from a kube-apiserver's audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditedRequest {
    /// The verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, …; the
    /// lower-case HTTP method for a non-resource request).
    pub verb: String,
    /// The resource plural with its subresource (`deployments/status`); a non-resource
    /// request's path.
    pub resource: String,
    /// The namespace, empty for cluster-scoped objects and collections across namespaces.
    pub namespace: String,
    /// The object's name, empty for collections.
    pub name: String,
    /// The HTTP status code answered.
    pub code: u16,
    /// Who asked: the authenticated user's name.
    pub user: String,
    /// When the response was complete, in microseconds since the Unix epoch.
    pub completed_micros: u64,
}

/// Reads a kube-apiserver's audit log from where it last stopped.
#[derive(Debug)]
pub struct AuditReader {
    path: PathBuf,
    offset: u64,
}

impl AuditReader {
    /// A reader of the audit log at `path` from its beginning.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        AuditReader {
            path: path.into(),
            offset: 0,
        }
    }

    /// The requests logged since the last call, in the order they were logged; a line still
    /// being written is left for the next call.
    pub fn next_requests(&mut self) -> Vec<AuditedRequest> {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        let mut text = String::new();
        if file.seek(SeekFrom::Start(self.offset)).is_err()
            || file.read_to_string(&mut text).is_err()
        {
            return Vec::new();
        }
        let complete = text.rfind('\n').map_or(0, |i| i + 1);
        self.offset += complete as u64;
        text[..complete]
            .lines()
            .filter_map(audited_request)
            .collect()
    }
}

/// The identity kube-apiserver's own loopback clients use (bootstrap RBAC and priority levels,
/// APIService registration, OpenAPI aggregation, `/readyz` of its post-start hooks).
const LOOPBACK_USER: &str = "system:apiserver";

/// One audit line as a request a client of the cluster made; `None` for what the server asked of
/// itself, which the embedded server does in process and does not count either, so a count of
/// requests means the same on both backends.
fn audited_request(line: &str) -> Option<AuditedRequest> {
    let event: serde_json::Value = serde_json::from_str(line).ok()?;
    let text = |pointer: &str| {
        event
            .pointer(pointer)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let user = text("/user/username");
    if user == LOOPBACK_USER {
        return None;
    }
    let resource = match (text("/objectRef/resource"), text("/objectRef/subresource")) {
        (resource, _) if resource.is_empty() => text("/requestURI")
            .split('?')
            .next()
            .unwrap_or_default()
            .to_owned(),
        (resource, sub) if sub.is_empty() => resource,
        (resource, sub) => format!("{resource}/{sub}"),
    };
    let completed = text("/stageTimestamp");
    Some(AuditedRequest {
        verb: text("/verb"),
        resource,
        namespace: text("/objectRef/namespace"),
        name: text("/objectRef/name"),
        code: event
            .pointer("/responseStatus/code")
            .and_then(serde_json::Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(0),
        user,
        completed_micros: micros_since_epoch(&completed)?,
    })
}

/// kube-apiserver's audit time (UTC, `2026-12-05T07:31:29.825341Z`) as microseconds since the
/// Unix epoch.
fn micros_since_epoch(utc: &str) -> Option<u64> {
    let (date, time) = utc.strip_suffix('Z')?.split_once('T')?;
    let mut ymd = date.splitn(3, '-').map(str::parse::<i64>);
    let (y, m, d) = (ymd.next()?.ok()?, ymd.next()?.ok()?, ymd.next()?.ok()?);
    let (hms, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut parts = hms.splitn(3, ':').map(str::parse::<i64>);
    let (h, min, sec) = (
        parts.next()?.ok()?,
        parts.next()?.ok()?,
        parts.next()?.ok()?,
    );
    let micros: i64 = format!("{fraction:0<6}").get(..6)?.parse().ok()?;
    // Days from the civil date (proleptic Gregorian), as in Howard Hinnant's `days_from_civil`.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + h * 3600 + min * 60 + sec;
    u64::try_from(seconds * 1_000_000 + micros).ok()
}

fn admin_kubeconfig(name: &str, url: &str, ca_pem: &str, admin: &ClientCertificate) -> String {
    service_provider_apiserver::kubeconfig::kubeconfig_with_certificate(
        name,
        url,
        Some(ca_pem),
        ADMIN_USER,
        admin,
        "default",
    )
}

/// A client from a kubeconfig (YAML).
pub async fn client_from_kubeconfig(
    name: &str,
    kubeconfig: &str,
) -> Result<kube::Client, RealStackError> {
    let error = |detail: String| RealStackError::Client {
        what: name.to_string(),
        detail,
    };
    let parsed = Kubeconfig::from_yaml(kubeconfig).map_err(|e| error(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
        .await
        .map_err(|e| error(e.to_string()))?;
    kube::Client::try_from(config).map_err(|e| error(e.to_string()))
}

/// etcd; killed, and its data removed, when the last [`RealStack`] or [`KubeApiserver`] using
/// it is dropped.
struct Etcd {
    url: String,
    _process: Process,
}

impl Etcd {
    async fn start(binary: &Path, timeout: Duration) -> Result<Self, RealStackError> {
        let mut last = None;
        for _ in 0..START_ATTEMPTS {
            match Self::start_once(binary, timeout).await {
                Err(RealStackError::Exited { log, .. })
                    if log.contains("address already in use") =>
                {
                    last = Some(log);
                }
                other => return other,
            }
        }
        Err(RealStackError::Exited {
            what: "etcd".to_string(),
            status: format!("{START_ATTEMPTS} attempts found no free port"),
            log: last.unwrap_or_default(),
        })
    }

    async fn start_once(binary: &Path, timeout: Duration) -> Result<Self, RealStackError> {
        let dir = TempDir::new("etcd")?;
        let client = format!("http://127.0.0.1:{}", free_port()?);
        let peer = format!("http://127.0.0.1:{}", free_port()?);
        // envtest's arguments (controller-runtime pkg/internal/testing/controlplane/etcd.go,
        // defaultArgs), the peer URL also advertised so that the one-member cluster names it.
        let args = [
            "--name=default".to_string(),
            format!("--data-dir={}", dir.path.join("data").display()),
            format!("--listen-client-urls={client}"),
            format!("--advertise-client-urls={client}"),
            format!("--listen-peer-urls={peer}"),
            format!("--initial-advertise-peer-urls={peer}"),
            format!("--initial-cluster=default={peer}"),
            "--unsafe-no-fsync=true".to_string(),
        ];
        let mut process = Process::spawn("etcd", binary, &args, dir)?;
        let address = client.trim_start_matches("http://").to_string();
        wait_ready(&mut process, timeout, || {
            let address = address.clone();
            async move { etcd_health(&address).await }
        })
        .await?;
        Ok(Etcd {
            url: client,
            _process: process,
        })
    }
}

/// etcd's `/health` answers `{"health":"true",…}` (a plain HTTP/1.1 request: etcd serves no TLS
/// here, and this needs no HTTP client).
async fn etcd_health(address: &str) -> Result<(), String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(address)
            .await
            .map_err(|e| e.to_string())?;
        let request =
            format!("GET /health HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut response = Vec::new();
        stream
            .read_to_end(&mut response)
            .await
            .map_err(|e| e.to_string())?;
        let response = String::from_utf8_lossy(&response).into_owned();
        if response.starts_with("HTTP/1.1 200") && response.contains(r#""health":"true""#) {
            Ok(())
        } else {
            Err(response.lines().next().unwrap_or("no answer").to_string())
        }
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .unwrap_or_else(|_| Err("no answer in 5s".to_string()))
}

/// Calls `check` until it succeeds, the process exits, or `timeout` passes.
async fn wait_ready<F, Fut>(
    process: &mut Process,
    timeout: Duration,
    check: F,
) -> Result<(), RealStackError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = process
            .child
            .try_wait()
            .map_err(io_error(format!("wait for {}", process.what)))?
        {
            return Err(RealStackError::Exited {
                what: process.what.clone(),
                status: status.to_string(),
                log: process.log_tail(),
            });
        }
        let last = match check().await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(RealStackError::NotReady {
                what: process.what.clone(),
                timeout,
                last,
                log: process.log_tail(),
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The CA of a [`RealStack`], the serving certificate it signed for loopback, and the admin's
/// client certificate.
struct Ca {
    ca_pem: String,
    serving: ClientCertificate,
    admin: ClientCertificate,
}

impl Ca {
    fn generate() -> Result<Self, RealStackError> {
        let ca_key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "service-provider-realstack-ca");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(params, ca_key)?;

        let serving_key = KeyPair::generate()?;
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])?;
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let serving = params.signed_by(&serving_key, &ca)?;

        let admin_key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, ADMIN_USER);
        params
            .distinguished_name
            .push(DnType::OrganizationName, ADMIN_GROUP);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let admin = params.signed_by(&admin_key, &ca)?;

        Ok(Ca {
            ca_pem: ca.pem(),
            serving: ClientCertificate {
                cert_pem: serving.pem(),
                key_pem: serving_key.serialize_pem(),
            },
            admin: ClientCertificate {
                cert_pem: admin.pem(),
                key_pem: admin_key.serialize_pem(),
            },
        })
    }
}

/// A port on 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<u16, RealStackError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io_error("find a free port"))?;
    let port = listener
        .local_addr()
        .map_err(io_error("find a free port"))?
        .port();
    Ok(port)
}

/// A child process in a process group of its own, its output in `<dir>/log`; the group is killed
/// and the directory removed when dropped.
struct Process {
    what: String,
    child: Child,
    log: PathBuf,
    // Dropped after the process is killed (fields drop in order, after `Drop::drop`).
    _dir: TempDir,
}

impl Process {
    fn spawn(
        what: &str,
        binary: &Path,
        args: &[String],
        dir: TempDir,
    ) -> Result<Self, RealStackError> {
        let log = dir.path.join("log");
        let out =
            std::fs::File::create(&log).map_err(io_error(format!("create {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(io_error(format!("open {}", log.display())))?;
        let mut command = Command::new(binary);
        command
            .args(args)
            .current_dir(&dir.path)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = spawn::spawn(command)
            .map_err(io_error(format!("start {what} ({})", binary.display())))?;
        Ok(Process {
            what: what.to_string(),
            child,
            log,
            _dir: dir,
        })
    }

    /// The last lines of the process's log.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        spawn::kill_group(&mut self.child);
        let _ = self.child.wait();
    }
}

#[cfg(unix)]
mod spawn {
    //! Spawning in a process group of its own, and killing the group.

    use std::io;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};

    /// Starts `command` as the leader of a new process group (so a terminal's Ctrl-C reaches the
    /// test, whose drop stops it, not the process in the middle of a test; envtest does the
    /// same), killed when this process dies (Linux).
    pub(super) fn spawn(mut command: Command) -> io::Result<Child> {
        command.process_group(0);
        #[cfg(target_os = "linux")]
        {
            linux::spawn(command)
        }
        #[cfg(not(target_os = "linux"))]
        {
            command.spawn()
        }
    }

    /// Kills the child's process group, and the child itself should it have left the group.
    pub(super) fn kill_group(child: &mut Child) {
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: kill(2) takes plain integers and touches no memory of ours.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = child.kill();
    }

    #[cfg(target_os = "linux")]
    mod linux {
        //! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child ends, not the process:
        //! children are forked by one thread that lives as long as the process, so a shared etcd
        //! started by one test's runtime outlives that runtime, and dies with the test process.

        use std::io;
        use std::os::unix::process::CommandExt;
        use std::process::{Child, Command};
        use std::sync::mpsc;
        use std::sync::{Mutex, OnceLock};

        type Job = (Command, mpsc::Sender<io::Result<Child>>);

        fn spawner() -> io::Result<&'static Mutex<mpsc::Sender<Job>>> {
            static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
            if let Some(s) = SPAWNER.get() {
                return Ok(s);
            }
            let (tx, rx) = mpsc::channel::<Job>();
            let mut spawned = false;
            let s = SPAWNER.get_or_init(|| {
                spawned = true;
                Mutex::new(tx)
            });
            if spawned {
                std::thread::Builder::new()
                    .name("realstack-spawner".into())
                    .spawn(move || {
                        for (mut command, reply) in rx {
                            let _ = reply.send(command.spawn());
                        }
                    })?;
            }
            Ok(s)
        }

        pub(super) fn spawn(mut command: Command) -> io::Result<Child> {
            // SAFETY: getpid(2) is async-signal-safe and touches no memory of ours.
            let parent = unsafe { libc::getpid() };
            // SAFETY: the closure runs in the forked child before exec and calls only prctl(2)
            // and getppid(2), which are async-signal-safe, and allocates nothing.
            unsafe {
                command.pre_exec(move || {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    // The parent died before prctl: nothing would kill us later.
                    if libc::getppid() != parent {
                        return Err(io::Error::other("the test process is gone"));
                    }
                    Ok(())
                });
            }
            let (reply, answer) = mpsc::channel();
            spawner()?
                .lock()
                .map_err(|_| io::Error::other("the realstack spawner panicked"))?
                .send((command, reply))
                .map_err(|_| io::Error::other("the realstack spawner is gone"))?;
            answer
                .recv()
                .map_err(|_| io::Error::other("the realstack spawner is gone"))?
        }
    }
}

/// A directory `<tmp>/service-provider-realstack/<pid>-<seq>-<what>`, removed when dropped.
struct TempDir {
    path: PathBuf,
    seq: u64,
}

/// The directory every [`TempDir`] is created in.
fn temp_root() -> PathBuf {
    std::env::temp_dir().join("service-provider-realstack")
}

impl TempDir {
    fn new(what: &str) -> Result<Self, RealStackError> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let what: String = what
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = temp_root().join(format!("{}-{seq}-{what}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(io_error(format!("create {}", path.display())))?;
        Ok(TempDir { path, seq })
    }
}

/// Set to keep every kube-apiserver's and etcd's directory (its log, audit log and data) after
/// the test, to read why a real-backend test failed.
pub const KEEP_DIRECTORIES_VAR: &str = "SERVICE_PROVIDER_REALSTACK_KEEP";

fn keep_directories() -> bool {
    std::env::var_os(KEEP_DIRECTORIES_VAR).is_some_and(|v| !v.is_empty())
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if keep_directories() {
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Removes the directories of test processes that are gone (killed before they dropped their
/// processes). Only where `/proc` tells which processes run.
fn remove_stale_directories() {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() || keep_directories() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(temp_root()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !proc.join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::ffi::OsString;

    use super::*;

    fn env(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn audit_lines_become_requests_in_microseconds() {
        let line = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/secrets/s","verb":"delete","user":{"username":"system:serviceaccount:p:sa"},"objectRef":{"resource":"secrets","namespace":"ns","name":"s","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"stageTimestamp":"2026-12-05T07:31:29.825341Z"}"#;
        let request = audited_request(line).expect("an audit event");
        assert_eq!(
            (
                request.verb.as_str(),
                request.resource.as_str(),
                request.namespace.as_str()
            ),
            ("delete", "secrets", "ns")
        );
        assert_eq!((request.name.as_str(), request.code), ("s", 200));
        assert_eq!(request.user, "system:serviceaccount:p:sa");
        // date -u -d 2026-12-05T07:31:29Z +%s
        assert_eq!(request.completed_micros, 1_796_455_889_825_341);
        let status = r#"{"requestURI":"/apis/apps/v1/namespaces/a/deployments/d/status","verb":"patch","objectRef":{"resource":"deployments","subresource":"status","namespace":"a","name":"d"},"responseStatus":{"code":403},"stageTimestamp":"1970-01-01T00:00:01.5Z"}"#;
        let request = audited_request(status).expect("an audit event");
        assert_eq!(
            (request.resource.as_str(), request.code),
            ("deployments/status", 403)
        );
        assert_eq!(request.completed_micros, 1_500_000);
        let healthz = r#"{"requestURI":"/readyz?verbose","verb":"get","responseStatus":{"code":200},"stageTimestamp":"2026-01-01T00:00:00.000001Z"}"#;
        assert_eq!(
            audited_request(healthz).expect("an audit event").resource,
            "/readyz"
        );
        let loopback = r#"{"requestURI":"/openapi/v3","verb":"get","user":{"username":"system:apiserver","groups":["system:authenticated"]},"responseStatus":{"code":200},"stageTimestamp":"2026-01-01T00:00:00Z"}"#;
        assert_eq!(audited_request(loopback), None, "the server's own request");
    }

    #[test]
    fn binaries_are_looked_for_in_envtests_order() -> Result<(), RealStackError> {
        let assets = TempDir::new("assets")?;
        let cache = TempDir::new("cache")?;
        let dir = cache_dir(Some(cache.path.clone()), None)
            .ok_or_else(|| RealStackError::NoBinaries("no cache directory".into()))?;
        std::fs::create_dir_all(&dir).map_err(io_error("create the cache"))?;
        for d in [&assets.path, &dir] {
            for b in ["kube-apiserver", "etcd"] {
                std::fs::write(d.join(b), b"").map_err(io_error("write a binary"))?;
            }
        }

        // KUBEBUILDER_ASSETS before the cache.
        let found = Binaries::find_in(env(&[
            ("KUBEBUILDER_ASSETS", &assets.path),
            ("XDG_CACHE_HOME", &cache.path),
        ]))?;
        assert_eq!(found.etcd, assets.path.join("etcd"));
        // The cache when nothing else is named.
        let found = Binaries::find_in(env(&[("XDG_CACHE_HOME", &cache.path)]))?;
        assert_eq!(found.kube_apiserver, dir.join("kube-apiserver"));
        // A per-binary override before both.
        let other = assets.path.join("etcd-other");
        std::fs::write(&other, b"").map_err(io_error("write a binary"))?;
        let found = Binaries::find_in(env(&[
            ("TEST_ASSET_ETCD", &other),
            ("KUBEBUILDER_ASSETS", &assets.path),
        ]))?;
        assert_eq!(found.etcd, other);
        assert_eq!(found.kube_apiserver, assets.path.join("kube-apiserver"));
        // A named directory without the binaries is an error that says what to do.
        let empty = TempDir::new("empty")?;
        let err = Binaries::find_in(env(&[
            ("KUBEBUILDER_ASSETS", &empty.path),
            ("XDG_CACHE_HOME", &cache.path),
        ]))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(err.contains("cargo xtask realstack"), "{err}");
        Ok(())
    }
}
