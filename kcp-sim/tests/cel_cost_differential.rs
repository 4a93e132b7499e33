//! kcp-sim estimates the cost of a CRD's rules as kube-apiserver does when the CRD is written,
//! and refuses a CRD over kube's budget in kube's words. Held to apiextensions-apiserver
//! v0.34.2 itself: the `crd-oracle` Go module answers what its `cel.Compile` estimates for every
//! rule (the rule's most cost, its message expression's, and how many values of the rule's node
//! one request holds), and what `ValidateCustomResourceDefinition` refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod crd_verdicts;
#[path = "../../kcp-core/tests/go_oracle/mod.rs"]
mod go_oracle;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crd_verdicts::{crd_of as crd, go_refusal, sim_refusal};
use kcp_sim::schema::structural::estimate_costs;
use serde_json::{Value, json};

/// Rules on `spec`, each over fields of every kind, bounded and not.
const SPEC_RULES: &[&str] = &[
    "self.name.size() > 0",
    "self.name == 'a'",
    "self.name != self.short",
    "self.name.startsWith('a')",
    "self.name.endsWith(self.short)",
    "self.name.matches('^a+$')",
    "self.short.matches(self.name)",
    "self.name.contains(self.short)",
    "self.short + self.name == 'x'",
    "self.name < self.short",
    "self.color == 'red'",
    "self.count > 0 && self.ratio < 1.0 || self.flag",
    "self.tags.all(t, t.size() < 10)",
    "self.tags.exists(t, t == self.name)",
    "self.tags.exists_one(t, t == 'a')",
    "self.tags.map(t, t + 'x').size() > 0",
    "self.tags.filter(t, t.startsWith('a')).size() > 0",
    "self.tags.all(x, self.tags.all(y, x == y))",
    "self.shortTags.all(x, self.shortTags.all(y, x == y))",
    "'a' in self.tags",
    "'a' in self.labels",
    "self.labels.all(k, self.labels[k].size() < 3)",
    "self.smallLabels.exists(k, k == 'a')",
    "self.smallLabels.all(k, self.smallLabels[k] == k)",
    "self.ports.all(p, p.name != '' && p.number > 0)",
    "self.ports.map(p, p.name).join(',') == ''",
    "self.ports.exists(p, p.name == self.name)",
    "self.tags.join(',').size() < 100",
    "self.shortTags.join('--') == ''",
    "self.name.split(',').size() > 1",
    "self.name.split(',', 3).size() > 1",
    "self.name.lowerAscii() == 'a'",
    "self.name.upperAscii().size() > 1",
    "self.name.replace('a', 'bb') == ''",
    "self.short.replace('', 'x') == ''",
    "self.name.find('[0-9]+') == '1'",
    "self.name.findAll('a').size() > 0",
    "self.tags.isSorted()",
    "self.counts.sum() > 0",
    "self.shortTags.max() == 'a'",
    "self.matrix.all(r, r.sum() > 0)",
    "self.matrix.all(r, r.all(c, c > 0))",
    "self.tags.indexOf('a') >= 0",
    "self.counts.lastIndexOf(1) >= 0",
    "self.name.indexOf('a') >= 0",
    "(self.count > 0 ? self.name : self.short) == 'a'",
    "(self.flag ? self.tags : self.shortTags).size() > 0",
    "self.tags + self.shortTags == []",
    "[1, 2, 3].all(i, i > 0)",
    "['a', 'b'].exists(s, s == self.name)",
    "{'a': 1}.all(k, k == self.short)",
    "self.nested.deep.all(d, d.v.size() > 0)",
    "has(self.name) && self.name != ''",
    "self.when < timestamp('2020-01-01T00:00:00Z')",
    "self.span > duration('1s')",
    "self.day == self.when",
    "string(self.raw) == 'a'",
    "bytes(self.name) == b'a'",
    "self.raw.size() > 1",
    "self.ios == 1 || self.ios == 'a'",
    "self.embedded.kind == 'a'",
    "self.embedded.metadata.name.size() < 5",
    "dyn(self.name) == 'a'",
    "self.name.trim() == ''",
    "self.name.substring(1) == ''",
    "self.name.charAt(1) == 'a'",
    "self.tags.all(t, t.matches(self.name))",
    "size(self.tags) == size(self.labels)",
    "self.count + 1 == 2",
    "int(self.name) == 1",
    "isQuantity(self.quantity) && quantity(self.quantity) == quantity('1')",
    "isQuantity(self.quantity) && quantity(self.quantity).isGreaterThan(quantity('1'))",
    "quantity(self.quantity).asInteger() == 1",
    "isIP(self.address) && ip(self.address).family() == 4",
    "isCIDR(self.address) && cidr(self.address).containsIP('1.2.3.4')",
    "cidr(self.address).containsIP(ip(self.name))",
    "cidr(self.address).containsCIDR(self.name)",
    "ip(self.address) == ip(self.name)",
    "isURL(self.name) && url(self.name).getHost() == 'a'",
    "url(self.name) == url(self.short)",
    "isSemver(self.short) && semver(self.short).major() == 1",
    "sets.contains(self.tags, self.shortTags)",
    "sets.intersects(self.shortTags, ['a'])",
    "sets.equivalent(self.tags, self.shortTags)",
    "'%s'.format([self.name]) == ''",
    "strings.quote(self.name) == ''",
    "self.labels.exists(k, self.labels[k] in self.tags)",
    "self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",
];

