//! The runtime's metrics are controller-runtime's, read from controller-runtime's own source
//! (the version Cluster API v1.11.3, our Cluster API peer, builds with): the `result` label
//! values of `controller_runtime_reconcile_total`, which outcome gets which value, the order
//! in which a starting controller creates them, and the family names. Dashboards and alerts
//! written for the Go controllers then read ours unchanged.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use kcp_core::runtime::metrics::encode;
use kcp_core::runtime::{ControllerMetrics, Outcome, ReconcileResult};
use prometheus_client::registry::Registry;

fn controller_runtime() -> PathBuf {
    kcp_testbed::go_build::module_dir("cluster-api", "sigs.k8s.io/controller-runtime").unwrap()
}

fn source(path: &str) -> String {
    let file = controller_runtime().join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()))
}

/// `labelX = "value"` constants of controller-runtime's controller, in source order.
fn result_labels() -> Vec<(String, String)> {
    let text = source("pkg/internal/controller/controller.go");
    text.lines()
        .filter_map(|line| {
            let (name, value) = line.trim().split_once('=')?;
            let name = name.trim().strip_prefix("label")?;
            let value = value.trim().strip_prefix('"')?.strip_suffix('"')?;
            Some((name.to_string(), value.to_string()))
        })
        .collect()
}

#[test]
fn each_reconcile_result_carries_controller_runtimes_label_value() {
    let upstream = result_labels();
    assert_eq!(
        upstream.len(),
        4,
        "controller-runtime's labels: {upstream:?}"
    );
    for result in ReconcileResult::ALL {
        let name = format!("{result:?}");
        let expected = upstream
            .iter()
            .find(|(label, _)| *label == name)
            .unwrap_or_else(|| panic!("controller-runtime has no label{name}: {upstream:?}"));
        assert_eq!(result.as_str(), expected.1, "{name}");
    }
}

#[test]
fn a_requeue_after_a_delay_is_counted_as_controller_runtime_counts_it() {
    let upstream = result_labels();
    let label = |name: &str| {
        upstream
            .iter()
            .find(|(label, _)| label == name)
            .map(|(_, value)| value.clone())
            .unwrap_or_else(|| panic!("controller-runtime has no label{name}: {upstream:?}"))
    };
    let delay = std::time::Duration::from_secs(30);
    let counted = |result: Result<Outcome, ()>| ReconcileResult::of(&result).as_str();
    assert_eq!(
        counted(Ok(Outcome::RequeueAfter(delay))),
        label("RequeueAfter")
    );
    assert_eq!(counted(Ok(Outcome::Done)), label("Success"));
    assert_eq!(counted(Err(())), label("Error"));
}

#[test]
fn a_starting_controller_creates_the_result_series_in_controller_runtimes_order() {
    let text = source("pkg/internal/controller/controller.go");
    let init = text
        .split("func (c *Controller[request]) initMetrics()")
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .expect("controller-runtime's initMetrics");
    let labels = result_labels();
    let created: Vec<&str> = init
        .lines()
        .filter(|line| line.contains("ReconcileTotal"))
        .filter_map(|line| {
            labels
                .iter()
                .find(|(name, _)| line.contains(&format!("label{name})")))
                .map(|(_, value)| value.as_str())
        })
        .collect();
    let ours: Vec<&str> = ReconcileResult::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(ours, created);
}

#[test]
fn every_controller_runtime_family_is_served_but_the_panics_we_never_recover() {
    let text = source("pkg/internal/controller/metrics/metrics.go");
    let families: Vec<&str> = text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("Name: \""))
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(families.len() >= 7, "{families:?}");
    let mut registry = Registry::default();
    let metrics = ControllerMetrics::register(&mut registry);
    metrics.init_controller("example", 1);
    let served = encode(&registry);
    for family in families {
        if family == "controller_runtime_reconcile_panics_total" {
            assert!(!served.contains(family), "{family} would always read 0");
            continue;
        }
        assert!(
            served.contains(&format!("{family}{{")) || served.contains(&format!("{family}_")),
            "{family} is not served:\n{served}"
        );
    }
}
