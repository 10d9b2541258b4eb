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
    version = "v1alpha2",
    kind = "Hello",
    served_version(
        name = "v1alpha1",
        spec = HelloSpecV1alpha1,
        deprecated = "hello.services.open-control-plane.io/v1alpha1 is deprecated; use v1alpha2"
    )
)]
#[x_kube(validation = Rule::new("self.target.__namespace__ != 'kube-system'").message("greetings do not go into kube-system; choose another target.namespace").reason(Reason::FieldValueForbidden).field_path(".target.namespace"))]
pub struct HelloSpec {
    /// Whom to greet.
    #[x_kube(validation = Rule::new("size(self) > 0").message("say whom to greet: greeting is empty"))]
    #[schemars(length(max = 64))]
    #[x_kube(validation = Rule::new("self == self.trim()").message(Message::Expression("'the greeting ' + (self.startsWith(' ') ? 'starts' : 'ends') + ' with blanks'")))]
    pub greeting: String,
    /// Where the greeting goes in the tenant's cluster.
    #[serde(default)]
    pub target: Target,
}

/// Where the greeting goes.
#[api_type]
pub struct Target {
    /// The namespace of the tenant's cluster the greeting goes into. Fixed once the Hello exists:
    /// moving it would leave the ConfigMap in the old namespace behind.
    #[serde(default = "default_namespace")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("target.namespace is immutable; delete the Hello and create it again to move the greeting"))]
    pub namespace: String,
}

impl Default for Target {
    fn default() -> Self {
        Target {
            namespace: default_namespace(),
        }
    }
}

/// A Hello as `v1alpha1` has it: the namespace beside the greeting.
#[api_type]
pub struct HelloSpecV1alpha1 {
    /// Whom to greet.
    #[x_kube(validation = Rule::new("size(self) > 0").message("say whom to greet: greeting is empty"))]
    pub greeting: String,
    /// The namespace of the tenant's cluster the greeting goes into. Fixed once the Hello exists.
    #[serde(default = "default_namespace")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("targetNamespace is immutable; delete the Hello and create it again to move the greeting"))]
    pub target_namespace: String,
}

impl From<HelloSpecV1alpha1> for HelloSpec {
    fn from(old: HelloSpecV1alpha1) -> Self {
        HelloSpec {
            greeting: old.greeting,
            target: Target {
                namespace: old.target_namespace,
            },
        }
    }
}

impl From<HelloSpec> for HelloSpecV1alpha1 {
    fn from(hub: HelloSpec) -> Self {
        HelloSpecV1alpha1 {
            greeting: hub.greeting,
            target_namespace: hub.target.namespace,
        }
    }
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
            Api::namespaced(cx.mcp().client().clone(), &self.spec.target.namespace);
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
            Api::namespaced(cx.mcp().client().clone(), &self.spec.target.namespace);
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
            target: Target::default(),
        };
        let tenant = platform.create_tenant("tenant-a", spec).await?;
        tenant.wait_ready().await?;

        let greeting: ConfigMap = tenant.mcp().get("default/hello").await?;
        assert_eq!(greeting.data.unwrap()["greeting"], "Hello, world!");

        tenant
            .set_spec(HelloSpec {
                greeting: "again".into(),
                target: Target::default(),
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
    /// refused when it is created, and a change of `target.namespace` when it is applied, each
    /// with the rule's message, before the provider ever sees the object.
    #[tokio::test(flavor = "multi_thread")]
    async fn invalid_hellos_are_refused_with_the_rules_message() -> Result<(), TestError> {
        let platform = TestPlatform::<Hello>::start().await?;
        let refused = platform
            .create_tenant(
                "tenant-empty",
                HelloSpec {
                    greeting: String::new(),
                    target: Target::default(),
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
                    target: Target::default(),
                },
            )
            .await?;
        tenant.wait_ready().await?;
        let moved = tenant
            .set_spec(HelloSpec {
                greeting: "world".into(),
                target: Target {
                    namespace: "greetings".into(),
                },
            })
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            moved.contains("target.namespace is immutable"),
            "a changed target.namespace must be refused with the rule's message: {moved:?}"
        );
        // The greeting stays where it was.
        let greeting: ConfigMap = tenant.mcp().get("default/hello").await?;
        assert_eq!(greeting.data.unwrap()["greeting"], "Hello, world!");
        platform.stop().await;
        Ok(())
    }
}

/// The two versions, as end users meet them: a Hello written at either reads at both, and each
/// version's rules refuse what it does not allow.
#[cfg(test)]
mod versions {
    use super::*;
    use serde_json::json;
    use service_provider::kube::api::{ApiResource, DynamicObject, PostParams};
    use service_provider::kube::core::GroupVersionKind;
    use service_provider::testing::{TestError, TestPlatform};

    fn hellos(platform: &TestPlatform<Hello>, version: &str) -> (Api<DynamicObject>, ApiResource) {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("hello.services.open-control-plane.io", version, "Hello"),
            "hellos",
        );
        let api = Api::namespaced_with(platform.onboarding().client(), "default", &resource);
        (api, resource)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_hello_written_at_either_version_reads_at_both() -> Result<(), TestError> {
        let platform = TestPlatform::<Hello>::start().await?;
        let (v1alpha1, old) = hellos(&platform, "v1alpha1");
        let (v1alpha2, new) = hellos(&platform, "v1alpha2");

        let mut written = DynamicObject::new("written-at-v1alpha1", &old);
        written.data =
            json!({ "spec": { "greeting": "old friend", "targetNamespace": "greetings" } });
        v1alpha1.create(&PostParams::default(), &written).await?;
        let read = v1alpha2.get("written-at-v1alpha1").await?;
        assert_eq!(
            read.data["spec"],
            json!({ "greeting": "old friend", "target": { "namespace": "greetings" } })
        );

        let mut written = DynamicObject::new("written-at-v1alpha2", &new);
        written.data =
            json!({ "spec": { "greeting": "new friend", "target": { "namespace": "default" } } });
        v1alpha2.create(&PostParams::default(), &written).await?;
        let read = v1alpha1.get("written-at-v1alpha2").await?;
        assert_eq!(
            read.data["spec"],
            json!({ "greeting": "new friend", "targetNamespace": "default" })
        );

        // Each version's rules: v1alpha1 names the field as v1alpha1 has it.
        let moved = v1alpha1
            .patch(
                "written-at-v1alpha1",
                &service_provider::kube::api::PatchParams::default(),
                &service_provider::kube::api::Patch::Merge(
                    json!({ "spec": { "targetNamespace": "elsewhere" } }),
                ),
            )
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(moved.contains("targetNamespace is immutable"), "{moved:?}");
        let mut padded = DynamicObject::new("padded", &new);
        padded.data = json!({ "spec": { "greeting": " world " } });
        let refused = v1alpha2
            .create(&PostParams::default(), &padded)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            refused.contains("the greeting starts with blanks"),
            "{refused:?}"
        );
        let mut forbidden = DynamicObject::new("forbidden", &new);
        forbidden.data =
            json!({ "spec": { "greeting": "root", "target": { "namespace": "kube-system" } } });
        let refused = v1alpha2
            .create(&PostParams::default(), &forbidden)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            refused
                .contains("spec.target.namespace: Forbidden: greetings do not go into kube-system"),
            "{refused:?}"
        );
        platform.stop().await;
        Ok(())
    }
}
