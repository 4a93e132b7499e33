//! The AgentMachine reconciler (spec 1.6, with the corrections of section 5).
//!
//! Flow: owner Machine; deletion through the explicit state machine of [`crate::deletion`]
//! (hook annotation and finalizer ensured while the Machine lives, never re-added once it is
//! deleted); pause (annotation *or* `Cluster.spec.paused`, condition `Paused`); backup label;
//! bootstrap data (waited for before binding; validated, condition `BootstrapDataReady`; the
//! token Secret written with an owner reference); the AgentCluster's ClusterDeployment; Agent
//! recovery by label *and* namespace annotation, else selection ([`crate::select`]) and a claim
//! with a resourceVersion precondition, trying the next candidate on a conflict; `providerID`,
//! addresses and conditions refreshed on every reconcile (upstream freezes them once Ready).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kcp_core::capi;
use kcp_core::runtime::conditions::now;
use kcp_core::runtime::finalizer::{add_finalizer, remove_finalizer};
use kcp_core::runtime::{
    ConditionStatus, ConditionUpdate, EventType, Outcome, set_condition, write_status,
};
use kcp_core::typed::{from_dynamic, object_ref_for};
use kcp_core::{
    ListOptions, ObjectClient, ObjectClientExt, ObjectPatch, PatchOptions, Subresource,
};
use kube::api::DynamicObject;
use serde::Serialize;
use tracing::Instrument;

use crate::agent_cache::AgentCache;
use crate::api::v1beta1::Initialization;
use crate::api::{
    AGENT_MACHINE_FINALIZER, AGENT_MACHINE_REF_LABEL, AgentCluster, AgentMachine, AgentReference,
    CLUSTER_NAME_LABEL, MachineAddress, PRE_TERMINATE_HOOK, UNBIND_STARTED_ANNOTATION,
};
use crate::binding::{
    Binding, IgnitionSettings, addresses, bind_patch, bound_to, label_patch, provider_id,
    sync_patch, unbind_patch,
};
use crate::bootstrap;
use crate::cluster::{ensure_backup_label, label_secret_for_backup};
use crate::conditions::{BOOTSTRAP_DATA_READY, DELETING, PAUSED, Reservation, machine_conditions};
use crate::context::{
    CLUSTER_POLL, Context, LabelsPatch, get_cluster, get_machine, merge_patch, paused, typed_ref,
    version_of,
};
use crate::deletion::{
    AgentView, HookPhase, Observed, ReleaseReason, Step, UNBIND_POLL, has_hook, hook_phase, step,
};
use crate::error::{Error, Result};
use crate::foreign::{Agent, Cluster, ClusterReference, Machine, SecretReference, capi_gvk};
use crate::metrics::ClaimResult;
use crate::render::{key, render_token_secret, token_secret_name};
use crate::select::{Request, rank};

/// What one reconcile found out, written to the status once.
#[derive(Debug, Default)]
struct StatusUpdate {
    agent_ref: Option<AgentReference>,
    addresses: Option<Vec<MachineAddress>>,
    conditions: Vec<ConditionUpdate>,
    ready: Option<bool>,
}

