//! CPG network construction for lifelong learning (thesis 7.4): from the
//! physical connection graph to a CPG network, its phase constraints and the
//! free parameters of an optimization.
//!
//! - [`cpg_graph`] (7.4.1): the largest connected component of the physical
//!   graph; a coupling both ways wherever two modules are connected, phase 0,
//!   weight 1.
//! - [`loops`] and [`constrain`] (7.4.2): every loop of the CPG graph, then
//!   the thesis' constraints algorithm, which makes the phase shifts around
//!   each loop sum to a multiple of 2π by expressing some edges through the
//!   others.
//! - [`symmetries`] (7.8.1): the automorphisms of the physical graph, whose
//!   orbits tie parameters together instead of fixing random ones.
//! - [`plan`]: all of it as an [`OptimizationConfig`].
//!
//! Sign convention. Fig 7.2 writes `2_3 = M2Pi(-1_2+1_3)`, meaning "the
//! wrapped value of −1_2 + 1_3". 5.7.2's `M2Pi(x)` is the angle to *add* to
//! `x` to reach a multiple of 2π, i.e. the wrapped value of −x, so the same
//! constraint reads `phase_2_3 = M2Pi(phase_1_2() - phase_1_3())` here.
//! [`Constraint::terms`] keep the figure's signs.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::ModuleId;
use crate::config::{CpgLink, ModuleConfig, RobotConfig};
use crate::morphology::Morphology;
use crate::optimize::{OptimizationConfig, ParamName, Rule};

/// A directed CPG edge `(from, to)`: the phase shift `phase_<from>_<to>`.
pub type Edge = (ModuleId, ModuleId);

/// The undirected physical graph: module → neighbours.
#[must_use]
pub fn physical_graph(morphology: &Morphology) -> BTreeMap<ModuleId, BTreeSet<ModuleId>> {
    let mut graph: BTreeMap<ModuleId, BTreeSet<ModuleId>> = morphology
        .modules
        .iter()
        .map(|m| (m.id, BTreeSet::new()))
        .collect();
    for c in &morphology.connections {
        graph.entry(c.id_from).or_default().insert(c.id_to);
        graph.entry(c.id_to).or_default().insert(c.id_from);
    }
    graph
}

/// The largest connected component (ties: the one with the smallest id),
/// sorted. Detached modules are ignored (7.4.1).
#[must_use]
pub fn largest_component(graph: &BTreeMap<ModuleId, BTreeSet<ModuleId>>) -> Vec<ModuleId> {
    let mut seen = BTreeSet::new();
    let mut best: Vec<ModuleId> = Vec::new();
    for &start in graph.keys() {
        if !seen.insert(start) {
            continue;
        }
        let mut component = vec![start];
        let mut stack = vec![start];
        while let Some(v) = stack.pop() {
            for &n in &graph[&v] {
                if seen.insert(n) {
                    component.push(n);
                    stack.push(n);
                }
            }
        }
        component.sort_unstable();
        if component.len() > best.len() {
            best = component;
        }
    }
    best
}

/// 7.4.1: the CPG graph H of the largest component g: for every physical
/// connection A–B of g, the edges A→B and B→A. Sorted.
#[must_use]
pub fn cpg_graph(morphology: &Morphology) -> (Vec<ModuleId>, Vec<Edge>) {
    let graph = physical_graph(morphology);
    let component = largest_component(&graph);
    let inside: BTreeSet<ModuleId> = component.iter().copied().collect();
    let mut edges = Vec::new();
    for &a in &component {
        for &b in &graph[&a] {
            if inside.contains(&b) && a != b {
                edges.push((a, b));
            }
        }
    }
    (component, edges)
}

/// Most loops [`loops`] enumerates; beyond this the graph is too meshed for
/// the thesis' exhaustive walk and the rest are dropped (each loop only adds
/// redundant equations once every cycle-space direction is covered).
pub const MAX_LOOPS: usize = 10_000;

