//! Agent selection: which Agents an AgentMachine may bind, and in which order it tries them.
//!
//! A pure, deterministic function of the Agents and the request. An Agent is *eligible* when it
//! is approved, `Validated` and `Connected` are True, `Bound` is False (a missing condition
//! counts as failing, as upstream), it carries no `agentMachineRef` label and no
//! `clusterDeploymentName`, and it matches the AgentMachine's `agentLabelSelector`. Eligible
//! Agents are ranked by score (descending), then creation time, then name, so the same input
//! always gives the same order (upstream walks an unordered cache list and takes the first).
//!
//! Scores come from [`Preferences`]: a match of the Machine's failure domain with the Agent's
//! `topology.kubernetes.io/zone` label weighs most, then an optional inventory preference
//! (smallest or largest host first).

use std::cmp::Reverse;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::api::AGENT_MACHINE_REF_LABEL;
use crate::foreign::Agent;

/// The Agent label compared with `Machine.spec.failureDomain`.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// Why an Agent cannot be bound (the first reason found).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ineligible {
    /// `spec.approved` is false.
    NotApproved,
    /// `Validated` is not True.
    NotValidated,
    /// `Connected` is not True.
    NotConnected,
    /// `Bound` is not False.
    Bound,
    /// It carries an `agentMachineRef` label or a `clusterDeploymentName`.
    Claimed,
    /// It does not match the AgentMachine's `agentLabelSelector`.
    SelectorMismatch,
}

/// Which hosts to prefer among the eligible ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InventoryPreference {
    /// No preference: creation time, then name.
    #[default]
    None,
    /// Fewest CPUs, then least memory first (keeps big hosts for demanding pools).
    Smallest,
    /// Most CPUs, then most memory first.
    Largest,
}

/// What the AgentMachine asks for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request<'a> {
    /// The AgentMachine's `agentLabelSelector` (`None`: any Agent).
    pub selector: Option<&'a LabelSelector>,
    /// `Machine.spec.failureDomain`.
    pub failure_domain: Option<&'a str>,
    /// Inventory preference.
    pub inventory: InventoryPreference,
}

/// Whether `agent` can be bound at all (approved, validated, connected, unbound), ignoring the
/// selector: the "valid" Agent of upstream's Agent-to-AgentMachine mapper.
pub fn usable(agent: &Agent) -> Result<(), Ineligible> {
    if !agent.spec.approved {
        return Err(Ineligible::NotApproved);
    }
    if !agent.condition_is("Validated", "True") {
        return Err(Ineligible::NotValidated);
    }
    if !agent.condition_is("Connected", "True") {
        return Err(Ineligible::NotConnected);
    }
    if !agent.condition_is("Bound", "False") {
        return Err(Ineligible::Bound);
    }
    Ok(())
}

/// Whether `agent` can be bound for `request`.
pub fn eligible(agent: &Agent, request: &Request<'_>) -> Result<(), Ineligible> {
    usable(agent)?;
    if agent.label(AGENT_MACHINE_REF_LABEL).is_some()
        || agent.spec.cluster_deployment_name.is_some()
    {
        return Err(Ineligible::Claimed);
    }
    if let Some(selector) = request.selector
        && !selector_matches(selector, agent.metadata.labels.as_ref())
    {
        return Err(Ineligible::SelectorMismatch);
    }
    Ok(())
}

/// The eligible Agents, best first. Deterministic: equal scores are ordered by creation time,
/// then name.
pub fn rank<'a>(agents: &'a [Agent], request: &Request<'_>) -> Vec<&'a Agent> {
    let mut ranked: Vec<(Key<'a>, &'a Agent)> = agents
        .iter()
        .filter(|a| eligible(a, request).is_ok())
        .map(|a| (key(a, request), a))
        .collect();
    ranked.sort_unstable_by_key(|(k, _)| *k);
    ranked.into_iter().map(|(_, a)| a).collect()
}

/// The best eligible Agent, if any (the first of [`rank`], without sorting everything).
pub fn best<'a>(agents: &'a [Agent], request: &Request<'_>) -> Option<&'a Agent> {
    agents
        .iter()
        .filter(|a| eligible(a, request).is_ok())
        .min_by_key(|a| key(a, request))
}

/// The full ordering key: score, then creation time, then name.
type Key<'a> = (Score, i64, Option<&'a str>);

