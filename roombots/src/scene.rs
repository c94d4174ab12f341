//! Scenes of several modules in one simulated world, and of a
//! meta-module climbing a passive structure (the chair, at the end).
//!
//! The acrobat (002 §5.3.2: "three roombots … reconfiguring and exchanging
//! modules"): a meta-module (modules 0 and 1) stands on the floor beside a
//! lone module 2. The meta-module bends its free end down onto module 2's
//! top, locks it there, and lets go of its own first module: module 1 now
//! belongs to module 2, and the new pair stands up straight as a tower of
//! four cubes, while module 0 stays where it stood. Every lock is the
//! engine's (welds onto the floor; submodules of locked modules one body,
//! the ring the robot closes on the way a loop hinge), every move is the
//! servos' and the inverse kinematics is ours.

use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};

use crate::chain::{ConnectionType, MetaModule, Tree, joined};
use crate::collision::submodules_overlap;
use crate::ik::{MetaJoints, Solver};
use crate::module::{CELL, Connector, Joints, MIDDLE_STEP, ModulePose, OUTER_STEP};
use crate::physics::{MAX_SPEED, Robot, RobotSettings};

/// What the acrobat did.
#[derive(Debug, Clone, PartialEq)]
pub struct AcrobatReport {
    pub connection: ConnectionType,
    /// The cell (x, y) module 2 stood on.
    pub partner: [i64; 2],
    /// How far the meta-module's end stopped from module 2's top before
    /// locking (m).
    pub reach_error: f64,
    /// How far the locks gave at worst while modules 0 and 2 both held the
    /// meta-module (a ring closed through the floor) (m).
    pub lock_gap: f64,
    /// Every module's cube cells at the end, module by module.
    pub cells: Vec<[[i64; 3]; 2]>,
    /// Simulated time (s).
    pub seconds: f64,
    /// The modules at the start, reached, and at the end: for a picture.
    pub moments: Vec<Vec<ModulePose>>,
}

/// Runs `seconds` with every servo told to hold `goal`, reached along a
/// straight line in joint space at most [`MAX_SPEED`].
fn drive(robot: &mut Robot, goal: &[Joints], settings: &RobotSettings, clock: &mut f64) {
    let start = robot.angles();
    let travel = start
        .iter()
        .flatten()
        .zip(goal.iter().flatten())
        .map(|(a, b)| (b - a).abs())
        .fold(0.0, f64::max);
    let duration = (travel / MAX_SPEED).max(0.1);
    let steps = ((duration + 1.0) / settings.dt).round() as usize;
    for step in 0..steps {
        let s = ((step as f64 * settings.dt) / duration).min(1.0);
        let rate = if s < 1.0 { 1.0 / duration } else { 0.0 };
        for (m, (from, to)) in start.iter().zip(goal).enumerate() {
            for j in 0..3 {
                let d = to[j] - from[j];
                robot.command(m, j, from[j] + d * s, d * rate);
            }
        }
        robot.step();
    }
    *clock += steps as f64 * settings.dt;
}

