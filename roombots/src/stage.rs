//! Supervisor commands played on a meta-module over a floor of connectors,
//! kinematically: joints move to their goals at once, `reach` solves the
//! inverse kinematics from the end the meta-module is held by, locks hold
//! an end to the floor, and unlocking the held end while the other is
//! locked hands the meta-module over to it (the inchworm step: the base
//! changes ends, 002 §2.1.2).
//!
//! Only the two active connectors lock (003 §1.5): `C0X` of module 0 and
//! `C3X` of module 1, each on the submodule the meta-module is held by, so
//! holding an end and being locked by it are the same. Every command is
//! checked: a pose through the floor or the meta-module itself, a pose that
//! would carry a locked connector off its floor connector, a lock with
//! nothing under the connector, an unlock that would drop the meta-module,
//! a reach from the end that is not held. A refused command changes
//! nothing. The path between two poses, the physics of the moves (torques,
//! the bounding trial on a blocked joint) are not played here.

use std::collections::BTreeSet;

use nalgebra::{Isometry3, Matrix3, Rotation3, Translation3, UnitQuaternion, Vector3};

use crate::chain::{ConnectionType, MetaModule};
use crate::collision;
use crate::ik::{IkError, MetaJoints, Solver};
use crate::module::{CELL, Connector, HALF, ModulePose};
use crate::path::{Path, PathPlanner};
use crate::reach::GridTarget;
use crate::supervisor::{Command, End};
use rand::{Rng, SeedableRng};

/// How far off its surface a free end is lifted before a move turns
/// anything (m): a half turning about its diagonal reaches 15 mm beyond
/// its cube.
const RETREAT: f64 = 0.015;
/// How far a moving cube may scrape into the floor or the structure on the
/// way between two poses (m): the contact gives that much and the servos
/// push through it; deeper, they stall.
const SCRAPE: f64 = 0.003;
/// How far a moving cube may scrape into a surface on a gentle way (m),
/// the first a move looks for.
const GENTLE: f64 = 0.001;
/// How far the free end may dip into the surface it leaves or comes down
/// onto (m): the contact's own give.
const LIFT_SCRAPE: f64 = 0.0005;
/// How far a half's rim reaches beyond its cube as it turns about its
/// diagonal (m), with a millimetre to spare: the depth into a neighbour a
/// way clear of everything but rims allows.
pub const RIM: f64 = 0.016;
/// The largest turn of any joint leaving a surface (rad).
const RETREAT_TURN: f64 = 0.35;
/// Random directions tried to leave a surface, besides each joint alone.
const RETREAT_TRIES: usize = 120;

/// What a way between two poses is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clearance {
    /// The floor, the structure, the other meta-modules and itself.
    Everything,
    /// The floor and itself, and the structure and the other meta-modules
    /// but for [`RIM`]: any half may enter them that far, as far as a
    /// turning half's rim reaches (a cube face to face with a neighbour
    /// cannot turn its half without the rim entering the neighbour's cell,
    /// which the grid allows).
    Rims,
    /// The floor only: all the engine's bodies touch (it lets cubes pass
    /// through each other), so all a stalled servo needs.
    Floor,
    /// Nothing: no way clear of the floor was found either.
    Nothing,
}

/// A meta-module on a floor of connectors (the plane `z = 0`, a connector
/// at every cell face's centre).
#[derive(Debug, Clone)]
pub struct Stage {
    solver: Solver,
    /// Which end holds the meta-module.
    held_by: End,
    /// The world pose of the holding end's cube frame (`M0` of module 0,
    /// or `M3` of module 1).
    base: Isometry3<f64>,
    /// Angles in forward chain order.
    q: MetaJoints,
    locks: BTreeSet<(u8, Connector)>,
    /// Simulated milliseconds waited.
    pub clock_ms: u64,
    /// Boxes dropped (world positions).
    pub boxes: Vec<Vector3<f64>>,
    /// Cells of a passive structure on the floor (a stool): solid, with a
    /// connector on every face, like the floor's.
    structure: BTreeSet<[i64; 3]>,
    /// Cells other meta-modules stand in: nothing may enter them, and
    /// nothing locks onto them (they move).
    obstacles: BTreeSet<[i64; 3]>,
}

/// What a command did, or why it changed nothing.
pub type Reply = Result<String, Refusal>;