/// Every loop of the directed graph `edges`, as vertex lists starting and
/// ending at the same vertex (`[1, 2, 3, 1]`). Per start vertex in
/// ascending order, shorter loops first, then lexicographic; a loop equal
/// to an earlier one up to rotation or reversal is dropped (Fig 7.2, steps 1
/// and 2).
#[must_use]
pub fn loops(edges: &[Edge]) -> Vec<Vec<ModuleId>> {
    let mut out: BTreeMap<ModuleId, BTreeSet<ModuleId>> = BTreeMap::new();
    for &(a, b) in edges {
        out.entry(a).or_default().insert(b);
    }
    let mut all = Vec::new();
    let mut seen = BTreeSet::new();
    for &start in out.keys() {
        let mut found = Vec::new();
        let mut path = vec![start];
        walk(&out, start, &mut path, &mut found);
        found.sort_by(|a: &Vec<ModuleId>, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
        for l in found {
            if seen.insert(canonical(&l)) {
                all.push(l);
                if all.len() >= MAX_LOOPS {
                    return all;
                }
            }
        }
    }
    all
}

fn walk(
    out: &BTreeMap<ModuleId, BTreeSet<ModuleId>>,
    start: ModuleId,
    path: &mut Vec<ModuleId>,
    found: &mut Vec<Vec<ModuleId>>,
) {
    if found.len() >= MAX_LOOPS {
        return;
    }
    let last = *path.last().expect("starts with the start vertex");
    for &next in out.get(&last).into_iter().flatten() {
        if next == start && path.len() >= 2 {
            let mut l = path.clone();
            l.push(start);
            found.push(l);
        } else if !path.contains(&next) {
            path.push(next);
            walk(out, start, path, found);
            path.pop();
        }
    }
}

/// The smallest rotation of the loop or of its reverse (closing vertex
/// removed): equal for loops that are the same cycle.
fn canonical(l: &[ModuleId]) -> Vec<ModuleId> {
    let open = &l[..l.len() - 1];
    let reversed: Vec<ModuleId> = open.iter().rev().copied().collect();
    let mut best: Option<Vec<ModuleId>> = None;
    for seq in [open.to_vec(), reversed] {
        for r in 0..seq.len() {
            let mut rotated = seq[r..].to_vec();
            rotated.extend_from_slice(&seq[..r]);
            if best.as_ref().is_none_or(|b| rotated < *b) {
                best = Some(rotated);
            }
        }
    }
    best.unwrap_or_default()
}

/// One constrained edge: its phase is the wrapped sum of `terms`
/// (coefficient × free edge), as Fig 7.2 writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    pub edge: Edge,
    pub terms: Vec<(Edge, i32)>,
}

/// The result of the constraints algorithm.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Constraints {
    /// Edges left free, in the order the algorithm fixed them.
    pub free: Vec<Edge>,
    /// Edges expressed through the free ones, in the order constrained.
    pub constrained: Vec<Constraint>,
}

/// The constraints algorithm of 7.4.2 on `loops` (from [`loops`]). Edges in
/// `keep_free` are made free first when they can be.
#[must_use]
pub fn constrain(loops: &[Vec<ModuleId>], keep_free: &[Edge]) -> Constraints {
    // Edge → its expansion; empty for a free edge (the thesis' "0").
    let mut cn: HashMap<Edge, Vec<(Edge, i32)>> = HashMap::new();
    let mut result = Constraints::default();
    let edges_of = |l: &[ModuleId]| -> Vec<Edge> { l.windows(2).map(|w| (w[0], w[1])).collect() };
    loop {
        let pick = keep_free
            .iter()
            .copied()
            .find(|e| !cn.contains_key(e) && loops.iter().any(|l| edges_of(l).contains(e)))
            .or_else(|| {
                loops
                    .iter()
                    .flat_map(|l| edges_of(l))
                    .find(|e| !cn.contains_key(e))
            });
        let Some(fix) = pick else { break };
        cn.insert(fix, Vec::new());
        result.free.push(fix);
        loop {
            let mut changed = false;
            for l in loops {
                let edges = edges_of(l);
                let unset: Vec<Edge> = edges
                    .iter()
                    .copied()
                    .filter(|e| !cn.contains_key(e))
                    .collect();
                let [free] = unset[..] else { continue };
                // The loop's sum must be a multiple of 2π: this edge is minus
                // the others, each expanded into free edges.
                let mut terms: Vec<(Edge, i32)> = Vec::new();
                for e in edges.iter().filter(|&&e| e != free) {
                    let expansion = &cn[e];
                    if expansion.is_empty() {
                        add_term(&mut terms, *e, -1);
                    } else {
                        for &(f, c) in expansion {
                            add_term(&mut terms, f, -c);
                        }
                    }
                }
                cn.insert(free, terms.clone());
                result.constrained.push(Constraint { edge: free, terms });
                changed = true;
            }
            if !changed {
                break;
            }
        }
    }
    result
}

