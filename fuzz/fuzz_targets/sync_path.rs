//! kcp-sync's paths (gjson reading, sjson-style writing and deleting), as a mutation rule or a
//! related-object reference uses them: any path against a document, read every way the
//! reconciler reads, then written and deleted. Nothing may panic; a successful write must be
//! readable back by the plain path syntax.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

#[derive(Arbitrary, Debug)]
struct Input {
    path: String,
    /// A document of the fuzzer's own, used when it is JSON.
    document: String,
    value: String,
}

static OBJECT: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "apiVersion": "example.com/v1", "kind": "Thing",
        "metadata": {"name": "a", "namespace": "ns", "labels": {"app.kubernetes.io/name": "x"}},
        "spec": {"n": 24, "f": 1.5, "s": "text", "b": true, "nil": null,
                 "items": [{"name": "web", "port": 80}, {"name": "db"}, 3, "four"],
                 "nested": {"deep": {"deeper": [[1, 2], {"k": "v"}]}}},
    })
});

fuzz_target!(|input: Input| {
    let own = serde_json::from_str::<Value>(&input.document).ok();
    for document in [Some(&*OBJECT), own.as_ref()].into_iter().flatten() {
        let _ = kcp_sync::path::get(document, &input.path);
        let _ = kcp_sync::path::get_string(document, &input.path);
        let _ = kcp_sync::path::result(document, &input.path);
        let segments = kcp_sync::path::parse(&input.path);
        assert!(!segments.is_empty(), "a path always has a segment");

        let mut written = document.clone();
        let value = Value::String(input.value.clone());
        if kcp_sync::path::set(&mut written, &input.path, value.clone()).is_ok() {
            // Read back segment by segment (gjson's syntax may read the same text differently).
            let mut at = Some(&written);
            for segment in &segments {
                at = at.and_then(|v| match v {
                    Value::Object(map) => map.get(segment.as_str()),
                    Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
                    _ => None,
                });
            }
            if !segments.iter().any(|s| s == "-1") {
                assert_eq!(at, Some(&value), "set then read {:?}", input.path);
            }
        }
        kcp_sync::path::delete(&mut written, &input.path);
    }
});