/// Reconciles the AgentMachine `namespace/name`.
pub async fn reconcile_agent_machine(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<Outcome> {
    let span = tracing::info_span!("reconcile", kind = "AgentMachine", namespace, name);
    reconcile(ctx, namespace, name).instrument(span).await
}

async fn reconcile(ctx: &Context, namespace: &str, name: &str) -> Result<Outcome> {
    let client = ctx.client.as_ref();
    let Some(raw) = client
        .get(&object_ref_for::<AgentMachine>(Some(namespace), name))
        .await?
    else {
        return Ok(Outcome::Done);
    };
    let am: AgentMachine = from_dynamic(raw.clone())?;
    if capi::is_externally_managed(&am.metadata) {
        return Ok(Outcome::Done);
    }
    let Some(owner) = capi::owner_of_kind(&am.metadata, "Machine").cloned() else {
        if am.metadata.deletion_timestamp.is_some() {
            remove_finalizer(client, &raw, AGENT_MACHINE_FINALIZER).await?;
            return Ok(Outcome::Done);
        }
        let waiting = "waiting for the Machine owner reference";
        write(client, &am, not_reserved(Some(waiting))).await?;
        return Ok(Outcome::Done);
    };
    let machine = get_machine(client, namespace, &owner).await?;
    let cluster = match machine
        .as_ref()
        .and_then(|m| m.metadata.labels.as_ref()?.get(CLUSTER_NAME_LABEL))
    {
        Some(cluster) => {
            get_cluster(client, namespace, cluster, version_of(&owner.api_version)).await?
        }
        None => None,
    };
    let paused = paused(&am.metadata, cluster.as_ref());
    let subject = Subject {
        raw: &raw,
        am: &am,
        machine: machine.as_ref(),
        machine_api_version: &owner.api_version,
    };
    if let Some(outcome) = deletion(ctx, &subject, paused).await? {
        return Ok(outcome);
    }
    if paused {
        let update = StatusUpdate {
            conditions: vec![ConditionUpdate::new(PAUSED, true, "Paused")],
            ..StatusUpdate::default()
        };
        write(client, &am, update).await?;
        return Ok(Outcome::Done);
    }
    let Some(machine) = machine else {
        return Ok(Outcome::Done);
    };
    let target = object_ref_for::<AgentMachine>(Some(namespace), name);
    ensure_backup_label(client, &target, am.metadata.labels.as_ref()).await?;
    provision(ctx, &am, &machine, cluster.as_ref()).await
}

fn not_reserved(error: Option<&str>) -> StatusUpdate {
    StatusUpdate {
        conditions: machine_conditions(Reservation::NotReserved { error }),
        ready: Some(false),
        ..StatusUpdate::default()
    }
}

/// Everything after deletion and pause: bootstrap data, binding, status.
async fn provision(
    ctx: &Context,
    am: &AgentMachine,
    machine: &Machine,
    cluster: Option<&Cluster>,
) -> Result<Outcome> {
    let client = ctx.client.as_ref();
    let Some(ignition) = bootstrap_or_report(ctx, am, machine).await? else {
        return Ok(Outcome::Done);
    };
    let bound = am.status.as_ref().and_then(|s| s.agent_ref.clone());
    let mut retry = None;
    let agent = match &bound {
        Some(reference) => refresh(ctx, am, reference, &ignition).await?,
        None => {
            if let Err(err) = selector_valid(am) {
                write(client, am, not_reserved(Some(&err.to_string()))).await?;
                return Err(err);
            }
            let Some(cd) = cluster_deployment(ctx, am, machine, cluster).await? else {
                let waiting = "no cluster deployment reference on the AgentCluster yet";
                write(client, am, not_reserved(Some(waiting))).await?;
                return Ok(Outcome::RequeueAfter(CLUSTER_POLL));
            };
            match claim(ctx, am, machine, cd, ignition).await? {
                Claim::Bound(agent) => Some(*agent),
                Claim::NoneFree => None,
                // Another worker may yet lose its claim and leave an Agent free: look again soon.
                Claim::OthersClaiming => {
                    retry = Some(CONTENDED_RETRY);
                    None
                }
            }
        }
    };
    let mut update = bound_status(agent.as_ref(), bound.as_ref());
    update
        .conditions
        .push(ConditionUpdate::new(PAUSED, false, "NotPaused"));
    update.conditions.push(ConditionUpdate::new(
        BOOTSTRAP_DATA_READY,
        true,
        "TokenSecretWritten",
    ));
    write(client, am, update).await?;
    Ok(retry.map_or(Outcome::Done, Outcome::RequeueAfter))
}

/// Whether the AgentMachine's `spec.agentLabelSelector` parses (an unparsable one would match
/// no Agent, and the AgentMachine would wait for one without saying why).
fn selector_valid(am: &AgentMachine) -> Result<()> {
    match &am.spec.agent_label_selector {
        Some(selector) => {
            let object = format!("AgentMachine {}", key(&am.metadata));
            crate::select::validate_selector(&object, "spec.agentLabelSelector", selector)
        }
        None => Ok(()),
    }
}

/// The ignition settings from the bootstrap data; `None` (with the condition written) while
/// there is no `dataSecretName`; an invalid config, or a data Secret that does not exist, is
/// written as a condition and returned (the one permanent, the other retried).
async fn bootstrap_or_report(
    ctx: &Context,
    am: &AgentMachine,
    machine: &Machine,
) -> Result<Option<IgnitionSettings>> {
    let client = ctx.client.as_ref();
    let (reason, message, error) = match prepare_bootstrap(ctx, am, machine).await {
        Ok(Some(ignition)) => return Ok(Some(ignition)),
        Ok(None) => (
            "WaitingForBootstrapData",
            "waiting for Machine.spec.bootstrap.dataSecretName".to_owned(),
            None,
        ),
        Err(err @ Error::InvalidObject { .. }) => {
            ("BootstrapDataInvalid", err.to_string(), Some(err))
        }
        Err(err @ Error::Waiting { .. }) => ("WaitingForBootstrapData", err.to_string(), Some(err)),
        Err(err) => return Err(err),
    };
    // A bound AgentMachine keeps its reservation conditions: only the bootstrap data is amiss.
    let bound = am.status.as_ref().is_some_and(|s| s.agent_ref.is_some());
    let mut update = match bound {
        true => StatusUpdate::default(),
        false => not_reserved(Some(&message)),
    };
    update
        .conditions
        .push(ConditionUpdate::new(BOOTSTRAP_DATA_READY, false, reason).message(message.clone()));
    write(client, am, update).await?;
    match error {
        Some(err) => Err(err),
        None => Ok(None),
    }
}

/// The status of an AgentMachine with `agent` bound (or none; `bound` is the reference it had).
fn bound_status(agent: Option<&Agent>, bound: Option<&AgentReference>) -> StatusUpdate {
    let Some(agent) = agent else {
        let gone = bound.map(|r| {
            format!(
                "the bound Agent {}/{} no longer exists",
                r.namespace, r.name
            )
        });
        return not_reserved(gone.as_deref());
    };
    let conditions = machine_conditions(Reservation::Reserved(agent));
    let ready = conditions
        .last()
        .is_some_and(|c| c.status == ConditionStatus::True);
    StatusUpdate {
        agent_ref: Some(AgentReference {
            namespace: agent.metadata.namespace.clone().unwrap_or_default(),
            name: agent.metadata.name.clone().unwrap_or_default(),
        }),
        addresses: Some(addresses(agent)),
        conditions,
        ready: Some(ready),
    }
}

/// The ClusterDeployment the AgentMachine's cluster uses, from the AgentCluster named by
/// `Cluster.spec.infrastructureRef`; `None` while it has none.
async fn cluster_deployment(
    ctx: &Context,
    am: &AgentMachine,
    machine: &Machine,
    cluster: Option<&Cluster>,
) -> Result<Option<ClusterReference>> {
    let namespace = am.metadata.namespace.as_deref().unwrap_or_default();
    if machine
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CLUSTER_NAME_LABEL))
        .is_none()
    {
        let machine_key = format!("Machine {}", key(&machine.metadata));
        return Err(Error::invalid(
            machine_key,
            &format!("metadata.labels[{CLUSTER_NAME_LABEL}]"),
            "is required",
        ));
    }
    let Some(infra) = cluster.and_then(|c| c.spec.infrastructure_ref.as_ref()) else {
        return Ok(None);
    };
    let Some(ac) = ctx
        .client
        .get_typed::<AgentCluster>(Some(namespace), &infra.name)
        .await?
    else {
        return Ok(None);
    };
    let reference = ac
        .status
        .map(|s| s.cluster_deployment_ref)
        .unwrap_or_default();
    if reference.name.is_empty() {
        return Ok(None);
    }
    Ok(Some(ClusterReference {
        namespace: if reference.namespace.is_empty() {
            namespace.to_owned()
        } else {
            reference.namespace
        },
        name: reference.name,
    }))
}

