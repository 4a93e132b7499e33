//! Bad input through the running agent, as a service-cluster admin would write it: each broken
//! PublishedResource gets a condition (and a `ReconcilingError` Event, as upstream) naming the
//! object, the field and the reason; a good PublishedResource beside them is served all along;
//! fixing the broken one clears its condition.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, STATE_NS, agent, create, crontab_crd, crontab_pr, eventually};
use kcp_core::ObjectClient as _;
use kcp_sync::api::{
    PublishedResource, ResourceCELMutation, ResourceMutation, ResourceMutationSpec,
    ResourceRegexMutation, ResourceTemplateMutation,
};
use kcp_sync::controller::run;
use serde_json::{Value, json};

/// A CRD like the CronTab one, of kind `kind`.
fn crd_of(kind: &str) -> Value {
    let plural = format!("{}s", kind.to_lowercase());
    let text = crontab_crd("x")
        .to_string()
        .replace("crontabs", &plural)
        .replace("CronTabList", &format!("{kind}List"))
        .replace("CronTab", kind)
        .replace("crontab", &kind.to_lowercase())
        .replace("[\"x\"]", "[]");
    serde_json::from_str(&text).unwrap()
}

fn pr_of(name: &str, kind: &str, mutation: Option<ResourceMutation>) -> PublishedResource {
    let mut pr = crontab_pr(name);
    pr.spec.resource.kind = kind.into();
    pr.spec.mutation = mutation.map(|m| ResourceMutationSpec {
        spec: vec![m],
        status: vec![],
    });
    pr
}

fn regex(pattern: &str) -> ResourceMutation {
    ResourceMutation {
        regex: Some(ResourceRegexMutation {
            path: "spec.image".into(),
            pattern: pattern.into(),
            replacement: "x".into(),
        }),
        ..Default::default()
    }
}

/// The condition `type_` of PublishedResource `name`: (status, reason, message).
async fn condition(env: &Env, name: &str, type_: &str) -> Option<(String, String, String)> {
    let pr = env.pr(name).await;
    let c = pr.status?.condition(type_).cloned()?;
    Some((
        c.status,
        c.reason.unwrap_or_default(),
        c.message.unwrap_or_default(),
    ))
}

async fn refused(env: &Env, name: &str, type_: &str, words: &[&str]) {
    eventually(
        &format!("{name}: {type_}=False naming {words:?}"),
        || async {
            condition(env, name, type_)
                .await
                .is_some_and(|(status, _, message)| {
                    status == "False" && words.iter().all(|w| message.contains(w))
                })
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_published_resources_say_what_is_wrong_and_the_good_one_is_served() {
    let env = Env::start().await;
    create(
        &env.service,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}}),
    )
    .await;
    for kind in ["Regexed", "Templated", "Celled"] {
        create(&env.service, crd_of(kind)).await;
    }
    let template = ResourceMutation {
        template: Some(ResourceTemplateMutation {
            path: "spec.image".into(),
            template: "{{ .Value | noSuchFunction }}".into(),
        }),
        ..Default::default()
    };
    let cel = ResourceMutation {
        cel: Some(ResourceCELMutation {
            path: "spec.image".into(),
            expression: "self.value +".into(),
        }),
        ..Default::default()
    };
    for pr in [
        crontab_pr("good"),
        pr_of("bad-regex", "Regexed", Some(regex("("))),
        pr_of("bad-template", "Templated", Some(template)),
        pr_of("bad-cel", "Celled", Some(cel)),
        pr_of("unknown-kind", "NoSuchKind", None),
    ] {
        env.publish(&pr).await;
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(agent(&env), async {
        let _ = stopped.await;
    }));

    refused(
        &env,
        "bad-regex",
        "Syncing",
        &["bad-regex", "spec.mutation", "regex"],
    )
    .await;
    refused(
        &env,
        "bad-template",
        "Syncing",
        &["bad-template", "spec.mutation", "noSuchFunction"],
    )
    .await;
    refused(&env, "bad-cel", "Syncing", &["bad-cel", "spec.mutation"]).await;
    refused(
        &env,
        "unknown-kind",
        "SchemaReady",
        &["spec.resource", "NoSuchKind"],
    )
    .await;
    eventually("the good PublishedResource served", || async {
        condition(&env, "good", "Syncing")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;

    let mut fixed = env.pr("bad-regex").await;
    fixed.spec.mutation = Some(ResourceMutationSpec {
        spec: vec![regex("^(.*)$")],
        status: vec![],
    });
    fixed.status = None;
    let object = serde_json::from_value(serde_json::to_value(&fixed).unwrap()).unwrap();
    env.service
        .replace(&object, kcp_core::Subresource::Main)
        .await
        .unwrap();
    eventually("the fixed PublishedResource syncing", || async {
        condition(&env, "bad-regex", "Syncing")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
