//! `ApplyPlan`: the dependency graph of a set of objects, grouped into waves.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault};
use std::sync::Arc;

use kube::api::{DynamicObject, GroupVersionKind};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};

use super::rules::{EdgeSink, ObjectSet, PrehashedKey, RuleSet};
use crate::client::{ObjectRef, gvk_of};
use crate::error::{Error, Result};

/// One object of a plan, with its kind parsed once.
///
/// The name and namespace are read from the object's metadata (never copied), and the object
/// cannot be changed once planned, so identity and content always agree.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanObject {
    object: DynamicObject,
    /// Shared by all objects of one apiVersion and kind in a plan.
    gvk: Arc<GroupVersionKind>,
}

impl PlanObject {
    /// Checks and wraps `object`; `index` is its position in the input (for errors).
    ///
    /// Fails when `apiVersion`, `kind` or a non-empty `metadata.name` is missing.
    pub fn new(index: usize, object: DynamicObject) -> Result<Self> {
        let gvk = Arc::new(gvk_of(&object).map_err(|e| at_index(e, index))?);
        Self::with_gvk(index, object, gvk)
    }

    fn with_gvk(index: usize, object: DynamicObject, gvk: Arc<GroupVersionKind>) -> Result<Self> {
        if object.metadata.name.as_deref().is_none_or(str::is_empty) {
            return Err(Error::InvalidObject {
                object: format!("#{index} ({})", crate::error::display_gvk(&gvk)),
                field: "metadata.name".into(),
                reason: "is required to order and apply objects".into(),
            });
        }
        Ok(PlanObject { object, gvk })
    }

    /// The object as it will be applied.
    pub fn object(&self) -> &DynamicObject {
        &self.object
    }

    /// The object, giving up the plan's view of it.
    pub fn into_object(self) -> DynamicObject {
        self.object
    }

    /// Group, version and kind.
    pub fn gvk(&self) -> &GroupVersionKind {
        &self.gvk
    }

    /// The API group (`""` for the core group).
    pub fn group(&self) -> &str {
        &self.gvk.group
    }

    /// The kind.
    pub fn kind(&self) -> &str {
        &self.gvk.kind
    }

    /// `metadata.name` (never empty: checked by [`PlanObject::new`]).
    pub fn name(&self) -> &str {
        self.object.metadata.name.as_deref().unwrap_or_default()
    }

    /// `metadata.namespace`, when set and not empty.
    pub fn namespace(&self) -> Option<&str> {
        self.object
            .metadata
            .namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
    }

    /// The reference used to read and write this object.
    pub fn object_ref(&self) -> ObjectRef {
        ObjectRef {
            gvk: GroupVersionKind::clone(&self.gvk),
            namespace: self.namespace().map(str::to_string),
            name: self.name().to_string(),
        }
    }
}

impl fmt::Display for PlanObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::error::display_gvk(&self.gvk))?;
        match self.namespace() {
            Some(ns) => write!(f, " {ns}/{}", self.name()),
            None => write!(f, " {}", self.name()),
        }
    }
}

/// Parses each distinct (apiVersion, kind) of a plan once and shares the result.
#[derive(Default)]
struct KindInterner {
    hasher: foldhash::fast::RandomState,
    seen: HashMap<u64, (String, Arc<GroupVersionKind>), BuildHasherDefault<PrehashedKey>>,
}

impl KindInterner {
    fn intern(&mut self, index: usize, object: &DynamicObject) -> Result<Arc<GroupVersionKind>> {
        let Some(types) = object.types.as_ref() else {
            return gvk_of(object).map(Arc::new).map_err(|e| at_index(e, index));
        };
        let key = self
            .hasher
            .hash_one((types.api_version.as_str(), types.kind.as_str()));
        if let Some((api_version, gvk)) = self.seen.get(&key)
            && *api_version == types.api_version
            && gvk.kind == types.kind
        {
            return Ok(Arc::clone(gvk));
        }
        let gvk = Arc::new(gvk_of(object).map_err(|e| at_index(e, index))?);
        self.seen
            .entry(key)
            .or_insert_with(|| (types.api_version.clone(), Arc::clone(&gvk)));
        Ok(gvk)
    }
}

fn at_index(error: Error, index: usize) -> Error {
    match error {
        Error::InvalidObject {
            object,
            field,
            reason,
        } => Error::InvalidObject {
            object: format!("#{index} {object}"),
            field,
            reason,
        },
        other => other,
    }
}

/// A set of objects, the "must exist before" edges between them, and their waves.
///
/// Node `i` of the graph is object `i` of the input. An edge `a -> b` means `a` must exist
/// (and be ready) before `b` is applied, and `b` must be gone before `a` is deleted.
#[derive(Debug, Clone)]
pub struct ApplyPlan {
    objects: Vec<PlanObject>,
    graph: DiGraph<(), ()>,
    waves: Vec<Vec<usize>>,
    wave_of: Vec<usize>,
}

