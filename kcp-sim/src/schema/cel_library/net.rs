//! Kubernetes' CEL IP and CIDR libraries (`k8s.io/apiserver/pkg/cel/library/ip.go` and
//! `cidr.go`): `ip(string)`, `isIP(string)`, `cidr(string)`, `isCIDR(string)` and their
//! methods. As Kubernetes, IPv4-mapped IPv6 addresses and zones are refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use cel::objects::Opaque;

/// An IP address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ip(pub IpAddr);

/// A CIDR: an address and a prefix length (the address is kept as written, `masked` clears
/// the host bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The address as written.
    pub ip: IpAddr,
    /// The prefix length.
    pub prefix: u8,
}

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        "net.IP"
    }
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        "net.CIDR"
    }
}

impl Ip {
    /// Parses an address as Kubernetes' `ip()` does.
    pub fn parse(text: &str) -> Result<Self, String> {
        let unparsable =
            || format!("IP Address {text:?} parse error during conversion from string");
        // Go parses an IPv6 address with a zone, then refuses the zone.
        if let Some((address, zone)) = text.split_once('%') {
            return match address.parse::<std::net::Ipv6Addr>() {
                Ok(_) if !zone.is_empty() => Err(format!(
                    "IP address {text:?} with zone value is not allowed"
                )),
                _ => Err(unparsable()),
            };
        }
        let ip: IpAddr = text.parse().map_err(|_| unparsable())?;
        if let IpAddr::V6(v6) = ip
            && v6.to_ipv4_mapped().is_some()
        {
            return Err(format!("IPv4-mapped IPv6 address {text:?} is not allowed"));
        }
        Ok(Ip(ip))
    }

    /// 4 or 6.
    pub fn family(&self) -> i64 {
        if self.0.is_ipv4() { 4 } else { 6 }
    }

    /// Go's `IsLinkLocalMulticast`.
    pub fn is_link_local_multicast(&self) -> bool {
        match self.0 {
            IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
            IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
        }
    }

    /// Go's `IsLinkLocalUnicast`.
    pub fn is_link_local_unicast(&self) -> bool {
        match self.0 {
            IpAddr::V4(v4) => v4.is_link_local(),
            IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
        }
    }

    /// Go's `IsGlobalUnicast`: not unspecified, loopback, multicast, link-local or broadcast.
    pub fn is_global_unicast(&self) -> bool {
        let broadcast = self.0 == IpAddr::V4(Ipv4Addr::BROADCAST);
        !(self.0.is_unspecified()
            || self.0.is_loopback()
            || self.0.is_multicast()
            || self.is_link_local_unicast()
            || broadcast)
    }

    /// The address as a CEL value.
    pub fn into_cel(self) -> cel::Value {
        cel::Value::Opaque(Arc::new(self))
    }
}

impl Cidr {
    /// Parses `address/prefix` as Kubernetes' `cidr()` does.
    pub fn parse(text: &str) -> Result<Self, String> {
        let fail =
            || format!("network address parse error during conversion from string: {text:?}");
        let (address, prefix) = text.split_once('/').ok_or_else(fail)?;
        let ip = Ip::parse(address)?.0;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let well_formed = !prefix.is_empty()
            && prefix.bytes().all(|b| b.is_ascii_digit())
            && (prefix.len() == 1 || !prefix.starts_with('0'));
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| well_formed && *p <= max)
            .ok_or_else(fail)?;
        Ok(Cidr { ip, prefix })
    }

    /// The CIDR with its host bits cleared.
    pub fn masked(&self) -> Cidr {
        Cidr {
            ip: mask(self.ip, self.prefix),
            prefix: self.prefix,
        }
    }

    /// Whether `ip` is inside the CIDR (same family, same network bits).
    pub fn contains_ip(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.ip.is_ipv4() && mask(ip, self.prefix) == mask(self.ip, self.prefix)
    }

    /// Whether `other` lies entirely inside the CIDR.
    pub fn contains_cidr(&self, other: &Cidr) -> bool {
        other.prefix >= self.prefix && self.contains_ip(other.ip)
    }

    /// The CIDR as a CEL value.
    pub fn into_cel(self) -> cel::Value {
        cel::Value::Opaque(Arc::new(self))
    }
}

fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let kept = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(bits & kept))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let kept = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(bits & kept))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn mapped_addresses_and_zones_are_refused() {
        assert!(Ip::parse("::ffff:1.2.3.4").is_err());
        assert!(Ip::parse("fe80::1%eth0").is_err());
        assert!(Ip::parse("10.0.0.1").is_ok());
    }

    #[test]
    fn a_cidr_contains_the_addresses_of_its_network() {
        let c = Cidr::parse("10.1.0.0/16").unwrap();
        assert!(c.contains_ip("10.1.200.3".parse().unwrap()));
        assert!(!c.contains_ip("10.2.0.1".parse().unwrap()));
        assert!(!c.contains_ip("::1".parse().unwrap()));
        assert!(c.contains_cidr(&Cidr::parse("10.1.2.0/24").unwrap()));
        assert!(!c.contains_cidr(&Cidr::parse("10.0.0.0/8").unwrap()));
        assert_eq!(
            Cidr::parse("10.1.2.3/0").unwrap().masked().ip,
            "0.0.0.0".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn prefixes_out_of_range_or_with_leading_zeros_are_refused() {
        for bad in [
            "10.0.0.0/33",
            "10.0.0.0/08",
            "10.0.0.0/",
            "10.0.0.0",
            "::/129",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn go_address_classes_hold() {
        let ip = |s: &str| Ip::parse(s).unwrap();
        assert!(ip("224.0.0.251").is_link_local_multicast());
        assert!(ip("ff02::1").is_link_local_multicast());
        assert!(ip("169.254.1.1").is_link_local_unicast());
        assert!(ip("fe80::1").is_link_local_unicast());
        assert!(ip("8.8.8.8").is_global_unicast());
        assert!(!ip("255.255.255.255").is_global_unicast());
        assert!(!ip("127.0.0.1").is_global_unicast());
        assert_eq!(ip("2001:db8::1").family(), 6);
    }
}
