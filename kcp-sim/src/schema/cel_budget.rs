//! kube-apiserver's budget for the estimated cost of a CRD's rules: a rule may cost at most
//! 10,000,000 ([`super::cel_cost`]'s estimate, times how many values of its node one object
//! can hold), a message expression as much, and all the rules of a schema together at most
//! 100,000,000. A CRD over budget is refused with kube's words, naming the factor.

use serde_json::{Map, Value};

use super::cel_size::Sizes;
use super::field::FieldError;

/// The most one rule or message expression may cost (`StaticEstimatedCostLimit`).
pub const PER_EXPRESSION: u64 = 10_000_000;
/// The most the rules of one schema may cost together (`StaticEstimatedCRDCostLimit`).
pub const PER_SCHEMA: u64 = 100_000_000;

/// The estimates of one rule that compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimated {
    /// Where the rule is (`....x-kubernetes-validations[i]`).
    pub path: String,
    /// Its most cost on one value.
    pub cost: u64,
    /// Its message expression's most cost (0 without one).
    pub message_cost: u64,
    /// How many values of its node one request can hold.
    pub most_per_request: u64,
}

/// The rules' costs of one schema, as its nodes are read.
#[derive(Debug, Default)]
pub struct SchemaBudget {
    /// Every rule's estimates, in the order the rules are read.
    pub estimates: Vec<Estimated>,
    total: u64,
    /// The (at most four) costliest expressions of at least 1% of [`PER_SCHEMA`], costliest
    /// first: where each is, and its cost.
    most_expensive: Vec<(String, u64)>,
}

impl SchemaBudget {
    /// Counts the cost of the expression at `path`.
    pub fn observe(&mut self, path: &str, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < PER_SCHEMA / 100 {
            return;
        }
        let at = self.most_expensive.partition_point(|(_, c)| *c >= cost);
        self.most_expensive.insert(at, (path.to_string(), cost));
        self.most_expensive.truncate(4);
    }

    /// What kube reports when the schema at `schema_path` is over its budget: the costliest
    /// expressions, then the schema's total.
    pub fn errors(&self, schema_path: &str) -> Vec<FieldError> {
        if self.total <= PER_SCHEMA {
            return Vec::new();
        }
        let mut errors: Vec<FieldError> = self
            .most_expensive
            .iter()
            .map(|(path, _)| {
                FieldError::forbidden(
                    path.as_str(),
                    "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
                )
            })
            .collect();
        let name = "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema";
        errors.push(FieldError::forbidden(
            schema_path,
            over_budget(name, self.total, PER_SCHEMA),
        ));
        errors
    }
}

/// Where a node's rules are compiled, as far as their cost goes.
#[derive(Debug)]
pub struct RuleCosts<'a> {
    /// The sizes of the node's values (`None` where kube declares no type).
    pub sizes: Option<&'a Sizes>,
    /// How many values of the node one object holds at most, when the schema bounds it
    /// (`None`: unbounded, then what one request can hold).
    pub cardinality: Option<u64>,
    /// The schema's budget.
    pub budget: &'a mut SchemaBudget,
}

impl RuleCosts<'_> {
    fn most_per_request(&self) -> u64 {
        self.sizes.map_or(1, Sizes::most_per_request)
    }

    /// Keeps the estimates of the rule at `path`.
    pub fn record(&mut self, path: &str, cost: u64, message_cost: u64) {
        let most_per_request = self.most_per_request();
        self.budget.estimates.push(Estimated {
            path: path.to_string(),
            cost,
            message_cost,
            most_per_request,
        });
    }

    /// The cost of a rule of `estimate` on every value of the node.
    pub fn of_rule(&self, estimate: u64) -> u64 {
        let most = self.cardinality.unwrap_or_else(|| self.most_per_request());
        estimate.saturating_mul(most)
    }

    /// Counts an expression's cost; the error that refuses it when it alone is over budget
    /// (`what`: "estimated rule cost" or "estimated messageExpression cost").
    pub fn charge(&mut self, path: &str, what: &str, cost: u64) -> Option<FieldError> {
        self.budget.observe(path, cost);
        (cost > PER_EXPRESSION)
            .then(|| FieldError::forbidden(path, over_budget(what, cost, PER_EXPRESSION)))
    }
}

/// How many values of a child one object holds at most, given its parent's (`None`:
/// unbounded) and the parent's schema: one per object, `maxItems` per array and
/// `maxProperties` per map.
pub fn child_cardinality(parent: Option<u64>, parent_schema: &Map<String, Value>) -> Option<u64> {
    let bound = |key: &str| {
        parent_schema
            .get(key)
            .and_then(Value::as_i64)
            .map(|n| u64::try_from(n).unwrap_or(0))
    };
    let per_parent = match parent_schema.get("type").and_then(Value::as_str) {
        Some("object") if parent_schema.contains_key("additionalProperties") => {
            bound("maxProperties")
        }
        Some("array") => bound("maxItems"),
        _ => Some(1),
    };
    Some(parent?.saturating_mul(per_parent?))
}

/// kube's words for a cost over its limit: the factor, to six places below 1.5, to one up to
/// 100, and "more than 100x" beyond.
fn over_budget(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_factor_is_written_as_kube_writes_it() {
        assert!(over_budget("x", 12_000_000, PER_EXPRESSION).contains("factor of 1.200000x"));
        assert!(over_budget("x", 25_000_000, PER_EXPRESSION).contains("factor of 2.5x"));
        assert!(over_budget("x", u64::MAX, PER_EXPRESSION).contains("factor of more than 100x"));
    }

    #[test]
    fn only_bounded_lists_and_maps_keep_their_children_bounded() {
        let list = json!({"type": "array", "maxItems": 5})
            .as_object()
            .cloned()
            .unwrap();
        assert_eq!(child_cardinality(Some(2), &list), Some(10));
        let unbounded = json!({"type": "array"}).as_object().cloned().unwrap();
        assert_eq!(child_cardinality(Some(2), &unbounded), None);
        let object = json!({"type": "object"}).as_object().cloned().unwrap();
        assert_eq!(child_cardinality(Some(3), &object), Some(3));
        let map = json!({"type": "object", "additionalProperties": false})
            .as_object()
            .cloned()
            .unwrap();
        assert_eq!(child_cardinality(Some(3), &map), None);
        assert_eq!(child_cardinality(None, &object), None);
    }

    #[test]
    fn the_costliest_four_are_kept_costliest_first() {
        let mut budget = SchemaBudget::default();
        for (i, cost) in [5, 40, 30, 2_000_000, 20, 10].iter().enumerate() {
            budget.observe(&format!("r{i}"), cost * 1_000_000);
        }
        let kept: Vec<&str> = budget
            .most_expensive
            .iter()
            .map(|(p, _)| p.as_str())
            .collect();
        assert_eq!(kept, ["r3", "r1", "r2", "r4"]);
        assert!(!budget.errors("s").is_empty());
    }
}
