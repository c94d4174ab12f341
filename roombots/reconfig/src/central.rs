//! A centralised planner to check the decentralised one: the fewest
//! meta-module moves that take a whole configuration to its goal — every
//! seed filled, every meta-module without a place parked on the floor
//! clear of the structure — by A* over the configurations of all the
//! meta-modules at once (each one's root cell, root turn and pose, or the
//! seed it filled).
//!
//! A move is what the Gradient Controller may do — an inchworm step to any
//! cell with a connector beside it, by a way of at most one intermediate
//! configuration (two onto a seed's root), or filling the seed from its
//! root — without the controller's preferences or history, the others
//! held still. Seeds open level by level, as the world controller opens
//! them (003 §2.7).
//!
//! **The bound.** Each meta-module not in a seed needs at least the steps
//! it would need in a world where nothing stands in its way and every
//! seed's cells are already connectors to lock onto, plus the fill, to
//! fill a seed; one not parked needs at least one move to park. Those
//! relaxed steps come from one backward breadth-first search per seed over
//! root cells and turns (a pose never matters there: with nothing in the
//! way, every pose reaches every other directly). Each move moves one
//! meta-module, so the cheapest assignment of meta-modules to the unfilled
//! seeds (the rest parking) is a lower bound (003 §1.4.1's graph-edit
//! bounds are of this kind): the search is exact. The assignment is found
//! by dynamic programming over subsets of seeds, which is why the planner
//! takes at most [`MAX_SEEDS`] of them.
//!
//! **Parallel steps.** The fewest moves are found one at a time; they are
//! then put into rounds: a move waits for every earlier move whose cells
//! (before, after and swept) come within one cell of its own — so it could
//! collide with it or lock onto it — and for the fills of lower levels
//! when it goes to or fills a seed. The rounds are those of the
//! fewest-moves plan, an upper bound on the fewest rounds.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::decentralised::{Build, BuildReport, Film, Move, Settings, module_poses};
use crate::grid::{Cell, Turn};
use crate::search::{Sweeps, Way, find_way};
use crate::srdb::Table;
use crate::sweep::Clouds;
use crate::world::{Placement, WorldController};

/// A bound this high: the goal cannot be reached from there.
const DEAD_END: usize = usize::MAX / 8;

/// The most configurations the search keeps (about 1 kB each with their
/// index): past them it gives up as past `max_expanded`.
pub const MAX_NODES: usize = 4_000_000;

/// The most configurations a task may ask the search to expand.
pub const MAX_EXPANDED: usize = 10_000_000;

/// The most moving meta-modules the planner takes.
pub const MAX_MOVING: usize = 8;

/// The largest world side the planner takes (its bound walks every root
/// cell and turn of the world once per seed).
pub const MAX_WORLD: i32 = 24;

/// The most unfilled seeds the planner takes (its bound's subsets).
pub const MAX_SEEDS: usize = 12;

/// How a centralised planning ended.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The plan: built when the goal was reached, its moves in rounds.
    pub report: BuildReport,
    /// Configurations expanded.
    pub expanded: usize,
    /// Configurations seen.
    pub seen: usize,
    /// The bound at the start: no plan has fewer moves.
    pub bound: usize,
    /// Not built because no plan exists: the search ran out of
    /// configurations (rather than giving up).
    pub exhausted: bool,
    /// Every meta-module's modules at the start and after each round.
    pub film: Film,
}

/// Why the planner did not plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CentralError {
    #[error(
        "the centralised planner takes at most {MAX_MOVING} moving meta-modules and {MAX_SEEDS} \
         open seeds (it searches their joint configurations); this build has {0} and {1}"
    )]
    TooLarge(usize, usize),
    #[error(
        "the centralised planner takes worlds of at most {MAX_WORLD} cells a side; this one is {0:?}"
    )]
    WorldTooLarge([i32; 3]),
    #[error("stopped")]
    Stopped,
    /// [`against_decentralised`] found no random start.
    #[error("no room for the meta-modules spread out")]
    NoRoom,
    /// [`against_decentralised`] could not set a start up.
    #[error(transparent)]
    World(#[from] crate::world::WorldError),
}