impl ApplyPlan {
    /// Orders `objects` by the dependency `rules`.
    ///
    /// Fails when an object has no `apiVersion`, `kind` or name, when a rule fails (e.g. a
    /// `depends-on` annotation naming an object that is not in the set), or when the edges form
    /// a cycle ([`Error::DependencyCycle`] names the objects on it).
    pub fn build(objects: Vec<DynamicObject>, rules: &RuleSet) -> Result<ApplyPlan> {
        let mut kinds = KindInterner::default();
        let objects = objects
            .into_iter()
            .enumerate()
            .map(|(i, o)| {
                let gvk = kinds.intern(i, &o)?;
                PlanObject::with_gvk(i, o, gvk)
            })
            .collect::<Result<Vec<_>>>()?;
        Self::from_plan_objects(objects, rules)
    }

    /// Orders already extracted [`PlanObject`]s.
    pub fn from_plan_objects(objects: Vec<PlanObject>, rules: &RuleSet) -> Result<ApplyPlan> {
        let mut sink = EdgeSink::new(objects.len());
        {
            let set = ObjectSet::new(&objects);
            for rule in rules.rules() {
                rule.add_edges(&set, &mut sink)?;
            }
        }
        let edges = sink.into_edges();

        let mut graph = DiGraph::<(), ()>::with_capacity(objects.len(), edges.len());
        for _ in 0..objects.len() {
            graph.add_node(());
        }
        graph.extend_with_edges(edges.iter().map(|&(a, b)| (a, b)));

        let (waves, wave_of) = waves_of(&graph).map_err(|cycle| Error::DependencyCycle {
            objects: cycle.iter().map(|&i| objects[i].to_string()).collect(),
        })?;
        Ok(ApplyPlan {
            objects,
            graph,
            waves,
            wave_of,
        })
    }

    /// The objects, in input order.
    pub fn objects(&self) -> &[PlanObject] {
        &self.objects
    }

    /// Object `index` (input order).
    ///
    /// # Panics
    /// When `index >= self.len()`, like slice indexing.
    pub fn object(&self, index: usize) -> &PlanObject {
        &self.objects[index]
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether the plan has no objects.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The waves: indices of objects, wave by wave, input order inside a wave.
    pub fn waves(&self) -> &[Vec<usize>] {
        &self.waves
    }

    /// The wave object `index` belongs to.
    pub fn wave_of(&self, index: usize) -> Option<usize> {
        self.wave_of.get(index).copied()
    }

    /// Objects that must exist before object `index`, in input order.
    pub fn dependencies(&self, index: usize) -> Vec<usize> {
        self.neighbors(index, Direction::Incoming)
    }

    /// Objects that wait for object `index`, in input order.
    pub fn dependents(&self, index: usize) -> Vec<usize> {
        self.neighbors(index, Direction::Outgoing)
    }

    /// Every edge `(before, after)`, sorted.
    pub fn edges(&self) -> Vec<(usize, usize)> {
        let mut edges: Vec<(usize, usize)> = self
            .graph
            .raw_edges()
            .iter()
            .map(|e| (e.source().index(), e.target().index()))
            .collect();
        edges.sort_unstable();
        edges
    }

    /// All objects in apply order (wave by wave).
    pub fn in_apply_order(&self) -> impl Iterator<Item = &PlanObject> + '_ {
        self.waves.iter().flatten().map(|&i| &self.objects[i])
    }

