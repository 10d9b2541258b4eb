//! Schemas: compiling OpenAPI v3 structural schemas and using them to default, prune and
//! validate objects the way kube-apiserver does, plus the schemas of built-in kinds and the
//! OpenAPI documents kubectl reads.
//!
//! Pure functions without I/O. Compile once per CRD version or built-in kind, then per request:
//!
//! ```
//! use service_provider_apiserver::internals::schema::Structural;
//! use serde_json::json;
//!
//! let s = Structural::compile(&json!({
//!     "type": "object",
//!     "properties": {"spec": {"type": "object", "properties": {
//!         "replicas": {"type": "integer", "default": 1}}}}
//! })).unwrap();
//! let mut obj = json!({"apiVersion": "example.io/v1", "kind": "Foo", "metadata": {"name": "x"},
//!                      "spec": {"extra": true}});
//! let unknown = s.prune(&mut obj).unwrap();          // ["spec.extra"]
//! s.default(&mut obj);                               // spec.replicas = 1
//! let errors = s.validate(&obj, None);               // []
//! assert_eq!(unknown, ["spec.extra"]);
//! assert_eq!(obj["spec"]["replicas"], 1);
//! assert!(errors.is_empty());
//! ```
//!
//! How the server uses it:
//! - **CRD create/update**: [`validate_crd`] → 422 with [`invalid_status`] if not empty; then
//!   [`ResourceSchema::from_crd`] for each version (cache the result per CRD generation).
//! - **Built-ins**: [`ResourceSchema::builtin`] (group, version, kind);
//!   [`ResourceSchema::for_definition`] for `TokenRequest`.
//! - **Create/update/patch**: [`ResourceSchema::decode`] with the request's
//!   [`FieldValidation`] (400 on `Err`, `Warning` headers from `Ok`), fill in server-set fields,
//!   then [`ResourceSchema::validate`] (with the stored object on update) → 422 via
//!   [`ResourceSchema::invalid`] if not empty.
//! - **Reads of custom resources**: [`ResourceSchema::read`] (prune + default for the served
//!   version, as kube does after a schema change).
//! - **OpenAPI**: [`OpenApiDocuments::build`] from the served resources whenever they change;
//!   serve [`OpenApiDocuments::v3_index`], [`OpenApiDocuments::v3_document`] and
//!   [`OpenApiDocuments::v2_document`] (answer 406 when only protobuf is acceptable).

mod builtin;
mod cel;
mod crd;
mod defaults;
mod errors;
mod formats;
mod objectmeta;
mod openapi;
mod pattern;
mod prune;
mod resource;
mod structural;
mod times;
mod validate;

pub(crate) use builtin::builtin_definitions;
pub(crate) use crd::validate_crd;
pub(crate) use errors::{BadValue, FieldError, aggregate};
pub(crate) use errors::{go_string_slice, key};
pub(crate) use formats::parse_go_duration;
pub(crate) use objectmeta::{NameRule, validate_annotations, validate_labels};
pub(crate) use objectmeta::{dns1035_label, dns1123_label, dns1123_subdomain, qualified_name};
pub use openapi::{OpenApiDocuments, OpenApiResource};
pub use prune::FieldValidation;
pub use resource::ResourceSchema;
pub use structural::Structural;
pub(crate) use times::normalise_times;
