//! kcp-sim checks a CRD's CEL rules as kube-apiserver does when the CRD is written: the same
//! rules refused, in the same words. Held to apiextensions-apiserver v0.34.2 itself (the
//! `crd-oracle` Go module runs its `ValidateCustomResourceDefinition`) on thousands of rules
//! made from typed operands, operators and function calls over one schema.
//!
//! The comparison is strict both ways for what kcp-sim checks; a rule Go refuses that kcp-sim
//! accepts is allowed only for a refusal kcp-sim does not model (the overloads of functions it
//! resolves by name only), and those are counted and printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod crd_verdicts;
#[path = "../../kcp-core/tests/go_oracle/mod.rs"]
mod go_oracle;

use std::path::Path;

use crd_verdicts::{crd_of, go_refusal, sim_refusal, without_type_stamp};
use kcp_sim::schema::{Part, cel_overloads};
use serde_json::{Value, json};

/// Operands of every type the schema gives rules, valid and not.
const OPERANDS: &[&str] = &[
    "self.size",
    "self.ratio",
    "self.flag",
    "self.color",
    "self.when",
    "self.span",
    "self.raw",
    "self.tags",
    "self.ports",
    "self.labels",
    "self.nested",
    "self.nested.b.c",
    "self.ios",
    "self.free",
    "self.__namespace__",
    "self.my__dash__field",
    "self.nope",
    "self.tags[0]",
    "self.labels['a']",
    "self.ports[0].name",
    "self.ports[0].number",
    "1",
    "1u",
    "1.5",
    "'a'",
    "b'a'",
    "true",
    "null",
    "[1, 2]",
    "['a']",
    "{'a': 1}",
    "duration('1s')",
    "timestamp('2020-01-01T00:00:00Z')",
    "size(self.tags)",
    "self.color.size()",
    "self.nested.a",
    "self.nested.zz",
    "self.color.x",
    "self.size.y",
    "type(self.size)",
    "int",
];

const BINARY: &[&str] = &[
    "==", "!=", "<", ">=", "+", "-", "*", "/", "%", "&&", "||", "in",
];

/// Calls on an operand `X`.
const CALLS: &[&str] = &[
    "X",
    "!X",
    "-X",
    "size(X) > 0",
    "X.size() > 0",
    "X.startsWith('a')",
    "X.contains(1)",
    "X.matches('a')",
    "X.all(e, e == e)",
    "X.exists(e, true)",
    "X.map(e, e) == X",
    "X.filter(e, true) == X",
    "has(X.a)",
    "int(X) > 0",
    "string(X) == 'a'",
    "double(X) > 1.0",
    "X.lowerAscii() == 'a'",
    "X.split(',') == ['a']",
    "X.join(',') == 'a'",
    "X.isSorted()",
    "X.sum() == 1",
    "X.indexOf(1) > 0",
    "X.find('a') == 'a'",
    "X.getHours() > 1",
    "type(X) == int",
    "X.charAt(0) == 'a'",
    "X.shout()",
    "X.min() == X.max()",
    "X.exists_one(e, e == 1)",
    "X + X == X",
    "X[0] == X[1]",
    "X['a'] == 1",
    "X.substring(1) == 'a'",
    "X.replace('a', 'b') == 'c'",
    "X.trim() == 'a'",
    "bool(X)",
    "duration(X) > duration('1s')",
    "timestamp(X) > X",
    "X.all(k, X[k] > 0)",
];

/// The schema every rule is checked against: one field of each kind, everything bounded (a
/// few rules still exceed kube's cost budget, and are refused alike).
fn schema() -> Value {
    let s = json!({"type": "string", "maxLength": 8});
    json!({
        "type": "object",
        "properties": {
            "size": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "color": {"type": "string", "enum": ["red", "blue"]},
            "when": {"type": "string", "format": "date-time", "maxLength": 32},
            "span": {"type": "string", "format": "duration", "maxLength": 8},
            "raw": {"type": "string", "format": "byte", "maxLength": 8},
            "tags": {"type": "array", "maxItems": 4, "items": s},
            "ports": {"type": "array", "maxItems": 4, "items": {"type": "object", "properties": {
                "name": s, "number": {"type": "integer"}}}},
            "labels": {"type": "object", "maxProperties": 4, "additionalProperties": s},
            "nested": {"type": "object", "properties": {"a": {"type": "integer"},
                "b": {"type": "object", "properties": {"c": s}}}},
            "ios": {"x-kubernetes-int-or-string": true, "maxLength": 8},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "namespace": s,
            "my-field": s,
        }
    })
}

