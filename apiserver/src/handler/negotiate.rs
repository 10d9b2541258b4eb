//! Content negotiation: which representation the `Accept` header asks for, and which body formats
//! `Content-Type` allows.

use crate::error::ApiError;

/// The representation to answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Plain JSON objects.
    Json,
    /// YAML (`application/yaml`).
    Yaml,
    /// `meta.k8s.io` Table (kubectl get).
    Table,
    /// `meta.k8s.io/v1` PartialObjectMetadata / PartialObjectMetadataList.
    Metadata,
    /// Aggregated discovery `apidiscovery.k8s.io` (v2 or v2beta1).
    Aggregated(&'static str),
}

impl Output {
    /// The `Content-Type` of the answer.
    pub fn content_type(self) -> &'static str {
        match self {
            Output::Json | Output::Metadata | Output::Table => "application/json",
            Output::Yaml => "application/yaml",
            Output::Aggregated("v2beta1") => {
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            }
            Output::Aggregated(_) => {
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            }
        }
    }
}

/// What an endpoint can produce beyond plain JSON.
#[derive(Debug, Clone, Copy, Default)]
pub struct Allowed {
    /// Tables and partial metadata (resource reads).
    pub transforms: bool,
    /// Aggregated discovery (`/api`, `/apis`).
    pub aggregated: bool,
}

/// Picks the first acceptable representation, in the client's order; 406 when there is none.
pub fn negotiate(accept: Option<&str>, allowed: Allowed) -> Result<Output, ApiError> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(Output::Json);
    };
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let mime = parts.next().unwrap_or_default().to_ascii_lowercase();
        let mut as_ = "";
        let mut g = "";
        let mut v = "";
        for p in parts {
            if let Some((k, val)) = p.split_once('=') {
                match k.trim() {
                    "as" => as_ = val.trim(),
                    "g" => g = val.trim(),
                    "v" => v = val.trim(),
                    _ => {}
                }
            }
        }
        let json_like = matches!(mime.as_str(), "application/json" | "*/*" | "application/*");
        if mime == "application/yaml" && as_.is_empty() {
            return Ok(Output::Yaml);
        }
        if !json_like {
            continue;
        }
        match (as_, g, v) {
            ("", _, _) => return Ok(Output::Json),
            ("Table", "meta.k8s.io", "v1" | "v1beta1") if allowed.transforms => {
                return Ok(Output::Table);
            }
            (
                "PartialObjectMetadata" | "PartialObjectMetadataList",
                "meta.k8s.io",
                "v1" | "v1beta1",
            ) if allowed.transforms => {
                return Ok(Output::Metadata);
            }
            ("APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2") if allowed.aggregated => {
                return Ok(Output::Aggregated("v2"));
            }
            ("APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2beta1") if allowed.aggregated => {
                return Ok(Output::Aggregated("v2beta1"));
            }
            _ => continue,
        }
    }
    Err(ApiError::not_acceptable())
}

/// The body formats of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFormat {
    /// `application/json`
    Json,
    /// `application/yaml`
    Yaml,
    /// `application/merge-patch+json`
    MergePatch,
    /// `application/json-patch+json`
    JsonPatch,
    /// `application/strategic-merge-patch+json`
    StrategicMergePatch,
    /// `application/apply-patch+yaml` (server-side apply)
    ApplyPatch,
}

/// Classifies a `Content-Type`; 415 for anything else.
pub fn body_format(content_type: Option<&str>, patch: bool) -> Result<BodyFormat, ApiError> {
    let ct = content_type
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let f = match ct.as_str() {
        "application/json" | "" if !patch => BodyFormat::Json,
        "application/yaml" if !patch => BodyFormat::Yaml,
        "application/merge-patch+json" if patch => BodyFormat::MergePatch,
        "application/json-patch+json" if patch => BodyFormat::JsonPatch,
        "application/strategic-merge-patch+json" if patch => BodyFormat::StrategicMergePatch,
        "application/apply-patch+yaml" | "application/apply-patch+json" if patch => {
            BodyFormat::ApplyPatch
        }
        other => {
            let accepted: &[&str] = if patch {
                &[
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                    "application/apply-patch+yaml",
                ]
            } else {
                &["application/json", "application/yaml"]
            };
            return Err(ApiError::unsupported_media_type(other, accepted));
        }
    };
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_get_gets_a_table() {
        let a = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            negotiate(
                Some(a),
                Allowed {
                    transforms: true,
                    aggregated: false
                }
            )
            .unwrap(),
            Output::Table
        );
        assert_eq!(
            negotiate(Some(a), Allowed::default()).unwrap(),
            Output::Json
        );
    }

    #[test]
    fn protobuf_falls_back_or_is_refused() {
        assert_eq!(
            negotiate(
                Some("application/vnd.kubernetes.protobuf, */*"),
                Allowed::default()
            )
            .unwrap(),
            Output::Json
        );
        assert_eq!(
            negotiate(
                Some("application/vnd.kubernetes.protobuf"),
                Allowed::default()
            )
            .unwrap_err()
            .code,
            406
        );
    }

    #[test]
    fn aggregated_discovery() {
        let a = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            negotiate(
                Some(a),
                Allowed {
                    transforms: false,
                    aggregated: true
                }
            )
            .unwrap(),
            Output::Aggregated("v2")
        );
    }
}