/// Why a command changed nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("the pose would tear the locked {module}:{connector} off the floor")]
    TearsLock { module: u8, connector: Connector },
    /// Cubes by their index along the chain.
    #[error("the pose runs cube {0} into cube {1}")]
    SelfCollision(usize, usize),
    /// How deep, in metres.
    #[error("the pose reaches {:.1} mm into the floor", .0 * 1e3)]
    IntoFloor(f64),
    #[error("the pose runs into the structure's cell {0:?}")]
    IntoStructure([i64; 3]),
    #[error("the pose runs into the meta-module in cell {0:?}")]
    IntoMetaModule([i64; 3]),
    /// The end that holds the meta-module.
    #[error("the meta-module is held by its {0} end: reach{0} from there")]
    HeldByOtherEnd(End),
    #[error("cannot reach {target:?}: {error}")]
    Unreachable { target: GridTarget, error: IkError },
    #[error("{module}:{connector} is locked already")]
    LockedAlready { module: u8, connector: Connector },
    #[error(
        "only the active connectors lock (0:C0X and 1:C3X, 003 §1.5), not {module}:{connector}"
    )]
    NotActive { module: u8, connector: Connector },
    #[error("nothing to lock {module}:{connector} onto: it does not face a floor connector")]
    NothingToLockOnto { module: u8, connector: Connector },
    #[error("{module}:{connector} is not locked")]
    NotLocked { module: u8, connector: Connector },
    #[error("unlocking {module}:{connector} would drop the meta-module: lock the other end first")]
    WouldDrop { module: u8, connector: Connector },
}

/// Why a structure file gives no cells; lines count from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StructureError {
    #[error("line {line}: ({text}) is under the floor: z must be 0 or more")]
    UnderFloor { line: usize, text: String },
    #[error("line {line}: ({text}) is not a cell: three integers x y z")]
    NotACell { line: usize, text: String },
    #[error("line {line}: cell {cell:?} is given twice")]
    GivenTwice { line: usize, cell: [i64; 3] },
}

impl Stage {
    /// Standing upright on the floor cell (0, 0), module 0's `C0X` locked
    /// onto the floor connector there (its `M0` turned so that `x` points
    /// down, `y` along the world's `y`, `z` along the world's `x`).
    #[must_use]
    pub fn new(connection: ConnectionType) -> Self {
        Stage::standing_on(connection, 0, 0)
    }

    /// Standing as [`Stage::new`] stands, on floor cell (`x`, `y`).
    #[must_use]
    pub fn standing_on(connection: ConnectionType, x: i64, y: i64) -> Self {
        Stage::standing_turned(connection, x, y, 0)
    }

    /// Standing on floor cell (`x`, `y`) turned `quarter_turns` quarter
    /// turns about the vertical from [`Stage::standing_on`]'s way (the
    /// shapes a meta-module can take on the grid turn with it).
    #[must_use]
    pub fn standing_turned(connection: ConnectionType, x: i64, y: i64, quarter_turns: u8) -> Self {
        let meta = MetaModule::new(connection);
        let mut solver = Solver::new(meta);
        let yaw = UnitQuaternion::from_axis_angle(
            &Vector3::z_axis(),
            f64::from(quarter_turns % 4) * std::f64::consts::FRAC_PI_2,
        );
        let mut base = standing(x, y);
        base.rotation = yaw * base.rotation;
        // The solver sees the floor in the holding frame; set again whenever
        // the base changes ends.
        solver.floor = Some(base.inverse());
        Stage {
            solver,
            held_by: End::Forward,
            base,
            q: [0.0; 6],
            locks: BTreeSet::from([(0, Connector::C0X)]),
            clock_ms: 0,
            boxes: Vec::new(),
            structure: BTreeSet::new(),
            obstacles: BTreeSet::new(),
        }
    }

    /// The same meta-module beside a passive structure of `cells` (cell
    /// `[x, y, z]` is the cube centred at `(x, y, z + ½)·CELL`; `z ≥ 0`).
    #[must_use]
    pub fn with_structure(mut self, cells: impl IntoIterator<Item = [i64; 3]>) -> Self {
        self.structure = cells.into_iter().collect();
        self
    }

    /// The meta-module played.
    #[must_use]
    pub fn meta(&self) -> MetaModule {
        self.solver.meta()
    }

    #[must_use]
    pub fn structure(&self) -> &BTreeSet<[i64; 3]> {
        &self.structure
    }

    /// Whether cell `c` is solid: below the floor, or the structure's.
    #[must_use]
    pub fn solid(&self, c: [i64; 3]) -> bool {
        c[2] < 0 || self.structure.contains(&c)
    }

    /// Adds `cells` to the structure (a meta-module that settled into it):
    /// solid, with a connector on every face.
    pub fn add_structure(&mut self, cells: impl IntoIterator<Item = [i64; 3]>) {
        self.structure.extend(cells);
    }

    /// The four cubes' cells at angles `q` (forward chain order), held as now.
    #[must_use]
    pub fn cells_at(&self, q: MetaJoints) -> [[i64; 3]; 4] {
        chain_cells(&self.modules_at(q))
    }

