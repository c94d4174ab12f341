//! The decentralised build of 003 §2.6: every meta-module runs its own
//! Gradient Controller on what the World Controller tells it (its 7 × 7 ×
//! 7 surroundings, the gradient) and moves by inchworm steps towards the
//! open seeds, then assumes its seed's configuration and turns into
//! structure.
//!
//! One step of a meta-module: choose a cell for its goal cube (empty, with
//! something to lock onto beside it, not in its recent history), best
//! first — nearest the visible seed, or else farthest along the gradient;
//! find a way there through at most one intermediate configuration (two
//! when the cell is a seed's root: 003 §2.6.4's levels); lock the goal
//! cube, let go of the root, and the goal cube is the root now.
//!
//! Time passes in rounds: in each, every meta-module decides on the same
//! snapshot of the world, then the moves happen. Who moves is the
//! [`Rule`]'s: the seed's `canMove` priorities (each meta-module judging
//! from its own surroundings), the seed's remedy (one meta-module moves
//! at a time), or reservations (ours: no waiting on what one sees; the
//! moves go in one agreed order, and a move whose swept cells meet an
//! earlier move's this round waits, so nothing collides). A move that
//! sweeps a cell another meta-module holds or sweeps in the same round
//! is a collision: counted, and undone.

use std::collections::VecDeque;

use crate::grid::{Cell, CellSet, Dir, SIGHT, Turn, add, cell_set, distance2, sub};
use crate::search::{Sweeps, Way, find_way};
use crate::srdb::Table;
use crate::sweep::Clouds;
use crate::world::{Content, Placement, WorldController};

/// Who may move in a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// 003 §2.6.4's `canMove`: a meta-module that sees another with a
    /// higher priority waits; the others move at once.
    CanMove,
    /// 003 §3.2's remedy: one meta-module moves at a time.
    OneAtATime,
    /// Ours: nobody waits on what it sees; every meta-module plans, and
    /// the moves of a round go in one order all agree on (covering a
    /// seed first, then nearest an open seed, then the higher id); a move
    /// meeting the cells an earlier move of the round sweeps waits for the
    /// next round. Only meta-modules whose sweeps meet need to agree, so
    /// the order is settled between neighbours.
    Reserve,
}

/// How a build runs.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub rule: Rule,
    /// Cells remembered and not gone back to (003 §2.6.4's history).
    pub history: usize,
    /// Rounds before giving up.
    pub max_rounds: usize,
    /// Ours: step onto a seed's root only in a pose from which the seed's
    /// shape is a configuration of the table (the seed steps on in any
    /// pose and may find it cannot assume the shape from there).
    pub look_ahead: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            rule: Rule::CanMove,
            history: 8,
            max_rounds: 2000,
            look_ahead: true,
        }
    }
}

/// One meta-module's move in a round.
#[derive(Debug, Clone)]
pub struct Move {
    pub id: u32,
    pub round: usize,
    /// Before and after, in the world.
    pub from: [Cell; 4],
    pub to: [Cell; 4],
    /// The cells of the poses passed through on the way (intermediate
    /// configurations), in order.
    pub via: Vec<[Cell; 4]>,
    /// It filled a seed (assumed its configuration) rather than stepped.
    pub filled: bool,
}

/// How a build ended.
#[derive(Debug, Clone)]
pub struct BuildReport {
    pub built: bool,
    pub rounds: usize,
    pub moves: Vec<Move>,
    pub collisions: usize,
    /// A round passed in which nothing moved and nothing could change.
    pub deadlock: bool,
    /// The rounds ran out with meta-modules still moving.
    pub out_of_rounds: bool,
    /// Meta-modules that found no move at all, at the end.
    pub stuck: Vec<u32>,
    /// Seeds filled, of all.
    pub filled: usize,
    pub seeds: usize,
}

/// What a meta-module decided.
#[derive(Debug, Clone)]
enum Intent {
    Wait,
    Stuck,
    /// To `pose` (through `way`), then swap roles onto `goal`, or fill
    /// `seed` and stay.
    Go {
        pose: usize,
        way: Way,
        goal: Option<Cell>,
        seed: Option<usize>,
    },
}

