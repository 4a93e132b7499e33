//! The Helm charts under `deploy/charts` carry the CRDs each binary generates (one file per CRD
//! in `files/crds/`, split so that none passes Helm's 5 MiB file limit). `helm` itself and the
//! RBAC run in `real_helm_charts.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

fn by_name(docs: Vec<Value>) -> BTreeMap<String, Value> {
    docs.into_iter()
        .filter(|d| !d.is_null())
        .map(|d| (d["metadata"]["name"].as_str().unwrap().to_owned(), d))
        .collect()
}

fn chart_crds(chart: &str) -> BTreeMap<String, Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/charts")
        .join(chart)
        .join("files/crds");
    let mut docs = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        docs.extend(serde_saphyr::from_multiple::<Value>(&text).unwrap());
    }
    by_name(docs)
}

fn generated(yaml: String) -> BTreeMap<String, Value> {
    by_name(serde_saphyr::from_multiple::<Value>(&yaml).unwrap())
}

#[test]
fn every_chart_carries_the_crds_its_binary_generates() {
    let cases = [
        ("kcp-init-agent", kcp_init::api::crds_yaml().unwrap()),
        ("kcp-api-syncagent", kcp_sync::api::crds_yaml().unwrap()),
        ("kcp-operator", kcp_operator::api::crds_yaml().unwrap()),
        ("capi-provider-agent", capi_agent::api::crds_yaml().unwrap()),
        ("capi-provider-kind", capi_kind::api::crds_yaml().unwrap()),
    ];
    for (chart, yaml) in cases {
        assert_eq!(
            chart_crds(chart),
            generated(yaml),
            "deploy/charts/{chart}/files/crds is stale: split `{chart} crds` into it"
        );
    }
}
