//! The labels kcp derives from hashes: an APIBinding's `internal.apis.kcp.io/export` (which
//! export it binds), the `claimed.internal.apis.kcp.io/<export hash>` label kcp's permission
//! claim labeller puts on the objects of an accepted claim (its value a hash of the claim), and
//! the "reflexive" one it puts on every binding of an existing export. Hashes are SHA-224,
//! written in base 62 as Go's `big.Int.Text(62)` writes them.

use sha2::{Digest as _, Sha224};

/// The label naming the export a binding binds (`<export cluster>:<export name>`, hashed).
pub const EXPORT_LABEL: &str = "internal.apis.kcp.io/export";

/// The prefix of the permission claim labels.
pub const CLAIM_LABEL_PREFIX: &str = "claimed.internal.apis.kcp.io/";

const BASE62: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// `bytes` read as a big-endian unsigned number, written in base `alphabet.len()` with the
/// digits of `alphabet` (no leading zeros; `""` for zero).
pub(crate) fn big_endian_digits(bytes: &[u8], alphabet: &[u8]) -> String {
    let base = alphabet.len() as u32;
    let mut number: Vec<u32> = bytes.iter().map(|b| u32::from(*b)).collect();
    let mut digits = Vec::new();
    while number.iter().any(|d| *d != 0) {
        let mut remainder = 0u32;
        for d in number.iter_mut() {
            let value = remainder * 256 + *d;
            *d = value / base;
            remainder = value % base;
        }
        digits.push(alphabet[remainder as usize]);
    }
    digits.reverse();
    String::from_utf8_lossy(&digits).into_owned()
}

/// `bytes` read as a big-endian number, in Go's base 62 (`big.Int.Text(62)`).
pub(crate) fn base62(bytes: &[u8]) -> String {
    big_endian_digits(bytes, BASE62)
}

/// The value of [`EXPORT_LABEL`] for the export `name` in logical cluster `cluster`.
pub fn export_label_value(cluster: &str, name: &str) -> String {
    base62(&Sha224::digest(format!("{cluster}:{name}").as_bytes()))
}

/// The key of the claim labels of the export `name` in `cluster`.
pub fn claim_label_key(cluster: &str, name: &str) -> String {
    format!("{CLAIM_LABEL_PREFIX}{}", export_label_value(cluster, name))
}

/// The value of the claim label of a claim on a group, resource and identity: the hash of the
/// claim without its verbs (as Go writes a v1alpha2 claim: empty group and identity left out,
/// `verbs` null), so that a change of verbs keeps the label.
pub fn claim_label_value(group: &str, resource: &str, identity_hash: &str) -> String {
    let mut members = Vec::new();
    if !group.is_empty() {
        members.push(format!("\"group\":{}", serde_json::Value::from(group)));
    }
    members.push(format!(
        "\"resource\":{}",
        serde_json::Value::from(resource)
    ));
    members.push("\"verbs\":null".to_string());
    if !identity_hash.is_empty() {
        members.push(format!(
            "\"identityHash\":{}",
            serde_json::Value::from(identity_hash)
        ));
    }
    let json = format!("{{{}}}", members.join(","));
    base62(&Sha224::digest(json.as_bytes()))
}

/// The reflexive claim label of a binding to the export `name` in `cluster`: the export's hash
/// under [`CLAIM_LABEL_PREFIX`], with kcp's constant value.
pub fn reflexive_binding_label(cluster: &str, name: &str) -> (String, String) {
    let constant: Vec<u8> = (0..28u8).map(|i| i % 10).collect();
    (
        format!("{CLAIM_LABEL_PREFIX}{}", export_label_value(cluster, name)),
        base62(&constant),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reflexive_value_is_kcps_constant() {
        let (key, value) = reflexive_binding_label("root", "tenancy.kcp.io");
        assert_eq!(value, "LstvmbbzVDDOn90ZbhzSQO5U3DMCf88h1pZ");
        assert_eq!(
            key,
            format!(
                "{CLAIM_LABEL_PREFIX}{}",
                export_label_value("root", "tenancy.kcp.io")
            )
        );
    }

    #[test]
    fn a_claim_value_is_the_hash_of_the_claim_without_verbs() {
        // Measured on kcp v0.30.0 (conformance kcp-claims): a ConfigMap claimed by an
        // accepted claim on core configmaps.
        assert_eq!(
            claim_label_value("", "configmaps", ""),
            "3QVjs6pfBjMpLEVYYhysJnroYGsQGlWm05E4qe"
        );
    }

    #[test]
    fn digits_are_big_endian() {
        assert_eq!(big_endian_digits(&[1, 0], b"0123456789"), "256");
        assert_eq!(big_endian_digits(&[0, 0], b"0123456789"), "");
    }
}
