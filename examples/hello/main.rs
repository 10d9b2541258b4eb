//! The smallest service provider: each tenant who creates a `Hello` gets a ConfigMap with a
//! greeting in their cluster.
//!
//! ```sh
//! cargo run --example hello -- manifests --output manifests/hello
//! ```

use service_provider::k8s_openapi::api::core::v1::ConfigMap;
use service_provider::kube::Api;
use service_provider::kube::api::{DeleteParams, Patch, PatchParams};
use service_provider::prelude::*;

/// Greets a tenant.
#[service_provider(
    group = "hello.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "Hello"
)]
pub struct HelloSpec {
    /// Whom to greet.
    #[x_kube(validation = Rule::new("size(self) > 0").message("say whom to greet: greeting is empty"))]
    pub greeting: String,
    /// The namespace of the tenant's cluster the greeting goes into. Fixed once the Hello exists:
    /// moving it would leave the ConfigMap in the old namespace behind.
    #[serde(default = "default_namespace")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("targetNamespace is immutable; delete the Hello and create it again to move the greeting"))]
    pub target_namespace: String,
}

fn default_namespace() -> String {
    "default".to_owned()
}

const NAME: &str = "hello";

impl Reconcile for Hello {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
        let config_map = ConfigMap {
            metadata: service_provider::kube::core::ObjectMeta {
                name: Some(NAME.into()),
                ..Default::default()
            },
            data: Some(
                [(
                    "greeting".to_owned(),
                    format!("Hello, {}!", self.spec.greeting),
                )]
                .into(),
            ),
            ..Default::default()
        };
        let api: Api<ConfigMap> =
            Api::namespaced(cx.mcp().client().clone(), &self.spec.target_namespace);
        api.patch(
            NAME,
            &PatchParams::apply("hello-provider").force(),
            &Patch::Apply(&config_map),
        )
        .await?;
        Ok(Outcome::ready())
    }

    async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {
        let api: Api<ConfigMap> =
            Api::namespaced(cx.mcp().client().clone(), &self.spec.target_namespace);
        match api.delete(NAME, &DeleteParams::default()).await {
            Ok(_) => Ok(Deletion::done()),
            Err(service_provider::kube::Error::Api(status)) if status.code == 404 => {
                Ok(Deletion::done())
            }
            Err(err) => Err(err.into()),
        }
    }
}

fn main() -> std::process::ExitCode {
    service_provider::run::<Hello>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use service_provider::testing::{TestError, TestPlatform};

    #[tokio::test(flavor = "multi_thread")]
    async fn greets_the_tenant_and_cleans_up() -> Result<(), TestError> {
        let platform = TestPlatform::<Hello>::start().await?;
        let spec = HelloSpec {
            greeting: "world".into(),
            target_namespace: "default".into(),
        };
        let tenant = platform.create_tenant("tenant-a", spec).await?;
        tenant.wait_ready().await?;

        let greeting: ConfigMap = tenant.mcp().get("default/hello").await?;
        assert_eq!(greeting.data.unwrap()["greeting"], "Hello, world!");

        tenant
            .set_spec(HelloSpec {
                greeting: "again".into(),
                target_namespace: "default".into(),
            })
            .await?;
        tenant.wait_ready().await?;
        let greeting: ConfigMap = tenant.mcp().get("default/hello").await?;
        assert_eq!(greeting.data.unwrap()["greeting"], "Hello, again!");

        tenant.delete().await?;
        tenant.wait_gone().await?;
        assert!(
            tenant
                .mcp()
                .get_opt::<ConfigMap>("default/hello")
                .await?
                .is_none()
        );
        platform.stop().await;
        Ok(())
    }
}

/// The spec's validation rules, as the end user meets them.
#[cfg(test)]
mod validation {
    use super::*;
    use service_provider::testing::{TestError, TestPlatform};

    /// The rules on the spec are the API server's to enforce: a Hello without a greeting is
    /// refused when it is created, and a change of `targetNamespace` when it is applied, each
    /// with the rule's message, before the provider ever sees the object.
    #[tokio::test(flavor = "multi_thread")]
    async fn invalid_hellos_are_refused_with_the_rules_message() -> Result<(), TestError> {
        let platform = TestPlatform::<Hello>::start().await?;
        let refused = platform
            .create_tenant(
                "tenant-empty",
                HelloSpec {
                    greeting: String::new(),
                    target_namespace: "default".into(),
                },
            )
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            refused.contains("say whom to greet: greeting is empty"),
            "an empty greeting must be refused with the rule's message: {refused:?}"
        );

        let tenant = platform
            .create_tenant(
                "tenant-a",
                HelloSpec {
                    greeting: "world".into(),
                    target_namespace: "default".into(),
                },
            )
            .await?;
        tenant.wait_ready().await?;
        let moved = tenant
            .set_spec(HelloSpec {
                greeting: "world".into(),
                target_namespace: "greetings".into(),
            })
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            moved.contains("targetNamespace is immutable"),
            "a changed targetNamespace must be refused with the rule's message: {moved:?}"
        );
        // The greeting stays where it was.
        let greeting: ConfigMap = tenant.mcp().get("default/hello").await?;
        assert_eq!(greeting.data.unwrap()["greeting"], "Hello, world!");
        platform.stop().await;
        Ok(())
    }
}
