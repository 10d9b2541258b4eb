//! The generated CRDs against kube-derive, and the checked-in manifests against the examples.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use service_provider::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use service_provider::kube::CustomResourceExt;
use service_provider::manifests::{self, DifferenceKind, Manifest};

use crate::{cert_manager, eso, hello, velero, velero_by_hand};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn json(crd: &CustomResourceDefinition) -> serde_json::Value {
    serde_json::to_value(crd).unwrap()
}

/// The documented additions (`service_provider::manifests` docs), applied to a kube-derive CRD.
fn with_additions(
    mut crd: CustomResourceDefinition,
    cluster: &str,
    columns: bool,
) -> CustomResourceDefinition {
    crd.metadata
        .labels
        .get_or_insert_default()
        .insert("openmcp.cloud/cluster".into(), cluster.into());
    if columns {
        for version in &mut crd.spec.versions {
            version
                .additional_printer_columns
                .get_or_insert_default()
                .extend(service_provider_runtime::manifests::common_columns());
        }
    }
    crd
}

#[test]
fn service_crd_is_kube_derive_plus_documented_additions() {
    // What kube-derive generates for the macro's struct is what it generates for the same struct
    // written by hand...
    assert_eq!(
        json(&velero::Velero::crd()),
        json(&velero_by_hand::Velero::crd())
    );
    // ...and the runtime adds exactly the label and the common columns.
    let expected = with_additions(velero_by_hand::Velero::crd(), "onboarding", true);
    assert_eq!(
        json(&manifests::service_crd::<velero::Velero>()),
        json(&expected)
    );
}

#[test]
fn provider_config_crd_is_kube_derive_plus_the_platform_label() {
    assert_eq!(
        json(&velero::VeleroProviderConfig::crd()),
        json(&velero_by_hand::VeleroProviderConfig::crd())
    );
    let expected = with_additions(
        velero_by_hand::VeleroProviderConfig::crd(),
        "platform",
        false,
    );
    assert_eq!(
        json(&manifests::provider_config_crd::<velero::Velero>()),
        json(&expected)
    );
}

#[test]
fn service_crd_has_the_openmcp_shape() {
    let crd = json(&manifests::service_crd::<velero::Velero>());
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    let version = &crd["spec"]["versions"][0];
    assert_eq!(version["subresources"]["status"], serde_json::json!({}));
    let columns: Vec<&str> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Version", "Installed", "Phase", "Ready", "Age"]);
    let status = &version["schema"]["openAPIV3Schema"]["properties"]["status"];
    let fields: BTreeSet<&str> = status["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // The common fields (`resources` is the managed set's), flattened beside the author's
    // (VeleroStatus).
    let velero_status: Vec<&str> =
        <velero::VeleroStatus as service_provider_runtime::JsonFields>::FIELDS.to_vec();
    let expected: BTreeSet<&str> = ["conditions", "observedGeneration", "phase", "resources"]
        .into_iter()
        .chain(velero_status)
        .collect();
    assert_eq!(fields, expected);
    // A plain string, as Go's `commonapi.Status.Phase`: an enum would answer a Go provider's
    // status write with 422 after a rollback. The description names the values.
    let phase = &status["properties"]["phase"];
    assert_eq!(phase["type"], "string");
    assert!(phase.get("enum").is_none(), "{phase}");
    assert_eq!(phase["description"], "Ready, Progressing or Terminating.");
    let conditions = &status["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-type"], "map");
    assert_eq!(
        conditions["x-kubernetes-list-map-keys"],
        serde_json::json!(["type"])
    );

    use service_provider::ServiceProvider;
    assert_eq!(
        velero::Velero::INFO.finalizer(),
        "velero.services.open-control-plane.io/finalizer"
    );
    assert_eq!(
        service_provider_runtime::manifests::COMMON_COLUMNS,
        ["Phase", "Ready", "Age"]
    );
}

#[test]
fn provider_config_has_common_and_author_fields_cluster_scoped() {
    let crd = json(&manifests::provider_config_crd::<velero::Velero>());
    assert_eq!(crd["spec"]["scope"], "Cluster");
    assert_eq!(crd["spec"]["names"]["kind"], "ProviderConfig");
    assert_eq!(
        crd["metadata"]["labels"]["openmcp.cloud/cluster"],
        "platform"
    );
    let version = &crd["spec"]["versions"][0];
    assert_eq!(version["subresources"]["status"], serde_json::json!({}));
    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    let fields: BTreeSet<&str> = spec
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        BTreeSet::from([
            "caBundleRef",
            "imagePullSecrets",
            "imageRepository",
            "kcp",
            "pollInterval",
            "versions",
            "workloadCluster"
        ])
    );
    assert_eq!(spec["pollInterval"]["default"], "1m");
    assert_eq!(
        spec["versions"]["x-kubernetes-list-map-keys"],
        serde_json::json!(["version"])
    );
    let entry: BTreeSet<&str> = spec["versions"]["items"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        entry,
        BTreeSet::from([
            "chartPullSecret",
            "chartURL",
            "chartVersion",
            "values",
            "version"
        ])
    );
}