/// The acrobat for one connection type; `None` when the meta-module can
/// reach no top of a lone module within three cells free of collision.
#[must_use]
pub fn acrobat(connection: ConnectionType) -> Option<AcrobatReport> {
    let settings = RobotSettings::default();
    let meta = MetaModule::new(connection);
    let base = crate::stage::standing(0, 0);
    let mut solver = Solver::new(meta);
    solver.floor = Some(base.inverse());
    // Where module 2 may stand, nearest first, and the reach that lands on
    // its top.
    let cells = [
        [0, 1],
        [1, 0],
        [0, -1],
        [-1, 0],
        [0, 2],
        [2, 0],
        [1, 1],
        [0, 3],
    ];
    let (partner, q) = cells.iter().find_map(|&[x, y]| {
        let lone_tree = Tree {
            root_submodule: 0,
            root_pose: crate::stage::standing(x, y),
            links: Vec::new(),
        };
        let lone = lone_tree.poses(&[[0.0; 3]])[0];
        (0..4).find_map(|k| {
            let target = base.inverse() * joined(&lone.connector(Connector::C3X), k);
            let q = solver.solve(&target, [0.0; 6]).ok()?.q;
            // The locked end sits on the lone module's top cube: compare
            // every cube but that pair.
            touches_only_on_top(&meta, q, &base, &lone).then_some(([x, y], q))
        })
    })?;
    let mut meta_tree = meta.tree();
    meta_tree.root_pose = base;
    let lone_tree = Tree {
        root_submodule: 0,
        root_pose: crate::stage::standing(partner[0], partner[1]),
        links: Vec::new(),
    };
    let (mut robot, links) = Robot::build_forest(
        &[
            (meta_tree, vec![[0.0; 3], [0.0; 3]]),
            (lone_tree, vec![[0.0; 3]]),
        ],
        &settings,
    )
    .ok()?;
    let floor = |x: i64, y: i64| Isometry3::translation(x as f64 * CELL, y as f64 * CELL, 0.0);
    robot.lock_to_floor(0, Connector::C0X, &floor(0, 0)).ok()?;
    robot
        .lock_to_floor(2, Connector::C0X, &floor(partner[0], partner[1]))
        .ok()?;
    let mut clock = 0.0;
    let mut moments = vec![robot.module_poses()];
    let settle = robot.angles();
    drive(&mut robot, &settle, &settings, &mut clock);
    // The meta-module bends its end onto module 2's top.
    let goal = vec![[q[0], q[1], q[2]], [q[3], q[4], q[5]], [0.0; 3]];
    drive(&mut robot, &goal, &settings, &mut clock);
    let end = robot.connector(1, Connector::C3X);
    let top = joined(&robot.connector(2, Connector::C3X), 0);
    let reach_error = (end.translation.vector - top.translation.vector).norm();
    robot
        .lock_modules(1, Connector::C3X, 2, Connector::C3X)
        .ok()?;
    moments.push(robot.module_poses());
    let mut lock_gap: f64 = 0.0;
    for _ in 0..120 {
        robot.step();
        lock_gap = lock_gap.max(robot.worst_lock_gap()).max(robot.loop_gap());
    }
    clock += 120.0 * settings.dt;
    // Module 0 lets go of module 1: the pair 2–1 stands up straight.
    robot.unlock(links[0]).ok()?;
    let held = robot.angles();
    let straight = vec![held[0], [0.0; 3], [0.0; 3]];
    drive(&mut robot, &straight, &settings, &mut clock);
    moments.push(robot.module_poses());
    let cells = crate::stage::module_cells(&robot.module_poses());
    Some(AcrobatReport {
        connection,
        partner,
        reach_error,
        lock_gap,
        cells,
        seconds: clock,
        moments,
    })
}

/// Whether the only overlap between the meta-module and the lone module
/// is the end cube on the top cube, which meet face to face.
fn touches_only_on_top(
    meta: &MetaModule,
    q: MetaJoints,
    base: &Isometry3<f64>,
    lone: &ModulePose,
) -> bool {
    let poses = meta.poses(q);
    let mut clash = false;
    for (m, module) in poses.iter().enumerate() {
        for (s, a) in module.middles.iter().enumerate() {
            let a = base * a;
            for (t, b) in lone.middles.iter().enumerate() {
                let end_on_top = m == 1 && s >= 2 && t >= 2;
                if !end_on_top && submodules_overlap(&a, b) {
                    clash = true;
                }
            }
        }
    }
    !clash
}

/// A command as a line of the supervisor language (002 App. B).
#[must_use]
pub fn command_line(command: &crate::supervisor::Command) -> String {
    use crate::supervisor::{Command, End};
    let end = |e: End| match e {
        End::Forward => "fw",
        End::Backward => "bw",
    };
    match command {
        Command::Reach { end: e, target } => {
            let mut d = [0i32; 3];
            d[usize::from(target.direction.axis)] = if target.direction.positive { 1 } else { -1 };
            let c = target.cell;
            format!(
                "reach{} {} {} {} {} {} {} {}",
                end(*e),
                c[0],
                c[1],
                c[2],
                d[0],
                d[1],
                d[2],
                target.orientation
            )
        }
        Command::Lock { module, connector } => format!("lock {module} {connector}"),
        Command::Unlock { module, connector } => format!("unlock {module} {connector}"),
        Command::Step { milliseconds } => format!("step {milliseconds}"),
        Command::Move { end: e, angles } => {
            // In the language's units: outer joints in thirds of a turn,
            // middle ones in quarters.
            let units: Vec<f64> = angles
                .iter()
                .enumerate()
                .map(|(k, a)| a / if k % 3 == 1 { MIDDLE_STEP } else { OUTER_STEP })
                .collect();
            if units.iter().all(|u| (u - u.round()).abs() < 1e-9) {
                let units: Vec<String> = units
                    .iter()
                    .map(|u| format!("{}", u.round() as i64))
                    .collect();
                format!("move{} {}", end(*e), units.join(" "))
            } else {
                format!("# move{} {angles:?} (not in whole units)", end(*e))
            }
        }
        other => format!("# {other:?}"),
    }
}

