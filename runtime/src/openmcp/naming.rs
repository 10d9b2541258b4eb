//! The names openMCP derives from other names — tenant namespaces on the platform cluster, the
//! names and labels of ClusterRequests and AccessRequests — computed bit for bit as the Go
//! libraries compute them, so a Rust provider finds and adopts what a Go provider created.
//!
//! Sources (Go):
//! - `github.com/openmcp-project/controller-utils/pkg/controller/hash.go`: [`k8s_name_uuid`],
//!   [`name_hash_shake128_base32`], [`shorten_to_x_characters`];
//! - `github.com/openmcp-project/openmcp-operator/lib/utils`: [`stable_mcp_identifier`],
//!   [`stable_mcp_namespace`];
//! - `github.com/openmcp-project/openmcp-operator/lib/clusteraccess/advanced/utils.go` and
//!   `clusteraccess.go`: [`stable_request_name`], [`managed_purpose`], [`request_labels`].
//!
//! Go measures and slices strings in bytes; so do these functions. Kubernetes names are ASCII,
//! where bytes and characters agree.

use std::collections::BTreeMap;

use sha3::Shake128;
use sha3::digest::{ExtendableOutput, Update, XofReader};

use crate::openmcp::constants::{
    MANAGED_BY_LABEL, MANAGED_PURPOSE_LABEL, ONBOARDING_NAME_LABEL, ONBOARDING_NAMESPACE_LABEL,
};

/// The longest name of most Kubernetes objects (a DNS-1123 label): controller-utils'
/// `K8sMaxNameLength`.
pub const K8S_MAX_NAME_LENGTH: usize = 63;

/// Prefix of the per-tenant namespace on the platform cluster (`mcp--<uuid>`).
pub const MCP_NAMESPACE_PREFIX: &str = "mcp--";

/// Why a name could not be derived. Mirrors the errors of the Go helpers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamingError {
    /// controller-utils' `ErrInvalidNames`.
    #[error("list of names must not be empty and contain at least one non-empty string")]
    InvalidNames,
    /// controller-utils' `ErrMaxLenTooSmall`: the hash suffix (10 characters) leaves no room.
    #[error("maxLen must be greater than 10")]
    MaxLenTooSmall,
    /// The suffix of a request name is so long that nothing of the request name fits beside it
    /// (Go's `ShortenToXCharactersUnsafe` panics here).
    #[error(
        "request name suffix {suffix:?} is too long: a request name has at most 63 characters, and the suffix leaves no room for the name"
    )]
    SuffixTooLong {
        /// The offending suffix.
        suffix: String,
    },
}

/// SHAKE128 of `input`, `N` bytes of output: Go's `sha3.SumSHAKE128(input, N)`.
fn shake128<const N: usize>(input: &[u8]) -> [u8; N] {
    let mut hasher = Shake128::default();
    hasher.update(input);
    let mut out = [0u8; N];
    hasher.finalize_xof().read(&mut out);
    out
}

/// `K8sNameUUID`: the arguments joined with `/`, hashed with SHAKE128 to 16 bytes, marked as a
/// version 8 UUID (`b[6] = b[6] & 0x0f | 0x80`, `b[8] = b[8] & 0x3f | 0x80`) and printed in the
/// lower-case hyphenated form.
///
/// Fails like Go when every part is empty (empty parts between non-empty ones still count:
/// `["", "a"]` hashes `"/a"`).
pub fn k8s_name_uuid(parts: &[&str]) -> Result<String, NamingError> {
    if parts.iter().all(|p| p.is_empty()) {
        return Err(NamingError::InvalidNames);
    }
    let mut bytes: [u8; 16] = shake128(parts.join("/").as_bytes());
    bytes[6] = (bytes[6] & 0b0000_1111) | 0b1000_0000;
    bytes[8] = (bytes[8] & 0b0011_1111) | 0b1000_0000;
    Ok(uuid::Uuid::from_bytes(bytes).hyphenated().to_string())
}

