//! The most a type-checked rule can cost, estimated before it ever runs, as kube-apiserver
//! estimates it when a CRD is written: cel-go's static cost model (`checker/cost.go`) with
//! Kubernetes' estimates of its library functions (`library/cost.go`) and the sizes the schema
//! allows ([`super::cel_size`]).
//!
//! Every part of an expression has a cost range; a call costs what its overload costs, often
//! in proportion to the sizes of its arguments (a string's characters, a list's items), and a
//! comprehension (`all`, `exists`, `map`, ...) costs its step times the size of its range. The
//! size of a value the rule reads from `self` is the schema's most: its path from `self` is
//! kept as the estimate goes (`self.spec.items.@items.name`). Kube refuses a rule whose
//! estimate exceeds its budget ([`super::cel_budget`]).
//!
//! The authorization library's functions are left out: a CRD rule has no `authorizer` to call
//! them on.

use std::collections::HashMap;

use cel::IdedExpr;
use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedEntryExpr, LiteralValue, SelectExpr,
};

use super::cel_check::Checked;
use super::cel_overloads::{Overload, Pattern};
use super::cel_size::Sizes;
use super::cel_type::CelType;

/// What reading a variable or selecting a field costs.
const SELECT_AND_IDENT: Estimate = Estimate::fixed(1);
/// What creating a list costs, before its items.
const LIST_CREATE: Estimate = Estimate::fixed(10);
/// What creating a map costs, before its entries.
const MAP_CREATE: Estimate = Estimate::fixed(30);
/// What creating a message costs, before its fields.
const STRUCT_CREATE: Estimate = Estimate::fixed(40);
/// The cost of a call that costs no more than itself.
const CALL: Estimate = Estimate::fixed(1);
/// The cost of traversing one character of a string.
const STRING_TRAVERSAL: f64 = 0.1;
/// The cost of one character of a regular expression, per character of the string it reads.
const REGEX_LENGTH: f64 = 0.25;

/// A range of costs, or of sizes (the two are counted alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// The least.
    pub min: u64,
    /// The most.
    pub max: u64,
}

impl Estimate {
    /// Nothing known: anything from 0 to the largest number.
    pub const UNKNOWN: Estimate = Estimate {
        min: 0,
        max: u64::MAX,
    };

    /// Exactly `n`.
    pub const fn fixed(n: u64) -> Self {
        Self { min: n, max: n }
    }

