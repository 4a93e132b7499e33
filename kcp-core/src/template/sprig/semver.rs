//! sprig's `semver` and `semverCompare`, with Masterminds/semver v3 rules: versions may
//! omit minor and patch and carry a `v`; constraints combine operators (`= != > < >= <= ~
//! ~> ^`), wildcards (`1.2.x`, `*`), ranges (`1.2 - 1.4`), `,` or space for "and" and `||`
//! for "or". A pre-release version only satisfies constraints that mention a pre-release.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use gotmpl::Value;
use regex::Regex;

use super::args::{Outcome, str_arg, want};
use crate::template::go_value::{map, string};

const VERSION: &str = r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const CONSTRAINT_VERSION: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";

struct Patterns {
    version: Regex,
    constraint: Regex,
    range: Regex,
    find: Regex,
    valid: Regex,
}

static PATTERNS: LazyLock<Option<Patterns>> = LazyLock::new(|| {
    Some(Patterns {
        version: Regex::new(&format!("^{VERSION}$")).ok()?,
        constraint: Regex::new(&format!(r"^\s*({OPS})\s*({CONSTRAINT_VERSION})\s*$")).ok()?,
        range: Regex::new(&format!(
            r"\s*({CONSTRAINT_VERSION})\s+-\s+({CONSTRAINT_VERSION})\s*"
        ))
        .ok()?,
        find: Regex::new(&format!(r"({OPS})\s*({CONSTRAINT_VERSION})")).ok()?,
        valid: Regex::new(&format!(
            r"^(\s*({OPS})\s*({CONSTRAINT_VERSION})\s*)((?:\s+|,\s*)({OPS})\s*({CONSTRAINT_VERSION})\s*)*$"
        ))
        .ok()?,
    })
});

fn patterns() -> Result<&'static Patterns, String> {
    PATTERNS
        .as_ref()
        .ok_or_else(|| "semver patterns failed to compile".to_owned())
}

/// A parsed version.
#[derive(Debug, Clone)]
struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
    original: String,
}

fn parse_version(v: &str) -> Result<Version, String> {
    let caps = patterns()?
        .version
        .captures(v)
        .ok_or_else(|| "Invalid Semantic Version".to_owned())?;
    let segment = |i: usize| -> Result<u64, String> {
        match caps.get(i) {
            None => Ok(0),
            Some(m) => m
                .as_str()
                .trim_start_matches('.')
                .parse()
                .map_err(|e| format!("Error parsing version segment: {e}")),
        }
    };
    let pre = caps.get(5).map_or("", |m| m.as_str()).to_owned();
    let metadata = caps.get(8).map_or("", |m| m.as_str()).to_owned();
    let version = Version {
        major: segment(1)?,
        minor: segment(2)?,
        patch: segment(3)?,
        pre,
        metadata,
        original: v.to_owned(),
    };
    for part in version.pre.split('.').filter(|_| !version.pre.is_empty()) {
        if part.bytes().all(|b| b.is_ascii_digit()) && part.len() > 1 && part.starts_with('0') {
            return Err("Version segment starts with 0".to_owned());
        }
    }
    Ok(version)
}