    /// The free end's active connector at `q` (held as now), when it faces
    /// a floor or structure connector it could lock onto there.
    #[must_use]
    pub fn free_end_lockable_at(&self, q: MetaJoints) -> Option<(u8, Connector)> {
        let (module, connector) = match self.held_by {
            End::Forward => Self::ACTIVE[1],
            End::Backward => Self::ACTIVE[0],
        };
        let frame = self.modules_at(q)[usize::from(module)].connector(connector);
        self.surface_under(&frame).map(|_| (module, connector))
    }

    /// The held end's active connector.
    #[must_use]
    pub fn held_connector(&self) -> (u8, Connector) {
        match self.held_by {
            End::Forward => Self::ACTIVE[0],
            End::Backward => Self::ACTIVE[1],
        }
    }

    /// The cells other meta-modules stand in now (they replace the last).
    pub fn set_obstacles(&mut self, cells: impl IntoIterator<Item = [i64; 3]>) {
        self.obstacles = cells.into_iter().collect();
    }

    /// Whether cell `c` is taken: solid, or another meta-module's.
    #[must_use]
    pub fn taken(&self, c: [i64; 3]) -> bool {
        self.solid(c) || self.obstacles.contains(&c)
    }

    /// The solid cell a connector faces and lies on, with a connector on
    /// that face: the floor's or the structure's.
    fn surface_under(&self, frame: &Isometry3<f64>) -> Option<[i64; 3]> {
        let z = frame.rotation * Vector3::z();
        if (z - z.map(f64::round)).norm() > 1e-6 {
            return None;
        }
        let inside = frame.translation.vector + z * HALF;
        let cell = cell_of(&inside);
        let centre = cell_centre(cell);
        ((inside - centre).norm() < 1e-6 && self.solid(cell)).then_some(cell)
    }

    /// The connectors that lock: one active connector per end.
    const ACTIVE: [(u8, Connector); 2] = [(0, Connector::C0X), (1, Connector::C3X)];

    /// Both modules' frames in the world.
    #[must_use]
    pub fn modules(&self) -> [ModulePose; 2] {
        self.modules_at(self.q)
    }

    /// Both modules' frames in the world at `q`, held as now.
    fn modules_at(&self, q: MetaJoints) -> [ModulePose; 2] {
        let poses = self.solver.meta().poses(q);
        let held = match self.held_by {
            End::Forward => self.base,
            End::Backward => self.base * poses[1].middles[3].inverse(),
        };
        poses.map(|p| ModulePose {
            middles: p.middles.map(|m| held * m),
        })
    }

    /// Every connector of both modules with its world frame.
    fn connectors(&self) -> Vec<(u8, Connector, Isometry3<f64>)> {
        self.connectors_at(self.q)
    }

    fn connectors_at(&self, q: MetaJoints) -> Vec<(u8, Connector, Isometry3<f64>)> {
        let modules = self.modules_at(q);
        (0..2u8)
            .flat_map(|m| Connector::ALL.map(|c| (m, c, modules[usize::from(m)].connector(c))))
            .collect()
    }

    /// The four cubes' cells, in chain order.
    #[must_use]
    pub fn cells(&self) -> [[i64; 3]; 4] {
        chain_cells(&self.modules())
    }

    /// The six joint angles in forward chain order.
    #[must_use]
    pub fn angles(&self) -> MetaJoints {
        self.q
    }

    #[must_use]
    pub fn locks(&self) -> &BTreeSet<(u8, Connector)> {
        &self.locks
    }

    #[must_use]
    pub fn held_by(&self) -> End {
        self.held_by
    }

    /// The world floor in the holding end's frame.
    fn floor_in_holding_frame(&self) -> Isometry3<f64> {
        self.base.inverse()
    }

    /// Whether the meta-module at `q` (held as now) is free and leaves
    /// every locked connector where it is.
    fn check(&self, q: MetaJoints) -> Result<(), Refusal> {
        for ((m, c, before), (_, _, after)) in self.connectors().iter().zip(self.connectors_at(q)) {
            let stays = (before.translation.vector - after.translation.vector).norm() < 1e-6
                && before.rotation.angle_to(&after.rotation) < 1e-6;
            if self.locks.contains(&(*m, *c)) && !stays {
                return Err(Refusal::TearsLock {
                    module: *m,
                    connector: *c,
                });
            }
        }
        self.obstruction(q, collision::TOLERANCE, Clearance::Everything)
            .map_or(Ok(()), Err)
    }

    /// Whether the meta-module at `q` (held as now) is free of what
    /// `against` names, scraping at most [`SCRAPE`] into a surface.
    #[must_use]
    pub fn free_at(&self, q: MetaJoints, against: Clearance) -> bool {
        self.obstruction(q, SCRAPE, against).is_none()
    }

