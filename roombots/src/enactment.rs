//! Supervisor commands enacted on a simulated meta-module: the kinematic
//! [`Stage`] checks each command and gives the joint goals, then the
//! engine ([`Robot`]) moves there with its servos, the bounding trial of
//! 002 §4.1.1 watching every joint, and locks become welds onto the floor.
//!
//! A move drives all six joints along a way through joint space that the
//! plan's kinematics finds clear ([`Stage::path_to`]: the straight line
//! when it is, else a way around that lifts a free end off its surface
//! first), each joint at most [`MAX_SPEED`], all passing each pose of the
//! way together; each joint ends on the way's last pose, unwrapped along
//! the way from the angle it started at (the straight line: the nearest
//! angle equal to its goal modulo a turn), and the bounding trial sends
//! it round the other way when it is blocked. A move is done
//! when every joint is still at its goal one observation after all
//! reached it; a joint that swung off as the chain came to rest is sent
//! its goal again. What each command did is an [`EnactmentReport`]: how long it
//! took, whether every joint reached its goal, how often the cubes met on
//! the way — a meta-module's own, and cubes of different meta-modules or
//! a structure cell, by cell and by depth (the engine lets them pass
//! through each other, so meetings are measured, not prevented) — how far
//! the locks gave, and how far the simulated connectors ended from the
//! kinematic plan.

use std::collections::BTreeMap;

use nalgebra::Isometry3;

use crate::bounding::{BoundingTrial, Verdict};
use crate::chain::ConnectionType;
use crate::collision;
use crate::ik::MetaJoints;
use crate::module::{Connector, wrap};
use crate::path::{Path, PathPlanner};
use crate::physics::{LockId, MAX_SPEED, PhysicsError, Robot, RobotSettings};
use crate::stage::{Clearance, Refusal, Stage};
use crate::supervisor::Command;

/// How often the bounding trial looks at the joints (s).
pub const OBSERVATION: f64 = 0.1;
/// A joint within this of its goal has reached it (rad).
pub const GOAL_TOLERANCE: f64 = 0.03;
/// The longest one command may take (s).
pub const COMMAND_TIMEOUT: f64 = 30.0;
/// How far a connector may be from the floor connector and still lock
/// (m): the retractable latches pull in a few millimetres.
pub const LOCK_REACH: f64 = 0.01;
/// How often one move may send a joint's goal again after it swung off
/// it on arriving.
const MAX_APPROACHES: usize = 6;
/// How long the world settles before the first command (s).
const SETTLE: f64 = 0.5;

/// Why a command was not enacted: nothing moved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EnactmentError {
    #[error("there is no meta-module {meta}: {standing} stand here")]
    NoMetaModule { meta: usize, standing: usize },
    /// The plan refused the command.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// `gap` in metres.
    #[error(
        "{module}:{connector} is {:.1} mm from the floor connector in the simulation (at most {:.0} mm locks)",
        .gap * 1e3,
        LOCK_REACH * 1e3
    )]
    TooFarToLock {
        module: u8,
        connector: Connector,
        gap: f64,
    },
    #[error(transparent)]
    Physics(#[from] PhysicsError),
}

/// What one command did in the simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct EnactmentReport {
    /// The kinematic stage's account.
    pub plan: String,
    /// Simulated time the command took (s).
    pub seconds: f64,
    /// Every joint reached its goal (false: a joint was stuck, or time ran
    /// out).
    pub reached: bool,
    /// Goal changes of the bounding trial, over all joints.
    pub retargets: u32,
    /// Observations at which two cubes of one meta-module overlapped.
    pub overlaps: usize,
    /// Observations at which a cube's centre lay in a cell another
    /// meta-module's cube or the structure held.
    pub collisions: usize,
    /// How deep, at worst, a cube ran into another meta-module's cube or
    /// into a structure cell (m).
    pub overlap_depth: f64,
    /// How far the locks gave at worst during the command (m).
    pub lock_gap: f64,
    /// The farthest any connector of the commanded meta-module ended from
    /// where the plan puts it (m).
    pub plan_error: f64,
    /// The way a move or reach took through joint space (None for the
    /// other commands).
    pub way: Option<Way>,
}

