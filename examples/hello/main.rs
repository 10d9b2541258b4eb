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
    pub greeting: String,
}

const NAMESPACE: &str = "default";
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
        let api: Api<ConfigMap> = Api::namespaced(cx.mcp().client().clone(), NAMESPACE);
        api.patch(
            NAME,
            &PatchParams::apply("hello-provider").force(),
            &Patch::Apply(&config_map),
        )
        .await?;
        Ok(Outcome::ready())
    }

    async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {
        let api: Api<ConfigMap> = Api::namespaced(cx.mcp().client().clone(), NAMESPACE);
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
        };
        let tenant = platform.create_tenant("tenant-a", spec).await?;
        tenant.wait_ready().await?;

        let greeting: ConfigMap = tenant.mcp().get("default/hello").await?;
        assert_eq!(greeting.data.unwrap()["greeting"], "Hello, world!");

        tenant
            .set_spec(HelloSpec {
                greeting: "again".into(),
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