/// One meta-module in a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    Moving(Placement),
    /// The seed it filled, standing so.
    Filled(usize, Placement),
}

/// A move between configurations, as the plan needs it.
#[derive(Debug, Clone)]
struct Edge {
    id: u32,
    from: Placement,
    pose: usize,
    way: Way,
    /// The seed filled, or the cell the goal cube locked onto.
    fill: Option<usize>,
    goal: Option<Cell>,
}

impl Edge {
    /// Where the meta-module stands once the move is made, before any
    /// hand-over: its root and turn as they were, the new pose.
    fn stood(&self) -> Placement {
        Placement {
            pose: self.pose,
            ..self.from
        }
    }
}

/// The planner's view of one build: the world without its moving
/// meta-modules, and their ids.
struct Problem<'a> {
    base: WorldController,
    ids: Vec<u32>,
    table: &'a Table,
    clouds: &'a Clouds,
    settings: Settings,
    /// The structure's cells on the floor plan.
    footprint: Vec<[i32; 2]>,
    /// Each seed's distances in the relaxed world, by seed index.
    relaxed: HashMap<usize, Relaxed>,
}

/// A seed's fewest steps from every root cell and turn in a world without
/// meta-modules, every seed's cells already connectors to lock onto yet
/// nothing in the way (so every way is direct): a lower bound on the steps
/// before the seed can be filled, its own fill not counted.
struct Relaxed {
    size: [i32; 3],
    turns: Vec<Turn>,
    steps: Vec<u16>,
}

impl Relaxed {
    const UNREACHED: u16 = u16::MAX;

    fn index(&self, root: Cell, turn: &Turn) -> Option<usize> {
        if (0..3).any(|k| root[k] < 0 || root[k] >= self.size[k]) {
            return None;
        }
        let t = self.turns.binary_search(turn).ok()?;
        let [x, y, z] = root.map(|v| v as usize);
        let [sx, sy, _] = self.size.map(|v| v as usize);
        Some(((z * sy + y) * sx + x) * self.turns.len() + t)
    }

    /// Backward breadth-first search from the roots and turns that can
    /// assume `seed`'s shape.
    fn of(table: &Table, world: &WorldController, seed: &crate::world::Seed) -> Self {
        let mut turns = Turn::all();
        turns.sort_unstable();
        let size = world.size;
        let cells = (size[0] * size[1] * size[2]) as usize;
        let mut relaxed = Relaxed {
            size,
            turns,
            steps: vec![Self::UNREACHED; cells * 24],
        };
        // Connectors: the floor, what stands already, every seed's cells.
        let seeds: std::collections::HashSet<Cell> =
            world.seeds().iter().flat_map(|s| s.cells).collect();
        let lockable = |c: Cell| world.lockable(c) || seeds.contains(&c);
        // The distinct steps of the table: where the goal cube goes, the
        // frame it hands on, and where its connector faces.
        let mut hops: Vec<(Cell, Turn, crate::grid::Dir)> = table
            .kept()
            .iter()
            .map(|c| (c.goal(), c.goal_turn, c.facing))
            .collect();
        hops.sort_unstable();
        hops.dedup();
        let mut queue = std::collections::VecDeque::new();
        let root = seed.cells[0];
        for t in relaxed.turns.clone() {
            let shape = [seed.cells[1], seed.cells[2], seed.cells[3]]
                .map(|c| t.inverse().apply(crate::grid::sub(c, root)));
            if table.query_shape(shape).next().is_some() {
                let i = relaxed.index(root, &t).expect("a seed lies in its world");
                relaxed.steps[i] = 0;
                queue.push_back((root, t, 0u16));
            }
        }
        // A step from (r, t) by hop h reaches (r + t·goal, t·turn) when the
        // cell its goal cube faces holds a connector; walk those backwards.
        let inverses: Vec<Turn> = hops.iter().map(|h| h.1.inverse()).collect();
        while let Some((goal, after, d)) = queue.pop_front() {
            for (h, inverse) in hops.iter().zip(&inverses) {
                let before = after.compose(inverse);
                let faces = before.apply_dir(h.2).step();
                if !lockable(crate::grid::add(goal, faces)) {
                    continue;
                }
                let from = crate::grid::sub(goal, before.apply(h.0));
                let Some(i) = relaxed.index(from, &before) else {
                    continue;
                };
                if relaxed.steps[i] == Self::UNREACHED {
                    relaxed.steps[i] = d + 1;
                    queue.push_back((from, before, d + 1));
                }
            }
        }
        relaxed
    }

