//! Server-side printing: `meta.k8s.io/v1` Tables, as kubectl asks for them
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) so that `kubectl get` shows the
//! columns it shows against a real server.
//!
//! Columns come from a CRD's `additionalPrinterColumns` (JSONPath, `priority` 1 for `-o wide`,
//! `date` columns as ages), from kube-apiserver's printers for the builtin kinds, and from kcp's
//! for Workspace, WorkspaceType, LogicalCluster, APIExport and APIBinding. Rows carry the
//! object's metadata (`includeObject=Metadata`, the default, for `--show-labels` and `-L`), the
//! whole object (`Object`) or nothing (`None`).

use serde_json::{Value, json};

use crate::kind_cells;
use crate::resource::ResourceType;

/// How a cell is computed from an object.
#[derive(Debug, Clone)]
pub enum Cell {
    /// A Kubernetes JSONPath (`.spec.replicas`, `.status.conditions[?(@.type=="Ready")].status`).
    Path(String),
    /// A CRD printer column's JSONPath: as [`Cell::Path`], but `null` when it finds nothing
    /// (the apiextensions server leaves such a cell empty where kube's printers write
    /// `<none>`).
    PrinterColumn(String),
    /// `metadata.creationTimestamp` as an age (`5m`, `3d4h`).
    Age,
    /// A JSONPath whose timestamp is shown as an age (`date` printer columns).
    AgeOf(String),
    /// How many keys `data` and `binaryData` hold.
    DataCount,
    /// `<ready>/<replicas>` of a workload.
    ReadyOfReplicas,
    /// The comma-separated `port/protocol` pairs of a Service.
    Ports,
    /// `kind/name` of an Event's involved object.
    InvolvedObject,
    /// When an Event was first or last seen, as an age (`printEvent`).
    EventSeen {
        /// The last sighting (else the first).
        last: bool,
    },
    /// `Ready` or `NotReady` from a Node's Ready condition.
    NodeStatus,
    /// `<kind>/<name>` of a binding's roleRef.
    RoleRef,
    /// The number of items of the list at a JSONPath.
    CountOf(String),
    /// The names, or images, of a pod template's containers.
    Containers(&'static str),
    /// A JSONPath whose absence prints as an empty cell, not `<none>` (kcp's Workspace
    /// Region, conformance kubectl-kcp/workspaces-created-and-listed).
    PathOrEmpty(&'static str),
    /// A Go integer field at a JSONPath: 0 when absent.
    Integer(&'static str),
    /// A workload's `spec.selector`, written as a string (`app=web`).
    Selector,
    /// `<ready>/<containers>` of a Pod.
    PodReady,
    /// A Pod's aggregate status (`Pending`, `Init:0/1`, `CrashLoopBackOff`, `Terminating`).
    PodStatus,
    /// A Pod's restart count, with the age of the last restart.
    PodRestarts,
    /// `0/<n>` for the `n` items of the list at a JSONPath (a Pod's readiness gates), `<none>`
    /// for none.
    CountOfOrNone(&'static str),
    /// A Job's state from its conditions (`Complete`, `Failed`, `Suspended`, `Running`, ...).
    JobStatus,
    /// `<succeeded>/<completions>` of a Job.
    JobCompletions,
    /// How long a Job has run (empty before it starts).
    JobDuration,
    /// The names, or images, of the containers of a CronJob's job template.
    JobTemplateContainers(&'static str),
    /// A boolean field as `True` or `False` (`<none>` when absent).
    Bool(&'static str),
    /// A timestamp at a JSONPath as an age, `<none>` when absent.
    AgeOrNone(&'static str),
    /// A value at a JSONPath, this text when absent.
    PathOr(&'static str, &'static str),
    /// A string map at a JSON pointer as `key=value` pairs in key order (`<none>` when empty),
    /// as `labels.FormatLabels` writes a pod template's node selector.
    Labels(&'static str),
    /// The subjects of a binding of one kind (`User`, `Group`, `ServiceAccount` as
    /// `<namespace>/<name>`), joined with `, `.
    Subjects(&'static str),
    /// `<kind>.<group>/<name>` of the controller owner, `<none>` without one.
    ControllerOf,
    /// A cell a function of the object computes (see [`crate::kind_cells`]).
    Computed(fn(&Value) -> Value),
    /// A ResourceQuota's `name: used/hard` pairs: its `limits.*` ones, or the others.
    QuotaUsage {
        /// The `limits.*` resources rather than the others.
        limits: bool,
    },
}

/// One column of a Table.
#[derive(Debug, Clone)]
pub struct Column {
    /// Header, as kubectl prints it upper-cased.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    /// 0 for `kubectl get`, 1 and more only with `-o wide`.
    pub priority: i64,
    /// `format` (`name` for the Name column).
    pub format: String,
    /// What the column shows, as the real server describes it.
    pub description: String,
    /// How the cell is computed.
    pub cell: Cell,
    /// Whether `columnDefinitions` lists the column: kube's IPAddress printer writes an age
    /// cell it declares no column for.
    pub declared: bool,
}

impl Column {
    fn new(name: &str, type_: &str, cell: Cell) -> Self {
        Column {
            name: name.into(),
            type_: type_.into(),
            priority: 0,
            format: String::new(),
            description: String::new(),
            cell,
            declared: true,
        }
    }

    /// The column's cells without its definition.
    fn undeclared(mut self) -> Self {
        self.declared = false;
        self
    }

    fn path(name: &str, path: &str) -> Self {
        Column::new(name, "string", Cell::Path(path.into()))
    }

    /// A string column of the value at `path`, `absent` when there is none.
    fn path_or(name: &str, path: &'static str, absent: &'static str) -> Self {
        Column::new(name, "string", Cell::PathOr(path, absent))
    }

    fn wide(mut self) -> Self {
        self.priority = 1;
        self
    }

    fn described(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }
}

/// The Go documentation of a field of a builtin kind (a column's description in kube's printers).
fn doc(group: &str, kind: &str, path: &[&str]) -> String {
    crate::openapi::field_description(group, "v1", kind, path).unwrap_or_default()
}

/// The description of every Name column (ObjectMeta's `name`).
pub fn name_description() -> String {
    meta_doc("name")
}

/// The Go documentation of an ObjectMeta field.
fn meta_doc(field: &str) -> String {
    doc("", "ConfigMap", &["metadata", field])
}

fn name() -> Column {
    let mut column = Column::path("Name", ".metadata.name").described(meta_doc("name"));
    column.format = "name".into();
    column
}

/// A string column a function of the object computes.
fn computed(name: &str, cell: fn(&Value) -> Value) -> Column {
    Column::new(name, "string", Cell::Computed(cell))
}

/// `Created At`: the creation time as written (kube's printers of roles and limit ranges).
fn created_at() -> Column {
    Column::new(
        "Created At",
        "date",
        Cell::Path(".metadata.creationTimestamp".into()),
    )
    .described(meta_doc("creationTimestamp"))
}

/// kube's Scale printer (`kubectl get --subresource=scale`): the name (without its `name`
/// format), the desired and the available replicas, and the age.
pub fn scale_columns() -> Vec<Column> {
    let replicas = |header: &str, part: &str, path: &'static str| {
        Column::new(header, "integer", Cell::Integer(path)).described(doc(
            "autoscaling",
            "Scale",
            &[part, "replicas"],
        ))
    };
    vec![
        Column::path("Name", ".metadata.name").described(meta_doc("name")),
        replicas("Desired", "spec", ".spec.replicas"),
        replicas("Available", "status", ".status.replicas"),
        age(),
    ]
}

fn age() -> Column {
    Column::new("Age", "string", Cell::Age).described(meta_doc("creationTimestamp"))
}

/// `daemonSetColumnDefinitions`: the scheduling counts, the node selector, and the wide
/// template columns.
fn daemon_set_columns() -> Vec<Column> {
    let status = |field: &str| doc("apps", "DaemonSet", &["status", field]);
    let count = |header: &str, field: &'static str, path: &'static str| {
        Column::new(header, "integer", Cell::Integer(path)).described(status(field))
    };
    vec![
        name(),
        count(
            "Desired",
            "desiredNumberScheduled",
            ".status.desiredNumberScheduled",
        ),
        count(
            "Current",
            "currentNumberScheduled",
            ".status.currentNumberScheduled",
        ),
        count("Ready", "numberReady", ".status.numberReady"),
        count(
            "Up-to-date",
            "updatedNumberScheduled",
            ".status.updatedNumberScheduled",
        ),
        count("Available", "numberAvailable", ".status.numberAvailable"),
        Column::new(
            "Node Selector",
            "string",
            Cell::Labels("/spec/template/spec/nodeSelector"),
        )
        .described(doc("", "Pod", &["spec", "nodeSelector"])),
        age(),
        template_containers(Cell::Containers("name")),
        template_containers(Cell::Containers("image")),
        Column::new("Selector", "string", Cell::Selector)
            .wide()
            .described(doc("apps", "DaemonSet", &["spec", "selector"])),
    ]
}

/// The `-o wide` column of a workload's pod template: its containers' names or images
/// (`Cell::Containers("name")`, `Cell::JobTemplateContainers("image")`).
fn template_containers(cell: Cell) -> Column {
    let (name, description) = match &cell {
        Cell::Containers("image") | Cell::JobTemplateContainers("image") => (
            "Images",
            "Images referenced by each container in the template.",
        ),
        _ => ("Containers", "Names of each container in the template."),
    };
    Column::new(name, "string", cell)
        .wide()
        .described(description)
}

/// kube's ReplicaSet and ReplicationController printers: desired, current and ready replicas
/// and age; the template's containers, images and the selector (`selector`) with `-o wide`.
fn replica_columns(group: &str, kind: &str, selector: Cell) -> Vec<Column> {
    let field = |path: &[&str]| doc(group, kind, path);
    vec![
        name(),
        Column::new("Desired", "integer", Cell::Integer(".spec.replicas"))
            .described(field(&["spec", "replicas"])),
        Column::new("Current", "integer", Cell::Integer(".status.replicas"))
            .described(field(&["status", "replicas"])),
        Column::new("Ready", "integer", Cell::Integer(".status.readyReplicas"))
            .described(field(&["status", "readyReplicas"])),
        age(),
        template_containers(Cell::Containers("name")),
        template_containers(Cell::Containers("image")),
        Column::new("Selector", "string", selector)
            .wide()
            .described(field(&["spec", "selector"])),
    ]
}

/// kube's Job printer: status, completions, duration and age; the pod template's containers,
/// images and the selector with `-o wide`.
fn job_columns() -> Vec<Column> {
    let field = |path: &[&str]| doc("batch", "Job", path);
    vec![
        name(),
        Column::new("Status", "string", Cell::JobStatus).described("Status of the job."),
        Column::new("Completions", "string", Cell::JobCompletions)
            .described(field(&["status", "succeeded"])),
        Column::new("Duration", "string", Cell::JobDuration)
            .described("Time required to complete the job."),
        age(),
        template_containers(Cell::Containers("name")),
        template_containers(Cell::Containers("image")),
        Column::new("Selector", "string", Cell::Selector)
            .wide()
            .described(field(&["spec", "selector"])),
    ]
}

/// kube's CronJob printer.
fn cron_job_columns() -> Vec<Column> {
    let field = |path: &[&str]| doc("batch", "CronJob", path);
    vec![
        name(),
        Column::path("Schedule", ".spec.schedule").described(field(&["spec", "schedule"])),
        Column::new(
            "Timezone",
            "string",
            Cell::PathOr(".spec.timeZone", "<none>"),
        )
        .described(field(&["spec", "timeZone"])),
        Column::new("Suspend", "boolean", Cell::Bool(".spec.suspend"))
            .described(field(&["spec", "suspend"])),
        Column::new("Active", "integer", Cell::CountOf(".status.active".into()))
            .described(field(&["status", "active"])),
        Column::new(
            "Last Schedule",
            "string",
            Cell::AgeOrNone(".status.lastScheduleTime"),
        )
        .described(field(&["status", "lastScheduleTime"])),
        age(),
        template_containers(Cell::JobTemplateContainers("name")),
        template_containers(Cell::JobTemplateContainers("image")),
        Column::new(
            "Selector",
            "string",
            Cell::PathOr(".spec.jobTemplate.spec.selector", "<none>"),
        )
        .wide()
        .described(doc("batch", "Job", &["spec", "selector"])),
    ]
}

/// kube's Pod printer: name, readiness, status, restarts and age; IP, node, nominated node and
/// readiness gates with `-o wide`.
fn pod_columns() -> Vec<Column> {
    let status = |field: &str| doc("", "Pod", &["status", field]);
    let spec = |field: &str| doc("", "Pod", &["spec", field]);
    vec![
        name(),
        Column::new("Ready", "string", Cell::PodReady)
            .described("The aggregate readiness state of this pod for accepting traffic."),
        Column::new("Status", "string", Cell::PodStatus)
            .described("The aggregate status of the containers in this pod."),
        Column::new("Restarts", "string", Cell::PodRestarts).described(
            "The number of times the containers in this pod have been restarted and when the last \
             container in this pod has restarted.",
        ),
        age(),
        Column::path("IP", ".status.podIP")
            .wide()
            .described(status("podIP")),
        Column::path("Node", ".spec.nodeName")
            .wide()
            .described(spec("nodeName")),
        Column::path("Nominated Node", ".status.nominatedNodeName")
            .wide()
            .described(status("nominatedNodeName")),
        Column::new(
            "Readiness Gates",
            "string",
            Cell::CountOfOrNone(".spec.readinessGates"),
        )
        .wide()
        .described(spec("readinessGates")),
    ]
}

/// The columns of a CRD version: NAME, then its `additionalPrinterColumns` (or an AGE date
/// column when it has none), as the apiextensions server builds them.
pub fn crd_columns(printer_columns: &[Value]) -> Vec<Column> {
    let mut columns = vec![name()];
    if printer_columns.is_empty() {
        let mut age = Column::new(
            "Age",
            "date",
            Cell::AgeOf(".metadata.creationTimestamp".into()),
        );
        age.description = meta_doc("creationTimestamp");
        columns.push(age);
        return columns;
    }
    for c in printer_columns {
        let field = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
        let path = field("jsonPath").to_string();
        let type_ = field("type");
        let description = match field("description") {
            "" => format!("Custom resource definition column (in JSONPath format): {path}"),
            given => given.to_string(),
        };
        let cell = if type_ == "date" {
            Cell::AgeOf(path)
        } else {
            Cell::PrinterColumn(path)
        };
        columns.push(Column {
            name: field("name").to_string(),
            type_: type_.to_string(),
            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
            format: field("format").to_string(),
            description,
            cell,
            declared: true,
        });
    }
    columns
}

/// One `additionalPrinterColumns` entry of a CRD (an empty description is left out).
fn printer_column(name: &str, type_: &str, path: &str, description: &str) -> Value {
    let mut column = json!({"name": name, "type": type_, "jsonPath": path});
    if !description.is_empty() {
        column["description"] = json!(description);
    }
    column
}

/// A CRD's declared `Age` printer column.
fn crd_age() -> Value {
    printer_column("Age", "date", ".metadata.creationTimestamp", "")
}

/// The description kcp's CRDs give their Phase columns.
const PHASE_DESCRIPTION: &str =
    "The current phase (e.g. Scheduling, Initializing, Ready, Deleting)";

/// The columns kube-apiserver (or kcp) prints for a builtin kind, with the types and
/// descriptions of kube's printers; `None` for other kinds.
pub fn builtin_columns(rt: &ResourceType) -> Option<Vec<Column>> {
    let ready = || {
        Column::new("Ready", "string", Cell::ReadyOfReplicas)
            .described("Number of the pod with ready state")
    };
    let columns = match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Namespace") => vec![
            name(),
            Column::path("Status", ".status.phase").described("The status of the namespace"),
            age(),
        ],
        ("", "ConfigMap") => vec![
            name(),
            Column::new("Data", "string", Cell::DataCount).described(doc(
                "",
                "ConfigMap",
                &["data"],
            )),
            age(),
        ],
        ("", "Secret") => vec![
            name(),
            Column::path("Type", ".type").described(doc("", "Secret", &["type"])),
            Column::new("Data", "string", Cell::DataCount).described(doc("", "Secret", &["data"])),
            age(),
        ],
        ("", "ServiceAccount") => vec![
            name(),
            Column::new("Secrets", "string", Cell::CountOf(".secrets".into())).described(doc(
                "",
                "ServiceAccount",
                &["secrets"],
            )),
            age(),
        ],
        ("", "Service") => {
            let spec = |field: &str| doc("", "Service", &["spec", field]);
            vec![
                name(),
                Column::path("Type", ".spec.type").described(spec("type")),
                Column::path("Cluster-IP", ".spec.clusterIP").described(spec("clusterIP")),
                computed("External-IP", kind_cells::service_external_ip)
                    .described(spec("externalIPs")),
                Column::new("Port(s)", "string", Cell::Ports).described(spec("ports")),
                age(),
                Column::path("Selector", ".spec.selector")
                    .wide()
                    .described(spec("selector")),
            ]
        }
        ("", "Node") => vec![
            name(),
            Column::new("Status", "string", Cell::NodeStatus).described("The status of the node"),
            Column::path("Roles", ".metadata.labels.node-role").described("The roles of the node"),
            age(),
            Column::path("Version", ".status.nodeInfo.kubeletVersion").described(doc(
                "",
                "Node",
                &["status", "nodeInfo", "kubeletVersion"],
            )),
        ],
        ("", "Event") | ("events.k8s.io", "Event") => {
            // Both are printed from the internal core Event, with its documentation
            // (`eventColumnDefinitions`).
            let event = |field: &str| doc("", "Event", &[field]);
            let event_path = |path: &[&str]| doc("", "Event", path);
            vec![
                Column::new("Last Seen", "string", Cell::EventSeen { last: true })
                    .described(event("lastTimestamp")),
                Column::path("Type", ".type").described(event("type")),
                Column::path("Reason", ".reason").described(event("reason")),
                Column::new("Object", "string", Cell::InvolvedObject)
                    .described(event("involvedObject")),
                Column::new(
                    "Subobject",
                    "string",
                    Cell::PathOrEmpty(".involvedObject.fieldPath"),
                )
                    .wide()
                    .described(event_path(&["involvedObject", "fieldPath"])),
                computed("Source", kind_cells::event_source)
                    .wide()
                    .described(event("source")),
                computed("Message", kind_cells::event_message).described(event("message")),
                Column::new("First Seen", "string", Cell::EventSeen { last: false })
                    .wide()
                    .described(event("firstTimestamp")),
                computed("Count", kind_cells::event_count)
                    .wide()
                    .described(event("count")),
                name().wide(),
            ]
        }
        ("apps", "Deployment") => {
            let status = |field: &str| doc("apps", "Deployment", &["status", field]);
            vec![
                name(),
                ready(),
                // Declared as strings, written as integers (`deploymentColumnDefinitions`).
                Column::new(
                    "Up-to-date",
                    "string",
                    Cell::Integer(".status.updatedReplicas"),
                )
                .described(status("updatedReplicas")),
                Column::new(
                    "Available",
                    "string",
                    Cell::Integer(".status.availableReplicas"),
                )
                .described(status("availableReplicas")),
                age(),
                template_containers(Cell::Containers("name")),
                template_containers(Cell::Containers("image")),
                // Described by extensions/v1beta1's DeploymentSpec, whose sentence about the
                // template's labels apps/v1 added.
                Column::new("Selector", "string", Cell::Selector)
                    .wide()
                    .described(
                        "Label selector for pods. Existing ReplicaSets whose pods are selected \
                         by this will be the ones affected by this deployment.",
                    ),
            ]
        }
        ("", "Pod") => pod_columns(),
        ("", "ResourceQuota") => vec![
            name(),
            Column::new("Request", "string", Cell::QuotaUsage { limits: false })
                .described("Request represents a minimum amount of cpu/memory that a container may consume."),
            Column::new("Limit", "string", Cell::QuotaUsage { limits: true })
                .described("Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
            age(),
        ],
        ("batch", "Job") => job_columns(),
        ("batch", "CronJob") => cron_job_columns(),
        ("policy", "PodDisruptionBudget") => {
            let field = |path: &[&str]| doc("policy", "PodDisruptionBudget", path);
            vec![
                name(),
                Column::new("Min Available", "string", Cell::PathOr(".spec.minAvailable", "N/A"))
                    .described(field(&["spec", "minAvailable"])),
                Column::new("Max Unavailable", "string", Cell::PathOr(".spec.maxUnavailable", "N/A"))
                    .described(field(&["spec", "maxUnavailable"])),
                Column::new("Allowed Disruptions", "integer", Cell::Integer(".status.disruptionsAllowed"))
                    .described(field(&["status", "disruptionsAllowed"])),
                age(),
            ]
        }
        ("apps", "ReplicaSet") => replica_columns("apps", "ReplicaSet", Cell::Selector),
        ("apps", "StatefulSet") => vec![
            name(),
            ready(),
            age(),
            template_containers(Cell::Containers("name")),
            template_containers(Cell::Containers("image")),
        ],
        ("coordination.k8s.io", "Lease") => vec![
            name(),
            Column::path("Holder", ".spec.holderIdentity").described(doc(
                "coordination.k8s.io",
                "Lease",
                &["spec", "holderIdentity"],
            )),
            age(),
        ],
        ("rbac.authorization.k8s.io", kind @ ("RoleBinding" | "ClusterRoleBinding")) => {
            let of = if kind == "RoleBinding" {
                "roleBinding"
            } else {
                "clusterRoleBinding"
            };
            let subjects = |header: &str, subject: &'static str| {
                Column::new(header, "string", Cell::Subjects(subject))
                    .wide()
                    .described(format!("{header} in the {of}"))
            };
            vec![
                name(),
                Column::new("Role", "string", Cell::RoleRef).described(doc(
                    "rbac.authorization.k8s.io",
                    kind,
                    &["roleRef"],
                )),
                age(),
                subjects("Users", "User"),
                subjects("Groups", "Group"),
                subjects("ServiceAccounts", "ServiceAccount"),
            ]
        }
        ("apps", "DaemonSet") => daemon_set_columns(),
        ("networking.k8s.io", "Ingress") => vec![
            name(),
            Column::path_or("Class", ".spec.ingressClassName", "<none>").described(
                "The name of the IngressClass resource that should be used for additional \
                 configuration",
            ),
            computed("Hosts", kind_cells::ingress_hosts)
                .described("Hosts that incoming requests are matched against before the ingress rule"),
            computed("Address", kind_cells::load_balancer_addresses)
                .described("Address is a list containing ingress points for the load-balancer"),
            computed("Ports", kind_cells::ingress_ports).described("Ports of TLS configurations that open"),
            age(),
        ],
        ("networking.k8s.io", "IngressClass") => vec![
            name(),
            Column::path("Controller", ".spec.controller")
                .described("Controller that is responsible for handling this class"),
            computed("Parameters", kind_cells::ingress_class_parameters)
                .described("A reference to a resource with additional parameters"),
            age(),
        ],
        ("networking.k8s.io", "NetworkPolicy") => vec![
            name(),
            computed("Pod-Selector", kind_cells::pod_selector).described(doc(
                "networking.k8s.io",
                "NetworkPolicy",
                &["spec", "podSelector"],
            )),
            age(),
        ],
        ("autoscaling", "HorizontalPodAutoscaler") => {
            let field = |path: &[&str]| doc("autoscaling", "HorizontalPodAutoscaler", path);
            vec![
                name(),
                computed("Reference", kind_cells::scale_target)
                    .described(field(&["spec", "scaleTargetRef"])),
                computed("Targets", kind_cells::autoscaler_targets)
                    .described(field(&["spec", "metrics"])),
                Column::path_or("MinPods", ".spec.minReplicas", "<unset>")
                    .described(field(&["spec", "minReplicas"])),
                Column::new("MaxPods", "string", Cell::Integer(".spec.maxReplicas"))
                    .described(field(&["spec", "maxReplicas"])),
                Column::new("Replicas", "string", Cell::Integer(".status.currentReplicas"))
                    .described(field(&["status", "currentReplicas"])),
                age(),
            ]
        }
        ("scheduling.k8s.io", "PriorityClass") => {
            let field = |f: &str| doc("scheduling.k8s.io", "PriorityClass", &[f]);
            vec![
                name(),
                Column::new("Value", "integer", Cell::Integer(".value")).described(field("value")),
                Column::new("Global-Default", "boolean", Cell::Computed(kind_cells::global_default))
                    .described(field("globalDefault")),
                age(),
                Column::path_or("PreemptionPolicy", ".preemptionPolicy", "")
                    .described(field("preemptionPolicy")),
            ]
        }
        ("", "PersistentVolumeClaim") => {
            let field = |path: &[&str]| doc("", "PersistentVolumeClaim", path);
            vec![
                name(),
                Column::path("Status", ".status.phase").described(field(&["status", "phase"])),
                Column::new("Volume", "string", Cell::PathOrEmpty(".spec.volumeName"))
                    .described(field(&["spec", "volumeName"])),
                Column::new("Capacity", "string", Cell::PathOrEmpty(".status.capacity.storage"))
                    .described(field(&["status", "capacity"])),
                computed("Access Modes", kind_cells::access_modes)
                    .described(field(&["status", "accessModes"])),
                computed("StorageClass", kind_cells::claim_class).described("StorageClass of the pvc"),
                Column::path_or("VolumeAttributesClass", ".spec.volumeAttributesClassName", "<unset>")
                    .described("VolumeAttributesClass of the pvc"),
                age(),
                Column::path_or("VolumeMode", ".spec.volumeMode", "<unset>")
                    .wide()
                    .described(field(&["spec", "volumeMode"])),
            ]
        }
        ("apps", "ControllerRevision") => vec![
            name(),
            Column::new("Controller", "string", Cell::ControllerOf)
                .described(meta_doc("ownerReferences")),
            Column::path("Revision", ".revision").described(doc(
                "apps",
                "ControllerRevision",
                &["revision"],
            )),
            age(),
        ],
        // kcp's CRD-defined kinds print their CRDs' columns (kcp v0.30.0).
        ("apis.kcp.io", "APIBinding") => crd_columns(&[
            crd_age(),
            printer_column(
                "Ready",
                "string",
                ".status.conditions[?(@.type==\"Ready\")].status",
                "",
            ),
        ]),
        ("topology.kcp.io", "Partition") => crd_columns(&[
            printer_column("Owner", "string", ".metadata.ownerReferences[*].name", ""),
            crd_age(),
        ]),
        ("topology.kcp.io", "PartitionSet") => crd_columns(&[
            printer_column(
                "Count",
                "string",
                ".status.count",
                "Count of the partitions belonging the PartitionSet",
            ),
            crd_age(),
        ]),
        ("tenancy.kcp.io", "Workspace") => crd_columns(&[
            printer_column("Type", "string", ".spec.type.name", "Type of the workspace"),
            printer_column(
                "Region",
                "string",
                ".metadata.labels.region",
                "The region this workspace is in",
            ),
            printer_column("Phase", "string", ".status.phase", PHASE_DESCRIPTION),
            printer_column("URL", "string", ".spec.URL", "URL to access the workspace"),
            crd_age(),
        ]),
        ("core.kcp.io", "LogicalCluster") => crd_columns(&[
            printer_column("Phase", "string", ".status.phase", PHASE_DESCRIPTION),
            printer_column("URL", "string", ".status.URL", "URL to access the logical cluster"),
            crd_age(),
        ]),
        ("apis.kcp.io", "APIExportEndpointSlice") => crd_columns(&[
            printer_column("Export", "string", ".spec.export.name", ""),
            printer_column("Partition", "string", ".spec.partition", ""),
            crd_age(),
        ]),
        ("cache.kcp.io", "CachedResourceEndpointSlice") => crd_columns(&[
            printer_column("CachedResource", "string", ".spec.cachedResource.name", ""),
            crd_age(),
        ]),
        ("cache.kcp.io", "CachedResource") => crd_columns(&[
            printer_column("Resource", "string", ".spec.resource", "Resource type being published"),
            crd_age(),
        ]),
        ("apis.kcp.io", "APIExport" | "APIResourceSchema") => crd_columns(&[crd_age()]),
        // CRDs without printer columns: kube's default Age column.
        ("tenancy.kcp.io", "WorkspaceType" | "WorkspaceAuthenticationConfiguration") => {
            crd_columns(&[])
        }
        _ => return stored_kind_columns(rt),
    };
    Some(columns)
}

/// kube's printers of the kinds kcp-sim stores without their controllers: Endpoints and
/// EndpointSlices, volumes and storage classes, limit ranges, runtime classes,
/// ReplicationControllers and PodTemplates.
fn stored_kind_columns(rt: &ResourceType) -> Option<Vec<Column>> {
    let (group, kind) = (rt.group.as_str(), rt.kind.as_str());
    let field = |path: &[&str]| doc(group, kind, path);
    let columns = match (group, kind) {
        ("", "Endpoints") => vec![
            name(),
            computed("Endpoints", kind_cells::endpoints_addresses).described(field(&["subsets"])),
            age(),
        ],
        ("discovery.k8s.io", "EndpointSlice") => vec![
            name(),
            Column::path("AddressType", ".addressType").described(field(&["addressType"])),
            computed("Ports", kind_cells::slice_ports).described(field(&["ports"])),
            computed("Endpoints", kind_cells::slice_endpoints).described(field(&["endpoints"])),
            age(),
        ],
        ("", "PersistentVolume") => vec![
            name(),
            computed("Capacity", kind_cells::volume_capacity)
                .described(field(&["spec", "capacity"])),
            computed("Access Modes", kind_cells::volume_access_modes)
                .described(field(&["spec", "accessModes"])),
            Column::path("Reclaim Policy", ".spec.persistentVolumeReclaimPolicy")
                .described(field(&["spec", "persistentVolumeReclaimPolicy"])),
            Column::path("Status", ".status.phase").described(field(&["status", "phase"])),
            computed("Claim", kind_cells::volume_claim).described(field(&["spec", "claimRef"])),
            computed("StorageClass", kind_cells::claim_class).described("StorageClass of the pv"),
            Column::path_or(
                "VolumeAttributesClass",
                ".spec.volumeAttributesClassName",
                "<unset>",
            )
            .described("VolumeAttributesClass of the pv"),
            Column::new("Reason", "string", Cell::PathOrEmpty(".status.reason"))
                .described(field(&["status", "reason"])),
            age(),
            Column::path_or("VolumeMode", ".spec.volumeMode", "<unset>")
                .wide()
                .described(field(&["spec", "volumeMode"])),
        ],
        ("storage.k8s.io", "StorageClass") => {
            let mut class_name =
                computed("Name", kind_cells::storage_class_name).described(meta_doc("name"));
            class_name.format = "name".into();
            vec![
                class_name,
                Column::path("Provisioner", ".provisioner").described(field(&["provisioner"])),
                computed("ReclaimPolicy", kind_cells::reclaim_policy)
                    .described(field(&["reclaimPolicy"])),
                computed("VolumeBindingMode", kind_cells::volume_binding_mode)
                    .described(field(&["volumeBindingMode"])),
                computed("AllowVolumeExpansion", kind_cells::allow_volume_expansion)
                    .described(field(&["allowVolumeExpansion"])),
                age(),
            ]
        }
        ("", "LimitRange") | ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => {
            vec![name(), created_at()]
        }
        ("node.k8s.io", "RuntimeClass") => vec![
            name(),
            Column::path("Handler", ".handler").described(field(&["handler"])),
            age(),
        ],
        ("", "ReplicationController") => {
            replica_columns("", "ReplicationController", Cell::Labels("/spec/selector"))
        }
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
        ) => vec![
            name(),
            Column::new("Webhooks", "integer", Cell::CountOf(".webhooks".into()))
                .described(field(&["webhooks"])),
            age(),
        ],
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => vec![
            name(),
            Column::new(
                "Validations",
                "integer",
                Cell::CountOf(".spec.validations".into()),
            )
            .described(field(&["spec", "validations"])),
            computed("ParamKind", kind_cells::param_kind).described(field(&["spec", "paramKind"])),
            age(),
        ],
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => vec![
            name(),
            Column::path("PolicyName", ".spec.policyName")
                .described(field(&["spec", "policyName"])),
            computed("ParamRef", kind_cells::param_ref).described(field(&["spec", "paramRef"])),
            age(),
        ],
        ("apiregistration.k8s.io", "APIService") => vec![
            name(),
            computed("Service", kind_cells::api_service_backend)
                .described("The reference to the service that hosts this API endpoint."),
            computed("Available", kind_cells::api_service_available)
                .described("Whether this service is available."),
            age(),
        ],
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => vec![
            name(),
            Column::path("PriorityLevel", ".spec.priorityLevelConfiguration.name")
                .described(field(&["spec", "priorityLevelConfiguration", "name"])),
            Column::path("MatchingPrecedence", ".spec.matchingPrecedence")
                .described(field(&["spec", "matchingPrecedence"])),
            Column::path_or(
                "DistinguisherMethod",
                ".spec.distinguisherMethod.type",
                "<none>",
            )
            .described(field(&["spec", "distinguisherMethod"])),
            age(),
            computed("MissingPL", kind_cells::flow_schema_dangling)
                .described("references a broken or non-existent PriorityLevelConfiguration"),
        ],
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            let queuing = |name: &str, cell: fn(&Value) -> Value, key: &str| {
                let path = ["spec", "limited", "limitResponse", "queuing", key];
                computed(name, cell).described(field(&path))
            };
            vec![
                name(),
                Column::path("Type", ".spec.type").described(field(&["spec", "type"])),
                computed(
                    "NominalConcurrencyShares",
                    kind_cells::priority_level_shares,
                )
                .described(field(&["spec", "limited", "nominalConcurrencyShares"])),
                queuing("Queues", kind_cells::priority_level_queues, "queues"),
                queuing("HandSize", kind_cells::priority_level_hand_size, "handSize"),
                queuing(
                    "QueueLengthLimit",
                    kind_cells::priority_level_queue_length,
                    "queueLengthLimit",
                ),
                age(),
            ]
        }
        ("networking.k8s.io", "ServiceCIDR") => vec![
            name(),
            computed("CIDRs", kind_cells::service_cidrs).described(field(&["spec", "cidrs"])),
            age(),
        ],
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            let field =
                |path: &[&str]| doc("certificates.k8s.io", "CertificateSigningRequest", path);
            vec![
                name(),
                age(),
                Column::path("SignerName", ".spec.signerName")
                    .described(field(&["spec", "signerName"])),
                // kube describes the requestor with the request's documentation.
                computed("Requestor", crate::certificates::requestor_cell)
                    .described(field(&["spec", "request"])),
                computed(
                    "RequestedDuration",
                    crate::certificates::requested_duration_cell,
                )
                .described(field(&["spec", "expirationSeconds"])),
                computed("Condition", crate::certificates::condition_cell)
                    .described(field(&["status", "conditions"])),
            ]
        }
        ("networking.k8s.io", "IPAddress") => vec![
            name(),
            computed("ParentRef", kind_cells::ip_address_parent)
                .described(field(&["spec", "parentRef"])),
            age().undeclared(),
        ],
        ("", "PodTemplate") => vec![
            name(),
            Column::path("Containers", ".template.spec.containers[*].name")
                .described("Names of each container in the template."),
            Column::path("Images", ".template.spec.containers[*].image")
                .described("Images referenced by each container in the template."),
            Column::new(
                "Pod Labels",
                "string",
                Cell::Labels("/template/metadata/labels"),
            )
            .described("The labels for the pod template."),
        ],
        _ => return None,
    };
    Some(columns)
}

/// Puts the rows of a Table in the order kube's printer writes them: FlowSchemas by matching
/// precedence, then name (`FlowSchemaSequence`); every other kind as listed.
pub fn printer_order(rt: &ResourceType, objects: &mut [Value]) {
    if (rt.group.as_str(), rt.kind.as_str()) == ("flowcontrol.apiserver.k8s.io", "FlowSchema") {
        objects.sort_by_key(|o| {
            let precedence = o
                .pointer("/spec/matchingPrecedence")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let name = o.pointer("/metadata/name").and_then(Value::as_str);
            (precedence, name.unwrap_or_default().to_string())
        });
    }
}

/// A Table of `objects` (as stored, JSON) under `columns`; `include` is the `includeObject`
/// parameter (`Metadata` by default), `version` the Table's of `meta.k8s.io` (`v1`, `v1beta1`).
pub fn render_table(
    columns: &[Column],
    objects: &[Value],
    include: Option<&str>,
    version: &str,
    resource_version: &str,
    now: jiff::Timestamp,
) -> Value {
    let definitions: Vec<Value> = columns
        .iter()
        .filter(|c| c.declared)
        .map(|c| {
            json!({"name": c.name, "type": c.type_, "format": c.format,
                "description": c.description, "priority": c.priority})
        })
        .collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            // An events.k8s.io Event is printed from the core Event it is stored as.
            let core = crate::event_apis::as_read_at(o, "v1");
            let printed = core.as_ref().unwrap_or(o);
            let cells: Vec<Value> = columns
                .iter()
                .map(|c| cell(&c.cell, printed, now))
                .collect();
            let mut row = json!({"cells": cells});
            match include.unwrap_or("Metadata") {
                // The row's `object` is still written, as null.
                "None" => row["object"] = Value::Null,
                "Object" => row["object"] = o.clone(),
                _ => {
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": format!("meta.k8s.io/{version}"),
                        "metadata": o.get("metadata").cloned().unwrap_or_else(|| json!({})),
                    })
                }
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

fn text(values: Vec<&Value>) -> Value {
    let parts: Vec<String> = values
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    match values.as_slice() {
        [] => Value::String("<none>".into()),
        [one] if !one.is_object() && !one.is_array() => (*one).clone(),
        _ => Value::String(parts.join(",")),
    }
}

fn cell(how: &Cell, o: &Value, now: jiff::Timestamp) -> Value {
    let int = |p: &str| o.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    match how {
        Cell::Path(path) => text(eval_path(o, path)),
        Cell::PrinterColumn(path) => match eval_path(o, path) {
            found if found.is_empty() => Value::Null,
            found => text(found),
        },
        Cell::Age => json!(age_at(o.pointer("/metadata/creationTimestamp"), now)),
        Cell::AgeOf(path) => json!(age_at(eval_path(o, path).first().copied(), now)),
        Cell::DataCount => {
            let count = |k: &str| o.get(k).and_then(Value::as_object).map_or(0, |m| m.len());
            json!(count("data") + count("binaryData"))
        }
        Cell::ReadyOfReplicas => json!(format!(
            "{}/{}",
            int("/status/readyReplicas"),
            o.pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1)
        )),
        Cell::Ports => {
            let ports: Vec<String> = eval_path(o, ".spec.ports[*]")
                .into_iter()
                .map(|p| {
                    let port = p.get("port").map(ToString::to_string).unwrap_or_default();
                    let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                    format!("{port}/{proto}")
                })
                .collect();
            json!(if ports.is_empty() {
                "<none>".to_string()
            } else {
                ports.join(",")
            })
        }
        Cell::InvolvedObject => {
            let field = |k: &str| {
                o.pointer(&format!("/involvedObject/{k}"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            };
            let kind = field("kind").to_ascii_lowercase();
            json!(match field("name") {
                "" => kind,
                name => format!("{kind}/{name}"),
            })
        }
        Cell::EventSeen { last } => json!(age_at(kind_cells::event_seen(o, *last), now)),
        Cell::NodeStatus => {
            let ready = eval_path(o, ".status.conditions[?(@.type==\"Ready\")].status");
            json!(if ready.first().and_then(|v| v.as_str()) == Some("True") {
                "Ready"
            } else {
                "NotReady"
            })
        }
        Cell::Labels(pointer) => {
            let pairs: Vec<String> = o
                .pointer(pointer)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect();
            json!(if pairs.is_empty() {
                "<none>".to_string()
            } else {
                pairs.join(",")
            })
        }
        Cell::Subjects(kind) => {
            let names: Vec<String> = o
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|s| s.get("kind").and_then(Value::as_str) == Some(kind))
                .map(|s| {
                    let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or_default();
                    if *kind == "ServiceAccount" {
                        format!("{}/{}", field("namespace"), field("name"))
                    } else {
                        field("name").to_string()
                    }
                })
                .collect();
            json!(names.join(", "))
        }
        Cell::Computed(cell) => cell(o),
        Cell::ControllerOf => {
            let owner = o
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true));
            json!(owner.map_or("<none>".to_string(), |r| {
                let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
                let group = field("apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
                let kind = if group.is_empty() {
                    field("kind").to_string()
                } else {
                    format!("{}.{group}", field("kind"))
                };
                format!("{}/{}", kind.to_ascii_lowercase(), field("name"))
            }))
        }
        Cell::RoleRef => {
            let field = |k: &str| {
                o.pointer(&format!("/roleRef/{k}"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            };
            json!(format!("{}/{}", field("kind"), field("name")))
        }
        Cell::CountOf(path) => json!(
            eval_path(o, path)
                .first()
                .and_then(|v| v.as_array())
                .map_or(0, Vec::len)
        ),
        Cell::Containers(field) => {
            let values = eval_path(o, &format!(".spec.template.spec.containers[*].{field}"));
            text(values)
        }
        Cell::PathOrEmpty(path) => match eval_path(o, path).first() {
            Some(_) => text(eval_path(o, path)),
            None => json!(""),
        },
        Cell::Integer(path) => json!(
            eval_path(o, path)
                .first()
                .and_then(|v| v.as_i64())
                .unwrap_or(0)
        ),
        Cell::Selector => json!(
            o.pointer("/spec/selector")
                .map(crate::scale::format_selector)
                .unwrap_or_default()
        ),
        Cell::PodReady => {
            let ready = container_statuses(o, "containerStatuses")
                .filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true))
                .count();
            let total = o
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            json!(format!("{ready}/{total}"))
        }
        Cell::PodStatus => json!(pod_status(o)),
        Cell::JobStatus => json!(job_status(o)),
        Cell::JobCompletions => json!(job_completions(o)),
        Cell::JobDuration => json!(job_duration(o, now)),
        Cell::JobTemplateContainers(field) => text(eval_path(
            o,
            &format!(".spec.jobTemplate.spec.template.spec.containers[*].{field}"),
        )),
        Cell::Bool(path) => json!(match eval_path(o, path).first().and_then(|v| v.as_bool()) {
            Some(true) => "True",
            Some(false) => "False",
            None => "<none>",
        }),
        Cell::AgeOrNone(path) => match eval_path(o, path).first() {
            Some(at) => json!(age_at(Some(at), now)),
            None => json!("<none>"),
        },
        Cell::PathOr(path, absent) => match eval_path(o, path).first() {
            Some(_) => text(eval_path(o, path)),
            None => json!(absent),
        },
        Cell::QuotaUsage { limits } => json!(quota_usage(o, *limits)),
        Cell::PodRestarts => json!(pod_restarts(o, now)),
        Cell::CountOfOrNone(path) => match eval_path(o, path).first().and_then(|v| v.as_array()) {
            Some(gates) if !gates.is_empty() => json!(format!("0/{}", gates.len())),
            _ => json!("<none>"),
        },
    }
}

/// kube's Job printer's status: the first condition that holds of Complete, Failed,
/// (being deleted), SuccessCriteriaMet, FailureTarget and Suspended, else `Running`.
fn job_status(o: &Value) -> &'static str {
    let holds = |kind: &str| {
        eval_path(
            o,
            &format!(".status.conditions[?(@.type==\"{kind}\")].status"),
        )
        .first()
        .and_then(|v| v.as_str())
            == Some("True")
    };
    match () {
        _ if holds("Complete") => "Complete",
        _ if holds("Failed") => "Failed",
        _ if o.pointer("/metadata/deletionTimestamp").is_some() => "Terminating",
        _ if holds("SuccessCriteriaMet") => "SuccessCriteriaMet",
        _ if holds("FailureTarget") => "FailureTarget",
        _ if holds("Suspended") => "Suspended",
        _ => "Running",
    }
}

/// `<succeeded>/<completions>`, or `<succeeded>/1 of <parallelism>` for a Job without a
/// completion count that runs pods in parallel.
fn job_completions(o: &Value) -> String {
    let int = |p: &str| o.pointer(p).and_then(Value::as_i64);
    let succeeded = int("/status/succeeded").unwrap_or(0);
    match (
        int("/spec/completions"),
        int("/spec/parallelism").unwrap_or(1),
    ) {
        (Some(completions), _) => format!("{succeeded}/{completions}"),
        (None, parallelism) if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
        (None, _) => format!("{succeeded}/1"),
    }
}

/// From a Job's start to its completion (or now); empty before it starts.
fn job_duration(o: &Value, now: jiff::Timestamp) -> String {
    let at = |p: &str| {
        o.pointer(p)
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    };
    match at("/status/startTime") {
        Some(start) => {
            let end = at("/status/completionTime").unwrap_or(now);
            human_duration(end.as_second() - start.as_second())
        }
        None => String::new(),
    }
}

/// A ResourceQuota's `name: used/hard` pairs, by name, of its `limits.*` resources or the
/// others.
fn quota_usage(o: &Value, limits: bool) -> String {
    let Some(hard) = o.pointer("/status/hard").and_then(Value::as_object) else {
        return String::new();
    };
    let mut names: Vec<&String> = hard
        .keys()
        .filter(|name| name.starts_with("limits.") == limits)
        .collect();
    names.sort();
    let quantity = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("0").to_string();
    names
        .into_iter()
        .map(|name| {
            let used = quantity(o.pointer("/status/used").and_then(|u| u.get(name)));
            format!("{name}: {used}/{}", quantity(hard.get(name)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The statuses at `status.<key>` of a Pod.
fn container_statuses<'a>(o: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    o.pointer(&format!("/status/{key}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// What a terminated container shows: its reason, else its signal or exit code.
fn terminated_reason(terminated: &Value) -> String {
    let field = |k: &str| terminated.get(k).and_then(Value::as_i64).unwrap_or(0);
    match terminated.get("reason").and_then(Value::as_str) {
        Some(reason) if !reason.is_empty() => reason.to_string(),
        _ if field("signal") != 0 => format!("Signal:{}", field("signal")),
        _ => format!("ExitCode:{}", field("exitCode")),
    }
}

/// kube's Pod printer's status column: the pod's reason or phase, an init container's progress
/// or trouble, then a container's waiting or terminated reason, and `Terminating` while deleted.
fn pod_status(o: &Value) -> String {
    let text = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let mut reason = match text("/status/reason") {
        "" => text("/status/phase").to_string(),
        given => given.to_string(),
    };
    let inits: Vec<&Value> = container_statuses(o, "initContainerStatuses").collect();
    let mut initializing = false;
    for (i, init) in inits.iter().enumerate() {
        let state = |k: &str| init.pointer(&format!("/state/{k}"));
        if let Some(terminated) = state("terminated") {
            if terminated.get("exitCode").and_then(Value::as_i64) == Some(0) {
                continue;
            }
            reason = format!("Init:{}", terminated_reason(terminated));
        } else if let Some(waiting) = state("waiting")
            .and_then(|w| w.get("reason"))
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty() && *r != "PodInitializing")
        {
            reason = format!("Init:{waiting}");
        } else {
            reason = format!("Init:{i}/{}", inits.len());
        }
        initializing = true;
        break;
    }
    if !initializing {
        let statuses: Vec<&Value> = container_statuses(o, "containerStatuses").collect();
        for status in statuses.iter().rev() {
            let state = |k: &str| status.pointer(&format!("/state/{k}"));
            if let Some(waiting) = state("waiting")
                .and_then(|w| w.get("reason"))
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
            {
                reason = waiting.to_string();
            } else if let Some(terminated) = state("terminated") {
                reason = terminated_reason(terminated);
            }
        }
    }
    if o.pointer("/metadata/deletionTimestamp").is_some() {
        reason = "Terminating".into();
    }
    reason
}

/// The restarts of a Pod's containers, and how long ago the last one ended (`2 (5m ago)`).
fn pod_restarts(o: &Value, now: jiff::Timestamp) -> String {
    let statuses: Vec<&Value> = container_statuses(o, "initContainerStatuses")
        .chain(container_statuses(o, "containerStatuses"))
        .collect();
    let restarts: i64 = statuses
        .iter()
        .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
        .sum();
    let last = statuses
        .iter()
        .filter_map(|s| s.pointer("/lastState/terminated/finishedAt"))
        .filter_map(|t| t.as_str()?.parse::<jiff::Timestamp>().ok())
        .max();
    match last {
        Some(at) if restarts > 0 => format!(
            "{restarts} ({} ago)",
            human_duration(now.duration_since(at).as_secs())
        ),
        _ => restarts.to_string(),
    }
}

/// An age as kube prints it (`HumanDuration`): `45s`, `5m10s`, `3h`, `2d5h`, `400d`, `2y30d`.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    let s = seconds.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86_400);
    match () {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 && s % 60 == 0 => format!("{m}m"),
        _ if m < 10 => format!("{m}m{}s", s % 60),
        _ if m < 180 => format!("{m}m"),
        _ if h < 8 && m % 60 == 0 => format!("{h}h"),
        _ if h < 8 => format!("{h}h{}m", m % 60),
        _ if h < 48 => format!("{h}h"),
        _ if h < 192 && h % 24 == 0 => format!("{d}d"),
        _ if h < 192 => format!("{d}d{}h", h % 24),
        _ if d < 730 => format!("{d}d"),
        _ if d / 365 < 8 && d % 365 == 0 => format!("{}y", d / 365),
        _ if d / 365 < 8 => format!("{}y{}d", d / 365, d % 365),
        _ => format!("{}y", d / 365),
    }
}

fn age_at(timestamp: Option<&Value>, now: jiff::Timestamp) -> String {
    let parsed = timestamp
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    match parsed {
        Some(then) => human_duration(now.as_second() - then.as_second()),
        None => "<unknown>".into(),
    }
}

/// Evaluates the Kubernetes JSONPath subset printer columns use: `.a.b`, `.a[0]`, `.a[*].b`,
/// `.a[?(@.k=="v")].b`, with optional `{}` around the expression.
pub fn eval_path<'a>(object: &'a Value, path: &str) -> Vec<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut current = vec![object];
    for step in steps(path) {
        let mut next = Vec::new();
        for v in current {
            match &step {
                Step::Field(f) => next.extend(v.get(f.as_str())),
                Step::Index(i) => next.extend(v.as_array().and_then(|a| a.get(*i))),
                Step::All => next.extend(v.as_array().into_iter().flatten()),
                Step::Filter(key, want) => {
                    next.extend(v.as_array().into_iter().flatten().filter(|item| {
                        item.get(key.as_str()).and_then(Value::as_str) == Some(want)
                    }))
                }
            }
        }
        current = next;
    }
    current
}

#[derive(Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    Filter(String, String),
}

fn steps(path: &str) -> Vec<Step> {
    let mut out = Vec::new();
    let mut rest = path.trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end > 0 {
                out.push(Step::Field(r[..end].to_string()));
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').unwrap_or(r.len());
            let inner = &r[..end];
            out.push(bracket(inner));
            rest = r.get(end + 1..).unwrap_or("");
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            out.push(Step::Field(rest[..end].to_string()));
            rest = &rest[end..];
        }
    }
    out
}