/// Reads the bootstrap data and writes the token Secret; `None` while the Machine has no
/// `dataSecretName`.
async fn prepare_bootstrap(
    ctx: &Context,
    am: &AgentMachine,
    machine: &Machine,
) -> Result<Option<IgnitionSettings>> {
    let client = ctx.client.as_ref();
    let namespace = am.metadata.namespace.as_deref().unwrap_or_default();
    let Some(data_secret) = machine
        .spec
        .bootstrap
        .data_secret_name
        .clone()
        .filter(|d| !d.is_empty())
    else {
        return Ok(None);
    };
    let secret_key = format!("{namespace}/{data_secret}");
    let Some(secret) = client
        .get_typed::<Secret>(Some(namespace), &data_secret)
        .await?
    else {
        return Err(Error::Waiting {
            object: format!("AgentMachine {}", key(&am.metadata)),
            what: format!(
                "bootstrap data Secret {secret_key}, which Machine {} names in spec.bootstrap.dataSecretName",
                key(&machine.metadata)
            ),
        });
    };
    if let Err(err) = label_secret_for_backup(client, namespace, &data_secret).await {
        tracing::warn!(secret = %secret_key, error = %err, "could not add the backup label");
    }
    let value = secret
        .data
        .as_ref()
        .and_then(|d| d.get("value"))
        .ok_or_else(|| {
            Error::invalid(format!("Secret {secret_key}"), "data.value", "is missing")
        })?;
    let data = bootstrap::parse(&secret_key, &value.0)?;
    let token_ref = match &data.token {
        Some(token) => {
            write_token_secret(client, &secret, token).await?;
            Some(SecretReference {
                namespace: namespace.to_owned(),
                name: token_secret_name(&data_secret),
            })
        }
        None => None,
    };
    Ok(Some(IgnitionSettings {
        machine_config_pool: data.machine_config_pool,
        token_ref,
        headers: data.headers,
    }))
}

