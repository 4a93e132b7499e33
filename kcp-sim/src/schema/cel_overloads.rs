//! The functions a CRD rule may call, as kube-apiserver declares them for new expressions
//! (compatibility version 1.33 of a 1.34 server): cel-go's standard library, optional types,
//! the `strings` (version 2) and `sets` extensions, and Kubernetes' URL, regex, list, authz,
//! quantity, IP, CIDR, format and semver libraries. Calling any other name is an undeclared
//! reference.
//!
//! The overloads of the functions rules call most, Kubernetes' libraries among them, are
//! written out ([`OVERLOADS`]) so the checker resolves them as cel-go does and refuses a call
//! none of them takes; the others ([`OTHER_NAMES`]) are known by name only and answer `dyn`.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::cel_type::CelType;

/// `name: overload; overload; ...`, an overload written `receiver.(params) -> result` for a
/// member function and `(params) -> result` for a global one. Types are CEL's names, `A`,
/// `B`, `K` and `V` stand for any type (the same type wherever the letter repeats).
const OVERLOADS: &[(&str, &str)] = &[
    (
        "_+_",
        "(int, int) -> int; (uint, uint) -> uint; (double, double) -> double; (string, string) -> string; (bytes, bytes) -> bytes; (list(A), list(A)) -> list(A); (timestamp, duration) -> timestamp; (duration, timestamp) -> timestamp; (duration, duration) -> duration",
    ),
    (
        "_-_",
        "(int, int) -> int; (uint, uint) -> uint; (double, double) -> double; (timestamp, timestamp) -> duration; (timestamp, duration) -> timestamp; (duration, duration) -> duration",
    ),
    (
        "_*_",
        "(int, int) -> int; (uint, uint) -> uint; (double, double) -> double",
    ),
    (
        "_/_",
        "(int, int) -> int; (uint, uint) -> uint; (double, double) -> double",
    ),
    ("_%_", "(int, int) -> int; (uint, uint) -> uint"),
    ("-_", "(int) -> int; (double) -> double"),
    ("!_", "(bool) -> bool"),
    ("@not_strictly_false", "(bool) -> bool"),
    ("_==_", "(A, A) -> bool"),
    ("_!=_", "(A, A) -> bool"),
    ("_<_", ORDERING),
    ("_<=_", ORDERING),
    ("_>_", ORDERING),
    ("_>=_", ORDERING),
    ("_?_:_", "(bool, A, A) -> A"),
    ("_[_]", "(list(A), int) -> A; (map(K, V), K) -> V"),
    ("@in", "(A, list(A)) -> bool; (K, map(K, V)) -> bool"),
    (
        "size",
        "(string) -> int; (bytes) -> int; (list(A)) -> int; (map(K, V)) -> int; string.() -> int; bytes.() -> int; list(A).() -> int; map(K, V).() -> int",
    ),
    ("contains", "string.(string) -> bool"),
    ("startsWith", "string.(string) -> bool"),
    ("endsWith", "string.(string) -> bool"),
    (
        "matches",
        "(string, string) -> bool; string.(string) -> bool",
    ),
    (
        "int",
        "(int) -> int; (uint) -> int; (double) -> int; (string) -> int; (timestamp) -> int; (duration) -> int",
    ),
    (
        "uint",
        "(uint) -> uint; (int) -> uint; (double) -> uint; (string) -> uint",
    ),
    (
        "double",
        "(double) -> double; (int) -> double; (uint) -> double; (string) -> double",
    ),
    (
        "string",
        "(string) -> string; (int) -> string; (uint) -> string; (double) -> string; (bool) -> string; (bytes) -> string; (timestamp) -> string; (duration) -> string; (IP) -> string; (CIDR) -> string",
    ),
    ("bytes", "(bytes) -> bytes; (string) -> bytes"),
    ("bool", "(bool) -> bool; (string) -> bool"),
    (
        "duration",
        "(duration) -> duration; (string) -> duration; (int) -> duration",
    ),
    (
        "timestamp",
        "(timestamp) -> timestamp; (string) -> timestamp; (int) -> timestamp",
    ),
    ("dyn", "(A) -> dyn"),
    ("type", "(A) -> type(A)"),
    ("charAt", "string.(int) -> string"),
    (
        "indexOf",
        "string.(string) -> int; string.(string, int) -> int; list(A).(A) -> int",
    ),
    (
        "lastIndexOf",
        "string.(string) -> int; string.(string, int) -> int; list(A).(A) -> int",
    ),
    ("lowerAscii", "string.() -> string"),
    ("upperAscii", "string.() -> string"),
    (
        "replace",
        "string.(string, string) -> string; string.(string, string, int) -> string",
    ),
    (
        "split",
        "string.(string) -> list(string); string.(string, int) -> list(string)",
    ),
    (
        "substring",
        "string.(int) -> string; string.(int, int) -> string",
    ),
    ("trim", "string.() -> string"),
    (
        "join",
        "list(string).() -> string; list(string).(string) -> string",
    ),
    ("find", "string.(string) -> string"),
    (
        "findAll",
        "string.(string) -> list(string); string.(string, int) -> list(string)",
    ),
    (
        "isSorted",
        "list(int).() -> bool; list(uint).() -> bool; list(double).() -> bool; list(bool).() -> bool; list(duration).() -> bool; list(timestamp).() -> bool; list(string).() -> bool; list(bytes).() -> bool",
    ),
    (
        "sum",
        "list(int).() -> int; list(uint).() -> uint; list(double).() -> double; list(duration).() -> duration",
    ),
    ("min", EXTREMES),
    ("max", EXTREMES),
    // Kubernetes' quantity, IP, CIDR, semver, URL and format libraries.
    ("quantity", "(string) -> Quantity"),
    ("isQuantity", "(string) -> bool"),
    ("sign", "(Quantity) -> int"),
    (
        "isGreaterThan",
        "Quantity.(Quantity) -> bool; Semver.(Semver) -> bool",
    ),
    (
        "isLessThan",
        "Quantity.(Quantity) -> bool; Semver.(Semver) -> bool",
    ),
    (
        "compareTo",
        "Quantity.(Quantity) -> int; Semver.(Semver) -> int",
    ),
    ("asApproximateFloat", "Quantity.() -> double"),
    ("asInteger", "Quantity.() -> int"),
    ("isInteger", "Quantity.() -> bool"),
    (
        "add",
        "Quantity.(Quantity) -> Quantity; Quantity.(int) -> Quantity",
    ),
    (
        "sub",
        "Quantity.(Quantity) -> Quantity; Quantity.(int) -> Quantity",
    ),
    ("ip", "(string) -> IP; CIDR.() -> IP"),
    ("isIP", "(string) -> bool"),
    ("ip.isCanonical", "(string) -> bool"),
    ("family", "IP.() -> int"),
    ("isUnspecified", "IP.() -> bool"),
    ("isLoopback", "IP.() -> bool"),
    ("isLinkLocalMulticast", "IP.() -> bool"),
    ("isLinkLocalUnicast", "IP.() -> bool"),
    ("isGlobalUnicast", "IP.() -> bool"),
    ("cidr", "(string) -> CIDR"),
    ("isCIDR", "(string) -> bool"),
    ("containsIP", "CIDR.(string) -> bool; CIDR.(IP) -> bool"),
    ("containsCIDR", "CIDR.(string) -> bool; CIDR.(CIDR) -> bool"),
    ("prefixLength", "CIDR.() -> int"),
    ("masked", "CIDR.() -> CIDR"),
    ("semver", "(string) -> Semver; (string, bool) -> Semver"),
    ("isSemver", "(string) -> bool; (string, bool) -> bool"),
    ("major", "Semver.() -> int"),
    ("minor", "Semver.() -> int"),
    ("patch", "Semver.() -> int"),
    ("url", "(string) -> URL"),
    ("isURL", "(string) -> bool"),
    ("getScheme", "URL.() -> string"),
    ("getHost", "URL.() -> string"),
    ("getHostname", "URL.() -> string"),
    ("getPort", "URL.() -> string"),
    ("getEscapedPath", "URL.() -> string"),
    ("getQuery", "URL.() -> map(string, list(string))"),
    // cel-go's optional values.
    ("optional.of", "(A) -> optional(A)"),
    ("optional.ofNonZeroValue", "(A) -> optional(A)"),
    ("optional.none", "() -> optional(A)"),
    ("hasValue", "optional(A).() -> bool"),
    ("value", "optional(A).() -> A"),
    ("orValue", "optional(A).(A) -> A"),
    ("or", "optional(A).(optional(A)) -> optional(A)"),
    ("format.named", "(string) -> optional(Format)"),
    ("format.dns1123Label", "() -> Format"),
    ("format.dns1123Subdomain", "() -> Format"),
    ("format.dns1035Label", "() -> Format"),
    ("format.qualifiedName", "() -> Format"),
    ("format.dns1123LabelPrefix", "() -> Format"),
    ("format.dns1123SubdomainPrefix", "() -> Format"),
    ("format.dns1035LabelPrefix", "() -> Format"),
    ("format.labelValue", "() -> Format"),
    ("format.uri", "() -> Format"),
    ("format.uuid", "() -> Format"),
    ("format.byte", "() -> Format"),
    ("format.date", "() -> Format"),
    ("format.datetime", "() -> Format"),
    ("validate", "Format.(string) -> optional(list(string))"),
];

