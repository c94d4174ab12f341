//! A plan replayed in the physics simulation of the module
//! (`yamor_roombots::enactment`), not only on the grid: every meta-module
//! stands where the plan starts it, locked onto the floor; each move
//! drives its six servos to the pose whose cubes are the plan's cells
//! (through the intermediate poses the plan passed), then the free end's
//! active connector locks onto the floor or structure connector it faces
//! and the held end lets go (the inchworm step); a meta-module that fills
//! its place settles into the structure, and the others may lock onto it.
//!
//! The pose of a set of cells is found among the servos' lattice angles
//! (003 §2.4) in the meta-module's own simulated frame, so the grid's and
//! the engine's conventions cannot drift apart: a plan whose cells no pose
//! gives is refused at that move. What the replay measures is what the
//! grid cannot see: whether the servos can drive each way (a stalled
//! meta-module goes back and takes another pose with the same cells), how
//! far the locks give while the others move, and whether the simulated
//! meta-modules end on the plan's cells. Locks onto the structure are welds to the ground there
//! (the structure does not move). The engine lets cubes pass through each
//! other, so meetings are measured, not prevented: how often a cube's
//! centre lies in a cell another meta-module or the structure holds (the
//! grid's own rule), and how deep a cube's body runs into them.

use std::collections::BTreeMap;

use yamor_roombots::chain::ConnectionType;
use yamor_roombots::enactment::{Enactment, EnactmentReport};
use yamor_roombots::ik::MetaJoints;
use yamor_roombots::path::PathPlanner;
use yamor_roombots::stage::{Clearance, Stage};
use yamor_roombots::supervisor::{Command, End};

use crate::grid::Cell;
use crate::plan::Plan;

/// What the simulation made of a plan.
#[derive(Debug, Clone, Default)]
pub struct Replayed {
    pub moves: usize,
    /// Supervisor commands enacted (moves, locks, unlocks).
    pub commands: usize,
    /// How far any lock gave at worst (m).
    pub lock_gap: f64,
    /// Moves on which the simulated meta-module stalled, or its free end
    /// came to rest out of its connector's reach (and went back and took
    /// another pose with the same cells).
    pub retried: usize,
    /// How far a moved meta-module's connectors ended from the plan's
    /// poses, at worst (m).
    pub plan_error: f64,
    /// Simulated seconds.
    pub seconds: f64,
    /// Every meta-module ended on the plan's last cells.
    pub ends_on_plan: bool,
    /// How deep, at worst, a cube ran into another meta-module's cube or
    /// a structure cell (m): meta-modules meeting on the way, or cubes
    /// touching face to face overlapping by the millimetres the servos
    /// sag.
    pub overlap_depth: f64,
    /// Observations (every 0.1 s) at which a cube's centre lay in a cell
    /// another meta-module's cube or the structure held: a collision by
    /// the grid's own rule.
    pub collisions: usize,
    /// Drives (a move of the grid is one or more, through its
    /// intermediate configurations, and a stall adds the way back).
    pub drives: usize,
    /// Drives whose way through joint space was found clear of
    /// everything: the floor, the structure, the other meta-modules and
    /// itself.
    pub clear: usize,
    /// Drives whose way was found clear of everything but for a turning
    /// half's rim entering the structure or another meta-module
    /// ([`yamor_roombots::stage::RIM`]).
    pub rims: usize,
    /// Drives whose way was found clear of the floor only (what the
    /// engine's bodies touch).
    pub floor_only: usize,
    /// Drives that went around rather than straight through joint space.
    pub detours: usize,
    /// Moves whose free end came to rest beyond a lock's reach of its
    /// connector, driven back and done through another pose (counted in
    /// `retried` too).
    pub missed: usize,
}

/// Why a plan was not replayed to its end.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(
        "meta-module {0} does not start standing upright on the floor (the replay stands them so)"
    )]
    NotUpright(u32),
    #[error("move {step}: no pose of meta-module {id} held as it is puts its cubes on {cells:?}")]
    NoPose {
        step: usize,
        id: u32,
        cells: [Cell; 4],
    },
    #[error(
        "move {step}: no way clear of the floor takes meta-module {id} from where it stands to a \
         pose on {cells:?}"
    )]
    NoWay {
        step: usize,
        id: u32,
        cells: [Cell; 4],
    },
    #[error("move {step} (meta-module {id}): {why}")]
    Refused { step: usize, id: u32, why: String },
    #[error("the simulation: {0}")]
    Physics(String),
}