/// The way a move took through joint space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Way {
    /// Poses passed through between its start and its goal: 0 for the
    /// straight line, more for a way around.
    pub waypoints: usize,
    /// What it was found clear of at every pose checked
    /// ([`Stage::path_to`]).
    pub clearance: Clearance,
}

/// Meta-modules standing on a floor of connectors, simulated in one world.
pub struct Enactment {
    /// One plan per meta-module; meta-module `i`'s modules are the robot's
    /// `2i` and `2i + 1`.
    stages: Vec<Stage>,
    robot: Robot,
    locks: BTreeMap<(usize, u8, Connector), LockId>,
    settings: RobotSettings,
    /// Simulated time (s).
    clock: f64,
    /// Moves planned so far: seeds the next one's path search.
    moves: u64,
}

impl Enactment {
    /// Standing as [`Stage::new`] stands, module 0's `C0X` locked onto the
    /// floor, settled.
    pub fn new(connection: ConnectionType) -> Result<Self, PhysicsError> {
        Enactment::on(Stage::new(connection))
    }

    /// The meta-module of `stage` (standing as [`Stage::new`] stands,
    /// perhaps beside a structure), simulated. The structure's cells carry
    /// connectors to lock onto; the engine does not collide the modules
    /// with it (the plan checks every pose against it).
    pub fn on(stage: Stage) -> Result<Self, PhysicsError> {
        Enactment::troupe(vec![stage])
    }

    /// Several meta-modules in one world, each standing where its stage
    /// has it. Each plan sees the others' cubes as cells it may not enter;
    /// the engine does not collide meta-modules with each other, so their
    /// overlaps on the way are counted like the cubes' own.
    pub fn troupe(stages: Vec<Stage>) -> Result<Self, PhysicsError> {
        let trees: Vec<_> = stages
            .iter()
            .map(|stage| {
                let mut tree = stage.meta().tree();
                tree.root_pose = stage.modules()[0].middles[0];
                let q = stage.angles();
                (tree, vec![[q[0], q[1], q[2]], [q[3], q[4], q[5]]])
            })
            .collect();
        let settings = RobotSettings::default();
        let (mut robot, _) = Robot::build_forest(&trees, &settings)?;
        let mut locks = BTreeMap::new();
        for (i, stage) in stages.iter().enumerate() {
            for &(m, c) in stage.locks() {
                let floor = floor_under(&stage.modules()[usize::from(m)].connector(c));
                let module = 2 * i + usize::from(m);
                locks.insert((i, m, c), robot.lock_to_floor(module, c, &floor)?);
            }
        }
        let mut enactment = Enactment {
            stages,
            robot,
            locks,
            settings,
            clock: 0.0,
            moves: 0,
        };
        enactment.hold();
        enactment.run_for(SETTLE);
        Ok(enactment)
    }

    /// The first meta-module's plan.
    #[must_use]
    pub fn stage(&self) -> &Stage {
        &self.stages[0]
    }

    /// Every meta-module's plan.
    #[must_use]
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    #[must_use]
    pub fn robot(&self) -> &Robot {
        &self.robot
    }

    /// Simulated time so far (s).
    #[must_use]
    pub fn clock(&self) -> f64 {
        self.clock
    }

    /// Plays one command on the first meta-module.
    pub fn apply(&mut self, command: &Command) -> Result<EnactmentReport, EnactmentError> {
        self.apply_to(0, command)
    }

