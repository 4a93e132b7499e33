//! kcp-sync's naming templates (`spec.naming` of a PublishedResource): any name and namespace
//! pattern (Go templates and the legacy `$var` form) for any remote object, workspace and
//! scope. Nothing may panic or hang; a name it accepts must be a valid Kubernetes name.
#![no_main]

use std::sync::LazyLock;

use kcp_core::TemplateEngine;
use kcp_sync::api::ResourceNaming;
use kcp_sync::naming::local_name;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

#[derive(Arbitrary, Debug)]
struct Input {
    name_pattern: String,
    namespace_pattern: String,
    use_naming: bool,
    remote_name: String,
    remote_namespace: Option<String>,
    cluster: String,
    path: Option<String>,
    local_namespaced: bool,
    label: String,
}

static ENGINE: LazyLock<TemplateEngine> = LazyLock::new(TemplateEngine::new);

fn dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fuzz_target!(|input: Input| {
    let naming = ResourceNaming {
        name: input.name_pattern.clone(),
        namespace: input.namespace_pattern.clone(),
    };
    let mut metadata = json!({"name": input.remote_name, "labels": {"team": input.label}});
    if let Some(ns) = &input.remote_namespace {
        metadata["namespace"] = json!(ns);
    }
    let remote = json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": metadata,
                        "spec": {"size": 3, "owner": input.label}});
    let result = local_name(
        &ENGINE,
        input.use_naming.then_some(&naming),
        &remote,
        &input.cluster,
        input.path.as_deref(),
        input.local_namespaced,
    );
    match result {
        Ok(local) => {
            assert!(local.name.len() <= 253, "name too long: {:?}", local.name);
            assert!(
                local.name.split('.').all(dns_label),
                "invalid name {:?}",
                local.name
            );
            assert_eq!(local.namespace.is_some(), input.local_namespaced);
            if let Some(ns) = &local.namespace {
                assert!(dns_label(ns), "invalid namespace {ns:?}");
            }
        }
        Err(err) => assert!(!err.to_string().is_empty()),
    }
});
