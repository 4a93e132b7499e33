//! The `LimitRanger` admission plugin's checks, after its defaults ([`crate::limit_ranges`]): a
//! new pod's containers (init containers too) against each Container-type range's `min`, `max`
//! and `maxLimitRequestRatio`, the pod's sums against the Pod-type ones, and a claim's
//! requested storage (on create and update) against the PersistentVolumeClaim-type ones. The
//! first range that fails refuses the write with kube's `403` and its words; its failures are
//! listed together (`[..., ...]`). A range's resources are checked in name order (kube's is Go's
//! map order).

use serde_json::Value;

use crate::pod_resources::{ResourceList, list_at, pod_total};
use crate::quantity::Quantity;

/// One bound of a range: the kind of object it applies to (`Container`, `Pod`,
/// `PersistentVolumeClaim`), the resource and the enforced amount.
struct Bound<'a> {
    kind: &'a str,
    resource: &'a str,
    enforced: &'a Quantity,
}

impl Bound<'_> {
    fn words(&self, what: &str) -> String {
        format!(
            "{what} {} usage per {} is {}",
            self.resource,
            self.kind,
            self.enforced.to_text()
        )
    }

    /// `<what> <resource> usage per <kind> is <enforced>, but <which> is <found>`.
    fn but(&self, what: &str, which: &str, found: &Quantity) -> String {
        format!("{}, but {which} is {}", self.words(what), found.to_text())
    }

    /// `minConstraint`.
    fn min(&self, requests: &ResourceList, limits: &ResourceList) -> Option<String> {
        let Some(request) = requests.get(self.resource) else {
            return Some(format!(
                "{}.  No request is specified",
                self.words("minimum")
            ));
        };
        let below = |q: &Quantity| q.compare(self.enforced).is_lt();
        if below(request) {
            return Some(self.but("minimum", "request", request));
        }
        let limit = limits.get(self.resource).filter(|l| below(l))?;
        Some(self.but("minimum", "limit", limit))
    }

    /// `maxConstraint`.
    fn max(&self, requests: &ResourceList, limits: &ResourceList) -> Option<String> {
        let Some(limit) = limits.get(self.resource) else {
            return Some(format!("{}.  No limit is specified", self.words("maximum")));
        };
        let above = |q: &Quantity| q.compare(self.enforced).is_gt();
        if above(limit) {
            return Some(self.but("maximum", "limit", limit));
        }
        self.max_request(requests)
            .filter(|_| requests.contains_key(self.resource))
    }

    /// `maxRequestConstraint` (a claim's storage).
    fn max_request(&self, requests: &ResourceList) -> Option<String> {
        let Some(request) = requests.get(self.resource) else {
            return Some(format!(
                "{}.  No request is specified",
                self.words("maximum")
            ));
        };
        request
            .compare(self.enforced)
            .is_gt()
            .then(|| self.but("maximum", "request", request))
    }

    /// `limitRequestRatioConstraint`: limit over request, compared in thousandths.
    fn ratio(&self, requests: &ResourceList, limits: &ResourceList) -> Option<String> {
        let head = format!(
            "{} max limit to request ratio per {} is {}",
            self.resource,
            self.kind,
            self.enforced.to_text()
        );
        let milli = |list: &ResourceList| list.get(self.resource).map_or(0, Quantity::milli_value);
        let (request, limit) = (milli(requests), milli(limits));
        if request == 0 {
            return Some(format!(
                "{head}, but no request is specified or request is 0"
            ));
        }
        if limit == 0 {
            return Some(format!("{head}, but no limit is specified or limit is 0"));
        }
        // Ratios of thousandths, as kube's float64 arithmetic makes them.
        #[allow(clippy::cast_precision_loss)]
        let observed = limit as f64 / request as f64;
        #[allow(clippy::cast_precision_loss)]
        let allowed = self.enforced.milli_value() as f64;
        (observed * 1000.0 > allowed)
            .then(|| format!("{head}, but provided ratio is {observed:.6}"))
    }
}

/// The failures of `requests` and `limits` (one container's, or a pod's sums) against one range
/// item of `kind`.
fn item_failures(
    item: &Value,
    kind: &str,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Vec<String> {
    let mut failures = Vec::new();
    for field in ["min", "max", "maxLimitRequestRatio"] {
        for (resource, enforced) in &list_at(item, &format!("/{field}")) {
            let bound = Bound {
                kind,
                resource,
                enforced,
            };
            failures.extend(match field {
                "min" => bound.min(requests, limits),
                "max" => bound.max(requests, limits),
                _ => bound.ratio(requests, limits),
            });
        }
    }
    failures
}

fn items<'a>(range: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> {
    range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |item| item.get("type").and_then(Value::as_str) == Some(kind))
}