/// The alphabet of controller-utils' `Base32EncodeStdLowerCase`.
const BASE32_LOWER: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// `NameHashSHAKE128Base32`: the arguments joined with `/`, hashed with SHAKE128 to 5 bytes and
/// encoded as 8 characters of lower-case base32 without padding.
///
/// Base32 of a fixed 5-byte input is 8 five-bit groups; encoding them here is shorter than
/// configuring a general base32 crate for the custom alphabet.
pub fn name_hash_shake128_base32(parts: &[&str]) -> String {
    let hash: [u8; 5] = shake128(parts.join("/").as_bytes());
    let bits = hash.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
    (0..8)
        .map(|i| char::from(BASE32_LOWER[((bits >> (35 - 5 * i)) & 0x1f) as usize]))
        .collect()
}

/// `ShortenToXCharacters`: `input` when it has at most `max_len` bytes; otherwise its first
/// `max_len - 10` bytes, with trailing `-` and `.` removed so the result stays a valid name,
/// followed by `--` and [`name_hash_shake128_base32`] of the whole input.
///
/// The trimming follows controller-utils `pkg/controller/hash.go` (`strings.TrimRight(input[:n],
/// "-.")`); older revisions kept such characters (`x---hash`). Every upstream test vector agrees
/// with both. Fails when `max_len` leaves no room for a prefix (`max_len <= 10`).
pub fn shorten_to_x_characters(input: &str, max_len: usize) -> Result<String, NamingError> {
    if input.len() <= max_len {
        return Ok(input.to_string());
    }
    let keep = max_len
        .checked_sub(HASH_SUFFIX_LEN)
        .filter(|k| *k > 0)
        .ok_or(NamingError::MaxLenTooSmall)?;
    Ok(shorten_keeping(input, keep))
}

/// The length of the `--<hash>` suffix [`shorten_to_x_characters`] appends.
const HASH_SUFFIX_LEN: usize = 10;

/// The first `keep` bytes of `input`, trailing `-`/`.` trimmed, then `--<hash of input>`.
fn shorten_keeping(input: &str, keep: usize) -> String {
    let prefix = &input.as_bytes()[..keep.min(input.len())];
    let trimmed_len = prefix
        .iter()
        .rposition(|b| *b != b'-' && *b != b'.')
        .map_or(0, |i| i + 1);
    // Go slices bytes; a cut inside a multi-byte character cannot occur in a Kubernetes name.
    format!(
        "{}--{}",
        String::from_utf8_lossy(&prefix[..trimmed_len]),
        name_hash_shake128_base32(&[input])
    )
}

/// A label value as the Go cluster-access library writes it: `ShortenToXCharactersUnsafe(value,
/// 63)` (`ensureManagedLabelLength` in `lib/clusteraccess/advanced/clusteraccess.go`). A value of
/// at most 63 bytes is kept; a longer one (a 253-character object name, a 63-character namespace
/// joined with a name) becomes its first 53 bytes and a hash, which the API server accepts.
pub fn label_value(value: &str) -> String {
    if value.len() <= K8S_MAX_NAME_LENGTH {
        return value.to_owned();
    }
    shorten_keeping(value, K8S_MAX_NAME_LENGTH - HASH_SUFFIX_LEN)
}

/// `StableMCPIdentifier`: [`k8s_name_uuid`] of the ControlPlane's namespace and name, in that
/// order.
pub fn stable_mcp_identifier(name: &str, namespace: &str) -> Result<String, NamingError> {
    k8s_name_uuid(&[namespace, name])
}

/// `StableMCPNamespace`: the platform-cluster namespace of the ControlPlane `namespace/name`,
/// `mcp--` followed by [`stable_mcp_identifier`]. It holds the tenant's ClusterRequests,
/// AccessRequests and kubeconfig Secrets.
pub fn stable_mcp_namespace(name: &str, namespace: &str) -> Result<String, NamingError> {
    Ok(format!(
        "{MCP_NAMESPACE_PREFIX}{}",
        stable_mcp_identifier(name, namespace)?
    ))
}