    /// Plays one command on meta-module `meta`: refused by its plan
    /// (nothing moves), or enacted while the others hold still.
    pub fn apply_to(
        &mut self,
        meta: usize,
        command: &Command,
    ) -> Result<EnactmentReport, EnactmentError> {
        if meta >= self.stages.len() {
            return Err(EnactmentError::NoMetaModule {
                meta,
                standing: self.stages.len(),
            });
        }
        crate::stage::see_others(&mut self.stages, meta);
        if let Command::Lock { module, connector } = *command {
            // The plan's refusals first (on a copy: a lock is rare, and the
            // plan must not change if the simulation refuses).
            let mut planned = self.stages[meta].clone();
            planned.apply(command)?;
            // The plan locks where its connector is; the simulated one may
            // be elsewhere (a move that got stuck): a weld would yank it.
            let gap = self.gap_to_lock(meta, &planned, module, connector);
            if gap > LOCK_REACH {
                return Err(EnactmentError::TooFarToLock {
                    module,
                    connector,
                    gap,
                });
            }
        }
        let before = matches!(command, Command::Move { .. } | Command::Reach { .. })
            .then(|| self.stages[meta].clone());
        let plan = self.stages[meta].apply(command)?;
        let start = self.clock;
        let mut report = EnactmentReport {
            plan,
            seconds: 0.0,
            reached: true,
            retargets: 0,
            overlaps: 0,
            overlap_depth: 0.0,
            collisions: 0,
            lock_gap: self.worst_lock_gap(),
            plan_error: 0.0,
            way: None,
        };
        if let Some(before) = before {
            let planner = PathPlanner {
                seed: self.moves,
                ..PathPlanner::default()
            };
            self.moves += 1;
            let (path, clearance) = before.path_to(self.stages[meta].angles(), &planner);
            report.way = Some(Way {
                waypoints: path.waypoints.len().saturating_sub(2),
                clearance,
            });
            self.drive(meta, &path, &mut report);
        }
        match *command {
            Command::Move { .. } | Command::Reach { .. } => {}
            Command::Lock { module, connector } => {
                let frame = self.stages[meta].modules()[usize::from(module)].connector(connector);
                let weld = self.robot.lock_to_floor(
                    2 * meta + usize::from(module),
                    connector,
                    &floor_under(&frame),
                )?;
                self.locks.insert((meta, module, connector), weld);
                // The weld pulls the connector home within a few steps.
                self.observe_for(OBSERVATION, &mut report);
            }
            Command::Unlock { module, connector } => {
                if let Some(lock) = self.locks.remove(&(meta, module, connector)) {
                    self.robot.unlock(lock)?;
                }
                self.observe_for(OBSERVATION, &mut report);
            }
            Command::Step { milliseconds } => {
                self.observe_for(milliseconds as f64 / 1e3, &mut report);
            }
            Command::DropBox { .. } | Command::Terminal | Command::File => {}
        }
        report.seconds = self.clock - start;
        report.plan_error = self.plan_error(meta);
        Ok(report)
    }

    /// How far, in the simulation, connector `connector` of module
    /// `module` of meta-module `meta` is from the floor connector `plan`
    /// locks it onto (m).
    fn gap_to_lock(&self, meta: usize, plan: &Stage, module: u8, connector: Connector) -> f64 {
        let frame = plan.modules()[usize::from(module)].connector(connector);
        let real = self
            .robot
            .connector(2 * meta + usize::from(module), connector);
        (real.translation.vector - floor_under(&frame).translation.vector).norm()
    }

    /// How far meta-module `meta`'s free end is, in the simulation, from
    /// the connector it faces on its plan (m): beyond [`LOCK_REACH`] it
    /// cannot lock there. `None` when it faces none.
    #[must_use]
    pub fn gap_ahead(&self, meta: usize) -> Option<f64> {
        let plan = &self.stages[meta];
        let (module, connector) = plan.free_end_lockable_at(plan.angles())?;
        Some(self.gap_to_lock(meta, plan, module, connector))
    }

    /// Every servo holds the angle it is at.
    fn hold(&mut self) {
        for m in 0..self.robot.module_count() {
            for j in 0..3 {
                let (angle, _) = self.robot.joint(m, j);
                self.robot.command(m, j, angle, 0.0);
            }
        }
    }