/// A build in progress.
pub struct Build<'a> {
    pub world: WorldController,
    table: &'a Table,
    clouds: &'a Clouds,
    settings: Settings,
    history: std::collections::HashMap<u32, VecDeque<Cell>>,
}

/// The pose and turn of a meta-module standing upright on the floor:
/// its root locked onto the floor, its cubes straight up.
#[must_use]
pub fn upright(table: &Table) -> (usize, Turn) {
    let facing = crate::srdb::root_facing();
    let up = sub([0, 0, 0], facing.step());
    let straight = [[0, 0, 0], up, add(up, up), add(add(up, up), up)];
    let pose = (0..table.kept().len())
        .find(|i| table.configurations()[*i].cells == straight)
        .expect("a straight pose is kept");
    let turn = Turn::all()
        .into_iter()
        .find(|t| t.apply_dir(facing) == Dir::MINUS_Z)
        .expect("some turn points the root's connector down");
    (pose, turn)
}

/// The world cells a meta-module at `placement` sweeps going to `pose`
/// by `way`.
#[must_use]
pub fn swept(clouds: &Clouds, placement: &Placement, pose: usize, way: &Way) -> Vec<Cell> {
    let mut stops = vec![placement.pose];
    stops.extend(way.intermediates());
    stops.push(pose);
    let mut set = CellSet::EMPTY;
    for w in stops.windows(2) {
        set = set.union(clouds.get(w[0], w[1]));
    }
    set.cells().map(|c| placement.world(c)).collect()
}

/// Meta-modules standing upright on floor cells `starts`.
#[must_use]
pub fn upright_on(table: &Table, starts: &[[i32; 2]]) -> Vec<Placement> {
    let (pose, turn) = upright(table);
    starts
        .iter()
        .map(|s| Placement {
            root: [s[0], s[1], 0],
            turn,
            pose,
        })
        .collect()
}

impl<'a> Build<'a> {
    /// Meta-modules standing upright on `starts` (floor cells), ids 1 ….
    pub fn new(
        world: WorldController,
        table: &'a Table,
        clouds: &'a Clouds,
        starts: &[[i32; 2]],
        settings: Settings,
    ) -> Result<Self, crate::world::WorldError> {
        Build::with_placements(world, table, clouds, &upright_on(table, starts), settings)
    }

    /// Meta-modules where `placements` put them, ids 1 ….
    pub fn with_placements(
        mut world: WorldController,
        table: &'a Table,
        clouds: &'a Clouds,
        placements: &[Placement],
        settings: Settings,
    ) -> Result<Self, crate::world::WorldError> {
        for (k, p) in placements.iter().enumerate() {
            world.place(k as u32 + 1, *p, table)?;
        }
        Ok(Build::of_world(world, table, clouds, settings))
    }

    /// A build of `world` as it stands (meta-modules already placed or
    /// settled), with no history.
    #[must_use]
    pub fn of_world(
        world: WorldController,
        table: &'a Table,
        clouds: &'a Clouds,
        settings: Settings,
    ) -> Self {
        Build {
            world,
            table,
            clouds,
            settings,
            history: std::collections::HashMap::new(),
        }
    }

    /// Whether meta-module `id` waits this round under `canMove`.
    #[must_use]
    pub fn waits(&self, id: u32) -> bool {
        matches!(self.decide(id), Intent::Wait)
    }

    /// Every meta-module's modules, now, by id.
    #[must_use]
    pub fn frame(&self) -> Vec<yamor_roombots::module::ModulePose> {
        self.world
            .everyone()
            .iter()
            .flat_map(|(_, p)| module_poses(self.table, p))
            .collect()
    }

    /// Runs rounds until built, deadlocked, or out of rounds.
    pub fn run(&mut self) -> BuildReport {
        self.run_filmed(None)
    }