/// `StableRequestNameFromLocalName` of the advanced cluster-access library: the name of the
/// ClusterRequest / AccessRequest a controller creates for one reconciled object.
///
/// `raw = lower(controller) + "--" + lower(request_name)`; with a suffix the result is
/// `shorten_to_x_characters(raw, 63 - len(suffix) - 2) + "--" + lower(suffix)`, without one
/// `shorten_to_x_characters(raw, 63)`. So the MCP AccessRequest of provider `velero` for the
/// Service API object `my-mcp` is `velero--my-mcp--mcp`, the workload ClusterRequest and
/// AccessRequest `velero--my-mcp--wl`, and the onboarding requests at start-up
/// `<api-group>--onboarding-init` / `--onboarding-run` (no suffix).
pub fn stable_request_name(
    controller: &str,
    request_name: &str,
    suffix: &str,
) -> Result<String, NamingError> {
    let raw = format!(
        "{}--{}",
        controller.to_lowercase(),
        request_name.to_lowercase()
    );
    if suffix.is_empty() {
        return shorten_to_x_characters(&raw, K8S_MAX_NAME_LENGTH);
    }
    let suffix = suffix.to_lowercase();
    let too_long = || NamingError::SuffixTooLong {
        suffix: suffix.clone(),
    };
    let max = K8S_MAX_NAME_LENGTH
        .checked_sub(suffix.len() + 2)
        .ok_or_else(too_long)?;
    let shortened = shorten_to_x_characters(&raw, max).map_err(|_| too_long())?;
    Ok(format!("{shortened}--{suffix}"))
}

/// `DefaultManagedLabelGenerator`'s managed-purpose value, before shortening:
/// `<namespace>.<name>.<registration id>` of the reconciled object (e.g.
/// `project-a--ws-b.my-mcp.workload`), without the namespace part when the namespace is empty
/// (a cluster-scoped object: `my-mcp.workload`), and with leading and trailing `.` and ` `
/// trimmed as Go's `strings.Trim(s, ". ")` does.
pub fn managed_purpose(
    request_namespace: &str,
    request_name: &str,
    registration_id: &str,
) -> String {
    let joined = if request_namespace.is_empty() {
        format!("{request_name}.{registration_id}")
    } else {
        format!("{request_namespace}.{request_name}.{registration_id}")
    };
    joined.trim_matches(['.', ' ']).to_owned()
}

/// The labels of the ClusterRequests and AccessRequests a provider creates for one Service API
/// object, as the Go runtime sets them (the template's `WithManagedLabels` generator, every value
/// put through [`label_value`] by `ensureManagedLabelLength`): `openmcp.cloud/managed-by` = the
/// controller (provider) name, `openmcp.cloud/managed-purpose` = [`managed_purpose`], and
/// `openmcp.cloud/onboarding-name` / `-namespace` = the object's name and namespace. The library
/// refuses to adopt a request whose managed-by or managed-purpose label differs.
pub fn request_labels(
    controller: &str,
    request_namespace: &str,
    request_name: &str,
    registration_id: &str,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY_LABEL.to_string(), label_value(controller)),
        (
            MANAGED_PURPOSE_LABEL.to_string(),
            label_value(&managed_purpose(
                request_namespace,
                request_name,
                registration_id,
            )),
        ),
        (ONBOARDING_NAME_LABEL.to_string(), label_value(request_name)),
        (
            ONBOARDING_NAMESPACE_LABEL.to_string(),
            label_value(request_namespace),
        ),
    ])
}

/// The namespace under which kcp-mode access objects are named: `<logical cluster>_<namespace>`
/// (the Go multicluster mode, `openmcp.md` §9). `_` never occurs in a Kubernetes namespace, so
/// these identities cannot collide with standard-mode ones; every naming helper hashes or
/// shortens them as it does namespaces.
pub fn kcp_identity_namespace(logical_cluster: &str, namespace: &str) -> String {
    format!("{logical_cluster}_{namespace}")
}

#[cfg(test)]
mod tests {
    use super::*;

    // Upstream vectors: controller-utils pkg/controller/hash_test.go.
    #[test]
    fn k8s_name_uuid_upstream_vectors() {
        assert_eq!(
            k8s_name_uuid(&["example"]).as_deref(),
            Ok("23cc2129-a257-8644-95e0-289d55c69704")
        );
        assert_eq!(
            k8s_name_uuid(&["default", "example"]).as_deref(),
            Ok("2bcf790e-815e-8ea9-857b-15be429583a5")
        );
        assert_eq!(k8s_name_uuid(&[]), Err(NamingError::InvalidNames));
        assert_eq!(k8s_name_uuid(&[""]), Err(NamingError::InvalidNames));
        assert_eq!(k8s_name_uuid(&["", ""]), Err(NamingError::InvalidNames));
    }