    /// Steps before a meta-module at `p` can fill the seed; `None` when it
    /// never can.
    fn steps(&self, p: &Placement) -> Option<usize> {
        let s = self.steps[self.index(p.root, &p.turn)?];
        (s != Self::UNREACHED).then_some(usize::from(s))
    }
}

/// The fewest moves from `build`'s world as it stands to its goal, or the
/// search's give-up when `max_expanded` configurations were expanded
/// (then `report.built` is false and `report.moves` empty). `stop` is
/// asked before every expansion.
pub fn plan(
    build: &Build<'_>,
    max_expanded: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Planned, CentralError> {
    search(build, max_expanded, stop, Shortcuts::ALL)
}

/// What [`search`] may use; without them it is breadth-first over every
/// order of moves (the tests' check that they lose no plan, and the plain
/// search the benchmark sets the planner against).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shortcuts {
    /// The module docs' bound.
    pub bounded: bool,
    /// Independent moves in one order only (see `Problem::moves`).
    pub one_order: bool,
}

impl Shortcuts {
    pub const ALL: Shortcuts = Shortcuts {
        bounded: true,
        one_order: true,
    };
}

/// A configuration and the move that led to it.
type Node = (Vec<Slot>, Option<(u32, Placement, usize, Way)>);

/// [`plan`] with only some of its shortcuts.
pub fn search(
    build: &Build<'_>,
    max_expanded: usize,
    stop: &dyn Fn() -> bool,
    shortcuts: Shortcuts,
) -> Result<Planned, CentralError> {
    let bound = |problem: &Problem<'_>, slots: &[Slot]| {
        if shortcuts.bounded {
            problem.bound(slots)
        } else {
            0
        }
    };
    if build.world.size.iter().any(|s| *s > MAX_WORLD) {
        return Err(CentralError::WorldTooLarge(build.world.size));
    }
    let moving = build.world.moving().len();
    let unfilled = build
        .world
        .seeds()
        .iter()
        .filter(|s| s.filled_by.is_none())
        .count();
    if moving > MAX_MOVING || unfilled > MAX_SEEDS {
        return Err(CentralError::TooLarge(moving, unfilled));
    }
    let problem = Problem::of(build);
    let start: Vec<Slot> = problem
        .ids
        .iter()
        .map(|id| Slot::Moving(build.world.placement(*id).expect("a moving id")))
        .collect();
    let mut nodes: Vec<Node> = vec![(start.clone(), None)];
    let mut index: HashMap<Node, usize> = HashMap::from([((start, None), 0)]);
    let mut cost: Vec<usize> = vec![0];
    let mut parent: Vec<Option<(usize, Edge)>> = vec![None];
    let mut open = BinaryHeap::from([(
        Reverse(bound(&problem, &nodes[0].0)),
        0usize,
        Reverse(0usize),
    )]);
    let mut expanded = 0;
    let mut goal = None;
    let mut gave_up = false;
    while let Some((Reverse(_), moves, Reverse(at))) = open.pop() {
        if moves > cost[at] {
            continue;
        }
        // Asked every time: one expansion may run hundreds of searches.
        if stop() {
            return Err(CentralError::Stopped);
        }
        if expanded >= max_expanded || nodes.len() >= MAX_NODES {
            gave_up = true;
            break;
        }
        expanded += 1;
        let world = problem.world_of(&nodes[at].0);
        if problem.reached(&world) {
            goal = Some(at);
            break;
        }
        let here = nodes[at].0.clone();
        let last = parent[at]
            .as_ref()
            .filter(|_| shortcuts.one_order)
            .map(|(_, e)| e.clone());
        for (next, edge) in problem.moves(world, &here, last.as_ref()) {
            let moves = moves + 1;
            let node = (next, Some((edge.id, edge.from, edge.pose, edge.way)));
            let to = match index.get(&node) {
                Some(&k) if cost[k] <= moves => continue,
                Some(&k) => k,
                None => {
                    nodes.push(node.clone());
                    cost.push(usize::MAX);
                    parent.push(None);
                    index.insert(node, nodes.len() - 1);
                    nodes.len() - 1
                }
            };
            let rest = bound(&problem, &nodes[to].0);
            if rest >= DEAD_END {
                continue;
            }
            cost[to] = moves;
            parent[to] = Some((at, edge));
            open.push((Reverse(moves + rest), moves, Reverse(to)));
        }
    }
    let mut edges = Vec::new();
    let mut at = goal;
    while let Some(k) = at {
        at = parent[k].as_ref().map(|(p, e)| {
            edges.push(e.clone());
            *p
        });
    }
    edges.reverse();
    let (report, film) = problem.report(build, goal.is_some(), &edges);
    Ok(Planned {
        report,
        film,
        expanded,
        seen: nodes.len(),
        bound: problem.bound(&nodes[0].0),
        exhausted: goal.is_none() && !gave_up,
    })
}

