//! A classic provider, which installs its workloads into the tenant cluster: in kcp mode the
//! workspace serves no `apps/v1`, and the object says so and points at the workload cluster
//! instead of failing with an opaque 404.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::json;
use service_provider::kube::api::ObjectMeta;
use service_provider::prelude::*;
use service_provider::testing::TestError;

use crate::support;

/// A provider that runs its controller in the tenant cluster, as classic providers do.
#[service_provider(
    group = "classic.services.open-control-plane.io",
    version = "v1alpha1",
    kind = "Classic",
    kcp
)]
pub(crate) struct ClassicSpec {
    /// Replicas of the controller.
    #[serde(default)]
    pub replicas: i32,
}

fn controller(replicas: i32) -> Deployment {
    let labels = std::collections::BTreeMap::from([("app".to_owned(), "classic".to_owned())]);
    Deployment {
        metadata: ObjectMeta {
            name: Some("classic-controller".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "controller".into(),
                        image: Some("registry.test/classic:1".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        status: None,
    }
}

impl Reconcile for Classic {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
        let mut set = cx.apply_set(cx.mcp(), "classic");
        set.add(&controller(self.spec.replicas))?;
        set.apply().await?;
        Ok(Outcome::ready())
    }

    async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {
        cx.apply_set(cx.mcp(), "classic").delete().await?;
        Ok(Deletion::done())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_in_a_workspace_are_explained() -> Result<(), TestError> {
    let platform = support::platform::<Classic>(json!({ "pollInterval": "1m" }))
        .modes([Mode::Kcp])
        .start()
        .await?;
    let tenant = platform
        .create_kcp_tenant("classic", json!({ "replicas": 1 }))
        .await?;
    let object = tenant
        .wait_until("to say its workloads cannot run", |o| {
            support::ready_condition(o).is_some_and(|(status, _, _)| status == "False")
        })
        .await?;
    let (_, reason, message) = support::ready_condition(&object).unwrap();
    assert_eq!(reason, "WorkloadsNotServedInWorkspace", "{message}");
    assert!(
        message.contains("apps/v1 deployments is not served in kcp workspace"),
        "{message}"
    );
    assert!(message.contains("workload cluster"), "{message}");
    platform.stop().await;
    Ok(())
}
