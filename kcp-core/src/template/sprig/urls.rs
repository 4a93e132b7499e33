//! sprig's `urlParse` and `urlJoin`, following Go's `net/url` for the parts they expose.

use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::Value;

use super::args::{Outcome, dict_arg, str_arg, want};
use crate::template::go_value::{map, string, type_name};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    UserPassword,
    Fragment,
}

fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if mode == Mode::Host
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => c == b'?',
            Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::Fragment => false,
            Mode::Host => true,
        },
        b'!' | b'(' | b')' | b'*' if mode == Mode::Fragment => false,
        _ => true,
    }
}

fn escape(s: &str, mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if should_escape(b, mode) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(char::from(b));
        }
    }
    out
}

fn unescape(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(b) => {
                    out.push(b);
                    i += 3;
                }
                None => {
                    let bad = s.get(i..(i + 3).min(s.len())).unwrap_or("%");
                    return Err(format!("invalid URL escape {bad:?}"));
                }
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The parts of a URL sprig exposes.
#[derive(Default)]
struct Url {
    scheme: String,
    opaque: String,
    user: Option<(String, Option<String>)>,
    host: String,
    path: String,
    raw_query: String,
    fragment: String,
}

fn get_scheme(raw: &str) -> Result<(String, &str), String> {
    for (i, c) in raw.char_indices() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if c.is_ascii_digit() || c == '+' || c == '-' || c == '.' {
            if i == 0 {
                return Ok((String::new(), raw));
            }
            continue;
        }
        if c == ':' {
            if i == 0 {
                return Err("missing protocol scheme".to_owned());
            }
            return Ok((raw[..i].to_owned(), &raw[i + 1..]));
        }
        return Ok((String::new(), raw));
    }
    Ok((String::new(), raw))
}

fn parse_url(raw: &str) -> Result<Url, String> {
    let (rest, fragment) = match raw.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (raw, None),
    };
    let mut url = Url::default();
    if let Some(f) = fragment {
        url.fragment = unescape(f)?;
    }
    if rest.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_owned());
    }
    if rest.is_empty() {
        return Ok(url);
    }
    if rest == "*" {
        url.path = "*".to_owned();
        return Ok(url);
    }
    let (scheme, mut rest) = get_scheme(rest)?;
    url.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        url.raw_query = q.to_owned();
        rest = r;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_owned();
            return Ok(url);
        }
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".to_owned());
        }
    }
    if (!url.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let after = &rest[2..];
        let (authority, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        let (userinfo, host) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        if let Some(port_start) = host.rfind(':')
            && !host.starts_with('[')
        {
            let port = &host[port_start + 1..];
            if !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("invalid port {:?} after host", &host[port_start..]));
            }
        }
        url.host = unescape(host)?;
        if let Some(info) = userinfo {
            url.user = Some(match info.split_once(':') {
                Some((u, p)) => (unescape(u)?, Some(unescape(p)?)),
                None => (unescape(info)?, None),
            });
        }
        rest = path;
    }
    url.path = unescape(rest)?;
    Ok(url)
}

fn userinfo_string(user: &(String, Option<String>)) -> String {
    let mut out = escape(&user.0, Mode::UserPassword);
    if let Some(password) = &user.1 {
        out.push(':');
        out.push_str(&escape(password, Mode::UserPassword));
    }
    out
}

fn hostname(host: &str) -> String {
    if let Some(inner) = host.strip_prefix('[') {
        return inner.split(']').next().unwrap_or("").to_owned();
    }
    match host.rfind(':') {
        Some(i) => host[..i].to_owned(),
        None => host.to_owned(),
    }
}

/// `urlParse s`: a dict with `scheme`, `host`, `hostname`, `path`, `query`, `opaque`,
/// `fragment` and `userinfo`.
pub(super) fn url_parse(args: &[Value]) -> Outcome {
    want("urlParse", args, 1)?;
    let url = parse_url(str_arg(&args[0])?).map_err(|e| format!("unable to parse url: {e}"))?;
    let mut d: BTreeMap<Arc<str>, Value> = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        d.insert(Arc::from(k), string(v));
    };
    put("scheme", url.scheme.clone());
    put("host", url.host.clone());
    put("hostname", hostname(&url.host));
    put("path", url.path.clone());
    put("query", url.raw_query.clone());
    put("opaque", url.opaque.clone());
    put("fragment", url.fragment.clone());
    put(
        "userinfo",
        url.user.as_ref().map(userinfo_string).unwrap_or_default(),
    );
    Ok(map(d))
}

/// `urlJoin dict`: the URL built from a dict shaped like `urlParse`'s.
pub(super) fn url_join(args: &[Value]) -> Outcome {
    want("urlJoin", args, 1)?;
    let d = dict_arg(&args[0])?;
    let field = |key: &str| -> Result<String, String> {
        match d.and_then(|d| d.get(key)) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.to_string()),
            Some(other) => Err(format!(
                "unable to parse {key} key, must be of type string, but {} found",
                type_name(other)
            )),
        }
    };
    let userinfo = field("userinfo")?;
    let user = if userinfo.is_empty() {
        None
    } else {
        let parsed = parse_url(&format!("proto://{userinfo}@host"))
            .map_err(|e| format!("unable to parse userinfo in dict: {e}"))?;
        parsed.user
    };
    let url = Url {
        scheme: field("scheme")?,
        opaque: field("opaque")?,
        user,
        host: field("host")?,
        path: field("path")?,
        raw_query: field("query")?,
        fragment: field("fragment")?,
    };
    let mut out = String::new();
    if !url.scheme.is_empty() {
        out.push_str(&url.scheme);
        out.push(':');
    }
    if !url.opaque.is_empty() {
        out.push_str(&url.opaque);
    } else {
        if !url.scheme.is_empty() || !url.host.is_empty() || url.user.is_some() {
            if !url.host.is_empty() || !url.path.is_empty() || url.user.is_some() {
                out.push_str("//");
            }
            if let Some(user) = &url.user {
                out.push_str(&userinfo_string(user));
                out.push('@');
            }
            out.push_str(&escape(&url.host, Mode::Host));
        }
        let path = if url.path == "*" {
            "*".to_owned()
        } else {
            escape(&url.path, Mode::Path)
        };
        if !path.is_empty() && !path.starts_with('/') && !url.host.is_empty() {
            out.push('/');
        }
        if out.is_empty() && path.split('/').next().is_some_and(|s| s.contains(':')) {
            out.push_str("./");
        }
        out.push_str(&path);
    }
    if !url.raw_query.is_empty() {
        out.push('?');
        out.push_str(&url.raw_query);
    }
    if !url.fragment.is_empty() {
        out.push('#');
        out.push_str(&escape(&url.fragment, Mode::Fragment));
    }
    Ok(string(out))
}