    /// [`Build::run`], adding a frame to `film` after every round.
    pub fn run_filmed(&mut self, film: Option<&mut Film>) -> BuildReport {
        self.run_until(film, &|| false)
            .expect("a build never stopped runs to its end")
    }

    /// [`Build::run_filmed`] that asks `stop` before every round and gives
    /// up (`None`) once it says so: a planning host whose job was cancelled.
    pub fn run_until(
        &mut self,
        mut film: Option<&mut Film>,
        stop: &dyn Fn() -> bool,
    ) -> Option<BuildReport> {
        if let Some(f) = film.as_deref_mut() {
            f.frames.push(self.frame());
        }
        let mut report = BuildReport {
            built: false,
            rounds: 0,
            moves: Vec::new(),
            collisions: 0,
            deadlock: false,
            out_of_rounds: false,
            stuck: Vec::new(),
            filled: 0,
            seeds: self.world.seeds().len(),
        };
        let mut turn_of = 0usize;
        while !self.world.built() && report.rounds < self.settings.max_rounds {
            if stop() {
                return None;
            }
            report.rounds += 1;
            let ids = self.world.moving();
            if ids.is_empty() {
                break;
            }
            let mut intents: Vec<(u32, Intent)> = ids
                .iter()
                .map(|id| (*id, self.decide_forgetting(*id)))
                .collect();
            if self.settings.rule == Rule::OneAtATime {
                // The movers take turns; the first able one goes.
                let n = intents.len();
                let pick = (0..n)
                    .map(|k| (turn_of + k) % n)
                    .find(|k| matches!(intents[*k].1, Intent::Go { .. }));
                turn_of += 1;
                intents = pick
                    .map(|k| vec![intents.swap_remove(k)])
                    .unwrap_or_default();
            }
            if self.settings.rule == Rule::Reserve {
                intents.sort_by_key(|(id, _)| std::cmp::Reverse(self.priority(*id)));
            }
            let moved_before = report.moves.len();
            let mut swept_this_round: Vec<(u32, Vec<Cell>)> = Vec::new();
            for (id, intent) in intents {
                let Intent::Go {
                    pose,
                    way,
                    goal,
                    seed,
                } = intent
                else {
                    continue;
                };
                let Some(placement) = self.world.placement(id) else {
                    continue;
                };
                let swept = self.swept(&placement, pose, &way);
                let clash_with_sweep = swept_this_round
                    .iter()
                    .any(|(_, cells)| cells.iter().any(|c| swept.contains(c)));
                let clash_with_cells = swept.iter().any(|c| !self.free_for(id, *c));
                if self.settings.rule == Rule::Reserve && clash_with_sweep {
                    continue;
                }
                if clash_with_sweep || clash_with_cells {
                    report.collisions += 1;
                    continue;
                }
                let from = placement.cells(self.table);
                let mut next = Placement { pose, ..placement };
                let to = next.cells(self.table);
                if let Some(seed) = seed {
                    self.world
                        .place(id, next, self.table)
                        .expect("a swept way ends on free cells");
                    self.world
                        .fill(id, seed, self.table)
                        .expect("a moving meta-module fills");
                    report.filled += 1;
                } else if let Some(goal) = goal {
                    self.world
                        .place(id, next, self.table)
                        .expect("a swept way ends on free cells");
                    // The goal cube locks, the root lets go: roles swap.
                    next = self.after_step(&next, pose, goal);
                    debug_assert_eq!(cell_set(next.cells(self.table)), cell_set(to));
                    self.world
                        .place(id, next, self.table)
                        .expect("swapping roles moves nothing");
                    let history = self.history.entry(id).or_default();
                    history.push_back(goal);
                    while history.len() > self.settings.history {
                        history.pop_front();
                    }
                }
                swept_this_round.push((id, swept));
                report.moves.push(Move {
                    id,
                    round: report.rounds,
                    from,
                    to,
                    via: way
                        .intermediates()
                        .into_iter()
                        .map(|c| {
                            Placement {
                                pose: c,
                                ..placement
                            }
                            .cells(self.table)
                        })
                        .collect(),
                    filled: seed.is_some(),
                });
            }
            if report.moves.len() == moved_before {
                report.deadlock = true;
                break;
            }
            if let Some(f) = film.as_deref_mut() {
                f.frames.push(self.frame());
            }
        }
        report.built = self.world.built();
        if report.built {
            report.deadlock = false;
        }
        report.out_of_rounds = !report.built && !report.deadlock;
        report.stuck = self
            .world
            .moving()
            .into_iter()
            .filter(|id| matches!(self.decide(*id), Intent::Stuck))
            .collect();
        Some(report)
    }