    #[test]
    fn k8s_name_uuid_is_a_version_8_uuid() -> Result<(), NamingError> {
        for input in [
            ["hello world"],
            ["The quick brown fox jumps over the lazy dog"],
            ["Lorem ipsum dolor sit amet"],
        ] {
            let id = uuid::Uuid::parse_str(&k8s_name_uuid(&input)?)
                .map_err(|_| NamingError::InvalidNames)?;
            assert_eq!(id.get_version_num(), 8);
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        }
        // Empty parts next to non-empty ones are joined, not dropped.
        assert_ne!(k8s_name_uuid(&["", "a"])?, k8s_name_uuid(&["a"])?);
        assert_eq!(k8s_name_uuid(&["", "a"])?, k8s_name_uuid(&["/a"])?);
        Ok(())
    }

    #[test]
    fn name_hash_upstream_vectors() {
        assert_eq!(name_hash_shake128_base32(&["example"]), "epgccknc");
        assert_eq!(
            name_hash_shake128_base32(&["default", "example"]),
            "fphxsdub"
        );
        let h = name_hash_shake128_base32(&[""]);
        assert_eq!(h.len(), 8);
        assert!(h.bytes().all(|b| BASE32_LOWER.contains(&b)));
    }

    #[test]
    fn shorten_upstream_vectors() {
        assert_eq!(
            shorten_to_x_characters("short", 100).as_deref(),
            Ok("short")
        );
        assert_eq!(
            shorten_to_x_characters("short1234567", 11).as_deref(),
            Ok("s--j5gore3p")
        );
        assert_eq!(
            shorten_to_x_characters("shorter1234", 10),
            Err(NamingError::MaxLenTooSmall)
        );
        assert_eq!(
            shorten_to_x_characters(
                "this-is-a-very-a-very-a-very-long-string-that-is-over-63-characters",
                63
            )
            .as_deref(),
            Ok("this-is-a-very-a-very-a-very-long-string-that-is-over--6reoyp5o")
        );
    }

    #[test]
    fn shorten_edge_cases() -> Result<(), NamingError> {
        // Exactly at the limit: unchanged.
        let sixty_three = "a".repeat(63);
        assert_eq!(shorten_to_x_characters(&sixty_three, 63)?, sixty_three);
        // One over: 53 kept + "--" + 8.
        let sixty_four = "a".repeat(64);
        let short = shorten_to_x_characters(&sixty_four, 63)?;
        assert_eq!(short.len(), 63);
        assert!(short.starts_with(&"a".repeat(53)));
        assert_eq!(
            &short[53..],
            format!("--{}", name_hash_shake128_base32(&[&sixty_four]))
        );
        // A cut that ends in '-' or '.' drops them, so the name stays valid.
        let dashed = format!("{}-{}", "a".repeat(52), "b".repeat(20));
        let short = shorten_to_x_characters(&dashed, 63)?;
        assert_eq!(
            short,
            format!(
                "{}--{}",
                "a".repeat(52),
                name_hash_shake128_base32(&[&dashed])
            )
        );
        let dotted = format!("{}.-.{}", "a".repeat(50), "b".repeat(20));
        let short = shorten_to_x_characters(&dotted, 63)?;
        assert_eq!(
            short,
            format!(
                "{}--{}",
                "a".repeat(50),
                name_hash_shake128_base32(&[&dotted])
            )
        );
        // Inputs that differ only after the cut get different names.
        assert_ne!(
            shorten_to_x_characters(&format!("{sixty_four}x"), 63)?,
            shorten_to_x_characters(&format!("{sixty_four}y"), 63)?
        );
        assert_eq!(shorten_to_x_characters("", 0)?, "");
        Ok(())
    }

    // Upstream vector: openmcp-operator lib/utils/utils_test.go.
    #[test]
    fn stable_mcp_namespace_upstream_vector() {
        assert_eq!(
            stable_mcp_identifier("foo", "foo").as_deref(),
            Ok("ed00e8ed-8a09-8c62-a9b8-e6fc20255174")
        );
        assert_eq!(
            stable_mcp_namespace("foo", "foo").as_deref(),
            Ok("mcp--ed00e8ed-8a09-8c62-a9b8-e6fc20255174")
        );
    }