fn sorted(cells: &[[i64; 3]; 4]) -> [[i64; 3]; 4] {
    let mut c = *cells;
    c.sort_unstable();
    c
}

fn wide(cells: &[Cell; 4]) -> [[i64; 3]; 4] {
    cells.map(|c| c.map(i64::from))
}

/// The lattice poses of `stage`'s meta-module (held as it is) with its
/// cubes on `cells`; with `to_lock`, only those whose free end faces a
/// connector it can lock onto.
fn poses_for(
    stage: &Stage,
    lattice: &[MetaJoints],
    cells: &[Cell; 4],
    to_lock: bool,
) -> Vec<MetaJoints> {
    let want = sorted(&wide(cells));
    lattice
        .iter()
        .filter(|q| sorted(&stage.cells_at(**q)) == want)
        .filter(|q| !to_lock || stage.free_end_lockable_at(**q).is_some())
        .copied()
        .collect()
}

/// A move of the whole meta-module to angles `q` (forward chain order).
fn drive(q: MetaJoints) -> Command {
    Command::Move {
        end: End::Forward,
        angles: q,
    }
}

/// The inchworm step's hand-over from where `stage` stands: the free end
/// locks onto the connector it faces, then the held end lets go.
fn hand_over(stage: &Stage) -> [Command; 2] {
    let (module, connector) = stage
        .free_end_lockable_at(stage.angles())
        .expect("the pose was chosen to lock");
    let (held_module, held_connector) = stage.held_connector();
    [
        Command::Lock { module, connector },
        Command::Unlock {
            module: held_module,
            connector: held_connector,
        },
    ]
}

/// The meta-modules that start on a place of the target and never move
/// (a structure being taken apart): fixed cells to lock onto and keep
/// clear of, not simulated.
fn standing_structure(plan: &Plan) -> Vec<(u32, [[i64; 3]; 4])> {
    plan.start
        .iter()
        .filter(|(id, cells)| {
            plan.steps.iter().all(|s| s.id != *id)
                && plan
                    .target
                    .iter()
                    .any(|t| crate::grid::cell_set(*t) == crate::grid::cell_set(*cells))
        })
        .map(|(id, cells)| (*id, wide(cells)))
        .collect()
}

/// Meta-module `id` standing upright on the floor where `cells` are.
fn standing(
    connection: ConnectionType,
    id: u32,
    cells: &[Cell; 4],
    turn: u8,
) -> Result<Stage, ReplayError> {
    let [x, y, _] = cells[0];
    let stage = Stage::standing_turned(connection, i64::from(x), i64::from(y), turn);
    if sorted(&stage.cells()) == sorted(&wide(cells)) {
        Ok(stage)
    } else {
        Err(ReplayError::NotUpright(id))
    }
}

/// The poses each move of `plan` drives to (the intermediate ones, then
/// the last), found on kinematic stages standing turned `turn` quarter
/// turns. Several poses put the cubes on the same cells, and the one a
/// step ends in decides how the new held end is turned, so which later
/// shapes exist: each meta-module's moves are searched depth first for
/// poses that carry it through all of them (the database keeps one pose
/// per cells and goal facing; this finds the grid's). Locks onto the
/// structure see every meta-module that filled its place before.
fn choose_poses(
    plan: &Plan,
    connection: ConnectionType,
    turn: u8,
    lattice: &[MetaJoints],
) -> Result<Vec<Vec<MetaJoints>>, ReplayError> {
    let mut chosen = vec![Vec::new(); plan.steps.len()];
    let fixed = standing_structure(plan);
    for (id, cells) in &plan.start {
        if fixed.iter().any(|(f, _)| f == id) {
            continue;
        }
        let moves: Vec<usize> = (0..plan.steps.len())
            .filter(|k| plan.steps[*k].id == *id)
            .collect();
        let mut stage = standing(connection, *id, cells, turn)?;
        stage.add_structure(fixed.iter().flat_map(|(_, c)| *c));
        for (k, stops) in moves
            .iter()
            .zip(search_moves(plan, &moves, lattice, stage, &[])?)
        {
            chosen[*k] = stops;
        }
    }
    Ok(chosen)
}