    fn run_for(&mut self, seconds: f64) {
        let steps = (seconds / self.settings.dt).round() as usize;
        for _ in 0..steps {
            self.robot.step();
        }
        self.clock += steps as f64 * self.settings.dt;
    }

    /// Runs `seconds`, noting overlaps and lock gaps every observation.
    fn observe_for(&mut self, seconds: f64, report: &mut EnactmentReport) {
        let mut left = seconds;
        while left > 1e-9 {
            let chunk = left.min(OBSERVATION);
            self.run_for(chunk);
            left -= chunk;
            self.note(report);
        }
    }

    fn note(&self, report: &mut EnactmentReport) {
        let poses = self.robot.module_poses();
        if poses
            .chunks(2)
            .any(|meta| collision::self_collision(meta).is_some())
        {
            report.overlaps += 1;
        }
        let (collided, depth) = self.meeting(&poses);
        report.collisions += usize::from(collided);
        report.overlap_depth = report.overlap_depth.max(depth);
        report.lock_gap = report.lock_gap.max(self.worst_lock_gap());
    }

    /// How meta-modules meet each other and the structure (fixed cells and
    /// the meta-modules that settled, as each plan sees it): whether a cube
    /// centre lies in a cell another meta-module's cube or the structure
    /// holds (the grid's own rule, 003 §2.4.4), and how deep, at worst, a
    /// cube's body runs into another meta-module's or a structure cell (m).
    /// Cubes locked face to face, or resting on the structure, touch at 0
    /// on the plan; here they overlap by the millimetres the servos sag.
    fn meeting(&self, poses: &[crate::module::ModulePose]) -> (bool, f64) {
        let metas: Vec<&[crate::module::ModulePose]> = poses.chunks(2).collect();
        let cells: Vec<[[i64; 3]; 4]> =
            metas.iter().map(|m| crate::stage::chain_cells(m)).collect();
        let mut collided = false;
        let mut deepest: f64 = 0.0;
        for (i, a) in metas.iter().enumerate() {
            for (j, b) in metas.iter().enumerate().skip(i + 1) {
                collided |= cells[i].iter().any(|c| cells[j].contains(c));
                deepest = deepest.max(collision::chains_depth(a, b));
            }
            for cell in self.stages[i].structure() {
                collided |= cells[i].contains(cell);
                let centre = crate::stage::cell_centre(*cell);
                deepest = deepest.max(collision::cell_depth(a, &centre));
            }
        }
        (collided, deepest)
    }

    fn worst_lock_gap(&self) -> f64 {
        self.locks
            .values()
            .filter_map(|w| self.robot.lock_gap(*w))
            .map(|(d, _)| d)
            .fold(0.0, f64::max)
    }

