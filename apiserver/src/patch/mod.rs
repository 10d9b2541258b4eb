//! Patching and server-side apply over `serde_json::Value`, as kube-apiserver does them: JSON merge
//! patch, JSON patch, strategic merge patch, server-side apply with `managedFields`, and the
//! managedFields bookkeeping of plain writes.
//!
//! This module is pure: no HTTP and no storage. The server core calls it with the stored object and
//! the request body and maps the typed errors to `metav1.Status` with their
//! [`code`](PatchError::code), [`reason`](PatchError::reason), message (`Display`) and
//! [`details`](PatchError::details).
//!
//! | request | call |
//! |---|---|
//! | `PATCH` `application/merge-patch+json` | [`merge`], then [`record_update`] |
//! | `PATCH` `application/json-patch+json` | [`json_patch()`], then [`record_update`] |
//! | `PATCH` `application/strategic-merge-patch+json` | [`strategic`] (415 for custom resources), then [`record_update`] |
//! | `PATCH` `application/apply-patch+yaml` | [`apply`] (creates when the object does not exist) |
//! | `POST`, `PUT` | [`record_update`] |
//!
//! Each resource version has a [`TypeShape`] (build once, share): [`TypeShape::of`] for built-ins
//! from k8s-openapi, [`TypeShape::from_crd_schema`] for custom resources, [`TypeShape::untyped`]
//! when nothing is known. The manager name of non-apply writes comes from
//! [`update_manager_name`] (the `fieldManager` parameter or the user agent).

mod apply;
mod builtin;
mod error;
mod fieldpath;
mod json;
mod managed;
mod shape;
mod strategic;
mod typed;

pub use apply::{ApplyRequest, apply};
pub(crate) use error::{ApplyError, PatchError};
pub(crate) use json::json_patch;
pub use json::merge;
pub use managed::{Managed, Target, record_update};
pub(crate) use managed::{update_manager_name, validate_field_manager};
pub use shape::TypeShape;
pub use strategic::strategic;

#[cfg(test)]
mod tests;
