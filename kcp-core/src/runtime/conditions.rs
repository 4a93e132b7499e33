//! Typed status conditions (`metav1.Condition`) and the one rule for changing them.
//!
//! [`set_condition`] replaces or adds the condition of a type; `lastTransitionTime` moves only
//! when the status changes (True/False/Unknown), so a message update keeps the time the
//! condition last flipped, as kube-apiserver conventions require. `observedGeneration` records
//! the generation the condition was computed from.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// The status of a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// It does not hold.
    False,
    /// Not known (yet).
    Unknown,
}

impl ConditionStatus {
    /// `True`, `False` or `Unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

impl From<bool> for ConditionStatus {
    fn from(holds: bool) -> Self {
        if holds {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        }
    }
}

/// A condition to set: everything but the transition time, which [`set_condition`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionUpdate {
    /// The condition type (`Ready`, `Conflict`, ...).
    pub type_: String,
    /// Whether it holds.
    pub status: ConditionStatus,
    /// A CamelCase machine-readable reason.
    pub reason: String,
    /// A human-readable message.
    pub message: String,
    /// The object generation this was computed from.
    pub observed_generation: Option<i64>,
}

impl ConditionUpdate {
    /// A condition of `type_` with `status` and `reason`, an empty message and no generation.
    pub fn new(type_: &str, status: impl Into<ConditionStatus>, reason: &str) -> Self {
        ConditionUpdate {
            type_: type_.to_string(),
            status: status.into(),
            reason: reason.to_string(),
            message: String::new(),
            observed_generation: None,
        }
    }

    /// Sets the message.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Sets the observed generation.
    pub fn generation(mut self, generation: Option<i64>) -> Self {
        self.observed_generation = generation;
        self
    }
}

/// A condition type [`set_condition`] can maintain: `metav1.Condition`, and kcp's condition
/// shape ([`crate::kcp::Condition`], with `severity` and no `observedGeneration`).
pub trait StatusCondition {
    /// The condition type.
    fn condition_type(&self) -> &str;
    /// Whether it already says what `update` says.
    fn matches(&self, update: &ConditionUpdate) -> bool;
    /// Takes over `update`; `transition` is the new `lastTransitionTime` when the status changed.
    fn assign(&mut self, update: ConditionUpdate, transition: Option<Time>);
    /// A new condition from `update`.
    fn create(update: ConditionUpdate, now: Time) -> Self;
    /// The status string.
    fn status(&self) -> &str;
}

impl StatusCondition for Condition {
    fn condition_type(&self) -> &str {
        &self.type_
    }
    fn matches(&self, u: &ConditionUpdate) -> bool {
        self.status == u.status.as_str()
            && self.reason == u.reason
            && self.message == u.message
            && self.observed_generation == u.observed_generation
    }
    fn assign(&mut self, u: ConditionUpdate, transition: Option<Time>) {
        if let Some(t) = transition {
            self.last_transition_time = t;
        }
        self.status = u.status.as_str().to_string();
        self.reason = u.reason;
        self.message = u.message;
        self.observed_generation = u.observed_generation;
    }
    fn create(u: ConditionUpdate, now: Time) -> Self {
        Condition {
            type_: u.type_,
            status: u.status.as_str().to_string(),
            reason: u.reason,
            message: u.message,
            observed_generation: u.observed_generation,
            last_transition_time: now,
        }
    }
    fn status(&self) -> &str {
        &self.status
    }
}

impl StatusCondition for crate::kcp::Condition {
    fn condition_type(&self) -> &str {
        &self.type_
    }
    fn matches(&self, u: &ConditionUpdate) -> bool {
        self.status == u.status.as_str()
            && self.reason.as_deref() == Some(u.reason.as_str())
            && self.message.as_deref().unwrap_or_default() == u.message
    }
    fn assign(&mut self, u: ConditionUpdate, transition: Option<Time>) {
        if let Some(t) = transition {
            self.last_transition_time = Some(t.0.to_string());
        }
        self.status = u.status.as_str().to_string();
        self.reason = Some(u.reason);
        self.message = Some(u.message);
    }
    fn create(u: ConditionUpdate, now: Time) -> Self {
        let mut c = crate::kcp::Condition {
            type_: u.type_.clone(),
            ..Default::default()
        };
        c.assign(u, Some(now));
        c
    }
    fn status(&self) -> &str {
        &self.status
    }
}

