//! API Priority and Fairness configuration, as kube-apiserver keeps it: the FlowSchemas and
//! PriorityLevelConfigurations its config producer writes at start (annotated
//! `apf.kubernetes.io/autoupdate-spec: "true"`), their decode defaults, and the `Dangling`
//! condition its config consumer gives every FlowSchema: whether the priority level it names
//! exists. kcp-sim does not queue requests by them.
//!
//! The objects are `data/kube-bootstrap-flowcontrol.json`, recorded from kube-apiserver v1.34.2
//! (the test bed's pin) by `data/record-bootstrap.sh`, which says how to record them again.

use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::resource::{GroupResource, ResourceType};
use crate::semantics::{self, PatchKind, WriteOptions};
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// The API group.
const GROUP: &str = "flowcontrol.apiserver.k8s.io";

/// The recorded objects, parsed once.
static OBJECTS: LazyLock<Result<Vec<Value>, String>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../data/kube-bootstrap-flowcontrol.json"))
        .map_err(|e| format!("kcp-sim's recorded flow-control configuration does not parse: {e}"))
});

/// The field manager of the bootstrap objects' specs.
const PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";
/// The field manager of the FlowSchemas' status.
const CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";

fn served(state: &State, cluster: &str, plural: &str) -> ApiResult<ResourceType> {
    state.required_type(cluster, &GroupResource::new(GROUP, plural))
}

/// Creates the bootstrap configuration in `cluster`, priority levels first, and gives each
/// FlowSchema its status.
pub fn seed(state: &mut State, cluster: &str) -> ApiResult<()> {
    let objects = OBJECTS
        .as_ref()
        .map_err(|e| ApiError::internal(e.clone()))?;
    let opts = WriteOptions {
        default_manager: PRODUCER.into(),
        ..WriteOptions::default()
    };
    for kind in ["PriorityLevelConfiguration", "FlowSchema"] {
        let plural = format!("{}s", kind.to_ascii_lowercase());
        let rt = served(state, cluster, &plural)?;
        for object in objects.iter().filter(|o| o["kind"] == kind) {
            semantics::create(state, cluster, &rt, "v1", None, object.clone(), &opts)?;
        }
    }
    mark_dangling(state, cluster)
}

/// `SetDefaults_FlowSchemaSpec`: precedence 1000.
pub fn flow_schema_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.entry("matchingPrecedence").or_insert(json!(1000));
    }
}

/// `SetDefaults_PriorityLevelConfiguration`'s limited, queuing and exempt defaults.
pub fn priority_level_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(limited) = spec.get_mut("limited").and_then(Value::as_object_mut) {
        limited
            .entry("nominalConcurrencyShares")
            .or_insert(json!(30));
        limited.entry("lendablePercent").or_insert(json!(0));
        if let Some(queuing) = limited
            .get_mut("limitResponse")
            .and_then(|r| r.get_mut("queuing"))
            .and_then(Value::as_object_mut)
        {
            queuing.entry("queues").or_insert(json!(64));
            queuing.entry("handSize").or_insert(json!(8));
            queuing.entry("queueLengthLimit").or_insert(json!(50));
        }
    }
    if let Some(exempt) = spec.get_mut("exempt").and_then(Value::as_object_mut) {
        exempt.entry("nominalConcurrencyShares").or_insert(json!(0));
        exempt.entry("lendablePercent").or_insert(json!(0));
    }
}

/// The `Dangling` condition of a FlowSchema naming the priority level `level`.
fn dangling(level: &str, exists: bool) -> Value {
    let (status, reason, message) = if exists {
        (
            "False",
            "Found",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"
            ),
        )
    } else {
        (
            "True",
            "NotFound",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" but there is no such object"
            ),
        )
    };
    json!({"type": "Dangling", "status": status, "reason": reason, "message": message})
}

/// Gives every FlowSchema of `cluster` whose `Dangling` condition no longer says whether its
/// priority level exists the condition that does, as the config consumer applies it.
pub fn mark_dangling(state: &mut State, cluster: &str) -> ApiResult<()> {
    let (Ok(schemas), Ok(levels)) = (
        served(state, cluster, "flowschemas"),
        served(state, cluster, "prioritylevelconfigurations"),
    ) else {
        return Ok(());
    };
    let level_names: Vec<String> =
        crate::apiexport::objects_of(state, cluster, levels.group_resource())
            .iter()
            .filter_map(|l| l.pointer("/metadata/name").and_then(Value::as_str))
            .map(String::from)
            .collect();
    let opts = WriteOptions {
        field_manager: Some(CONSUMER.into()),
        default_manager: CONSUMER.into(),
        ..WriteOptions::default()
    };
    for schema in crate::apiexport::objects_of(state, cluster, schemas.group_resource()) {
        let name = schema
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let level = schema
            .pointer("/spec/priorityLevelConfiguration/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut wanted = dangling(level, level_names.iter().any(|l| l == level));
        let current = schema
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == "Dangling"));
        let unchanged = current.is_some_and(|c| {
            ["status", "reason", "message"]
                .iter()
                .all(|k| c.get(*k) == wanted.get(*k))
        });
        if unchanged {
            continue;
        }
        wanted["lastTransitionTime"] = json!(semantics::now());
        let status = json!({
            "apiVersion": format!("{GROUP}/v1"),
            "kind": "FlowSchema",
            "metadata": {"name": name},
            "status": {"conditions": [wanted]},
        });
        semantics::patch(
            state,
            cluster,
            &schemas,
            "v1",
            "",
            name,
            true,
            PatchKind::Apply,
            &status,
            &opts,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recording_holds_the_mandatory_and_suggested_configuration() {
        let objects = OBJECTS.as_ref().expect("the recording parses");
        let named = |kind: &str, name: &str| {
            objects
                .iter()
                .any(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        };
        assert!(named("FlowSchema", "exempt"));
        assert!(named("FlowSchema", "catch-all"));
        assert!(named("PriorityLevelConfiguration", "exempt"));
        assert!(named("PriorityLevelConfiguration", "global-default"));
    }

    #[test]
    fn a_flow_schema_without_a_precedence_gets_1000() {
        let mut schema = json!({"spec": {"priorityLevelConfiguration": {"name": "x"}}});
        flow_schema_defaults(&mut schema);
        assert_eq!(schema["spec"]["matchingPrecedence"], 1000);
    }

    #[test]
    fn a_queuing_priority_level_gets_kubes_queue_shape() {
        let mut level = json!({"spec": {"type": "Limited",
            "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}});
        priority_level_defaults(&mut level);
        assert_eq!(
            level["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
                   "limitResponse": {"type": "Queue",
                       "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
        );
    }

    #[test]
    fn a_missing_priority_level_makes_a_schema_dangle() {
        let condition = dangling("gone", false);
        assert_eq!(condition["status"], "True");
        assert_eq!(condition["reason"], "NotFound");
    }
}
