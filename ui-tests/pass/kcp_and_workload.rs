//! A kcp provider with a required workload cluster: `cx.workload()` is the cluster itself, and the
//! kcp manifests are generated. It also serves `v1beta1` with the same schema, which kcp converts
//! without a webhook.

use service_provider::prelude::*;

/// Databases.
#[service_provider(
    group = "db.services.example.io",
    version = "v1",
    kind = "Database",
    workload_cluster = required,
    kcp,
    served_version(name = "v1beta1", deprecated),
)]
pub struct DatabaseSpec {
    /// Engine version.
    pub version: String,
}

impl Reconcile for Database {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
        let workload: &ClusterAccess = cx.workload();
        let _tenant: &ClusterAccess = cx.mcp();
        let _client = workload.client().clone();
        // Futures may hold Send values across awaits.
        let name = self.spec.version.clone();
        std::future::ready(()).await;
        drop(name);
        Ok(Outcome::ready())
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::blocked("BackupsPresent", "delete the backups first"))
    }
}

fn main() {
    let manifests = service_provider::manifests::<Database>();
    let schema = manifests.iter().find(|m| m.kind() == "APIResourceSchema").expect("a kcp provider has a schema");
    assert!(schema.name().ends_with(".databases.db.services.example.io"));
    let versions: Vec<&str> = schema.object["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v1", "v1beta1"]);
    // kcp requires a conversion for more than one version; the versions share one spec type.
    assert_eq!(schema.object["spec"]["conversion"], service_provider::serde_json::json!({ "strategy": "None" }));
    let export = manifests.iter().find(|m| m.path == "kcp/apiexport.yaml").unwrap();
    assert_eq!(export.name(), "db.services.example.io");
    assert_eq!(export.object["spec"]["resources"][0]["schema"], schema.name());
    let role = manifests.iter().find(|m| m.path == "kcp/clusterrole.yaml").unwrap();
    assert!(role.to_yaml().contains("apiexports/content"));
}