fn rules() -> Vec<String> {
    let mut rules = Vec::new();
    for x in OPERANDS {
        for call in CALLS {
            rules.push(call.replace('X', x));
        }
        for op in BINARY {
            for y in OPERANDS {
                rules.push(format!("{x} {op} {y}"));
            }
        }
    }
    rules
}

fn crd(rule: &str) -> Value {
    crd_with(json!({"rule": rule}))
}

/// A CRD with `rule` (a `ValidationRule` as written) on the spec of [`schema`].
fn crd_with(rule: Value) -> Value {
    let mut spec = schema();
    spec["x-kubernetes-validations"] = json!([rule]);
    crd_of(spec)
}

/// Fails, under `header`, with the first 25 `mismatches` (or `KCP_RS_SHOW_MISMATCHES` of them)
/// if there are any.
fn assert_none_differ(header: &str, mismatches: &[String]) {
    let shown = std::env::var("KCP_RS_SHOW_MISMATCHES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(25);
    let listed: Vec<&str> = mismatches.iter().take(shown).map(String::as_str).collect();
    assert!(mismatches.is_empty(), "{header}\n{}", listed.join("\n"));
}

/// A refusal kcp-sim does not model: an overload of a function it knows by name only, or a
/// call of literals cel-go folds when it builds the program.
fn unmodelled(refusal: &str) -> bool {
    let unresolved = refusal
        .split("found no matching overload for '")
        .skip(1)
        .filter_map(|rest| rest.split('\'').next())
        .any(|f| {
            matches!(
                cel_overloads::lookup(f),
                Some(cel_overloads::Declared::Unresolved)
            )
        });
    refusal.contains("program instantiation failed") || unresolved
}

#[test]
fn crd_rules_are_refused_as_kube_refuses_them() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crd-oracle");
    let Some(oracle) = go_oracle::module_built_or_skip(&source, "crd-oracle") else {
        return;
    };
    let rules = rules();
    let crds: Vec<Value> = rules.iter().map(|r| crd(r)).collect();
    let answers = go_oracle::ask(&oracle, &crds);
    assert_eq!(answers.len(), crds.len());
    let (mut both, mut unmodelled_gaps, mut mismatches) = (0, Vec::new(), Vec::new());
    for ((rule, crd), answer) in rules.iter().zip(&crds).zip(&answers) {
        match (go_refusal(answer), sim_refusal(crd)) {
            (None, None) => {}
            (Some(go), Some(sim)) if go == sim => both += 1,
            (Some(go), None) if unmodelled(&go) => unmodelled_gaps.push((rule, go)),
            (go, sim) => mismatches.push(format!(
                "rule {rule:?}\n  kube:    {go:?}\n  kcp-sim: {sim:?}"
            )),
        }
    }
    println!(
        "{} rules: {} refused alike, {} accepted alike, {} refused only by kube (unmodelled)",
        rules.len(),
        both,
        rules.len() - both - unmodelled_gaps.len() - mismatches.len(),
        unmodelled_gaps.len()
    );
    for (rule, go) in unmodelled_gaps.iter().take(5) {
        println!("unmodelled: {rule:?}: {go}");
    }
    let header = format!(
        "{} of {} rules answered differently:",
        mismatches.len(),
        rules.len()
    );
    assert_none_differ(&header, &mismatches);
}

/// The CRD documents of the YAML files under `dir` (walked recursively).
fn crds_under(dir: &Path, found: &mut Vec<(String, Value)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            crds_under(&path, found);
            continue;
        }
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if !text.contains("kind: CustomResourceDefinition") || text.contains("{{") {
            continue;
        }
        let Ok(documents) = serde_saphyr::from_multiple::<Value>(&text) else {
            continue;
        };
        for document in documents {
            // Whole CRDs only, not kustomize patches of them.
            if document["apiVersion"] == "apiextensions.k8s.io/v1"
                && document["kind"] == "CustomResourceDefinition"
                && document["spec"]["versions"].is_array()
            {
                found.push((path.display().to_string(), document));
            }
        }
    }
}