    /// All objects in deletion order: the waves reversed, and reversed inside each wave.
    pub fn in_delete_order(&self) -> impl Iterator<Item = &PlanObject> + '_ {
        self.waves
            .iter()
            .rev()
            .flat_map(|w| w.iter().rev())
            .map(|&i| &self.objects[i])
    }

    fn neighbors(&self, index: usize, direction: Direction) -> Vec<usize> {
        if index >= self.objects.len() {
            return Vec::new();
        }
        let mut out: Vec<usize> = self
            .graph
            .neighbors_directed(NodeIndex::new(index), direction)
            .map(NodeIndex::index)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Waves (indices per wave) and the wave of each index.
type Waves = (Vec<Vec<usize>>, Vec<usize>);

/// Kahn's algorithm by levels. Each wave holds the nodes whose dependencies all sit in earlier
/// waves (so a node's wave is the length of the longest dependency chain ending in it).
/// On a cycle, returns the nodes of one strongly connected component that contains a cycle.
fn waves_of(graph: &DiGraph<(), ()>) -> std::result::Result<Waves, Vec<usize>> {
    let n = graph.node_count();
    let mut in_degree = vec![0usize; n];
    for e in graph.raw_edges() {
        in_degree[e.target().index()] += 1;
    }
    let mut wave_of = vec![usize::MAX; n];
    let mut waves = Vec::new();
    let mut current: Vec<usize> = (0..n).filter(|&i| in_degree[i] == 0).collect();
    let mut placed = 0;
    while !current.is_empty() {
        let wave = waves.len();
        let mut next = Vec::new();
        for &node in &current {
            wave_of[node] = wave;
            for succ in graph.neighbors_directed(NodeIndex::new(node), Direction::Outgoing) {
                let s = succ.index();
                in_degree[s] -= 1;
                if in_degree[s] == 0 {
                    next.push(s);
                }
            }
        }
        placed += current.len();
        next.sort_unstable();
        waves.push(std::mem::replace(&mut current, next));
    }
    if placed == n {
        return Ok((waves, wave_of));
    }
    Err(find_cycle(graph, &wave_of))
}

/// Finds one cycle among the nodes Kahn's algorithm could not place, as the nodes of the
/// cycle in walk order starting from the smallest index.
fn find_cycle(graph: &DiGraph<(), ()>, wave_of: &[usize]) -> Vec<usize> {
    let unplaced = |i: usize| wave_of[i] == usize::MAX;
    // Every unplaced node has an unplaced predecessor, so walking predecessors must revisit a
    // node; the revisited stretch is a cycle.
    let Some(start) = (0..wave_of.len()).find(|&i| unplaced(i)) else {
        return Vec::new();
    };
    let mut position = vec![usize::MAX; wave_of.len()];
    let mut walk: Vec<usize> = Vec::new();
    let mut node = start;
    loop {
        if position[node] != usize::MAX {
            let mut cycle: Vec<usize> = walk[position[node]..].to_vec();
            cycle.reverse(); // predecessor walk -> dependency order
            let min_at = cycle
                .iter()
                .enumerate()
                .min_by_key(|&(_, v)| *v)
                .map_or(0, |(i, _)| i);
            cycle.rotate_left(min_at);
            return cycle;
        }
        position[node] = walk.len();
        walk.push(node);
        let pred = graph
            .neighbors_directed(NodeIndex::new(node), Direction::Incoming)
            .map(NodeIndex::index)
            .filter(|&p| unplaced(p))
            .min();
        match pred {
            Some(p) => node = p,
            None => return walk, // unreachable for a real cycle; report what was walked
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::rules::DependencyRule;
    use serde_json::json;

    fn obj(api: &str, kind: &str, ns: Option<&str>, name: &str) -> DynamicObject {
        let mut meta = json!({ "name": name });
        if let Some(ns) = ns {
            meta["namespace"] = ns.into();
        }
        serde_json::from_value(json!({"apiVersion": api, "kind": kind, "metadata": meta})).unwrap()
    }

    struct Edges(Vec<(usize, usize)>);
    impl DependencyRule for Edges {
        fn name(&self) -> &str {
            "test edges"
        }
        fn add_edges(&self, _: &ObjectSet<'_>, sink: &mut EdgeSink) -> Result<()> {
            for &(a, b) in &self.0 {
                sink.add(a, b);
            }
            Ok(())
        }
    }

    fn cms(n: usize) -> Vec<DynamicObject> {
        (0..n)
            .map(|i| obj("v1", "ConfigMap", Some("a"), &format!("c{i}")))
            .collect()
    }

    #[test]
    fn objects_without_edges_form_one_wave_in_input_order() {
        let plan = ApplyPlan::build(cms(3), &RuleSet::empty()).unwrap();
        assert_eq!(plan.waves(), &[vec![0, 1, 2]]);
    }

    #[test]
    fn a_chain_gives_one_wave_per_link() {
        let rules = RuleSet::empty().with(Edges(vec![(2, 1), (1, 0)]));
        let plan = ApplyPlan::build(cms(3), &rules).unwrap();
        assert_eq!(plan.waves(), &[vec![2], vec![1], vec![0]]);
        assert_eq!(plan.wave_of(0), Some(2));
    }

    #[test]
    fn a_node_waits_for_its_longest_dependency_chain() {
        // 0 -> 1 -> 2 and 0 -> 2: 2 must be in wave 2, not 1.
        let rules = RuleSet::empty().with(Edges(vec![(0, 1), (1, 2), (0, 2)]));
        let plan = ApplyPlan::build(cms(3), &rules).unwrap();
        assert_eq!(plan.waves(), &[vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn a_cycle_is_an_error_naming_the_objects_on_it() {
        let rules = RuleSet::empty().with(Edges(vec![(0, 1), (1, 2), (2, 1), (3, 0)]));
        let err = ApplyPlan::build(cms(4), &rules).unwrap_err();
        assert_eq!(
            err.to_string(),
            "dependency cycle between v1 ConfigMap a/c1, v1 ConfigMap a/c2"
        );
    }

    #[test]
    fn a_self_dependency_is_ignored() {
        let rules = RuleSet::empty().with(Edges(vec![(1, 1)]));
        let plan = ApplyPlan::build(cms(2), &rules).unwrap();
        assert_eq!(plan.waves(), &[vec![0, 1]]);
    }

    #[test]
    fn an_object_without_a_name_is_rejected_with_its_position() {
        let mut objects = cms(2);
        objects[1].metadata.name = None;
        let err = ApplyPlan::build(objects, &RuleSet::empty()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid object #1 (v1 ConfigMap): field metadata.name: is required to order and apply objects"
        );
    }

    #[test]
    fn delete_order_reverses_waves_and_input_order() {
        let rules = RuleSet::empty().with(Edges(vec![(0, 2)]));
        let plan = ApplyPlan::build(cms(3), &rules).unwrap();
        let names: Vec<&str> = plan.in_delete_order().map(PlanObject::name).collect();
        assert_eq!(names, vec!["c2", "c1", "c0"]);
    }
}
