//! The hello example's validation rules on a real kube-apiserver (built by `cargo xtask
//! realstack`): the CRD the macro generates is accepted as it is, and the server refuses an empty
//! greeting on create and a changed `targetNamespace` on update with the rules' messages, as the
//! embedded server does in `hello::validation`. Skipped, saying so, where the binaries are not
//! built.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use service_provider_runtime::dev::realstack::{Binaries, RealStack};

use crate::hello::{Hello, HelloSpec};

/// The message of the API server's refusal, or a panic saying what was accepted instead.
fn refusal<T: std::fmt::Debug>(result: Result<T, kube::Error>, what: &str) -> String {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{what}: {status:?}");
            status.message
        }
        other => panic!("{what} must be refused as invalid, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_kube_apiserver_enforces_hellos_rules() -> anyhow::Result<()> {
    let Some(binaries) = Binaries::for_test() else {
        return Ok(());
    };
    let stack = RealStack::start_with(binaries, Duration::from_secs(120)).await?;
    let cluster = stack.kube_apiserver("onboarding").await?;
    let client = cluster.client().await?;

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = service_provider::manifests::service_crd::<Hello>();
    crds.create(&PostParams::default(), &crd).await?;
    let name = crd.metadata.name.clone().unwrap_or_default();
    tokio::time::timeout(
        Duration::from_secs(60),
        await_condition(crds, &name, conditions::is_crd_established()),
    )
    .await??;

    let hellos: Api<Hello> = Api::namespaced(client, "default");
    let hello = |name: &str, greeting: &str, target_namespace: &str| {
        Hello::new(
            name,
            HelloSpec {
                greeting: greeting.into(),
                target_namespace: target_namespace.into(),
            },
        )
    };
    let message = refusal(
        hellos
            .create(&PostParams::default(), &hello("empty", "", "default"))
            .await,
        "a Hello without a greeting",
    );
    assert!(
        message.contains("say whom to greet: greeting is empty"),
        "{message}"
    );

    hellos
        .create(
            &PostParams::default(),
            &hello("tenant-a", "world", "default"),
        )
        .await?;
    let message = refusal(
        hellos
            .patch(
                "tenant-a",
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"spec": {"targetNamespace": "greetings"}})),
            )
            .await,
        "moving targetNamespace",
    );
    assert!(
        message.contains("targetNamespace is immutable"),
        "{message}"
    );
    // What the README shows kubectl printing.
    eprintln!("kube-apiserver: {message}");
    Ok(())
}