/// Upstream's own CRDs (kcp, Cluster API and api-syncagent at the versions the test bed pins,
/// from the Go module cache when the test bed has fetched them) and ours under `deploy/`,
/// their rules among them, are accepted or refused by kcp-sim as by kube.
#[test]
fn real_crds_are_judged_as_kube_judges_them() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crd-oracle");
    let Some(oracle) = go_oracle::module_built_or_skip(&source, "crd-oracle") else {
        return;
    };
    let mut crds = Vec::new();
    crds_under(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy"),
        &mut crds,
    );
    let ours = crds.len();
    let module_cache = std::env::var_os("GOMODCACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join("go/pkg/mod")))
        .unwrap_or_default();
    for module in [
        "github.com/kcp-dev/kcp@v0.30.0/config",
        "github.com/kcp-dev/api-syncagent@v0.7.0/deploy",
        "sigs.k8s.io/cluster-api@v1.11.3/config",
        "sigs.k8s.io/cluster-api@v1.11.3/bootstrap",
        "sigs.k8s.io/cluster-api@v1.11.3/controlplane",
    ] {
        crds_under(&module_cache.join(module), &mut crds);
    }
    let documents: Vec<Value> = crds.iter().map(|(_, crd)| crd.clone()).collect();
    let answers = go_oracle::ask(&oracle, &documents);
    let with_rules = documents
        .iter()
        .filter(|d| d.to_string().contains("x-kubernetes-validations"))
        .count();
    println!(
        "{} CRDs ({ours} of deploy/, {} of upstream's modules), {with_rules} with CEL rules",
        crds.len(),
        crds.len() - ours
    );
    let mismatches: Vec<String> = crds
        .iter()
        .zip(&answers)
        .filter_map(|((file, crd), answer)| {
            let (go, sim) = (go_refusal(answer), sim_refusal(crd));
            (go != sim).then(|| {
                let name = crd["metadata"]["name"].as_str().unwrap_or_default();
                format!("{name} ({file})\n  kube:    {go:?}\n  kcp-sim: {sim:?}")
            })
        })
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// The runtime differences kcp-sim knows it has (docs/kcp-sim.md lists them), by what shows
/// them; any other difference fails the test.
fn known_runtime_difference(
    rule: &str,
    go: Option<&str>,
    sim: Option<&str>,
) -> Option<&'static str> {
    let (go, sim) = (go.unwrap_or_default(), sim.unwrap_or_default());
    if go.contains("'no such overload: ") && sim.contains("'no such overload':") {
        return Some("cel-go names the function of some failed calls ('no such overload: size')");
    }
    if rule.contains("self.ios") {
        return Some("an int-or-string value used as a type it does not have when the rule runs");
    }
    if rule.contains("null") {
        return Some("null where cel-go wants a list at run time");
    }
    None
}

/// `spec`s to run the rules on: every field set, none set, and other values (an empty list
/// and map, a string for the int-or-string, a number written without a fraction).
fn specs() -> Vec<Value> {
    vec![
        json!({"size": 3, "ratio": 1.5, "flag": true, "color": "red",
            "when": "2024-01-01T00:00:00Z", "span": "1h", "raw": "YWJj", "tags": ["a", "b"],
            "ports": [{"name": "a", "number": 1}], "labels": {"a": "x"},
            "nested": {"a": 1, "b": {"c": "z"}}, "ios": 5, "free": {"x": 1},
            "namespace": "ns", "my-field": "f"}),
        json!({}),
        json!({"size": 0, "ratio": 2, "flag": false, "color": "blue", "tags": [],
            "ports": [], "labels": {}, "nested": {"b": {}}, "ios": "50%", "namespace": "",
            "my-field": "ns"}),
    ]
}

/// What kcp-sim's rules say of a create of `spec`: the 422's errors, or `None` if admitted.
fn sim_verdict(crd: &Value, spec: &Value) -> Option<String> {
    sim_update_verdict(crd, None, spec)
}

/// kcp-sim's refusal of a write of `spec`, an update from `old` when it is given.
fn sim_update_verdict(crd: &Value, old: Option<&Value>, spec: &Value) -> Option<String> {
    let schemas = kcp_sim::schema::compile_crd(crd).ok()?;
    let rt = kcp_sim::resource::type_of_crd(crd).unwrap();
    let mut object = custom_resource(spec);
    let old = old.map(custom_resource);
    let admitted = kcp_sim::schema::admit(&schemas, &rt, &mut object, old.as_ref(), Part::Main);
    let error = admitted.err()?;
    let (_, errors) = error.message.split_once(" is invalid: ")?;
    Some(errors.to_string())
}