    /// A way from the pose now to `goal` (held as now) along which every
    /// pose is free ([`crate::path`]), and what it is clear of: of
    /// everything if such a way was found, else of everything but rims,
    /// else of the floor (what the engine's servos must push against),
    /// else of nothing (the straight line). At each level a way scraping
    /// at most [`GENTLE`] into a surface is sought before one scraping
    /// [`SCRAPE`]. A free end resting on a surface is lifted off it first,
    /// and comes down onto the goal's surface last.
    pub fn path_to(&self, goal: MetaJoints, planner: &PathPlanner) -> (Path, Clearance) {
        let mut straight = None;
        for against in [Clearance::Everything, Clearance::Rims, Clearance::Floor] {
            // A way that barely touches a surface first: one that scrapes
            // along it may leave a cube pressed into it, short of the goal.
            for scrape in [GENTLE, SCRAPE] {
                let path = self.path_within(goal, planner, against, scrape);
                if path.clear {
                    return (path, against);
                }
                straight.get_or_insert(path);
            }
        }
        (straight.expect("planned at least once"), Clearance::Nothing)
    }

    /// A way from the pose now to `goal` (held as now) clear of what
    /// `against` names, scraping at most [`SCRAPE`] into a surface, a free
    /// end resting on a surface lifted off it first; the straight line
    /// marked not clear when none was found.
    #[must_use]
    pub fn path_clear_of(
        &self,
        goal: MetaJoints,
        planner: &PathPlanner,
        against: Clearance,
    ) -> Path {
        self.path_within(goal, planner, against, SCRAPE)
    }

    /// [`Stage::path_clear_of`], scraping at most `scrape` into a surface.
    fn path_within(
        &self,
        goal: MetaJoints,
        planner: &PathPlanner,
        against: Clearance,
        scrape: f64,
    ) -> Path {
        let free = |q: &MetaJoints| self.obstruction(*q, scrape, against).is_none();
        planner.plan_retreating(
            self.q,
            goal,
            [&self.retreat(self.q, &free), &self.retreat(goal, &free)],
            free,
        )
    }