/// `min` and `max` of Kubernetes' list library: lists of comparable types.
const EXTREMES: &str = "list(int).() -> int; list(uint).() -> uint; list(double).() -> double; list(bool).() -> bool; list(duration).() -> duration; list(timestamp).() -> timestamp; list(string).() -> string; list(bytes).() -> bytes";

/// The comparisons, with kube's cross-type numeric comparisons.
const ORDERING: &str = "(bool, bool) -> bool; (int, int) -> bool; (uint, uint) -> bool; (double, double) -> bool; (string, string) -> bool; (bytes, bytes) -> bool; (timestamp, timestamp) -> bool; (duration, duration) -> bool; (int, uint) -> bool; (int, double) -> bool; (uint, int) -> bool; (uint, double) -> bool; (double, int) -> bool; (double, uint) -> bool";

/// Functions declared for rules whose overloads the checker does not resolve: a call of one
/// is `dyn`, never refused.
const OTHER_NAMES: &[&str] = &[
    // The logical operators, checked argument by argument.
    "_&&_",
    "_||_",
    // cel-go: timestamps and durations, optional types.
    "getFullYear",
    "getMonth",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    "optMap",
    "optFlatMap",
    "_?._",
    "_[?_]",
    // strings (version 2) and sets.
    "format",
    "strings.quote",
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    // Kubernetes' authz library, beyond those kcp-sim implements (`cel_library::FUNCTIONS`,
    // also declared).
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
    "fieldSelector",
    "labelSelector",
];