/// Whether two sets of cells come within a cell of each other.
fn touch(a: &[Cell], b: &[Cell]) -> bool {
    a.iter()
        .any(|p| b.iter().any(|q| (0..3).all(|k| (p[k] - q[k]).abs() <= 1)))
}

impl<'a> Problem<'a> {
    fn of(build: &Build<'a>) -> Self {
        let table = build.table_ref();
        let ids = build.world.moving();
        let mut base = build.world.clone();
        for id in &ids {
            base.remove(*id, table);
        }
        let footprint = base
            .seeds()
            .iter()
            .flat_map(|s| s.cells)
            .map(|c| [c[0], c[1]])
            .collect();
        let relaxed = base
            .seeds()
            .iter()
            .enumerate()
            .filter(|(_, s)| s.filled_by.is_none())
            .map(|(k, s)| (k, Relaxed::of(table, &base, s)))
            .collect();
        Problem {
            relaxed,
            base,
            ids,
            table,
            clouds: build.clouds_ref(),
            settings: build.settings(),
            footprint,
        }
    }

    /// The world of a configuration.
    fn world_of(&self, slots: &[Slot]) -> WorldController {
        let mut world = self.base.clone();
        for (id, slot) in self.ids.iter().zip(slots) {
            if let Slot::Filled(seed, p) = slot {
                world
                    .place(*id, *p, self.table)
                    .expect("a filled seed is free");
                world.fill(*id, *seed, self.table).expect("placed just now");
            }
        }
        for (id, slot) in self.ids.iter().zip(slots) {
            if let Slot::Moving(p) = slot {
                world
                    .place(*id, *p, self.table)
                    .expect("a configuration's cells are free");
            }
        }
        world
    }

    /// Parked: standing on the floor, every cube two cells or more from
    /// the structure's footprint along x or y (where random starts stand).
    fn parked(&self, p: &Placement) -> bool {
        p.root[2] == 0
            && p.cells(self.table).iter().all(|c| {
                self.footprint
                    .iter()
                    .all(|f| (f[0] - c[0]).abs() >= 2 || (f[1] - c[1]).abs() >= 2)
            })
    }

    fn reached(&self, world: &WorldController) -> bool {
        world.built()
            && world
                .moving()
                .iter()
                .all(|id| world.placement(*id).is_some_and(|p| self.parked(&p)))
    }