    fn add(self, o: Self) -> Self {
        Self {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }

    fn multiply(self, o: Self) -> Self {
        Self {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }

    fn times(self, factor: f64) -> Self {
        Self {
            min: times(self.min, factor),
            max: times(self.max, factor),
        }
    }

    fn union(self, o: Self) -> Self {
        Self {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

/// `x * factor`, rounded up, as cel-go rounds it (the largest number where it overflows).
fn times(x: u64, factor: f64) -> u64 {
    let largest = u64::MAX as f64;
    let x = x as f64;
    if x > 0.0 && factor > 0.0 && x > largest / factor {
        return u64::MAX;
    }
    let product = (x * factor).ceil();
    if product >= largest {
        u64::MAX
    } else {
        product as u64
    }
}

/// The estimated cost of `expr`, checked as `checked` tells, with `self` (and `oldSelf`)
/// sized as `sizes`.
pub fn estimate(expr: &IdedExpr, checked: &Checked, sizes: &Sizes) -> Estimate {
    let mut coster = Coster {
        checked,
        sizes,
        paths: HashMap::new(),
        locals: HashMap::new(),
        sizes_of: HashMap::new(),
        entries_of: HashMap::new(),
    };
    coster.cost(expr)
}

/// What is known of the entries of a list or map an expression creates.
#[derive(Debug, Clone, Copy)]
struct Entries {
    list: Option<bool>,
    keys: Estimate,
    values: Estimate,
}

impl Entries {
    fn union(a: Option<Entries>, b: Option<Entries>) -> Option<Entries> {
        let (a, b) = (a?, b?);
        Some(Entries {
            list: a.list,
            keys: a.keys.union(b.keys),
            values: a.values.union(b.values),
        })
    }
}

/// A variable of a comprehension: where its values come from, and their sizes.
#[derive(Debug, Clone)]
struct Local {
    path: Vec<String>,
    size: Option<Estimate>,
    entries: Option<Entries>,
}

/// An argument (or the target) of a call, as the call estimators see it.
struct Arg<'e> {
    expr: &'e IdedExpr,
    path: Vec<String>,
    t: CelType,
    size: Option<Estimate>,
}

struct Coster<'a> {
    checked: &'a Checked,
    sizes: &'a Sizes,
    paths: HashMap<u64, Vec<String>>,
    locals: HashMap<String, Vec<Local>>,
    sizes_of: HashMap<u64, Estimate>,
    entries_of: HashMap<u64, Entries>,
}

impl Coster<'_> {
    fn cost(&mut self, e: &IdedExpr) -> Estimate {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => Estimate::fixed(0),
            Expr::Ident(name) => {
                let path = match self.local(name) {
                    Some(local) => local.path.clone(),
                    None => vec![name.clone()],
                };
                self.paths.insert(e.id, path);
                SELECT_AND_IDENT
            }
            Expr::Select(s) => self.cost_select(e.id, s),
            Expr::Call(c) => self.cost_call(e, c),
            Expr::List(l) => self.cost_list(e.id, &l.elements),
            Expr::Map(m) => self.cost_map(e.id, &m.entries),
            Expr::Struct(s) => {
                let mut sum = STRUCT_CREATE;
                for field in &s.entries {
                    if let EntryExpr::StructField(f) = &field.expr {
                        sum = sum.add(self.cost(&f.value));
                    }
                }
                sum
            }
            Expr::Comprehension(c) if is_bind(c) => self.cost_bind(e.id, c),
            Expr::Comprehension(c) => self.cost_comprehension(e.id, c),
        }
    }

    fn local(&self, name: &str) -> Option<&Local> {
        self.locals.get(name).and_then(|stack| stack.last())
    }

    fn push_local(&mut self, name: &str, local: Local) {
        self.locals.entry(name.to_string()).or_default().push(local);
    }

    fn pop_local(&mut self, name: &str) {
        if let Some(stack) = self.locals.get_mut(name) {
            stack.pop();
        }
    }

    /// The checked type of `e`; for a call of a library function the checker knows by name
    /// only, the type that function returns.
    fn type_of(&self, e: &IdedExpr) -> CelType {
        let checked = self.checked.types.get(&e.id).cloned();
        if let (Some(CelType::Unknown), Expr::Call(c)) = (&checked, &e.expr) {
            let function = self.checked.namespaced.get(&e.id).unwrap_or(&c.func_name);
            if let Some(t) = library_result(function) {
                return t;
            }
        }
        checked.unwrap_or(CelType::Dyn)
    }

    fn path_of(&self, e: &IdedExpr) -> Vec<String> {
        if let Expr::Ident(name) = &e.expr
            && let Some(local) = self.local(name)
        {
            return local.path.clone();
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    fn cost_select(&mut self, id: u64, s: &SelectExpr) -> Estimate {
        // kube counts nothing for a presence test (`has(self.x)`) beyond its operand.
        let operand = self.cost(&s.operand);
        if s.test {
            return operand;
        }
        let selects = matches!(
            self.type_of(&s.operand),
            CelType::Map(..) | CelType::Object(_)
        );
        let mut path = self.path_of(&s.operand);
        path.push(s.field.clone());
        self.paths.insert(id, path);
        if selects {
            operand.add(SELECT_AND_IDENT)
        } else {
            operand
        }
    }

    fn cost_list(&mut self, id: u64, elements: &[IdedExpr]) -> Estimate {
        let mut sum = LIST_CREATE;
        let mut items = Estimate {
            min: if elements.is_empty() { 0 } else { u64::MAX },
            max: 0,
        };
        for element in elements {
            sum = sum.add(self.cost(element));
            items = items.union(self.size_or_unknown(element));
        }
        let entries = Entries {
            list: Some(true),
            keys: Estimate::fixed(1),
            values: items,
        };
        self.entries_of.insert(id, entries);
        sum
    }

    fn cost_map(&mut self, id: u64, entries: &[IdedEntryExpr]) -> Estimate {
        let mut sum = MAP_CREATE;
        let empty = Estimate {
            min: if entries.is_empty() { 0 } else { u64::MAX },
            max: 0,
        };
        let (mut keys, mut values) = (empty, empty);
        for entry in entries {
            if let EntryExpr::MapEntry(m) = &entry.expr {
                sum = sum.add(self.cost(&m.key)).add(self.cost(&m.value));
                keys = keys.union(self.size_or_unknown(&m.key));
                values = values.union(self.size_or_unknown(&m.value));
            }
        }
        let created = Entries {
            list: Some(false),
            keys,
            values,
        };
        self.entries_of.insert(id, created);
        sum
    }
}

/// Whether a comprehension is `cel.bind(v, init, result)`: no range, a false condition, and
/// an accumulator of the rule's own naming.
fn is_bind(c: &ComprehensionExpr) -> bool {
    let no_range = matches!(&c.iter_range.expr, Expr::List(l) if l.elements.is_empty());
    let never_loops =
        matches!(&c.loop_cond.expr, Expr::Literal(LiteralValue::Boolean(b)) if !*b.inner());
    no_range && never_loops && !is_accumulator(&c.accu_var)
}

/// The accumulators the macros name (not a variable a rule can name).
fn is_accumulator(name: &str) -> bool {
    name == "@result" || name == "__result__"
}

impl Coster<'_> {
    fn cost_bind(&mut self, id: u64, c: &ComprehensionExpr) -> Estimate {
        let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
        let bound = self.local_of(&c.accu_init);
        self.push_local(&c.accu_var, bound);
        sum = sum.add(self.cost(&c.result));
        self.pop_local(&c.accu_var);
        self.copy_sizes(id, &c.result);
        sum
    }

    fn cost_comprehension(&mut self, id: u64, c: &ComprehensionExpr) -> Estimate {
        let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
        let accumulator = self.local_of(&c.accu_init);
        self.push_local(&c.accu_var, accumulator);
        let vars = self.iteration_vars(c);
        for (name, local) in &vars {
            self.push_local(name, local.clone());
        }
        let per_loop = self.cost(&c.loop_cond);
        let step = self.cost(&c.loop_step);
        for (name, _) in &vars {
            self.pop_local(name);
        }
        sum = sum.add(self.cost(&c.result));
        self.pop_local(&c.accu_var);
        let range = self.size_or_unknown(&c.iter_range);
        sum = sum.add(range.multiply(step.add(per_loop)));
        match &c.accu_init.expr {
            Expr::Literal(_) => {
                if let Some(size) = self.size_of(&c.accu_init) {
                    self.sizes_of.insert(id, size);
                }
            }
            Expr::List(_) | Expr::Map(_) => {
                self.sizes_of.insert(id, range);
                if let Some(entries) = self.entries(&c.loop_step) {
                    self.entries_of.insert(id, entries);
                }
            }
            _ => {}
        }
        sum
    }

    /// A variable bound to the value of `e`.
    fn local_of(&mut self, e: &IdedExpr) -> Local {
        Local {
            path: self.path_of(e),
            size: self.size_of(e),
            entries: self.entries(e),
        }
    }

    /// The variables a comprehension binds in each loop: an element (a list's item, a map's
    /// key), or with two variables an index or key and a value.
    fn iteration_vars(&mut self, c: &ComprehensionExpr) -> Vec<(String, Local)> {
        let entries = self.entries(&c.iter_range);
        let list = match entries.and_then(|e| e.list) {
            Some(list) => list,
            None => matches!(self.type_of(&c.iter_range), CelType::List(_)),
        };
        let path = self.path_of(&c.iter_range);
        let at = |step: &str| {
            let mut p = path.clone();
            p.push(step.to_string());
            p
        };
        let keys = Local {
            path: at(if list { "@indices" } else { "@keys" }),
            size: entries.map(|e| e.keys),
            entries: None,
        };
        let values = Local {
            path: at(if list { "@items" } else { "@values" }),
            size: entries.map(|e| e.values),
            entries: None,
        };
        match &c.iter_var2 {
            Some(second) => vec![(c.iter_var.clone(), keys), (second.clone(), values)],
            None if list => vec![(c.iter_var.clone(), values)],
            None => vec![(c.iter_var.clone(), keys)],
        }
    }

    fn copy_sizes(&mut self, to: u64, from: &IdedExpr) {
        if let Some(size) = self.size_of(from) {
            self.sizes_of.insert(to, size);
        }
        if let Some(entries) = self.entries(from) {
            self.entries_of.insert(to, entries);
        }
    }

    /// The size of `e`'s value: computed on the way, a literal's, the schema's where `e` reads
    /// `self`, 1 for a scalar, or a variable's.
    fn size_of(&mut self, e: &IdedExpr) -> Option<Estimate> {
        if let Some(size) = self.sizes_of.get(&e.id) {
            return Some(*size);
        }
        if let Some(size) = literal_size(e) {
            return Some(size);
        }
        if let Some(size) = self.schema_size(&self.path_of(e)) {
            self.sizes_of.insert(e.id, size);
            return Some(size);
        }
        if is_scalar(&self.type_of(e)) {
            return Some(Estimate::fixed(1));
        }
        match &e.expr {
            Expr::Ident(name) => self.local(name).and_then(|l| l.size),
            _ => None,
        }
    }

    fn size_or_unknown(&mut self, e: &IdedExpr) -> Estimate {
        self.size_of(e).unwrap_or(Estimate::UNKNOWN)
    }

    /// What the schema allows at `path` (kube's size estimator): up to its most elements.
    fn schema_size(&self, path: &[String]) -> Option<Estimate> {
        if path.is_empty() {
            return None;
        }
        let node = self.sizes.at(path)?;
        Some(Estimate {
            min: 0,
            max: node.max_elements,
        })
    }

    fn entries(&self, e: &IdedExpr) -> Option<Entries> {
        if let Some(entries) = self.entries_of.get(&e.id) {
            return Some(*entries);
        }
        match &e.expr {
            Expr::Ident(name) => self.local(name).and_then(|l| l.entries),
            _ => None,
        }
    }
}

/// The size of a literal: a string's characters, bytes, a list's items, a map's entries, 1
/// for any other.
fn literal_size(e: &IdedExpr) -> Option<Estimate> {
    let n = match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => s.inner().chars().count(),
        Expr::Literal(LiteralValue::Bytes(b)) => b.inner().len(),
        Expr::Literal(_) => 1,
        Expr::List(l) => l.elements.len(),
        Expr::Map(m) => m.entries.len(),
        _ => return None,
    };
    Some(Estimate::fixed(n as u64))
}

fn is_scalar(t: &CelType) -> bool {
    match t {
        CelType::Bool
        | CelType::Double
        | CelType::Duration
        | CelType::Int
        | CelType::Timestamp
        | CelType::Uint => true,
        CelType::Optional(inner) => is_scalar(inner),
        _ => false,
    }
}

/// The overloads whose cost cel-go or kube estimates apart from a call's plain cost of 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Overloaded {
    IndexList,
    IndexMap,
    InList,
    AddList,
    AddStringOrBytes,
    CompareSized,
    Conditional,
    Logical,
    StartsOrEndsWith,
    MatchesString,
    ContainsString,
    StringToBytes,
    BytesToString,
    FormatString,
    QuoteString,
    Sets(u8),
    CidrIp,
    ContainsWithString,
    Other,
}