/// A type in an overload: a concrete type, a type parameter, or a list or map of those.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// A type with no parameters.
    Exact(CelType),
    /// `A`, `B`, `K` or `V`.
    Param(char),
    /// `list(P)`.
    List(Box<Pattern>),
    /// `map(P, Q)`.
    Map(Box<Pattern>, Box<Pattern>),
    /// `type(P)`.
    TypeOf(Box<Pattern>),
    /// `optional(P)`.
    Optional(Box<Pattern>),
}

/// One overload of a function.
#[derive(Debug, Clone)]
pub struct Overload {
    /// The receiver's type, for a member function.
    pub receiver: Option<Pattern>,
    /// The parameters.
    pub params: Vec<Pattern>,
    /// The result.
    pub result: Pattern,
}

/// A function rules may call.
pub enum Declared {
    /// Its overloads.
    Overloads(&'static [Overload]),
    /// Declared, with overloads the checker does not resolve.
    Unresolved,
}

static TABLE: LazyLock<HashMap<&'static str, Vec<Overload>>> = LazyLock::new(|| {
    OVERLOADS
        .iter()
        .map(|(name, text)| (*name, text.split("; ").filter_map(parse_overload).collect()))
        .collect()
});

/// What rules may call by this name (`ns.f` for a namespaced function), or `None` when the
/// name is not declared.
pub fn lookup(name: &str) -> Option<Declared> {
    if let Some(overloads) = TABLE.get(name) {
        return Some(Declared::Overloads(overloads.as_slice()));
    }
    let declared = OTHER_NAMES.contains(&name) || super::cel_library::FUNCTIONS.contains(&name);
    declared.then_some(Declared::Unresolved)
}