    /// The module docs' bound: the cheapest assignment of moving
    /// meta-modules to unfilled seeds, the rest parking.
    fn bound(&self, slots: &[Slot]) -> usize {
        let taken: Vec<usize> = slots
            .iter()
            .filter_map(|s| match s {
                Slot::Filled(seed, _) => Some(*seed),
                Slot::Moving(_) => None,
            })
            .collect();
        let seeds: Vec<&Relaxed> = self
            .relaxed
            .iter()
            .filter(|(k, _)| !taken.contains(k))
            .map(|(_, r)| r)
            .collect();
        let movers: Vec<Placement> = slots
            .iter()
            .filter_map(|s| match s {
                Slot::Moving(p) => Some(*p),
                Slot::Filled(..) => None,
            })
            .collect();
        if seeds.len() > movers.len() {
            return DEAD_END;
        }
        let to_seed = |p: &Placement, s: &&Relaxed| s.steps(p).map_or(DEAD_END, |n| n + 1);
        // best[mask]: the least cost of the movers so far with the seeds
        // of `mask` taken.
        let full = 1usize << seeds.len();
        let mut best = vec![DEAD_END; full];
        best[0] = 0;
        for p in &movers {
            let park = usize::from(!self.parked(p));
            let mut next = vec![DEAD_END; full];
            for mask in 0..full {
                let here = best[mask];
                if here >= DEAD_END {
                    continue;
                }
                next[mask] = next[mask].min(here + park);
                for (k, s) in seeds.iter().enumerate() {
                    if mask & (1 << k) == 0 {
                        let m = mask | (1 << k);
                        next[m] = next[m].min(here + to_seed(p, s));
                    }
                }
            }
            best = next;
        }
        best[full - 1]
    }

    /// Every configuration one move away, with the move; after `last`,
    /// only moves that depend on it or are by a meta-module of a higher id.
    ///
    /// Two moves that come no nearer than a cell to each other (before,
    /// after and swept) and where the first fills no seed may be swapped:
    /// each finds its cells as free and its connectors as there in either
    /// order, and they end with the same cells filled and taken. Swapping such a pair
    /// whose higher id goes first removes one inversion of the ids, so
    /// every plan has one as short in which a move follows an independent
    /// one only by a higher id: searching only those loses no plan, and
    /// spares the search the orders of moves that do not meet.
    fn moves(
        &self,
        world: WorldController,
        slots: &[Slot],
        last: Option<&Edge>,
    ) -> Vec<(Vec<Slot>, Edge)> {
        let build = Build::of_world(world, self.table, self.clouds, self.settings);
        let last_span = last.filter(|e| e.fill.is_none()).map(|e| self.span(e));
        let follows = |edge: &Edge| match (last, &last_span) {
            (Some(a), Some(span)) if edge.id < a.id => touch(span, &self.span(edge)),
            _ => true,
        };
        let seeds: Vec<Cell> = build.world.open_seeds().map(|(_, s)| s.cells[0]).collect();
        let mut out = Vec::new();
        for (k, (id, slot)) in self.ids.iter().zip(slots).enumerate() {
            let Slot::Moving(here) = *slot else {
                continue;
            };
            let blocked = build.world.blocked(*id, &here);
            let mut with = |slot: Slot, edge: Edge| {
                if !follows(&edge) {
                    return;
                }
                let mut next = slots.to_vec();
                next[k] = slot;
                out.push((next, edge));
            };
            if let Some((seed, pose, way)) = build.fill_way(&here, &blocked) {
                let edge = Edge {
                    id: *id,
                    from: here,
                    pose,
                    way,
                    fill: Some(seed),
                    goal: None,
                };
                with(Slot::Filled(seed, edge.stood()), edge);
            }
            for (goal, poses) in build.goal_cells(*id, &here) {
                let level = if seeds.contains(&goal) { 3 } else { 2 };
                for pose in poses {
                    let Some(way) = find_way(
                        self.table,
                        Sweeps::Table(self.clouds),
                        here.pose,
                        pose,
                        &blocked,
                        level,
                    ) else {
                        continue;
                    };
                    let edge = Edge {
                        id: *id,
                        from: here,
                        pose,
                        way,
                        fill: None,
                        goal: Some(goal),
                    };
                    with(Slot::Moving(build.after_step(&here, pose, goal)), edge);
                }
            }
        }
        out
    }

    /// The cells a move touches: before, after and swept.
    fn span(&self, e: &Edge) -> Vec<Cell> {
        let mut cells = crate::decentralised::swept(self.clouds, &e.from, e.pose, &e.way);
        cells.extend(e.from.cells(self.table));
        cells.extend(e.stood().cells(self.table));
        cells
    }