    /// A pose a straight, free turn of at most [`RETREAT_TURN`] from `q`
    /// (held as now) whose free end stands furthest off the surface its
    /// active connector faces at `q`, and at least [`RETREAT`] off, as
    /// the one step of a way off that surface; empty when the free end
    /// faces no surface, or no such pose was found.
    ///
    /// Turning a half-cube that rests on a surface drives its rim into it;
    /// lifting first needs the joints to turn together, in a narrow set of
    /// directions a random search rarely hits. Each joint alone and a
    /// seeded set of directions are tried. (Climbing in several smaller
    /// steps, also off the floor, was tried: it mended no more builds and
    /// broke a perpendicular one, a lock then missing by 10.2 mm.)
    #[must_use]
    pub fn retreat(&self, q: MetaJoints, free: &impl Fn(&MetaJoints) -> bool) -> Vec<MetaJoints> {
        let Some((module, connector)) = self.free_end_lockable_at(q) else {
            return Vec::new();
        };
        // The surface's frame: the connector's, Z turned into the module.
        let surface = self.modules_at(q)[usize::from(module)].connector(connector)
            * UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::PI);
        let free_cube = end_cube(self.held_by.other());
        let height = |p: &MetaJoints| {
            let halves = collision::halves(&self.modules_at(*p));
            collision::halves_height(&halves[free_cube.clone()], &surface)
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let mut directions: Vec<MetaJoints> = (0..12)
            .map(|i| std::array::from_fn(|k| if k == i / 2 { [1.0, -1.0][i % 2] } else { 0.0 }))
            .collect();
        directions.extend(
            (0..RETREAT_TRIES)
                .map(|_| -> MetaJoints { std::array::from_fn(|_| rng.random_range(-1.0..1.0)) }),
        );
        directions
            .iter()
            .map(|d| {
                let widest = d.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
                std::array::from_fn(|k| q[k] + d[k] / widest * RETREAT_TURN)
            })
            // The free end itself leaves (or comes down onto) its surface
            // cleanly: its half's rim turning into the surface as it goes
            // is what the engine's contact stops short of the goal.
            .filter(|p: &MetaJoints| {
                crate::path::edge_free(&q, p, &|r: &MetaJoints| {
                    free(r) && height(r) >= -LIFT_SCRAPE
                })
            })
            .map(|p| (height(&p), p))
            .filter(|(h, _)| *h >= RETREAT)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p)
            .into_iter()
            .collect()
    }

    /// What the meta-module at `q` (held as now) runs into, if anything.
    fn obstruction(&self, q: MetaJoints, scrape: f64, against: Clearance) -> Option<Refusal> {
        let modules = self.modules_at(q);
        // How far a cube may go into the structure and into the others.
        let give = match against {
            Clearance::Everything => Some((scrape, collision::TOLERANCE)),
            Clearance::Rims => Some((RIM, RIM)),
            Clearance::Floor | Clearance::Nothing => None,
        };
        if give.is_some()
            && let Some((a, b)) = collision::self_collision(&modules)
        {
            return Some(Refusal::SelfCollision(a, b));
        }
        // The held cube is locked onto the surface under it and cannot lift
        // off: its turning half scrapes that surface (a half's rim reaches
        // 15 mm beyond its cube) as the servos allow. Everything else must
        // stay clear of it.
        let all = collision::halves(&modules);
        let (module, connector) = self.held_connector();
        // The held cube is the chain's first or last: the rest is one slice.
        let rest = match self.held_by {
            End::Forward => &all[end_cube(End::Forward).end..],
            End::Backward => &all[..end_cube(End::Backward).start],
        };
        let under = self.surface_under(&modules[usize::from(module)].connector(connector));
        let on_floor = under.is_some_and(|c| c[2] < 0);
        let depth =
            collision::halves_below(if on_floor { rest } else { &all }, &Isometry3::identity());
        if depth > scrape {
            return Some(Refusal::IntoFloor(depth));
        }
        let (into_structure, into_others) = give?;
        if let Some(cell) = self.structure.iter().find(|c| {
            let who = if under == Some(**c) { rest } else { &all };
            collision::halves_cell_depth(who, &cell_centre(**c)) > into_structure
        }) {
            return Some(Refusal::IntoStructure(*cell));
        }
        if let Some(cell) = self
            .obstacles
            .iter()
            .find(|c| collision::halves_cell_depth(&all, &cell_centre(**c)) > into_others)
        {
            return Some(Refusal::IntoMetaModule(*cell));
        }
        None
    }

    /// Plays one command.
    pub fn apply(&mut self, command: &Command) -> Reply {
        match *command {
            Command::Move { end, angles } => {
                let q = Command::forward_angles(end, angles);
                self.check(q)?;
                self.q = q;
                Ok(format!("moved; cubes at {:?}", self.cells()))
            }
            Command::Reach { end, target } => {
                if end != self.held_by {
                    return Err(Refusal::HeldByOtherEnd(self.held_by));
                }
                let current = match end {
                    End::Forward => self.q,
                    End::Backward => Command::forward_angles(End::Backward, self.q),
                };
                let solution = self
                    .solver
                    .solve(&target.frame(), current)
                    .map_err(|error| Refusal::Unreachable { target, error })?;
                let q = Command::forward_angles(end, solution.q);
                self.check(q)?;
                self.q = q;
                Ok(format!(
                    "reached in {} iterations; cubes at {:?}",
                    solution.iterations,
                    self.cells()
                ))
            }
            Command::Lock { module, connector } => {
                if self.locks.contains(&(module, connector)) {
                    return Err(Refusal::LockedAlready { module, connector });
                }
                if !Self::ACTIVE.contains(&(module, connector)) {
                    return Err(Refusal::NotActive { module, connector });
                }
                let frame = self
                    .connectors()
                    .into_iter()
                    .find(|(m, c, _)| *m == module && *c == connector)
                    .map(|(_, _, f)| f)
                    .expect("every connector has a frame");
                let cell = self
                    .surface_under(&frame)
                    .ok_or(Refusal::NothingToLockOnto { module, connector })?;
                self.locks.insert((module, connector));
                Ok(if cell[2] < 0 {
                    format!(
                        "locked {module}:{connector} onto the floor at cell {:?}",
                        [cell[0], cell[1]]
                    )
                } else {
                    // The face it locked onto, named from outside the cell.
                    let out = -(frame.rotation * Vector3::z());
                    let face = match (
                        out.x.round() as i64,
                        out.y.round() as i64,
                        out.z.round() as i64,
                    ) {
                        (0, 0, 1) => "top",
                        (0, 0, -1) => "bottom",
                        (1, 0, 0) => "+x side",
                        (-1, 0, 0) => "-x side",
                        (0, 1, 0) => "+y side",
                        _ => "-y side",
                    };
                    format!(
                        "locked {module}:{connector} onto the {face} of the structure's cell {cell:?}"
                    )
                })
            }
            Command::Unlock { module, connector } => {
                if !self.locks.contains(&(module, connector)) {
                    return Err(Refusal::NotLocked { module, connector });
                }
                let others: Vec<(u8, Connector)> = self
                    .locks
                    .iter()
                    .copied()
                    .filter(|l| *l != (module, connector))
                    .collect();
                if others.is_empty() {
                    return Err(Refusal::WouldDrop { module, connector });
                }
                self.locks.remove(&(module, connector));
                let holding_module = match self.held_by {
                    End::Forward => 0,
                    End::Backward => 1,
                };
                if others.iter().all(|(m, _)| *m != holding_module) {
                    // The other end holds it now: its cube frame is the base.
                    let modules = self.modules();
                    self.base = match self.held_by {
                        End::Forward => modules[1].middles[3],
                        End::Backward => modules[0].middles[0],
                    };
                    self.held_by = self.held_by.other();
                    self.solver.floor = Some(self.floor_in_holding_frame());
                    return Ok(format!(
                        "unlocked {module}:{connector}; the meta-module is held by its {} end now",
                        self.held_by
                    ));
                }
                Ok(format!("unlocked {module}:{connector}"))
            }
            Command::Step { milliseconds } => {
                self.clock_ms = self.clock_ms.saturating_add(milliseconds);
                Ok(format!("waited {milliseconds} ms"))
            }
            Command::DropBox { end } => {
                let modules = self.modules();
                let at = match end {
                    End::Forward => modules[1].connector(Connector::C3X),
                    End::Backward => modules[0].connector(Connector::C0X),
                };
                self.boxes.push(at.translation.vector);
                Ok("dropped a box".to_owned())
            }
            Command::Terminal | Command::File => {
                Ok("terminal input is not read while playing a file; skipped".to_owned())
            }
        }
    }
}

