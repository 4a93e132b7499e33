//! `/version` and the health endpoints (`/healthz`, `/livez`, `/readyz`, each also per check as
//! `/livez/<check>`), answered as the server kcp-sim plays answers them: `ok`, or with
//! `?verbose` the list of its checks, all passing (those left out with `?exclude` pass as
//! excluded). The lists are those kube-apiserver v1.34.2 and kcp v0.30.0 print as the test bed
//! starts them; `/readyz` adds the readiness checks.

use serde_json::json;

use crate::resource::Flavor;

/// The checks `/livez` and `/healthz` list on kube-apiserver.
const KUBE_LIVE_CHECKS: &[&str] = &[
    "ping",
    "log",
    "etcd",
    "poststarthook/start-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/priority-and-fairness-config-consumer",
    "poststarthook/priority-and-fairness-filter",
    "poststarthook/storage-object-count-tracker-hook",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/start-system-namespaces-controller",
    "poststarthook/start-cluster-authentication-info-controller",
    "poststarthook/start-kube-apiserver-identity-lease-controller",
    "poststarthook/start-kube-apiserver-identity-lease-garbage-collector",
    "poststarthook/start-legacy-token-tracking-controller",
    "poststarthook/start-service-ip-repair-controllers",
    "poststarthook/rbac/bootstrap-roles",
    "poststarthook/scheduling/bootstrap-system-priority-classes",
    "poststarthook/priority-and-fairness-config-producer",
    "poststarthook/bootstrap-controller",
    "poststarthook/start-kubernetes-service-cidr-controller",
    "poststarthook/start-kube-aggregator-informers",
    "poststarthook/apiservice-status-local-available-controller",
    "poststarthook/apiservice-status-remote-available-controller",
    "poststarthook/apiservice-registration-controller",
    "poststarthook/apiservice-discovery-controller",
    "poststarthook/kube-apiserver-autoregistration",
    "autoregister-completion",
    "poststarthook/apiservice-openapi-controller",
    "poststarthook/apiservice-openapiv3-controller",
];

/// The checks `/livez` and `/healthz` list on kcp.
const KCP_LIVE_CHECKS: &[&str] = &[
    "ping",
    "log",
    "etcd",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/priority-and-fairness-config-consumer",
    "poststarthook/priority-and-fairness-filter",
    "poststarthook/storage-object-count-tracker-hook",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/start-system-namespaces-controller",
    "poststarthook/start-cluster-authentication-info-controller",
    "poststarthook/start-kube-apiserver-identity-lease-controller",
    "poststarthook/start-kube-apiserver-identity-lease-garbage-collector",
    "poststarthook/start-legacy-token-tracking-controller",
    "poststarthook/rbac/bootstrap-roles",
    "poststarthook/kcp-start-virtual-workspaces",
    "poststarthook/kcp-bootstrap-policy",
    "poststarthook/kcp-start-informers",
    "poststarthook/kcp-start-cache-server",
    "poststarthook/kcp-start-controllers",
    "poststarthook/kcp-start-openapiv3-controller",
];

/// The checks only `/readyz` runs: after `etcd`, and `shutdown` last.
const READY_AFTER_ETCD: &[&str] = &["etcd-readiness", "informer-sync"];

/// kcp's `/readyz` has no informer-sync check.
const KCP_READY_AFTER_ETCD: &[&str] = &["etcd-readiness"];

/// The checks `endpoint` (`healthz`, `livez` or `readyz`) runs on a server of `flavor`.
pub fn checks(flavor: Flavor, endpoint: &str) -> Vec<&'static str> {
    let (live, after_etcd) = match flavor {
        Flavor::Kubernetes => (KUBE_LIVE_CHECKS, READY_AFTER_ETCD),
        Flavor::Kcp => (KCP_LIVE_CHECKS, KCP_READY_AFTER_ETCD),
    };
    let mut checks = Vec::with_capacity(live.len() + 3);
    for check in live {
        checks.push(*check);
        if endpoint == "readyz" && *check == "etcd" {
            checks.extend_from_slice(after_etcd);
        }
    }
    if endpoint == "readyz" {
        checks.push("shutdown");
    }
    checks
}

/// How a health endpoint is asked: `?verbose` (by its presence, whatever its value) and the
/// checks `?exclude` leaves out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// Whether every check is listed.
    pub verbose: bool,
    /// The names given with `exclude`, each passing as excluded when a check has it.
    pub excluded: Vec<String>,
}

