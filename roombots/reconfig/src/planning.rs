//! A self-reconfiguration as a cluster job: what a planning host is asked
//! (a [`Task`]: the structure, the meta-modules' connection type, the
//! rule; the start comes from the job's seed) and the [`Planner`] that
//! answers it with a [`Plan`].
//!
//! A task travels as a job's objective, `reconfig:` followed by its JSON,
//! so the organizer queues, stores, retries and resumes it like any other
//! job, and sends it only to hosts that serve `reconfig:*`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use yamor_roombots::chain::ConnectionType;

use crate::decentralised::{Build, BuildReport, Rule, Settings, upright_on};
use crate::grid::cell_set;
use crate::plan::Plan;
use crate::srdb::{Database, Table};
use crate::starts::{random_starts, stand_as};
use crate::structure::{Structure, parse, platform};
use crate::sweep::{Clouds, ROTATION_STEP};
use crate::world::WorldController;
use yamor_core::evaluation::PlanResult;
use yamor_core::plan::LatticePlan;

/// The objective prefix of a planning job.
pub const OBJECTIVE_PREFIX: &str = "reconfig:";

/// What a planning host serves (a job objective pattern).
pub const SERVED: &str = "reconfig:*";

/// The structure to build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Target {
    /// 003 §2.7.2's XML, with a name to show (its file name).
    Xml { name: String, xml: String },
    /// [`platform`]: `bars` × `rows` meta-modules lying flat, centred.
    Platform { bars: i32, rows: i32 },
}

/// One reconfiguration to plan. The start is drawn from the job's seed
/// ([`random_starts`]), so a batch over starts is a batch over seeds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub target: Target,
    #[serde(with = "connection_text")]
    pub connection: ConnectionType,
    pub rule: Rule,
    /// Ours: step onto a seed only in a pose that can assume it.
    pub look_ahead: bool,
    /// Cells along each side of the cubic world.
    pub size: i32,
    pub max_rounds: usize,
    /// Who plans: the meta-modules themselves, or a centralised search.
    /// Left out of the objective when decentralised, so objectives stored
    /// before it existed, and hosts that predate it, still match and read.
    #[serde(default, skip_serializing_if = "Method::is_decentralised")]
    pub method: Method,
    /// A structure the meta-modules stand as at the start, to be taken
    /// apart into the target (003 Fig 1.2), instead of random starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Target>,
}

/// Who plans a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Method {
    /// 003 §2.6: every meta-module its own Gradient Controller.
    #[default]
    Decentralised,
    /// [`crate::central`]: the fewest moves, by A* over whole
    /// configurations, giving up after `max_expanded` of them.
    Central { max_expanded: usize },
}

impl Method {
    #[must_use]
    pub fn is_decentralised(&self) -> bool {
        *self == Method::Decentralised
    }
}

mod connection_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use yamor_roombots::chain::ConnectionType;

    pub fn serialize<S: Serializer>(c: &ConnectionType, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(c)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ConnectionType, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Why a task was not planned.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The task cannot be planned anywhere (retrying is pointless).
    #[error("{0}")]
    Invalid(String),
    /// The caller stopped it.
    #[error("stopped")]
    Stopped,
}

/// The smallest and largest worlds a task may ask for.
const SIZES: std::ops::RangeInclusive<i32> = 5..=64;

impl Task {
    /// The job objective that carries this task.
    #[must_use]
    pub fn objective(&self) -> String {
        format!(
            "{OBJECTIVE_PREFIX}{}",
            serde_json::to_string(self).expect("a task is plain data")
        )
    }

    /// The task a job objective carries; `None` when the objective is not
    /// a planning one, an error when it is but cannot be read.
    pub fn from_objective(objective: &str) -> Option<Result<Self, TaskError>> {
        let json = objective.trim().strip_prefix(OBJECTIVE_PREFIX)?;
        Some(
            serde_json::from_str::<Task>(json)
                .map_err(|e| TaskError::Invalid(format!("not a planning task: {e}")))
                .and_then(|t| t.checked()),
        )
    }