/// Sets a condition in `conditions`; returns whether anything changed. `now` becomes
/// `lastTransitionTime` when the condition is new or its status changed.
pub fn set_condition<C: StatusCondition>(
    conditions: &mut Vec<C>,
    update: ConditionUpdate,
    now: Time,
) -> bool {
    match conditions
        .iter_mut()
        .find(|c| c.condition_type() == update.type_)
    {
        Some(existing) if existing.matches(&update) => false,
        Some(existing) => {
            let transition = (existing.status() != update.status.as_str()).then_some(now);
            existing.assign(update, transition);
            true
        }
        None => {
            conditions.push(C::create(update, now));
            true
        }
    }
}

/// The condition of `type_`, if present.
pub fn find_condition<'a, C: StatusCondition>(conditions: &'a [C], type_: &str) -> Option<&'a C> {
    conditions.iter().find(|c| c.condition_type() == type_)
}

/// Whether the condition of `type_` is present and `True`.
pub fn is_true<C: StatusCondition>(conditions: &[C], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status() == "True")
}

/// The current time, as a condition timestamp (whole seconds, as the API server stores it).
pub fn now() -> Time {
    let now = jiff::Timestamp::now();
    Time(jiff::Timestamp::from_second(now.as_second()).unwrap_or(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Time {
        Time(jiff::Timestamp::from_second(second).unwrap())
    }

    #[test]
    fn a_new_condition_is_added_with_the_transition_time() {
        let mut conditions: Vec<Condition> = vec![];
        let changed = set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", true, "Running").generation(Some(3)),
            at(10),
        );
        assert!(changed);
        assert_eq!(conditions[0].status, "True");
        assert_eq!(conditions[0].observed_generation, Some(3));
        assert_eq!(conditions[0].last_transition_time, at(10));
    }

    #[test]
    fn the_same_condition_again_changes_nothing() {
        let mut conditions: Vec<Condition> = vec![];
        set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", true, "Running"),
            at(10),
        );
        assert!(!set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", true, "Running"),
            at(20)
        ));
        assert_eq!(conditions[0].last_transition_time, at(10));
    }

    #[test]
    fn a_new_message_keeps_the_transition_time() {
        let mut conditions: Vec<Condition> = vec![];
        set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", true, "Running"),
            at(10),
        );
        let changed = set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", true, "Running").message("watching 2 URLs"),
            at(20),
        );
        assert!(changed);
        assert_eq!(conditions[0].message, "watching 2 URLs");
        assert_eq!(conditions[0].last_transition_time, at(10));
    }

    #[test]
    fn a_status_change_moves_the_transition_time() {
        let mut conditions: Vec<Condition> = vec![];
        set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", true, "Running"),
            at(10),
        );
        set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", false, "Broken"),
            at(20),
        );
        assert_eq!(conditions[0].last_transition_time, at(20));
        assert_eq!(conditions[0].reason, "Broken");
    }

    #[test]
    fn conditions_of_other_types_are_left_alone() {
        let mut conditions: Vec<Condition> = vec![];
        set_condition(
            &mut conditions,
            ConditionUpdate::new("Conflict", false, "NoConflict"),
            at(1),
        );
        set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", true, "Running"),
            at(2),
        );
        assert_eq!(conditions.len(), 2);
        assert!(is_true(&conditions, "Ready"));
        assert!(!is_true(&conditions, "Conflict"));
        assert!(find_condition(&conditions, "Missing").is_none());
    }

    #[test]
    fn kcp_shaped_conditions_follow_the_same_rule() {
        let mut conditions: Vec<crate::kcp::Condition> = vec![];
        set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", true, "R"),
            at(10),
        );
        set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", true, "R").message("m"),
            at(20),
        );
        assert_eq!(
            conditions[0].last_transition_time.as_deref(),
            Some("1970-01-01T00:00:10Z")
        );
        assert_eq!(conditions[0].message.as_deref(), Some("m"));
        assert!(is_true(&conditions, "Ready"));
    }

    #[test]
    fn a_new_observed_generation_is_a_change() {
        let mut conditions: Vec<Condition> = vec![];
        set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", true, "R").generation(Some(1)),
            at(1),
        );
        assert!(set_condition(
            &mut conditions,
            ConditionUpdate::new("Ready", true, "R").generation(Some(2)),
            at(2)
        ));
    }
}
