//! What the differential tests of kcp-sim's CRD checks share: a CRD of a spec schema, and
//! kube's and kcp-sim's verdicts on one, worded alike.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

/// A CRD whose spec has the schema `spec`.
pub fn crd_of(spec: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "rules.x.example.com"},
        "spec": {
            "group": "x.example.com",
            "scope": "Namespaced",
            "names": {"plural": "rules", "kind": "Rule"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                "openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]
        }
    })
}

/// `selfType<nanoseconds>`, the name kube gives a rule's object type afresh each time, as
/// `selfType`.
pub fn without_type_stamp(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("selfType") {
        out.push_str(&rest[..at + "selfType".len()]);
        rest = rest[at + "selfType".len()..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// kube's refusal as the 422 words it: one error, or several in brackets; `None` accepted.
pub fn go_refusal(answer: &Value) -> Option<String> {
    let errors: Vec<&str> = answer["errors"]
        .as_array()
        .expect("an answer lists errors")
        .iter()
        .map(|e| e["error"].as_str().unwrap())
        .collect();
    match errors.as_slice() {
        [] => None,
        [one] => Some(without_type_stamp(one)),
        many => Some(without_type_stamp(&format!("[{}]", many.join(", ")))),
    }
}

/// kcp-sim's refusal of `crd`, worded as kube's 422 (`None` when it accepts it).
pub fn sim_refusal(crd: &Value) -> Option<String> {
    let error = kcp_sim::schema::compile_crd(crd).err()?;
    let (_, errors) = error.message.split_once(" is invalid: ")?;
    Some(without_type_stamp(errors))
}
