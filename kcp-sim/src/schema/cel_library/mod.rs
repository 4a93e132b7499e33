//! Kubernetes' CEL libraries that the `cel` crate does not have, as kube-apiserver declares
//! them for CRD validation rules: [`quantity`], IP and CIDR ([`net`]), [`semver`], [`url`] and
//! [`format`]. Each value type is a CEL opaque value; methods shared by several types
//! (`compareTo`, `isLessThan`, `isGreaterThan`, `ip`) dispatch on the receiver.
//!
//! Not provided: the `authz` library (a CRD rule has no `authorizer`) and `string()` of an IP
//! or CIDR (a rule using them fails when evaluated, naming the function).

pub mod format;
pub mod net;
pub mod quantity;
pub mod semver;
pub mod url;

use std::cmp::Ordering;
use std::sync::Arc;

use cel::extractors::{Arguments, This};
use cel::{Context, ExecutionError, Value as Cel};

use format::Format;
use net::{Cidr, Ip};
use quantity::Quantity;
use semver::Semver;
use url::Url;

/// Every function this module declares, by name.
pub const FUNCTIONS: &[&str] = &[
    "quantity",
    "isQuantity",
    "sign",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "add",
    "sub",
    "compareTo",
    "isLessThan",
    "isGreaterThan",
    "ip",
    "isIP",
    "ip.isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "masked",
    "prefixLength",
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    "format.named",
    "format.dns1123Label",
    "format.dns1123Subdomain",
    "format.dns1035Label",
    "format.qualifiedName",
    "format.dns1123LabelPrefix",
    "format.dns1123SubdomainPrefix",
    "format.dns1035LabelPrefix",
    "format.labelValue",
    "format.uri",
    "format.uuid",
    "format.byte",
    "format.date",
    "format.datetime",
    "validate",
];

type CelResult = Result<Cel, ExecutionError>;

fn opaque<T: 'static>(v: &Cel) -> Option<&T> {
    match v {
        Cel::Opaque(o) => o.downcast_ref::<T>(),
        _ => None,
    }
}

fn fail(function: &str, why: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, why)
}

/// Declares function `name` (one of [`FUNCTIONS`]) on `ctx`; other names are ignored.
pub fn add_function(ctx: &mut Context, name: &str) {
    let _ = match name {
        "quantity" => ctx.add_function(name, |s: Arc<String>| -> CelResult {
            Quantity::parse(&s)
                .map(Quantity::into_cel)
                .map_err(|e| fail("quantity", e))
        }),
        "isQuantity" => ctx.add_function(name, |s: Arc<String>| Quantity::parse(&s).is_ok()),
        "ip" => ctx.add_function(name, |This(v): This<Cel>| ip(&v)),
        "isIP" => ctx.add_function(name, |s: Arc<String>| Ip::parse(&s).is_ok()),
        // Go writes an address in its canonical form: a string is canonical when it is that.
        "ip.isCanonical" => ctx.add_function(name, |s: Arc<String>| -> CelResult {
            let ip = Ip::parse(&s).map_err(|e| fail("ip.isCanonical", e))?;
            Ok(Cel::Bool(ip.0.to_string() == *s))
        }),
        "cidr" => ctx.add_function(name, |s: Arc<String>| -> CelResult {
            Cidr::parse(&s)
                .map(Cidr::into_cel)
                .map_err(|e| fail("cidr", e))
        }),
        "isCIDR" => ctx.add_function(name, |s: Arc<String>| Cidr::parse(&s).is_ok()),
        "url" => ctx.add_function(name, |s: Arc<String>| -> CelResult {
            Url::parse(&s)
                .map(Url::into_cel)
                .map_err(|e| fail("url", e))
        }),
        "isURL" => ctx.add_function(name, |s: Arc<String>| Url::parse(&s).is_ok()),
        "format.named" => ctx.add_function(name, |s: Arc<String>| format::named_optional(&s)),
        "validate" => ctx.add_function(name, |This(f): This<Cel>, s: Arc<String>| -> CelResult {
            opaque::<Format>(&f)
                .map(|f| f.validate(&s))
                .ok_or_else(|| fail("validate", "expects a format receiver"))
        }),
        named if named.starts_with("format.") => match format::named(&named["format.".len()..]) {
            Some(f) => ctx.add_function(name, move || Cel::Opaque(Arc::new(f))),
            None => Ok(()),
        },
        "semver" => ctx.add_function(name, |Arguments(args): Arguments| -> CelResult {
            let (text, normalize) = semver_arguments("semver", &args)?;
            Semver::parse(&text, normalize)
                .map(Semver::into_cel)
                .map_err(|e| fail("semver", e))
        }),
        "isSemver" => ctx.add_function(name, |Arguments(args): Arguments| -> CelResult {
            let (text, normalize) = semver_arguments("isSemver", &args)?;
            Ok(Cel::Bool(Semver::parse(&text, normalize).is_ok()))
        }),
        "compareTo" | "isLessThan" | "isGreaterThan" => {
            let function = name.to_owned();
            ctx.add_function(name, move |This(a): This<Cel>, b: Cel| {
                compare(&function, &a, &b)
            })
        }
        "add" | "sub" => {
            let function = name.to_owned();
            ctx.add_function(name, move |This(a): This<Cel>, b: Cel| {
                arithmetic(&function, &a, &b)
            })
        }
        "containsIP" | "containsCIDR" => {
            let function = name.to_owned();
            ctx.add_function(name, move |This(a): This<Cel>, b: Cel| {
                contains(&function, &a, &b)
            })
        }
        other => {
            let function = other.to_owned();
            ctx.add_function(other, move |This(v): This<Cel>| accessor(&function, &v))
        }
    };
}

