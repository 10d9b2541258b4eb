//! Content negotiation: which representation the `Accept` header asks for, and which body formats
//! `Content-Type` allows.

use crate::error::ApiError;

/// The representation to answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
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
    /// Objects in `application/vnd.kubernetes.protobuf` (built-in kinds only).
    Protobuf,
    /// PartialObjectMetadata / PartialObjectMetadataList in protobuf (any kind, as kube-apiserver).
    MetadataProtobuf,
}

impl Output {
    /// The `Content-Type` of the answer.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Output::Json | Output::Metadata | Output::Table => "application/json",
            Output::Protobuf | Output::MetadataProtobuf => crate::protobuf::MEDIA_TYPE,
            Output::Yaml => "application/yaml",
            Output::Aggregated("v2beta1") => {
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            }
            Output::Aggregated(_) => {
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            }
        }
    }

    /// Whether the answer is protobuf.
    pub(crate) fn is_protobuf(self) -> bool {
        matches!(self, Output::Protobuf | Output::MetadataProtobuf)
    }
}

/// What an endpoint can produce beyond plain JSON.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Allowed {
    /// Tables and partial metadata (resource reads).
    pub transforms: bool,
    /// Aggregated discovery (`/api`, `/apis`).
    pub aggregated: bool,
    /// The objects themselves in protobuf (built-in kinds).
    pub protobuf: bool,
}

/// The media types an endpoint answers objects in, for a 406's message.
fn served_types(allowed: Allowed) -> &'static [&'static str] {
    if allowed.protobuf {
        &[
            "application/json",
            "application/yaml",
            crate::protobuf::MEDIA_TYPE,
        ]
    } else {
        &["application/json", "application/yaml"]
    }
}

/// Picks the first acceptable representation, in the client's order; 406 when there is none.
pub(crate) fn negotiate(accept: Option<&str>, allowed: Allowed) -> Result<Output, ApiError> {
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
        if mime == crate::protobuf::MEDIA_TYPE {
            // Tables are JSON and YAML only; PartialObjectMetadata has a protobuf message for every
            // kind (kube-apiserver's RequestScope.AllowsMediaTypeTransform).
            match (as_, g, v) {
                ("", _, _) if allowed.protobuf => return Ok(Output::Protobuf),
                (
                    "PartialObjectMetadata" | "PartialObjectMetadataList",
                    "meta.k8s.io",
                    "v1" | "v1beta1",
                ) if allowed.transforms => return Ok(Output::MetadataProtobuf),
                _ => continue,
            }
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
    Err(ApiError::not_acceptable_of(served_types(allowed)))
}

/// The body formats of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFormat {
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
    /// `application/vnd.kubernetes.protobuf` (built-in kinds)
    Protobuf,
}

/// Classifies a `Content-Type`; 415 for anything else. `protobuf`: whether the resource's kind has
/// a protobuf encoding (custom resources do not).
pub(crate) fn body_format(
    content_type: Option<&str>,
    patch: bool,
    protobuf: bool,
) -> Result<BodyFormat, ApiError> {
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
        crate::protobuf::MEDIA_TYPE if !patch && protobuf => BodyFormat::Protobuf,
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
            } else if protobuf {
                &[
                    "application/json",
                    "application/yaml",
                    crate::protobuf::MEDIA_TYPE,
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
                    ..Allowed::default()
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
        let builtin = Allowed {
            transforms: true,
            protobuf: true,
            ..Allowed::default()
        };
        let client_go = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(
            negotiate(Some(client_go), builtin).unwrap(),
            Output::Protobuf
        );
        let metadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        let custom = Allowed {
            transforms: true,
            ..Allowed::default()
        };
        assert_eq!(
            negotiate(Some(metadata), custom).unwrap(),
            Output::MetadataProtobuf
        );
        assert_eq!(negotiate(Some(client_go), custom).unwrap(), Output::Json);
        let table = "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1";
        assert_eq!(negotiate(Some(table), builtin).unwrap_err().code, 406);
    }

    #[test]
    fn aggregated_discovery() {
        let a = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            negotiate(
                Some(a),
                Allowed {
                    aggregated: true,
                    ..Allowed::default()
                }
            )
            .unwrap(),
            Output::Aggregated("v2")
        );
    }
}