impl Overloaded {
    /// Which one `overload` of `function` is (`None` for a function known by name only,
    /// told apart by its target and the types of its arguments).
    fn of(function: &str, overload: Option<&Overload>, member: bool, args: &[CelType]) -> Self {
        let first = overload.and_then(|o| o.params.first());
        let second = overload.and_then(|o| o.params.get(1));
        let on_string = overload
            .and_then(|o| o.receiver.as_ref())
            .is_some_and(|r| *r == Pattern::Exact(CelType::String));
        let exact = |p: Option<&Pattern>, t: CelType| p == Some(&Pattern::Exact(t));
        let sized = exact(first, CelType::String) || exact(first, CelType::Bytes);
        match function {
            "_[_]" if matches!(first, Some(Pattern::List(_))) => Self::IndexList,
            "_[_]" if matches!(first, Some(Pattern::Map(..))) => Self::IndexMap,
            "@in" if matches!(second, Some(Pattern::List(_))) => Self::InList,
            "_+_" if matches!(first, Some(Pattern::List(_))) => Self::AddList,
            "_+_" if sized => Self::AddStringOrBytes,
            "_<_" | "_<=_" | "_>_" | "_>=_" if sized => Self::CompareSized,
            "_==_" | "_!=_" => Self::CompareSized,
            "_?_:_" => Self::Conditional,
            "_&&_" | "_||_" => Self::Logical,
            "startsWith" | "endsWith" if on_string => Self::StartsOrEndsWith,
            "matches" if on_string => Self::MatchesString,
            "contains" if on_string => Self::ContainsString,
            "bytes" if exact(first, CelType::String) => Self::StringToBytes,
            "string" if exact(first, CelType::Bytes) => Self::BytesToString,
            "format" if member => Self::FormatString,
            "strings.quote" => Self::QuoteString,
            "sets.contains" | "sets.intersects" => Self::Sets(1),
            "sets.equivalent" => Self::Sets(2),
            "ip" if member => Self::CidrIp,
            "containsIP" | "containsCIDR"
                if args
                    .first()
                    .is_some_and(|t| *t == CelType::String || t.is_open()) =>
            {
                Self::ContainsWithString
            }
            _ => Self::Other,
        }
    }
}