/// Inchworm steps that carry the meta-module of `stage` over the floor
/// and its structure until an end stands on cell `goal` (an empty cell
/// with a solid one under it). Each step reaches an empty cell beside a
/// solid one, nearer the goal than the holding end, that the inverse
/// kinematics reaches free of the floor, the structure and itself, locks
/// there and lets go of the other end. The nearest such cell is tried
/// first, then the next [`BRANCHES`] − 1 (a depth-first search that backs
/// out of dead ends). `None` when no plan of at most `max_steps` steps
/// exists among those tried.
#[must_use]
pub fn plan_climb(
    stage: &crate::stage::Stage,
    goal: [i64; 3],
    max_steps: usize,
) -> Option<Vec<crate::supervisor::Command>> {
    if held_cell(stage) == goal {
        return Some(Vec::new());
    }
    if max_steps == 0 {
        return None;
    }
    for (step, next) in climb_steps(stage, goal) {
        if let Some(rest) = plan_climb(&next, goal, max_steps - 1) {
            let mut plan = step;
            plan.extend(rest);
            return Some(plan);
        }
    }
    None
}

/// Steps tried from each pose of [`plan_climb`]: the nearest cells first.
pub const BRANCHES: usize = 3;

/// The cell of the cube that holds the meta-module.
fn held_cell(stage: &crate::stage::Stage) -> [i64; 3] {
    let modules = stage.modules();
    let frame = match stage.held_by() {
        crate::supervisor::End::Forward => modules[0].middles[0],
        crate::supervisor::End::Backward => modules[1].middles[3],
    };
    crate::stage::cell_of(&frame.translation.vector)
}

/// Up to [`BRANCHES`] inchworm steps nearer `goal`, from distinct cells,
/// nearest first, each with the stage it leaves.
fn climb_steps(
    stage: &crate::stage::Stage,
    goal: [i64; 3],
) -> Vec<(Vec<crate::supervisor::Command>, crate::stage::Stage)> {
    use crate::reach::{Direction, GridTarget};
    use crate::stage::cell_centre;
    use crate::supervisor::{Command, End};
    let distance = |c: [i64; 3]| {
        let d = [c[0] - goal[0], c[1] - goal[1], c[2] - goal[2]];
        ((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) as f64).sqrt()
    };
    let modules = stage.modules();
    let (held_frame, held_end, free_end) = match stage.held_by() {
        End::Forward => (
            modules[0].middles[0],
            (0, Connector::C0X),
            (1, Connector::C3X),
        ),
        End::Backward => (
            modules[1].middles[3],
            (1, Connector::C3X),
            (0, Connector::C0X),
        ),
    };
    let held = held_cell(stage);
    let mut cells: Vec<[i64; 3]> = Vec::new();
    for dx in -3..=3i64 {
        for dy in -3..=3i64 {
            for dz in -3..=3i64 {
                let cell = [held[0] + dx, held[1] + dy, held[2] + dz];
                if !stage.taken(cell) && distance(cell) < distance(held) {
                    cells.push(cell);
                }
            }
        }
    }
    cells.sort_by(|a, b| distance(*a).total_cmp(&distance(*b)).then(a.cmp(b)));
    let mut found = Vec::new();
    'cells: for cell in cells {
        for direction in Direction::ALL {
            let mut under = cell;
            under[usize::from(direction.axis)] += if direction.positive { 1 } else { -1 };
            if !stage.solid(under) {
                continue;
            }
            for k in 0..4u8 {
                let turn = UnitQuaternion::from_axis_angle(
                    &Vector3::z_axis(),
                    f64::from(k) * std::f64::consts::FRAC_PI_2,
                );
                let world = Translation3::from(cell_centre(cell))
                    * direction.face_frame()
                    * Isometry3::from_parts(Default::default(), turn);
                let Some(target) = GridTarget::of_frame(&(held_frame.inverse() * world)) else {
                    continue;
                };
                let step = vec![
                    Command::Reach {
                        end: stage.held_by(),
                        target,
                    },
                    Command::Lock {
                        module: free_end.0,
                        connector: free_end.1,
                    },
                    Command::Unlock {
                        module: held_end.0,
                        connector: held_end.1,
                    },
                ];
                let mut trial = stage.clone();
                if step.iter().all(|c| trial.apply(c).is_ok()) {
                    found.push((step, trial));
                    if found.len() == BRANCHES {
                        return found;
                    }
                    continue 'cells;
                }
            }
        }
    }
    found
}