/// A new pod's failures against one range (`PodValidateLimitFunc`).
fn pod_failures(range: &Value, pod: &Value) -> Vec<String> {
    let mut failures = Vec::new();
    for item in items(range, "Container") {
        for key in ["containers", "initContainers"] {
            let containers = pod
                .pointer(&format!("/spec/{key}"))
                .and_then(Value::as_array);
            for container in containers.into_iter().flatten() {
                let requests = list_at(container, "/resources/requests");
                let limits = list_at(container, "/resources/limits");
                failures.extend(item_failures(item, "Container", &requests, &limits));
            }
        }
    }
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    for item in items(range, "Pod") {
        let (requests, limits) = (pod_total(spec, "requests"), pod_total(spec, "limits"));
        failures.extend(item_failures(item, "Pod", &requests, &limits));
    }
    failures
}

/// A claim's failures against one range (`PersistentVolumeClaimValidateLimitFunc`).
fn claim_failures(range: &Value, claim: &Value) -> Vec<String> {
    let requests = list_at(claim, "/spec/resources/requests");
    let mut failures = Vec::new();
    for item in items(range, "PersistentVolumeClaim") {
        for (resource, enforced) in &list_at(item, "/min") {
            let bound = Bound {
                kind: "PersistentVolumeClaim",
                resource,
                enforced,
            };
            failures.extend(bound.min(&requests, &ResourceList::new()));
        }
        for (resource, enforced) in &list_at(item, "/max") {
            let bound = Bound {
                kind: "PersistentVolumeClaim",
                resource,
                enforced,
            };
            failures.extend(bound.max_request(&requests));
        }
    }
    failures
}

/// Why the first failing range of `ranges` refuses `object` (a pod or a claim), worded as
/// kube's aggregate of that range's failures; `None` when every range admits it.
pub fn refusal(kind: &str, object: &Value, ranges: &[Value]) -> Option<String> {
    ranges.iter().find_map(|range| {
        let mut failures = match kind {
            "Pod" => pod_failures(range, object),
            "PersistentVolumeClaim" => claim_failures(range, object),
            _ => Vec::new(),
        };
        let mut seen = std::collections::BTreeSet::new();
        failures.retain(|f| seen.insert(f.clone()));
        match failures.len() {
            0 => None,
            1 => failures.pop(),
            _ => Some(format!("[{}]", failures.join(", "))),
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn range(item: Value) -> Value {
        json!({"spec": {"limits": [item]}})
    }

    fn pod(resources: Value) -> Value {
        json!({"spec": {"containers": [{"name": "main", "resources": resources}]}})
    }

    /// As kube-apiserver v1.34.2 answered `limit-ranges.yaml` (`a-container-over-a-maximum-is-forbidden`).
    #[test]
    fn a_limit_over_a_container_maximum_is_refused() {
        let ranges = [range(json!({"type": "Container", "max": {"cpu": "1"}}))];
        let p = pod(json!({"requests": {"cpu": "500m"}, "limits": {"cpu": "2"}}));
        assert_eq!(
            refusal("Pod", &p, &ranges).as_deref(),
            Some("maximum cpu usage per Container is 1, but limit is 2")
        );
    }

    /// `a-limit-too-far-above-its-request-is-forbidden`.
    #[test]
    fn a_ratio_above_the_maximum_is_refused_with_six_decimals() {
        let ranges = [range(
            json!({"type": "Container", "maxLimitRequestRatio": {"cpu": "3"}}),
        )];
        let p = pod(json!({"requests": {"cpu": "500m"}, "limits": {"cpu": "2"}}));
        assert_eq!(
            refusal("Pod", &p, &ranges).as_deref(),
            Some(
                "cpu max limit to request ratio per Container is 3, but provided ratio is 4.000000"
            )
        );
        let fits = pod(json!({"requests": {"cpu": "700m"}, "limits": {"cpu": "2"}}));
        assert_eq!(refusal("Pod", &fits, &ranges), None);
    }

    #[test]
    fn several_failures_of_one_range_are_listed_together() {
        let ranges = [range(
            json!({"type": "Container", "max": {"cpu": "1", "memory": "1Gi"}}),
        )];
        let p = pod(json!({"limits": {"cpu": "2", "memory": "2Gi"}}));
        assert_eq!(
            refusal("Pod", &p, &ranges).as_deref(),
            Some(
                "[maximum cpu usage per Container is 1, but limit is 2, maximum memory usage per Container is 1Gi, but limit is 2Gi]"
            )
        );
    }

    /// `a-claim-outside-its-storage-range-is-forbidden`.
    #[test]
    fn a_claim_is_held_to_its_storage_range() {
        let ranges = [range(
            json!({"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}),
        )];
        let claim =
            |storage: &str| json!({"spec": {"resources": {"requests": {"storage": storage}}}});
        assert_eq!(
            refusal("PersistentVolumeClaim", &claim("500Mi"), &ranges).as_deref(),
            Some("minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi")
        );
        assert_eq!(
            refusal("PersistentVolumeClaim", &claim("5Gi"), &ranges),
            None
        );
    }
}
