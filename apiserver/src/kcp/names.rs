//! kcp's names and hashes: logical cluster names, workspace paths, the export label value and the
//! APIExport identity hash, computed bit for bit as kcp computes them.

use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha224, Sha256};

/// The name and path of the root workspace.
pub(crate) const ROOT: &str = "root";

/// The annotation carrying an object's logical cluster name, on every object.
pub(crate) const CLUSTER_ANNOTATION: &str = "kcp.io/cluster";
/// The annotation carrying the canonical workspace path (on APIBindings, APIExports,
/// LogicalClusters and a few more kinds).
pub(crate) const PATH_ANNOTATION: &str = "kcp.io/path";

/// A new random logical cluster name: 16 characters of the base36 SHA-224 of 32 random bytes, as
/// kcp's workspace scheduler makes them.
pub(crate) fn random_cluster_name() -> String {
    let mut token = [0u8; 32];
    // The system random number generator does not fail on supported platforms; a zero token
    // would still give a valid (if predictable) name, and names are checked for collisions.
    let _ = SystemRandom::new().fill(&mut token);
    let hash = Sha224::digest(token);
    let mut s = encode(&hash, 36);
    // A leading zero digit is dropped by the big-integer encoding; names stay 16 long as long as
    // the digest encodes to at least 16 digits, which a 224-bit number always does.
    s.truncate(16);
    s
}

/// Is `s` one segment of a workspace path (`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)?
pub(crate) fn is_segment(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Is `s` a valid workspace path (`root`, `root:org:ws`) or logical cluster name?
pub(crate) fn is_path(s: &str) -> bool {
    !s.is_empty() && s.split(':').all(is_segment)
}

/// Is `s` a logical cluster name: a valid path of one segment (`system:` names are valid too)?
pub(crate) fn is_name(s: &str) -> bool {
    is_segment(s)
        || s.strip_prefix("system:")
            .is_some_and(|rest| rest.split(':').all(is_segment))
}

/// The parent path of a path (`root:org:ws` → `root:org`), `None` for a single segment.
pub(crate) fn parent(path: &str) -> Option<&str> {
    path.rsplit_once(':').map(|(p, _)| p)
}

/// The last segment of a path (`root:org:ws` → `ws`).
pub(crate) fn base(path: &str) -> &str {
    path.rsplit_once(':').map_or(path, |(_, b)| b)
}

/// The value of the `internal.apis.kcp.io/export` label kcp sets on an APIBinding: base62 of the
/// SHA-224 of `<exportCluster>:<exportName>`.
pub(crate) fn export_label_value(export_cluster: &str, export_name: &str) -> String {
    encode(
        &Sha224::digest(format!("{export_cluster}:{export_name}").as_bytes()),
        62,
    )
}

/// An APIExport's identity hash: the hex SHA-256 of its identity Secret's `key`.
pub(crate) fn identity_hash(key: &[u8]) -> String {
    Sha256::digest(key)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// 256 random bits, base64-encoded, for a new identity Secret's `key`.
pub(crate) fn random_identity_key() -> String {
    use base64::Engine;
    let mut key = [0u8; 32];
    let _ = SystemRandom::new().fill(&mut key);
    base64::engine::general_purpose::STANDARD.encode(key)
}

/// Encodes a big-endian unsigned integer in `base` (≤ 62) as Go's `big.Int.Text` does: digits
/// `0-9`, then `a-z`, then `A-Z`, no leading zeros.
///
/// Written by hand because it is a dozen lines and kcp's names must match Go's output exactly.
pub(crate) fn encode(bytes: &[u8], base: u32) -> String {
    const DIGITS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut n: Vec<u32> = bytes.iter().map(|b| u32::from(*b)).collect();
    let mut out = Vec::new();
    while n.iter().any(|d| *d != 0) {
        let mut rem = 0u32;
        for d in n.iter_mut() {
            let cur = rem * 256 + *d;
            *d = cur / base;
            rem = cur % base;
        }
        out.push(DIGITS[rem as usize]);
    }
    if out.is_empty() {
        out.push(b'0');
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_go_big_int_text() {
        assert_eq!(encode(&[0], 62), "0");
        assert_eq!(encode(&[61], 62), "Z");
        assert_eq!(encode(&[62], 62), "10");
        assert_eq!(encode(&[1, 0], 36), "74");
        assert_eq!(encode(&[255, 255], 16), "ffff");
    }

    #[test]
    fn cluster_names_are_16_base36_characters() {
        for _ in 0..100 {
            let n = random_cluster_name();
            assert_eq!(n.len(), 16, "{n}");
            assert!(
                n.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            );
            assert!(is_name(&n));
        }
    }

    #[test]
    fn paths_and_names() {
        assert!(is_path("root"));
        assert!(is_path("root:org:ws"));
        assert!(!is_path("root::ws"));
        assert!(!is_path("Root"));
        assert!(!is_path("root:-a"));
        assert!(!is_path("*"));
        assert!(is_name("27uqz02z4wed6sjb"));
        assert!(!is_name("root:org"));
        assert!(is_name("system:admin"));
        assert_eq!(parent("root:org:ws"), Some("root:org"));
        assert_eq!(parent("root"), None);
        assert_eq!(base("root:org:ws"), "ws");
    }

    #[test]
    fn identity_hash_is_hex_sha256() {
        assert_eq!(
            identity_hash(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn export_label_is_base62_sha224() {
        // sha224("root:today-cowboys") as a number in base 62, as Go's big.Int.Text(62) prints it.
        let v = export_label_value("root", "today-cowboys");
        assert!(v.len() >= 37 && v.len() <= 38, "{v}");
        assert!(v.bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(v, export_label_value("root", "today-cowboys"));
        assert_ne!(v, export_label_value("root", "cowboys"));
    }
}