    /// Drives meta-module `meta`'s joints along `path` (forward chain
    /// order), from the angles they are at: each joint starts from the
    /// turn of the path's angles nearest where it is, and all six pass
    /// each pose of the path together.
    fn drive(&mut self, meta: usize, path: &Path, report: &mut EnactmentReport) {
        let dt = self.settings.dt;
        let first = 2 * meta;
        let now: MetaJoints = std::array::from_fn(|k| self.robot.joint(first + k / 3, k % 3).0);
        let start = path.waypoints[0];
        let shift: MetaJoints =
            std::array::from_fn(|k| now[k] + wrap(start[k] - now[k]) - start[k]);
        let mut poses = vec![now];
        poses.extend(
            path.waypoints[1..]
                .iter()
                .map(|w| std::array::from_fn(|k| w[k] + shift[k])),
        );
        let mut joints: Vec<Profile> = (0..6).map(|k| Profile::through(&poses, k)).collect();
        let mut trials: Vec<BoundingTrial> = joints
            .iter()
            .map(|p| {
                // Less than a fifth of the planned travel per observation is
                // standing still.
                let expected = (p.goal() - p.from()).abs() / p.duration() * OBSERVATION;
                BoundingTrial::new(p.goal(), GOAL_TOLERANCE, (0.2 * expected).max(1e-3))
            })
            .collect();
        let mut done = [false; 6];
        // Every joint was within its tolerance at the last observation: one
        // more, with the chain come to rest, says whether they stay there.
        let mut all_reached_before = false;
        let mut approaches = 0;
        let mut t = 0.0;
        let mut next_look = OBSERVATION;
        while t < COMMAND_TIMEOUT {
            for (k, p) in joints.iter().enumerate() {
                let (angle, velocity) = p.at(t);
                self.robot.command(first + k / 3, k % 3, angle, velocity);
            }
            self.robot.step();
            self.clock += dt;
            t += dt;
            if t + 1e-9 < next_look {
                continue;
            }
            next_look += OBSERVATION;
            self.note(report);
            // A joint still on its way is not judged by the bounding trial:
            // it moves as fast as it was told to.
            for k in 0..6 {
                let (position, _) = self.robot.joint(first + k / 3, k % 3);
                if done[k] && (position - trials[k].goal()).abs() > GOAL_TOLERANCE {
                    // Swung off its goal as the chain came to rest (the
                    // engine's solver can leave it there, the servo
                    // saturated): the goal is sent again, as a supervisor
                    // re-sends a position.
                    approaches += 1;
                    if approaches > MAX_APPROACHES {
                        report.reached = false;
                        self.hold();
                        return;
                    }
                    joints[k] = Profile::at_full_speed(position, trials[k].goal(), t);
                    done[k] = false;
                    all_reached_before = false;
                }
                if done[k] || t < joints[k].end() {
                    continue;
                }
                match trials[k].observe(position) {
                    Verdict::Reached => done[k] = true,
                    Verdict::Moving { goal } => {
                        if goal != joints[k].goal() {
                            // Round the other way, at full speed.
                            report.retargets += 1;
                            joints[k] = Profile::at_full_speed(position, goal, t);
                        }
                    }
                    Verdict::Stuck { .. } => {
                        report.reached = false;
                        self.hold();
                        return;
                    }
                }
            }
            if done.iter().all(|d| *d) {
                if all_reached_before {
                    return;
                }
                all_reached_before = true;
            }
        }
        report.reached = false;
        self.hold();
    }

    /// Meta-module `meta`'s plan sees the others where they stand now
    /// (as before each of its commands).
    pub fn look_around(&mut self, meta: usize) {
        crate::stage::see_others(&mut self.stages, meta);
    }

    /// Meta-module `meta` settles into the structure (it filled its place
    /// in a self-reconfiguration): the others may lock onto its cubes'
    /// faces from now on.
    pub fn settle(&mut self, meta: usize) {
        let cells = self.stages[meta].cells();
        for (i, stage) in self.stages.iter_mut().enumerate() {
            if i != meta {
                stage.add_structure(cells);
            }
        }
    }

    /// The farthest any connector of meta-module `meta` in the simulation
    /// is from where its plan puts it (m).
    #[must_use]
    pub fn plan_error(&self, meta: usize) -> f64 {
        let planned = self.stages[meta].modules();
        let mut worst: f64 = 0.0;
        for (m, module) in planned.iter().enumerate() {
            for c in Connector::ALL {
                let sim = self.robot.connector(2 * meta + m, c).translation.vector;
                worst = worst.max((sim - module.connector(c).translation.vector).norm());
            }
        }
        worst
    }

    /// The first meta-module's cube cells as the simulation has them
    /// (centres rounded to the grid), in chain order.
    #[must_use]
    pub fn cells(&self) -> [[i64; 3]; 4] {
        self.cells_of(0)
    }

    /// Meta-module `meta`'s cube cells as the simulation has them.
    #[must_use]
    pub fn cells_of(&self, meta: usize) -> [[i64; 3]; 4] {
        crate::stage::chain_cells(&self.robot.module_poses()[2 * meta..2 * meta + 2])
    }
}

/// A joint's commanded angle over time: straight runs between knots
/// (time, angle), held at the last.
#[derive(Debug, Clone)]
struct Profile {
    knots: Vec<(f64, f64)>,
}