/// The indices in [`collision::halves`] of the two halves of the cube at
/// `end` of the chain.
fn end_cube(end: End) -> std::ops::Range<usize> {
    match end {
        End::Forward => 0..2,
        End::Backward => 6..8,
    }
}

/// Makes meta-module `meta` of `stages` see the others' cubes as cells it
/// may not enter (before each of its commands: the others move too).
pub fn see_others(stages: &mut [Stage], meta: usize) {
    let others: Vec<[i64; 3]> = stages
        .iter()
        .enumerate()
        .filter(|(k, _)| *k != meta)
        .flat_map(|(_, s)| s.cells())
        .collect();
    stages[meta].set_obstacles(others);
}

/// A passive structure's cells from text: one cell `x y z` per line
/// (integers, `z ≥ 0`: the floor is under `z = 0`), `#` comments.
pub fn parse_structure(text: &str) -> Result<Vec<[i64; 3]>, StructureError> {
    let mut cells = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let numbers: Result<Vec<i64>, _> = line.split_whitespace().map(str::parse).collect();
        let cell = match numbers.as_deref() {
            Ok(&[x, y, z]) if z >= 0 => [x, y, z],
            Ok(&[_, _, _]) => {
                return Err(StructureError::UnderFloor {
                    line: k + 1,
                    text: line.to_owned(),
                });
            }
            _ => {
                return Err(StructureError::NotACell {
                    line: k + 1,
                    text: line.to_owned(),
                });
            }
        };
        if cells.contains(&cell) {
            return Err(StructureError::GivenTwice { line: k + 1, cell });
        }
        cells.push(cell);
    }
    Ok(cells)
}

/// A module's `M0` standing upright on floor cell (x, y): its `x` down,
/// `y` along the world's `y`, `z` along the world's `x`.
#[must_use]
pub fn standing(x: i64, y: i64) -> Isometry3<f64> {
    let upright = Rotation3::from_matrix_unchecked(Matrix3::from_columns(&[
        -Vector3::z(),
        Vector3::y(),
        Vector3::x(),
    ]));
    Isometry3::from_parts(
        Translation3::new(x as f64 * CELL, y as f64 * CELL, HALF),
        UnitQuaternion::from_rotation_matrix(&upright),
    )
}

/// The cells of both cubes of every module, module by module: a
/// meta-module's four in chain order.
#[must_use]
pub fn module_cells(modules: &[ModulePose]) -> Vec<[[i64; 3]; 2]> {
    modules
        .iter()
        .map(|m| [0, 1].map(|cube| cell_of(&m.cube_centre(cube).coords)))
        .collect()
}

/// A meta-module's four cube cells in chain order.
#[must_use]
pub fn chain_cells(modules: &[ModulePose]) -> [[i64; 3]; 4] {
    let cells = module_cells(modules);
    [cells[0][0], cells[0][1], cells[1][0], cells[1][1]]
}

/// The cell whose cube contains `p`.
#[must_use]
pub fn cell_of(p: &Vector3<f64>) -> [i64; 3] {
    [
        (p.x / CELL).round() as i64,
        (p.y / CELL).round() as i64,
        (p.z / CELL - 0.5).round() as i64,
    ]
}

