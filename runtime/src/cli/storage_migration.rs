//! Storage migration, as kube-storage-version-migrator does it: every object of a CRD is written
//! back as read, which makes the API server store it at the CRD's storage version, and then the
//! CRD's `status.storedVersions` is trimmed to that version. Only then will the API server let a
//! later release drop an older version from the CRD (it refuses to drop a version objects may
//! still be stored in).
//!
//! `init` runs it after installing each CRD. It is idempotent (nothing is read when only the
//! storage version is stored) and resumable: the list is trimmed last, so a run
//! that stops half-way leaves it as it was and the next `init` rewrites again. Writing an object
//! back changes none of its fields; an object written by someone else since it was listed (409)
//! is already stored at the storage version, one deleted since (404) needs nothing.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{GroupVersionKind, TypeMeta};
use kube::{Api, ResourceExt};

use crate::access::is_status;

/// How many objects one list request reads.
pub const PAGE_SIZE: u32 = 500;

/// What a migration did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Migration {
    /// Only the storage version was stored: nothing to do.
    Current,
    /// The objects were written back (`rewritten`: how many) and `status.storedVersions` no
    /// longer lists `dropped`.
    Migrated {
        /// The storage version every object is stored at now.
        storage: String,
        /// The versions no object is stored at any more.
        dropped: Vec<String>,
        /// How many objects were written back.
        rewritten: usize,
    },
}

/// Why a migration stopped; running it again resumes it.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    /// The CRD lists no storage version (the API server never accepts that).
    #[error("CRD {0} has no storage version")]
    NoStorageVersion(String),
    /// The API server refused or failed a request.
    #[error("{what}: {source}")]
    Api {
        /// The request.
        what: String,
        /// Its error.
        source: kube::Error,
    },
}

fn api_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> MigrationError {
    let what = what.into();
    move |source| MigrationError::Api { what, source }
}

/// Migrates the objects of `crd` (as the API server last returned it) to its storage version,
/// reading `page_size` objects per request.
pub async fn migrate(
    client: &kube::Client,
    crd: &CustomResourceDefinition,
    page_size: u32,
) -> Result<Migration, MigrationError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd_name = crd.name_any();
    let crd_name = crd_name.as_str();
    let storage = crd
        .spec
        .versions
        .iter()
        .find(|v| v.storage)
        .map(|v| v.name.clone())
        .ok_or_else(|| MigrationError::NoStorageVersion(crd_name.to_owned()))?;
    let stored = crd
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.clone())
        .unwrap_or_default();
    if stored == [storage.as_str()] {
        return Ok(Migration::Current);
    }

    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&crd.spec.group, &storage, &crd.spec.names.kind),
        &crd.spec.names.plural,
    );
    let objects: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let mut rewritten = 0;
    let mut params = ListParams::default().limit(page_size);
    loop {
        let page = objects
            .list(&params)
            .await
            .map_err(api_error(format!("listing the {} objects", crd_name)))?;
        for object in &page.items {
            if rewrite(client, &resource, object).await? {
                rewritten += 1;
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }

    // Trimmed only if the CRD is as read: a storage version that moved on since then (another
    // init) may have had objects written at the version this run would drop.
    let trim = serde_json::json!({
        "metadata": { "resourceVersion": crd.resource_version() },
        "status": { "storedVersions": [storage] },
    });
    crds.patch_status(crd_name, &PatchParams::default(), &Patch::Merge(&trim))
        .await
        .map_err(api_error(format!(
            "trimming status.storedVersions of CRD {crd_name} to [{storage}]"
        )))?;
    let dropped = stored.into_iter().filter(|v| *v != storage).collect();
    Ok(Migration::Migrated {
        storage,
        dropped,
        rewritten,
    })
}

/// Writes `object` back as read; `false` when someone else wrote or deleted it first (it needs
/// no migration then).
async fn rewrite(
    client: &kube::Client,
    resource: &ApiResource,
    object: &DynamicObject,
) -> Result<bool, MigrationError> {
    let name = object.name_any();
    let api: Api<DynamicObject> = match object.namespace() {
        Some(namespace) => Api::namespaced_with(client.clone(), &namespace, resource),
        None => Api::all_with(client.clone(), resource),
    };
    // List items may come without their TypeMeta; the API server needs it in the body.
    let mut object = object.clone();
    object.types = Some(TypeMeta {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
    });
    match api.replace(&name, &PostParams::default(), &object).await {
        Ok(_) => Ok(true),
        Err(err) if is_status(&err, 409) || is_status(&err, 404) => Ok(false),
        Err(err) => Err(api_error(format!(
            "writing {} {} back at {}",
            resource.kind,
            object
                .namespace()
                .map_or(name.clone(), |ns| format!("{ns}/{name}")),
            resource.api_version
        ))(err)),
    }
}