/// Adds `c × edge`, merging like terms and dropping zeros.
fn add_term(terms: &mut Vec<(Edge, i32)>, edge: Edge, c: i32) {
    if let Some(i) = terms.iter().position(|t| t.0 == edge) {
        terms[i].1 += c;
        if terms[i].1 == 0 {
            terms.remove(i);
        }
    } else {
        terms.push((edge, c));
    }
}

/// `phase_a_b`.
#[must_use]
pub fn phase_name(edge: Edge) -> String {
    ParamName::Phase(edge.0, edge.1).to_string()
}

/// The MathEval expression of a constrained edge over named free edges,
/// with 5.7.2's `M2Pi` (see the module docs for the sign).
#[must_use]
pub fn constraint_expr(terms: &[(Edge, i32)], name: impl Fn(Edge) -> String) -> String {
    let mut text = String::new();
    for &(edge, c) in terms {
        // M2Pi adds what reaches a multiple of 2π, so it takes the negated sum.
        let c = -c;
        let sign = if c < 0 {
            "-"
        } else if text.is_empty() {
            ""
        } else {
            "+"
        };
        let magnitude = c.unsigned_abs();
        let factor = if magnitude == 1 {
            String::new()
        } else {
            format!("{magnitude}*")
        };
        text += &format!("{sign}{factor}{}()", name(edge));
    }
    if text.is_empty() {
        text.push('0');
    }
    format!("M2Pi({text})")
}

/// A permutation of module ids.
pub type Permutation = BTreeMap<ModuleId, ModuleId>;

/// Every automorphism of the physical graph restricted to `component`: the
/// permutations that keep adjacency and which modules are passive. The
/// identity comes first. Connectors are not compared: a mirror image swaps
/// left and right connectors and is exactly the symmetry a gait designer
/// ties by hand. At most `limit` are returned.
#[must_use]
pub fn symmetries(
    morphology: &Morphology,
    component: &[ModuleId],
    limit: usize,
) -> Vec<Permutation> {
    let graph = physical_graph(morphology);
    let passive: BTreeSet<ModuleId> = morphology
        .modules
        .iter()
        .filter(|m| m.passive)
        .map(|m| m.id)
        .collect();
    let inside: BTreeSet<ModuleId> = component.iter().copied().collect();
    let neighbours = |v: ModuleId| -> BTreeSet<ModuleId> {
        graph[&v]
            .iter()
            .copied()
            .filter(|n| inside.contains(n))
            .collect()
    };
    let degree = |v: ModuleId| neighbours(v).len();
    let mut out = Vec::new();
    let mut map: Vec<(ModuleId, ModuleId)> = Vec::new();
    let mut used = BTreeSet::new();
    extend(
        component,
        &mut map,
        &mut used,
        &mut out,
        limit,
        &|a, b, map: &[(ModuleId, ModuleId)]| {
            if degree(a) != degree(b) || passive.contains(&a) != passive.contains(&b) {
                return false;
            }
            // Adjacency to every module already mapped must be preserved.
            map.iter()
                .all(|&(x, y)| neighbours(a).contains(&x) == neighbours(b).contains(&y))
        },
    );
    out
}

/// Whether module `a` may map to `b` given the pairs already mapped.
type Fits<'a> = dyn Fn(ModuleId, ModuleId, &[(ModuleId, ModuleId)]) -> bool + 'a;

fn extend(
    order: &[ModuleId],
    map: &mut Vec<(ModuleId, ModuleId)>,
    used: &mut BTreeSet<ModuleId>,
    out: &mut Vec<Permutation>,
    limit: usize,
    fits: &Fits<'_>,
) {
    if out.len() >= limit {
        return;
    }
    let Some(&a) = order.get(map.len()) else {
        out.push(map.iter().copied().collect());
        return;
    };
    // Trying `a` first puts the identity first.
    let candidates = std::iter::once(a).chain(order.iter().copied().filter(|&b| b != a));
    for b in candidates {
        if used.contains(&b) || !fits(a, b, map) {
            continue;
        }
        map.push((a, b));
        used.insert(b);
        extend(order, map, used, out, limit, fits);
        used.remove(&b);
        map.pop();
    }
}