    /// The plan of `edges` as a build's report, its moves in rounds, and
    /// its film.
    fn report(&self, build: &Build<'_>, built: bool, edges: &[Edge]) -> (BuildReport, Film) {
        let level_of_cell = |c: Cell| {
            self.base
                .seeds()
                .iter()
                .find(|s| s.cells[0] == c)
                .map(|s| s.level)
        };
        let seeds = self.base.seeds();
        // What each move touches, and the seed level it goes to.
        let spans: Vec<(Vec<Cell>, Option<u32>)> = edges
            .iter()
            .map(|e| {
                let cells = self.span(e);
                let level = match (e.fill, e.goal) {
                    (Some(seed), _) => Some(seeds[seed].level),
                    (None, Some(goal)) => level_of_cell(goal),
                    (None, None) => None,
                };
                (cells, level)
            })
            .collect();
        let mut rounds = vec![0usize; edges.len()];
        for j in 0..edges.len() {
            let after = (0..j)
                .filter(|&i| {
                    edges[i].id == edges[j].id
                        || touch(&spans[i].0, &spans[j].0)
                        || matches!(
                            (edges[i].fill, spans[j].1),
                            (Some(seed), Some(level)) if seeds[seed].level < level
                        )
                })
                .map(|i| rounds[i])
                .max()
                .unwrap_or(0);
            rounds[j] = after + 1;
        }
        let mut order: Vec<usize> = (0..edges.len()).collect();
        order.sort_by_key(|&k| (rounds[k], k));
        let moves: Vec<Move> = order
            .iter()
            .map(|&k| {
                let e = &edges[k];
                Move {
                    id: e.id,
                    round: rounds[k],
                    from: e.from.cells(self.table),
                    to: e.stood().cells(self.table),
                    via: e
                        .way
                        .intermediates()
                        .into_iter()
                        .map(|c| Placement { pose: c, ..e.from }.cells(self.table))
                        .collect(),
                    filled: e.fill.is_some(),
                }
            })
            .collect();
        let mut now: std::collections::BTreeMap<u32, Placement> =
            build.world.everyone().into_iter().collect();
        let mut film = Film::default();
        let frame = |now: &std::collections::BTreeMap<u32, Placement>| {
            now.values()
                .flat_map(|p| module_poses(self.table, p))
                .collect::<Vec<_>>()
        };
        film.frames.push(frame(&now));
        for (n, &k) in order.iter().enumerate() {
            let e = &edges[k];
            now.insert(e.id, e.stood());
            if order
                .get(n + 1)
                .is_none_or(|&next| rounds[next] != rounds[k])
            {
                film.frames.push(frame(&now));
            }
        }
        // Seeds filled at the end, those the start stood on included.
        let filled = seeds.iter().filter(|s| s.filled_by.is_some()).count()
            + edges.iter().filter(|e| e.fill.is_some()).count();
        let report = BuildReport {
            built,
            rounds: rounds.iter().copied().max().unwrap_or(0),
            moves,
            collisions: 0,
            deadlock: false,
            out_of_rounds: !built,
            stuck: Vec::new(),
            filled,
            seeds: seeds.len(),
        };
        (report, film)
    }
}

/// One decentralised build against the centralised plan from the same
/// start.
#[derive(Debug, Clone)]
pub struct Versus {
    /// Fewest moves and the rounds of their plan; `None` when the search
    /// gave up.
    pub central: Option<(usize, usize)>,
    /// The decentralised build's moves and rounds; `None` when it did not
    /// build.
    pub decentralised: Option<(usize, usize)>,
    pub expanded: usize,
    pub seconds: f64,
}