/// Creates the token Secret, or updates it when the token or its labels changed (token
/// rotation). Other labels on an existing Secret are kept.
async fn write_token_secret(
    client: &dyn ObjectClient,
    data_secret: &Secret,
    token: &str,
) -> Result<()> {
    let desired = render_token_secret(data_secret, token)?;
    let namespace = desired.metadata.namespace.clone().unwrap_or_default();
    let name = desired.metadata.name.clone().unwrap_or_default();
    let Some(mut existing) = client.get_typed::<Secret>(Some(&namespace), &name).await? else {
        // AlreadyExists (a concurrent AgentMachine of the same pool) is transient: the retry
        // finds the Secret.
        client.create_typed(&desired).await?;
        return Ok(());
    };
    let mut labels = existing.metadata.labels.clone().unwrap_or_default();
    labels.extend(desired.metadata.labels.clone().unwrap_or_default());
    if existing.data == desired.data && existing.metadata.labels.as_ref() == Some(&labels) {
        return Ok(());
    }
    existing.metadata.labels = Some(labels);
    existing.data = desired.data;
    client.replace_typed(&existing).await?;
    Ok(())
}

/// What [`claim`] came to.
enum Claim {
    /// This Agent is now bound to the AgentMachine.
    Bound(Box<Agent>),
    /// No eligible Agent is free.
    NoneFree,
    /// Every eligible Agent was being claimed by another worker of this process.
    OthersClaiming,
}

/// How soon an AgentMachine that found every candidate being claimed by other workers looks again.
const CONTENDED_RETRY: Duration = Duration::from_millis(200);

