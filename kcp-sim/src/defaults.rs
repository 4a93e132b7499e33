//! kube-apiserver's defaulting of a Pod, Deployment, ReplicaSet or StatefulSet when its body is
//! decoded (`SetObjectDefaults_Pod`, `SetObjectDefaults_Deployment`, ...): a workload's replicas,
//! strategy, revision history and progress deadline (a StatefulSet's pod management and volume
//! claim retention), and the common defaults of a pod spec (containers, ports, probes,
//! environment field references, volumes), with the empty structs Go writes (`resources: {}`,
//! the template's `metadata: {}`). A Pod also gets service links and requests from its limits.

use serde_json::{Map, Value, json};

/// The object at `key` of `map`, made an empty one when it is missing or null.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    let entry = map.entry(key).or_insert_with(|| json!({}));
    if entry.is_null() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

/// Sets `key` to `value` when it is missing or null.
fn default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// Sets `key` to `value` when it is missing, null, zero or empty (Go's zero value).
fn default_zero(map: &mut Map<String, Value>, key: &str, value: Value) {
    let zero = match map.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(_) => false,
    };
    if zero {
        map.insert(key.to_string(), value);
    }
}

/// The objects of the list at `key` of `map`.
fn items<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// `SetObjectDefaults_Deployment`.
pub fn deployment(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    default(spec, "replicas", json!(1));
    if let Some(strategy) = object_at(spec, "strategy") {
        default_zero(strategy, "type", json!("RollingUpdate"));
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = object_at(strategy, "rollingUpdate")
        {
            default(rolling, "maxUnavailable", json!("25%"));
            default(rolling, "maxSurge", json!("25%"));
        }
    }
    default(spec, "revisionHistoryLimit", json!(10));
    default(spec, "progressDeadlineSeconds", json!(600));
    pod_template(spec);
}

/// `SetObjectDefaults_ReplicaSet`: its replicas and its pod template's common defaults.
pub fn replica_set(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    default(spec, "replicas", json!(1));
    pod_template(spec);
}

/// `SetObjectDefaults_Job`: completions and parallelism, backoff limit, completion mode,
/// suspension and pod replacement policy, and its pod template's common defaults.
pub fn job(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    if spec.get("completions").is_none_or(Value::is_null)
        && spec.get("parallelism").is_none_or(Value::is_null)
    {
        spec.insert("completions".into(), json!(1));
    }
    default(spec, "parallelism", json!(1));
    default_zero(spec, "completionMode", json!("NonIndexed"));
    let per_index = spec
        .get("backoffLimitPerIndex")
        .is_some_and(|v| !v.is_null());
    let indexed = spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    default(
        spec,
        "backoffLimit",
        json!(if indexed && per_index {
            i64::from(i32::MAX)
        } else {
            6
        }),
    );
    default(spec, "suspend", json!(false));
    let failure_policy = spec.get("podFailurePolicy").is_some_and(|v| !v.is_null());
    default(
        spec,
        "podReplacementPolicy",
        json!(if failure_policy {
            "Failed"
        } else {
            "TerminatingOrFailed"
        }),
    );
    pod_template(spec);
}

