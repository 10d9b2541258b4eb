//! Export provisioning at start-up: the content-addressed APIResourceSchema is created when
//! absent and never updated (kcp forbids it), then the APIExport is created, or updated to point
//! at that schema and to carry the runtime's permission claims.
//!
//! Several replicas may start at once: the schema's name is its content, so a concurrent create
//! answers 409 with the same schema; the export is written with its resourceVersion as a
//! precondition and re-read and re-applied on a conflict. Resources and claims the runtime does
//! not own (another team's resource on the same export) are kept.

use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::Value;

use crate::access::is_status;
use crate::kcp_api::{APIResourceSchema, v1alpha2};
use crate::manifests::{api_export, api_resource_schema};
use crate::provider::ServiceProvider;

/// How often a conflicting export update is retried before giving up.
const ATTEMPTS: u32 = 10;

/// Why the export could not be provisioned.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// A call to the provider workspace failed.
    #[error("{doing}: {source}")]
    Api {
        /// What was being done.
        doing: String,
        /// What failed.
        source: kube::Error,
    },
    /// The export kept changing under us.
    #[error(
        "the APIExport {0} changed concurrently {ATTEMPTS} times in a row while it was being updated; start again"
    )]
    Conflicts(String),
}

/// What provisioning did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provisioned {
    /// The schema the export now points at.
    pub schema: String,
    /// Whether the schema was created (false: it existed).
    pub schema_created: bool,
    /// Whether the export was created or changed.
    pub export_written: bool,
}

/// Provisions `P`'s schema and the export `export_name` in the workspace `client` points at.
pub async fn provision<P: ServiceProvider>(
    client: &kube::Client,
    export_name: &str,
) -> Result<Provisioned, ProvisionError> {
    let schema = api_resource_schema::<P>();
    let schema_name = schema.metadata.name.clone().unwrap_or_default();
    let schemas: Api<APIResourceSchema> = Api::all(client.clone());
    let schema_created = match schemas.create(&PostParams::default(), &schema).await {
        Ok(_) => {
            tracing::info!(schema = %schema_name, "created APIResourceSchema");
            true
        }
        // Content-addressed: an existing schema of this name is this schema.
        Err(err) if is_status(&err, 409) => false,
        Err(source) => {
            return Err(ProvisionError::Api {
                doing: format!("creating APIResourceSchema {schema_name}"),
                source,
            });
        }
    };
    let wanted = api_export(&P::INFO, export_name, &schema_name);
    let resource = ApiResource::erase::<v1alpha2::APIExport>(&());
    let exports: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let api_err = |doing: &str| {
        let doing = format!("{doing} APIExport {export_name}");
        move |source| ProvisionError::Api { doing, source }
    };
    let written = |schema_name: String| Provisioned {
        schema: schema_name,
        schema_created,
        export_written: true,
    };
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(20 << attempt.min(6))).await;
        }
        let current = exports
            .get_opt(export_name)
            .await
            .map_err(api_err("reading"))?;
        let Some(current) = current else {
            let typed: Api<v1alpha2::APIExport> = Api::all(client.clone());
            match typed.create(&PostParams::default(), &wanted).await {
                Ok(_) => {
                    tracing::info!(export = export_name, schema = %schema_name, "created APIExport");
                    return Ok(written(schema_name));
                }
                // Another replica created it meanwhile: update that one.
                Err(err) if is_status(&err, 409) => continue,
                Err(err) => return Err(api_err("creating")(err)),
            }
        };
        let mut spec = current.data.get("spec").cloned().unwrap_or_default();
        let wanted_spec = serde_json::to_value(&wanted.spec).unwrap_or_default();
        if !merge(&mut spec, &wanted_spec) {
            return Ok(Provisioned {
                schema: schema_name,
                schema_created,
                export_written: false,
            });
        }
        // Lists are replaced whole by a merge patch; the resourceVersion makes a concurrent
        // change answer 409 instead of being overwritten. Fields the runtime does not know are
        // left alone.
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "spec": {
                "resources": spec.get("resources"),
                "permissionClaims": spec.get("permissionClaims"),
            },
        });
        match exports
            .patch(export_name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                tracing::info!(export = export_name, schema = %schema_name, "updated APIExport");
                return Ok(written(schema_name));
            }
            Err(err) if is_status(&err, 409) => continue,
            Err(err) => return Err(api_err("updating")(err)),
        }
    }
    Err(ProvisionError::Conflicts(export_name.to_owned()))
}

/// Points the export spec `current` at the wanted resources' schemas and gives the wanted claims
/// their verbs, keeping every other resource, claim and field; true when it changed.
fn merge(current: &mut Value, wanted: &Value) -> bool {
    let mut changed = false;
    if !current.is_object() {
        *current = Value::Object(Default::default());
    }
    let same = |a: &Value, b: &Value, keys: &[&str]| {
        keys.iter().all(|k| {
            a.get(*k).and_then(Value::as_str).unwrap_or("")
                == b.get(*k).and_then(Value::as_str).unwrap_or("")
        })
    };
    let mut update = |list: &str, keys: &[&str], fields: &[&str]| {
        let Some(items) = wanted.get(list).and_then(Value::as_array) else {
            return;
        };
        let existing = current
            .as_object_mut()
            .map(|o| o.entry(list).or_insert_with(|| Value::Array(Vec::new())));
        let Some(existing) = existing.and_then(Value::as_array_mut) else {
            return;
        };
        for item in items {
            match existing.iter_mut().find(|e| same(e, item, keys)) {
                Some(found) => {
                    for field in fields {
                        if found.get(*field) != item.get(*field) {
                            found[*field] = item.get(*field).cloned().unwrap_or(Value::Null);
                            changed = true;
                        }
                    }
                }
                None => {
                    existing.push(item.clone());
                    changed = true;
                }
            }
        }
    };
    update("resources", &["group", "name"], &["schema"]);
    update(
        "permissionClaims",
        &["group", "resource", "identityHash"],
        &["verbs"],
    );
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_swaps_our_schema_and_keeps_the_rest() {
        let mut current = json!({
            "resources": [
                {"group": "g.io", "name": "things", "schema": "vold.things.g.io", "storage": {"crd": {}}},
                {"group": "g.io", "name": "others", "schema": "v1.others.g.io", "storage": {"crd": {}}},
            ],
            "permissionClaims": [{"group": "", "resource": "configmaps", "verbs": ["get"]}],
            "maximalPermissionPolicy": {"local": {}},
        });
        let wanted = json!({
            "resources": [{"group": "g.io", "name": "things", "schema": "vnew.things.g.io", "storage": {"crd": {}}}],
            "permissionClaims": [
                {"group": "", "resource": "configmaps", "verbs": ["get", "create"]},
                {"resource": "secrets", "verbs": ["get"]},
            ],
        });
        assert!(merge(&mut current, &wanted));
        assert_eq!(current["resources"][0]["schema"], "vnew.things.g.io");
        assert_eq!(current["resources"][1]["schema"], "v1.others.g.io");
        assert_eq!(
            current["permissionClaims"][0]["verbs"],
            json!(["get", "create"])
        );
        assert_eq!(current["permissionClaims"][1]["resource"], "secrets");
        assert_eq!(current["maximalPermissionPolicy"], json!({"local": {}}));
        assert!(
            !merge(&mut current, &wanted),
            "a second merge changes nothing"
        );
    }
}
