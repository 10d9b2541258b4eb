//! The hello example's validation rules and versions on a real kube-apiserver (built by `cargo
//! xtask realstack`): the CRD the macro generates is accepted as it is (wired to hello's
//! conversion webhook as `init` wires it), the server refuses an empty greeting on create and a
//! changed `target.namespace` on update with the rules' messages, as the embedded server does in
//! `hello::validation`, and a Hello written at either version reads at both, converted by the
//! webhook. Skipped, saying so, where the binaries are not built.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;
use service_provider_runtime::dev::LocalConversionWebhook;
use service_provider_runtime::dev::realstack::{Binaries, RealStack};

use crate::hello::{Hello, HelloSpec, Target};

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
    let mut crd = service_provider::manifests::service_crd::<Hello>();
    let webhook = LocalConversionWebhook::start::<Hello>()
        .await?
        .expect("hello converts v1alpha1 in Rust");
    webhook.wire(&mut crd);
    crds.create(&PostParams::default(), &crd).await?;
    let name = crd.metadata.name.clone().unwrap_or_default();
    tokio::time::timeout(
        Duration::from_secs(60),
        await_condition(crds, &name, conditions::is_crd_established()),
    )
    .await??;

    let hellos: Api<Hello> = Api::namespaced(client.clone(), "default");
    let hello = |name: &str, greeting: &str, namespace: &str| {
        Hello::new(
            name,
            HelloSpec {
                greeting: greeting.into(),
                target: Target {
                    namespace: namespace.into(),
                },
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

    // A message expression, evaluated by the server.
    let message = refusal(
        hellos
            .create(
                &PostParams::default(),
                &hello("padded", "world ", "default"),
            )
            .await,
        "a greeting with blanks",
    );
    assert!(
        message.contains("the greeting ends with blanks"),
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
                &Patch::Merge(json!({"spec": {"target": {"namespace": "greetings"}}})),
            )
            .await,
        "moving target.namespace",
    );
    assert!(
        message.contains("target.namespace is immutable"),
        "{message}"
    );
    // What the README shows kubectl printing.
    eprintln!("kube-apiserver: {message}");

    // The Hello written at v1alpha2 reads at v1alpha1, and one written at v1alpha1 at v1alpha2.
    let at = |version: &str| {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("hello.services.open-control-plane.io", version, "Hello"),
            "hellos",
        );
        (
            Api::<DynamicObject>::namespaced_with(client.clone(), "default", &resource),
            resource,
        )
    };
    let (v1alpha1, old) = at("v1alpha1");
    let read = v1alpha1.get("tenant-a").await?;
    assert_eq!(
        read.data["spec"],
        json!({ "greeting": "world", "targetNamespace": "default" })
    );
    let mut written = DynamicObject::new("tenant-b", &old);
    written.data = json!({ "spec": { "greeting": "old friend", "targetNamespace": "greetings" } });
    v1alpha1.create(&PostParams::default(), &written).await?;
    let read = hellos.get("tenant-b").await?;
    assert_eq!(read.spec.target.namespace, "greetings");
    assert_eq!(read.spec.greeting, "old friend");
    // v1alpha1's own rule, in v1alpha1's words.
    let message = refusal(
        v1alpha1
            .patch(
                "tenant-b",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"targetNamespace": "elsewhere"}})),
            )
            .await,
        "moving targetNamespace at v1alpha1",
    );
    assert!(
        message.contains("targetNamespace is immutable"),
        "{message}"
    );
    Ok(())
}
