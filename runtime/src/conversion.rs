//! The Service API's versions and conversion between them.
//!
//! The version the attribute names (`version = …`) is the hub: the reconciler sees it, and every
//! other served version (`served_version(...)`) converts to and from it. A version declared
//! without a spec type of its own shares the hub's schema, and one declared `additive` has a
//! spec whose fields the hub's only adds to: the API server converts both by changing
//! `apiVersion` (the CRD's `None` strategy). Any other version with its own spec type converts in
//! Rust, by the author's `TryFrom` (or `From`) both ways between its spec and the hub's, and the
//! CRD names this provider's conversion webhook, which answers [`ConversionReview`]s with
//! [`review`] (served by `ops::serve_webhook`). Only the spec converts: `metadata` and `status`
//! are the same in every version (the status is the runtime's, not the author's).

use std::fmt::Display;

use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::provider::{ServiceProvider, SpecConversion};

/// The conversion `#[service_provider]` declares for a version with spec type `Spec` and hub
/// spec type `Hub`.
pub const fn spec_conversion<Spec, Hub>() -> SpecConversion
where
    Spec: Serialize + DeserializeOwned + TryFrom<Hub>,
    Hub: Serialize + DeserializeOwned + TryFrom<Spec>,
    <Spec as TryFrom<Hub>>::Error: Display,
    <Hub as TryFrom<Spec>>::Error: Display,
{
    SpecConversion {
        to_hub: convert_spec::<Spec, Hub>,
        from_hub: convert_spec::<Hub, Spec>,
    }
}

fn convert_spec<From, To>(spec: Value) -> Result<Value, String>
where
    From: DeserializeOwned,
    To: Serialize + TryFrom<From>,
    <To as TryFrom<From>>::Error: Display,
{
    let spec: From =
        serde_json::from_value(spec).map_err(|e| format!("cannot read the spec: {e}"))?;
    let spec = To::try_from(spec).map_err(|e| e.to_string())?;
    serde_json::to_value(spec).map_err(|e| format!("cannot write the converted spec: {e}"))
}

/// Whether any served version converts in Rust, so the CRD needs the conversion webhook.
pub fn needs_webhook<P: ServiceProvider>() -> bool {
    P::SERVED_VERSIONS.iter().any(|v| v.conversion.is_some())
}

/// The version objects are stored at: the one declared `storage`, else the hub.
pub fn storage_version<P: ServiceProvider>() -> &'static str {
    P::SERVED_VERSIONS
        .iter()
        .find(|v| v.storage)
        .map_or(P::INFO.version, |v| v.name)
}

/// Converts one Service API object to `desired_api_version` (`<group>/<version>`): its spec
/// through the hub, its `apiVersion`; everything else as it is.
pub fn convert<P: ServiceProvider>(
    mut object: Value,
    desired_api_version: &str,
) -> Result<Value, String> {
    let info = P::INFO;
    let version_of = |api_version: &str| -> Result<&'static str, String> {
        let version = api_version
            .strip_prefix(info.group)
            .and_then(|rest| rest.strip_prefix('/'))
            .ok_or_else(|| format!("{api_version} is not a version of {}", info.group))?;
        std::iter::once(info.version)
            .chain(P::SERVED_VERSIONS.iter().map(|v| v.name))
            .find(|name| *name == version)
            .ok_or_else(|| {
                format!(
                    "{api_version} is not a version of {} this provider serves",
                    info.kind
                )
            })
    };
    let current = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .ok_or("the object has no apiVersion")?;
    let from = version_of(current)?;
    let to = version_of(desired_api_version)?;
    if from != to
        && let Some(spec) = object.get_mut("spec")
    {
        let conversion = |name: &str| {
            P::SERVED_VERSIONS
                .iter()
                .find(|v| v.name == name)
                .and_then(|v| v.conversion)
        };
        let mut converted = spec.take();
        if let Some(c) = conversion(from) {
            converted =
                (c.to_hub)(converted).map_err(|e| format!("{from} → {}: {e}", info.version))?;
        }
        if let Some(c) = conversion(to) {
            converted =
                (c.from_hub)(converted).map_err(|e| format!("{} → {to}: {e}", info.version))?;
        }
        *spec = converted;
    }
    object["apiVersion"] = Value::String(desired_api_version.to_owned());
    Ok(object)
}

/// Answers a `ConversionReview` as controller-runtime's conversion webhook does: every object
/// converted, or a failure naming the first that could not be, and none converted.
pub fn review<P: ServiceProvider>(review: ConversionReview) -> ConversionReview {
    let mut request = match ConversionRequest::from_review(review) {
        Ok(request) => request,
        Err(_) => {
            return ConversionResponse::invalid(Status::failure(
                "the ConversionReview has no request",
                "BadRequest",
            ))
            .into_review();
        }
    };
    let desired = request.desired_api_version.clone();
    let objects = std::mem::take(&mut request.objects);
    let response = ConversionResponse::for_request(request);
    let converted: Result<Vec<Value>, String> = objects
        .into_iter()
        .map(|object| {
            let name = object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            convert::<P>(object, &desired)
                .map_err(|e| format!("converting {name} to {desired}: {e}"))
        })
        .collect();
    match converted {
        Ok(objects) => response.success(objects),
        Err(message) => response.failure(Status::failure(&message, "ConversionFailed")),
    }
    .into_review()
}
