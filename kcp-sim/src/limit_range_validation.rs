//! A LimitRange's validation (`ValidateLimitRange`), on create and update, after its defaults
//! (a `max` is the default limit, a `min` or the default limit the default request): each
//! type once; no defaults for the Pod type; a claim's range bounds storage; and per resource,
//! in name order (kube's is Go's map order), a minimum not above the maximum or the defaults,
//! defaults not above the maximum, a default request not above the default limit, and a ratio
//! of at least 1. Field paths, values and words are kube's, including the value it shows (for
//! a default above the maximum, the maximum).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::pod_resources::list_at;
use crate::quantity::Quantity;
use crate::schema::field::{ErrorType, FieldError};

/// Every error of `range`'s spec.
pub fn errors(range: &Value) -> Vec<FieldError> {
    let items = range.pointer("/spec/limits").and_then(Value::as_array);
    let mut types = BTreeSet::new();
    let mut errors = Vec::new();
    for (i, item) in items.into_iter().flatten().enumerate() {
        let at = format!("spec.limits[{i}]");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        if !types.insert(kind.to_string()) {
            errors.push(FieldError::new(
                ErrorType::Duplicate,
                format!("{at}.type"),
                Some(Value::String(kind.into())),
                "",
            ));
        }
        errors.extend(item_errors(&at, kind, item));
    }
    errors
}

fn item_errors(at: &str, kind: &str, item: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let list = |field: &str| list_at(item, &format!("/{field}"));
    let (min, max, ratio) = (list("min"), list("max"), list("maxLimitRequestRatio"));
    let (mut default, mut default_request) = (list("default"), list("defaultRequest"));
    if kind == "Pod" {
        for field in ["default", "defaultRequest"] {
            if !list(field).is_empty() {
                errors.push(FieldError::forbidden(
                    format!("{at}.{field}"),
                    "may not be specified when `type` is 'Pod'",
                ));
            }
        }
        default.clear();
        default_request.clear();
    }
    if kind == "PersistentVolumeClaim"
        && !min.contains_key("storage")
        && !max.contains_key("storage")
    {
        errors.push(FieldError::required(
            format!("{at}.limits"),
            "either minimum or maximum storage value is required, but neither was provided",
        ));
    }
    let resources: BTreeSet<&String> = min.keys().chain(max.keys()).chain(ratio.keys()).collect();
    for resource in resources {
        let bounds = Bounds {
            at,
            resource,
            min: min.get(resource),
            max: max.get(resource),
            default: default.get(resource),
            default_request: default_request.get(resource),
        };
        errors.extend(bounds.errors());
        if let Some(r) = ratio
            .get(resource)
            .filter(|r| r.compare(&Quantity::count(1)).is_lt())
        {
            errors.push(FieldError::invalid(
                format!("{at}.maxLimitRequestRatio[{resource}]"),
                Value::String(r.to_text()),
                format!("ratio {} is less than 1", r.to_text()),
            ));
        }
    }
    errors
}

/// One resource's amounts in one range item.
struct Bounds<'a> {
    at: &'a str,
    resource: &'a str,
    min: Option<&'a Quantity>,
    max: Option<&'a Quantity>,
    default: Option<&'a Quantity>,
    default_request: Option<&'a Quantity>,
}

impl Bounds<'_> {
    fn errors(&self) -> Vec<FieldError> {
        let above = |a: Option<&Quantity>, b: Option<&Quantity>| match (a, b) {
            (Some(a), Some(b)) if a.compare(b).is_gt() => Some((a.to_text(), b.to_text())),
            _ => None,
        };
        let (min, max) = (self.min, self.max);
        let (default, request) = (self.default, self.default_request);
        // (field, the value shown, the two compared, how they are named), in kube's order.
        let rules = [
            ("min", min, above(min, max), "min value", "max value"),
            (
                "defaultRequest",
                request,
                above(min, request),
                "min value",
                "default request value",
            ),
            (
                "defaultRequest",
                request,
                above(request, max),
                "default request value",
                "max value",
            ),
            (
                "defaultRequest",
                request,
                above(request, default),
                "default request value",
                "default limit value",
            ),
            (
                "default",
                min,
                above(min, default),
                "min value",
                "default value",
            ),
            (
                "default",
                max,
                above(default, max),
                "default value",
                "max value",
            ),
        ];
        rules
            .into_iter()
            .filter_map(|(field, shown, pair, first, second)| {
                let (a, b) = pair?;
                let shown = shown
                    .map(|q| Value::String(q.to_text()))
                    .unwrap_or(Value::Null);
                Some(FieldError::invalid(
                    format!("{}.{field}[{}]", self.at, self.resource),
                    shown,
                    format!("{first} {a} is greater than {second} {b}"),
                ))
            })
            .collect()
    }
}
