//! What kube-apiserver's Job and CronJob strategies do to a new object beyond its decode defaults
//! ([`crate::defaults::job`], [`crate::defaults::cron_job`]): a Job gets the selector and pod
//! labels that tie it to its pods (unless it chose its selector by hand), and a CronJob's
//! schedule is checked as the cron parser kube uses reads it. Neither is run: no Job controller
//! makes pods, and no CronJob fires.

use serde_json::{Map, Value, json};

use crate::status::{ApiError, ApiResult};

/// The label a generated Job selector matches (and its old, unprefixed twin on the pods).
const CONTROLLER_UID: [&str; 2] = ["batch.kubernetes.io/controller-uid", "controller-uid"];
const JOB_NAME: [&str; 2] = ["batch.kubernetes.io/job-name", "job-name"];

/// A new Job: its generated selector and pod labels, its labels from its pods' when it has none,
/// and an empty status.
pub fn admit_new_job(obj: &mut Value) {
    let uid = meta_text(obj, "uid");
    let name = meta_text(obj, "name");
    obj["status"] = json!({});
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    if !manual {
        spec.insert("manualSelector".into(), json!(false));
        spec.insert(
            "selector".into(),
            json!({"matchLabels": {CONTROLLER_UID[0]: uid}}),
        );
        label_pod_template(spec, &uid, &name);
    }
    let template_labels = obj.pointer("/spec/template/metadata/labels").cloned();
    let unlabelled = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if let (true, Some(labels), Some(meta)) = (
        unlabelled,
        template_labels,
        obj.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        meta.insert("labels".into(), labels);
    }
}

fn meta_text(obj: &Value, key: &str) -> String {
    obj.pointer(&format!("/metadata/{key}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The pod template's labels with the Job's uid and name, under both label names.
fn label_pod_template(spec: &mut Map<String, Value>, uid: &str, name: &str) {
    let Some(template) = spec.get_mut("template").and_then(Value::as_object_mut) else {
        return;
    };
    let metadata = template.entry("metadata").or_insert_with(|| json!({}));
    if !metadata.is_object() {
        *metadata = json!({});
    }
    let labels = &mut metadata["labels"];
    if !labels.is_object() {
        *labels = json!({});
    }
    for key in CONTROLLER_UID {
        labels[key] = json!(uid);
    }
    for key in JOB_NAME {
        labels[key] = json!(name);
    }
}

/// A new CronJob: its schedule checked, and an empty status.
pub fn admit_new_cron_job(name: &str, obj: &mut Value) -> ApiResult<()> {
    let schedule = obj
        .pointer("/spec/schedule")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Err(why) = check_schedule(schedule) {
        return Err(ApiError::invalid(
            "batch",
            "CronJob",
            name,
            "spec.schedule",
            &format!("Invalid value: \"{schedule}\": {why}"),
        ));
    }
    obj["status"] = json!({});
    Ok(())
}

/// The standard cron parser's verdict on a schedule: a descriptor (`@hourly`, `@every 5m`) or
/// exactly five fields. The fields' own values are not read (kcp-sim runs no schedule).
fn check_schedule(schedule: &str) -> Result<(), String> {
    if schedule.contains("TZ") {
        return Err("cannot use TZ or CRON_TZ in schedule, use timeZone field instead".into());
    }
    const DESCRIPTORS: [&str; 8] = [
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
        "@every",
    ];
    if DESCRIPTORS.iter().any(|d| schedule.starts_with(d)) {
        return Ok(());
    }
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_job_is_tied_to_its_pods_by_uid_and_name() {
        let mut job = json!({"metadata": {"name": "j", "uid": "u1"},
                             "spec": {"template": {"spec": {"containers": []}}}});
        admit_new_job(&mut job);
        let labels = json!({"batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "j",
                            "controller-uid": "u1", "job-name": "j"});
        assert_eq!(job["spec"]["template"]["metadata"]["labels"], labels);
        assert_eq!(job["metadata"]["labels"], labels);
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}})
        );
        assert_eq!(job["spec"]["manualSelector"], false);
    }

    #[test]
    fn a_schedule_needs_five_fields_or_a_descriptor() {
        assert!(check_schedule("*/5 * * * *").is_ok());
        assert!(check_schedule("@hourly").is_ok());
        assert_eq!(
            check_schedule("not a schedule").unwrap_err(),
            "expected exactly 5 fields, found 3: [not a schedule]"
        );
        let error =
            admit_new_cron_job("c", &mut json!({"spec": {"schedule": "1 2 3 4 5 6"}})).unwrap_err();
        assert!(
            error
                .message
                .contains("spec.schedule: Invalid value: \"1 2 3 4 5 6\"")
        );
    }
}
