//! What a platform operator applies to deploy a provider, beside what `init` installs: the openMCP
//! `ServiceProvider` object that makes openmcp-operator run the image, and a sample
//! `ProviderConfig` to fill in.

use k8s_openapi::api::core::v1::{SecretVolumeSource, Volume, VolumeMount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinitionVersion, JSONSchemaProps, JSONSchemaPropsOrArray,
};
use kube::CustomResourceExt;
use serde_json::{Value, json};

use super::Manifest;
use crate::manifests::rbac::Place;
use crate::openmcp::constants::CLUSTER_LABEL;
use crate::openmcp::{DeploymentSpec, MetricsConfig, ServiceProviderObject};
use crate::provider::ServiceProvider;

/// The port `run` serves `/metrics` on by default (`--metrics-bind-address :8080`), which is also
/// openmcp-operator's default metrics port.
pub const METRICS_PORT: i32 = 8080;

/// Where `run` reads the conversion webhook's certificate when `--webhook-cert-path` is not given:
/// controller-runtime's default directory, under the temporary directory (`/tmp` in the
/// container, where the deployment mounts the certificate).
pub(crate) const WEBHOOK_CERT_DIR_IN_TMP: &str = "k8s-webhook-server/serving-certs";

/// The conversion webhook's certificate Secret `init` makes unless `WEBHOOK_SECRET_NAME` names
/// another, in the provider's namespace on the platform cluster.
pub fn webhook_certificate_secret(provider_name: &str) -> String {
    format!("{provider_name}-webhook-tls")
}

/// Mounts the certificate Secret `init` makes where `run` reads it.
fn mount_webhook_certificate(spec: &mut DeploymentSpec, provider_name: &str) {
    let volume = "webhook-certificate";
    spec.extra_volumes.push(Volume {
        name: volume.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(webhook_certificate_secret(provider_name)),
            ..Default::default()
        }),
        ..Default::default()
    });
    spec.extra_volume_mounts.push(VolumeMount {
        name: volume.to_owned(),
        mount_path: format!("/tmp/{WEBHOOK_CERT_DIR_IN_TMP}"),
        read_only: Some(true),
        ..Default::default()
    });
}

/// The `ServiceProvider` object deploying `image` as `provider_name`, and a `ProviderConfig` named
/// like it: `spec` is `provider_config` when the author gave a sample (`App::dev_samples`), else
/// the required fields of the ProviderConfig schema with their defaults or placeholders.
pub fn deployment<P: ServiceProvider>(
    provider_name: &str,
    image: &str,
    provider_config: Option<&Value>,
) -> Vec<Manifest> {
    let mut service_provider = ServiceProviderObject::new(
        provider_name,
        DeploymentSpec {
            image: image.to_owned(),
            verbosity: Some("INFO".to_owned()),
            // One replica needs no leader election; the operator adds `--leader-elect=true` when
            // the platform operator raises this.
            run_replicas: Some(1),
            metrics: Some(MetricsConfig {
                disabled: false,
                path: Some("/metrics".to_owned()),
                port: Some(METRICS_PORT),
            }),
            ..Default::default()
        },
    );
    service_provider
        .metadata
        .labels
        .get_or_insert_default()
        .insert(CLUSTER_LABEL.to_owned(), "platform".to_owned());
    if crate::conversion::needs_webhook::<P>() {
        mount_webhook_certificate(&mut service_provider.spec, provider_name);
    }

    let info = P::INFO;
    let spec = provider_config.cloned().unwrap_or_else(|| {
        spec_sample(
            &<P::ProviderConfig as CustomResourceExt>::crd()
                .spec
                .versions,
        )
    });
    let provider_config = json!({
        "apiVersion": info.api_version(),
        "kind": "ProviderConfig",
        "metadata": {
            "name": provider_name,
            "labels": { CLUSTER_LABEL: "platform" },
        },
        "spec": spec,
    });
    vec![
        Manifest::new(
            Place::Platform,
            "deploy/serviceprovider.yaml",
            &service_provider,
        ),
        Manifest::new(
            Place::Platform,
            "deploy/providerconfig.yaml",
            &provider_config,
        ),
    ]
}

/// A `spec` that satisfies the schema of the first version: required fields only, each with its
/// default, or the first enum value, or a placeholder of its type.
pub(crate) fn spec_sample(versions: &[CustomResourceDefinitionVersion]) -> Value {
    versions
        .first()
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| s.properties.as_ref())
        .and_then(|p| p.get("spec"))
        .map(sample)
        .unwrap_or_else(|| json!({}))
}

pub(crate) fn sample(schema: &JSONSchemaProps) -> Value {
    if let Some(default) = &schema.default {
        return default.0.clone();
    }
    if let Some(first) = schema.enum_.as_ref().and_then(|e| e.first()) {
        return first.0.clone();
    }
    match schema.type_.as_deref() {
        Some("object") | None => {
            let mut out = serde_json::Map::new();
            if let Some(properties) = &schema.properties {
                for name in schema.required.iter().flatten() {
                    if let Some(property) = properties.get(name) {
                        out.insert(name.clone(), sample(property));
                    }
                }
            }
            Value::Object(out)
        }
        Some("string") => json!("dev"),
        Some("integer") => json!(schema.minimum.map_or(1, |m| m.max(1.0) as i64)),
        Some("number") => json!(schema.minimum.unwrap_or(1.0).max(1.0)),
        Some("boolean") => json!(false),
        Some("array") => match (schema.min_items, &schema.items) {
            (Some(n), Some(JSONSchemaPropsOrArray::Schema(item))) if n > 0 => {
                json!([sample(item)])
            }
            _ => json!([]),
        },
        Some(_) => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_fill_required_fields_only() {
        let schema: JSONSchemaProps = serde_json::from_value(json!({
            "type": "object",
            "required": ["version", "mode", "replicas", "plugins"],
            "properties": {
                "version": {"type": "string"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "replicas": {"type": "integer", "minimum": 2},
                "plugins": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
                "optional": {"type": "string"},
                "pollInterval": {"type": "string", "default": "1m"}
            }
        }))
        .unwrap();
        assert_eq!(
            sample(&schema),
            json!({"version": "dev", "mode": "fast", "replicas": 2, "plugins": [{"name": "dev"}]})
        );
    }
}
