//! A build written down: the world, the target, where every meta-module
//! starts and every move in order, as text a planning host sends back, the
//! store keeps and the dashboard draws step by step.
//!
//! ```text
//! # a yamor reconfiguration plan
//! world 13 13 13
//! target 6,6,0 6,6,1 6,6,2 6,6,3
//! start 1 2,3,0 2,3,1 2,3,2 2,3,3
//! move 1 1 step 3,3,0 3,3,1 2,3,1 2,3,0
//! via 2,3,0 2,3,1 2,4,1 3,4,1
//! move 7 1 fill 6,6,0 6,6,1 6,6,2 6,6,3
//! ```
//!
//! `target` lines are the structure's places (root cube first), `start`
//! lines a meta-module's id and its four cubes, `move` lines the round,
//! the meta-module, whether it stepped or filled a seed, and its four
//! cubes after the move; `via` lines after a move, the cubes of the
//! intermediate configurations it passed through on the way, in order.
//! Lines starting with `#` are comments.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::decentralised::BuildReport;
use crate::grid::Cell;
use crate::srdb::Table;
use crate::world::WorldController;

/// One move of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub round: usize,
    pub id: u32,
    /// It filled a seed rather than stepped.
    pub filled: bool,
    /// Its four cubes after the move.
    pub to: [Cell; 4],
    /// Its cubes in the intermediate configurations on the way, in order.
    pub via: Vec<[Cell; 4]>,
}

/// A build's plan.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub size: [i32; 3],
    /// The structure's places, root cube first.
    pub target: Vec<[Cell; 4]>,
    /// Every meta-module's id and cubes before the first move.
    pub start: Vec<(u32, [Cell; 4])>,
    pub steps: Vec<Step>,
}

/// A line of a plan that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plan line {line}: {what}")]
pub struct PlanError {
    pub line: usize,
    pub what: PlanProblem,
}

/// What is wrong with a line of a plan (without its number).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanProblem {
    #[error("the first line must be `world X Y Z`")]
    WorldFirst,
    #[error("a second `world` line")]
    SecondWorld,
    #[error("`world` takes 3 sizes, not {0}")]
    WorldSizes(usize),
    #[error("world sizes must be 1 to {MAX_SIZE}")]
    WorldSize,
    #[error("`start` takes an id and four cells")]
    StartFields,
    #[error("meta-module {0} starts twice")]
    StartsTwice(u32),
    #[error("`move` takes a round, an id, step or fill, and four cells")]
    MoveFields,
    #[error("round {0:?} is not a number")]
    Round(String),
    #[error("meta-module {0} never started")]
    NeverStarted(u32),
    #[error("round {0} after a later one")]
    RoundBackwards(usize),
    #[error("{0:?} is neither step nor fill")]
    Kind(String),
    #[error("a `via` line before any move")]
    ViaFirst,
    #[error("unknown line {0:?}")]
    Unknown(String),
    #[error("no `world` line")]
    NoWorld,
    #[error("{0:?} is not a cell x,y,z")]
    NotACell(String),
    #[error("cell {0} lies outside the world")]
    Outside(String),
    #[error("a meta-module has 4 cubes, not {0}")]
    Cubes(usize),
    #[error("{0:?} is not a whole number")]
    NotAWholeNumber(String),
    #[error("meta-module id {0:?} is not a number")]
    Id(String),
}

/// Plans larger than this in any direction are refused as garbage.
const MAX_SIZE: i32 = 256;

impl Plan {
    /// The plan of `report`, a build of `before` (the world as it was when
    /// the build started).
    #[must_use]
    pub fn record(before: &WorldController, table: &Table, report: &BuildReport) -> Self {
        Plan {
            size: before.size,
            target: before.seeds().iter().map(|s| s.cells).collect(),
            start: before
                .everyone()
                .iter()
                .map(|(id, p)| (*id, p.cells(table)))
                .collect(),
            steps: report
                .moves
                .iter()
                .map(|m| Step {
                    round: m.round,
                    id: m.id,
                    filled: m.filled,
                    to: m.to,
                    via: m.via.clone(),
                })
                .collect(),
        }
    }

    /// Every meta-module's cubes after the first `k` moves (all of them
    /// when `k` is past the end), by id.
    #[must_use]
    pub fn after(&self, k: usize) -> BTreeMap<u32, [Cell; 4]> {
        let mut now: BTreeMap<u32, [Cell; 4]> = self.start.iter().copied().collect();
        for step in self.steps.iter().take(k) {
            now.insert(step.id, step.to);
        }
        now
    }