    /// Whether meta-module `id` may pass through world cell `c` now.
    fn free_for(&self, id: u32, c: Cell) -> bool {
        match self.world.content(c, id) {
            Content::Module(m) => m == id,
            Content::CoveredSeed => true,
            other => other.is_empty(),
        }
    }

    /// [`Build::decide`], forgetting the oldest remembered cell while no
    /// move is found (003 §2.6.4); stuck when nothing is left to forget.
    fn decide_forgetting(&mut self, id: u32) -> Intent {
        loop {
            let intent = self.decide(id);
            if !matches!(intent, Intent::Stuck) {
                return intent;
            }
            match self.history.get_mut(&id) {
                Some(h) if !h.is_empty() => {
                    h.pop_front();
                }
                _ => return intent,
            }
        }
    }

    /// The world cells a move sweeps.
    fn swept(&self, placement: &Placement, pose: usize, way: &Way) -> Vec<Cell> {
        swept(self.clouds, placement, pose, way)
    }

    /// The order [`Rule::Reserve`]'s moves go in, highest first: covering
    /// an open seed's cells, then nearer an open seed (any cube), then the
    /// higher id.
    fn priority(&self, id: u32) -> (bool, i64, u32) {
        let Some(p) = self.world.placement(id) else {
            return (false, i64::MIN, id);
        };
        let cells = p.cells(self.table);
        let mut covering = false;
        let mut nearest = i32::MAX;
        for (_, seed) in self.world.open_seeds() {
            covering |= cells.iter().any(|c| seed.cells.contains(c));
            for c in cells {
                nearest = nearest.min(distance2(c, seed.cells[0]));
            }
        }
        (covering, -i64::from(nearest), id)
    }

    /// Whether, after stepping into pose `b` and handing the root to its
    /// goal cube on `goal` (an open seed's root), the seed's shape is a
    /// configuration of the table from there.
    fn can_assume_after(&self, placement: &Placement, b: usize, goal: Cell) -> bool {
        let next = self.after_step(placement, b, goal);
        self.world
            .open_seeds()
            .filter(|(_, s)| s.cells[0] == goal)
            .any(|(_, s)| {
                let local = s.cells.map(|c| next.local(c));
                self.table
                    .query_shape([local[1], local[2], local[3]])
                    .next()
                    .is_some()
            })
    }

    /// The seed's `canMove`: nobody visible has a higher priority.
    fn can_move(&self, id: u32, placement: &Placement) -> bool {
        let root = placement.root;
        let visible_seed = self.visible_seed(root);
        let gradient = self.world.gradient(root);
        let key = |other: u32| -> (bool, i64, u32) {
            let p = self.world.placement(other).expect("a moving meta-module");
            let cells = p.cells(self.table);
            match visible_seed {
                Some(seed) => {
                    let covering = cells
                        .iter()
                        .any(|c| self.world.seeds()[seed].cells.contains(c));
                    let nearest = cells
                        .iter()
                        .map(|c| distance2(*c, self.world.seeds()[seed].cells[0]))
                        .min()
                        .unwrap_or(i32::MAX);
                    (covering, -i64::from(nearest), other)
                }
                None => {
                    let along = sub(p.root, root)
                        .iter()
                        .zip(gradient)
                        .map(|(d, g)| f64::from(*d) * g)
                        .sum::<f64>();
                    (false, (along * 1000.0).round() as i64, other)
                }
            }
        };
        let mine = key(id);
        self.world
            .moving()
            .into_iter()
            .filter(|other| *other != id)
            .filter(|other| {
                let p = self.world.placement(*other).expect("moving");
                p.cells(self.table)
                    .iter()
                    .any(|c| sub(*c, root).iter().all(|d| d.abs() <= SIGHT))
            })
            .all(|other| key(other) < mine)
    }