fn ip(v: &Cel) -> CelResult {
    match v {
        Cel::String(s) => Ip::parse(s).map(Ip::into_cel).map_err(|e| fail("ip", e)),
        other => match opaque::<Cidr>(other) {
            Some(c) => Ok(Ip(c.ip).into_cel()),
            None => Err(fail("ip", "expects a string or a CIDR")),
        },
    }
}

fn semver_arguments(function: &str, args: &[Cel]) -> Result<(String, bool), ExecutionError> {
    match args {
        [Cel::String(s)] => Ok((s.to_string(), false)),
        [Cel::String(s), Cel::Bool(normalize)] => Ok((s.to_string(), *normalize)),
        _ => Err(fail(function, "expects a string and an optional bool")),
    }
}

fn compare(function: &str, a: &Cel, b: &Cel) -> CelResult {
    let order = if let (Some(x), Some(y)) = (opaque::<Quantity>(a), opaque::<Quantity>(b)) {
        x.0.cmp(&y.0)
    } else if let (Some(x), Some(y)) = (opaque::<Semver>(a), opaque::<Semver>(b)) {
        x.0.cmp(&y.0)
    } else {
        return Err(fail(function, "expects two quantities or two semvers"));
    };
    Ok(match function {
        "isLessThan" => Cel::Bool(order == Ordering::Less),
        "isGreaterThan" => Cel::Bool(order == Ordering::Greater),
        _ => Cel::Int(order as i64),
    })
}

fn arithmetic(function: &str, a: &Cel, b: &Cel) -> CelResult {
    let x = opaque::<Quantity>(a).ok_or_else(|| fail(function, "expects a quantity receiver"))?;
    let y = match b {
        Cel::Int(i) => Quantity((*i).into()),
        other => *opaque::<Quantity>(other)
            .ok_or_else(|| fail(function, "expects a quantity or an int"))?,
    };
    let result = if function == "add" {
        x.add(y)
    } else {
        x.sub(y)
    };
    result
        .map(Quantity::into_cel)
        .ok_or_else(|| fail(function, "the result overflows"))
}

fn contains(function: &str, a: &Cel, b: &Cel) -> CelResult {
    let c = opaque::<Cidr>(a).ok_or_else(|| fail(function, "expects a CIDR receiver"))?;
    let held = if function == "containsIP" {
        let ip = match b {
            Cel::String(s) => Ip::parse(s).map_err(|e| fail(function, e))?,
            other => {
                *opaque::<Ip>(other).ok_or_else(|| fail(function, "expects an IP or a string"))?
            }
        };
        c.contains_ip(ip.0)
    } else {
        let other = match b {
            Cel::String(s) => Cidr::parse(s).map_err(|e| fail(function, e))?,
            other => *opaque::<Cidr>(other)
                .ok_or_else(|| fail(function, "expects a CIDR or a string"))?,
        };
        c.contains_cidr(&other)
    };
    Ok(Cel::Bool(held))
}

/// The methods without arguments, by receiver type.
fn accessor(function: &str, v: &Cel) -> CelResult {
    if let Some(q) = opaque::<Quantity>(v) {
        return quantity_accessor(function, q);
    }
    if let Some(ip) = opaque::<Ip>(v) {
        return Ok(match function {
            "family" => Cel::Int(ip.family()),
            "isUnspecified" => Cel::Bool(ip.0.is_unspecified()),
            "isLoopback" => Cel::Bool(ip.0.is_loopback()),
            "isLinkLocalMulticast" => Cel::Bool(ip.is_link_local_multicast()),
            "isLinkLocalUnicast" => Cel::Bool(ip.is_link_local_unicast()),
            "isGlobalUnicast" => Cel::Bool(ip.is_global_unicast()),
            _ => return Err(fail(function, "is not a method of an IP")),
        });
    }
    if let Some(c) = opaque::<Cidr>(v) {
        return match function {
            "masked" => Ok(c.masked().into_cel()),
            "prefixLength" => Ok(Cel::Int(i64::from(c.prefix))),
            _ => Err(fail(function, "is not a method of a CIDR")),
        };
    }
    if let Some(u) = opaque::<Url>(v) {
        return Ok(match function {
            "getScheme" => u.scheme.clone().into(),
            "getHost" => u.host.clone().into(),
            "getHostname" => u.hostname().to_owned().into(),
            "getPort" => u.port().to_owned().into(),
            "getEscapedPath" => u.path.clone().into(),
            "getQuery" => u.query(),
            _ => return Err(fail(function, "is not a method of a URL")),
        });
    }
    if let Some(s) = opaque::<Semver>(v) {
        let part = match function {
            "major" => s.0.major,
            "minor" => s.0.minor,
            "patch" => s.0.patch,
            _ => return Err(fail(function, "is not a method of a semver")),
        };
        return i64::try_from(part)
            .map(Cel::Int)
            .map_err(|_| fail(function, "the version part overflows an int"));
    }
    Err(fail(function, "has no such method on this value"))
}

fn quantity_accessor(function: &str, q: &Quantity) -> CelResult {
    Ok(match function {
        "sign" => Cel::Int(q.sign()),
        "isInteger" => Cel::Bool(q.as_integer().is_some()),
        "asInteger" => Cel::Int(
            q.as_integer()
                .ok_or_else(|| fail(function, "cannot convert value to integer"))?,
        ),
        "asApproximateFloat" => Cel::Float(q.as_float()),
        _ => return Err(fail(function, "is not a method of a quantity")),
    })
}