/// Recovers an Agent already labelled for this AgentMachine, or selects and claims one.
async fn claim(
    ctx: &Context,
    am: &AgentMachine,
    machine: &Machine,
    cd: ClusterReference,
    ignition: IgnitionSettings,
) -> Result<Claim> {
    let client = ctx.client.as_ref();
    if let Some(agent) = labelled_for(ctx, am).await? {
        set_provider_id(client, am, &agent).await?;
        return Ok(Claim::Bound(Box::new(agent)));
    }
    let binding = Binding {
        machine_name: am.metadata.name.clone().unwrap_or_default(),
        machine_namespace: am.metadata.namespace.clone().unwrap_or_default(),
        cluster_deployment: cd,
        ignition,
    };
    let request = Request {
        selector: am.spec.agent_label_selector.as_ref(),
        failure_domain: machine.spec.failure_domain.as_deref(),
        inventory: ctx.config.inventory_preference,
    };
    let claimed = claim_free(ctx, &request, &binding).await?;
    if let Claim::Bound(agent) = &claimed {
        set_provider_id(client, am, agent).await?;
    }
    Ok(claimed)
}

/// The Agent already bound to `am` by an earlier attempt. Always from the server, never a
/// cache: an Agent claimed by an attempt whose status write failed must be found again, or
/// the AgentMachine would take a second one.
async fn labelled_for(ctx: &Context, am: &AgentMachine) -> Result<Option<Agent>> {
    let namespace = am.metadata.namespace.as_deref().unwrap_or_default();
    let name = am.metadata.name.as_deref().unwrap_or_default();
    let labelled: Vec<Agent> = ctx
        .client
        .list_typed(
            ctx.config.agent_namespace.as_deref(),
            &ListOptions::labels(format!("{AGENT_MACHINE_REF_LABEL}={name}")),
        )
        .await?;
    Ok(labelled.into_iter().find(|a| bound_to(a, namespace, name)))
}

/// Ranks the free Agents for `request` and claims the first one no other worker is claiming
/// (a conflict or a vanished Agent moves on to the next).
async fn claim_free(ctx: &Context, request: &Request<'_>, binding: &Binding) -> Result<Claim> {
    let started = Instant::now();
    let agents = free_agents(ctx).await?;
    let mut others_claiming = false;
    for candidate in rank(&agents, request) {
        let Some(_claiming) = ctx.claims.begin(&key(&candidate.metadata)) else {
            others_claiming = true;
            continue;
        };
        let patch = bind_patch(candidate, binding);
        match patch_agent(ctx.client.as_ref(), candidate, &patch).await {
            Ok(agent) => {
                ctx.metrics.claim(ClaimResult::Claimed);
                ctx.metrics.selection(started.elapsed());
                return Ok(Claim::Bound(Box::new(agent)));
            }
            Err(err) if err.is_conflict() || err.is_not_found() => {
                ctx.metrics.claim(ClaimResult::Conflict)
            }
            Err(err) => return Err(err),
        }
    }
    ctx.metrics.claim(ClaimResult::NoneEligible);
    ctx.metrics.selection(started.elapsed());
    Ok(if others_claiming {
        Claim::OthersClaiming
    } else {
        Claim::NoneFree
    })
}

/// The Agents without an AgentMachine: from the controller's Agent cache once it synced (a
/// stale entry only costs a 409 on the claim), else listed from the server.
async fn free_agents(ctx: &Context) -> Result<Vec<Agent>> {
    if let Some(agents) = ctx.agents.as_ref().and_then(AgentCache::synced) {
        return Ok(agents
            .state()
            .iter()
            .filter(|a| {
                !a.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key(AGENT_MACHINE_REF_LABEL))
            })
            .map(|a| Agent::clone(a))
            .collect());
    }
    Ok(ctx
        .client
        .list_typed(
            ctx.config.agent_namespace.as_deref(),
            &ListOptions::labels(format!("!{AGENT_MACHINE_REF_LABEL}")),
        )
        .await?)
}

