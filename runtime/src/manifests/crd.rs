//! The two CRDs: kube-derive's output plus the documented openMCP additions.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceConversion, CustomResourceDefinition,
    ServiceReference, WebhookClientConfig, WebhookConversion,
};
use kube::CustomResourceExt;

use crate::conversion;

use crate::openmcp::constants::{PURPOSE_ONBOARDING, PURPOSE_PLATFORM};
use crate::provider::ServiceProvider;

/// The label by which `init` routes each CRD to its cluster.
pub use crate::openmcp::constants::CLUSTER_LABEL;

/// Names of the printer columns every Service API gets, after the author's.
pub const COMMON_COLUMNS: [&str; 3] = ["Phase", "Ready", "Age"];

/// The printer columns every Service API gets: Phase, Ready and Age.
pub fn common_columns() -> Vec<CustomResourceColumnDefinition> {
    let column = |name: &str, type_: &str, json_path: &str, description: &str| {
        CustomResourceColumnDefinition {
            name: name.into(),
            type_: type_.into(),
            json_path: json_path.into(),
            description: Some(description.into()),
            ..Default::default()
        }
    };
    vec![
        column(
            "Phase",
            "string",
            ".status.phase",
            "Ready, Progressing or Terminating",
        ),
        column(
            "Ready",
            "string",
            ".status.conditions[?(@.type==\"Ready\")].status",
            "Whether the service is ready",
        ),
        column(
            "Age",
            "date",
            ".metadata.creationTimestamp",
            "Time since the object was created",
        ),
    ]
}

fn label(crd: &mut CustomResourceDefinition, cluster: &str) {
    crd.metadata
        .labels
        .get_or_insert_default()
        .insert(CLUSTER_LABEL.into(), cluster.into());
}

/// The Service API CRD: `P::crd()` and the CRD of each other served version merged into one (the
/// hub first, then the others as declared; `storage` on the one objects are stored at), with the
/// cluster label `onboarding` and the common columns. When a version converts in Rust the CRD's
/// conversion strategy is `Webhook`, reviewed in `ConversionReview` v1 at the Service
/// `<kind>-webhook` in `openmcp-system`, a placeholder so that the CRD applies as it is: where
/// the webhook is reached is the deployment's to say, and `init` writes it with the CA bundle
/// (see [`crate::cli::conversion_webhook`]).
pub fn service_crd<P: ServiceProvider>() -> CustomResourceDefinition {
    let mut crd = P::crd();
    let storage = conversion::storage_version::<P>();
    for served in P::SERVED_VERSIONS {
        crd.spec.versions.extend((served.crd)().spec.versions);
    }
    for version in &mut crd.spec.versions {
        version.storage = version.name == storage;
    }
    if conversion::needs_webhook::<P>() {
        crd.spec.conversion = Some(CustomResourceConversion {
            strategy: "Webhook".into(),
            webhook: Some(WebhookConversion {
                client_config: Some(WebhookClientConfig {
                    service: Some(ServiceReference {
                        // A placeholder, until `init` writes where the webhook is: named like the
                        // default provider name, where openMCP runs providers.
                        namespace: "openmcp-system".to_owned(),
                        name: format!("{}-webhook", P::INFO.kind.to_lowercase()),
                        path: Some(crate::ops::CONVERT_PATH.to_owned()),
                        port: Some(443),
                    }),
                    ..Default::default()
                }),
                conversion_review_versions: vec!["v1".into()],
            }),
        });
    }
    label(&mut crd, PURPOSE_ONBOARDING);
    for version in &mut crd.spec.versions {
        version
            .additional_printer_columns
            .get_or_insert_default()
            .extend(common_columns());
    }
    crd
}

/// The ProviderConfig CRD: `P::ProviderConfig::crd()` with the cluster label `platform`.
pub fn provider_config_crd<P: ServiceProvider>() -> CustomResourceDefinition {
    let mut crd = <P::ProviderConfig as CustomResourceExt>::crd();
    label(&mut crd, PURPOSE_PLATFORM);
    crd
}