impl Coster<'_> {
    fn arg<'e>(&mut self, e: &'e IdedExpr) -> Arg<'e> {
        let mut path = self.path_of(e);
        if path.first().is_some_and(|p| is_accumulator(p)) {
            path.clear();
        }
        Arg {
            expr: e,
            path,
            t: self.type_of(e),
            size: self.size_of(e),
        }
    }

    /// An argument's size: its own, the schema's at its path, or unknown.
    fn size_arg(&self, a: &Arg) -> Estimate {
        a.size
            .or_else(|| self.schema_size(&a.path))
            .unwrap_or(Estimate::UNKNOWN)
    }

    fn cost_call(&mut self, e: &IdedExpr, c: &CallExpr) -> Estimate {
        let namespaced = self.checked.namespaced.get(&e.id);
        let function = namespaced.map_or(c.func_name.as_str(), String::as_str);
        if function == "dyn"
            && let Some(arg) = c.args.first()
        {
            let cost = CALL.add(self.cost(arg));
            self.copy_sizes(e.id, arg);
            return cost;
        }
        let arg_costs: Vec<Estimate> = c.args.iter().map(|a| self.cost(a)).collect();
        let args: Vec<Arg> = c.args.iter().map(|a| self.arg(a)).collect();
        let mut sum = Estimate::fixed(0);
        let target = match c.target.as_deref() {
            Some(t) if namespaced.is_none() => {
                sum = self.cost(t);
                Some(self.arg(t))
            }
            _ => None,
        };
        let checked = self.checked;
        let overloads: Vec<Option<&Overload>> = match checked.overloads.get(&e.id) {
            Some(taken) => taken.iter().map(|o| Some(*o)).collect(),
            None => vec![None],
        };
        if overloads.is_empty() {
            return Estimate::fixed(0);
        }
        let types: Vec<CelType> = args.iter().map(|a| a.t.clone()).collect();
        let mut cost = Estimate {
            min: u64::MAX,
            max: 0,
        };
        let mut result: Option<Estimate> = None;
        for overload in overloads {
            let which = Overloaded::of(function, overload, target.is_some(), &types);
            let call = Call {
                e,
                function,
                which,
                target: target.as_ref(),
                args: &args,
                arg_costs: &arg_costs,
            };
            let (this, size) = self.function_cost(&call);
            cost = cost.union(this);
            if let Some(size) = size {
                result = Some(result.map_or(size, |r| r.union(size)));
            }
            if matches!(which, Overloaded::IndexList | Overloaded::IndexMap)
                && let Some(container) = c.args.first()
            {
                result = self.entries(container).map(|entries| entries.values);
                let mut path = self.path_of(container);
                path.push(
                    if which == Overloaded::IndexList {
                        "@items"
                    } else {
                        "@values"
                    }
                    .into(),
                );
                self.paths.insert(e.id, path);
            }
            if result.is_none() {
                result = self.size_of(e);
            }
        }
        if let Some(size) = result {
            self.sizes_of.insert(e.id, size);
        }
        sum.add(cost)
    }
}

