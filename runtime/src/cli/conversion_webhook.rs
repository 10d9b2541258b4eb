//! Where kube-apiserver reaches the provider's conversion webhook and the certificate it trusts:
//! `init` writes both into the Service API CRD's `spec.conversion.webhook.clientConfig` for a
//! provider that converts a version in Rust ([`crate::conversion::needs_webhook`]).
//!
//! The flags and environment are those of controller-utils' webhooks package, which Go providers
//! use for their webhooks (`pkg/init/webhooks/flags.go`, `utils.go`, `init.go`): the webhook is
//! reached at `--webhooks-base-url` (from another cluster: the Service API lives on the
//! onboarding cluster, the provider runs on the platform cluster) or else through the Service
//! `WEBHOOK_SERVICE_NAME` in `WEBHOOK_SERVICE_NAMESPACE` on `--webhooks-service-port`; the
//! certificate is `tls.crt`/`tls.key` of the Secret `WEBHOOK_SECRET_NAME` in
//! `WEBHOOK_SECRET_NAMESPACE` on the platform cluster, made self-signed when it has none (as
//! `GenerateCertificate` does), and its certificate is the CRD's `caBundle` unless
//! `--webhooks-without-ca` (a certificate from a well-known CA). `run` serves the same
//! certificate, mounted from the Secret (`--webhook-cert-path`).

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, ServiceReference, WebhookClientConfig,
};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

use crate::ops::CONVERT_PATH;

/// Where the webhook is reached and where its certificate is kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WebhookClientOptions {
    /// `--webhooks-base-url`: the webhook's URL without the path, e.g. `https://velero.example.com`.
    pub base_url: Option<String>,
    /// `WEBHOOK_SERVICE_NAME` and `WEBHOOK_SERVICE_NAMESPACE`: the Service in front of the
    /// provider, when the onboarding cluster is the platform cluster.
    pub service: Option<(String, String)>,
    /// `--webhooks-service-port` (443).
    pub service_port: i32,
    /// `WEBHOOK_SECRET_NAME` and `WEBHOOK_SECRET_NAMESPACE`: the certificate's Secret on the
    /// platform cluster (default `<provider-name>-webhook-tls` in the provider's namespace).
    pub secret: (String, String),
    /// `--webhooks-without-ca`: the CRD carries no caBundle.
    pub without_ca: bool,
    /// `--webhooks-additional-sans`: more names the self-signed certificate is valid for.
    pub additional_sans: Vec<String>,
}