fn key<'a>(agent: &'a Agent, request: &Request<'_>) -> Key<'a> {
    (
        score(agent, request),
        creation(agent),
        agent.metadata.name.as_deref(),
    )
}

/// Sort key: lower is better.
type Score = (Reverse<bool>, i64, i64);

fn score(agent: &Agent, request: &Request<'_>) -> Score {
    let zone = request
        .failure_domain
        .is_some_and(|fd| agent.label(ZONE_LABEL) == Some(fd));
    let (cpu, memory) = agent
        .status
        .as_ref()
        .map(|s| (s.inventory.cpu.count, s.inventory.memory.physical_bytes))
        .unwrap_or_default();
    let (cpu, memory) = match request.inventory {
        InventoryPreference::None => (0, 0),
        InventoryPreference::Smallest => (cpu, memory),
        InventoryPreference::Largest => (-cpu, -memory),
    };
    (Reverse(zone), cpu, memory)
}

fn creation(agent: &Agent) -> i64 {
    agent
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.as_second())
        .unwrap_or(i64::MAX)
}

/// Whether labels match a `metav1.LabelSelector` (matchLabels and matchExpressions with In,
/// NotIn, Exists, DoesNotExist; an unknown operator matches nothing, as the API server would
/// refuse it).
pub fn selector_matches(
    selector: &LabelSelector,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k));
    let match_labels = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| get(k) == Some(v));
    match_labels
        && selector.match_expressions.iter().flatten().all(|e| {
            let values = e.values.as_deref().unwrap_or_default();
            let value = get(&e.key);
            match e.operator.as_str() {
                "In" => value.is_some_and(|v| values.contains(v)),
                "NotIn" => !value.is_some_and(|v| values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
}

/// Checks a `metav1.LabelSelector` as `metav1.LabelSelectorAsSelector` does: operators In,
/// NotIn (with values), Exists, DoesNotExist (without), qualified-name keys and label values.
/// The error names `object`, the field under `field` and the reason.
pub fn validate_selector(object: &str, field: &str, selector: &LabelSelector) -> crate::Result<()> {
    let invalid = |path: String, reason: String| Err(crate::Error::invalid(object, &path, reason));
    for (key, value) in selector.match_labels.iter().flatten() {
        let path = format!("{field}.matchLabels[{key:?}]");
        if let Some(reason) = key_problem(key) {
            return invalid(path, reason);
        }
        if !is_label_value(value) {
            return invalid(path, format!("{value:?} is not a label value"));
        }
    }
    for (i, e) in selector.match_expressions.iter().flatten().enumerate() {
        let path = format!("{field}.matchExpressions[{i}]");
        if let Some(reason) = key_problem(&e.key) {
            return invalid(format!("{path}.key"), reason);
        }
        let values = e.values.as_deref().unwrap_or_default();
        let wants_values = match e.operator.as_str() {
            "In" | "NotIn" => true,
            "Exists" | "DoesNotExist" => false,
            other => {
                let reason =
                    format!("{other:?} is not an operator (In, NotIn, Exists, DoesNotExist)");
                return invalid(format!("{path}.operator"), reason);
            }
        };
        if wants_values == values.is_empty() {
            let reason = match wants_values {
                true => format!("{} needs at least one value", e.operator),
                false => format!("{} takes no values", e.operator),
            };
            return invalid(format!("{path}.values"), reason);
        }
        if let Some(v) = values.iter().find(|v| !is_label_value(v)) {
            return invalid(
                format!("{path}.values"),
                format!("{v:?} is not a label value"),
            );
        }
    }
    Ok(())
}

/// Why `key` is not a label key (an optional DNS-subdomain prefix and `/`, then a name of at
/// most 63 characters), or `None`.
fn key_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    });
    (!prefix_ok || name.is_empty() || !is_label_value(name))
        .then(|| format!("{key:?} is not a label key"))
}