    /// The task, or why it cannot be planned.
    pub fn checked(self) -> Result<Self, TaskError> {
        if !SIZES.contains(&self.size) {
            return Err(TaskError::Invalid(format!(
                "world size {} is not in {}..={}",
                self.size,
                SIZES.start(),
                SIZES.end()
            )));
        }
        if self.max_rounds == 0 {
            return Err(TaskError::Invalid("max_rounds must be at least 1".into()));
        }
        let structure = self.structure()?;
        let places = structure.places.len();
        let from = self.from_structure()?;
        match (self.method, &from) {
            (Method::Decentralised, Some(_)) => {
                return Err(TaskError::Invalid(
                    "the decentralised controller builds from scattered meta-modules only \
                     (003 §2.6); taking a structure apart needs the central method"
                        .into(),
                ));
            }
            (Method::Central { max_expanded }, _)
                if max_expanded == 0 || max_expanded > crate::central::MAX_EXPANDED =>
            {
                return Err(TaskError::Invalid(format!(
                    "the central method's max_expanded must be in 1..={}",
                    crate::central::MAX_EXPANDED
                )));
            }
            (Method::Central { .. }, _) if self.size > crate::central::MAX_WORLD => {
                return Err(TaskError::Invalid(
                    crate::central::CentralError::WorldTooLarge([self.size; 3]).to_string(),
                ));
            }
            (Method::Central { .. }, _) => {
                // Those standing on a place of the target stay put.
                let target: Vec<_> = structure.world_cells().into_iter().map(cell_set).collect();
                let movers = from.map_or(places, |f| {
                    f.world_cells()
                        .into_iter()
                        .filter(|c| !target.contains(&cell_set(*c)))
                        .count()
                });
                if movers > crate::central::MAX_MOVING || places > crate::central::MAX_SEEDS {
                    return Err(TaskError::Invalid(format!(
                        "{}",
                        crate::central::CentralError::TooLarge(movers, places)
                    )));
                }
            }
            (Method::Decentralised, None) => {}
        }
        Ok(self)
    }

    /// The structure, placed in the world.
    pub fn structure(&self) -> Result<Structure, TaskError> {
        self.structure_of(&self.target)
    }

    /// The structure the meta-modules start as, if the task names one.
    pub fn from_structure(&self) -> Result<Option<Structure>, TaskError> {
        self.from.as_ref().map(|f| self.structure_of(f)).transpose()
    }

    fn structure_of(&self, target: &Target) -> Result<Structure, TaskError> {
        match target {
            Target::Xml { name, xml } => {
                parse(xml).map_err(|e| TaskError::Invalid(format!("{name}: {e}")))
            }
            // Bounded before anything is allocated: a task comes from the
            // network, and the world (at most 64 cells a side) holds no more.
            Target::Platform { bars, rows } if *bars > self.size || *rows > self.size => {
                Err(TaskError::Invalid(format!(
                    "a platform of {bars}x{rows} does not fit a world of {} cells",
                    self.size
                )))
            }
            Target::Platform { bars, rows } if *bars >= 1 && *rows >= 1 => {
                Ok(platform(*bars, *rows, [self.size / 2, self.size / 2, 0]))
            }
            Target::Platform { bars, rows } => Err(TaskError::Invalid(format!(
                "a platform of {bars}x{rows} has no meta-modules"
            ))),
        }
    }

    /// The name people read: the file name or the platform's size.
    #[must_use]
    pub fn name(&self) -> String {
        match &self.target {
            Target::Xml { name, .. } => name.clone(),
            Target::Platform { bars, rows } => format!("platform {bars}x{rows}"),
        }
    }

    /// The task in a sentence, as pages name it: what, with what, how.
    #[must_use]
    pub fn describe(&self) -> String {
        let from = match &self.from {
            Some(Target::Xml { name, .. }) => format!(", taken apart from {name}"),
            Some(Target::Platform { bars, rows }) => {
                format!(", taken apart from a platform {bars}x{rows}")
            }
            None => String::new(),
        };
        let method = match self.method {
            Method::Decentralised => format!("each meta-module deciding (rule {:?})", self.rule),
            Method::Central { max_expanded } => {
                format!(
                    "centrally, the fewest moves (A*, giving up after {max_expanded} configurations)"
                )
            }
        };
        format!(
            "{} with {} meta-modules{from}, planned {method}, a world of {} cells",
            self.name(),
            self.connection,
            self.size
        )
    }

    /// How the build runs.
    #[must_use]
    pub fn settings(&self) -> Settings {
        Settings {
            rule: self.rule,
            look_ahead: self.look_ahead,
            max_rounds: self.max_rounds,
            ..Settings::default()
        }
    }

