//! Kubernetes' CEL URL library (`k8s.io/apiserver/pkg/cel/library/urls.go`): `url(string)`,
//! `isURL(string)` and the getters `getScheme`, `getHost`, `getHostname`, `getPort`,
//! `getEscapedPath`, `getQuery`. Parsing follows Go's `url.ParseRequestURI`, which the library
//! uses: an absolute URI or an absolute path, no fragment splitting (a `#` stays in the path
//! or query), `scheme:opaque` accepted.
//!
//! Hand-written rather than the `url` crate: that crate implements the WHATWG URL standard,
//! which normalises (default ports dropped, paths resolved, hosts lowercased) where Go keeps
//! the text, and the getters must answer what kube-apiserver answers.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map as CelMap, Opaque};

/// A URL split as Go's `url.URL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `Scheme`, lower-cased as Go does.
    pub scheme: String,
    /// `Host`: host and port, IPv6 addresses in brackets.
    pub host: String,
    /// The path as written (Go's `EscapedPath` when the escaping is valid).
    pub path: String,
    /// `RawQuery`.
    pub raw_query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        "net.URL"
    }
}

impl Url {
    /// Parses `text` as Go's `url.ParseRequestURI`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let fail = |why: &str| {
            format!("URL parse error during conversion from string: parse {text:?}: {why}")
        };
        if text.is_empty() {
            return Err(fail("empty url"));
        }
        if text.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return Err(fail("net/url: invalid control character in URL"));
        }
        let (scheme, rest) = split_scheme(text).map_err(&fail)?;
        let (rest, raw_query) = match rest.split_once('?') {
            Some((r, q)) => (r, q.to_owned()),
            None => (rest, String::new()),
        };
        if !rest.starts_with('/') {
            if scheme.is_empty() {
                return Err(fail("invalid URI for request"));
            }
            return Ok(Url {
                scheme,
                host: String::new(),
                path: String::new(),
                raw_query,
            });
        }
        let (host, path) = match rest.strip_prefix("//").filter(|_| !scheme.is_empty()) {
            Some(authority_and_path) => {
                let cut = authority_and_path
                    .find('/')
                    .unwrap_or(authority_and_path.len());
                let (authority, path) = authority_and_path.split_at(cut);
                let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
                check_host(host).map_err(&fail)?;
                (host.to_owned(), path.to_owned())
            }
            None => (String::new(), rest.to_owned()),
        };
        check_escapes(&path).map_err(fail)?;
        Ok(Url {
            scheme,
            host,
            path,
            raw_query,
        })
    }

    /// Go's `Hostname()`: the host without port and brackets.
    pub fn hostname(&self) -> &str {
        let (host, _) = split_port(&self.host);
        host.strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
    }

    /// Go's `Port()`: the port, or empty.
    pub fn port(&self) -> &str {
        split_port(&self.host).1
    }

    /// Go's `Query()`: each key with its values in order; malformed pairs are skipped.
    pub fn query(&self) -> cel::Value {
        let mut values: Vec<(String, Vec<cel::Value>)> = Vec::new();
        for pair in self
            .raw_query
            .split('&')
            .filter(|p| !p.is_empty() && !p.contains(';'))
        {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (Some(k), Some(v)) = (query_unescape(k), query_unescape(v)) else {
                continue;
            };
            match values.iter_mut().find(|(key, _)| *key == k) {
                Some((_, list)) => list.push(v.into()),
                None => values.push((k, vec![v.into()])),
            }
        }
        let map: HashMap<Key, cel::Value> = values
            .into_iter()
            .map(|(k, list)| (Key::String(Arc::new(k)), cel::Value::List(Arc::new(list))))
            .collect();
        cel::Value::Map(CelMap { map: Arc::new(map) })
    }

    /// The URL as a CEL value.
    pub fn into_cel(self) -> cel::Value {
        cel::Value::Opaque(Arc::new(self))
    }
}

/// Go's `getScheme`: a scheme is a letter then letters, digits, `+`, `-`, `.` up to `:`;
/// anything else before a `:` means there is no scheme.
fn split_scheme(text: &str) -> Result<(String, &str), &'static str> {
    for (i, c) in text.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err("missing protocol scheme"),
            ':' => return Ok((text[..i].to_ascii_lowercase(), &text[i + 1..])),
            _ => return Ok((String::new(), text)),
        }
    }
    Ok((String::new(), text))
}

/// `host:port` split at the port (after the last `:` outside brackets).
fn split_port(host: &str) -> (&str, &str) {
    let after_brackets = host.rfind(']').map_or(0, |i| i + 1);
    match host[after_brackets..].rfind(':') {
        Some(i) => (&host[..after_brackets + i], &host[after_brackets + i + 1..]),
        None => (host, ""),
    }
}

fn check_host(host: &str) -> Result<(), &'static str> {
    if host.starts_with('[') && !host.contains(']') {
        return Err("missing ']' in host");
    }
    let (name, port) = split_port(host);
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err("invalid port after host");
    }
    if name.starts_with('[') {
        return Ok(());
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=%".contains(c);
    if name.chars().all(|c| allowed(c) || !c.is_ascii()) {
        Ok(())
    } else {
        Err("invalid character in host name")
    }
}

fn check_escapes(path: &str) -> Result<(), &'static str> {
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit));
            if hex.is_none() {
                return Err("invalid URL escape");
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

/// Go's `QueryUnescape`: `+` is a space, `%XX` a byte; a bad escape fails.
fn query_unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_absolute_url_is_split_as_go_splits_it() {
        let u = Url::parse("HTTPS://user@[::1]:8443/a%2Fb?x=1&x=2#frag").unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "[::1]:8443");
        assert_eq!(u.hostname(), "::1");
        assert_eq!(u.port(), "8443");
        assert_eq!(u.path, "/a%2Fb");
        assert_eq!(u.raw_query, "x=1&x=2#frag");
    }

    #[test]
    fn an_absolute_path_and_an_opaque_uri_are_urls_a_relative_one_is_not() {
        assert_eq!(Url::parse("/healthz").unwrap().path, "/healthz");
        assert!(Url::parse("mailto:someone@example.com").is_ok());
        assert!(Url::parse("healthz").is_err());
        assert!(Url::parse(":8080/x").is_err());
        assert!(Url::parse("https://example.com:http/").is_err());
        assert!(Url::parse("https://example.com/%zz").is_err());
    }

    #[test]
    fn query_values_are_unescaped_and_grouped_by_key() {
        let u = Url::parse("https://x/?a=1+2&b=%41&a=3&bad=%z").unwrap();
        let cel::Value::Map(m) = u.query() else {
            panic!()
        };
        let get = |k: &str| m.map.get(&Key::String(Arc::new(k.to_owned()))).cloned();
        assert_eq!(
            get("a"),
            Some(cel::Value::List(Arc::new(vec!["1 2".into(), "3".into()])))
        );
        assert_eq!(get("b"), Some(cel::Value::List(Arc::new(vec!["A".into()]))));
        assert_eq!(get("bad"), None);
    }
}