/// Orbits of `items` under `group` (`act` applies a permutation), each
/// sorted, in order of their smallest member.
fn orbits<T: Ord + Copy>(
    items: &[T],
    group: &[Permutation],
    act: impl Fn(&Permutation, T) -> T,
) -> Vec<Vec<T>> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut sorted = items.to_vec();
    sorted.sort();
    for &x in &sorted {
        if seen.contains(&x) {
            continue;
        }
        let mut orbit: BTreeSet<T> = BTreeSet::new();
        for p in group {
            let y = act(p, x);
            if sorted.binary_search(&y).is_ok() {
                orbit.insert(y);
            }
        }
        orbit.insert(x);
        seen.extend(orbit.iter().copied());
        out.push(orbit.into_iter().collect());
    }
    out
}

/// How to keep the number of free parameters down.
#[derive(Debug, Clone, PartialEq)]
pub enum Limit {
    /// Every parameter the network has stays free.
    None,
    /// The thesis (7.4.2, "Parameters Fixation"): keep `max` free
    /// parameters picked at random and set the others to random values.
    Random { max: usize, seed: u64 },
    /// 7.8.1: tie parameters over the physical graph's symmetries (one free
    /// parameter per orbit of modules or of edges); then, if more than
    /// `max` remain, keep `max` picked at random and the rest at the current
    /// gait's values.
    Symmetric { max: usize, seed: u64 },
}

/// Errors building a network.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum NetworkError {
    #[error("the morphology has no module")]
    Empty,
    #[error("the optimization configuration is invalid: {0}")]
    Invalid(String),
}

/// A new CPG network for `morphology` and the optimization that relearns
/// it, starting from `gait` where the two agree (7.4). Modules of the
/// largest component get couplings both ways with phase 0 and weight 1
/// (existing phases are kept as starting values where the edge existed);
/// amplitude and offset are free within the module's limit angles,
/// frequency, weights and limits are kept; detached modules stop.
pub fn plan(
    morphology: &Morphology,
    gait: &RobotConfig,
    limit: &Limit,
) -> Result<OptimizationConfig, NetworkError> {
    let (component, edges) = cpg_graph(morphology);
    if component.is_empty() {
        return Err(NetworkError::Empty);
    }
    let passive: BTreeSet<ModuleId> = morphology
        .modules
        .iter()
        .filter(|m| m.passive)
        .map(|m| m.id)
        .collect();
    let mut robot = coupled_robot(morphology, gait, &component, &edges, &passive);
    let group = match limit {
        Limit::Symmetric { .. } => symmetries(morphology, &component, 1000),
        _ => Vec::new(),
    };
    // A phase parameter is one undirected edge (`ParamName::Phase` sets
    // a→b and b→a = −(a→b) together), so everything below speaks of
    // canonical edges a < b; the 2-cycles' constraints are that identity.
    let constraints = canonical_constraints(&constrain(&loops(&edges), &[]));
    let mut free = module_parameters(&robot, &component, &passive, &group);
    let (phases, representative) = phase_parameters(&edge_orbits(&constraints.free, &group));
    free.extend(phases);
    let fixed = fix_parameters(&mut free, limit, &mut robot);
    let mut rules = free_rules(&free, &mut robot)?;
    rules.extend(constraint_rules(&constraints, &representative, &fixed)?);
    OptimizationConfig::new(robot, rules).map_err(|e| NetworkError::Invalid(e.to_string()))
}

/// A candidate free parameter, the parameters tied to it, and its range.
type Candidate = (ParamName, Vec<ParamName>, f64, f64);

/// The robot of [`plan`] before any parameter is set: the modules of
/// `component` coupled along `edges` at the gait's common frequency, the
/// others (and every passive module) still.
fn coupled_robot(
    morphology: &Morphology,
    gait: &RobotConfig,
    component: &[ModuleId],
    edges: &[Edge],
    passive: &BTreeSet<ModuleId>,
) -> RobotConfig {
    let speed = common_speed(gait);
    let inside: BTreeSet<ModuleId> = component.iter().copied().collect();
    let mut robot = RobotConfig {
        modules: Vec::new(),
        id_attribute: gait.id_attribute,
    };
    for m in &morphology.modules {
        let old = gait.module(m.id);
        let mut module = old.cloned().unwrap_or_else(|| ModuleConfig {
            min_angle: -std::f64::consts::FRAC_PI_2,
            max_angle: std::f64::consts::FRAC_PI_2,
            ..ModuleConfig::at_rest(m.id)
        });
        module.cpg_links.clear();
        if inside.contains(&m.id) {
            module.speed = speed;
            for &(_, b) in edges.iter().filter(|e| e.0 == m.id) {
                let phase = old
                    .and_then(|o| o.cpg_links.iter().find(|l| l.to == b))
                    .map_or(0.0, |l| l.phase);
                module.cpg_links.push(CpgLink {
                    to: b,
                    phase,
                    weight: 1.0,
                });
            }
        } else {
            module.amplitude = 0.0;
            module.speed = 0.0;
        }
        if passive.contains(&m.id) {
            module.amplitude = 0.0;
        }
        robot.modules.push(module);
    }
    robot
}