impl Profile {
    /// Joint `k`'s run through `poses` from time 0, each run taking as
    /// long as the joint that turns furthest in it needs at full speed
    /// (so all six pass each pose together), and the whole at least one
    /// observation.
    fn through(poses: &[MetaJoints], k: usize) -> Self {
        let mut t = 0.0;
        let mut knots = vec![(0.0, poses[0][k])];
        for pair in poses.windows(2) {
            let widest = (0..6).fold(0.0_f64, |m, j| m.max((pair[1][j] - pair[0][j]).abs()));
            t += widest / MAX_SPEED;
            knots.push((t, pair[1][k]));
        }
        if t < OBSERVATION {
            let last = knots.len() - 1;
            knots[last].0 = OBSERVATION;
        }
        Profile { knots }
    }

    /// From `from` to `goal` as fast as a joint turns, started at `start`
    /// (a joint sent round the other way, or sent its goal again).
    fn at_full_speed(from: f64, goal: f64, start: f64) -> Self {
        let duration = ((goal - from).abs() / MAX_SPEED).max(OBSERVATION);
        Profile {
            knots: vec![(start, from), (start + duration, goal)],
        }
    }

    fn from(&self) -> f64 {
        self.knots[0].1
    }

    fn goal(&self) -> f64 {
        self.knots[self.knots.len() - 1].1
    }

    /// When the run ends (s).
    fn end(&self) -> f64 {
        self.knots[self.knots.len() - 1].0
    }

    fn duration(&self) -> f64 {
        self.end() - self.knots[0].0
    }

    /// The commanded angle and rate at time `t`.
    fn at(&self, t: f64) -> (f64, f64) {
        if t < self.knots[0].0 {
            return (self.from(), 0.0);
        }
        match self.knots.windows(2).find(|w| t < w[1].0) {
            Some(w) => {
                let ((t0, a0), (t1, a1)) = (w[0], w[1]);
                let rate = (a1 - a0) / (t1 - t0);
                (a0 + rate * (t - t0), rate)
            }
            None => (self.goal(), 0.0),
        }
    }
}

