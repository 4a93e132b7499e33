//! HorizontalPodAutoscalers served at `autoscaling/v1` beside the stored `autoscaling/v2`, as
//! kube-apiserver converts them: v1's `targetCPUUtilizationPercentage` is v2's CPU utilization
//! metric; every other metric, the scaling behavior, the status conditions and the other
//! current metrics travel in v1 as the `autoscaling.alpha.kubernetes.io/*` annotations, in v1's
//! metric shapes (`targetAverageValue`, `metricName`, ...) and, for the behavior, Go's field
//! names. A v1 object's decode defaults are v1's (one replica at least, 80% CPU).

use serde_json::{Map, Value, json};

use crate::object_meta::{set_annotation, take_json_annotation};

/// Where v1 keeps the metrics it has no field for.
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// Where v1 keeps the current values of those metrics.
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// Where v1 keeps the status conditions.
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// Where v1 keeps the scaling behavior.
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// Whether `group`/`kind` read or written at `version` needs converting.
pub fn converts(group: &str, kind: &str, version: &str) -> bool {
    group == "autoscaling" && kind == "HorizontalPodAutoscaler" && version == "v1"
}

/// `SetDefaults_HorizontalPodAutoscaler` of autoscaling/v1.
pub fn v1_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.entry("minReplicas").or_insert(json!(1));
        spec.entry("targetCPUUtilizationPercentage")
            .or_insert(json!(80));
    }
}

/// A JSON object written with its keys in the order given (Go writes struct fields in
/// declaration order), each value already JSON text, leaving out absent values.
fn ordered(entries: &[(&str, Option<String>)]) -> String {
    let fields: Vec<String> = entries
        .iter()
        .filter_map(|(key, value)| value.as_ref().map(|v| format!("{key:?}:{v}")))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// A value as JSON text.
fn text(value: Option<Value>) -> Option<String> {
    value.map(|v| v.to_string())
}

fn get(v: &Value, pointer: &str) -> Option<Value> {
    v.pointer(pointer).filter(|x| !x.is_null()).cloned()
}

/// A v2 metric (spec) in v1's shape, or `None` for the CPU utilization metric v1 has a field for.
fn metric_to_v1(metric: &Value) -> Option<String> {
    let kind = metric["type"].as_str().unwrap_or_default();
    let body = match kind {
        "Resource" | "ContainerResource" => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let source = &metric[key];
            ordered(&[
                ("name", text(get(source, "/name"))),
                ("container", text(get(source, "/container"))),
                (
                    "targetAverageUtilization",
                    text(get(source, "/target/averageUtilization")),
                ),
                (
                    "targetAverageValue",
                    text(get(source, "/target/averageValue")),
                ),
            ])
        }
        "Pods" => ordered(&[
            ("metricName", text(get(metric, "/pods/metric/name"))),
            (
                "targetAverageValue",
                text(get(metric, "/pods/target/averageValue")),
            ),
            ("selector", text(get(metric, "/pods/metric/selector"))),
        ]),
        "Object" => ordered(&[
            ("target", text(get(metric, "/object/describedObject"))),
            ("metricName", text(get(metric, "/object/metric/name"))),
            ("targetValue", text(get(metric, "/object/target/value"))),
            ("selector", text(get(metric, "/object/metric/selector"))),
            (
                "averageValue",
                text(get(metric, "/object/target/averageValue")),
            ),
        ]),
        "External" => ordered(&[
            ("metricName", text(get(metric, "/external/metric/name"))),
            (
                "metricSelector",
                text(get(metric, "/external/metric/selector")),
            ),
            ("targetValue", text(get(metric, "/external/target/value"))),
            (
                "targetAverageValue",
                text(get(metric, "/external/target/averageValue")),
            ),
        ]),
        _ => "{}".to_string(),
    };
    let field = field_of(kind);
    Some(ordered(&[
        ("type", Some(json!(kind).to_string())),
        (field, Some(body)),
    ]))
}

/// The field of a metric of `kind` (`Resource` is under `resource`).
fn field_of(kind: &str) -> &'static str {
    match kind {
        "Pods" => "pods",
        "Object" => "object",
        "External" => "external",
        "ContainerResource" => "containerResource",
        _ => "resource",
    }
}