/// Amplitude and offset of every active module of `component`, one pair
/// per orbit of `group` (per module without symmetries), within the reach
/// of the orbit's first module's limit angles.
fn module_parameters(
    robot: &RobotConfig,
    component: &[ModuleId],
    passive: &BTreeSet<ModuleId>,
    group: &[Permutation],
) -> Vec<Candidate> {
    let mut free = Vec::new();
    let active: Vec<ModuleId> = component
        .iter()
        .copied()
        .filter(|id| !passive.contains(id))
        .collect();
    let module_orbits = if group.is_empty() {
        active.iter().map(|&id| vec![id]).collect()
    } else {
        orbits(&active, group, |p, id| p[&id])
    };
    for orbit in &module_orbits {
        let first = robot.module(orbit[0]).expect("in the robot");
        let reach = first.max_angle.min(-first.min_angle).max(0.0);
        let tie =
            |f: fn(ModuleId) -> ParamName| orbit[1..].iter().map(|&i| f(i)).collect::<Vec<_>>();
        free.push((
            ParamName::Amplitude(orbit[0]),
            tie(ParamName::Amplitude),
            0.0,
            reach,
        ));
        free.push((
            ParamName::Offset(orbit[0]),
            tie(ParamName::Offset),
            -reach / 2.0,
            reach / 2.0,
        ));
    }
    free
}

/// The free (canonical) edges grouped into the orbits of `group`, whose
/// phases are tied; each edge alone without symmetries.
fn edge_orbits(free: &[Edge], group: &[Permutation]) -> Vec<Vec<Edge>> {
    if group.is_empty() {
        free.iter().map(|&e| vec![e]).collect()
    } else {
        orbits(free, group, |p, (a, b)| canonical_edge((p[&a], p[&b])).0)
            .into_iter()
            .flat_map(|orbit| {
                // Edges fanning out of one module (a star) stay apart: tied,
                // every branch would swing in unison and the travelling wave
                // that walking needs could not form (Table 6.1 keeps the
                // spine lags free for the same reason).
                let star = orbit.len() > 1
                    && orbit.iter().all(|e| e.0 == orbit[0].0 || e.1 == orbit[0].0)
                    || orbit.len() > 1
                        && orbit.iter().all(|e| e.0 == orbit[0].1 || e.1 == orbit[0].1);
                if star {
                    orbit.into_iter().map(|e| vec![e]).collect::<Vec<_>>()
                } else {
                    vec![orbit]
                }
            })
            .collect()
    }
}

/// One phase parameter per orbit of edges, the others of the orbit tied to
/// it, and every free edge's representative (its orbit's first edge).
fn phase_parameters(edge_orbits: &[Vec<Edge>]) -> (Vec<Candidate>, BTreeMap<Edge, Edge>) {
    let mut free = Vec::new();
    let mut representative: BTreeMap<Edge, Edge> = BTreeMap::new();
    for orbit in edge_orbits {
        for &e in orbit {
            representative.insert(e, orbit[0]);
        }
        let pi = std::f64::consts::PI;
        free.push((
            ParamName::Phase(orbit[0].0, orbit[0].1),
            orbit[1..]
                .iter()
                .map(|&(a, b)| ParamName::Phase(a, b))
                .collect(),
            -pi,
            pi,
        ));
    }
    (free, representative)
}

