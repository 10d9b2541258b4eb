//! The real `kubectl` against the embedded API server.
//!
//! Fails when kubectl is missing, unless `SKIP_KUBECTL=1` is set.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use service_provider_apiserver::{ApiServer, Cluster};

struct Kubectl {
    kubeconfig: PathBuf,
}

impl Kubectl {
    fn new(c: &Cluster, dir: &Path) -> Self {
        let kubeconfig = dir.join("kubeconfig");
        c.write_kubeconfig(&kubeconfig).unwrap();
        Kubectl { kubeconfig }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        cmd
    }

    /// Runs kubectl in a blocking thread; returns (success, stdout, stderr).
    async fn run(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        let mut cmd = self.cmd(args);
        let input = stdin.map(str::to_string);
        tokio::task::spawn_blocking(move || {
            cmd.stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
            let mut child = cmd.spawn().expect("kubectl runs");
            if let Some(i) = input {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(i.as_bytes()).unwrap();
            }
            let out = child.wait_with_output().unwrap();
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).to_string(),
                String::from_utf8_lossy(&out.stderr).to_string(),
            )
        })
        .await
        .unwrap()
    }

    async fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args, None).await;
        assert!(ok, "kubectl {args:?} failed:\n{out}\n{err}");
        out
    }

    async fn ok_stdin(&self, args: &[&str], stdin: &str) -> String {
        let (ok, out, err) = self.run(args, Some(stdin)).await;
        assert!(ok, "kubectl {args:?} failed:\n{out}\n{err}");
        out
    }
}

fn kubectl_available() -> bool {
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return true;
    }
    if std::env::var("SKIP_KUBECTL").as_deref() == Ok("1") {
        eprintln!("kubectl not found; skipped because SKIP_KUBECTL=1");
        return false;
    }
    panic!("kubectl is not installed; install it or set SKIP_KUBECTL=1 to skip this test");
}

/// CRDs generated into `manifests/` by the macro (empty when there are none yet).
fn manifest_crds() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "crd.yaml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The CRD the object tests use: Velero from the manifests when present, else our own.
const OWN_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: veleroes.velero.services.open-control-plane.io
spec:
  group: velero.services.open-control-plane.io
  names: {kind: Velero, plural: veleroes, singular: velero, shortNames: [vel]}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Version, type: string, jsonPath: .spec.version}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    schema:
      openAPIV3Schema:
        type: object
        required: [spec]
        properties:
          spec:
            type: object
            required: [version]
            properties:
              version: {type: string}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

const CR: &str = "velero.velero.services.open-control-plane.io";

fn velero(version: &str) -> String {
    format!(
        "apiVersion: velero.services.open-control-plane.io/v1alpha1\nkind: Velero\nmetadata:\n  name: tenant-a\nspec:\n  version: \"{version}\"\n"
    )
}

