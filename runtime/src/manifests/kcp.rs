//! The kcp APIResourceSchema (content-addressed) and APIExport of a Service API.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::kcp_api::{
    APIResourceSchema, APIResourceSchemaSpec, APIResourceVersion, v1alpha1, v1alpha2,
};
use crate::manifests::rbac;
use crate::provider::{ProviderInfo, ServiceProvider};

/// The APIResourceSchema of `P`'s Service API (see [`api_resource_schema_from_crd`]).
pub fn api_resource_schema<P: ServiceProvider>() -> APIResourceSchema {
    api_resource_schema_from_crd(&super::service_crd::<P>())
}

/// The APIResourceSchema for a CRD, named `v<8 hex>.<plural>.<group>` where the hex digits start
/// the SHA-256 of the schema's spec as JSON.
///
/// kcp forbids changing a schema's spec, so the name is content-addressed: the same CRD always
/// gives the same name, and any change to the Service API gives a new schema, which the runtime
/// creates beside the old one before pointing the APIExport at it.
pub fn api_resource_schema_from_crd(crd: &CustomResourceDefinition) -> APIResourceSchema {
    let mut names = crd.spec.names.clone();
    if names.list_kind.is_none() {
        names.list_kind = Some(format!("{}List", names.kind));
    }
    let versions: Vec<APIResourceVersion> = crd
        .spec
        .versions
        .iter()
        .map(|v| APIResourceVersion {
            name: v.name.clone(),
            served: v.served,
            storage: v.storage,
            deprecated: v.deprecated.unwrap_or(false),
            deprecation_warning: v.deprecation_warning.clone(),
            // A CRD version without a schema accepts anything; say so explicitly, as kcp
            // requires a schema.
            schema: v
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.clone())
                .unwrap_or_else(|| JSONSchemaProps {
                    type_: Some("object".into()),
                    x_kubernetes_preserve_unknown_fields: Some(true),
                    ..Default::default()
                }),
            subresources: v.subresources.clone(),
            additional_printer_columns: v.additional_printer_columns.clone().unwrap_or_default(),
            selectable_fields: v.selectable_fields.clone().unwrap_or_default(),
        })
        .collect();
    // kcp requires a conversion for more than one version ("Conversion must be specified when
    // multiple versions exist"); a kcp provider's versions share one spec type, so `None`.
    let conversion = (versions.len() > 1).then(|| {
        crd.spec
            .conversion
            .clone()
            .unwrap_or_else(|| CustomResourceConversion {
                strategy: "None".to_owned(),
                webhook: None,
            })
    });
    let spec = APIResourceSchemaSpec {
        group: crd.spec.group.clone(),
        names,
        scope: crd.spec.scope.clone(),
        versions,
        conversion,
    };
    let name = format!(
        "{}.{}.{}",
        schema_prefix(&spec),
        spec.names.plural,
        spec.group
    );
    APIResourceSchema::new(&name, spec)
}

/// `v` and the first 8 hex digits of the SHA-256 of the spec's JSON.
fn schema_prefix(spec: &APIResourceSchemaSpec) -> String {
    // Typed serialization writes fields in declaration order and maps sorted, so equal specs give
    // equal bytes.
    let json = serde_json::to_vec(spec).expect("an APIResourceSchema spec serializes to JSON");
    let digest = ring::digest::digest(&ring::digest::SHA256, &json);
    let hex: String = digest.as_ref()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("v{hex}")
}

fn metadata(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        ..Default::default()
    }
}

/// The `apis.kcp.io/v1alpha2` APIExport `name`, exporting the Service API from `schema` with the
/// runtime's permission claims (`rbac::claims`).
pub fn api_export(info: &ProviderInfo, name: &str, schema: &str) -> v1alpha2::APIExport {
    v1alpha2::APIExport {
        metadata: metadata(name),
        spec: v1alpha2::APIExportSpec {
            resources: vec![v1alpha2::ResourceSchema {
                name: info.plural.to_owned(),
                group: info.group.to_owned(),
                schema: schema.to_owned(),
                storage: v1alpha2::ResourceSchemaStorage {
                    crd: Some(v1alpha2::CrdStorage {}),
                },
            }],
            identity: None,
            permission_claims: rbac::claims(),
        },
        status: None,
    }
}

/// The same APIExport in `apis.kcp.io/v1alpha1`, for kcp releases without v1alpha2.
///
/// v1alpha1 claims carry no verbs: each claim there grants every verb on the claimed resource,
/// which is more than the runtime uses; prefer v1alpha2 where kcp offers it.
pub fn api_export_v1alpha1(name: &str, schema: &str) -> v1alpha1::APIExport {
    v1alpha1::APIExport {
        metadata: metadata(name),
        spec: v1alpha1::APIExportSpec {
            latest_resource_schemas: vec![schema.to_owned()],
            identity: None,
            permission_claims: rbac::claims()
                .into_iter()
                .map(|c| v1alpha1::PermissionClaim {
                    group: c.group,
                    resource: c.resource,
                    all: true,
                    identity_hash: c.identity_hash,
                })
                .collect(),
        },
        status: None,
    }
}
