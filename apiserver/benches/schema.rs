//! Numbers for the schema work every write takes: `cargo bench -p service-provider-apiserver
//! --bench schema`. Prints nanoseconds per operation; asserts nothing.

use std::hint::black_box;
use std::time::Instant;

use serde_json::{Value, json};
use service_provider_apiserver::internals::schema::{
    FieldValidation, OpenApiDocuments, OpenApiResource, ResourceSchema, Structural,
};

/// Nanoseconds this thread has run on a CPU (Linux `schedstat`), if available. On a shared
/// machine this is the fairer measure: wall time also counts the time other processes had the
/// CPU.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Runs `f` repeatedly for about a second and prints the mean time per call, on-CPU and wall.
fn measure(name: &str, mut f: impl FnMut()) {
    for _ in 0..200 {
        f();
    }
    let mut iterations = 0u64;
    let cpu_start = cpu_ns();
    let start = Instant::now();
    while start.elapsed().as_millis() < 1000 {
        for _ in 0..20 {
            f();
        }
        iterations += 20;
    }
    let wall = start.elapsed().as_nanos() as f64 / iterations as f64;
    match (cpu_start, cpu_ns()) {
        (Some(a), Some(b)) => {
            let cpu = (b - a) as f64 / iterations as f64;
            println!(
                "{name:<58} {cpu:>10.0} ns/op on CPU ({:.0}/s per core), {wall:>10.0} ns/op wall",
                1e9 / cpu
            );
        }
        _ => println!("{name:<58} {wall:>10.0} ns/op wall ({:.0}/s)", 1e9 / wall),
    }
}

/// A provider-style CRD schema: spec with scalars, enums, patterns, a list-map, a string map,
/// defaults; status with conditions.
fn crd_schema(with_cel: bool) -> Value {
    let mut spec = json!({
        "type": "object",
        "required": ["version", "region"],
        "properties": {
            "version": {"type": "string", "pattern": "^v[0-9]+\\.[0-9]+$"},
            "region": {"type": "string", "enum": ["eu-west-1", "eu-central-1", "us-east-1"]},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
            "tier": {"type": "string", "default": "standard"},
            "retention": {"type": "string", "format": "duration"},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 63}},
            "backups": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "schedule": {"type": "string"}, "keep": {"type": "integer", "default": 7}}}},
            "endpoint": {"type": "object", "properties": {"host": {"type": "string"}, "port": {"type": "integer", "format": "int32"}}}
        }
    });
    if with_cel {
        spec["x-kubernetes-validations"] = json!([
            {"rule": "self.replicas <= 5 || self.tier == 'premium'", "message": "more than 5 replicas need the premium tier"},
            {"rule": "self.version == oldSelf.version || self.tier != 'frozen'", "message": "frozen tier cannot change version"}
        ]);
    }
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
            "spec": spec,
            "status": {"type": "object", "properties": {
                "observedGeneration": {"type": "integer"},
                "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                    "items": {"type": "object", "required": ["type", "status"], "properties": {
                        "type": {"type": "string"}, "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                        "reason": {"type": "string"}, "message": {"type": "string"},
                        "lastTransitionTime": {"type": "string", "format": "date-time"}}}}}}
        }
    })
}

/// About 1 KiB of JSON.
fn object() -> Value {
    json!({
        "apiVersion": "example.io/v1", "kind": "Database",
        "metadata": {"name": "orders", "namespace": "team-a", "labels": {"app": "orders", "tier": "backend"},
                     "annotations": {"example.io/owner": "team-a"}, "uid": "0b1a6c5e-2f3d-4c55-9d1e-4b6f2a3c9e11",
                     "resourceVersion": "12345", "generation": 3, "creationTimestamp": "2024-05-01T10:00:00Z"},
        "spec": {"version": "v15.4", "region": "eu-west-1", "replicas": 3, "retention": "720h",
                 "labels": {"cost-center": "1234", "env": "prod"},
                 "backups": [{"name": "daily", "schedule": "0 2 * * *"}, {"name": "weekly", "schedule": "0 3 * * 0", "keep": 4}],
                 "endpoint": {"host": "orders.db.example.io", "port": 5432}},
        "status": {"observedGeneration": 3, "conditions": [
            {"type": "Ready", "status": "True", "reason": "Available", "message": "database is available", "lastTransitionTime": "2024-05-01T10:05:00Z"},
            {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "message": "", "lastTransitionTime": "2024-05-01T10:05:00Z"}]}
    })
}