/// The connector of the surface (floor or structure) a connector faces:
/// the centre of the solid cell's face, `Z` out of the solid, its `X`
/// along a grid axis.
fn floor_under(connector: &Isometry3<f64>) -> Isometry3<f64> {
    use nalgebra::{Matrix3, Rotation3, UnitQuaternion, Vector3};
    let into = (connector.rotation * Vector3::z()).map(f64::round);
    let inside = connector.translation.vector + into * crate::module::HALF;
    let solid = crate::stage::cell_centre(crate::stage::cell_of(&inside));
    let z = -into;
    let x = if z.x.abs() > 0.5 {
        Vector3::y()
    } else {
        Vector3::x()
    };
    let y = z.cross(&x);
    Isometry3::from_parts(
        (solid + z * crate::module::HALF).into(),
        UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(
            Matrix3::from_columns(&[x, y, z]),
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::module::Connector;
    use crate::supervisor::parse;

    /// Two meta-modules standing face to face on neighbouring cells touch
    /// (the servos' sag aside) and collide with nothing; two standing in
    /// the same cells collide by the grid's rule and overlap by a cube.
    #[test]
    fn meta_modules_meeting_are_told_from_meta_modules_touching() {
        let wait = Command::Step { milliseconds: 300 };
        let pair = |x: i64| {
            let mut troupe = Enactment::troupe(vec![
                Stage::standing_on(ConnectionType::ShearS, 0, 0),
                Stage::standing_on(ConnectionType::ShearS, x, 0),
            ])
            .unwrap();
            troupe.apply_to(0, &wait).unwrap()
        };
        let touching = pair(1);
        assert_eq!(touching.collisions, 0, "{touching:?}");
        assert!(touching.overlap_depth < 0.005, "{touching:?}");
        let meeting = pair(0);
        assert_eq!(meeting.collisions, 3, "{meeting:?}");
        assert!(meeting.overlap_depth > 0.05, "{meeting:?}");
    }

    /// A move whose straight line runs the cubes through each other or
    /// the floor goes around in the simulation too: it arrives, and its
    /// cubes do not meet on the way.
    #[test]
    fn a_move_goes_the_way_around_the_plan_found_and_its_cubes_do_not_meet() {
        let stage = Stage::new(ConnectionType::ShearS);
        let start = stage.angles();
        let goal = crate::ik::lattice()
            .into_iter()
            .find(|q| {
                let mut s = stage.clone();
                let reached = s
                    .apply(&Command::Move {
                        end: crate::supervisor::End::Forward,
                        angles: *q,
                    })
                    .is_ok();
                let blocked = (1..20).any(|i| {
                    let p: MetaJoints = std::array::from_fn(|k| {
                        start[k] + wrap(q[k] - start[k]) * f64::from(i) / 20.0
                    });
                    !stage.free_at(p, Clearance::Everything)
                });
                reached && blocked
            })
            .expect("a lattice pose whose straight line is blocked");
        let mut enactment = Enactment::new(ConnectionType::ShearS).unwrap();
        let report = enactment
            .apply(&Command::Move {
                end: crate::supervisor::End::Forward,
                angles: goal,
            })
            .unwrap();
        assert!(report.reached, "{report:?}");
        let way = report.way.expect("a move has a way");
        assert_eq!(way.clearance, Clearance::Everything, "{report:?}");
        assert!(way.waypoints > 0, "{report:?}");
        assert_eq!(report.overlaps, 0, "{report:?}");
        assert!(report.plan_error < 0.01, "{report:?}");
    }

    #[test]
    fn a_lock_where_the_simulated_connector_is_not_is_refused_and_changes_nothing() {
        let mut enactment = Enactment::new(ConnectionType::Parallel).unwrap();
        let lock = Command::Lock {
            module: 1,
            connector: Connector::C3X,
        };
        // Standing, the plan itself refuses: nothing under the connector.
        assert!(
            enactment
                .apply(&lock)
                .unwrap_err()
                .to_string()
                .contains("nothing to lock")
        );
        // The plan reaches the floor, the simulation does not follow (as
        // after a move that got stuck): the lock would yank the module.
        let reach = parse("reachfw 0 -3 0 1 0 0 1").unwrap().remove(0);
        enactment.stages[0].apply(&reach).unwrap();
        let locks = enactment.stages[0].locks().clone();
        let refused = enactment.apply(&lock).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("from the floor connector in the simulation"),
            "{refused}"
        );
        assert_eq!(enactment.stages[0].locks(), &locks, "the plan is unchanged");
        assert_eq!(enactment.locks.len(), 1, "no weld was added");
    }

    /// What the replay asks before locking: standing, the free end faces
    /// nothing; planned onto the floor but not driven there, it is out of
    /// a latch's reach; driven there, within it.
    #[test]
    fn the_gap_ahead_says_whether_the_free_end_is_within_a_latch_of_its_connector() {
        let mut enactment = Enactment::new(ConnectionType::Parallel).unwrap();
        assert_eq!(enactment.gap_ahead(0), None);
        let reach = parse("reachfw 0 -3 0 1 0 0 1").unwrap().remove(0);
        let driven = enactment.apply(&reach).unwrap();
        assert!(driven.reached, "{driven:?}");
        let within = enactment
            .gap_ahead(0)
            .expect("the free end faces the floor");
        assert!(within < LOCK_REACH, "{within}");
        // The plan alone reaches the floor, the simulated module stands.
        let standing = Enactment::new(ConnectionType::Parallel).unwrap();
        let mut plan = standing.stages[0].clone();
        plan.apply(&reach).unwrap();
        let mut not_driven = standing;
        not_driven.stages[0] = plan;
        let out = not_driven
            .gap_ahead(0)
            .expect("the plan's free end faces the floor");
        assert!(out > LOCK_REACH, "{out}");
    }
}