async fn patch_agent(
    client: &dyn ObjectClient,
    agent: &Agent,
    patch: &crate::binding::AgentPatch,
) -> Result<Agent> {
    let target = typed_ref::<Agent>(
        agent.metadata.namespace.as_deref().unwrap_or_default(),
        agent.metadata.name.as_deref().unwrap_or_default(),
    );
    let body = serde_json::to_value(patch).map_err(|e| Error::Serialization {
        context: format!("encoding a patch of {target}"),
        message: e.to_string(),
    })?;
    let patched = client
        .patch(
            &target,
            Subresource::Main,
            &ObjectPatch::Merge(body),
            &PatchOptions::default(),
        )
        .await?;
    Ok(from_dynamic(patched)?)
}

#[derive(Serialize)]
struct ProviderIdPatch {
    spec: ProviderIdSpec,
}

#[derive(Serialize)]
struct ProviderIdSpec {
    #[serde(rename = "providerID")]
    provider_id: String,
}

async fn set_provider_id(
    client: &dyn ObjectClient,
    am: &AgentMachine,
    agent: &Agent,
) -> Result<()> {
    let wanted = provider_id(agent.metadata.name.as_deref().unwrap_or_default());
    if am.spec.provider_id.as_deref() == Some(wanted.as_str()) {
        return Ok(());
    }
    let target = typed_ref::<AgentMachine>(
        am.metadata.namespace.as_deref().unwrap_or_default(),
        am.metadata.name.as_deref().unwrap_or_default(),
    );
    merge_patch(
        client,
        &target,
        Subresource::Main,
        &ProviderIdPatch {
            spec: ProviderIdSpec {
                provider_id: wanted,
            },
        },
    )
    .await
}

/// The bound Agent, read fresh, with its label and ignition settings brought in line; `None`
/// when it was deleted.
async fn refresh(
    ctx: &Context,
    am: &AgentMachine,
    reference: &AgentReference,
    ignition: &IgnitionSettings,
) -> Result<Option<Agent>> {
    let client = ctx.client.as_ref();
    let Some(mut agent) = client
        .get_typed::<Agent>(Some(&reference.namespace), &reference.name)
        .await?
    else {
        return Ok(None);
    };
    let namespace = am.metadata.namespace.as_deref().unwrap_or_default();
    let name = am.metadata.name.as_deref().unwrap_or_default();
    if let Some(patch) = label_patch(&agent, name, namespace) {
        agent = patch_agent(client, &agent, &patch).await?;
    }
    if let Some(patch) = sync_patch(&agent, ignition) {
        agent = patch_agent(client, &agent, &patch).await?;
    }
    set_provider_id(client, am, &agent).await?;
    Ok(Some(agent))
}

/// What deletion works on: the AgentMachine (as read, and raw for finalizer writes) and its
/// Machine (`None` when gone) with the apiVersion the owner reference names.
struct Subject<'a> {
    raw: &'a DynamicObject,
    am: &'a AgentMachine,
    machine: Option<&'a Machine>,
    machine_api_version: &'a str,
}

/// Deletion handling; `Some(outcome)` when deletion is under way and the reconcile ends here.
async fn deletion(ctx: &Context, subject: &Subject<'_>, paused: bool) -> Result<Option<Outcome>> {
    let client = ctx.client.as_ref();
    let (am, machine) = (subject.am, subject.machine);
    let phase = hook_phase(machine);
    let am_deleting = am.metadata.deletion_timestamp.is_some();
    if phase == HookPhase::Live && !am_deleting {
        if let Some(machine) = machine.filter(|m| !has_hook(m)) {
            set_hook(client, machine, subject.machine_api_version, true).await?;
        }
        add_finalizer(client, subject.raw, AGENT_MACHINE_FINALIZER).await?;
        return Ok(None);
    }
    let agent_ref = am.status.as_ref().and_then(|s| s.agent_ref.clone());
    let agent = match &agent_ref {
        Some(r) => {
            client
                .get_typed::<Agent>(Some(&r.namespace), &r.name)
                .await?
        }
        None => None,
    };
    let namespace = am.metadata.namespace.as_deref().unwrap_or_default();
    let name = am.metadata.name.as_deref().unwrap_or_default();
    let view = match (&agent_ref, &agent) {
        (None, _) => AgentView::None,
        (Some(_), None) => AgentView::Missing,
        // Released by this AgentMachine and claimed by another since: nothing of ours to unbind
        // or wait for (a fault run showed the host taken back otherwise).
        (Some(_), Some(a)) if claimed_elsewhere(a, namespace, name) => AgentView::None,
        (Some(_), Some(a)) => AgentView::Present(a),
    };
    let observed = Observed {
        phase,
        agent_machine_deleting: am_deleting,
        paused,
        agent: view,
        unbinding_for: unbind_wait(am),
        timeout: ctx.config.unbind_timeout,
    };
    act(
        ctx,
        subject,
        step(&observed),
        agent.as_ref(),
        observed.unbinding_for,
    )
    .await
}

