//! A provider author's first test of the Velero example, written from the README's "Testing your
//! provider" section alone: one tenant per mode installed, checked in its clusters, removed.

use service_provider::k8s_openapi::api::apps::v1::Deployment;
use service_provider::k8s_openapi::api::core::v1::Namespace;
use service_provider::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use service_provider::serde_json::json;
use service_provider::testing::{TestError, TestPlatform};

use crate::velero::{Velero, VeleroSpec};

#[tokio::test(flavor = "multi_thread")]
async fn velero_is_installed_and_removed_in_both_modes() -> Result<(), TestError> {
    let platform = TestPlatform::<Velero>::builder()
        .provider_config(json!({
            "imageRepository": "registry.test/velero",
            "versions": [{ "version": "1.16.1" }],
        }))
        .start()
        .await?;
    let spec = VeleroSpec {
        version: "1.16.1".into(),
        plugins: vec![],
    };
    let tenants = [
        platform.create_tenant("tenant-a", spec.clone()).await?,
        platform.create_kcp_tenant("team-b", spec).await?,
    ];
    for tenant in &tenants {
        let velero = tenant.wait_ready().await?;
        let status = velero.status.unwrap().extra;
        assert_eq!(status.installed_version.as_deref(), Some("1.16.1"));
        tenant
            .mcp()
            .get::<CustomResourceDefinition>("backups.velero.io")
            .await?;
        let worker_ns = status.worker_namespace.unwrap();
        let workload = tenant.workload().await?;
        let worker: Deployment = workload.get(&format!("{worker_ns}/velero")).await?;
        let image = worker.spec.template.spec.unwrap().containers[0]
            .image
            .clone();
        assert_eq!(image.as_deref(), Some("registry.test/velero/velero:1.16.1"));

        tenant.delete().await?;
        tenant.wait_gone().await?;
        workload.wait_gone::<Namespace>(&worker_ns).await?;
        tenant
            .mcp()
            .wait_gone::<CustomResourceDefinition>("backups.velero.io")
            .await?;
    }
    platform.stop().await;
    Ok(())
}