/// The stops of each of `moves` (one meta-module's, in order) from
/// `stage`, avoiding `banned` poses.
fn search_moves(
    plan: &Plan,
    moves: &[usize],
    lattice: &[MetaJoints],
    stage: Stage,
    banned: &[(usize, MetaJoints)],
) -> Result<Vec<Vec<MetaJoints>>, ReplayError> {
    let settled: Vec<(usize, [[i64; 3]; 4])> = plan
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.filled)
        .map(|(k, s)| (k, wide(&s.to)))
        .collect();
    let mut search = Search {
        plan,
        moves,
        lattice,
        settled: &settled,
        found: Vec::new(),
        deepest: (0, None),
        banned,
        nodes: 0,
    };
    if search.from(0, stage) {
        Ok(search.found)
    } else {
        Err(search.deepest.1.expect("a failed search says why"))
    }
}

/// Whether the meta-module of `stage` can drive from where it stands to
/// `q` by a way clear of the floor (all the simulation's bodies touch):
/// a pose reached only through the floor, or one the meta-module cannot
/// leave (a chain lying flat in a corner), is a dead end of the search.
/// The others are not looked at: they will have moved.
fn way_exists(stage: &Stage, q: MetaJoints) -> bool {
    stage
        .path_clear_of(q, &PathPlanner::default(), Clearance::Floor)
        .clear
}

/// A depth-first search over the poses of one meta-module's moves.
struct Search<'a> {
    plan: &'a Plan,
    /// The meta-module's moves (indexes of the plan's steps).
    moves: &'a [usize],
    lattice: &'a [MetaJoints],
    /// The steps that filled a place, and the cells that became structure.
    settled: &'a [(usize, [[i64; 3]; 4])],
    /// Each move's stops, so far.
    found: Vec<Vec<MetaJoints>>,
    /// The farthest move reached, and why it failed there.
    deepest: (usize, Option<ReplayError>),
    /// Poses the simulated meta-module stalled on the way to, or whose
    /// free end ended out of its connector's reach, by step.
    banned: &'a [(usize, MetaJoints)],
    /// Dead ends met so far; the search gives up after [`SEARCH_BUDGET`].
    nodes: usize,
}

/// Dead ends a search for one meta-module's poses may meet: a move
/// impossible whatever came before would otherwise be tried under every
/// choice before it.
const SEARCH_BUDGET: usize = 10_000;

impl Search<'_> {
    fn fail(&mut self, i: usize, e: ReplayError) -> bool {
        self.nodes += 1;
        if i >= self.deepest.0 {
            self.deepest = (i, Some(e));
        }
        false
    }

    /// Moves `i..` from `stage`.
    fn from(&mut self, i: usize, mut stage: Stage) -> bool {
        let Some(&k) = self.moves.get(i) else {
            return true;
        };
        if self.nodes >= SEARCH_BUDGET {
            return false;
        }
        let step = &self.plan.steps[k];
        let (number, id) = (k + 1, step.id);
        for (_, cells) in self.settled.iter().filter(|(at, _)| *at < k) {
            stage.add_structure(*cells);
        }
        let mut stops = Vec::new();
        for cells in &step.via {
            // The pose in between does not change which end holds, nor how.
            let poses: Vec<MetaJoints> = poses_for(&stage, self.lattice, cells, false)
                .into_iter()
                .filter(|q| !self.banned.contains(&(k, *q)))
                .collect();
            let Some(q) = poses.iter().copied().find(|q| way_exists(&stage, *q)) else {
                let (step, cells) = (number, *cells);
                return self.fail(
                    i,
                    if poses.is_empty() {
                        ReplayError::NoPose { step, id, cells }
                    } else {
                        ReplayError::NoWay { step, id, cells }
                    },
                );
            };
            if let Err(why) = stage.apply(&drive(q)) {
                return self.fail(
                    i,
                    ReplayError::Refused {
                        step: number,
                        id,
                        why: why.to_string(),
                    },
                );
            }
            stops.push(q);
        }
        let mut candidates = poses_for(&stage, self.lattice, &step.to, !step.filled);
        candidates.retain(|q| !self.banned.contains(&(k, *q)));
        if candidates.is_empty() {
            return self.fail(
                i,
                ReplayError::NoPose {
                    step: number,
                    id,
                    cells: step.to,
                },
            );
        }
        for q in candidates {
            if !way_exists(&stage, q) {
                self.fail(
                    i,
                    ReplayError::NoWay {
                        step: number,
                        id,
                        cells: step.to,
                    },
                );
                continue;
            }
            let mut next = stage.clone();
            let handed = next.apply(&drive(q)).and_then(|moved| {
                if step.filled {
                    return Ok(moved);
                }
                let [lock, unlock] = hand_over(&next);
                next.apply(&lock)?;
                next.apply(&unlock)
            });
            if let Err(why) = handed {
                self.fail(
                    i,
                    ReplayError::Refused {
                        step: number,
                        id,
                        why: why.to_string(),
                    },
                );
                continue;
            }
            let mut these = stops.clone();
            these.push(q);
            self.found.push(these);
            if self.from(i + 1, next) {
                return true;
            }
            self.found.pop();
        }
        false
    }
}