/// Rules with message expressions: `(rule, messageExpression)`.
const MESSAGE_RULES: &[(&str, &str)] = &[
    ("self.name != ''", "self.name + ' is bad'"),
    ("self.tags.size() < 3", "self.tags.join(', ')"),
    ("self.count > 0", "'count ' + string(self.count)"),
    (
        "self.ports.size() < 3",
        "self.ports.map(p, p.name).join(', ')",
    ),
];

/// Rules on nodes below `spec`, each sized by how many of its values a request holds:
/// `(path below spec, rule)`.
const NESTED_RULES: &[(&str, &str)] = &[
    ("tags.items", "self.size() < 5"),
    ("tags.items", "self.startsWith('a')"),
    ("shortTags.items", "self.matches('a+')"),
    ("ports.items", "self.name.size() > 0"),
    ("labels.additionalProperties", "self.matches('a')"),
    ("matrix.items", "self.all(c, c > 0)"),
    ("nested.deep.items", "self.v == 'a'"),
];

fn spec_schema() -> Value {
    let string = json!({"type": "string"});
    json!({
        "type": "object",
        "properties": {
            "name": string,
            "short": {"type": "string", "maxLength": 10},
            "color": {"type": "string", "enum": ["red", "blue"]},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "span": {"type": "string", "format": "duration"},
            "raw": {"type": "string", "format": "byte"},
            "tags": {"type": "array", "items": string},
            "shortTags": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 3}},
            "counts": {"type": "array", "items": {"type": "integer"}},
            "ports": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
                "name": string, "number": {"type": "integer"}}}},
            "matrix": {"type": "array", "maxItems": 3, "items": {"type": "array", "items": {"type": "integer"}}},
            "labels": {"type": "object", "additionalProperties": string},
            "smallLabels": {"type": "object", "maxProperties": 3, "additionalProperties": {"type": "string", "maxLength": 5}},
            "ios": {"x-kubernetes-int-or-string": true},
            "nested": {"type": "object", "properties": {"deep": {"type": "array", "items": {
                "type": "object", "properties": {"v": string}}}}},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true},
            "quantity": string,
            "address": {"type": "string", "maxLength": 45},
        }
    })
}

/// The spec schema with every rule of this test in place.
fn spec_with_rules() -> Value {
    let mut spec = spec_schema();
    let mut rules: Vec<Value> = SPEC_RULES.iter().map(|r| json!({"rule": r})).collect();
    rules.extend(
        MESSAGE_RULES
            .iter()
            .map(|(r, m)| json!({"rule": r, "messageExpression": m})),
    );
    spec["x-kubernetes-validations"] = Value::Array(rules);
    for (path, rule) in NESTED_RULES {
        let mut node = &mut spec;
        for step in path.split('.') {
            node = match step {
                "items" | "additionalProperties" => &mut node[step],
                field => &mut node["properties"][field],
            };
        }
        let listed = node["x-kubernetes-validations"].as_array().cloned();
        let mut listed = listed.unwrap_or_default();
        listed.push(json!({"rule": rule}));
        node["x-kubernetes-validations"] = Value::Array(listed);
    }
    spec
}

fn oracle() -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crd-oracle");
    go_oracle::module_built_or_skip(&source, "crd-oracle")
}

/// The rules' source texts by their path, for the messages of this test.
fn rule_texts(schema: &Value) -> BTreeMap<String, String> {
    let mut texts = BTreeMap::new();
    collect_texts(schema, "openAPIV3Schema", &mut texts);
    texts
}

fn collect_texts(node: &Value, path: &str, out: &mut BTreeMap<String, String>) {
    if let Some(rules) = node["x-kubernetes-validations"].as_array() {
        for (i, r) in rules.iter().enumerate() {
            let text = r["rule"].as_str().unwrap_or_default().to_string();
            out.insert(format!("{path}.x-kubernetes-validations[{i}]"), text);
        }
    }
    if let Some(properties) = node["properties"].as_object() {
        for (name, p) in properties {
            collect_texts(p, &format!("{path}.properties[{name}]"), out);
        }
    }
    for child in ["items", "additionalProperties"] {
        if node[child].is_object() {
            collect_texts(&node[child], &format!("{path}.{child}"), out);
        }
    }
}