/// A v1 metric (from the annotation) in v2's shape.
fn metric_to_v2(metric: &Value) -> Value {
    let kind = metric["type"].as_str().unwrap_or_default();
    let source = &metric[field_of(kind)];
    let target = |pairs: &[(&str, &str)]| {
        let mut t = Map::new();
        for (from, to) in pairs {
            if let Some(v) = get(source, &format!("/{from}")) {
                t.insert((*to).into(), v);
            }
        }
        let type_ = if t.contains_key("averageUtilization") {
            "Utilization"
        } else if t.contains_key("averageValue") {
            "AverageValue"
        } else {
            "Value"
        };
        t.insert("type".into(), json!(type_));
        Value::Object(t)
    };
    let named = |name: &str, selector: &str| {
        let mut m = json!({"name": get(source, &format!("/{name}")).unwrap_or(json!(""))});
        if let Some(s) = get(source, &format!("/{selector}")) {
            m["selector"] = s;
        }
        m
    };
    let body = match kind {
        "Resource" | "ContainerResource" => {
            let mut body = json!({"name": source["name"],
                "target": target(&[("targetAverageUtilization", "averageUtilization"),
                                   ("targetAverageValue", "averageValue")])});
            if let Some(c) = get(source, "/container") {
                body["container"] = c;
            }
            body
        }
        "Pods" => json!({"metric": named("metricName", "selector"),
            "target": target(&[("targetAverageValue", "averageValue")])}),
        "Object" => json!({"describedObject": source["target"],
            "metric": named("metricName", "selector"),
            "target": target(&[("targetValue", "value"), ("averageValue", "averageValue")])}),
        _ => json!({"metric": named("metricName", "metricSelector"),
            "target": target(&[("targetValue", "value"), ("targetAverageValue", "averageValue")])}),
    };
    json!({"type": kind, field_of(kind): body})
}

fn is_cpu_utilization(metric: &Value) -> bool {
    metric["type"] == "Resource"
        && metric["resource"]["name"] == "cpu"
        && metric["resource"]["target"]["type"] == "Utilization"
}

/// The behavior as v1's annotation writes it: Go's field names, every field present.
fn behavior_to_v1(behavior: &Value) -> String {
    let rules = |rules: &Value| {
        if rules.is_null() {
            return "null".to_string();
        }
        let policies: Vec<String> = rules["policies"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                ordered(&[
                    ("Type", Some(p["type"].to_string())),
                    ("Value", Some(p["value"].to_string())),
                    ("PeriodSeconds", Some(p["periodSeconds"].to_string())),
                ])
            })
            .collect();
        ordered(&[
            (
                "StabilizationWindowSeconds",
                Some(rules["stabilizationWindowSeconds"].to_string()),
            ),
            ("SelectPolicy", Some(rules["selectPolicy"].to_string())),
            ("Policies", Some(format!("[{}]", policies.join(",")))),
            ("Tolerance", Some(rules["tolerance"].to_string())),
        ])
    };
    ordered(&[
        ("ScaleUp", Some(rules(&behavior["scaleUp"]))),
        ("ScaleDown", Some(rules(&behavior["scaleDown"]))),
    ])
}

/// v1's behavior annotation read back into v2's shape.
fn behavior_to_v2(annotation: &Value) -> Value {
    let rules = |rules: &Value| {
        if rules.is_null() {
            return Value::Null;
        }
        let mut out = Map::new();
        for (from, to) in [
            ("StabilizationWindowSeconds", "stabilizationWindowSeconds"),
            ("SelectPolicy", "selectPolicy"),
            ("Tolerance", "tolerance"),
        ] {
            if let Some(v) = get(rules, &format!("/{from}")) {
                out.insert(to.into(), v);
            }
        }
        let policies: Vec<Value> = rules["Policies"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| json!({"type": p["Type"], "value": p["Value"], "periodSeconds": p["PeriodSeconds"]}))
            .collect();
        out.insert("policies".into(), json!(policies));
        Value::Object(out)
    };
    let mut behavior = Map::new();
    for (from, to) in [("ScaleUp", "scaleUp"), ("ScaleDown", "scaleDown")] {
        let r = rules(&annotation[from]);
        if !r.is_null() {
            behavior.insert(to.into(), r);
        }
    }
    Value::Object(behavior)
}