    #[test]
    fn stable_mcp_namespace_hashes_namespace_then_name() -> Result<(), NamingError> {
        assert_eq!(
            stable_mcp_identifier("example", "default")?,
            "2bcf790e-815e-8ea9-857b-15be429583a5"
        );
        assert_ne!(
            stable_mcp_namespace("a", "b")?,
            stable_mcp_namespace("b", "a")?
        );
        let ns = stable_mcp_namespace("my-mcp", "project-p--ws-w")?;
        assert_eq!(ns.len(), 5 + 36);
        assert!(ns.len() <= K8S_MAX_NAME_LENGTH);
        Ok(())
    }

    #[test]
    fn stable_request_names() -> Result<(), NamingError> {
        assert_eq!(
            stable_request_name("velero", "my-mcp", "mcp")?,
            "velero--my-mcp--mcp"
        );
        assert_eq!(
            stable_request_name("velero", "my-mcp", "wl")?,
            "velero--my-mcp--wl"
        );
        assert_eq!(
            stable_request_name(
                "velero.services.open-control-plane.io",
                "onboarding-init",
                ""
            )?,
            "velero.services.open-control-plane.io--onboarding-init"
        );
        // Upper case is lowered everywhere.
        assert_eq!(
            stable_request_name("Velero", "My-MCP", "WL")?,
            "velero--my-mcp--wl"
        );
        Ok(())
    }

    #[test]
    fn stable_request_names_are_shortened_before_the_suffix() -> Result<(), NamingError> {
        let long = "x".repeat(70);
        let name = stable_request_name("velero", &long, "wl")?;
        assert_eq!(name.len(), 63);
        assert!(name.ends_with("--wl"));
        let raw = format!("velero--{long}");
        assert_eq!(name, format!("{}--wl", shorten_to_x_characters(&raw, 59)?));
        // The hash covers the lower-cased raw name.
        assert_eq!(
            name,
            stable_request_name("VELERO", &long.to_uppercase(), "WL")?
        );
        // Without a suffix the whole name is shortened to 63.
        let name = stable_request_name("velero", &long, "")?;
        assert_eq!(name, shorten_to_x_characters(&raw, 63)?);
        // A name whose cut ends in '-' stays a valid name.
        let dashed = format!("{}-{}", "a".repeat(39), "b".repeat(30));
        let name = stable_request_name("velero", &dashed, "mcp")?;
        let hash = name_hash_shake128_base32(&[&format!("velero--{dashed}")]);
        assert_eq!(name, format!("velero--{}--{hash}--mcp", "a".repeat(39)));
        Ok(())
    }

    #[test]
    fn stable_request_name_suffix_limits() {
        // 63 - 50 - 2 = 11 leaves one byte for the name: still works.
        let fifty = "s".repeat(50);
        assert!(stable_request_name("ctrl", &"n".repeat(40), &fifty).is_ok_and(|n| n.len() == 63));
        // 63 - 51 - 2 = 10: Go panics, we refuse.
        let fifty_one = "s".repeat(51);
        assert!(matches!(
            stable_request_name("ctrl", &"n".repeat(40), &fifty_one),
            Err(NamingError::SuffixTooLong { .. })
        ));
        // A short raw name fits unshortened beside a long suffix, until it does not.
        assert!(
            stable_request_name("c", "n", &"s".repeat(57))
                .is_ok_and(|n| n == format!("c--n--{}", "s".repeat(57)))
        );
        assert!(stable_request_name("c", "n", &"s".repeat(58)).is_err());
        assert!(stable_request_name("c", "n", &"s".repeat(62)).is_err());
    }

    #[test]
    fn request_labels_match_go() {
        let labels = request_labels("velero", "project-a--ws-b", "my-mcp", "workload");
        assert_eq!(labels["openmcp.cloud/managed-by"], "velero");
        assert_eq!(
            labels["openmcp.cloud/managed-purpose"],
            "project-a--ws-b.my-mcp.workload"
        );
        assert_eq!(labels["openmcp.cloud/onboarding-name"], "my-mcp");
        assert_eq!(
            labels["openmcp.cloud/onboarding-namespace"],
            "project-a--ws-b"
        );
        assert_eq!(labels.len(), 4);
    }

    #[test]
    fn kcp_identities_do_not_collide_with_standard_ones() -> Result<(), NamingError> {
        let identity = kcp_identity_namespace("27uqz02z4wed6sjb", "default");
        assert_eq!(identity, "27uqz02z4wed6sjb_default");
        assert_ne!(
            stable_mcp_namespace("x", &identity)?,
            stable_mcp_namespace("x", "default")?
        );
        Ok(())
    }
}
