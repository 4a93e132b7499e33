//! kcp-operator's Go durations (certificate `duration` and `renewBefore`, a Kubeconfig's
//! `validity`, the cache and batch durations of the shard flags): any text parsed, normalized
//! and used for a certificate's lifetime and renewal, as the built-in PKI does. Nothing may
//! panic; a parsed duration must format back to itself, normalizing must be idempotent, and a
//! renewal time must fall inside the certificate's lifetime.
#![no_main]

use kcp_operator::pki::plan::renewal_time;
use kcp_operator::pki::x509::CertificateRequest;
use kcp_operator::render::certmanager::CertificateSpec;
use kcp_operator::render::duration;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Some(ns) = duration::parse(text) {
        let formatted = duration::format(ns);
        assert_eq!(
            duration::parse(&formatted),
            Some(ns),
            "{text:?} formatted as {formatted:?}"
        );
    }
    let once = duration::normalize(text);
    assert_eq!(
        duration::normalize(&once),
        once,
        "normalize({text:?}) is not stable"
    );

    let (not_before, not_after) = (1_800_000_000, 1_800_000_000 + 365 * 86_400);
    let renew = renewal_time(not_before, not_after, Some(text));
    assert!(
        renew > not_before && renew <= not_after,
        "renewal {renew} for {text:?}"
    );

    let spec = CertificateSpec {
        common_name: "fuzz".to_owned(),
        duration: Some(text.to_owned()),
        ..CertificateSpec::default()
    };
    match CertificateRequest::from_spec(&spec) {
        Ok(request) => assert!(request.duration_seconds > 0),
        Err(err) => assert!(!err.reason.is_empty() && !err.field.is_empty()),
    }
});