/// The centre of cell `c`'s cube.
#[must_use]
pub fn cell_centre(c: [i64; 3]) -> Vector3<f64> {
    Vector3::new(c[0] as f64, c[1] as f64, c[2] as f64 + 0.5) * CELL
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::parse;

    fn play(stage: &mut Stage, text: &str) -> Vec<Reply> {
        parse(text)
            .unwrap()
            .iter()
            .map(|c| stage.apply(c))
            .collect()
    }

    /// Reaches some floor cell within two cells of the root with the free
    /// end facing down (`x` of `M0` points down), whichever one and
    /// quarter-turn it can.
    fn reach_the_floor(stage: &mut Stage) -> bool {
        for (dy, dz) in [
            (0, 1),
            (0, -1),
            (1, 0),
            (-1, 0),
            (0, 2),
            (2, 0),
            (1, 1),
            (0, 3),
        ] {
            for o in 0..4 {
                if play(stage, &format!("reachfw 0 {dy} {dz} 1 0 0 {o}"))[0].is_ok() {
                    return true;
                }
            }
        }
        false
    }

    /// Goals the straight line in joint space cannot reach without the
    /// cubes running into the floor or each other are reached another way,
    /// and every pose on it is free.
    #[test]
    fn a_blocked_straight_line_is_gone_around_with_every_pose_on_the_way_free() {
        let stage = Stage::new(ConnectionType::ShearS);
        let start = stage.angles();
        let everything = |q: &MetaJoints| stage.free_at(*q, Clearance::Everything);
        let blocked: Vec<MetaJoints> = crate::ik::lattice()
            .into_iter()
            .filter(|q| stage.check(*q).is_ok() && !crate::path::edge_free(&start, q, &everything))
            .step_by(7)
            .take(6)
            .collect();
        assert_eq!(blocked.len(), 6);
        for goal in blocked {
            let (path, clearance) = stage.path_to(goal, &PathPlanner::default());
            assert_eq!(clearance, Clearance::Everything, "{goal:?}");
            assert!(!path.is_straight());
            let w = &path.waypoints;
            assert_eq!(w[0], start);
            let end = w.last().unwrap();
            assert!(
                (0..6).all(|k| crate::module::wrap(end[k] - goal[k]).abs() < 1e-9),
                "{end:?} is not {goal:?}"
            );
            for pair in w.windows(2) {
                assert!(crate::path::edge_free(&pair[0], &pair[1], &everything));
            }
        }
    }

    /// A free end resting on the floor is lifted off it by a small turn
    /// before anything else (turning a half that rests on the floor would
    /// drive its rim 15 mm into it).
    #[test]
    fn a_free_end_resting_on_the_floor_is_lifted_off_it_first() {
        let mut lifted = 0;
        for t in ConnectionType::ALL {
            let mut stage = Stage::new(t);
            if !reach_the_floor(&mut stage) {
                continue;
            }
            let q = stage.angles();
            assert!(stage.free_end_lockable_at(q).is_some(), "{t}");
            let floor = |p: &MetaJoints| stage.free_at(*p, Clearance::Floor);
            let steps = stage.retreat(q, &floor);
            if steps.is_empty() {
                continue;
            }
            lifted += 1;
            let mut from = q;
            for p in &steps {
                assert!((0..6).all(|k| (p[k] - from[k]).abs() <= RETREAT_TURN + 1e-12));
                assert!(crate::path::edge_free(&from, p, &floor));
                from = *p;
            }
            let free_end =
                collision::halves(&stage.modules_at(from))[end_cube(End::Backward)].to_vec();
            let height = collision::halves_height(&free_end, &Isometry3::identity());
            assert!(height >= RETREAT, "{t}: {height}");
        }
        assert!(lifted >= 2, "{lifted} connection types lifted");
    }

    #[test]
    fn the_held_end_is_the_base_and_an_inchworm_step_hands_it_over() {
        let mut stepped = 0;
        for t in ConnectionType::ALL {
            let mut stage = Stage::new(t);
            assert_eq!(stage.held_by(), End::Forward);
            assert_eq!(stage.locks().len(), 1, "{t}");
            if !reach_the_floor(&mut stage) {
                continue;
            }
            stepped += 1;
            let lock = stage.apply(&Command::Lock {
                module: 1,
                connector: Connector::C3X,
            });
            assert!(lock.is_ok(), "{t}: {lock:?}");
            // Held by both ends, no joint may move: either end would tear.
            for k in 0..6 {
                let mut q = stage.q;
                q[k] += 0.3;
                let moved = stage.apply(&Command::Move {
                    end: End::Forward,
                    angles: q,
                });
                assert!(
                    moved.unwrap_err().to_string().contains("tear"),
                    "{t}: joint {k}"
                );
            }
            let before = (stage.cells(), stage.q);
            let unlocked = stage.apply(&Command::Unlock {
                module: 0,
                connector: Connector::C0X,
            });
            assert!(unlocked.unwrap().contains("held by its bw end"));
            assert_eq!(stage.held_by(), End::Backward);
            // Handing over moves nothing.
            assert_eq!((stage.cells(), stage.q), before);
        }
        assert!(stepped >= 2, "{stepped} connection types stepped");
    }

    #[test]
    fn a_structure_file_gives_its_cells_and_a_bad_one_its_line() {
        assert_eq!(
            parse_structure("# a stool\n2 0 0\n 3 0 1 # top\n\n").unwrap(),
            vec![[2, 0, 0], [3, 0, 1]]
        );
        for (text, why) in [
            ("2 0 0\n2 0 -1", "line 2: (2 0 -1) is under the floor"),
            ("2 0", "line 1: (2 0) is not a cell"),
            ("2 0 0 1", "not a cell"),
            ("x 0 0", "not a cell"),
            ("1 1 1\n1 1 1", "line 2: cell [1, 1, 1] is given twice"),
        ] {
            let error = parse_structure(text).unwrap_err();
            assert!(error.to_string().contains(why), "{text:?}: {error}");
        }
    }

    #[test]
    fn another_meta_module_is_a_cell_no_pose_may_enter() {
        // Bending over is free alone; the other meta-module then stands on
        // a floor cell the bent one reaches over.
        let (bend, over) = [
            "movefw 0 0 1 0 0 0",
            "movefw 0 0 0 1 0 0",
            "movefw 0 0 0 0 0 1",
            "movefw 1 0 0 0 0 0",
        ]
        .into_iter()
        .find_map(|bend| {
            let mut alone = Stage::new(ConnectionType::ShearS);
            play(&mut alone, bend).remove(0).ok()?;
            let over = alone.cells().into_iter().find(|c| [c[0], c[1]] != [0, 0])?;
            Some((bend, over))
        })
        .expect("some bend leaves the column");
        let mut stages = vec![
            Stage::new(ConnectionType::ShearS),
            Stage::standing_on(ConnectionType::ShearS, over[0], over[1]),
        ];
        see_others(&mut stages, 0);
        let before = stages[0].cells();
        let refused = play(&mut stages[0], bend).remove(0).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("runs into the meta-module in cell"),
            "{refused}"
        );
        assert_eq!(stages[0].cells(), before);
        // Nothing locks onto another meta-module's cube.
        assert!(!stages[0].solid(over));
        assert!(stages[0].taken(over));
    }

    /// A neighbour face to face with the top cube: turning that cube's
    /// half a little sweeps its rim into the neighbour's cell, which only
    /// a way clear of everything but rims allows; a cube in the
    /// neighbour's cell, none but the floor's.
    #[test]
    fn a_turning_half_may_brush_a_neighbour_by_its_rim_and_no_deeper() {
        let mut stage = Stage::new(ConnectionType::ShearS);
        let q = stage.angles();
        let top = stage.cells().into_iter().max_by_key(|c| c[2]).unwrap();
        let beside = [top[0] + 1, top[1], top[2]];
        stage.set_obstacles([beside]);
        // Each joint turned a little alone: one of them turns the top
        // cube's half.
        let turns: Vec<MetaJoints> = (0..6)
            .map(|k| {
                let mut p = q;
                p[k] += 0.3;
                p
            })
            .collect();
        let brushes = turns
            .iter()
            .find(|p| {
                stage.cells_at(**p) == stage.cells()
                    && !stage.free_at(**p, Clearance::Everything)
                    && stage.free_at(**p, Clearance::Floor)
            })
            .expect("some small turn brushes the neighbour by a rim");
        assert!(
            stage
                .obstruction(*brushes, SCRAPE, Clearance::Rims)
                .is_none()
        );
        // A pose with a cube in a neighbour's cell.
        let mut stage = Stage::new(ConnectionType::ShearS);
        let (into, cell) = crate::ik::lattice()
            .into_iter()
            .find_map(|p| {
                let cell = stage
                    .cells_at(p)
                    .into_iter()
                    .find(|c| !stage.cells().contains(c))?;
                stage.free_at(p, Clearance::Floor).then_some((p, cell))
            })
            .expect("some lattice pose leaves the column");
        assert!(stage.free_at(into, Clearance::Rims));
        stage.set_obstacles([cell]);
        assert!(!stage.free_at(into, Clearance::Rims));
    }

    #[test]
    fn a_refused_command_changes_nothing() {
        let mut stage = Stage::new(ConnectionType::Parallel);
        assert_eq!(stage.cells(), [[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 0, 3]]);
        let before = (stage.cells(), stage.q, stage.locks().clone());
        let outcomes = play(
            &mut stage,
            "unlock 0 C0X\nlock 1 C0Y\nlock 1 C3X\nreachbw 1 0 0\nreachfw -2 0 0 1 0 0\nunlock 1 C3X\nlock 0 C0X",
        );
        for o in &outcomes {
            assert!(o.is_err(), "{outcomes:?}");
        }
        assert_eq!((stage.cells(), stage.q, stage.locks().clone()), before);
        // The only lock cannot go: the meta-module would fall.
        assert!(
            outcomes[0]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("would drop")
        );
        assert!(
            outcomes[1]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("only the active connectors")
        );
        assert!(
            outcomes[2]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("nothing to lock")
        );
        assert!(
            outcomes[3]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("held by its fw end")
        );
        // A second lock of a locked connector would hold it twice.
        assert!(
            outcomes[6]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("locked already")
        );
    }
}