/// The scalar type of a name (`int`, `string`, ...); `duration` and `timestamp` only in
/// overloads, where they name the types (in rules they are the conversion functions).
fn scalar(name: &str) -> Option<CelType> {
    Some(match name {
        "bool" => CelType::Bool,
        "int" => CelType::Int,
        "uint" => CelType::Uint,
        "double" => CelType::Double,
        "string" => CelType::String,
        "bytes" => CelType::Bytes,
        _ => return None,
    })
}

/// The type a name a rule may use as a type denotes (`type(x) == string`).
pub fn type_named(name: &str) -> Option<CelType> {
    if let Some(t) = scalar(name) {
        return Some(t);
    }
    Some(match name {
        "null_type" => CelType::Null,
        "list" => CelType::list(CelType::Dyn),
        "map" => CelType::map(CelType::Dyn, CelType::Dyn),
        "dyn" | "type" | "optional_type" => CelType::Dyn,
        _ => return None,
    })
}

fn parse_overload(text: &str) -> Option<Overload> {
    let (call, result) = text.split_once(" -> ")?;
    let (receiver, params) = match call.split_once(".(") {
        Some((receiver, params)) => (Some(parse_pattern(receiver)), params),
        None => (None, call.strip_prefix('(')?),
    };
    let inner = params.strip_suffix(')')?;
    let params = split_top_level(inner)
        .into_iter()
        .map(parse_pattern)
        .collect();
    Some(Overload {
        receiver,
        params,
        result: parse_pattern(result),
    })
}

/// `a, list(b), map(c, d)` split at its top-level commas.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = text[start..].trim();
    if !last.is_empty() {
        parts.push(last);
    }
    parts
}

fn parse_pattern(text: &str) -> Pattern {
    if let Some(inner) = text.strip_prefix("type(").and_then(|t| t.strip_suffix(')')) {
        return Pattern::TypeOf(Box::new(parse_pattern(inner)));
    }
    if let Some(inner) = text.strip_prefix("list(").and_then(|t| t.strip_suffix(')')) {
        return Pattern::List(Box::new(parse_pattern(inner)));
    }
    if let Some(inner) = text.strip_prefix("map(").and_then(|t| t.strip_suffix(')')) {
        let parts = split_top_level(inner);
        let (k, v) = (parts.first().copied(), parts.get(1).copied());
        return Pattern::Map(
            Box::new(parse_pattern(k.unwrap_or("dyn"))),
            Box::new(parse_pattern(v.unwrap_or("dyn"))),
        );
    }
    if let Some(inner) = text
        .strip_prefix("optional(")
        .and_then(|t| t.strip_suffix(')'))
    {
        return Pattern::Optional(Box::new(parse_pattern(inner)));
    }
    Pattern::Exact(match text {
        "A" | "B" | "K" | "V" => return Pattern::Param(text.chars().next().unwrap_or('A')),
        "duration" => CelType::Duration,
        "timestamp" => CelType::Timestamp,
        other => scalar(other)
            .or_else(|| library_type(other))
            .unwrap_or(CelType::Dyn),
    })
}

/// The types of Kubernetes' libraries, by the short names the overloads above use.
fn library_type(name: &str) -> Option<CelType> {
    Some(CelType::Opaque(match name {
        "Quantity" => "kubernetes.Quantity",
        "IP" => "net.IP",
        "CIDR" => "net.CIDR",
        "Semver" => "kubernetes.Semver",
        "URL" => "kubernetes.URL",
        "Format" => "kubernetes.NamedFormat",
        _ => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_written_overload_is_read() {
        for (name, text) in OVERLOADS {
            let written = text.split("; ").count();
            let read = TABLE.get(name).map_or(0, Vec::len);
            assert_eq!(read, written, "{name}");
        }
    }

    #[test]
    fn member_and_global_overloads_are_told_apart() {
        let Some(Declared::Overloads(size)) = lookup("size") else {
            panic!("size is declared")
        };
        assert_eq!(size.iter().filter(|o| o.receiver.is_some()).count(), 4);
        assert_eq!(
            size[2].params,
            vec![Pattern::List(Box::new(Pattern::Param('A')))]
        );
    }
}
