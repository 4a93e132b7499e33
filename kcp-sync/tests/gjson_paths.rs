//! gjson paths read as upstream reads them: every case of `gjson_paths/cases.json` (the example
//! document of gjson's SYNTAX.md and a Kubernetes object, each with paths of every form: keys,
//! escapes, indexes, `#`, wildcards, queries, modifiers, pipes, multipaths) carries the answer
//! Go's gjson v1.18.0 (the version api-syncagent v0.7.0 pins) gave: whether the path exists,
//! its raw JSON and its `String()`. kcp-sync's reading must give the same; with Go installed,
//! the table itself is checked against Go live (kcp-core's Go oracle, `gjson_path` requests).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../kcp-core/tests/go_oracle/mod.rs"]
mod go_oracle;

use kcp_sync::path;
use serde_json::{Value, json};

fn table() -> Value {
    let text = include_str!("gjson_paths/cases.json");
    serde_json::from_str(text).unwrap()
}

fn cases() -> Vec<(Value, String, Value)> {
    let table = table();
    table["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let document = table["documents"][c["document"].as_str().unwrap()].clone();
            (document, c["path"].as_str().unwrap().to_owned(), c.clone())
        })
        .collect()
}

/// Where the `gjson` crate (0.8.1, the newest) still reads differently from Go's v1.18.0: a
/// multipath's quoted key keeps its quotes, the `@tostr` modifier (newer than the crate) is
/// unknown, and a wildcard key stops at the first match instead of trying the next key when
/// the rest of the path does not match there. Listed in docs/kcp-sync.md; this test fails as
/// soon as the list is not exactly what differs.
const KNOWN_DIFFERENCES: [&str; 3] = [
    r#"{name.first,age,"the_murphys":friends.#(last=="Murphy")#.first}"#,
    "age.@tostr",
    "spec.*.secretName",
];

#[test]
fn every_path_reads_as_gos_gjson_read_it_but_the_known_differences() {
    let mut differences = Vec::new();
    for (document, path, go) in cases() {
        let ours = path::get(&document, &path);
        let exists = go["exists"].as_bool().unwrap();
        let raw = go["raw"].as_str().unwrap_or_default();
        let go_value = (exists && !raw.is_empty()).then(|| serde_json::from_str::<Value>(raw));
        let same_value = match (&ours, go_value) {
            (None, None) => !exists,
            (Some(ours), Some(Ok(go))) => *ours == go,
            _ => false,
        };
        let same_string = path::get_string(&document, &path) == go["output"].as_str().unwrap();
        if !same_value || !same_string {
            differences.push((path.clone(), format!("{path:?}: ours {ours:?}, Go {go}")));
        }
    }
    let paths: Vec<&str> = differences.iter().map(|(p, _)| p.as_str()).collect();
    let report: Vec<&str> = differences.iter().map(|(_, d)| d.as_str()).collect();
    assert_eq!(paths, KNOWN_DIFFERENCES, "{}", report.join("\n"));
}

#[test]
fn the_recorded_answers_are_gos_gjson_answers_live() {
    let Some(oracle) = go_oracle::built_or_skip() else {
        return;
    };
    let cases = cases();
    let requests: Vec<Value> = cases
        .iter()
        .map(|(document, path, _)| json!({"gjson_path": path, "document": document.to_string()}))
        .collect();
    let answers = go_oracle::ask(&oracle, &requests);
    for ((_, path, recorded), answer) in cases.iter().zip(answers) {
        for field in ["exists", "raw", "output"] {
            assert_eq!(
                recorded[field], answer[field],
                "{path:?}: {field} recorded {} but Go answers {}",
                recorded[field], answer[field]
            );
        }
    }
}