/// The structure of `world` (its seeds, nobody standing) built from
/// `trials` random starts (seeds `0..trials`, as [`crate::trials::trials`]
/// draws them), each planned by both, the centralised search with
/// `shortcuts`.
pub fn against_decentralised(
    table: &Table,
    clouds: &Clouds,
    world: &WorldController,
    settings: Settings,
    trials: u64,
    max_expanded: usize,
    shortcuts: Shortcuts,
) -> Result<Vec<Versus>, CentralError> {
    let mut out = Vec::new();
    for seed in 0..trials {
        let starts = crate::starts::random_starts(world, world.seeds().len(), 3, seed)
            .ok_or(CentralError::NoRoom)?;
        let build = Build::new(world.clone(), table, clouds, &starts, settings)?;
        let began = std::time::Instant::now();
        let planned = search(&build, max_expanded, &|| false, shortcuts)?;
        let seconds = began.elapsed().as_secs_f64();
        let report = {
            let mut b = build;
            b.run()
        };
        let r = &planned.report;
        out.push(Versus {
            central: r.built.then_some((r.moves.len(), r.rounds)),
            decentralised: report.built.then_some((report.moves.len(), report.rounds)),
            expanded: planned.expanded,
            seconds,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decentralised::Rule;
    use crate::grid::cell_set;
    use crate::srdb::Database;
    use crate::starts::random_starts;
    use crate::structure::parse;
    use crate::sweep::Clouds;
    use yamor_roombots::chain::ConnectionType;

    /// The shear S table and its swept cells, made once for every test.
    fn shear_s() -> (&'static Table, &'static Clouds) {
        static MADE: std::sync::OnceLock<(Database, Clouds)> = std::sync::OnceLock::new();
        let (db, clouds) = MADE.get_or_init(|| {
            let db = Database::generate();
            let clouds = Clouds::build(
                db.table(ConnectionType::ShearS),
                crate::sweep::ROTATION_STEP,
                2,
            );
            (db, clouds)
        });
        (db.table(ConnectionType::ShearS), clouds)
    }

    fn settings() -> Settings {
        Settings {
            rule: Rule::Reserve,
            ..Settings::default()
        }
    }

    fn structure(file: &str) -> crate::structure::Structure {
        parse(&crate::structure::example_xml(file)).unwrap()
    }

    /// Plays `report`'s moves on `before` one by one: each onto cells that
    /// are free then, the moves of one round never within a cell of each
    /// other, and the end where `reached` says.
    fn check_plan(
        before: &WorldController,
        table: &Table,
        report: &BuildReport,
    ) -> WorldController {
        let mut world = before.clone();
        let by_cells = |world: &WorldController, cells: [Cell; 4]| {
            world
                .moving()
                .into_iter()
                .find(|id| cell_set(world.placement(*id).unwrap().cells(table)) == cell_set(cells))
        };
        for (n, m) in report.moves.iter().enumerate() {
            let id = by_cells(&world, m.from).expect("a move starts where a meta-module stands");
            assert_eq!(id, m.id);
            for other in &report.moves[..n] {
                if other.round == m.round {
                    let near = touch(&[other.from, other.to].concat(), &[m.from, m.to].concat());
                    assert!(!near, "two moves of round {} touch", m.round);
                }
            }
            let p = Turn::all()
                .into_iter()
                .find_map(|turn| Placement::turned_onto(table, &m.to, turn))
                .expect("a pose of the table");
            world
                .place(id, p, table)
                .expect("a move ends on free cells");
            if m.filled {
                let seed = world
                    .open_seeds()
                    .find(|(_, s)| cell_set(s.cells) == cell_set(m.to))
                    .map(|(k, _)| k)
                    .expect("a fill fills an open seed");
                world.fill(id, seed, table).unwrap();
            }
        }
        world
    }

    #[test]
    fn the_bound_never_overestimates_breadth_first_finds_the_same_fewest() {
        let (table, clouds) = shear_s();
        for seed in 0..4 {
            let world = crate::starts::one_seed_world();
            let starts = random_starts(&world, 1, 3, seed).unwrap();
            let build = Build::new(world, table, clouds, &starts, settings()).unwrap();
            let a_star = plan(&build, 1_000_000, &|| false).unwrap();
            let breadth_first = search(
                &build,
                5_000_000,
                &|| false,
                Shortcuts {
                    bounded: false,
                    one_order: false,
                },
            )
            .unwrap();
            assert!(a_star.report.built && breadth_first.report.built);
            assert_eq!(
                a_star.report.moves.len(),
                breadth_first.report.moves.len(),
                "seed {seed}"
            );
            assert!(
                a_star.expanded < breadth_first.expanded,
                "{} expanded against {}",
                a_star.expanded,
                breadth_first.expanded
            );
        }
    }

    #[test]
    fn two_meta_modules_no_decentralised_build_beats_the_plan_and_the_plan_plays() {
        let (table, clouds) = shear_s();
        let platform = crate::structure::platform(1, 2, [6, 6, 0]);
        let mut parallel = 0;
        for seed in 0..3 {
            let mut world = WorldController::new([13; 3]);
            world.set_structure(&platform).unwrap();
            let starts = random_starts(&world, 2, 3, seed).unwrap();
            let build = Build::new(world.clone(), table, clouds, &starts, settings()).unwrap();
            let before = build.world.clone();
            let planned = plan(&build, 2_000_000, &|| false).unwrap();
            let r = &planned.report;
            assert!(r.built, "seed {seed}: {} expanded", planned.expanded);
            assert_eq!((r.filled, r.collisions), (2, 0));
            assert!(check_plan(&before, table, r).built());
            assert_eq!(planned.film.frames.len(), r.rounds + 1);
            assert!(r.rounds <= r.moves.len());
            parallel += usize::from(r.rounds < r.moves.len());
            let every_order = search(
                &build,
                2_000_000,
                &|| false,
                Shortcuts {
                    bounded: true,
                    one_order: false,
                },
            )
            .unwrap();
            assert_eq!(every_order.report.moves.len(), r.moves.len(), "seed {seed}");
            let decentralised = Build::new(world, table, clouds, &starts, settings())
                .unwrap()
                .run();
            assert!(decentralised.built);
            assert!(r.moves.len() <= decentralised.moves.len());
        }
        assert!(parallel > 0, "two meta-modules never moved in one round");
    }

    #[test]
    fn the_stool_of_fig_1_2_shrinks_from_six_meta_modules_to_four() {
        let (table, clouds) = shear_s();
        let mut world = WorldController::new([13; 3]);
        world.set_structure(&structure("stool-4.xml")).unwrap();
        crate::starts::stand_as(&mut world, table, &structure("stool-6.xml")).unwrap();
        assert!(world.built(), "stool-4's places are stool-6's");
        assert_eq!(world.moving().len(), 2, "two legs leave");
        let build = Build::of_world(world.clone(), table, clouds, settings());
        let planned = plan(&build, 2_000_000, &|| false).unwrap();
        let r = &planned.report;
        assert!(r.built, "{} expanded", planned.expanded);
        assert!(r.moves.len() >= 2 && r.moves.iter().all(|m| !m.filled));
        let after = check_plan(&world, table, r);
        let problem = Problem::of(&build);
        for id in after.moving() {
            assert!(problem.parked(&after.placement(id).unwrap()), "{id} parked");
        }
    }

    #[test]
    fn too_many_meta_modules_are_refused_and_a_stop_stops() {
        let (table, clouds) = shear_s();
        let platform = crate::structure::platform(3, 3, [6, 6, 0]);
        let mut world = WorldController::new([13; 3]);
        world.set_structure(&platform).unwrap();
        let starts = random_starts(&world, 9, 3, 0).unwrap();
        let build = Build::new(world, table, clouds, &starts, settings()).unwrap();
        assert_eq!(
            plan(&build, 10, &|| false).unwrap_err(),
            CentralError::TooLarge(9, 9)
        );
        let world = crate::starts::one_seed_world();
        let starts = random_starts(&world, 1, 3, 0).unwrap();
        let build = Build::new(world, table, clouds, &starts, settings()).unwrap();
        assert_eq!(
            plan(&build, 10, &|| true).unwrap_err(),
            CentralError::Stopped
        );
        let gave_up = plan(&build, 1, &|| false).unwrap();
        assert!(!gave_up.report.built && gave_up.report.moves.is_empty());
        assert!(!gave_up.exhausted, "it gave up; it did not prove anything");
        // Two seeds, one meta-module: no plan, proved at once.
        let mut world = WorldController::new([13; 3]);
        world
            .set_structure(&crate::structure::platform(1, 2, [6, 6, 0]))
            .unwrap();
        let starts = random_starts(&world, 1, 3, 0).unwrap();
        let build = Build::new(world, table, clouds, &starts, settings()).unwrap();
        let none = plan(&build, 1_000, &|| false).unwrap();
        assert!(!none.report.built && none.exhausted && none.expanded == 1);
    }
}