/// Why the conversion webhook could not be wired.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// Neither a URL nor a Service says where the webhook is.
    #[error(
        "{kind} converts a version of its Service API in Rust, so the API server of the onboarding cluster must reach its conversion webhook: pass --webhooks-base-url https://<host[:port]> (how that cluster reaches the provider's port 9443) or set WEBHOOK_SERVICE_NAME and WEBHOOK_SERVICE_NAMESPACE to a Service in front of the provider when the onboarding cluster is the platform cluster"
    )]
    NowhereToReach {
        /// The Service API kind.
        kind: &'static str,
    },
    /// The base URL is not an `https://` URL.
    #[error(
        "--webhooks-base-url {0:?} is not an https:// URL; write it like https://velero-webhook.example.com:9443"
    )]
    BaseUrl(String),
    /// The certificate Secret could not be read or created.
    #[error(
        "the conversion webhook's certificate Secret {namespace}/{name} on the platform cluster: {source}"
    )]
    Secret {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What failed.
        source: kube::Error,
    },
    /// The Secret exists without a certificate; `init` does not overwrite a Secret it did not make.
    #[error(
        "the Secret {namespace}/{name} on the platform cluster has no tls.crt; put the webhook's certificate and key in it (tls.crt, tls.key) or delete it so that init makes a self-signed one"
    )]
    NoCertificate {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A self-signed certificate could not be made.
    #[error("making the conversion webhook's certificate: {0}")]
    SelfSigned(#[from] crate::ops::tls::TlsError),
}

impl WebhookClientOptions {
    /// The client config without its CA bundle.
    fn client_config(&self, kind: &'static str) -> Result<WebhookClientConfig, WebhookError> {
        if let Some(base) = self.base_url.as_deref().filter(|b| !b.is_empty()) {
            let url = format!("{}{CONVERT_PATH}", base.trim_end_matches('/'));
            let parsed: http::Uri = url
                .parse()
                .map_err(|_| WebhookError::BaseUrl(base.to_owned()))?;
            if parsed.scheme_str() != Some("https") || parsed.host().is_none() {
                return Err(WebhookError::BaseUrl(base.to_owned()));
            }
            return Ok(WebhookClientConfig {
                url: Some(url),
                ..Default::default()
            });
        }
        match &self.service {
            Some((name, namespace)) if !name.is_empty() && !namespace.is_empty() => {
                Ok(WebhookClientConfig {
                    service: Some(ServiceReference {
                        name: name.clone(),
                        namespace: namespace.clone(),
                        path: Some(CONVERT_PATH.to_owned()),
                        port: Some(self.service_port),
                    }),
                    ..Default::default()
                })
            }
            _ => Err(WebhookError::NowhereToReach { kind }),
        }
    }

    /// The names the certificate must be valid for: the Service's DNS names, the base URL's
    /// host and the additional ones (controller-utils' `getServiceCertDNSNames`).
    fn certificate_hosts(&self) -> Vec<String> {
        let mut hosts = Vec::new();
        if let Some((name, namespace)) = &self.service {
            hosts.push(format!("{name}.{namespace}.svc"));
            hosts.push(format!("{name}.{namespace}.svc.cluster.local"));
        }
        if let Some(host) = self
            .base_url
            .as_deref()
            .and_then(|b| b.parse::<http::Uri>().ok())
            .and_then(|u| u.host().map(|h| h.trim_matches(['[', ']']).to_owned()))
        {
            hosts.push(host);
        }
        hosts.extend(self.additional_sans.iter().cloned());
        let mut seen = std::collections::HashSet::new();
        hosts.retain(|h| !h.is_empty() && seen.insert(h.clone()));
        hosts
    }
}

/// Sets `crd`'s conversion webhook client config when its strategy is `Webhook`: the URL or
/// Service, and the CA bundle from the certificate Secret on `platform` (made when missing).
pub async fn wire(
    crd: &mut CustomResourceDefinition,
    kind: &'static str,
    platform: &kube::Client,
    options: &WebhookClientOptions,
) -> Result<(), WebhookError> {
    let Some(webhook) = crd
        .spec
        .conversion
        .as_mut()
        .filter(|c| c.strategy == "Webhook")
        .and_then(|c| c.webhook.as_mut())
    else {
        return Ok(());
    };
    let mut client_config = options.client_config(kind)?;
    if !options.without_ca {
        let certificate = certificate(platform, options).await?;
        client_config.ca_bundle = Some(ByteString(certificate));
    }
    webhook.client_config = Some(client_config);
    Ok(())
}

/// The certificate in the Secret, which is made with a self-signed certificate and key when it
/// does not exist.
async fn certificate(
    platform: &kube::Client,
    options: &WebhookClientOptions,
) -> Result<Vec<u8>, WebhookError> {
    let (name, namespace) = &options.secret;
    let secrets: Api<Secret> = Api::namespaced(platform.clone(), namespace);
    let secret_error = |source| WebhookError::Secret {
        namespace: namespace.clone(),
        name: name.clone(),
        source,
    };
    let existing = secrets.get_opt(name).await.map_err(secret_error)?;
    if let Some(secret) = existing {
        return match secret.data.and_then(|mut d| d.remove("tls.crt")) {
            Some(cert) if !cert.0.is_empty() => Ok(cert.0),
            _ => Err(WebhookError::NoCertificate {
                namespace: namespace.clone(),
                name: name.clone(),
            }),
        };
    }
    let hosts = options.certificate_hosts();
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let (cert, key) = crate::ops::tls::self_signed_pem(&hosts)?;
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(
            [
                ("tls.crt".to_owned(), ByteString(cert.clone().into_bytes())),
                ("tls.key".to_owned(), ByteString(key.into_bytes())),
            ]
            .into(),
        ),
        ..Default::default()
    };
    match secrets.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(cert.into_bytes()),
        // Another init made it meanwhile: use that one.
        Err(err) if crate::access::is_status(&err, 409) => {
            Box::pin(certificate(platform, options)).await
        }
        Err(err) => Err(secret_error(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> WebhookClientOptions {
        WebhookClientOptions {
            service_port: 443,
            secret: ("hello-webhook-tls".into(), "openmcp-system".into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_base_url_wins_over_the_service() {
        let options = WebhookClientOptions {
            base_url: Some("https://hello.example.com:9443/".into()),
            service: Some(("hello-webhook".into(), "openmcp-system".into())),
            ..options()
        };
        let config = options.client_config("Hello").unwrap();
        assert_eq!(
            config.url.as_deref(),
            Some("https://hello.example.com:9443/convert")
        );
        assert!(config.service.is_none());
        assert_eq!(
            options.certificate_hosts(),
            [
                "hello-webhook.openmcp-system.svc",
                "hello-webhook.openmcp-system.svc.cluster.local",
                "hello.example.com"
            ]
        );
    }

    #[test]
    fn a_service_is_reached_on_its_port_at_convert() {
        let options = WebhookClientOptions {
            service: Some(("hello-webhook".into(), "openmcp-system".into())),
            service_port: 8443,
            ..options()
        };
        let service = options.client_config("Hello").unwrap().service.unwrap();
        assert_eq!(
            (service.name.as_str(), service.namespace.as_str()),
            ("hello-webhook", "openmcp-system")
        );
        assert_eq!(service.path.as_deref(), Some("/convert"));
        assert_eq!(service.port, Some(8443));
    }

    #[test]
    fn nowhere_to_reach_and_a_plain_url_are_refused_saying_what_to_pass() {
        let message = options().client_config("Hello").unwrap_err().to_string();
        assert!(message.contains("--webhooks-base-url"), "{message}");
        assert!(message.contains("WEBHOOK_SERVICE_NAME"), "{message}");
        let plain = WebhookClientOptions {
            base_url: Some("http://hello.example.com".into()),
            ..options()
        };
        let message = plain.client_config("Hello").unwrap_err().to_string();
        assert!(message.contains("not an https:// URL"), "{message}");
    }
}