/// The stool of the chair scene: a block of 2 × 2 × 2 passive cells two
/// cells ahead of where the meta-module stands.
pub const STOOL: [[i64; 3]; 8] = [
    [2, 0, 0],
    [3, 0, 0],
    [2, 1, 0],
    [3, 1, 0],
    [2, 0, 1],
    [3, 0, 1],
    [2, 1, 1],
    [3, 1, 1],
];

/// The chair's two meta-modules (002 §5.4), in the order they climb:
/// the floor cell each starts standing on, and the cell it ends standing
/// on, side by side on the stool's back edge, as the chair's back.
pub const CHAIR_CLIMBERS: [((i64, i64), [i64; 3]); 2] = [((0, 1), [3, 1, 2]), ((0, 0), [3, 0, 2])];

/// What the chair scene did.
#[derive(Debug, Clone)]
pub struct ChairReport {
    pub connection: ConnectionType,
    /// Each meta-module's plan as supervisor lines (002 App. B), in the
    /// order they climb: the seed's two command files.
    pub lines: Vec<Vec<String>>,
    /// Each command's account, planned and simulated, per meta-module.
    pub reports: Vec<Vec<crate::enactment::EnactmentReport>>,
    /// Each meta-module's cubes at the end, in chain order.
    pub cells: Vec<[[i64; 3]; 4]>,
    /// How far each meta-module's connectors end from its plan (m): the
    /// standing column sags under its own weight.
    pub plan_errors: Vec<f64>,
    pub seconds: f64,
    /// The start, after every reach, and standing at the end.
    pub moments: Vec<Vec<ModulePose>>,
}

/// Both meta-modules of the chair standing on their floor cells beside
/// the stool.
#[must_use]
pub fn chair_stages(connection: ConnectionType) -> Vec<crate::stage::Stage> {
    CHAIR_CLIMBERS
        .iter()
        .map(|((x, y), _)| {
            crate::stage::Stage::standing_on(connection, *x, *y).with_structure(STOOL)
        })
        .collect()
}

/// The chair's plans, one per meta-module: each climbs while the others
/// stand, the earlier ones where their plans left them, and ends standing
/// up straight. `None` when the planner finds no way for one of them.
#[must_use]
pub fn chair_plans(connection: ConnectionType) -> Option<Vec<Vec<crate::supervisor::Command>>> {
    use crate::supervisor::Command;
    let mut stages = chair_stages(connection);
    let mut plans = Vec::new();
    for (i, (_, goal)) in CHAIR_CLIMBERS.iter().enumerate() {
        crate::stage::see_others(&mut stages, i);
        let mut plan = plan_climb(&stages[i], *goal, 8)?;
        for c in &plan {
            stages[i].apply(c).ok()?;
        }
        let stand = Command::Move {
            end: stages[i].held_by(),
            angles: [0.0; 6],
        };
        stages[i].apply(&stand).ok()?;
        plan.push(stand);
        plans.push(plan);
    }
    Some(plans)
}

/// 002 §5.4's chair: two meta-modules start on the floor beside a stool;
/// one after the other climbs the stool's side (a concave edge, floor to
/// wall) and over its top edge (a convex one) to stand upright on its
/// back edge, the two side by side forming the chair's back. Planned by
/// [`plan_climb`], enacted in one simulated world. `None` when the planner
/// finds no way.
#[must_use]
pub fn chair(connection: ConnectionType) -> Option<ChairReport> {
    use crate::enactment::Enactment;
    use crate::supervisor::Command;
    let plans = chair_plans(connection)?;
    let mut enactment = Enactment::troupe(chair_stages(connection)).ok()?;
    let mut moments = vec![enactment.robot().module_poses()];
    let mut reports = Vec::new();
    for (meta, plan) in plans.iter().enumerate() {
        let mut done = Vec::new();
        for command in plan {
            let report = enactment.apply_to(meta, command).ok()?;
            if matches!(command, Command::Reach { .. } | Command::Move { .. }) {
                moments.push(enactment.robot().module_poses());
            }
            done.push(report);
        }
        reports.push(done);
    }
    Some(ChairReport {
        connection,
        lines: plans
            .iter()
            .map(|p| p.iter().map(command_line).collect())
            .collect(),
        reports,
        cells: (0..plans.len()).map(|m| enactment.cells_of(m)).collect(),
        plan_errors: (0..plans.len()).map(|m| enactment.plan_error(m)).collect(),
        seconds: enactment.clock(),
        moments,
    })
}