    /// The open seed whose root cell the meta-module at `root` sees, the
    /// nearest.
    fn visible_seed(&self, root: Cell) -> Option<usize> {
        self.world
            .open_seeds()
            .filter(|(_, s)| sub(s.cells[0], root).iter().all(|d| d.abs() <= SIGHT))
            .min_by_key(|(_, s)| distance2(s.cells[0], root))
            .map(|(k, _)| k)
    }

    /// One meta-module's Gradient Controller, on the current world.
    fn decide(&self, id: u32) -> Intent {
        let Some(placement) = self.world.placement(id) else {
            return Intent::Stuck;
        };
        if self.settings.rule == Rule::CanMove && !self.can_move(id, &placement) {
            return Intent::Wait;
        }
        let blocked = self.world.blocked(id, &placement);
        let sweeps = Sweeps::Table(self.clouds);
        // On a seed's root: assume its configuration (a level-3 search).
        if let Some((seed, pose, way)) = self.fill_way(&placement, &blocked) {
            return Intent::Go {
                pose,
                way,
                goal: None,
                seed: Some(seed),
            };
        }
        let seed = self
            .visible_seed(placement.root)
            .map(|k| self.world.seeds()[k].cells[0]);
        let gradient = self.world.gradient(placement.root);
        let history = self.history.get(&id);
        let mut candidates: Vec<(i64, Cell, Vec<usize>)> = self
            .goal_cells(id, &placement)
            .into_iter()
            .filter(|(goal, _)| !history.is_some_and(|h| h.contains(goal)))
            .map(|(goal, poses)| {
                let metric = match seed {
                    Some(s) => i64::from(distance2(goal, s)),
                    None => {
                        let along: f64 = sub(goal, placement.root)
                            .iter()
                            .zip(gradient)
                            .map(|(d, g)| f64::from(*d) * g)
                            .sum();
                        -(along * 1000.0).round() as i64
                    }
                };
                (metric, goal, poses)
            })
            .collect();
        candidates.sort_by_key(|(m, g, _)| (*m, *g));
        for (_, goal, poses) in candidates {
            let level = if Some(goal) == seed { 3 } else { 2 };
            for b in poses {
                if level == 3
                    && self.settings.look_ahead
                    && !self.can_assume_after(&placement, b, goal)
                {
                    continue;
                }
                if let Some(way) = find_way(self.table, sweeps, placement.pose, b, &blocked, level)
                {
                    return Intent::Go {
                        pose: b,
                        way,
                        goal: Some(goal),
                        seed: None,
                    };
                }
            }
        }
        Intent::Stuck
    }

    /// On an open seed's root: the seed, a pose of its shape and a way
    /// there (a level-3 search), if there is one.
    pub(crate) fn fill_way(
        &self,
        placement: &Placement,
        blocked: &CellSet,
    ) -> Option<(usize, usize, Way)> {
        let (seed, s) = self
            .world
            .open_seeds()
            .find(|(_, s)| s.cells[0] == placement.root)?;
        let local = s.cells.map(|c| placement.local(c));
        self.table
            .query_shape([local[1], local[2], local[3]])
            .find_map(|b| {
                find_way(
                    self.table,
                    Sweeps::Table(self.clouds),
                    placement.pose,
                    b,
                    blocked,
                    3,
                )
                .map(|way| (seed, b, way))
            })
    }