/// Whether `agent` carries another AgentMachine's label (unlabelled is still this one's: it is
/// released, and deletion waits for it to return to discovery).
fn claimed_elsewhere(agent: &Agent, namespace: &str, name: &str) -> bool {
    agent.label(AGENT_MACHINE_REF_LABEL).is_some() && !bound_to(agent, namespace, name)
}

fn deleting(reason: &str, message: String) -> StatusUpdate {
    StatusUpdate {
        conditions: vec![ConditionUpdate::new(DELETING, false, reason).message(message)],
        ..StatusUpdate::default()
    }
}

/// Carries out one deletion [`Step`].
async fn act(
    ctx: &Context,
    subject: &Subject<'_>,
    next: Step,
    agent: Option<&Agent>,
    unbinding_for: Duration,
) -> Result<Option<Outcome>> {
    let client = ctx.client.as_ref();
    let am = subject.am;
    match next {
        Step::NotDeleting => Ok(None),
        Step::WaitForHook => {
            let update = deleting(
                "WaitingForPreTerminateHook",
                "the Machine is draining".into(),
            );
            write(client, am, update).await?;
            Ok(Some(Outcome::Done))
        }
        Step::Unbind => {
            mark_unbind_started(client, am).await?;
            if let Some(agent) = agent {
                patch_agent(client, agent, &unbind_patch(agent)).await?;
            }
            let message = "the Agent was unbound; waiting for it to return to discovery";
            write(client, am, deleting("UnbindingAgent", message.into())).await?;
            Ok(Some(Outcome::RequeueAfter(UNBIND_POLL)))
        }
        Step::WaitForUnbound => {
            mark_unbind_started(client, am).await?;
            let state = agent.map(|a| a.state().to_owned()).unwrap_or_default();
            let message = format!(
                "waiting {}s (at most {}s) for the Agent to return to discovery; host state {state:?}",
                unbinding_for.as_secs(),
                ctx.config.unbind_timeout.as_secs()
            );
            write(client, am, deleting("WaitingForAgentUnbound", message)).await?;
            Ok(Some(Outcome::RequeueAfter(UNBIND_POLL)))
        }
        Step::Release(reason) => {
            release(ctx, subject, reason, unbinding_for).await?;
            Ok(Some(Outcome::Done))
        }
    }
}

/// How long ago this provider started unbinding `am`'s Agent (zero before it did).
fn unbind_wait(am: &AgentMachine) -> Duration {
    am.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(UNBIND_STARTED_ANNOTATION))
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| jiff::Timestamp::now().duration_since(t))
        .and_then(|d| Duration::try_from(d).ok())
        .unwrap_or_default()
}

/// Records when the unbind wait started (once).
async fn mark_unbind_started(client: &dyn ObjectClient, am: &AgentMachine) -> Result<()> {
    let started = am
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(UNBIND_STARTED_ANNOTATION));
    if started {
        return Ok(());
    }
    let namespace = am.metadata.namespace.as_deref().unwrap_or_default();
    let name = am.metadata.name.as_deref().unwrap_or_default();
    let target = object_ref_for::<AgentMachine>(Some(namespace), name);
    let now = jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or_else(|_| jiff::Timestamp::now());
    let patch = serde_json::json!({"metadata": {"annotations": {UNBIND_STARTED_ANNOTATION: now.to_string()}}});
    merge_patch(client, &target, Subresource::Main, &patch).await
}

