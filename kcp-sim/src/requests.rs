//! Request accounting for profiling clients: how many HTTP requests of each verb and resource
//! the simulator answered, and how long it took to answer them (up to the response headers,
//! so a watch counts the time to open it).
//!
//! Benchmarks and tests read it through [`crate::Server::requests`] to see where a
//! controller's requests go ("3 patches of `things` per object") and whether the simulator's
//! own time is what limits a run.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// The requests of one label (`"<verb> <resource>[/<subresource>]"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCount {
    /// How many were answered.
    pub count: u64,
    /// The time spent answering them.
    pub time: Duration,
}

/// Counts of HTTP requests by label, e.g. `"patch things"`, `"get secrets"`,
/// `"update things/status"`, `"watch things"`.
#[derive(Debug, Default)]
pub struct RequestStats {
    counts: Mutex<BTreeMap<String, RequestCount>>,
}

impl RequestStats {
    /// Records one request.
    pub fn record(&self, label: String, time: Duration) {
        if let Ok(mut counts) = self.counts.lock() {
            let entry = counts.entry(label).or_default();
            entry.count += 1;
            entry.time += time;
        }
    }

    /// The counts so far, by label.
    pub fn snapshot(&self) -> BTreeMap<String, RequestCount> {
        self.counts.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// All requests so far.
    pub fn total(&self) -> RequestCount {
        self.snapshot()
            .values()
            .fold(RequestCount::default(), |acc, c| RequestCount {
                count: acc.count + c.count,
                time: acc.time + c.time,
            })
    }

    /// Forgets every count.
    pub fn reset(&self) {
        if let Ok(mut counts) = self.counts.lock() {
            counts.clear();
        }
    }
}

/// The label of a request: its verb (`get`, `list`, `watch`, `create`, `update`, `patch`,
/// `delete`, or the HTTP method) and the resource path after the group version, without
/// namespace and name (`things`, `things/status`); `<method> discovery` for discovery
/// documents; `<method> openapi` for the OpenAPI v3 documents of a group-version;
/// `<method> <path>` for other URLs.
pub fn label(method: &str, path: &str, query: Option<&str>) -> String {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if let Some(i) = segments.iter().position(|s| *s == "openapi")
        && segments.len() > i + 2
    {
        return format!("{} openapi", method.to_ascii_lowercase());
    }
    let start = segments
        .iter()
        .position(|s| *s == "api")
        .map(|i| i + 2)
        .or_else(|| segments.iter().position(|s| *s == "apis").map(|i| i + 3));
    let Some(tail) = start
        .and_then(|i| segments.get(i..))
        .filter(|t| !t.is_empty())
    else {
        if segments.iter().any(|s| *s == "api" || *s == "apis") {
            return format!("{} discovery", method.to_ascii_lowercase());
        }
        return format!("{} {path}", method.to_ascii_lowercase());
    };
    let tail = match tail {
        ["namespaces", _, rest @ ..] if !rest.is_empty() => rest,
        other => other,
    };
    let (resource, named, subresource) = (tail[0], tail.len() > 1, tail.get(2));
    let watch = query.is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    let verb = match (method, named) {
        ("GET", true) => "get",
        ("GET", false) if watch => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", _) => "delete",
        (other, _) => return format!("{} {path}", other.to_ascii_lowercase()),
    };
    match subresource {
        Some(sub) => format!("{verb} {resource}/{sub}"),
        None => format!("{verb} {resource}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_verb_and_the_resource() {
        let cases = [
            ("GET", "/api/v1/namespaces/a/secrets/s", None, "get secrets"),
            ("GET", "/api/v1/namespaces/a/secrets", None, "list secrets"),
            (
                "GET",
                "/apis/example.com/v1/things",
                Some("watch=true&x=1"),
                "watch things",
            ),
            (
                "PUT",
                "/clusters/c/apis/example.com/v1/namespaces/d/things/t/status",
                None,
                "update things/status",
            ),
            (
                "PATCH",
                "/services/apiexport/x/e/clusters/c/apis/example.com/v1/namespaces/d/things/t",
                None,
                "patch things",
            ),
            ("POST", "/api/v1/namespaces", None, "create namespaces"),
            ("DELETE", "/api/v1/namespaces/a", None, "delete namespaces"),
            ("GET", "/openapi/v3", None, "get /openapi/v3"),
            (
                "GET",
                "/clusters/c/openapi/v3/apis/a/v1",
                None,
                "get openapi",
            ),
            ("GET", "/openapi/v3/api/v1", Some("hash=AB"), "get openapi"),
            (
                "GET",
                "/clusters/c/apis/example.com/v1",
                None,
                "get discovery",
            ),
            ("GET", "/api", None, "get discovery"),
        ];
        for (method, path, query, want) in cases {
            assert_eq!(label(method, path, query), want, "{method} {path}");
        }
    }

    #[test]
    fn counts_and_times_add_up_per_label() {
        let stats = RequestStats::default();
        stats.record("get secrets".into(), Duration::from_millis(2));
        stats.record("get secrets".into(), Duration::from_millis(3));
        stats.record("patch things".into(), Duration::from_millis(1));
        let snapshot = stats.snapshot();
        assert_eq!(snapshot["get secrets"].count, 2);
        assert_eq!(snapshot["get secrets"].time, Duration::from_millis(5));
        assert_eq!(stats.total().count, 3);
        stats.reset();
        assert_eq!(stats.total().count, 0);
    }
}