fn main() {
    let obj = object();
    println!(
        "object size: {} bytes",
        serde_json::to_vec(&obj).map(|v| v.len()).unwrap_or(0)
    );
    let schema = crd_schema(false);
    let cel_schema = crd_schema(true);

    measure("compile CRD schema (no CEL)", || {
        black_box(Structural::compile(black_box(&schema)).ok());
    });
    measure("compile CRD schema (2 CEL rules)", || {
        black_box(Structural::compile(black_box(&cel_schema)).ok());
    });
    measure(
        "compile_crd_schema (CRD create checks, 2 CEL rules)",
        || {
            black_box(
                Structural::compile_crd_schema(black_box(&cel_schema), "spec.versions[0].schema")
                    .ok(),
            );
        },
    );

    let Ok(s) = Structural::compile(&schema) else {
        return;
    };
    let Ok(sc) = Structural::compile(&cel_schema) else {
        return;
    };
    measure("validate 1 KiB CR (no CEL)", || {
        black_box(s.validate(black_box(&obj), None));
    });
    measure("validate 1 KiB CR update, ratcheting (no CEL)", || {
        black_box(s.validate(black_box(&obj), Some(&obj)));
    });
    measure("validate 1 KiB CR (2 CEL rules on spec)", || {
        black_box(sc.validate(black_box(&obj), None));
    });
    measure("prune + default 1 KiB CR (clone included)", || {
        let mut o = obj.clone();
        black_box(s.prune(&mut o).ok());
        s.default(&mut o);
        black_box(o);
    });
    measure("clone 1 KiB CR (baseline for the line above)", || {
        black_box(obj.clone());
    });

    let crd = json!({"spec": {"group": "example.io", "scope": "Namespaced", "names": {"plural": "databases", "kind": "Database"},
        "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]}});
    if let Some(r) = ResourceSchema::from_crd(&crd)
        .ok()
        .and_then(|mut v| v.pop())
    {
        measure(
            "ResourceSchema decode + validate 1 KiB CR (create path)",
            || {
                let mut o = obj.clone();
                black_box(r.decode(&mut o, FieldValidation::Strict).ok());
                black_box(r.validate(&o, None));
            },
        );
    }

    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}, "env": [{"name": "A", "value": "1"}]}]}}}});
    if let Some(r) = ResourceSchema::builtin("apps", "v1", "Deployment") {
        measure(
            "ResourceSchema decode + validate Deployment (built-in)",
            || {
                let mut o = deployment.clone();
                black_box(r.decode(&mut o, FieldValidation::Strict).ok());
                black_box(r.validate(&o, None));
            },
        );
    }
    if let Some(r) = ResourceSchema::builtin("", "v1", "ConfigMap") {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1", "b": "2"}});
        measure(
            "ResourceSchema decode + validate ConfigMap (built-in)",
            || {
                let mut o = cm.clone();
                black_box(r.decode(&mut o, FieldValidation::Strict).ok());
                black_box(r.validate(&o, None));
            },
        );
    }

    let resources: Vec<OpenApiResource> = [
        ("", "Namespace", "namespaces", false),
        ("", "ConfigMap", "configmaps", true),
        ("apps", "Deployment", "deployments", true),
    ]
    .iter()
    .map(|(g, k, p, ns)| OpenApiResource {
        group: g.to_string(),
        version: "v1".into(),
        kind: k.to_string(),
        plural: p.to_string(),
        namespaced: *ns,
        schema: None,
        status: false,
        scale: false,
        create_only: false,
    })
    .chain(std::iter::once(OpenApiResource {
        group: "example.io".into(),
        version: "v1".into(),
        kind: "Database".into(),
        plural: "databases".into(),
        namespaced: true,
        schema: Some(crd_schema(true)),
        status: true,
        scale: false,
        create_only: false,
    }))
    .collect();
    measure("OpenAPI: build index (4 resources)", || {
        black_box(OpenApiDocuments::build(black_box(&resources), "v1.33.0").v3_index());
    });
    measure("OpenAPI: render apis/example.io/v1 document", || {
        black_box(
            OpenApiDocuments::build(black_box(&resources), "v1.33.0")
                .v3_document("apis/example.io/v1")
                .map(<[u8]>::len),
        );
    });
    measure(
        "OpenAPI: render apis/apps/v1 document (PodSpec closure)",
        || {
            black_box(
                OpenApiDocuments::build(black_box(&resources), "v1.33.0")
                    .v3_document("apis/apps/v1")
                    .map(<[u8]>::len),
            );
        },
    );
}