    /// The text form [`Plan::parse`] reads.
    #[must_use]
    pub fn to_text(&self) -> String {
        let cells = |c: &[Cell; 4]| {
            c.iter()
                .map(|c| format!("{},{},{}", c[0], c[1], c[2]))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut out = String::from("# a yamor reconfiguration plan\n");
        let [x, y, z] = self.size;
        let _ = writeln!(out, "world {x} {y} {z}");
        for place in &self.target {
            let _ = writeln!(out, "target {}", cells(place));
        }
        for (id, cubes) in &self.start {
            let _ = writeln!(out, "start {id} {}", cells(cubes));
        }
        for s in &self.steps {
            let kind = if s.filled { "fill" } else { "step" };
            let _ = writeln!(out, "move {} {} {kind} {}", s.round, s.id, cells(&s.to));
            for v in &s.via {
                let _ = writeln!(out, "via {}", cells(v));
            }
        }
        out
    }

    /// Reads the text form; every error names its line.
    pub fn parse(text: &str) -> Result<Self, PlanError> {
        let mut plan = Plan::default();
        let mut seen_world = false;
        for (k, raw) in text.lines().enumerate() {
            let line = k + 1;
            let bad = |what: PlanProblem| PlanError { line, what };
            let words: Vec<&str> = raw.split_whitespace().collect();
            let Some((&keyword, rest)) = words.split_first() else {
                continue;
            };
            if keyword.starts_with('#') {
                continue;
            }
            if keyword != "world" && !seen_world {
                return Err(bad(PlanProblem::WorldFirst));
            }
            match keyword {
                "world" => {
                    if seen_world {
                        return Err(bad(PlanProblem::SecondWorld));
                    }
                    let size = numbers(rest).map_err(&bad)?;
                    let [x, y, z] = size[..] else {
                        return Err(bad(PlanProblem::WorldSizes(size.len())));
                    };
                    if [x, y, z].iter().any(|s| !(1..=MAX_SIZE).contains(s)) {
                        return Err(bad(PlanProblem::WorldSize));
                    }
                    plan.size = [x, y, z];
                    seen_world = true;
                }
                "target" => plan.target.push(plan.cubes(rest).map_err(&bad)?),
                "start" => {
                    let (id, cubes) = rest
                        .split_first()
                        .ok_or_else(|| bad(PlanProblem::StartFields))?;
                    let id = id_of(id).map_err(&bad)?;
                    if plan.start.iter().any(|(other, _)| *other == id) {
                        return Err(bad(PlanProblem::StartsTwice(id)));
                    }
                    plan.start.push((id, plan.cubes(cubes).map_err(&bad)?));
                }
                "move" => {
                    let [round, id, kind, cubes @ ..] = rest else {
                        return Err(bad(PlanProblem::MoveFields));
                    };
                    let round = round
                        .parse()
                        .map_err(|_| bad(PlanProblem::Round((*round).to_owned())))?;
                    let id = id_of(id).map_err(&bad)?;
                    if !plan.start.iter().any(|(other, _)| *other == id) {
                        return Err(bad(PlanProblem::NeverStarted(id)));
                    }
                    if plan.steps.last().is_some_and(|s| s.round > round) {
                        return Err(bad(PlanProblem::RoundBackwards(round)));
                    }
                    let filled = match *kind {
                        "fill" => true,
                        "step" => false,
                        other => return Err(bad(PlanProblem::Kind(other.to_owned()))),
                    };
                    let to = plan.cubes(cubes).map_err(&bad)?;
                    plan.steps.push(Step {
                        round,
                        id,
                        filled,
                        to,
                        via: Vec::new(),
                    });
                }
                "via" => {
                    let cubes = plan.cubes(rest).map_err(&bad)?;
                    plan.steps
                        .last_mut()
                        .ok_or_else(|| bad(PlanProblem::ViaFirst))?
                        .via
                        .push(cubes);
                }
                other => return Err(bad(PlanProblem::Unknown(other.to_owned()))),
            }
        }
        if !seen_world {
            return Err(PlanError {
                line: 0,
                what: PlanProblem::NoWorld,
            });
        }
        Ok(plan)
    }

    /// Four cells inside the world.
    fn cubes(&self, words: &[&str]) -> Result<[Cell; 4], PlanProblem> {
        let cells: Vec<Cell> = words
            .iter()
            .map(|w| {
                let v = numbers(&w.split(',').collect::<Vec<_>>())?;
                let [x, y, z] = v[..] else {
                    return Err(PlanProblem::NotACell((*w).to_owned()));
                };
                let c = [x, y, z];
                if (0..3).any(|k| c[k] < 0 || c[k] >= self.size[k]) {
                    return Err(PlanProblem::Outside((*w).to_owned()));
                }
                Ok(c)
            })
            .collect::<Result<_, _>>()?;
        cells
            .try_into()
            .map_err(|c: Vec<Cell>| PlanProblem::Cubes(c.len()))
    }
}

fn numbers(words: &[&str]) -> Result<Vec<i32>, PlanProblem> {
    words
        .iter()
        .map(|w| {
            w.parse()
                .map_err(|_| PlanProblem::NotAWholeNumber((*w).to_owned()))
        })
        .collect()
}

fn id_of(word: &str) -> Result<u32, PlanProblem> {
    word.parse().map_err(|_| PlanProblem::Id(word.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decentralised::{Build, Settings};
    use crate::srdb::Database;
    use crate::starts::random_starts;
    use crate::sweep::{Clouds, ROTATION_STEP};

    #[test]
    fn a_build_written_down_reads_back_and_ends_on_the_target() {
        let db = Database::generate();
        let table = db.table(yamor_roombots::chain::ConnectionType::ShearS);
        let clouds = Clouds::build(table, ROTATION_STEP, 2);
        let structure = crate::structure::platform(2, 2, [6, 6, 0]);
        let mut world = WorldController::new([13; 3]);
        world.set_structure(&structure).unwrap();
        let starts = random_starts(&world, structure.places.len(), 3, 4).unwrap();
        let mut build = Build::new(world, table, &clouds, &starts, Settings::default()).unwrap();
        let before = build.world.clone();
        let report = build.run();
        assert!(report.built);
        let plan = Plan::record(&before, table, &report);
        let read = Plan::parse(&plan.to_text()).unwrap();
        assert_eq!(read, plan);
        // Replayed, the plan ends with every place filled by a meta-module.
        let end: Vec<[Cell; 4]> = read.after(usize::MAX).into_values().collect();
        for place in &read.target {
            assert!(
                end.iter()
                    .any(|m| crate::grid::cell_set(*m) == crate::grid::cell_set(*place)),
                "no meta-module ends on {place:?}"
            );
        }
        assert_eq!(read.after(0), read.start.iter().copied().collect());
    }

    #[test]
    fn bad_plans_name_their_line() {
        let good = "world 5 5 5\nstart 1 0,0,0 0,0,1 0,0,2 0,0,3\n";
        assert!(Plan::parse(good).is_ok());
        for (text, line, says) in [
            ("start 1 0,0,0 0,0,1 0,0,2 0,0,3\n", 1, "first line"),
            ("world 5 5\n", 1, "3 sizes"),
            ("world 5 5 0\n", 1, "1 to"),
            ("world 5 5 5\nstart 1 0,0,0 0,0,1 0,0,2\n", 2, "4 cubes"),
            (
                "world 5 5 5\nstart 1 0,0,0 0,0,1 0,0,2 0,0,9\n",
                2,
                "outside",
            ),
            (
                "world 5 5 5\nstart x 0,0,0 0,0,1 0,0,2 0,0,3\n",
                2,
                "not a number",
            ),
            (
                "world 5 5 5\nmove 1 1 step 0,0,0 0,0,1 0,0,2 0,0,3\n",
                2,
                "never started",
            ),
            (
                &format!("{good}move 1 1 hop 0,0,0 0,0,1 0,0,2 0,0,3\n"),
                3,
                "neither",
            ),
            (
                &format!(
                    "{good}move 2 1 step 0,0,0 0,0,1 0,0,2 0,0,3\nmove 1 1 step 0,0,0 0,0,1 0,0,2 0,0,3\n"
                ),
                4,
                "later",
            ),
            ("world 5 5 5\nteleport\n", 2, "unknown"),
            (
                &format!("{good}via 0,0,0 0,0,1 0,0,2 0,0,3\n"),
                3,
                "before any move",
            ),
            ("# nothing\n", 0, "no `world`"),
        ] {
            let e = Plan::parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.what.to_string().contains(says), "{text:?}: {e}");
        }
    }
}
