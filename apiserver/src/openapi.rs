//! `/openapi/v2` and `/openapi/v3`: the documents kubectl reads for `explain` and to learn that the
//! server validates fields itself (`fieldValidation`), built by the `schema` module from the
//! resources a request's target serves, and cached until those resources change.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use http::Response;
use parking_lot::Mutex;

use crate::error::{ApiError, ApiResult};
use crate::handler::negotiate::{Allowed, Output, negotiate};
use crate::handler::response::{Body, bytes_response, value_response};
use crate::handler::{ClusterScope, Target};
use crate::schema::{OpenApiDocuments, OpenApiResource};

type Cache = HashMap<(usize, String, Arc<str>), (u64, Arc<OpenApiDocuments>)>;

/// Documents by (shard address and name, logical cluster), with the registry generation they were built at.
static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn documents(t: &Target) -> Arc<OpenApiDocuments> {
    let cluster: Arc<str> = match &t.cluster {
        ClusterScope::One(c) => c.clone(),
        ClusterScope::Wildcard => "*".into(),
    };
    let generation = t.shard.registry().generation(&cluster);
    let key = (
        Arc::as_ptr(&t.shard) as usize,
        t.shard.name().to_string(),
        cluster,
    );
    if let Some((g, docs)) = CACHE.lock().get(&key)
        && *g == generation
    {
        return docs.clone();
    }
    let resources: Vec<OpenApiResource> = t
        .surface
        .groups(t)
        .into_iter()
        .flat_map(|g| g.resources.into_values().flatten())
        .map(|i| OpenApiResource {
            create_only: !i.stores_objects(),
            group: i.group.clone(),
            version: i.version.clone(),
            kind: i.kind.clone(),
            plural: i.resource.clone(),
            namespaced: i.namespaced,
            schema: i.openapi_schema.as_deref().cloned(),
            status: i.status,
            scale: i.scale.is_some(),
        })
        .collect();
    // The documents describe the Kubernetes version whose API is served.
    let version = format!("v{}.0", crate::builtin::KUBERNETES_VERSION);
    let docs = Arc::new(OpenApiDocuments::build(&resources, &version));
    CACHE.lock().insert(key, (generation, docs.clone()));
    docs
}

/// Serves `/openapi<rest>`.
pub(crate) fn serve(t: &Target, rest: &str, accept: Option<&str>) -> ApiResult<Response<Body>> {
    // kubectl asks for the v2 document as protobuf only and falls back from 406.
    let output = negotiate(accept, Allowed::default())?;
    let docs = documents(t);
    if rest == "/v2" {
        return Ok(bytes_response(
            200,
            bytes::Bytes::copy_from_slice(docs.v2_document()),
            output,
        ));
    }
    if rest == "/v3" {
        return Ok(value_response(200, &docs.v3_index(), Output::Json));
    }
    if let Some(gv) = rest.strip_prefix("/v3/") {
        let doc = docs.v3_document(gv).ok_or_else(ApiError::no_route)?;
        return Ok(bytes_response(
            200,
            bytes::Bytes::copy_from_slice(doc),
            Output::Json,
        ));
    }
    Err(ApiError::no_route())
}