/// The thesis' fixation: keeps at most `limit`'s `max` of `free`, picked
/// at random, and sets the others and the parameters tied to them in
/// `robot`; returns the values set. They are set once all are drawn, so
/// the current gait's values that [`Limit::Symmetric`] keeps are the
/// gait's own, not values fixed a moment before.
fn fix_parameters(
    free: &mut Vec<Candidate>,
    limit: &Limit,
    robot: &mut RobotConfig,
) -> HashMap<ParamName, f64> {
    use rand::{Rng, SeedableRng};
    let (max, seed) = match limit {
        Limit::None => (usize::MAX, 0),
        Limit::Random { max, seed } | Limit::Symmetric { max, seed } => (*max, *seed),
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut fixed: HashMap<ParamName, f64> = HashMap::new();
    while free.len() > max {
        let i = rng.random_range(0..free.len());
        let (name, tied, lo, hi) = free.remove(i);
        // The thesis sets a fixed parameter to a random value; with
        // symmetries it keeps the current gait's value, which the robot
        // walked with and is more likely useful than a random one.
        let value = match (limit, name.get(&*robot)) {
            (Limit::Symmetric { .. }, Some(current)) => current.clamp(lo, hi),
            _ => rng.random_range(lo..=hi),
        };
        fixed.insert(name, value);
        for t in tied {
            fixed.insert(t, value);
        }
    }
    for (name, value) in &fixed {
        name.set(robot, *value);
    }
    fixed
}

/// A free rule per candidate left in `free`, each followed by the rules
/// that tie its orbit to it; starts each in `robot` at its current value
/// brought within range.
fn free_rules(free: &[Candidate], robot: &mut RobotConfig) -> Result<Vec<Rule>, NetworkError> {
    let mut rules = Vec::new();
    for (name, tied, lo, hi) in free {
        let start = name.get(robot).unwrap_or(0.0).clamp(*lo, *hi);
        name.set(robot, start);
        rules.push(Rule::Free {
            param: *name,
            min: *lo,
            max: *hi,
        });
        for t in tied {
            rules.push(constrained(*t, &format!("{name}()"))?);
        }
    }
    Ok(rules)
}

/// A rule per constrained edge: the M2Pi expression over the free edges.
fn constraint_rules(
    constraints: &Constraints,
    representative: &BTreeMap<Edge, Edge>,
    fixed: &HashMap<ParamName, f64>,
) -> Result<Vec<Rule>, NetworkError> {
    let mut rules = Vec::new();
    // Free edges tied into an orbit, or fixed: the constraints see them
    // through their representative (or their fixed value, as a constant).
    let name_of = |e: Edge| -> String {
        let rep = representative.get(&e).copied().unwrap_or(e);
        phase_name(rep)
    };
    for c in &constraints.constrained {
        let mut terms: Vec<(Edge, i32)> = Vec::new();
        let mut constant = 0.0;
        for &(e, k) in &c.terms {
            let rep = representative.get(&e).copied().unwrap_or(e);
            match fixed.get(&ParamName::Phase(rep.0, rep.1)) {
                Some(v) => constant += f64::from(k) * v,
                None => add_term(&mut terms, rep, k),
            }
        }
        let mut expr = constraint_expr(&terms, name_of);
        if constant != 0.0 {
            // M2Pi(x) wraps −x: a fixed part enters negated.
            expr = format!("{}{:+})", &expr[..expr.len() - 1], -constant);
        }
        rules.push(constrained(ParamName::Phase(c.edge.0, c.edge.1), &expr)?);
    }
    Ok(rules)
}

fn constrained(param: ParamName, text: &str) -> Result<Rule, NetworkError> {
    let expr = crate::matheval::Expr::parse(text)
        .map_err(|e| NetworkError::Invalid(format!("{param} = {text}: {e}")))?;
    Ok(Rule::Constrained { param, expr })
}

/// `edge` as the canonical a < b edge and the sign that converts.
fn canonical_edge((a, b): Edge) -> (Edge, i32) {
    if a < b { ((a, b), 1) } else { ((b, a), -1) }
}

/// The constraints over canonical edges: free edges as a < b, each
/// constrained undirected edge once (the first time either direction was
/// constrained), terms converted; constraints that only restate
/// antisymmetry (b→a through a→b) vanish.
fn canonical_constraints(c: &Constraints) -> Constraints {
    let mut out = Constraints::default();
    let mut done: BTreeSet<Edge> = BTreeSet::new();
    for &e in &c.free {
        let (k, _) = canonical_edge(e);
        if done.insert(k) {
            out.free.push(k);
        }
    }
    for k in &c.constrained {
        let (edge, sign) = canonical_edge(k.edge);
        if !done.insert(edge) {
            continue;
        }
        let mut terms = Vec::new();
        for &(e, c) in &k.terms {
            let (t, s) = canonical_edge(e);
            add_term(&mut terms, t, c * s * sign);
        }
        out.constrained.push(Constraint { edge, terms });
    }
    out
}

/// The gait's frequency: the most common non-zero speed (every oscillator
/// of a coupled network must share it).
fn common_speed(gait: &RobotConfig) -> f64 {
    let mut counts: Vec<(f64, usize)> = Vec::new();
    for m in gait.modules.iter().filter(|m| m.speed != 0.0) {
        match counts.iter_mut().find(|c| c.0 == m.speed) {
            Some(c) => c.1 += 1,
            None => counts.push((m.speed, 1)),
        }
    }
    counts.iter().max_by_key(|c| c.1).map_or(5.0, |c| c.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fig 7.1's graph g: 1–2, 1–3, 2–3, 3–4, both ways.
    fn figure_7_1() -> Vec<Edge> {
        let mut edges = Vec::new();
        for (a, b) in [(1, 2), (1, 3), (2, 3), (3, 4)] {
            edges.push((a, b));
            edges.push((b, a));
        }
        edges.sort_unstable();
        edges
    }

    #[test]
    fn loops_are_those_of_figure_7_2_step_2() {
        assert_eq!(
            loops(&figure_7_1()),
            [
                vec![1, 2, 1],
                vec![1, 3, 1],
                vec![1, 2, 3, 1],
                vec![2, 3, 2],
                vec![3, 4, 3],
            ]
        );
    }

    #[test]
    fn constraints_are_those_of_figure_7_2() {
        let c = constrain(&loops(&figure_7_1()), &[]);
        assert_eq!(c.free, [(1, 2), (1, 3), (3, 4)], "fix 1-2, 1-3, 3-4");
        let expected = [
            ((2, 1), vec![((1, 2), -1)]),
            ((3, 1), vec![((1, 3), -1)]),
            ((2, 3), vec![((1, 2), -1), ((1, 3), 1)]),
            ((3, 2), vec![((1, 2), 1), ((1, 3), -1)]),
            ((4, 3), vec![((3, 4), -1)]),
        ];
        let got: Vec<(Edge, Vec<(Edge, i32)>)> = c
            .constrained
            .iter()
            .map(|c| (c.edge, c.terms.clone()))
            .collect();
        assert_eq!(got, expected);
        assert_eq!(
            constraint_expr(&c.constrained[2].terms, phase_name),
            "M2Pi(phase_1_2()-phase_1_3())"
        );
    }

    fn quadruped() -> (Morphology, RobotConfig) {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/robots/quadruped/");
        (
            Morphology::from_file(format!("{root}world.xml")).unwrap(),
            RobotConfig::from_file(format!("{root}gait.xml")).unwrap(),
        )
    }

    #[test]
    fn the_quadruped_network_couples_every_physical_connection() {
        let (morphology, gait) = quadruped();
        let config = plan(&morphology, &gait, &Limit::None).unwrap();
        let robot = config.robot();
        for c in &morphology.connections {
            for (a, b) in [(c.id_from, c.id_to), (c.id_to, c.id_from)] {
                let link = robot
                    .module(a)
                    .unwrap()
                    .cpg_links
                    .iter()
                    .find(|l| l.to == b);
                assert_eq!(link.map(|l| l.weight), Some(1.0), "{a}->{b}");
            }
        }
        // A tree: no loop but the 2-cycles, so every undirected edge is free;
        // 8 active modules x (amplitude, offset) + 8 edges.
        assert_eq!(config.free_parameters().len(), 24);
    }

    #[test]
    fn symmetries_tie_the_legs_of_the_quadruped() {
        let (morphology, gait) = quadruped();
        let (component, _) = cpg_graph(&morphology);
        // Four interchangeable legs: 4! automorphisms.
        assert_eq!(symmetries(&morphology, &component, 1000).len(), 24);
        let config = plan(&morphology, &gait, &Limit::Symmetric { max: 100, seed: 1 }).unwrap();
        let names: Vec<String> = config
            .free_parameters()
            .into_iter()
            .map(|p| p.name)
            .collect();
        // Hips and knees each share amplitude and offset; the hip-knee lag is
        // one parameter; the four lags at the centre stay free.
        assert_eq!(
            names,
            [
                "amplitude_0",
                "offset_0",
                "amplitude_5",
                "offset_5",
                "phase_0_4",
                "phase_1_4",
                "phase_2_4",
                "phase_3_4",
                "phase_0_5"
            ]
        );
        let robot = config
            .apply(&[0.5, 0.1, 0.4, -0.2, 0.3, -0.3, 0.6, 0.9, 1.0])
            .unwrap();
        assert_eq!(ParamName::Amplitude(3).get(&robot), Some(0.5));
        assert_eq!(ParamName::Offset(8).get(&robot), Some(-0.2));
        assert_eq!(ParamName::Phase(3, 8).get(&robot), Some(1.0));
        assert_eq!(ParamName::Phase(8, 3).get(&robot), Some(-1.0));
    }

    #[test]
    fn the_thesis_limit_keeps_a_random_subset_and_fixes_the_rest() {
        let (morphology, gait) = quadruped();
        let a = plan(&morphology, &gait, &Limit::Random { max: 7, seed: 3 }).unwrap();
        assert_eq!(a.free_parameters().len(), 7);
        let b = plan(&morphology, &gait, &Limit::Random { max: 7, seed: 3 }).unwrap();
        assert_eq!(a, b, "seeded");
    }

    #[test]
    fn a_loop_in_the_body_becomes_an_m2pi_constraint() {
        // A triangle of three active modules: one of its three lags follows.
        let mut morphology = Morphology::from_xml_str(
            "triangle",
            r#"<morphology central="1">
  <module id="1"/><module id="2"/><module id="3"/>
  <connect idfrom="1" connfrom="front" idto="2" connto="rear" angle="0"/>
  <connect idfrom="2" connfrom="front" idto="3" connto="rear" angle="0"/>
  <connect idfrom="3" connfrom="front" idto="1" connto="rear" angle="0"/>
</morphology>"#,
        )
        .unwrap();
        // Module 9 was disconnected (a file refuses detached modules; a
        // transformation script produces them).
        let mut detached = morphology.modules[0];
        detached.id = 9;
        morphology.modules.push(detached);
        let gait = RobotConfig::default();
        let config = plan(&morphology, &gait, &Limit::None).unwrap();
        let phases: Vec<String> = config
            .free_parameters()
            .into_iter()
            .map(|p| p.name)
            .filter(|n| n.starts_with("phase"))
            .collect();
        assert_eq!(phases.len(), 2, "{phases:?}");
        let values: Vec<f64> = config
            .free_parameters()
            .iter()
            .map(|p| {
                if p.name.starts_with("phase") {
                    1.1
                } else {
                    0.2
                }
            })
            .collect();
        let robot = config.apply(&values).unwrap();
        let sum = [(1, 2), (2, 3), (3, 1)]
            .iter()
            .map(|&(a, b)| ParamName::Phase(a, b).get(&robot).unwrap())
            .sum::<f64>();
        let turns = sum / std::f64::consts::TAU;
        assert!((turns - turns.round()).abs() < 1e-9, "{sum}");
        // Module 9 is detached: it stops.
        assert_eq!(robot.module(9).map(|m| m.amplitude), Some(0.0));
    }

    #[test]
    fn keep_free_edges_are_fixed_first() {
        let c = constrain(&loops(&figure_7_1()), &[(2, 3)]);
        assert_eq!(c.free[0], (2, 3));
        assert!(c.constrained.iter().all(|k| k.edge != (2, 3)));
    }

    #[test]
    fn every_loop_closes_to_a_multiple_of_two_pi() {
        let edges = figure_7_1();
        let all = loops(&edges);
        let c = constrain(&all, &[]);
        let values: Vec<f64> = vec![0.7, -2.1, 1.3];
        let mut phase: BTreeMap<Edge, f64> = BTreeMap::new();
        for (e, v) in c.free.iter().zip(&values) {
            phase.insert(*e, *v);
        }
        let mut context = crate::matheval::Context::new();
        for (e, v) in &phase {
            context.set_parameter(&phase_name(*e), *v);
        }
        for k in &c.constrained {
            let text = constraint_expr(&k.terms, phase_name);
            let v = crate::matheval::Expr::parse(&text)
                .unwrap()
                .eval_real(&context)
                .unwrap();
            phase.insert(k.edge, v);
            context.set_parameter(&phase_name(k.edge), v);
        }
        for l in &all {
            let sum: f64 = l.windows(2).map(|w| phase[&(w[0], w[1])]).sum();
            let turns = sum / std::f64::consts::TAU;
            assert!((turns - turns.round()).abs() < 1e-9, "{l:?}: {sum}");
        }
    }
}