    /// The world with the structure's seeds, nobody in it yet.
    pub fn world(&self) -> Result<WorldController, TaskError> {
        let mut world = WorldController::new([self.size; 3]);
        world
            .set_structure(&self.structure()?)
            .map_err(|e| TaskError::Invalid(format!("{}: {e}", self.name())))?;
        Ok(world)
    }

    /// The world with the structure's seeds and the meta-modules where
    /// they start: standing as the `from` structure, or on the floor where
    /// `seed` puts them; nothing moved yet.
    pub fn start(&self, seed: u64, table: &Table) -> Result<WorldController, TaskError> {
        let mut world = self.world()?;
        let places = world.seeds().len();
        if let Some(from) = self.from_structure()? {
            stand_as(&mut world, table, &from)
                .map_err(|e| TaskError::Invalid(format!("{}: {e}", self.name())))?;
            return Ok(world);
        }
        let starts = random_starts(&world, places, 3, seed).ok_or_else(|| {
            TaskError::Invalid(format!(
                "{}: no room on a floor of {} cells to spread {} meta-modules out",
                self.name(),
                self.size,
                places
            ))
        })?;
        for (k, p) in upright_on(table, &starts).into_iter().enumerate() {
            world
                .place(k as u32 + 1, p, table)
                .map_err(|e| TaskError::Invalid(e.to_string()))?;
        }
        Ok(world)
    }
}

/// A task planned.
#[derive(Debug, Clone)]
pub struct Planned {
    pub report: BuildReport,
    pub plan: Plan,
    /// Planning time, the database and swept cells already at hand.
    pub wall: Duration,
}

/// Plans tasks; builds the database once and each connection type's swept
/// cells the first time a task needs them.
pub struct Planner {
    db: Database,
    clouds: [OnceLock<Clouds>; 4],
    threads: usize,
}

impl Planner {
    /// A planner that sweeps on `threads` threads.
    #[must_use]
    pub fn new(threads: usize) -> Self {
        Planner {
            db: Database::generate(),
            clouds: Default::default(),
            threads: threads.max(1),
        }
    }

    /// Plans `task` from the start `seed` draws. `stop` is asked between
    /// rounds; once it says so, the planning ends with [`TaskError::Stopped`].
    pub fn plan(
        &self,
        task: &Task,
        seed: u64,
        stop: &dyn Fn() -> bool,
    ) -> Result<Planned, TaskError> {
        let table = self.db.table(task.connection);
        let index = ConnectionType::ALL
            .iter()
            .position(|c| *c == task.connection)
            .expect("every connection type is listed");
        let clouds =
            self.clouds[index].get_or_init(|| Clouds::build(table, ROTATION_STEP, self.threads));
        let world = task.start(seed, table)?;
        let began = Instant::now();
        let before = world.clone();
        let mut build = Build::of_world(world, table, clouds, task.settings());
        let report = match task.method {
            Method::Decentralised => build.run_until(None, stop).ok_or(TaskError::Stopped)?,
            Method::Central { max_expanded } => {
                crate::central::plan(&build, max_expanded, stop)
                    .map_err(|e| match e {
                        crate::central::CentralError::Stopped => TaskError::Stopped,
                        e => TaskError::Invalid(e.to_string()),
                    })?
                    .report
            }
        };
        let plan = Plan::record(&before, table, &report);
        Ok(Planned {
            report,
            plan,
            wall: began.elapsed(),
        })
    }
}

