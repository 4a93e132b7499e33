//! Listen addresses as the upstream Go tools accept them.
//!
//! Go's `net.Listen` takes `host:port` where the host may be empty (all interfaces) or a name;
//! controller-runtime treats `0` as "disabled". So `:8085` listens on every interface,
//! `localhost:8085` on the loopback address the name resolves to, `127.0.0.1:8085` and
//! `[::1]:8085` as written, and `0` or the empty string disable the listener.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::error::Error;

/// Parses the value of a listen-address flag; `None` means disabled.
pub fn parse_listen_address(flag: &str, value: &str) -> Result<Option<SocketAddr>, Error> {
    let value = value.trim();
    if value.is_empty() || value == "0" {
        return Ok(None);
    }
    let bad = |reason: String| Error::Flag {
        flag: flag.to_string(),
        reason: format!("{value:?} is not a listen address (host:port, :port or 0): {reason}"),
    };
    let (host, port) = value
        .rsplit_once(':')
        .ok_or_else(|| bad("no port".into()))?;
    let port: u16 = port.parse().map_err(|e| bad(format!("port: {e}")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Ok(Some(SocketAddr::from(([0, 0, 0, 0], port))));
    }
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(Some(SocketAddr::new(ip, port)));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| bad(format!("resolving {host:?}: {e}")))?
        .min_by_key(|a| a.is_ipv6())
        .map(Some)
        .ok_or_else(|| bad(format!("{host:?} resolves to no address")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: &str) -> Option<SocketAddr> {
        parse_listen_address("metrics-address", value).unwrap()
    }

    #[test]
    fn a_port_alone_listens_on_every_interface() {
        assert_eq!(parse(":8085"), Some("0.0.0.0:8085".parse().unwrap()));
    }

    #[test]
    fn localhost_resolves_to_a_loopback_address() {
        assert!(parse("localhost:8085").is_some_and(|a| a.ip().is_loopback() && a.port() == 8085));
    }

    #[test]
    fn ip_addresses_are_taken_as_written() {
        assert_eq!(
            parse("127.0.0.1:8085"),
            Some("127.0.0.1:8085".parse().unwrap())
        );
        assert_eq!(parse("[::1]:8085"), Some("[::1]:8085".parse().unwrap()));
    }

    #[test]
    fn zero_or_empty_disables_the_listener() {
        assert_eq!(parse("0"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn nonsense_is_an_error_naming_the_flag_and_value() {
        let err = parse_listen_address("metrics-address", "nonsense")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--metrics-address") && err.contains("\"nonsense\""),
            "{err}"
        );
        assert!(parse_listen_address("health-address", ":http-ish").is_err());
    }
}