fn custom_resource(spec: &Value) -> Value {
    json!({"apiVersion": "x.example.com/v1", "kind": "Rule",
        "metadata": {"name": "r", "namespace": "default"}, "spec": spec})
}

/// kcp-sim runs the rules of a CRD on a custom resource as kube-apiserver does: the same
/// rules hold, the same fail, with the same messages (a failed rule, an evaluation error such
/// as a missing key). Held to apiextensions-apiserver's CEL validator itself on every generated
/// rule both accept, on three objects.
#[test]
fn crd_rules_run_as_kube_runs_them() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crd-oracle");
    let Some(oracle) = go_oracle::module_built_or_skip(&source, "crd-oracle") else {
        return;
    };
    // The rules both kube and kcp-sim accept.
    let all: Vec<Value> = rules().iter().map(|r| crd(r)).collect();
    let verdicts = go_oracle::ask(&oracle, &all);
    let compiled: Vec<Value> = all
        .into_iter()
        .zip(&verdicts)
        .filter(|(c, v)| go_refusal(v).is_none() && kcp_sim::schema::compile_crd(c).is_ok())
        .map(|(c, _)| c)
        .collect();
    let mut requests = Vec::new();
    for crd in &compiled {
        for spec in specs() {
            requests.push((crd, spec));
        }
    }
    let asked: Vec<Value> = requests
        .iter()
        .map(|(crd, spec)| json!({"crd": crd, "object": custom_resource(spec)}))
        .collect();
    let answers = go_oracle::ask(&oracle, &asked);
    let mut mismatches = Vec::new();
    let mut known: std::collections::BTreeMap<&str, usize> = Default::default();
    for ((crd, spec), answer) in requests.iter().zip(&answers) {
        let (go, sim) = (go_refusal(answer), sim_verdict(crd, spec));
        if go == sim {
            continue;
        }
        let rule = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["x-kubernetes-validations"][0]["rule"]
            .as_str()
            .unwrap_or_default();
        match known_runtime_difference(rule, go.as_deref(), sim.as_deref()) {
            Some(why) => *known.entry(why).or_default() += 1,
            None => mismatches.push(format!(
                "rule {rule:?} on {spec}\n  kube:    {go:?}\n  kcp-sim: {sim:?}"
            )),
        }
    }
    println!(
        "{} rules run on {} objects: {} known differences, {} others",
        compiled.len(),
        specs().len(),
        known.values().sum::<usize>(),
        mismatches.len()
    );
    for (why, n) in &known {
        println!("  {n} x {why}");
    }
    assert_none_differ("answered differently:", &mismatches);
}

/// The indices of the CRDs (each holding `rules[i]`) kube and kcp-sim both accept; one they
/// judge apart is a mismatch.
fn accepted_alike(
    oracle: &Path,
    rules: &[Value],
    crds: &[Value],
    mismatches: &mut Vec<String>,
) -> Vec<usize> {
    let verdicts = go_oracle::ask(oracle, crds);
    let mut accepted = Vec::new();
    for (i, verdict) in verdicts.iter().enumerate() {
        let go = go_refusal(verdict);
        let sim = sim_refusal(&crds[i]).map(|r| without_type_stamp(&r));
        if go != sim {
            let rule = &rules[i];
            mismatches.push(format!(
                "CRD with {rule}\n  kube:    {go:?}\n  kcp-sim: {sim:?}"
            ));
        } else if go.is_none() {
            accepted.push(i);
        }
    }
    accepted
}