// Multi-threaded: the test thread blocks on kubectl's output while the server keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drives_the_embedded_api_server() {
    if !kubectl_available() {
        return;
    }
    let c = ApiServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("sp-kubectl-{}-{}", std::process::id(), c.port()));
    std::fs::create_dir_all(&dir).unwrap();
    let k = Kubectl::new(&c, &dir);

    // Discovery-driven commands.
    let out = k.ok(&["get", "namespaces"]).await;
    assert!(
        out.contains("kube-system") && out.contains("Active"),
        "{out}"
    );
    let out = k.ok(&["api-resources"]).await;
    assert!(
        out.contains("deployments") && out.contains("customresourcedefinitions"),
        "{out}"
    );

    // Every generated CRD applies and becomes Established.
    let crds = manifest_crds();
    let mut velero_from_manifests = false;
    for crd in &crds {
        let path = crd.to_string_lossy().to_string();
        k.ok(&["apply", "-f", &path]).await;
        let name = k
            .ok(&["get", "-f", &path, "-o", "jsonpath={.metadata.name}"])
            .await;
        k.ok(&[
            "wait",
            "--for=condition=Established",
            "--timeout=10s",
            &format!("crd/{name}"),
        ])
        .await;
        velero_from_manifests |= name == "veleroes.velero.services.open-control-plane.io";
    }
    if !velero_from_manifests {
        k.ok_stdin(&["apply", "-f", "-"], OWN_CRD).await;
        k.ok(&[
            "wait",
            "--for=condition=Established",
            "--timeout=10s",
            "crd/veleroes.velero.services.open-control-plane.io",
        ])
        .await;
    }
    let out = k.ok(&["explain", "veleroes.spec"]).await;
    assert!(out.contains("version"), "{out}");

    // Client-side apply, get, describe.
    k.ok_stdin(&["apply", "-f", "-"], &velero("1.14.0")).await;
    let out = k.ok(&["get", "veleroes"]).await;
    assert!(
        out.contains("tenant-a") && out.contains("1.14.0"),
        "printer columns: {out}"
    );
    let out = k.ok(&["get", CR, "tenant-a", "-o", "yaml"]).await;
    assert!(
        out.contains("kubectl.kubernetes.io/last-applied-configuration"),
        "{out}"
    );
    let out = k.ok(&["describe", CR, "tenant-a"]).await;
    assert!(
        out.contains("Name:") && out.contains("tenant-a") && out.contains("1.14.0"),
        "{out}"
    );

    // `get -w` sees an update made meanwhile.
    let mut watch = k
        .cmd(&[
            "get",
            CR,
            "tenant-a",
            "-w",
            "-o",
            "jsonpath={.spec.version}{\"\\n\"}",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = watch.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the watch prints the object");
    assert_eq!(first, "1.14.0");
    k.ok_stdin(&["apply", "-f", "-"], &velero("1.15.0")).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx.recv_timeout(left).expect("the watch prints the update");
        if line == "1.15.0" {
            break;
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();

    // Server-side apply takes over from client-side apply.
    let out = k
        .ok_stdin(
            &["apply", "--server-side", "--force-conflicts", "-f", "-"],
            &velero("1.16.0"),
        )
        .await;
    assert!(out.contains("serverside-applied"), "{out}");
    let out = k
        .ok(&["get", CR, "tenant-a", "-o", "jsonpath={.spec.version}"])
        .await;
    assert_eq!(out, "1.16.0");

    // wait --for=condition on status set through the status subresource.
    k.ok(&[
        "patch", CR, "tenant-a", "--subresource=status", "--type=merge", "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Installed","message":"ok","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}"#,
    ])
    .await;
    k.ok(&[
        "wait",
        "--for=condition=Ready",
        "--timeout=10s",
        &format!("{CR}/tenant-a"),
    ])
    .await;

    // A schema violation is refused with the field named.
    let bad = "apiVersion: velero.services.open-control-plane.io/v1alpha1\nkind: Velero\nmetadata:\n  name: broken\nspec:\n  plugins: []\n";
    let (ok, out, err) = k.run(&["apply", "-f", "-"], Some(bad)).await;
    assert!(!ok, "an object without spec.version is refused: {out}");
    assert!(
        err.contains("spec.version"),
        "the message names the field: {err}"
    );

    // Delete and wait for it to be gone.
    k.ok(&["delete", CR, "tenant-a", "--wait=false"]).await;
    k.ok(&[
        "wait",
        "--for=delete",
        "--timeout=10s",
        &format!("{CR}/tenant-a"),
    ])
    .await;
    let (ok, _, err) = k.run(&["get", CR, "tenant-a"], None).await;
    assert!(!ok && err.contains("NotFound"), "{err}");

    // Built-ins through kubectl as well.
    k.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"1\"\n",
    )
    .await;
    k.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"2\"\n",
    )
    .await;
    let out = k
        .ok(&["get", "configmap", "settings", "-o", "jsonpath={.data.a}"])
        .await;
    assert_eq!(out, "2");
    k.ok(&["delete", "configmap", "settings"]).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A temporary directory with a kubeconfig for the admin of `c`.
fn workdir(c: &Cluster, what: &str) -> (PathBuf, Kubectl) {
    let dir = std::env::temp_dir().join(format!(
        "sp-kubectl-{what}-{}-{}",
        std::process::id(),
        c.port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let k = Kubectl::new(c, &dir);
    (dir, k)
}

/// Every `kubectl create` generator of kubectl 1.33 (`kubectl create --help`: clusterrole,
/// clusterrolebinding, configmap, cronjob, deployment, ingress, job, namespace,
/// poddisruptionbudget, priorityclass, quota, role, rolebinding, secret docker-registry|generic|tls,
/// service clusterip|externalname|loadbalancer|nodeport, serviceaccount, token) sends its object
/// and reads the answer in protobuf (kubectl's typed clients ask for
/// `application/vnd.kubernetes.protobuf`); each object is then read back as JSON to show that
/// what kubectl meant arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_generators_speak_protobuf() {
    if !kubectl_available() {
        return;
    }
    let c = ApiServer::start().await.unwrap();
    let (dir, k) = workdir(&c, "create");
    let cert = rcgen::generate_simple_self_signed(vec!["tls.example.com".to_string()]).unwrap();
    let (crt, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&crt, cert.cert.pem()).unwrap();
    std::fs::write(&key, cert.signing_key.serialize_pem()).unwrap();
    let (crt, key) = (crt.to_string_lossy(), key.to_string_lossy());
    let (tls_cert, tls_key) = (format!("--cert={crt}"), format!("--key={key}"));

    // (generator arguments, what kubectl prints, the object, a JSONPath, its value)
    let cases: &[(&[&str], &str, &str, &str, &str)] = &[
        (
            &["namespace", "gen"],
            "namespace/gen created",
            "namespace/gen",
            "{.status.phase}",
            "Active",
        ),
        (
            &[
                "configmap",
                "cm",
                "-n",
                "gen",
                "--from-literal=a=1",
                "--from-literal=empty=",
            ],
            "configmap/cm created",
            "configmap/cm",
            "{.data}",
            r#"{"a":"1","empty":""}"#,
        ),
        (
            &["secret", "generic", "s", "-n", "gen", "--from-literal=k=v"],
            "secret/s created",
            "secret/s",
            "{.data.k}",
            "dg==",
        ),
        (
            &["secret", "tls", "t", "-n", "gen", &tls_cert, &tls_key],
            "secret/t created",
            "secret/t",
            "{.type}",
            "kubernetes.io/tls",
        ),
        (
            &[
                "secret",
                "docker-registry",
                "d",
                "-n",
                "gen",
                "--docker-server=r.example.com",
                "--docker-username=u",
                "--docker-password=p",
            ],
            "secret/d created",
            "secret/d",
            "{.type}",
            "kubernetes.io/dockerconfigjson",
        ),
        (
            &["serviceaccount", "sa", "-n", "gen"],
            "serviceaccount/sa created",
            "serviceaccount/sa",
            "{.metadata.name}",
            "sa",
        ),
        (
            &[
                "role",
                "r",
                "-n",
                "gen",
                "--verb=get",
                "--verb=list",
                "--resource=pods",
            ],
            "role.rbac.authorization.k8s.io/r created",
            "role/r",
            "{.rules[0].verbs}",
            r#"["get","list"]"#,
        ),
        (
            &["clusterrole", "cr", "--verb=get", "--resource=namespaces"],
            "clusterrole.rbac.authorization.k8s.io/cr created",
            "clusterrole/cr",
            "{.rules[0].resources}",
            r#"["namespaces"]"#,
        ),
        (
            &["clusterrole", "agg", "--aggregation-rule=x=y"],
            "clusterrole.rbac.authorization.k8s.io/agg created",
            "clusterrole/agg",
            "{.aggregationRule.clusterRoleSelectors[0].matchLabels.x}",
            "y",
        ),
        (
            &[
                "rolebinding",
                "rb",
                "-n",
                "gen",
                "--role=r",
                "--serviceaccount=gen:sa",
            ],
            "rolebinding.rbac.authorization.k8s.io/rb created",
            "rolebinding/rb",
            "{.subjects[0].kind}/{.subjects[0].name}",
            "ServiceAccount/sa",
        ),
        (
            &[
                "clusterrolebinding",
                "crb",
                "--clusterrole=cr",
                "--user=alice",
                "--group=devs",
            ],
            "clusterrolebinding.rbac.authorization.k8s.io/crb created",
            "clusterrolebinding/crb",
            "{.subjects[*].name}",
            "alice devs",
        ),
        // `--replicas=0` is a pointer set to zero: it must not become the default of 1.
        (
            &[
                "deployment",
                "web",
                "-n",
                "gen",
                "--image=nginx",
                "--replicas=0",
                "--port=80",
            ],
            "deployment.apps/web created",
            "deployment/web",
            "{.spec.replicas}/{.spec.template.spec.containers[0].ports[0].containerPort}",
            "0/80",
        ),
        (
            &["service", "clusterip", "ci", "-n", "gen", "--tcp=80:8080"],
            "service/ci created",
            "service/ci",
            "{.spec.type}/{.spec.ports[0].targetPort}",
            "ClusterIP/8080",
        ),
        (
            &["service", "nodeport", "np", "-n", "gen", "--tcp=80:http"],
            "service/np created",
            "service/np",
            "{.spec.type}/{.spec.ports[0].targetPort}",
            "NodePort/http",
        ),
        (
            &[
                "service",
                "loadbalancer",
                "lb",
                "-n",
                "gen",
                "--tcp=443:8443",
            ],
            "service/lb created",
            "service/lb",
            "{.spec.type}",
            "LoadBalancer",
        ),
        (
            &[
                "service",
                "externalname",
                "ext",
                "-n",
                "gen",
                "--external-name=example.com",
            ],
            "service/ext created",
            "service/ext",
            "{.spec.externalName}",
            "example.com",
        ),
        (
            &["job", "once", "-n", "gen", "--image=busybox", "--", "date"],
            "job.batch/once created",
            "job/once",
            "{.spec.template.spec.restartPolicy}/{.spec.template.spec.containers[0].command[0]}",
            "Never/date",
        ),
        (
            &[
                "cronjob",
                "nightly",
                "-n",
                "gen",
                "--image=busybox",
                "--schedule=0 3 * * *",
                "--restart=OnFailure",
            ],
            "cronjob.batch/nightly created",
            "cronjob/nightly",
            "{.spec.schedule}/{.spec.jobTemplate.spec.template.spec.restartPolicy}",
            "0 3 * * */OnFailure",
        ),
        (
            &[
                "poddisruptionbudget",
                "pdb",
                "-n",
                "gen",
                "--selector=app=web",
                "--min-available=1",
            ],
            "poddisruptionbudget.policy/pdb created",
            "poddisruptionbudget/pdb",
            "{.spec.minAvailable}/{.spec.selector.matchLabels.app}",
            "1/web",
        ),
        (
            &[
                "priorityclass",
                "high",
                "--value=1000",
                "--description=important",
                "--preemption-policy=Never",
            ],
            "priorityclass.scheduling.k8s.io/high created",
            "priorityclass/high",
            "{.value}/{.preemptionPolicy}",
            "1000/Never",
        ),
        (
            &[
                "quota",
                "q",
                "-n",
                "gen",
                "--hard=pods=10,requests.cpu=2",
                "--scopes=NotTerminating",
            ],
            "resourcequota/q created",
            "resourcequota/q",
            "{.spec.hard.pods}/{.spec.scopes[0]}",
            "10/NotTerminating",
        ),
        (
            &[
                "ingress",
                "ing",
                "-n",
                "gen",
                "--class=nginx",
                "--rule=web.example.com/=ci:80",
            ],
            "ingress.networking.k8s.io/ing created",
            "ingress/ing",
            "{.spec.ingressClassName}/{.spec.rules[0].host}/{.spec.rules[0].http.paths[0].backend.service.name}",
            "nginx/web.example.com/ci",
        ),
    ];
    for (args, printed, object, path, want) in cases {
        let mut full = vec!["create"];
        full.extend_from_slice(args);
        let out = k.ok(&full).await;
        assert_eq!(out.trim(), *printed, "kubectl {full:?}");
        let ns = if args.contains(&"-n") {
            "gen"
        } else {
            "default"
        };
        let got = k
            .ok(&["get", object, "-n", ns, "-o", &format!("jsonpath={path}")])
            .await;
        assert_eq!(got, *want, "kubectl {full:?}: {path}");
    }

    // `create token` posts a TokenRequest to serviceaccounts/token; the token authenticates as the
    // ServiceAccount.
    let token = k.ok(&["create", "token", "sa", "-n", "gen"]).await;
    let out = k
        .ok(&[
            "auth",
            "whoami",
            "--token",
            token.trim(),
            "-o",
            "jsonpath={.status.userInfo.username}",
        ])
        .await;
    assert_eq!(out, "system:serviceaccount:gen:sa");

    // A failure comes back as a protobuf Status that kubectl reads: its message is shown.
    let (ok, _, err) = k.run(&["create", "namespace", "gen"], None).await;
    assert!(!ok);
    assert!(err.contains(r#"namespaces "gen" already exists"#), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The built-ins beyond the basics, as kubectl uses them: `get all` through the `all` category,
/// `explain` of a StatefulSet from the published OpenAPI, `rollout status` of a StatefulSet the
/// availability switch reports ready, `certificate approve` through the `approval` subresource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_uses_the_workload_and_certificate_builtins() {
    if !kubectl_available() {
        return;
    }
    let c = ApiServer::start_with(
        "kubectl-builtins",
        service_provider_apiserver::ClusterOptions::default().deployments_available(true),
    )
    .await
    .unwrap();
    let dir = std::env::temp_dir().join(format!(
        "sp-kubectl-builtins-{}-{}",
        std::process::id(),
        c.port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let k = Kubectl::new(&c, &dir);

    let sts = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: default}
spec:
  serviceName: web
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
"#;
    k.ok_stdin(&["apply", "-f", "-"], sts).await;
    let out = k
        .ok(&["rollout", "status", "statefulset/web", "--timeout=20s"])
        .await;
    // kube-apiserver defaults `rollingUpdate.partition` to 0, so kubectl reports a partitioned
    // roll-out, as on a real cluster.
    assert!(
        out.contains("roll out complete") && out.contains("2 new pods"),
        "{out}"
    );

    let out = k.ok(&["get", "all", "-n", "default"]).await;
    for want in ["service/kubernetes", "statefulset.apps/web"] {
        assert!(out.contains(want), "{want} in\n{out}");
    }

    let out = k.ok(&["explain", "statefulset.spec.serviceName"]).await;
    assert!(
        out.contains("KIND:") && out.contains("StatefulSet") && out.contains("serviceName"),
        "{out}"
    );

    let csr = r#"
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: alice}
spec:
  request: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K
  signerName: kubernetes.io/kube-apiserver-client
  usages: [client auth]
"#;
    k.ok_stdin(&["apply", "-f", "-"], csr).await;
    let out = k.ok(&["certificate", "approve", "alice"]).await;
    assert!(out.contains("approved"), "{out}");
    let out = k
        .ok(&[
            "get",
            "csr",
            "alice",
            "-o",
            "jsonpath={.status.conditions[0].type}={.status.conditions[0].status}",
        ])
        .await;
    assert_eq!(out, "Approved=True");
}

/// kubectl with a kubeconfig that carries a client certificate (as kind writes it) is the
/// certificate's user; kube-apiserver's validation errors reach kubectl as it prints them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_authenticates_with_client_certificates_and_prints_validation_errors() {
    if !kubectl_available() {
        return;
    }
    let c = ApiServer::start().await.unwrap();
    let (dir, k) = workdir(&c, "certs");
    let cert_config = dir.join("kind-kubeconfig");
    std::fs::write(
        &cert_config,
        c.kubeconfig_with_certificate("kubernetes-admin", Some("system:masters"))
            .unwrap(),
    )
    .unwrap();
    let by_cert = Kubectl {
        kubeconfig: cert_config,
    };
    let who = by_cert
        .ok(&[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}/{.status.userInfo.groups}",
        ])
        .await;
    assert_eq!(
        who,
        r#"kubernetes-admin/["system:masters","system:authenticated"]"#
    );
    by_cert
        .ok(&["create", "deployment", "web", "--image=nginx"])
        .await;

    let (ok, _, err) = k
        .run(
            &[
                "patch",
                "deployment",
                "web",
                "-p",
                r#"{"spec":{"selector":{"matchLabels":{"app":"other"}}}}"#,
            ],
            None,
        )
        .await;
    assert!(!ok);
    assert!(
        err.contains(r#"The Deployment "web" is invalid: "#)
            && err.contains(r#"spec.selector: Invalid value: {"matchLabels":{"app":"other"}}: field is immutable"#),
        "{err}"
    );
    let (ok, _, err) = k
        .run(
            &[
                "create",
                "service",
                "nodeport",
                "np",
                "--tcp=80:80",
                "--node-port=80",
            ],
            None,
        )
        .await;
    assert!(!ok);
    assert!(
        err.contains(r#"Service "np" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"#),
        "{err}"
    );
    let (ok, _, err) = k
        .run(&["apply", "-f", "-"], Some("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: default\ndata:\n  k: not-base64!\n"))
        .await;
    assert!(!ok);
    assert!(err.contains("illegal base64 data at input byte"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
