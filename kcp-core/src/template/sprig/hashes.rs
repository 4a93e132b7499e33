//! Hashes: sprig's `sha1sum`, `sha256sum`, `sha512sum` (sprig 3.3), `adler32sum`, and
//! api-syncagent's `sha3sum`,
//! `sha3short` and `shortHash`.

use gotmpl::Value;
use sha1::Sha1;
use sha2::{Digest as _, Sha256, Sha512};
use sha3::Sha3_256;

use super::args::{Outcome, int_arg, str_arg, want, want_at_least};
use crate::template::go_value::string;

pub(super) fn sha1sum(args: &[Value]) -> Outcome {
    want("sha1sum", args, 1)?;
    Ok(string(hex::encode(Sha1::digest(
        str_arg(&args[0])?.as_bytes(),
    ))))
}

pub(super) fn sha256sum(args: &[Value]) -> Outcome {
    want("sha256sum", args, 1)?;
    Ok(string(hex::encode(Sha256::digest(
        str_arg(&args[0])?.as_bytes(),
    ))))
}

/// `sha512sum s`: SHA-512 as 128 hex characters (added in sprig 3.3.0, which upstream pins).
pub(super) fn sha512sum(args: &[Value]) -> Outcome {
    want("sha512sum", args, 1)?;
    Ok(string(hex::encode(Sha512::digest(
        str_arg(&args[0])?.as_bytes(),
    ))))
}

/// `adler32sum s`: the Adler-32 checksum in decimal.
pub(super) fn adler32sum(args: &[Value]) -> Outcome {
    want("adler32sum", args, 1)?;
    let mut hasher = adler2::Adler32::new();
    hasher.write_slice(str_arg(&args[0])?.as_bytes());
    Ok(string(hasher.checksum().to_string()))
}

fn sha3_hex(s: &str) -> String {
    hex::encode(Sha3_256::digest(s.as_bytes()))
}

/// `sha3sum s`: SHA3-256 as 64 hex characters.
pub(super) fn sha3sum(args: &[Value]) -> Outcome {
    want("sha3sum", args, 1)?;
    Ok(string(sha3_hex(str_arg(&args[0])?)))
}

/// `sha3short s [length]`: the first `length` (default 20, at most 64) hex characters of
/// SHA3-256. As in api-syncagent the string comes first, so `sha3short .X 12` works and
/// `.X | sha3short 12` does not (the number lands in the string's place).
pub(super) fn sha3short(args: &[Value]) -> Outcome {
    want_at_least("sha3short", args, 1)?;
    let input = str_arg(&args[0])?;
    let lengths: Vec<i64> = args[1..].iter().map(int_arg).collect::<Result<_, _>>()?;
    let length = match lengths.as_slice() {
        [] => 20,
        [n] => *n,
        more => {
            return Err(format!(
                "sha3short: expected at most one length argument, got {}",
                more.len()
            ));
        }
    };
    if length <= 0 {
        return Err(format!("sha3short: invalid length {length}"));
    }
    let hash = sha3_hex(input);
    let length = (length as usize).min(hash.len());
    Ok(string(&hash[..length]))
}

/// `shortHash s`: the first 20 hex characters of SHA-1 (api-syncagent's legacy naming).
pub(super) fn short_hash(args: &[Value]) -> Outcome {
    want("shortHash", args, 1)?;
    let hash = hex::encode(Sha1::digest(str_arg(&args[0])?.as_bytes()));
    Ok(string(&hash[..20]))
}