/// Transition rules (`oldSelf`), with `optionalOldSelf` and without, are accepted or refused
/// as kube refuses them when the CRD is written, and run as kube runs them on a create, an
/// update and an unchanged update. Held to apiextensions-apiserver itself.
#[test]
fn transition_rules_run_as_kube_runs_them() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crd-oracle");
    let Some(oracle) = go_oracle::module_built_or_skip(&source, "crd-oracle") else {
        return;
    };
    let optional = |rule: &str| json!({"rule": rule, "optionalOldSelf": true});
    let rules = [
        json!({"rule": "self.size >= oldSelf.size", "message": "size may only grow"}),
        json!({"rule": "oldSelf.color == self.color"}),
        optional("!oldSelf.hasValue() || self.size >= oldSelf.value().size"),
        optional("oldSelf.orValue(self).color == self.color"),
        optional("oldSelf.hasValue()"),
        optional("self.color == 'red'"),
        json!({"rule": "self.color == 'red'", "optionalOldSelf": false}),
        optional("oldSelf.tags == self.tags"),
        optional("oldSelf.nope == self.tags"),
        json!({"rule": "self.tags.all(t, t != '')", "optionalOldSelf": true}),
    ];
    let create = json!({"size": 3, "color": "red", "tags": ["a"]});
    let grown = json!({"size": 4, "color": "blue", "tags": ["a", "b"]});
    let shrunk = json!({"size": 1, "color": "red", "tags": ["a"]});
    let writes: [(Option<&Value>, &Value); 4] = [
        (None, &create),
        (Some(&create), &grown),
        (Some(&create), &shrunk),
        (Some(&create), &create),
    ];
    let mut crds: Vec<Value> = rules.iter().map(|r| crd_with(r.clone())).collect();
    // Rules below the spec, where kube can or cannot correlate old and new values: the items
    // of a list that is not a map-list, the values of a map, the fields of an atomic map
    // (which kube correlates).
    let nested = [
        (&["ports", "items"][..], "oldSelf.name == self.name"),
        (&["labels", "additionalProperties"][..], "oldSelf == self"),
        (&["nested", "b"][..], "oldSelf == self"),
    ];
    for (at, rule) in nested {
        let mut crd = crd_with(json!({"rule": "true"}));
        let spec =
            &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        spec["properties"]["nested"]["x-kubernetes-map-type"] = json!("atomic");
        let mut node = &mut spec["properties"][at[0]];
        for step in &at[1..] {
            node = match *step {
                "items" | "additionalProperties" => &mut node[*step],
                field => &mut node["properties"][field],
            };
        }
        node["x-kubernetes-validations"] = json!([{"rule": rule}]);
        crds.push(crd);
    }
    let rules: Vec<Value> = rules
        .into_iter()
        .chain(
            nested
                .iter()
                .map(|(at, rule)| json!({"at": at, "rule": rule})),
        )
        .collect();
    let mut mismatches = Vec::new();
    let mut runs = Vec::new();
    let accepted = accepted_alike(&oracle, &rules, &crds, &mut mismatches);
    for &i in &accepted {
        let (rule, crd) = (&rules[i], &crds[i]);
        runs.extend(writes.iter().map(|(old, new)| (rule, crd, *old, *new)));
    }
    let asked: Vec<Value> = runs
        .iter()
        .map(|(_, crd, old, new)| {
            let mut request = json!({"crd": crd, "object": custom_resource(new)});
            if let Some(old) = old {
                request["old"] = custom_resource(old);
            }
            request
        })
        .collect();
    let answers = go_oracle::ask(&oracle, &asked);
    for ((rule, crd, old, new), answer) in runs.iter().zip(&answers) {
        let (go, sim) = (go_refusal(answer), sim_update_verdict(crd, *old, new));
        if go != sim {
            mismatches.push(format!(
                "{rule} from {old:?} to {new}\n  kube:    {go:?}\n  kcp-sim: {sim:?}"
            ));
        }
    }
    let refused = crds.len() - accepted.len();
    println!(
        "{} rules ({refused} refused), {} writes compared",
        rules.len(),
        runs.len()
    );
    assert!(runs.len() >= 20, "too few rules compiled: {}", runs.len());
    assert_none_differ("transition rules differ:", &mismatches);
}