fn compare_pre_part(s: &str, o: &str) -> Ordering {
    if s == o {
        return Ordering::Equal;
    }
    if s.is_empty() {
        return Ordering::Less;
    }
    if o.is_empty() {
        return Ordering::Greater;
    }
    match (s.parse::<u64>(), o.parse::<u64>()) {
        (Err(_), Err(_)) => s.cmp(o),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Ok(a), Ok(b)) => {
            if a > b {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
    }
}

fn compare(v: &Version, o: &Version) -> Ordering {
    let numbers = (v.major, v.minor, v.patch).cmp(&(o.major, o.minor, o.patch));
    if numbers != Ordering::Equal {
        return numbers;
    }
    match (v.pre.is_empty(), o.pre.is_empty()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => {
            let a: Vec<&str> = v.pre.split('.').collect();
            let b: Vec<&str> = o.pre.split('.').collect();
            for i in 0..a.len().max(b.len()) {
                let d = compare_pre_part(a.get(i).unwrap_or(&""), b.get(i).unwrap_or(&""));
                if d != Ordering::Equal {
                    return d;
                }
            }
            Ordering::Equal
        }
    }
}

#[derive(Debug)]
struct Constraint {
    op: String,
    version: Version,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

fn parse_constraint(c: &str) -> Result<Constraint, String> {
    let caps = patterns()?
        .constraint
        .captures(c)
        .ok_or_else(|| format!("improper constraint: {c}"))?;
    let group = |i: usize| caps.get(i).map_or("", |m| m.as_str());
    let op = group(1).to_owned();
    let (major, minor, patch, pre) = (group(3), group(4), group(5), group(6));
    let (mut minor_dirty, mut patch_dirty, mut dirty) = (false, false, false);
    let text = if is_x(major) || major.is_empty() {
        dirty = true;
        format!("0.0.0{pre}")
    } else if is_x(minor.trim_start_matches('.')) || minor.is_empty() {
        minor_dirty = true;
        dirty = true;
        format!("{major}.0.0{pre}")
    } else if is_x(patch.trim_start_matches('.')) || patch.is_empty() {
        dirty = true;
        patch_dirty = true;
        format!("{major}{minor}.0{pre}")
    } else {
        group(2).to_owned()
    };
    let version = parse_version(&text).map_err(|_| "constraint Parser Error".to_owned())?;
    Ok(Constraint {
        op,
        version,
        minor_dirty,
        patch_dirty,
        dirty,
    })
}

fn check(c: &Constraint, v: &Version) -> bool {
    let con = &c.version;
    let pre_blocked = !v.pre.is_empty() && con.pre.is_empty();
    let tilde = |v: &Version| -> bool {
        if pre_blocked || compare(v, con) == Ordering::Less {
            return false;
        }
        if con.major == 0 && con.minor == 0 && con.patch == 0 && !c.minor_dirty && !c.patch_dirty {
            return true;
        }
        if v.major != con.major {
            return false;
        }
        v.minor == con.minor || c.minor_dirty
    };
    match c.op.as_str() {
        "" | "=" => {
            if pre_blocked {
                false
            } else if c.dirty {
                tilde(v)
            } else {
                compare(v, con) == Ordering::Equal
            }
        }
        "!=" => {
            if c.dirty {
                if pre_blocked {
                    return false;
                }
                if con.major != v.major {
                    return true;
                }
                if con.minor != v.minor && !c.minor_dirty {
                    return true;
                } else if c.minor_dirty {
                    return false;
                } else if con.patch != v.patch && !c.patch_dirty {
                    return true;
                } else if c.patch_dirty {
                    if !v.pre.is_empty() || !con.pre.is_empty() {
                        return compare_pre(&v.pre, &con.pre) != Ordering::Equal;
                    }
                    return false;
                }
            }
            compare(v, con) != Ordering::Equal
        }
        ">" => {
            if pre_blocked {
                return false;
            }
            if !c.dirty {
                return compare(v, con) == Ordering::Greater;
            }
            if v.major > con.major {
                true
            } else if v.major < con.major || c.minor_dirty {
                false
            } else if c.patch_dirty {
                v.minor > con.minor
            } else {
                compare(v, con) == Ordering::Greater
            }
        }
        "<" => !pre_blocked && compare(v, con) == Ordering::Less,
        ">=" | "=>" => !pre_blocked && compare(v, con) != Ordering::Less,
        "<=" | "=<" => {
            if pre_blocked {
                return false;
            }
            if !c.dirty {
                return compare(v, con) != Ordering::Greater;
            }
            !(v.major > con.major
                || (v.major == con.major && v.minor > con.minor && !c.minor_dirty))
        }
        "~" | "~>" => tilde(v),
        "^" => {
            if pre_blocked || compare(v, con) == Ordering::Less {
                return false;
            }
            if con.major > 0 || c.minor_dirty {
                return v.major == con.major;
            }
            if con.major == 0 && v.major > 0 {
                return false;
            }
            if con.minor > 0 || c.patch_dirty {
                return v.minor == con.minor;
            }
            if con.minor == 0 && v.minor > 0 {
                return false;
            }
            con.patch == v.patch
        }
        _ => false,
    }
}

fn compare_pre(a: &str, b: &str) -> Ordering {
    let a: Vec<&str> = a.split('.').collect();
    let b: Vec<&str> = b.split('.').collect();
    for i in 0..a.len().max(b.len()) {
        let d = compare_pre_part(a.get(i).unwrap_or(&""), b.get(i).unwrap_or(&""));
        if d != Ordering::Equal {
            return d;
        }
    }
    Ordering::Equal
}

/// Masterminds' `rewriteRange`: `1.2 - 1.4` becomes `>= 1.2, <= 1.4`.
fn rewrite_range(c: &str) -> Result<String, String> {
    let p = patterns()?;
    let mut out = c.to_owned();
    for caps in p.range.captures_iter(c) {
        let whole = caps.get(0).map_or("", |m| m.as_str());
        let from = caps.get(1).map_or("", |m| m.as_str());
        let to = caps.get(11).map_or("", |m| m.as_str());
        out = out.replacen(whole, &format!(">= {from}, <= {to}"), 1);
    }
    Ok(out)
}

fn parse_constraints(c: &str) -> Result<Vec<Vec<Constraint>>, String> {
    let p = patterns()?;
    let rewritten = rewrite_range(c)?;
    let mut ors = Vec::new();
    for part in rewritten.split("||") {
        if !p.valid.is_match(part) {
            return Err(format!("improper constraint: {part}"));
        }
        let found: Vec<&str> = p.find.find_iter(part).map(|m| m.as_str()).collect();
        let pieces = if found.is_empty() { vec![part] } else { found };
        ors.push(
            pieces
                .into_iter()
                .map(parse_constraint)
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    Ok(ors)
}

/// `semverCompare constraint version`.
pub(super) fn semver_compare(args: &[Value]) -> Outcome {
    want("semverCompare", args, 2)?;
    let constraints = parse_constraints(str_arg(&args[0])?)?;
    let version = parse_version(str_arg(&args[1])?)?;
    Ok(Value::Bool(
        constraints
            .iter()
            .any(|and| and.iter().all(|c| check(c, &version))),
    ))
}

/// `semver v`: a dict with `Major`, `Minor`, `Patch`, `Prerelease`, `Metadata` and
/// `Original`, so `(semver "1.2.3").Minor` works as in Go. Printing the whole value shows
/// the dict, where Go prints the normalised version.
pub(super) fn semver(args: &[Value]) -> Outcome {
    want("semver", args, 1)?;
    let v = parse_version(str_arg(&args[0])?)?;
    let mut fields: BTreeMap<Arc<str>, Value> = BTreeMap::new();
    fields.insert(Arc::from("Major"), Value::Uint(v.major));
    fields.insert(Arc::from("Minor"), Value::Uint(v.minor));
    fields.insert(Arc::from("Patch"), Value::Uint(v.patch));
    fields.insert(Arc::from("Prerelease"), string(v.pre.as_str()));
    fields.insert(Arc::from("Metadata"), string(v.metadata.as_str()));
    fields.insert(Arc::from("Original"), string(v.original.as_str()));
    Ok(map(fields))
}
