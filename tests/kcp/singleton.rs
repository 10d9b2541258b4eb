//! One object per workspace is served (the seed's "oldest wins", documented in the README): a
//! second object in a bound workspace says which one serves the workspace, and takes over when
//! that one is deleted.

use serde_json::json;
use service_provider::Mode;
use service_provider::kube::api::PostParams;
use service_provider::testing::{TestError, wait_for_object};

use crate::support::{self, ready, ready_condition};
use crate::velero::{Velero, VeleroSpec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_oldest_object_serves_the_workspace_and_the_next_takes_over() -> Result<(), TestError> {
    let platform = support::platform::<Velero>(crate::velero_config())
        .modes([Mode::Kcp])
        .start()
        .await?;
    let first = platform
        .create_kcp_tenant("team-a", json!({ "version": "1.15.0" }))
        .await?;
    first.wait_ready().await?;
    let minted = || {
        platform
            .kcp_source()
            .expect("kcp mode runs")
            .credentials()
            .minted()
    };

    // A second object in the same workspace, as its end user would create it.
    let api = first.api();
    let spec = VeleroSpec {
        version: "1.16.1".into(),
        plugins: Vec::new(),
    };
    let mut second = Velero::new("second", spec);
    second.metadata.namespace = Some(first.namespace().to_owned());
    api.create(&PostParams::default(), &second).await?;
    let refused = wait_for_object(api, "second", support::TIMEOUT, |o: Option<&Velero>| {
        o.and_then(ready_condition)
            .is_some_and(|(status, reason, _)| {
                status == "False" && reason == "DuplicateInWorkspace"
            })
    })
    .await?
    .expect("it exists");
    let (_, _, message) = ready_condition(&refused).unwrap();
    assert!(
        message.contains(&format!("{}/{}", first.namespace(), first.name())),
        "{message}"
    );
    assert!(
        refused.metadata.finalizers.is_none_or(|f| f.is_empty()),
        "a refused object gets no finalizer"
    );
    assert_eq!(minted(), 1, "no access for the refused object");

    first.delete().await?;
    first.wait_gone().await?;
    let second = wait_for_object(api, "second", support::TIMEOUT, ready)
        .await?
        .expect("it exists");
    assert_eq!(
        second.status.unwrap().extra.installed_version.as_deref(),
        Some("1.16.1")
    );
    assert_eq!(minted(), 2, "a new ServiceAccount token for the new owner");
    platform.stop().await;
    Ok(())
}