    /// Every cell the goal cube of meta-module `id` could step to — empty,
    /// with a connector beside it — with the kept poses that put it there
    /// facing that connector.
    pub(crate) fn goal_cells(&self, id: u32, placement: &Placement) -> Vec<(Cell, Vec<usize>)> {
        let mut cells = Vec::new();
        for i in 0..crate::grid::WINDOW_CELLS {
            let local = CellSet::cell(i);
            let goal = placement.world(local);
            if local == [0, 0, 0] || !self.world.content(goal, id).is_empty() {
                continue;
            }
            let mut poses = Vec::new();
            for d in Dir::ALL {
                if !self.world.lockable(add(goal, d.step())) {
                    continue;
                }
                let facing = placement.turn.inverse().apply_dir(d);
                poses.extend(self.table.query_grid(local, facing));
            }
            if !poses.is_empty() {
                cells.push((goal, poses));
            }
        }
        cells
    }

    pub(crate) fn settings(&self) -> Settings {
        self.settings
    }

    pub(crate) fn table_ref(&self) -> &'a Table {
        self.table
    }

    pub(crate) fn clouds_ref(&self) -> &'a Clouds {
        self.clouds
    }

    /// Where a meta-module stands after stepping into pose `b` and handing
    /// its root to the goal cube on `goal`.
    pub(crate) fn after_step(&self, placement: &Placement, b: usize, goal: Cell) -> Placement {
        Placement {
            root: goal,
            turn: placement
                .turn
                .compose(&self.table.configurations()[b].goal_turn),
            pose: self.table.reversed(b),
        }
    }
}

/// Both modules of a meta-module placed in the grid, as frames in the
/// world (for pictures and the physics): the table's pose about the root
/// cube's cell, turned by the placement's turn.
#[must_use]
pub fn module_poses(
    table: &Table,
    placement: &Placement,
) -> [yamor_roombots::module::ModulePose; 2] {
    use nalgebra::{Isometry3, Translation3, UnitQuaternion};
    let meta = yamor_roombots::chain::MetaModule::new(table.connection);
    let q = table.configurations()[placement.pose].angles();
    let poses = meta.poses(q);
    let root_centre = meta.cube_centres(q)[0];
    let r = placement.root;
    let cell = nalgebra::Vector3::new(f64::from(r[0]), f64::from(r[1]), f64::from(r[2]) + 0.5)
        * yamor_roombots::module::CELL;
    let rotation = UnitQuaternion::from_matrix(&placement.turn.matrix());
    let world = Isometry3::from_parts(Translation3::from(cell), rotation)
        * Translation3::from(-root_centre);
    poses.map(|p| yamor_roombots::module::ModulePose {
        middles: p.middles.map(|m| world * m),
    })
}

/// A build's moments: every meta-module's modules after each move.
#[derive(Debug, Clone, Default)]
pub struct Film {
    pub frames: Vec<Vec<yamor_roombots::module::ModulePose>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::srdb::Database;
    use crate::starts::deadlock_case;
    use yamor_roombots::chain::ConnectionType;

    const TWO_LEGS: &str = r#"<structure>
  <module level="0"><root x="0" y="0" z="0"/><cube x="0" y="0" z="1"/><cube x="0" y="0" z="2"/><cube x="0" y="0" z="3"/></module>
  <module level="1"><root x="1" y="0" z="0"/><cube x="0" y="0" z="1"/><cube x="0" y="0" z="2"/><cube x="0" y="0" z="3"/></module>
  <offset x="5" y="6" z="0"/>
</structure>"#;

