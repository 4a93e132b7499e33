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

/// Sets a condition in `conditions`; returns whether anything changed. `now` becomes
/// `lastTransitionTime` when the condition is new or its status changed.
pub fn set_condition(conditions: &mut Vec<Condition>, update: ConditionUpdate, now: Time) -> bool {
    let status = update.status.as_str();
    match conditions.iter_mut().find(|c| c.type_ == update.type_) {
        Some(existing) => {
            let unchanged = existing.status == status
                && existing.reason == update.reason
                && existing.message == update.message
                && existing.observed_generation == update.observed_generation;
            if unchanged {
                return false;
            }
            if existing.status != status {
                existing.last_transition_time = now;
            }
            existing.status = status.to_string();
            existing.reason = update.reason;
            existing.message = update.message;
            existing.observed_generation = update.observed_generation;
            true
        }
        None => {
            conditions.push(Condition {
                type_: update.type_,
                status: status.to_string(),
                reason: update.reason,
                message: update.message,
                observed_generation: update.observed_generation,
                last_transition_time: now,
            });
            true
        }
    }
}

/// The condition of `type_`, if present.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is present and `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == "True")
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
        let mut conditions = vec![];
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
        let mut conditions = vec![];
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
        let mut conditions = vec![];
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
        let mut conditions = vec![];
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
        let mut conditions = vec![];
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
    fn a_new_observed_generation_is_a_change() {
        let mut conditions = vec![];
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