/// Rules calling Kubernetes' `format` library (`format.dns1123Label().validate(s)`, ...),
/// `ip.isCanonical` and the quantity, IP, CIDR, semver and URL parsers hold and fail as kube's,
/// and their message expressions show the same errors, in apimachinery's words. Held to kube's
/// CEL validator on every format and a string of each kind. Where an IP, CIDR or version is
/// invalid, both refuse it, but kcp-sim's parsers give their own reasons (counted).
#[test]
fn format_library_rules_run_as_kube_runs_them() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crd-oracle");
    let Some(oracle) = go_oracle::module_built_or_skip(&source, "crd-oracle") else {
        return;
    };
    let formats = [
        "dns1123Label",
        "dns1123Subdomain",
        "dns1035Label",
        "qualifiedName",
        "dns1123LabelPrefix",
        "dns1123SubdomainPrefix",
        "dns1035LabelPrefix",
        "labelValue",
        "uri",
        "uuid",
        "byte",
        "date",
        "datetime",
    ];
    let mut rules: Vec<Value> = formats
        .iter()
        .map(|f| {
            json!({"rule": format!("!format.{f}().validate(self.name).hasValue()"),
                "messageExpression": format!("format.{f}().validate(self.name).value()[0]")})
        })
        .collect();
    rules.push(json!({"rule": "format.named(self.name).hasValue()"}));
    rules.push(json!({"rule": "format.named('dns1035Label').value().validate(self.name) == optional.none()"}));
    rules.push(json!({"rule": "format.dns1123Label().validate(self.name).orValue([]).size() < 2"}));
    rules.push(json!({"rule": "ip.isCanonical(self.name)"}));
    rules.push(json!({"rule": "ip(self.name).family() == 4"}));
    rules.push(json!({"rule": "quantity(self.name).asInteger() == 1"}));
    rules.push(json!({"rule": "cidr(self.name + '/8').prefixLength() == 8"}));
    rules.push(json!({"rule": "semver(self.name).major() == 1"}));
    rules.push(json!({"rule": "url(self.name).getScheme() == 'https'"}));
    rules.push(json!({"rule": "quantity(self.name).sign() == 1"}));
    rules.push(json!({"rule": "sign(quantity(self.name)) == 1"}));
    rules.push(json!({"rule": "cidr(self.name).containsIP(1)"}));
    rules.push(json!({"rule": "url(self.name).getQuery().size() > 0"}));
    rules.push(json!({"rule": "semver(self.name, true).major() == 1"}));
    rules.push(json!({"rule": "ip(self.name).isLessThan(ip(self.name))"}));
    rules.push(json!({"rule": "format.named(self.name).value().validate(1).hasValue()"}));
    let names = [
        "my-name",
        "Not_A_Name",
        "my-name-",
        "1abc",
        "a.b/c",
        "https://x.io/p?q=1",
        "relative",
        "123e4567-e89b-12d3-a456-426614174000",
        "aGVsbG8=",
        "2024-01-01",
        "2024-01-01T00:00:00Z",
        "dns1123Label",
        "",
        "127.0.0.1",
        "2001:db8::abcd",
        "2001:DB8::ABCD",
        "2001:db8::0:0:0:abcd",
        "::ffff:1.2.3.4",
        "fe80::1%eth0",
        "1.2.3",
        "1Ki",
        "1.2.3-rc.1",
    ];
    let crds: Vec<Value> = rules
        .iter()
        .map(|rule| {
            crd_of(json!({"type": "object", "x-kubernetes-validations": [rule],
                "properties": {"name": {"type": "string", "maxLength": 100}}}))
        })
        .collect();
    let mut mismatches = Vec::new();
    let mut runs = Vec::new();
    for i in accepted_alike(&oracle, &rules, &crds, &mut mismatches) {
        let (rule, crd) = (&rules[i], &crds[i]);
        runs.extend(names.iter().map(|n| (rule, crd, json!({"name": n}))));
    }
    let asked: Vec<Value> = runs
        .iter()
        .map(|(_, crd, spec)| json!({"crd": crd, "object": custom_resource(spec)}))
        .collect();
    let answers = go_oracle::ask(&oracle, &asked);
    let mut failed = 0;
    let mut worded_apart = 0;
    for ((rule, crd, spec), answer) in runs.iter().zip(&answers) {
        let (go, sim) = (go_refusal(answer), sim_update_verdict(crd, None, spec));
        failed += usize::from(go.is_some());
        if go == sim {
            continue;
        }
        // An IP, CIDR or version neither accepts: kcp-sim's parsers word why in their own
        // words, not in those of Go's netip or blang/semver.
        let text = rule["rule"].as_str().unwrap_or_default();
        let parses = ["ip(", "ip.isCanonical(", "cidr(", "semver("];
        if go.is_some() && sim.is_some() && parses.iter().any(|p| text.contains(p)) {
            worded_apart += 1;
            continue;
        }
        mismatches.push(format!(
            "{rule} on {spec}\n  kube:    {go:?}\n  kcp-sim: {sim:?}"
        ));
    }
    println!(
        "{} rules, {} writes compared, {failed} refused ({worded_apart} worded apart)",
        rules.len(),
        runs.len()
    );
    assert_none_differ("format rules differ:", &mismatches);
    assert!(runs.len() >= 150, "too few rules compiled: {}", runs.len());
}