/// Tries of one move that stalled or ended out of reach before the
/// replay gives up.
const MAX_RETRIES: usize = 8;

/// Replays `plan` with meta-modules of `connection` in the simulation.
pub fn replay(plan: &Plan, connection: ConnectionType) -> Result<Replayed, ReplayError> {
    // The servos' lattice angles (003 §2.4), in the order the database
    // visits them: the first pose per cells and facing is the one it kept.
    let lattice = yamor_roombots::ik::lattice();
    // The grid stands every meta-module turned one way about the vertical;
    // the simulation's is the turn in which the plan's poses exist.
    let mut first_error = None;
    let mut found = None;
    for turn in 0..4 {
        match choose_poses(plan, connection, turn, &lattice) {
            Ok(poses) => {
                found = Some((turn, poses));
                break;
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    let Some((turn, mut poses)) = found else {
        return Err(first_error.expect("four turns were tried"));
    };
    let mut index = BTreeMap::new();
    let mut stages = Vec::with_capacity(plan.start.len());
    let fixed = standing_structure(plan);
    for (id, cells) in &plan.start {
        if fixed.iter().any(|(f, _)| f == id) {
            continue;
        }
        index.insert(*id, stages.len());
        let mut stage = standing(connection, *id, cells, turn)?;
        stage.add_structure(fixed.iter().flat_map(|(_, c)| *c));
        stages.push(stage);
    }
    let mut world = Enactment::troupe(stages).map_err(|e| ReplayError::Physics(e.to_string()))?;
    let mut out = Replayed {
        moves: plan.steps.len(),
        ..Replayed::default()
    };
    let note = |r: &EnactmentReport, out: &mut Replayed| {
        out.commands += 1;
        out.lock_gap = out.lock_gap.max(r.lock_gap);
        out.overlap_depth = out.overlap_depth.max(r.overlap_depth);
        out.collisions += r.collisions;
        if let Some(way) = r.way {
            out.drives += 1;
            out.detours += usize::from(way.waypoints > 0);
            match way.clearance {
                Clearance::Everything => out.clear += 1,
                Clearance::Rims => out.rims += 1,
                Clearance::Floor => out.floor_only += 1,
                Clearance::Nothing => {}
            }
        }
        // A move's drives are judged once it is kept (a stalled one, or one
        // whose free end ended out of reach, is redone).
        if r.way.is_none() {
            out.plan_error = out.plan_error.max(r.plan_error);
        }
    };
    let mut banned: Vec<(usize, MetaJoints)> = Vec::new();
    for (k, step) in plan.steps.iter().enumerate() {
        let (number, id) = (k + 1, step.id);
        let meta = index[&id];
        let refused = |why: String| ReplayError::Refused {
            step: number,
            id,
            why,
        };
        loop {
            let before = world.stages()[meta].clone();
            let mut stalled = None;
            let mut off_plan: f64 = 0.0;
            for q in poses[k].clone() {
                let r = world
                    .apply_to(meta, &drive(q))
                    .map_err(|e| refused(e.to_string()))?;
                note(&r, &mut out);
                if !r.reached {
                    stalled = Some(q);
                    break;
                }
                off_plan = off_plan.max(r.plan_error);
            }
            // A free end that came to rest out of its connector's reach (a
            // chain hanging from above lands short, pressed onto the
            // surface) cannot lock: another pose, as after a stall.
            if stalled.is_none()
                && !step.filled
                && world
                    .gap_ahead(meta)
                    .is_some_and(|gap| gap > yamor_roombots::enactment::LOCK_REACH)
            {
                out.missed += 1;
                stalled = poses[k].last().copied();
            }
            let Some(q) = stalled else {
                out.plan_error = out.plan_error.max(off_plan);
                break;
            };
            if banned.iter().filter(|(j, _)| *j == k).count() >= MAX_RETRIES {
                return Err(refused(format!(
                    "the simulated meta-module stalled on the way, or ended out of its connector's reach, {MAX_RETRIES} times"
                )));
            }
            // The simulated meta-module could not drive there (a cube
            // pushing on the floor, the servos stalling): back to where the
            // move began, and another pose with the same cells, the rest of
            // its moves chosen again from there.
            out.retried += 1;
            let r = world
                .apply_to(meta, &drive(before.angles()))
                .map_err(|e| refused(e.to_string()))?;
            note(&r, &mut out);
            if !r.reached {
                return Err(refused(
                    "the simulated meta-module could not finish the move, and stalled on the way back"
                        .into(),
                ));
            }
            banned.push((k, q));
            // The others will have moved by the later moves: the search
            // sees only the floor and the structure, as the first one did.
            let mut before = before;
            before.set_obstacles([]);
            let rest: Vec<usize> = (k..plan.steps.len())
                .filter(|j| plan.steps[*j].id == id)
                .collect();
            let again = search_moves(plan, &rest, &lattice, before, &banned)?;
            for (j, stops) in rest.iter().zip(again) {
                poses[*j] = stops;
            }
        }
        if step.filled {
            world.settle(meta);
            continue;
        }
        for command in hand_over(&world.stages()[meta]) {
            let r = world
                .apply_to(meta, &command)
                .map_err(|e| refused(e.to_string()))?;
            note(&r, &mut out);
        }
    }
    out.seconds = world.clock();
    let end = plan.after(usize::MAX);
    out.ends_on_plan = end
        .iter()
        .filter_map(|(id, cells)| index.get(id).map(|k| (k, cells)))
        .all(|(k, cells)| sorted(&world.cells_of(*k)) == sorted(&wide(cells)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planning::{Planned, Planner, Target, Task};

    /// `target` built by `connection` meta-modules from seed 0's start,
    /// ours.
    fn planned(target: Target, connection: ConnectionType) -> (Task, Planned) {
        let task = Task {
            target,
            connection,
            rule: crate::decentralised::Rule::Reserve,
            look_ahead: true,
            size: 13,
            max_rounds: 2000,
            method: crate::planning::Method::Decentralised,
            from: None,
        };
        let planned = Planner::new(2).plan(&task, 0, &|| false).unwrap();
        assert!(planned.report.built);
        (task, planned)
    }

    /// One of the seed's structures, from `examples/roombots/structures/`.
    fn example(name: &str) -> Target {
        Target::Xml {
            name: name.into(),
            xml: crate::structure::example_xml(name),
        }
    }

    /// The replay of `planned`: it makes every move (else it is an
    /// error), ends on the plan's cells, and every lock stays within a
    /// latch's reach.
    fn replays_holding(task: &Task, planned: &Planned) -> Replayed {
        let replayed = replay(&planned.plan, task.connection).unwrap();
        assert!(replayed.ends_on_plan, "{replayed:?}");
        assert!(
            replayed.lock_gap < yamor_roombots::enactment::LOCK_REACH,
            "{replayed:?}"
        );
        replayed
    }

    /// 003 Fig 1.2: the two legs leave the six-meta-module stool (the four
    /// that stay are fixed cells); every lock holds and the leavers end on
    /// the plan's cells.
    #[test]
    fn the_stool_of_fig_1_2_comes_apart_in_the_simulation() {
        let task = Task {
            target: example("stool-4.xml"),
            from: Some(example("stool-6.xml")),
            method: crate::planning::Method::Central {
                max_expanded: 100_000,
            },
            connection: ConnectionType::ShearS,
            rule: crate::decentralised::Rule::Reserve,
            look_ahead: true,
            size: 13,
            max_rounds: 2000,
        };
        let planned = Planner::new(2).plan(&task, 0, &|| false).unwrap();
        assert!(planned.report.built && !planned.report.moves.is_empty());
        assert_eq!(standing_structure(&planned.plan).len(), 4);
        let replayed = replay(&planned.plan, task.connection).unwrap();
        assert!(replayed.lock_gap < 0.005, "{replayed:?}");
        assert!(replayed.ends_on_plan, "{replayed:?}");
    }

    /// Parallel meta-modules building the seed's four-meta-module stool.
    /// A pose whose only ways go through the floor, or that the
    /// meta-module cannot leave by one, is a dead end of the pose search:
    /// before, move 23 stalled on such a pose and no other was left. The
    /// stool replays to the end with no stall, every lock holding.
    #[test]
    fn a_parallel_stool_replays_to_the_end_its_poses_chosen_with_a_way_to_each() {
        let (task, planned) = planned(example("stool-4.xml"), ConnectionType::Parallel);
        let replayed = replays_holding(&task, &planned);
        assert_eq!(replayed.retried, 0, "{replayed:?}");
    }

    /// Parallel meta-modules building the seed's chair: the last of the
    /// twelve builds to replay to its end (it stopped at move 20, a chain
    /// lying flat in a corner, then at move 34, a free end landing out of
    /// a latch's reach), every lock holding.
    #[test]
    fn a_parallel_chair_replays_to_the_end() {
        let (task, planned) = planned(example("chair-4.xml"), ConnectionType::Parallel);
        replays_holding(&task, &planned);
    }

    /// A goal whose cubes lie in the floor has no way to it; a pose one
    /// joint's small turn away, clear of the floor, has.
    #[test]
    fn a_pose_in_the_floor_has_no_way_and_a_near_free_one_has() {
        let stage = Stage::standing_on(ConnectionType::Parallel, 2, 2);
        let q = stage.angles();
        let mut near = q;
        near[2] += 0.3;
        assert!(stage.free_at(near, Clearance::Floor));
        assert!(way_exists(&stage, near));
        let down = yamor_roombots::ik::lattice()
            .into_iter()
            .find(|p| !stage.free_at(*p, Clearance::Floor))
            .expect("some lattice pose lays the chain through the floor");
        assert!(!way_exists(&stage, down));
    }

    /// Two meta-modules building a platform of two: every move of the
    /// grid's plan is a pose the simulated meta-module takes, every lock
    /// holds, and the simulation ends on the plan's cells.
    #[test]
    fn a_small_build_replays_in_the_simulation_with_the_locks_holding() {
        let (task, planned) = planned(
            Target::Platform { bars: 1, rows: 2 },
            ConnectionType::ShearS,
        );
        let replayed = replay(&planned.plan, task.connection).unwrap();
        // From this start the straight line to the first pose of a move
        // turns a cube resting on the floor, and the servos stalled there
        // (the replay went back and took another pose with the same
        // cells); the way around lifts it first.
        assert_eq!(replayed.retried, 0, "{replayed:?}");
        assert!(replayed.detours > 0, "{replayed:?}");
        assert!(replayed.ends_on_plan, "{replayed:?}");
        assert!(replayed.lock_gap < 0.005, "{replayed:?}");
    }

    /// The seed's chair (four meta-modules, three levels: two legs, a
    /// seat across them, a back) replayed: each meta-module climbs onto
    /// the ones that settled before it, and every lock holds.
    #[test]
    fn the_chair_replays_in_the_simulation_with_the_locks_holding() {
        let (task, planned) = planned(example("chair-4.xml"), ConnectionType::ShearS);
        assert!(
            planned
                .plan
                .steps
                .iter()
                .any(|s| s.to.iter().any(|c| c[2] >= 2)),
            "some meta-module climbs the structure"
        );
        replays_holding(&task, &planned);
    }

    /// Shear Z meta-modules climbing the chair hang a module beside the
    /// one they stand on: a servo swung off its goal as the meta-module
    /// came to rest, and move 15's lock missed by 10.4 mm until the goal
    /// was sent again. The chair replays to the end, every lock holding.
    #[test]
    fn a_shear_z_chair_replays_with_the_locks_holding() {
        let (task, planned) = planned(example("chair-4.xml"), ConnectionType::ShearZ);
        replays_holding(&task, &planned);
    }

    #[test]
    fn a_start_off_the_floor_is_refused() {
        let plan = Plan::parse("world 9 9 9\nstart 1 4,4,1 4,4,2 4,4,3 4,4,4\n").unwrap();
        assert!(matches!(
            replay(&plan, ConnectionType::ShearS),
            Err(ReplayError::NotUpright(1))
        ));
    }
}