/// A v2 current metric (status) in v1's shape, or `None` for CPU utilization.
fn current_to_v1(metric: &Value) -> Option<String> {
    let kind = metric["type"].as_str().unwrap_or_default();
    let body = match kind {
        "Resource" | "ContainerResource" => {
            let source = &metric[field_of(kind)];
            ordered(&[
                ("name", text(get(source, "/name"))),
                ("container", text(get(source, "/container"))),
                (
                    "currentAverageUtilization",
                    text(get(source, "/current/averageUtilization")),
                ),
                (
                    "currentAverageValue",
                    text(get(source, "/current/averageValue")),
                ),
            ])
        }
        "Pods" => ordered(&[
            ("metricName", text(get(metric, "/pods/metric/name"))),
            (
                "currentAverageValue",
                text(get(metric, "/pods/current/averageValue")),
            ),
            ("selector", text(get(metric, "/pods/metric/selector"))),
        ]),
        "Object" => ordered(&[
            ("target", text(get(metric, "/object/describedObject"))),
            ("metricName", text(get(metric, "/object/metric/name"))),
            ("currentValue", text(get(metric, "/object/current/value"))),
            ("selector", text(get(metric, "/object/metric/selector"))),
            (
                "averageValue",
                text(get(metric, "/object/current/averageValue")),
            ),
        ]),
        _ => ordered(&[
            ("metricName", text(get(metric, "/external/metric/name"))),
            (
                "metricSelector",
                text(get(metric, "/external/metric/selector")),
            ),
            ("currentValue", text(get(metric, "/external/current/value"))),
            (
                "currentAverageValue",
                text(get(metric, "/external/current/averageValue")),
            ),
        ]),
    };
    Some(ordered(&[
        ("type", Some(json!(kind).to_string())),
        (field_of(kind), Some(body)),
    ]))
}

/// A stored (v2) autoscaler as v1 serves it.
pub fn to_v1(obj: &mut Value) {
    obj["apiVersion"] = json!("autoscaling/v1");
    let spec = obj["spec"].take();
    let metrics: Vec<Value> = spec["metrics"].as_array().cloned().unwrap_or_default();
    let cpu = metrics.iter().find(|m| is_cpu_utilization(m));
    let others: Vec<String> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .filter_map(metric_to_v1)
        .collect();
    let mut v1 = Map::new();
    for key in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(v) = get(&spec, &format!("/{key}")) {
            v1.insert(key.into(), v);
        }
    }
    if let Some(cpu) = cpu {
        v1.insert(
            "targetCPUUtilizationPercentage".into(),
            cpu["resource"]["target"]["averageUtilization"].clone(),
        );
    }
    obj["spec"] = Value::Object(v1);
    if !others.is_empty() {
        set_annotation(obj, METRICS, format!("[{}]", others.join(",")));
    }
    if let Some(behavior) = get(&spec, "/behavior") {
        set_annotation(obj, BEHAVIOR, behavior_to_v1(&behavior));
    }
    status_to_v1(obj);
}

fn status_to_v1(obj: &mut Value) {
    let status = obj["status"].take();
    let current: Vec<Value> = status["currentMetrics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let cpu = current.iter().find(|m| {
        m["type"] == "Resource"
            && m["resource"]["name"] == "cpu"
            && !m["resource"]["current"]["averageUtilization"].is_null()
    });
    let others: Vec<String> = current
        .iter()
        .filter(|m| cpu.is_none_or(|c| c != *m))
        .filter_map(current_to_v1)
        .collect();
    let mut v1 = Map::new();
    for key in ["observedGeneration", "lastScaleTime"] {
        if let Some(v) = get(&status, &format!("/{key}")) {
            v1.insert(key.into(), v);
        }
    }
    v1.insert(
        "currentReplicas".into(),
        get(&status, "/currentReplicas").unwrap_or(json!(0)),
    );
    v1.insert(
        "desiredReplicas".into(),
        get(&status, "/desiredReplicas").unwrap_or(json!(0)),
    );
    if let Some(cpu) = cpu {
        v1.insert(
            "currentCPUUtilizationPercentage".into(),
            cpu["resource"]["current"]["averageUtilization"].clone(),
        );
    }
    obj["status"] = Value::Object(v1);
    if !others.is_empty() {
        set_annotation(obj, CURRENT_METRICS, format!("[{}]", others.join(",")));
    }
    if let Some(conditions) =
        get(&status, "/conditions").filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
    {
        set_annotation(obj, CONDITIONS, conditions.to_string());
    }
}