/// One overload of a call, as its cost is estimated.
struct Call<'c, 'e> {
    e: &'e IdedExpr,
    function: &'c str,
    which: Overloaded,
    target: Option<&'c Arg<'e>>,
    args: &'c [Arg<'e>],
    arg_costs: &'c [Estimate],
}

impl Coster<'_> {
    /// The cost of one overload of a call with its arguments, and the size of its result
    /// where it is known: the extensions' estimators first, then kube's, then cel-go's.
    fn function_cost(&mut self, call: &Call) -> (Estimate, Option<Estimate>) {
        let arg_sum = call
            .arg_costs
            .iter()
            .fold(Estimate::fixed(0), |sum, c| sum.add(*c));
        if let Overloaded::Sets(factor) = call.which
            && let [a, b] = call.args
        {
            let sizes = self.size_arg(a).multiply(self.size_arg(b));
            return (sizes.times(f64::from(factor)).add(CALL).add(arg_sum), None);
        }
        if let Some((cost, size)) = self.kube_cost(call) {
            return (cost.add(arg_sum), size);
        }
        self.cel_cost(call, arg_sum)
    }

    /// cel-go's estimates of its own functions (`arg_sum`: what the arguments cost).
    fn cel_cost(&mut self, call: &Call, arg_sum: Estimate) -> (Estimate, Option<Estimate>) {
        let traverse = |size: Estimate| size.times(STRING_TRAVERSAL);
        let size = |i: usize| call.args.get(i).map(|a| self.size_arg(a));
        let target = call.target.map(|t| self.size_arg(t));
        let costs = call.arg_costs;
        match (call.which, target, size(0), size(1)) {
            (Overloaded::FormatString, Some(t), _, _) => (traverse(t).add(arg_sum), None),
            (Overloaded::StringToBytes, _, Some(s), None) => {
                let result = Estimate {
                    min: s.min,
                    max: s.max.wrapping_mul(4),
                };
                (traverse(s).add(arg_sum), Some(result))
            }
            (Overloaded::BytesToString, _, Some(s), None) => {
                let result = Estimate {
                    min: s.min / 4,
                    max: s.max,
                };
                (traverse(s).add(arg_sum), Some(result))
            }
            (Overloaded::QuoteString, _, Some(s), None) => {
                let result = Estimate {
                    min: s.min.wrapping_add(2),
                    max: s.max.wrapping_mul(2).wrapping_add(2),
                };
                (traverse(s).add(arg_sum), Some(result))
            }
            (Overloaded::StartsOrEndsWith, _, Some(s), None) => (traverse(s).add(arg_sum), None),
            (Overloaded::InList, _, Some(_), Some(list)) => (list.times(1.0).add(arg_sum), None),
            (Overloaded::MatchesString, Some(t), Some(re), None) => {
                let text = traverse(t.add(Estimate::fixed(1)));
                let pattern = re.times(REGEX_LENGTH);
                (text.multiply(pattern).add(arg_sum), None)
            }
            (Overloaded::ContainsString, Some(t), Some(s), None) => {
                (traverse(t).multiply(traverse(s)).add(arg_sum), None)
            }
            (Overloaded::Logical, _, _, _) if costs.len() == 2 => {
                let either = Estimate {
                    min: costs[0].min,
                    max: costs[0].add(costs[1]).max,
                };
                (either, None)
            }
            (Overloaded::Conditional, _, _, Some(if_true)) if costs.len() == 3 => {
                let if_false = size(2).unwrap_or(Estimate::UNKNOWN);
                let entries = Entries::union(
                    self.entries(call.args[1].expr),
                    self.entries(call.args[2].expr),
                );
                if let Some(entries) = entries {
                    self.entries_of.insert(call.e.id, entries);
                }
                let cost = costs[0].add(costs[1].union(costs[2]));
                (cost, Some(if_true.union(if_false)))
            }
            (Overloaded::AddList | Overloaded::AddStringOrBytes, _, Some(l), Some(r)) => {
                let result = l.add(r);
                let entries = Entries::union(
                    self.entries(call.args[0].expr),
                    self.entries(call.args[1].expr),
                );
                if let Some(entries) = entries {
                    self.entries_of.insert(call.e.id, entries);
                }
                let cost = if call.which == Overloaded::AddList {
                    CALL
                } else {
                    traverse(result)
                };
                (cost.add(arg_sum), Some(result))
            }
            (Overloaded::CompareSized, _, Some(l), Some(r)) => {
                let shortest = l.max.min(r.max);
                let compared = Estimate {
                    min: u64::from(shortest > 0),
                    max: shortest,
                };
                (traverse(compared).add(arg_sum), None)
            }
            _ => (CALL.add(arg_sum), None),
        }
    }
}