async fn release(
    ctx: &Context,
    subject: &Subject<'_>,
    reason: ReleaseReason,
    unbinding_for: Duration,
) -> Result<()> {
    let client = ctx.client.as_ref();
    let (raw, am) = (subject.raw, subject.am);
    if let Some(machine) = subject.machine.filter(|m| has_hook(m)) {
        set_hook(client, machine, subject.machine_api_version, false).await?;
    }
    if matches!(
        reason,
        ReleaseReason::AgentUnbound | ReleaseReason::TimedOut
    ) {
        ctx.metrics.unbind(unbinding_for);
    }
    if reason == ReleaseReason::TimedOut {
        let message = format!(
            "the Agent did not return to discovery within {}s; released the Machine anyway",
            ctx.config.unbind_timeout.as_secs()
        );
        let update = StatusUpdate {
            conditions: vec![
                ConditionUpdate::new(DELETING, false, "UnbindTimedOut").message(message.clone()),
            ],
            ..StatusUpdate::default()
        };
        write(client, am, update).await?;
        record(ctx, am, EventType::Warning, "UnbindTimedOut", &message).await;
    }
    tracing::info!(?reason, "released the pre-terminate hook and the finalizer");
    // The status write above moved the resourceVersion: remove the finalizer from a fresh copy.
    let fresh = client.get(&kcp_core::ObjectRef::from_object(raw)?).await?;
    if let Some(fresh) = fresh {
        remove_finalizer(client, &fresh, AGENT_MACHINE_FINALIZER).await?;
    }
    Ok(())
}

/// Records an Event about `am` (a failure to record is logged, never returned).
pub(crate) async fn record(
    ctx: &Context,
    am: &AgentMachine,
    kind: EventType,
    reason: &str,
    message: &str,
) {
    let client = ctx.client.as_ref();
    ctx.events.publish(client, am, kind, reason, message).await;
}

/// Adds or removes the pre-terminate hook annotation on the Machine (a merge patch of only
/// that key).
async fn set_hook(
    client: &dyn ObjectClient,
    machine: &Machine,
    api_version: &str,
    present: bool,
) -> Result<()> {
    let target = kcp_core::ObjectRef::namespaced(
        capi_gvk(version_of(api_version), "Machine"),
        machine.metadata.namespace.as_deref().unwrap_or_default(),
        machine.metadata.name.as_deref().unwrap_or_default(),
    );
    let patch = LabelsPatch::annotation(PRE_TERMINATE_HOOK, present.then_some(""));
    match merge_patch(client, &target, Subresource::Main, &patch).await {
        Err(err) if err.is_not_found() => Ok(()),
        other => other,
    }
}

async fn write(client: &dyn ObjectClient, am: &AgentMachine, update: StatusUpdate) -> Result<()> {
    let namespace = am.metadata.namespace.as_deref().unwrap_or_default();
    let name = am.metadata.name.as_deref().unwrap_or_default();
    let generation = am.metadata.generation;
    let stamp = now();
    write_status::<AgentMachine, _>(client, Some(namespace), name, |obj| {
        let status = obj.status.get_or_insert_with(Default::default);
        if let Some(reference) = &update.agent_ref {
            status.agent_ref = Some(reference.clone());
        }
        if let Some(addresses) = &update.addresses {
            status.addresses = addresses.clone();
        }
        if let Some(ready) = update.ready {
            // One-way, as Cluster API's contract and upstream have it: once provisioned, an
            // AgentMachine stays ready whatever its Agent's conditions do later.
            let ready = ready || status.ready;
            status.ready = ready;
            status.initialization = Some(Initialization {
                provisioned: Some(ready),
            });
        }
        for c in &update.conditions {
            set_condition(
                &mut status.conditions,
                c.clone().generation(generation),
                stamp.clone(),
            );
        }
    })
    .await?;
    Ok(())
}