#[test]
fn every_rule_is_estimated_as_kube_estimates_it() {
    let Some(oracle) = oracle() else {
        return;
    };
    let crd = crd(spec_with_rules());
    let answer = &go_oracle::ask(&oracle, &[json!({"costs": crd})])[0];
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let texts = rule_texts(schema);
    let mut sim: BTreeMap<String, (u64, u64, u64)> = estimate_costs(schema, "openAPIV3Schema")
        .into_iter()
        .map(|e| (e.path, (e.cost, e.message_cost, e.most_per_request)))
        .collect();
    let mut mismatches = Vec::new();
    let mut compared = 0;
    for rule in answer["rules"].as_array().expect("an answer lists rules") {
        let path = format!(
            "{}.x-kubernetes-validations[{}]",
            rule["path"].as_str().unwrap(),
            rule["rule"]
        );
        let text = texts.get(&path).cloned().unwrap_or_default();
        let ours = sim.remove(&path);
        if let Some(error) = rule["error"].as_str() {
            mismatches.push(format!("{text}: kube does not compile it: {error}"));
            continue;
        }
        let go = (
            rule["cost"].as_u64().unwrap(),
            rule["message"].as_u64().unwrap(),
            rule["cardinality"].as_u64().unwrap(),
        );
        compared += 1;
        match ours {
            Some(ours) if ours == go => {}
            Some(ours) => mismatches.push(format!(
                "{text}: kcp-sim (cost, message, per request) {ours:?}, kube {go:?}"
            )),
            None => mismatches.push(format!("{text}: kcp-sim does not compile it")),
        }
    }
    for (path, ours) in sim {
        mismatches.push(format!("{path}: estimated only by kcp-sim: {ours:?}"));
    }
    println!("{compared} rules estimated alike or not");
    assert!(compared > 90, "the oracle compiled {compared} rules");
    assert!(
        mismatches.is_empty(),
        "{} estimates differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// A spec whose `items` list holds `item` (bounded by `max_items` when given), with `rules`
/// on the spec.
fn spec_over_items(item: Value, max_items: Option<u64>, rules: Value) -> Value {
    let mut items = json!({"type": "array", "items": item});
    if let Some(most) = max_items {
        items["maxItems"] = json!(most);
    }
    json!({
        "type": "object",
        "properties": {"items": items, "name": {"type": "string"}},
        "x-kubernetes-validations": rules,
    })
}

#[test]
fn a_crd_over_budget_is_refused_as_kube_refuses_it() {
    let Some(oracle) = oracle() else {
        return;
    };
    let unbounded = json!({"type": "string"});
    let short = json!({"type": "string", "maxLength": 8});
    let pairs = json!([{"rule": "self.items.all(x, self.items.all(y, x == y))"}]);
    // Each about 9,000,000 on 1000 items of 8 characters; 12 of them about 108,000,000.
    let within_budget: Vec<Value> = (0..12)
        .map(|i| json!({"rule": format!("self.items.all(x, self.items.all(y, x == y)) || {i} == 0")}))
        .collect();
    let within_budget = Value::Array(within_budget);
    let cases = [
        (
            "a rule comparing every pair of an unbounded list",
            spec_over_items(unbounded.clone(), None, pairs.clone()),
        ),
        (
            "a rule just over budget, over 1000 short items",
            spec_over_items(
                short.clone(),
                Some(1000),
                json!([{"rule": "self.items.all(x, self.items.exists(y, x != y))"}]),
            ),
        ),
        (
            "a rule on each of an unbounded list's items",
            json!({"type": "object", "properties": {"items": {"type": "array", "items": {
                "type": "object", "properties": {"name": unbounded},
                "x-kubernetes-validations": [{"rule": "self.name.matches('^[a-z]+$')"}]}}}}),
        ),
        (
            "a message expression joining an unbounded list",
            spec_over_items(
                unbounded.clone(),
                None,
                json!([{"rule": "self.items.size() < 3",
                        "messageExpression": "self.items.map(x, x + self.name).join(', ')"}]),
            ),
        ),
        (
            "rules each within budget and over it together",
            spec_over_items(short.clone(), Some(1000), within_budget),
        ),
        (
            "a bounded rule",
            spec_over_items(
                short,
                Some(10),
                json!([{"rule": "self.items.all(x, x.size() < 5)"}]),
            ),
        ),
    ];
    let crds: Vec<Value> = cases.iter().map(|(_, spec)| crd(spec.clone())).collect();
    let answers = go_oracle::ask(&oracle, &crds);
    let mut refused = 0;
    for ((case, _), (crd, answer)) in cases.iter().zip(crds.iter().zip(&answers)) {
        let go = go_refusal(answer);
        refused += usize::from(go.is_some());
        assert_eq!(sim_refusal(crd), go, "{case}");
    }
    assert_eq!(refused, 5, "kube refuses all but the bounded rule");
}