/// The addresses kube sizes for its IP and CIDR comparisons: 4 to 16 bytes.
const IP_BYTES: Estimate = Estimate { min: 4, max: 16 };

impl Coster<'_> {
    /// Kubernetes' estimates of its library functions (without what the arguments cost);
    /// `None` where kube leaves the call to cel-go.
    fn kube_cost(&self, call: &Call) -> Option<(Estimate, Option<Estimate>)> {
        let traverse = |size: Estimate| size.times(STRING_TRAVERSAL);
        let target = call.target.map(|t| self.size_arg(t));
        let first = call.args.first().map(|a| self.size_arg(a));
        let fixed = |n| Some((Estimate::fixed(n), None));
        match call.function {
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
                let list = call.target?;
                let size = self.size_arg(list);
                let Some(element) = self.element_size(list) else {
                    return Some((traverse(size), None));
                };
                Some((size.multiply(element), None))
            }
            "url" | "jsonpatch.escapeKey" if call.args.len() == 1 => {
                let s = first?;
                Some((traverse(s), Some(s)))
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                let s = target?;
                Some((traverse(s), Some(s)))
            }
            "replace" if call.args.len() >= 2 => {
                let replaced = self.size_arg(&call.args[0]);
                let with = self.size_arg(&call.args[1]);
                let s = target?;
                Some((
                    s.times(2.0 * STRING_TRAVERSAL),
                    Some(replace_size(s, replaced, with)),
                ))
            }
            "split" => {
                let s = target?;
                let most = match call.args.get(1).map(|a| &a.expr.expr) {
                    Some(Expr::Literal(LiteralValue::Int(n))) => *n.inner() as u64,
                    _ => s.max,
                };
                let result = Estimate { min: 0, max: most };
                Some((s.times(2.0 * STRING_TRAVERSAL), Some(result)))
            }
            "join" => self.join_cost(call),
            "find" | "findAll" if !call.args.is_empty() => {
                let s = target?;
                let text = traverse(s.add(Estimate::fixed(1)));
                let pattern = first?.times(REGEX_LENGTH);
                let result = Estimate { min: 0, max: s.max };
                Some((text.multiply(pattern), Some(result)))
            }
            "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver" => {
                Some((traverse(first?), None))
            }
            "ip" if call.which == Overloaded::CidrIp => fixed(1),
            "ip" => Some((traverse(first?), None)),
            "ip.isCanonical" => Some((first?.times(2.0 * STRING_TRAVERSAL), None)),
            "containsIP" | "containsCIDR" => {
                let arg = first?;
                let mut cost = traverse(IP_BYTES.add(IP_BYTES));
                if call.function == "containsCIDR" {
                    cost = cost.add(traverse(IP_BYTES)).add(CALL);
                }
                if call.which == Overloaded::ContainsWithString {
                    cost = cost.add(traverse(arg));
                }
                Some((cost, None))
            }
            "validate" => {
                let per_name = 128.0 * REGEX_LENGTH;
                Some((traverse(first?).times(per_name), None))
            }
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast"
            | "format.named"
            | "sign"
            | "asInteger"
            | "isInteger"
            | "asApproximateFloat"
            | "isGreaterThan"
            | "isLessThan"
            | "compareTo"
            | "add"
            | "sub"
            | "major"
            | "minor"
            | "patch"
            | "getScheme"
            | "getHostname"
            | "getHost"
            | "getPort"
            | "getEscapedPath"
            | "getQuery" => fixed(1),
            "_==_" => self.library_equality(call),
            _ => None,
        }
    }

    /// What comparing one element of a list costs (1, and a string's or bytes' traversal),
    /// `None` when the target is no list (a string's `indexOf`).
    fn element_size(&self, list: &Arg) -> Option<Estimate> {
        let element = list_element(&list.t)?;
        let mut cost = CALL;
        if matches!(element, CelType::String | CelType::Bytes) {
            let size = self.items_size(list);
            cost = cost.add(size.times(STRING_TRAVERSAL));
        }
        Some(cost)
    }

    /// The size of one item of a list the schema sizes, or unknown.
    fn items_size(&self, list: &Arg) -> Estimate {
        if list.path.is_empty() {
            return Estimate::UNKNOWN;
        }
        let mut path = list.path.clone();
        path.push("@items".into());
        self.schema_size(&path).unwrap_or(Estimate::UNKNOWN)
    }

    fn join_cost(&self, call: &Call) -> Option<(Estimate, Option<Estimate>)> {
        let list = call.target?;
        let items = self.size_arg(list);
        let mut size = match list_element(&list.t) {
            Some(_) => items.multiply(self.items_size(list)),
            None => Estimate::fixed(0),
        };
        if let Some(separator) = call.args.first() {
            let separators = Estimate {
                min: items.min.saturating_sub(1),
                max: items.max.saturating_sub(1),
            };
            size = size.add(self.size_arg(separator).multiply(separators));
        }
        Some((size.times(STRING_TRAVERSAL), Some(size)))
    }

    /// Comparing two values of a Kubernetes type: constant for most, a traversal for formats
    /// and URLs; `None` for other types (cel-go's estimate).
    fn library_equality(&self, call: &Call) -> Option<(Estimate, Option<Estimate>)> {
        let [lhs, rhs] = call.args else {
            return None;
        };
        let (CelType::Opaque(a), CelType::Opaque(b)) = (&lhs.t, &rhs.t) else {
            return None;
        };
        match *a {
            _ if a != b => None,
            "kubernetes.NamedFormat" => {
                Some((Estimate { min: 1, max: 64 }.times(STRING_TRAVERSAL), None))
            }
            "kubernetes.URL" => {
                // kube sizes both sides by the right one.
                let size = rhs.size.unwrap_or(Estimate::fixed(1));
                let compared = Estimate {
                    min: 1,
                    max: size.max,
                };
                Some((compared.times(STRING_TRAVERSAL), None))
            }
            _ => Some((CALL, None)),
        }
    }
}