#[test]
fn kcp_manifests_point_at_the_same_schema() {
    let all = manifests::manifests::<velero::Velero>();
    let by_path = |path: &str| {
        all.iter()
            .find(|m| m.path == path)
            .unwrap_or_else(|| panic!("no {path}"))
    };
    let schema = by_path("kcp/apiresourceschema.yaml");
    let name = schema.name();
    assert_eq!(
        by_path("kcp/apiexport.yaml").object["spec"]["resources"][0]["schema"],
        name
    );
    assert_eq!(
        by_path("kcp/apiexport.yaml").object["apiVersion"],
        "apis.kcp.io/v1alpha2"
    );
    assert_eq!(
        by_path("kcp/v1alpha1/apiexport.yaml").object["spec"]["latestResourceSchemas"][0],
        name
    );
    // The bare schema, not wrapped in openAPIV3Schema, and the same columns as the CRD.
    let crd = manifests::service_crd::<velero::Velero>();
    let crd_version = serde_json::to_value(&crd.spec.versions[0]).unwrap();
    let version = &schema.object["spec"]["versions"][0];
    assert_eq!(version["schema"], crd_version["schema"]["openAPIV3Schema"]);
    assert_eq!(
        version["additionalPrinterColumns"],
        crd_version["additionalPrinterColumns"]
    );
    assert_eq!(schema.object["spec"]["names"]["listKind"], "VeleroList");

    // hello is not a kcp provider: no kcp manifests.
    assert!(
        manifests::manifests::<hello::Hello>()
            .iter()
            .all(|m| !m.path.starts_with("kcp/"))
    );
}

#[test]
fn yaml_is_byte_identical_across_generations() {
    let yaml = |m: Vec<Manifest>| m.iter().map(Manifest::to_yaml).collect::<Vec<_>>();
    assert_eq!(
        yaml(manifests::manifests::<velero::Velero>()),
        yaml(manifests::manifests::<velero::Velero>())
    );
}

fn example_names(dir: &Path, dirs_only: bool) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !dirs_only || p.is_dir())
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_owned())
        .collect()
}

/// The in-process form of `cargo xtask crds --check`.
#[test]
fn checked_in_manifests_are_up_to_date() {
    let examples: [(&str, Vec<Manifest>); 4] = [
        (
            "cert-manager",
            manifests::manifests::<cert_manager::CertManager>(),
        ),
        (
            "external-secrets",
            manifests::manifests::<eso::ExternalSecretsOperator>(),
        ),
        ("hello", manifests::manifests::<hello::Hello>()),
        ("velero", manifests::manifests::<velero::Velero>()),
    ];
    let covered: BTreeSet<String> = examples
        .iter()
        .map(|(name, _)| (*name).to_owned())
        .collect();
    assert_eq!(
        example_names(&root().join("examples"), false),
        covered,
        "every example must be checked here"
    );
    assert_eq!(
        example_names(&root().join("manifests"), false),
        covered,
        "manifests/ must hold exactly the examples; run `cargo xtask crds`"
    );
    for (name, wanted) in examples {
        let differences =
            manifests::check_dir(&wanted, &root().join("manifests").join(name)).unwrap();
        let listed: Vec<String> = differences.iter().map(ToString::to_string).collect();
        assert!(
            listed.is_empty(),
            "manifests/{name} is out of date, run `cargo xtask crds`:\n{}",
            listed.join("\n")
        );
    }
}

#[test]
fn check_names_stale_missing_and_extra_files() {
    let dir = std::env::temp_dir().join(format!("sp-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let wanted = manifests::manifests::<velero::Velero>();
    manifests::write_dir(&wanted, &dir).unwrap();
    std::fs::write(dir.join("onboarding/crd.yaml"), "# edited by hand\n").unwrap();
    std::fs::remove_file(dir.join("kcp/apiexport.yaml")).unwrap();
    std::fs::write(dir.join("platform/old.yaml"), "kind: Leftover\n").unwrap();

    let differences = manifests::check_dir(&wanted, &dir).unwrap();
    let found: Vec<(String, DifferenceKind)> = differences
        .iter()
        .map(|d| {
            (
                d.path
                    .strip_prefix(&dir)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned(),
                d.kind,
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("kcp/apiexport.yaml".to_owned(), DifferenceKind::Missing),
            ("onboarding/crd.yaml".to_owned(), DifferenceKind::Stale),
            ("platform/old.yaml".to_owned(), DifferenceKind::Extra),
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