/// A v1 autoscaler (as written) in the stored v2 shape.
pub fn to_v2(obj: &mut Value) {
    obj["apiVersion"] = json!("autoscaling/v2");
    let spec = obj["spec"].take();
    let mut v2 = Map::new();
    for key in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(v) = get(&spec, &format!("/{key}")) {
            v2.insert(key.into(), v);
        }
    }
    let mut metrics: Vec<Value> = take_json_annotation(obj, METRICS)
        .and_then(|m| m.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(metric_to_v2)
        .collect();
    if let Some(cpu) = get(&spec, "/targetCPUUtilizationPercentage") {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": cpu}}}));
    }
    if !metrics.is_empty() {
        v2.insert("metrics".into(), json!(metrics));
    }
    if let Some(behavior) = take_json_annotation(obj, BEHAVIOR) {
        v2.insert("behavior".into(), behavior_to_v2(&behavior));
    }
    obj["spec"] = Value::Object(v2);
    let status = obj["status"].take();
    let mut v2_status = Map::new();
    for key in [
        "observedGeneration",
        "lastScaleTime",
        "currentReplicas",
        "desiredReplicas",
    ] {
        if let Some(v) = get(&status, &format!("/{key}")) {
            v2_status.insert(key.into(), v);
        }
    }
    if let Some(conditions) = take_json_annotation(obj, CONDITIONS) {
        v2_status.insert("conditions".into(), conditions);
    }
    take_json_annotation(obj, CURRENT_METRICS);
    if !status.is_null() {
        obj["status"] = Value::Object(v2_status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What kube-apiserver v1.34.2 served at v1 for a v2 autoscaler with a memory and a CPU
    /// metric and a scale-down window (conformance kubectl-cluster/autoscalers-at-both-versions).
    #[test]
    fn a_v2_autoscaler_reads_at_v1_as_kube_writes_it() {
        let mut hpa = json!({"metadata": {"name": "mem"}, "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 4,
            "metrics": [
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}],
            "behavior": {
                "scaleDown": {"policies": [{"periodSeconds": 15, "type": "Percent", "value": 100}], "selectPolicy": "Max", "stabilizationWindowSeconds": 60},
                "scaleUp": {"policies": [{"periodSeconds": 15, "type": "Pods", "value": 4}, {"periodSeconds": 15, "type": "Percent", "value": 100}], "selectPolicy": "Max", "stabilizationWindowSeconds": 0}}},
            "status": {"currentMetrics": null, "desiredReplicas": 0}});
        to_v1(&mut hpa);
        assert_eq!(hpa["spec"]["targetCPUUtilizationPercentage"], 70);
        assert_eq!(
            hpa["status"],
            json!({"currentReplicas": 0, "desiredReplicas": 0})
        );
        let annotations = &hpa["metadata"]["annotations"];
        assert_eq!(
            annotations[METRICS],
            "[{\"type\":\"Resource\",\"resource\":{\"name\":\"memory\",\"targetAverageValue\":\"100Mi\"}}]"
        );
        assert_eq!(
            annotations[BEHAVIOR],
            "{\"ScaleUp\":{\"StabilizationWindowSeconds\":0,\"SelectPolicy\":\"Max\",\"Policies\":[{\"Type\":\"Pods\",\"Value\":4,\"PeriodSeconds\":15},{\"Type\":\"Percent\",\"Value\":100,\"PeriodSeconds\":15}],\"Tolerance\":null},\"ScaleDown\":{\"StabilizationWindowSeconds\":60,\"SelectPolicy\":\"Max\",\"Policies\":[{\"Type\":\"Percent\",\"Value\":100,\"PeriodSeconds\":15}],\"Tolerance\":null}}"
        );
    }

    #[test]
    fn a_v1_autoscaler_with_a_metrics_annotation_is_stored_with_both_metrics() {
        let mut hpa = json!({"metadata": {"name": "v1ann", "annotations": {METRICS:
            "[{\"type\":\"Resource\",\"resource\":{\"name\":\"memory\",\"targetAverageValue\":\"100Mi\"}}]"}},
            "spec": {"maxReplicas": 4, "minReplicas": 1, "targetCPUUtilizationPercentage": 60}});
        to_v2(&mut hpa);
        assert!(hpa["metadata"].get("annotations").is_none());
        assert_eq!(
            hpa["spec"]["metrics"],
            json!([
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}])
        );
    }

    #[test]
    fn a_round_trip_through_v1_keeps_every_metric_kind() {
        let spec = json!({"maxReplicas": 3, "metrics": [
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
            {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "5"}}}]});
        let mut hpa = json!({"metadata": {}, "spec": spec.clone()});
        to_v1(&mut hpa);
        to_v2(&mut hpa);
        assert_eq!(hpa["spec"], spec);
    }
}