    #[test]
    fn meta_modules_walk_to_their_seeds_and_stand_there_level_by_level() {
        let db = Database::generate();
        let structure = crate::structure::parse(TWO_LEGS).unwrap();
        for t in [ConnectionType::ShearS, ConnectionType::Perpendicular] {
            let table = db.table(t);
            let clouds = Clouds::build(table, crate::sweep::ROTATION_STEP, 2);
            let mut world = WorldController::new([13, 13, 13]);
            world.set_structure(&structure).unwrap();
            assert_eq!(world.level(), Some(0));
            let mut build = Build::new(
                world,
                table,
                &clouds,
                &[[1, 1], [1, 11]],
                Settings::default(),
            )
            .unwrap();
            let report = build.run();
            assert!(report.built, "{t}: {report:?}");
            assert_eq!(report.collisions, 0);
            assert_eq!(report.filled, 2);
            // Every step moved one meta-module's four cubes onto four free
            // cells, keeping its root or handing it to the goal cube; the
            // level-1 seed filled after the level-0 one.
            let fills: Vec<&Move> = report.moves.iter().filter(|m| m.filled).collect();
            assert_eq!(fills.len(), 2);
            // Level 1 opens only after level 0's seed is filled: a later round.
            assert!(fills[0].round < fills[1].round);
            let placed: Vec<[Cell; 4]> = build.world.seeds().iter().map(|s| s.cells).collect();
            for (fill, cells) in fills.iter().zip(&placed) {
                assert_eq!(
                    cell_set(fill.to),
                    cell_set(*cells),
                    "{t}: the seed's cells, exactly"
                );
            }
            // After a step the goal cube is the root: a meta-module's next
            // move starts from where its last step put its goal cube.
            for id in [1, 2] {
                let mine: Vec<&Move> = report.moves.iter().filter(|m| m.id == id).collect();
                for w in mine.windows(2) {
                    assert_eq!(w[1].from[0], w[0].to[3], "{t}: {:?}", w);
                    assert_eq!(
                        cell_set(w[1].from),
                        cell_set(w[0].to),
                        "{t}: the swap moves no cube"
                    );
                }
            }
        }
    }

    #[test]
    fn the_deadlock_of_fig_3_5_stops_can_move_and_neither_remedy() {
        let db = Database::generate();
        for table in db.tables() {
            let clouds = Clouds::build(table, crate::sweep::ROTATION_STEP, 2);
            let (world, placements) = deadlock_case(table, &clouds)
                .unwrap_or_else(|| panic!("{}: the seed's deadlock exists", table.connection));
            let run = |rule| {
                let settings = Settings {
                    rule,
                    ..Settings::default()
                };
                Build::with_placements(world.clone(), table, &clouds, &placements, settings)
                    .unwrap()
                    .run()
            };
            let seed = run(Rule::CanMove);
            assert!(
                seed.deadlock && !seed.built && seed.moves.is_empty(),
                "{seed:?}"
            );
            let one = run(Rule::OneAtATime);
            let ours = run(Rule::Reserve);
            for r in [&one, &ours] {
                assert!(r.built && r.collisions == 0, "{}: {r:?}", table.connection);
            }
            // Moving at once, reservations take fewer rounds.
            assert!(
                ours.rounds < one.rounds,
                "{}: {} against {}",
                table.connection,
                ours.rounds,
                one.rounds
            );
        }
    }

    #[test]
    fn a_placed_meta_module_is_drawn_and_simulated_on_its_cells() {
        let db = Database::generate();
        for table in db.tables() {
            for (pose, turn) in [
                (0usize, Turn::IDENTITY),
                (upright(table).0, upright(table).1),
                (200, Turn::all()[17]),
            ] {
                let placement = Placement {
                    root: [4, 5, 6],
                    turn,
                    pose,
                };
                let modules = module_poses(table, &placement);
                let cells: Vec<Cell> = modules
                    .iter()
                    .flat_map(|m| {
                        [0, 1].map(|k| {
                            let c = m.cube_centre(k) / yamor_roombots::module::CELL;
                            [
                                c.x.round() as i32,
                                c.y.round() as i32,
                                (c.z - 0.5).round() as i32,
                            ]
                        })
                    })
                    .collect();
                assert_eq!(
                    cells,
                    placement.cells(table).to_vec(),
                    "{}",
                    table.connection
                );
            }
        }
        // Upright: four cells straight up from the floor cell.
        let table = db.table(ConnectionType::ShearZ);
        let (pose, turn) = upright(table);
        let p = Placement {
            root: [2, 3, 0],
            turn,
            pose,
        };
        assert_eq!(p.cells(table), [[2, 3, 0], [2, 3, 1], [2, 3, 2], [2, 3, 3]]);
    }
}