/// The type of a list's items (or a map's keys), as cel-go takes a type's first parameter.
fn list_element(t: &CelType) -> Option<&CelType> {
    match t {
        CelType::List(item) => Some(item),
        CelType::Map(key, _) => Some(key),
        CelType::Optional(inner) => Some(inner),
        _ => None,
    }
}

/// The size of `s.replace(replaced, with)`: kube's bounds on how many replacements fit.
fn replace_size(s: Estimate, replaced: Estimate, with: Estimate) -> Estimate {
    let (count_max, kept_max) = if replaced.min == 0 {
        (s.max.saturating_add(1), s.max)
    } else if with.max <= replaced.min {
        (0, s.max)
    } else {
        ((s.max as f64 / replaced.min as f64).ceil() as u64, 0)
    };
    let (count_min, kept_min) = if replaced.max == 0 {
        (s.min.saturating_add(1), s.min)
    } else if replaced.max <= with.min {
        (0, s.min)
    } else {
        ((s.min as f64 / replaced.max as f64).ceil() as u64, 0)
    };
    let count = Estimate {
        min: count_min,
        max: count_max,
    };
    let kept = Estimate {
        min: kept_min,
        max: kept_max,
    };
    count.multiply(with).add(kept)
}

/// What the functions the checker knows by name only return, as far as their cost estimates
/// tell types apart (the libraries with overloads get their types from the checker).
fn library_result(function: &str) -> Option<CelType> {
    Some(match function {
        "sets.contains" | "sets.equivalent" | "sets.intersects" => CelType::Bool,
        "getFullYear" | "getMonth" | "getDate" | "getDayOfMonth" | "getDayOfWeek"
        | "getDayOfYear" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds" => {
            CelType::Int
        }
        "format" | "strings.quote" => CelType::String,
        _ => return None,
    })
}