impl Planned {
    /// The job's result: the build's figures and its plan, as the cluster
    /// carries them ([`PlanResult::fitness`] ranks it).
    #[must_use]
    pub fn result(&self) -> PlanResult {
        let r = &self.report;
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        PlanResult {
            built: r.built,
            rounds: count(r.rounds),
            moves: count(r.moves.len()),
            collisions: count(r.collisions),
            deadlock: r.deadlock,
            filled: count(r.filled),
            seeds: count(r.seeds),
            plan: LatticePlan::from(&self.plan),
            wall: self.wall,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> Task {
        Task {
            target: Target::Platform { bars: 2, rows: 2 },
            connection: ConnectionType::ShearS,
            rule: Rule::Reserve,
            look_ahead: true,
            size: 13,
            max_rounds: 2000,
            method: Method::Decentralised,
            from: None,
        }
    }

    #[test]
    fn a_task_survives_its_objective_and_bad_ones_are_named() {
        let t = task();
        let objective = t.objective();
        assert!(objective.starts_with(OBJECTIVE_PREFIX));
        assert_eq!(Task::from_objective(&objective).unwrap().unwrap(), t);
        assert!(Task::from_objective("bbob/f3/i1/d5").is_none());
        let wrong = [
            ("reconfig:{", "not a planning task"),
            (
                &objective.replace("shear-s", "diagonal"),
                "unknown connection type",
            ),
            (
                &objective.replace("\"size\":13", "\"size\":500"),
                "world size",
            ),
            (
                &Task {
                    target: Target::Xml {
                        name: "bad.xml".into(),
                        xml: "<structure><module".into(),
                    },
                    ..task()
                }
                .objective(),
                "bad.xml",
            ),
            (
                &Task {
                    target: Target::Platform { bars: 0, rows: 3 },
                    ..task()
                }
                .objective(),
                "no meta-modules",
            ),
            (
                &Task {
                    target: Target::Platform {
                        bars: 2_000_000_000,
                        rows: 2_000_000_000,
                    },
                    ..task()
                }
                .objective(),
                "does not fit",
            ),
        ];
        for (objective, says) in wrong {
            let e = Task::from_objective(objective).unwrap().unwrap_err();
            assert!(e.to_string().contains(says), "{objective}: {e}");
        }
    }

    fn stool(name: &str) -> Target {
        Target::Xml {
            name: name.into(),
            xml: crate::structure::example_xml(name),
        }
    }

    #[test]
    fn the_central_method_plans_no_more_moves_and_takes_a_stool_apart() {
        let planner = Planner::new(2);
        let central = Task {
            target: Target::Platform { bars: 1, rows: 2 },
            method: Method::Central {
                max_expanded: 100_000,
            },
            ..task()
        };
        let decentralised = Task {
            method: Method::Decentralised,
            ..central.clone()
        };
        let fewest = planner.plan(&central, 0, &|| false).unwrap();
        let built = planner.plan(&decentralised, 0, &|| false).unwrap();
        assert!(fewest.report.built && built.report.built);
        assert!(fewest.report.moves.len() <= built.report.moves.len());
        assert_eq!(fewest.plan.start, built.plan.start, "one seed, one start");
        assert_eq!(
            Task::from_objective(&central.objective()).unwrap().unwrap(),
            central
        );

        let shrink = Task {
            target: stool("stool-4.xml"),
            from: Some(stool("stool-6.xml")),
            ..central.clone()
        };
        let apart = planner.plan(&shrink, 0, &|| false).unwrap();
        assert!(apart.report.built);
        assert_eq!(apart.plan.start.len(), 6);
        assert!(
            apart.report.moves.iter().all(|m| !m.filled),
            "stool-4 stands already"
        );

        let refused = [
            (
                Task {
                    method: Method::Decentralised,
                    ..shrink.clone()
                },
                "central method",
            ),
            (
                Task {
                    method: Method::Central { max_expanded: 0 },
                    ..central.clone()
                },
                "max_expanded",
            ),
            (
                Task {
                    method: Method::Central {
                        max_expanded: usize::MAX,
                    },
                    ..central.clone()
                },
                "max_expanded",
            ),
            (
                Task {
                    target: Target::Platform { bars: 3, rows: 3 },
                    ..central.clone()
                },
                "at most 8",
            ),
            (
                Task {
                    size: 40,
                    ..central.clone()
                },
                "at most 24 cells",
            ),
        ];
        for (task, says) in refused {
            let e = task.checked().unwrap_err();
            assert!(e.to_string().contains(says), "{e}");
        }
    }

    #[test]
    fn one_seed_plans_one_build_and_a_stop_ends_it() {
        let planner = Planner::new(2);
        let a = planner.plan(&task(), 3, &|| false).unwrap();
        let b = planner.plan(&task(), 3, &|| false).unwrap();
        assert!(a.report.built);
        assert_eq!(a.plan, b.plan, "the same seed plans the same build");
        let fitness = a.result().fitness();
        assert!(fitness < 0.0 && fitness > -1e6, "{fitness}");
        assert_eq!(Plan::try_from(&a.result().plan).unwrap(), a.plan);
        assert!(matches!(
            planner.plan(&task(), 3, &|| true),
            Err(TaskError::Stopped)
        ));
    }
}