/// The body of `/<endpoint>`: `ok`, or every check (an excluded one as `excluded: ok`), a
/// warning naming the excluded names no check has (sorted and quoted, as Go's `%q` quotes),
/// and `<endpoint> check passed`.
pub fn report(flavor: Flavor, endpoint: &str, probe: &Probe) -> String {
    if !probe.verbose {
        return "ok".into();
    }
    let checks = checks(flavor, endpoint);
    let mut out = String::new();
    for check in &checks {
        if probe.excluded.iter().any(|name| name == check) {
            out.push_str(&format!("[+]{check} excluded: ok\n"));
        } else {
            out.push_str(&format!("[+]{check} ok\n"));
        }
    }
    let mut unknown: Vec<&str> = probe
        .excluded
        .iter()
        .map(String::as_str)
        .filter(|name| !checks.contains(name))
        .collect();
    unknown.sort_unstable();
    unknown.dedup();
    if !unknown.is_empty() {
        let quoted: Vec<String> = unknown
            .iter()
            .map(|name| kcp_core::go_quote::quote(name))
            .collect();
        out.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            quoted.join(",")
        ));
    }
    out.push_str(&format!("{endpoint} check passed\n"));
    out
}

/// `/version`: the Kubernetes release the flavor plays, built by kcp-sim, written as
/// kube-apiserver writes it (Go's field order, indented by two spaces).
pub fn version(flavor: Flavor) -> String {
    let release = flavor.kubernetes_version();
    let minor: u32 = release
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or_default();
    let fields = [
        ("major", "1".to_string()),
        ("minor", minor.to_string()),
        ("emulationMajor", "1".to_string()),
        ("emulationMinor", minor.to_string()),
        ("minCompatibilityMajor", "1".to_string()),
        ("minCompatibilityMinor", minor.saturating_sub(1).to_string()),
        ("gitVersion", format!("{release}+kcp-sim")),
        ("gitCommit", String::new()),
        ("gitTreeState", "clean".to_string()),
        ("buildDate", String::new()),
        ("goVersion", String::new()),
        ("compiler", "rustc".to_string()),
        ("platform", "linux/amd64".to_string()),
    ];
    let lines: Vec<String> = fields
        .iter()
        .map(|(key, value)| format!("  {}: {}", json!(key), json!(value)))
        .collect();
    format!("{{\n{}\n}}", lines.join(",\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn readyz_adds_the_readiness_checks_after_etcd_and_shutdown_last() {
        let ready = checks(Flavor::Kubernetes, "readyz");
        assert_eq!(
            &ready[..5],
            ["ping", "log", "etcd", "etcd-readiness", "informer-sync"]
        );
        assert_eq!(ready.last(), Some(&"shutdown"));
        assert_eq!(ready.len(), KUBE_LIVE_CHECKS.len() + 3);
    }

    #[test]
    fn a_verbose_report_ends_with_the_verdict() {
        let verbose = Probe {
            verbose: true,
            excluded: Vec::new(),
        };
        let text = report(Flavor::Kcp, "livez", &verbose);
        assert!(text.starts_with("[+]ping ok\n"));
        assert!(
            text.ends_with(
                "[+]poststarthook/kcp-start-openapiv3-controller ok\nlivez check passed\n"
            )
        );
        assert_eq!(report(Flavor::Kcp, "livez", &Probe::default()), "ok");
    }

    #[test]
    fn an_excluded_check_passes_as_excluded_and_unknown_names_are_warned_of_sorted() {
        let probe = Probe {
            verbose: true,
            excluded: ["nothing", "etcd", "another", "nothing"]
                .map(String::from)
                .to_vec(),
        };
        let text = report(Flavor::Kubernetes, "readyz", &probe);
        assert!(text.contains("[+]log ok\n[+]etcd excluded: ok\n[+]etcd-readiness ok\n"));
        assert!(text.ends_with(
            "[+]shutdown ok\nwarn: some health checks cannot be excluded: no matches for \"another\",\"nothing\"\nreadyz check passed\n"
        ));
    }

    #[test]
    fn a_kubernetes_cluster_says_1_34() {
        let text = version(Flavor::Kubernetes);
        assert!(text.starts_with("{\n  \"major\": \"1\",\n  \"minor\": \"34\","));
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["minCompatibilityMinor"], "33");
        assert_eq!(v["gitVersion"], "v1.34.2+kcp-sim");
    }
}
