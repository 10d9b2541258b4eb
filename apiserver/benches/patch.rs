//! Numbers for patching and server-side apply of a ~1 KiB Deployment: `cargo bench -p
//! service-provider-apiserver --bench patch`. Prints microseconds per operation (wall clock, and CPU
//! time of the thread where Linux reports it); asserts nothing.

use std::hint::black_box;
use std::time::Instant;

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::{Value, json};
use service_provider_apiserver::internals::patch::{self, ApplyRequest, Target, TypeShape};

/// CPU time of this thread in nanoseconds (Linux), so numbers hold on a busy machine.
fn cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Runs `f` repeatedly for about half a second and prints the mean wall-clock and CPU time per call.
fn measure(name: &str, mut f: impl FnMut()) {
    // `PATCH_BENCH_ONLY=<substring>` runs only the matching measurements (for profiling).
    if std::env::var("PATCH_BENCH_ONLY").is_ok_and(|only| !name.contains(&only)) {
        return;
    }
    for _ in 0..200 {
        f();
    }
    let mut iterations = 0u64;
    let cpu_start = cpu_ns();
    let start = Instant::now();
    while start.elapsed().as_millis() < 500 {
        for _ in 0..50 {
            f();
        }
        iterations += 50;
    }
    let wall = start.elapsed().as_nanos() as f64 / iterations as f64 / 1000.0;
    let cpu = match (cpu_start, cpu_ns()) {
        (Some(a), Some(b)) => format!(
            "{:>8.1} µs/op CPU",
            (b - a) as f64 / iterations as f64 / 1000.0
        ),
        _ => String::new(),
    };
    println!("{name:<52} {wall:>8.1} µs/op wall {cpu}");
}

fn deployment(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "worker", "namespace": "tenant-a",
                     "labels": {"app.kubernetes.io/name": "worker", "app.kubernetes.io/managed-by": "service-provider"},
                     "annotations": {"example.com/revision": "42"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "worker"}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "worker"}},
                "spec": {
                    "serviceAccountName": "worker",
                    "containers": [{
                        "name": "worker", "image": image, "args": ["--listen=:8080", "--verbose"],
                        "env": [{"name": "MODE", "value": "prod"}, {"name": "REGION", "value": "eu-1"}],
                        "ports": [{"containerPort": 8080, "name": "http"}],
                        "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                        "volumeMounts": [{"name": "config", "mountPath": "/etc/worker"}]
                    }],
                    "volumes": [{"name": "config", "configMap": {"name": "worker-config"}}]
                }
            }
        }
    })
}

fn main() {
    let shape = TypeShape::of::<Deployment>();
    let target = Target {
        api_version: "apps/v1",
        subresource: None,
        status_subresource: true,
    };
    let req = |now| ApplyRequest {
        manager: "service-provider",
        force: true,
        kind: "Deployment",
        target,
        now,
    };
    let config = deployment(2, "worker:1.0");
    println!(
        "applied configuration: {} bytes of JSON",
        config.to_string().len()
    );
    let live =
        patch::apply(None, &config, &shape, &req("2024-01-01T00:00:00Z")).expect("create by apply");
    println!(
        "stored object with managedFields: {} bytes of JSON",
        live.to_string().len()
    );
    let changed = deployment(3, "worker:1.1");

    measure("TypeShape::of::<Deployment>() (once per resource)", || {
        black_box(TypeShape::of::<Deployment>());
    });
    measure("apply: create", || {
        black_box(patch::apply(None, &config, &shape, &req("2024-01-01T00:00:01Z")).ok());
    });
    measure("apply: re-apply unchanged (no-op)", || {
        black_box(patch::apply(Some(&live), &config, &shape, &req("2024-01-01T00:00:01Z")).ok());
    });
    measure("apply: change replicas and image", || {
        black_box(patch::apply(Some(&live), &changed, &shape, &req("2024-01-01T00:00:01Z")).ok());
    });
    let mut pruned = config.clone();
    pruned["metadata"]
        .as_object_mut()
        .map(|m| m.remove("annotations"));
    measure("apply: omit a field (prune)", || {
        black_box(patch::apply(Some(&live), &pruned, &shape, &req("2024-01-01T00:00:01Z")).ok());
    });
    let mut updated = live.clone();
    updated["spec"]["replicas"] = json!(5);
    measure("record_update: plain update of replicas", || {
        let mut new = updated.clone();
        patch::record_update(
            Some(&live),
            &mut new,
            "kubectl-edit",
            &shape,
            &target,
            "2024-01-01T00:00:01Z",
        );
        black_box(new);
    });
    measure("decode managedFields (one Apply entry)", || {
        black_box(patch::Managed::from_object(&live).ok());
    });
    let m = patch::Managed::from_object(&live).unwrap();
    measure("encode managedFields (one Apply entry)", || {
        let mut o = json!({"metadata": {}});
        m.clone().write_to(&mut o);
        black_box(o);
    });
    measure("for scale: clone of the stored object", || {
        black_box(live.clone());
    });
    let merge = json!({"spec": {"replicas": 4}, "metadata": {"labels": {"tier": "backend"}}});
    measure("merge patch", || {
        let mut doc = live.clone();
        patch::merge(&mut doc, &merge).ok();
        black_box(doc);
    });
    let smp = json!({"spec": {"template": {"spec": {"containers": [{"name": "worker", "image": "worker:2"}]}}}});
    measure("strategic merge patch", || {
        let mut doc = live.clone();
        patch::strategic(&mut doc, &smp, &shape).ok();
        black_box(doc);
    });
}