/// `SetObjectDefaults_CronJob`: concurrency, suspension and history limits, and the common
/// defaults of its job template's pod template (not the Job defaults: those come when a Job is
/// made from it).
pub fn cron_job(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    default_zero(spec, "concurrencyPolicy", json!("Allow"));
    default(spec, "suspend", json!(false));
    default(spec, "successfulJobsHistoryLimit", json!(3));
    default(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(job_spec) = object_at(spec, "jobTemplate").and_then(|t| object_at(t, "spec")) {
        pod_template(job_spec);
    }
}

/// The pod template at `template` of a workload's spec: its `metadata: {}` and pod spec defaults.
fn pod_template(spec: &mut Map<String, Value>) {
    if let Some(template) = object_at(spec, "template") {
        object_at(template, "metadata");
        if let Some(pod) = object_at(template, "spec") {
            pod_spec(pod);
        }
    }
}

/// `SetObjectDefaults_Pod`: the pod spec's common defaults, service links on, and each
/// container's requests taken from its limits where it names none (`SetDefaults_Pod`).
pub fn pod(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    pod_spec(spec);
    default(spec, "enableServiceLinks", json!(true));
    for key in ["initContainers", "containers"] {
        items(spec, key).for_each(requests_from_limits);
    }
}

/// A container's limits copied into its requests for each resource it requests nothing of.
fn requests_from_limits(c: &mut Map<String, Value>) {
    let Some(resources) = c.get_mut("resources").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if limits.is_empty() {
        return;
    }
    if let Some(requests) = object_at(resources, "requests") {
        for (name, quantity) in limits {
            requests.entry(name).or_insert(quantity);
        }
    }
}

/// `SetObjectDefaults_StatefulSet`: its replicas, pod management, update strategy, revision
/// history and volume claim retention, and its pod template's common defaults.
pub fn stateful_set(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    default(spec, "replicas", json!(1));
    default_zero(spec, "podManagementPolicy", json!("OrderedReady"));
    if let Some(strategy) = object_at(spec, "updateStrategy") {
        default_zero(strategy, "type", json!("RollingUpdate"));
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = object_at(strategy, "rollingUpdate")
        {
            default(rolling, "partition", json!(0));
        }
    }
    default(spec, "revisionHistoryLimit", json!(10));
    if let Some(retention) = object_at(spec, "persistentVolumeClaimRetentionPolicy") {
        default_zero(retention, "whenDeleted", json!("Retain"));
        default_zero(retention, "whenScaled", json!("Retain"));
    }
    pod_template(spec);
}

/// `SetDefaults_DaemonSet`: a rolling update of one pod at a time, ten revisions kept, and its
/// pod template's common defaults.
pub fn daemon_set(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    if let Some(strategy) = object_at(spec, "updateStrategy") {
        default_zero(strategy, "type", json!("RollingUpdate"));
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = object_at(strategy, "rollingUpdate")
        {
            default(rolling, "maxUnavailable", json!(1));
            default(rolling, "maxSurge", json!(0));
        }
    }
    default(spec, "revisionHistoryLimit", json!(10));
    pod_template(spec);
}

/// `SetDefaults_NetworkPolicy`: the policy types its rules imply (`Ingress`, and `Egress` when
/// it has egress rules), and `TCP` for each port without a protocol.
pub fn network_policy(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    for direction in ["ingress", "egress"] {
        for rule in items(spec, direction) {
            for port in items(rule, "ports") {
                default(port, "protocol", json!("TCP"));
            }
        }
    }
    let egress = spec
        .get("egress")
        .and_then(Value::as_array)
        .is_some_and(|rules| !rules.is_empty());
    let typed = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_some_and(|types| !types.is_empty());
    if !typed {
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

/// `SetDefaults_HorizontalPodAutoscaler` (autoscaling/v2): one replica at least, and a CPU
/// utilization target of 80% when no metric is given.
pub fn horizontal_pod_autoscaler(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    default(spec, "minReplicas", json!(1));
    let measured = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_some_and(|metrics| !metrics.is_empty());
    if !measured {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    // `SetDefaults_HorizontalPodAutoscalerBehavior`: a behavior given is completed.
    if let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let scale_up = json!([{"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}]);
        let scale_down = json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]);
        for (key, policies, window) in [
            ("scaleUp", scale_up, Some(0)),
            ("scaleDown", scale_down, None),
        ] {
            let rules = behavior.entry(key).or_insert_with(|| json!({}));
            let Some(rules) = rules.as_object_mut() else {
                continue;
            };
            if rules
                .get("policies")
                .and_then(Value::as_array)
                .is_none_or(|p| p.is_empty())
            {
                rules.insert("policies".into(), policies);
            }
            rules.entry("selectPolicy").or_insert(json!("Max"));
            if let Some(window) = window {
                rules
                    .entry("stabilizationWindowSeconds")
                    .or_insert(json!(window));
            }
        }
    }
}

/// `SetDefaults_PersistentVolumeClaim`: a filesystem volume, and `Pending` until bound.
pub fn persistent_volume_claim(obj: &mut Value) {
    if let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) {
        default(spec, "volumeMode", json!("Filesystem"));
    }
    if let Some(status) = obj.as_object_mut().and_then(|o| object_at(o, "status")) {
        default_zero(status, "phase", json!("Pending"));
    }
}

/// `SetDefaults_ReplicationController`: one replica, and the pod template's labels as the
/// selector and as the controller's own labels where those are empty.
pub fn replication_controller(obj: &mut Value) {
    let template_labels = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if let Some(labels) = template_labels {
        let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(Map::is_empty);
        if let Some(meta) = object_at(root, "metadata")
            && empty(meta.get("labels"))
        {
            meta.insert("labels".into(), labels.clone());
        }
        if let Some(spec) = object_at(root, "spec")
            && empty(spec.get("selector"))
        {
            spec.insert("selector".into(), labels);
        }
    }
    if let Some(spec) = object_at(root, "spec") {
        default(spec, "replicas", json!(1));
        if spec.get("template").is_some_and(Value::is_object) {
            pod_template(spec);
        }
    }
}

/// `SetObjectDefaults_PodTemplate`: its template's `metadata: {}` and pod spec defaults.
pub fn pod_template_object(obj: &mut Value) {
    if let Some(root) = obj.as_object_mut() {
        pod_template(root);
    }
}

/// `SetDefaults_LimitRangeItem`: a container limit range's default limits from its maximums,
/// and its default requests from those limits, else from its minimums.
pub fn limit_range(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    for item in items(spec, "limits") {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let resources = |item: &Map<String, Value>, key: &str| {
            item.get(key)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let mut limits = resources(item, "default");
        let mut requests = resources(item, "defaultRequest");
        for (name, value) in resources(item, "max") {
            limits.entry(name).or_insert(value);
        }
        for source in [&limits, &resources(item, "min")] {
            for (name, value) in source {
                requests
                    .entry(name.clone())
                    .or_insert_with(|| value.clone());
            }
        }
        for (key, values) in [("default", limits), ("defaultRequest", requests)] {
            if !values.is_empty() {
                item.insert(key.into(), Value::Object(values));
            }
        }
    }
}

/// `SetDefaults_EndpointPort` of `core/v1` Endpoints: each port's protocol is TCP.
pub fn endpoints(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    for subset in items(root, "subsets") {
        items(subset, "ports").for_each(|port| default_zero(port, "protocol", json!("TCP")));
    }
}

/// `SetObjectDefaults_EndpointSlice`: each port named (`""`) and TCP; each endpoint's
/// `conditions`, a struct Go always writes (`{}`).
pub fn endpoint_slice(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    for endpoint in items(root, "endpoints") {
        object_at(endpoint, "conditions");
    }
    for port in items(root, "ports") {
        default(port, "name", json!(""));
        default(port, "protocol", json!("TCP"));
    }
}

/// `SetDefaults_StorageClass`: volumes are deleted with their claims and bound at once.
pub fn storage_class(obj: &mut Value) {
    if let Some(class) = obj.as_object_mut() {
        default(class, "reclaimPolicy", json!("Delete"));
        default(class, "volumeBindingMode", json!("Immediate"));
    }
}

/// `SetDefaults_PersistentVolume`: a retained filesystem volume, `Pending` until it is
/// available, and its source's defaults.
pub fn persistent_volume(obj: &mut Value) {
    if let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) {
        default_zero(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
        default(spec, "volumeMode", json!("Filesystem"));
        host_path(spec);
    }
    if let Some(status) = obj.as_object_mut().and_then(|o| object_at(o, "status")) {
        default_zero(status, "phase", json!("Pending"));
    }
}

/// `SetDefaults_HostPathVolumeSource` of a volume source: a host path of unchecked type.
fn host_path(source: &mut Map<String, Value>) {
    if let Some(host_path) = source.get_mut("hostPath").and_then(Value::as_object_mut) {
        default(host_path, "type", json!(""));
    }
}

/// `SetDefaults_ValidatingWebhook` / `SetDefaults_MutatingWebhook` for each webhook of a
/// configuration: failure and match policies, empty selectors, a timeout, rules of any scope,
/// a service's port (and, when `mutating`, no reinvocation).
pub fn webhook_configuration(obj: &mut Value, mutating: bool) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    for webhook in items(root, "webhooks") {
        default(webhook, "failurePolicy", json!("Fail"));
        default(webhook, "matchPolicy", json!("Equivalent"));
        default(webhook, "namespaceSelector", json!({}));
        default(webhook, "objectSelector", json!({}));
        default(webhook, "timeoutSeconds", json!(10));
        if mutating {
            default(webhook, "reinvocationPolicy", json!("Never"));
        }
        items(webhook, "rules").for_each(|rule| default(rule, "scope", json!("*")));
        if let Some(service) = webhook
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            default(service, "port", json!(443));
        }
    }
}

/// `SetDefaults_MatchResources`: a policy's or binding's match criteria match equivalent
/// versions, with empty selectors and rules of any scope.
fn match_resources(criteria: &mut Map<String, Value>) {
    default(criteria, "matchPolicy", json!("Equivalent"));
    default(criteria, "namespaceSelector", json!({}));
    default(criteria, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        items(criteria, key).for_each(|rule| default(rule, "scope", json!("*")));
    }
}

/// `SetDefaults_ValidatingAdmissionPolicySpec`: it fails closed, and its match constraints'
/// defaults.
pub fn validating_admission_policy(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|o| object_at(o, "spec")) else {
        return;
    };
    default(spec, "failurePolicy", json!("Fail"));
    if let Some(criteria) = spec
        .get_mut("matchConstraints")
        .and_then(Value::as_object_mut)
    {
        match_resources(criteria);
    }
}

/// A binding's match resources, when it has them.
pub fn validating_admission_policy_binding(obj: &mut Value) {
    if let Some(criteria) = obj
        .pointer_mut("/spec/matchResources")
        .and_then(Value::as_object_mut)
    {
        match_resources(criteria);
    }
}

/// `SetDefaults_PriorityClass`: `PreemptLowerPriority` unless the class says otherwise.
pub fn priority_class(obj: &mut Value) {
    if let Some(class) = obj.as_object_mut() {
        default(class, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
}

/// `SetDefaults_PodSpec` and the defaults of what a pod spec holds.
fn pod_spec(pod: &mut Map<String, Value>) {
    default_zero(pod, "dnsPolicy", json!("ClusterFirst"));
    default_zero(pod, "restartPolicy", json!("Always"));
    default(pod, "securityContext", json!({}));
    default(pod, "terminationGracePeriodSeconds", json!(30));
    default_zero(pod, "schedulerName", json!("default-scheduler"));
    for key in ["initContainers", "containers"] {
        items(pod, key).for_each(container);
    }
    items(pod, "volumes").for_each(volume);
}

/// `SetDefaults_Container` and the defaults of its ports, environment, probes and lifecycle
/// hooks; its `resources` is written `{}` when empty.
fn container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
    let policy = if image_tag(image) == "latest" {
        "Always"
    } else {
        "IfNotPresent"
    };
    default_zero(c, "imagePullPolicy", json!(policy));
    default_zero(c, "terminationMessagePath", json!("/dev/termination-log"));
    default_zero(c, "terminationMessagePolicy", json!("File"));
    default(c, "resources", json!({}));
    for port in items(c, "ports") {
        default_zero(port, "protocol", json!("TCP"));
    }
    for env in items(c, "env") {
        if let Some(field_ref) = env
            .get_mut("valueFrom")
            .and_then(|v| v.get_mut("fieldRef"))
            .and_then(Value::as_object_mut)
        {
            default_zero(field_ref, "apiVersion", json!("v1"));
        }
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = c.get_mut(key).and_then(Value::as_object_mut) {
            default_zero(probe, "timeoutSeconds", json!(1));
            default_zero(probe, "periodSeconds", json!(10));
            default_zero(probe, "successThreshold", json!(1));
            default_zero(probe, "failureThreshold", json!(3));
            http_get(probe);
            if let Some(grpc) = probe.get_mut("grpc").and_then(Value::as_object_mut) {
                default(grpc, "service", json!(""));
            }
        }
    }
    if let Some(lifecycle) = c.get_mut("lifecycle").and_then(Value::as_object_mut) {
        for key in ["postStart", "preStop"] {
            if let Some(hook) = lifecycle.get_mut(key).and_then(Value::as_object_mut) {
                http_get(hook);
            }
        }
    }
}

/// `SetDefaults_HTTPGetAction` of the `httpGet` of a probe or hook.
fn http_get(handler: &mut Map<String, Value>) {
    if let Some(get) = handler.get_mut("httpGet").and_then(Value::as_object_mut) {
        default_zero(get, "path", json!("/"));
        default_zero(get, "scheme", json!("HTTP"));
    }
}

/// `SetDefaults_Volume` (no source: an emptyDir) and the defaults of its source.
fn volume(v: &mut Map<String, Value>) {
    if v.keys().all(|k| k == "name") {
        v.insert("emptyDir".into(), json!({}));
    }
    for key in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(source) = v.get_mut(key).and_then(Value::as_object_mut) {
            // 0644, the default mode of files of these volumes.
            default(source, "defaultMode", json!(420));
        }
    }
    if let Some(items) = v
        .get_mut("downwardAPI")
        .and_then(|d| d.get_mut("items"))
        .and_then(Value::as_array_mut)
    {
        for field_ref in items
            .iter_mut()
            .filter_map(|i| i.get_mut("fieldRef"))
            .filter_map(Value::as_object_mut)
        {
            default_zero(field_ref, "apiVersion", json!("v1"));
        }
    }
    if let Some(sources) = v
        .get_mut("projected")
        .and_then(|p| p.get_mut("sources"))
        .and_then(Value::as_array_mut)
    {
        for token in sources
            .iter_mut()
            .filter_map(|s| s.get_mut("serviceAccountToken"))
            .filter_map(Value::as_object_mut)
        {
            default(token, "expirationSeconds", json!(3600));
        }
    }
    host_path(v);
}

/// The tag `parsers.ParseImageName` finds in an image reference: its own, `latest` when it has
/// neither a tag nor a digest, empty when it has only a digest or does not parse.
fn image_tag(image: &str) -> &str {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let components: Vec<&str> = name.split('/').collect();
    let Some((last, path)) = components.split_last() else {
        return "";
    };
    let (repository, tag) = match last.split_once(':') {
        Some((repository, tag)) => (repository, Some(tag)),
        None => (*last, None),
    };
    // The first component is a registry when it looks like a host; the others must be
    // lower case and non-empty.
    let registry = path
        .first()
        .is_some_and(|c| c.contains('.') || c.contains(':') || *c == "localhost");
    let parses = path
        .iter()
        .skip(usize::from(registry))
        .chain(std::iter::once(&repository))
        .all(|c| !c.is_empty() && !c.chars().any(|ch| ch.is_ascii_uppercase()))
        && tag.is_none_or(|t| !t.is_empty());
    match (parses, tag, digest) {
        (false, _, _) => "",
        (true, Some(tag), _) => tag,
        (true, None, Some(_)) => "",
        (true, None, None) => "latest",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_gets_kube_apiservers_defaults() {
        let mut d = json!({"spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx",
                    "ports": [{"containerPort": 80}]}]}}}});
        deployment(&mut d);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
        let pod = &d["spec"]["template"]["spec"];
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["terminationGracePeriodSeconds"], 30);
        assert_eq!(pod["securityContext"], json!({}));
        let c = &pod["containers"][0];
        assert_eq!(c["imagePullPolicy"], "Always");
        assert_eq!(c["resources"], json!({}));
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(c["terminationMessagePolicy"], "File");
    }

    #[test]
    fn a_recreate_strategy_gets_no_rolling_update() {
        let mut d = json!({"spec": {"strategy": {"type": "Recreate"}}});
        deployment(&mut d);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn the_pull_policy_follows_the_image_tag() {
        assert_eq!(image_tag("nginx"), "latest");
        assert_eq!(image_tag("nginx:1.25"), "1.25");
        assert_eq!(image_tag("registry:5000/team/app"), "latest");
        assert_eq!(image_tag("registry:5000/team/app:v2"), "v2");
        assert_eq!(image_tag("nginx@sha256:abc"), "");
        assert_eq!(image_tag("nginx:latest@sha256:abc"), "latest");
        assert_eq!(image_tag("Nginx"), "");
        assert_eq!(image_tag("Team/app"), "");
        assert_eq!(image_tag("Registry.example.com/app"), "latest");
        assert_eq!(image_tag(""), "");
    }

    #[test]
    fn a_volume_without_a_source_is_an_empty_dir() {
        let mut pod =
            json!({"volumes": [{"name": "scratch"}, {"name": "s", "secret": {"secretName": "x"}}]});
        if let Some(p) = pod.as_object_mut() {
            pod_spec(p);
        }
        assert_eq!(pod["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(pod["volumes"][1]["secret"]["defaultMode"], 420);
    }
    #[test]
    fn a_replication_controller_takes_its_selector_and_labels_from_its_template() {
        let mut rc = json!({"metadata": {"name": "legacy"}, "spec": {"template": {
            "metadata": {"labels": {"app": "legacy"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}});
        replication_controller(&mut rc);
        assert_eq!(rc["spec"]["selector"], json!({"app": "legacy"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "legacy"}));
        assert_eq!(rc["spec"]["replicas"], 1);
    }

    #[test]
    fn a_container_limit_range_defaults_limits_from_its_maximum_and_requests_from_its_limits() {
        let mut lr = json!({"spec": {"limits": [{"type": "Container",
            "max": {"cpu": "1"}, "min": {"cpu": "100m", "memory": "64Mi"}}]}});
        limit_range(&mut lr);
        let item = &lr["spec"]["limits"][0];
        assert_eq!(item["default"], json!({"cpu": "1"}));
        assert_eq!(
            item["defaultRequest"],
            json!({"cpu": "1", "memory": "64Mi"})
        );
    }

    #[test]
    fn a_pod_limit_range_gets_no_container_defaults() {
        let mut lr = json!({"spec": {"limits": [{"type": "Pod", "max": {"cpu": "4"}}]}});
        limit_range(&mut lr);
        assert!(lr["spec"]["limits"][0].get("default").is_none());
    }
}