/// At most 63 characters of alphanumerics, `-`, `_` and `.`, beginning and ending with an
/// alphanumeric (or empty).
fn is_label_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    let edge = |b: Option<&u8>| b.is_none_or(u8::is_ascii_alphanumeric);
    bytes.len() <= 63
        && edge(bytes.first())
        && edge(bytes.last())
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, Time};

    use super::*;
    use crate::foreign::{AgentCondition, AgentSpec, AgentStatus, ClusterReference};

    fn condition(type_: &str, status: &str) -> AgentCondition {
        AgentCondition {
            type_: type_.into(),
            status: status.into(),
            ..AgentCondition::default()
        }
    }

    fn good(name: &str) -> Agent {
        let mut agent = Agent::new(
            name,
            AgentSpec {
                approved: true,
                ..AgentSpec::default()
            },
        );
        agent.metadata.namespace = Some("agents".into());
        agent.status = Some(AgentStatus {
            conditions: vec![
                condition("Validated", "True"),
                condition("Connected", "True"),
                condition("Bound", "False"),
            ],
            ..AgentStatus::default()
        });
        agent
    }

    fn with_label(mut agent: Agent, key: &str, value: &str) -> Agent {
        agent
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), value.into());
        agent
    }

    fn names(agents: Vec<&Agent>) -> Vec<&str> {
        agents
            .into_iter()
            .map(|a| a.metadata.name.as_deref().unwrap())
            .collect()
    }

    #[test]
    fn an_approved_validated_connected_unbound_agent_is_eligible() {
        assert_eq!(eligible(&good("a"), &Request::default()), Ok(()));
    }

    #[test]
    fn an_unapproved_agent_is_not_eligible() {
        let mut a = good("a");
        a.spec.approved = false;
        assert_eq!(
            eligible(&a, &Request::default()),
            Err(Ineligible::NotApproved)
        );
    }

    #[test]
    fn missing_conditions_count_as_failing() {
        let mut a = good("a");
        a.status = None;
        assert_eq!(
            eligible(&a, &Request::default()),
            Err(Ineligible::NotValidated)
        );
        let mut b = good("b");
        b.status.as_mut().unwrap().conditions.remove(2);
        assert_eq!(eligible(&b, &Request::default()), Err(Ineligible::Bound));
    }

    #[test]
    fn a_disconnected_agent_is_not_eligible() {
        let mut a = good("a");
        a.status.as_mut().unwrap().conditions[1].status = "False".into();
        assert_eq!(
            eligible(&a, &Request::default()),
            Err(Ineligible::NotConnected)
        );
    }

    #[test]
    fn an_agent_claimed_by_label_or_cluster_deployment_is_not_eligible() {
        let a = with_label(good("a"), AGENT_MACHINE_REF_LABEL, "other");
        assert_eq!(eligible(&a, &Request::default()), Err(Ineligible::Claimed));
        let mut b = good("b");
        b.spec.cluster_deployment_name = Some(ClusterReference::default());
        assert_eq!(eligible(&b, &Request::default()), Err(Ineligible::Claimed));
    }

    #[test]
    fn the_selector_filters_with_match_labels_and_expressions() {
        let selector = LabelSelector {
            match_labels: Some([("pool".to_string(), "a".to_string())].into()),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "rack".into(),
                operator: "In".into(),
                values: Some(vec!["r1".into(), "r2".into()]),
            }]),
        };
        let request = Request {
            selector: Some(&selector),
            ..Request::default()
        };
        let fits = with_label(with_label(good("a"), "pool", "a"), "rack", "r2");
        let wrong_rack = with_label(with_label(good("b"), "pool", "a"), "rack", "r9");
        let no_pool = with_label(good("c"), "rack", "r1");
        assert_eq!(eligible(&fits, &request), Ok(()));
        assert_eq!(
            eligible(&wrong_rack, &request),
            Err(Ineligible::SelectorMismatch)
        );
        assert_eq!(
            eligible(&no_pool, &request),
            Err(Ineligible::SelectorMismatch)
        );
    }

    #[test]
    fn not_in_and_does_not_exist_match_agents_without_the_label() {
        let selector = LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "bad".into(),
                    operator: "NotIn".into(),
                    values: Some(vec!["yes".into()]),
                },
                LabelSelectorRequirement {
                    key: "gpu".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                },
            ]),
        };
        assert!(selector_matches(&selector, None));
        let labels: BTreeMap<String, String> = [("gpu".to_string(), "x".to_string())].into();
        assert!(!selector_matches(&selector, Some(&labels)));
    }

    #[test]
    fn selectors_are_checked_as_the_api_machinery_parses_them() {
        let expr = |operator: &str, values: &[&str]| LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "pool".into(),
                operator: operator.into(),
                values: Some(values.iter().map(|v| (*v).to_owned()).collect()),
            }]),
            ..LabelSelector::default()
        };
        let check = |s: &LabelSelector| validate_selector("AgentMachine ns/m", "spec.s", s);
        assert!(check(&expr("In", &["a"])).is_ok());
        assert!(check(&expr("Exists", &[])).is_ok());
        let err = check(&expr("Equals", &["a"])).unwrap_err().to_string();
        assert_eq!(
            err,
            "AgentMachine ns/m: field spec.s.matchExpressions[0].operator: \"Equals\" is not an operator (In, NotIn, Exists, DoesNotExist)"
        );
        let err = check(&expr("In", &[])).unwrap_err().to_string();
        assert!(
            err.contains("matchExpressions[0].values: In needs at least one value"),
            "{err}"
        );
        let err = check(&expr("Exists", &["a"])).unwrap_err().to_string();
        assert!(err.contains("Exists takes no values"), "{err}");
        let labels = |k: &str, v: &str| LabelSelector {
            match_labels: Some([(k.to_owned(), v.to_owned())].into()),
            ..LabelSelector::default()
        };
        assert!(check(&labels("example.com/pool", "a-1")).is_ok());
        assert!(check(&labels("not a key!", "a")).is_err());
        assert!(check(&labels("pool", "-a")).is_err());
        assert!(check(&labels("Example.com/pool", "a")).is_err());
    }

    #[test]
    fn ranking_is_by_creation_time_then_name() {
        let at = |a: Agent, s: i64| {
            let mut a = a;
            a.metadata.creation_timestamp = Some(Time(jiff::Timestamp::from_second(s).unwrap()));
            a
        };
        let agents = vec![at(good("c"), 5), at(good("b"), 1), at(good("a"), 5)];
        assert_eq!(names(rank(&agents, &Request::default())), ["b", "a", "c"]);
        assert_eq!(
            best(&agents, &Request::default()).and_then(|a| a.metadata.name.as_deref()),
            Some("b")
        );
    }

    #[test]
    fn the_failure_domain_is_preferred() {
        let agents = vec![good("a"), with_label(good("b"), ZONE_LABEL, "z2")];
        let request = Request {
            failure_domain: Some("z2"),
            ..Request::default()
        };
        assert_eq!(names(rank(&agents, &request)), ["b", "a"]);
    }

    #[test]
    fn inventory_preferences_order_by_size() {
        let sized = |name: &str, cpu: i64| {
            let mut a = good(name);
            a.status.as_mut().unwrap().inventory.cpu.count = cpu;
            a
        };
        let agents = vec![sized("big", 64), sized("small", 4)];
        let smallest = Request {
            inventory: InventoryPreference::Smallest,
            ..Request::default()
        };
        let largest = Request {
            inventory: InventoryPreference::Largest,
            ..Request::default()
        };
        assert_eq!(names(rank(&agents, &smallest)), ["small", "big"]);
        assert_eq!(names(rank(&agents, &largest)), ["big", "small"]);
        assert_eq!(names(rank(&agents, &Request::default())), ["big", "small"]);
    }

    #[test]
    fn upstream_eleven_agents_select_the_one_good_agent() {
        let mut not_approved = good("not-approved");
        not_approved.spec.approved = false;
        let mut bound = good("bound");
        bound.status.as_mut().unwrap().conditions[2].status = "True".into();
        let mut failing = with_label(good("failing-validation"), "pool", "a");
        failing.status.as_mut().unwrap().conditions[0].status = "False".into();
        let mut disconnected = with_label(good("disconnected"), "pool", "a");
        disconnected.status.as_mut().unwrap().conditions[1].status = "False".into();
        let agents = vec![
            not_approved,
            bound,
            with_label(good("wrong-label"), "pool", "b"),
            good("no-label"),
            failing,
            with_label(
                with_label(good("other-machine"), "pool", "a"),
                AGENT_MACHINE_REF_LABEL,
                "x",
            ),
            disconnected,
            with_label(with_label(good("good"), "pool", "a"), "rack", "r1"),
            with_label(with_label(good("wrong-rack"), "pool", "a"), "rack", "r3"),
            with_label(good("no-rack"), "pool", "a"),
            with_label(with_label(good("bad-rack"), "pool", "c"), "rack", "r1"),
        ];
        let selector = LabelSelector {
            match_labels: Some([("pool".to_string(), "a".to_string())].into()),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "rack".into(),
                operator: "In".into(),
                values: Some(vec!["r1".into(), "r2".into()]),
            }]),
        };
        let request = Request {
            selector: Some(&selector),
            ..Request::default()
        };
        assert_eq!(names(rank(&agents, &request)), ["good"]);
    }
}