fn bracket(inner: &str) -> Step {
    if inner == "*" {
        return Step::All;
    }
    if let Ok(i) = inner.parse() {
        return Step::Index(i);
    }
    if let Some(cond) = inner.strip_prefix("?(@.").and_then(|c| c.strip_suffix(')'))
        && let Some((key, value)) = cond.split_once("==")
    {
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        return Step::Filter(key.trim().to_string(), value.to_string());
    }
    // `['cluster\.x-k8s\.io/cluster-name']`: a quoted key, dots escaped as JSONPath allows.
    let key = inner.trim_matches(|c| c == '\'' || c == '"');
    Step::Field(key.replace("\\.", "."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> jiff::Timestamp {
        "2026-01-02T00:00:00Z"
            .parse()
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        assert_eq!(human_duration(45), "45s");
        assert_eq!(human_duration(310), "5m10s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600), "3h");
        assert_eq!(human_duration(3 * 3600 + 120), "3h2m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(53 * 3600), "2d5h");
        assert_eq!(human_duration(400 * 86_400), "400d");
        assert_eq!(human_duration(760 * 86_400), "2y30d");
    }

    #[test]
    fn paths_walk_fields_indexes_wildcards_and_filters() {
        let o = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]},
            "metadata": {"labels": {"region": "eu"}}});
        assert_eq!(eval_path(&o, ".metadata.labels.region"), [&json!("eu")]);
        assert_eq!(
            eval_path(&o, ".status.conditions[1].type"),
            [&json!("Synced")]
        );
        assert_eq!(eval_path(&o, ".status.conditions[*].status").len(), 2);
        assert_eq!(
            eval_path(&o, "{.status.conditions[?(@.type==\"Synced\")].status}"),
            [&json!("False")]
        );
        assert!(eval_path(&o, ".spec.missing").is_empty());
        let labelled = json!({"metadata": {"labels": {"cluster.x-k8s.io/cluster-name": "c1"}}});
        assert_eq!(
            eval_path(
                &labelled,
                ".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']"
            ),
            [&json!("c1")]
        );
    }

    #[test]
    fn a_crd_without_printer_columns_shows_name_and_age() {
        let names: Vec<String> = crd_columns(&[]).into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "Age"]);
    }

    #[test]
    fn printer_columns_keep_their_priority_and_date_columns_become_ages() {
        let columns = crd_columns(&[
            json!({"name": "Size", "type": "integer", "jsonPath": ".spec.size"}),
            json!({"name": "Owner", "type": "string", "jsonPath": ".spec.owner", "priority": 1}),
            json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
        ]);
        let o = json!({"metadata": {"name": "w", "creationTimestamp": "2026-01-01T23:59:00Z"},
            "spec": {"size": 3, "owner": "me"}});
        let table = render_table(&columns, &[o], None, "v1", "7", now());
        assert_eq!(table["rows"][0]["cells"], json!(["w", 3, "me", "60s"]));
        assert_eq!(table["columnDefinitions"][2]["priority"], 1);
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    }

    #[test]
    fn a_workspace_row_has_type_region_phase_and_url() {
        let rt = crate::resource::builtin_types(crate::resource::Flavor::Kcp)
            .into_iter()
            .find(|t| t.kind == "Workspace")
            .expect("kcp serves workspaces");
        let columns = builtin_columns(&rt).unwrap_or_default();
        let ws = json!({"metadata": {"name": "team", "labels": {"region": "eu"},
            "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"type": {"name": "universal", "path": "root"}, "URL": "https://kcp/clusters/root:team"},
            "status": {"phase": "Ready"}});
        let table = render_table(&columns, &[ws], Some("None"), "v1", "1", now());
        assert_eq!(
            table["rows"][0]["cells"],
            json!([
                "team",
                "universal",
                "eu",
                "Ready",
                "https://kcp/clusters/root:team",
                "24h"
            ])
        );
        assert_eq!(table["rows"][0].get("object"), Some(&Value::Null));
    }

    #[test]
    // The wide columns as kube-apiserver prints them (conformance kubectl/deployments-wide-and-in-all).
    fn a_deployment_row_counts_ready_replicas_and_wide_columns_list_containers_and_selector() {
        let rt = crate::resource::builtin_types(crate::resource::Flavor::Kubernetes)
            .into_iter()
            .find(|t| t.kind == "Deployment")
            .expect("deployments are served");
        let columns = builtin_columns(&rt).unwrap_or_default();
        let d = json!({"metadata": {"name": "web", "creationTimestamp": "2026-01-01T23:00:00Z"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [
                {"name": "web", "image": "nginx"}, {"name": "log", "image": "busybox"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        let table = render_table(&columns, &[d], None, "v1", "1", now());
        assert_eq!(
            table["rows"][0]["cells"],
            json!([
                "web",
                "2/3",
                3,
                2,
                "60m",
                "web,log",
                "nginx,busybox",
                "app=web"
            ])
        );
        assert_eq!(table["columnDefinitions"][5]["priority"], 1);
    }

    #[test]
    fn a_config_map_row_counts_its_keys() {
        let columns = vec![name(), Column::new("Data", "integer", Cell::DataCount)];
        let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}});
        assert_eq!(
            render_table(&columns, &[cm], None, "v1", "1", now())["rows"][0]["cells"],
            json!(["c", 3])
        );
    }
}
