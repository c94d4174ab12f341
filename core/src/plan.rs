//! A plan on a cubic lattice, written down: the world, the target places,
//! where every module starts and every move in order — what a planning
//! job returns ([`crate::evaluation::PlanResult`]), the store keeps and the
//! dashboard draws step by step, as structured data; and its text form,
//! the file a user keeps or hands to another tool.
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
//! `target` lines are the structure's places, `start` lines a module's id
//! and its cells, `move` lines the round, the module, whether it stepped or
//! filled a place, and its cells after the move; `via` lines after a move,
//! the cells of the intermediate configurations it passed through on the
//! way, in order. Every place and configuration has as many cells as the
//! first one (a Roombots meta-module: four cubes). Lines starting with `#`
//! are comments.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// A lattice cell, `[x, y, z]`.
pub type Cell = [i32; 3];

/// A plan on a lattice.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LatticePlan {
    pub size: [i32; 3],
    /// The structure's places (a Roombots structure: root cube first).
    pub target: Vec<Vec<Cell>>,
    /// Every module's id and cells before the first move.
    pub start: Vec<Placed>,
    pub steps: Vec<LatticeMove>,
}

/// A module and the cells it holds.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Placed {
    pub id: u32,
    pub cells: Vec<Cell>,
}

/// One move of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LatticeMove {
    pub round: u32,
    pub id: u32,
    /// It filled a place of the target rather than stepped.
    pub filled: bool,
    /// Its cells after the move.
    pub to: Vec<Cell>,
    /// Its cells in the intermediate configurations on the way, in order.
    pub via: Vec<Vec<Cell>>,
}

/// A line of a plan that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plan line {line}: {what}")]
pub struct PlanError {
    /// 1-based; 0 when the plan as a whole is wrong.
    pub line: usize,
    pub what: PlanProblem,
}

/// What is wrong with a plan or one of its lines (without its number).
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
    #[error("`start` takes an id and its cells")]
    StartFields,
    #[error("module {0} starts twice")]
    StartsTwice(u32),
    #[error("`move` takes a round, an id, step or fill, and the cells")]
    MoveFields,
    #[error("round {0:?} is not a number")]
    Round(String),
    #[error("module {0} never started")]
    NeverStarted(u32),
    #[error("round {0} after a later one")]
    RoundBackwards(u32),
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
    #[error("a module has {expected} cells, not {found}")]
    Cells { expected: usize, found: usize },
    #[error("{0:?} is not a whole number")]
    NotAWholeNumber(String),
    #[error("module id {0:?} is not a number")]
    Id(String),
}

/// Plans larger than this in any direction are refused as garbage.
pub const MAX_SIZE: i32 = 256;

impl LatticePlan {
    /// The text form [`LatticePlan::parse`] reads.
    #[must_use]
    pub fn to_text(&self) -> String {
        let cells = |c: &[Cell]| {
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
        for placed in &self.start {
            let _ = writeln!(out, "start {} {}", placed.id, cells(&placed.cells));
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
        let mut reader = Reader::default();
        for (k, raw) in text.lines().enumerate() {
            reader
                .line(raw)
                .map_err(|what| PlanError { line: k + 1, what })?;
        }
        if !reader.seen_world {
            return Err(PlanError {
                line: 0,
                what: PlanProblem::NoWorld,
            });
        }
        Ok(reader.plan)
    }

    /// How many cells each module holds (0 for a plan with none).
    #[must_use]
    pub fn cells_per_module(&self) -> usize {
        self.target
            .first()
            .or_else(|| self.start.first().map(|p| &p.cells))
            .map_or(0, Vec::len)
    }
}

#[derive(Default)]
struct Reader {
    plan: LatticePlan,
    seen_world: bool,
    cells_per_module: Option<usize>,
}

impl Reader {
    fn line(&mut self, raw: &str) -> Result<(), PlanProblem> {
        let words: Vec<&str> = raw.split_whitespace().collect();
        let Some((&keyword, rest)) = words.split_first() else {
            return Ok(());
        };
        if keyword.starts_with('#') {
            return Ok(());
        }
        if keyword != "world" && !self.seen_world {
            return Err(PlanProblem::WorldFirst);
        }
        match keyword {
            "world" => {
                if self.seen_world {
                    return Err(PlanProblem::SecondWorld);
                }
                let size = numbers(rest)?;
                let [x, y, z] = size[..] else {
                    return Err(PlanProblem::WorldSizes(size.len()));
                };
                if [x, y, z].iter().any(|s| !(1..=MAX_SIZE).contains(s)) {
                    return Err(PlanProblem::WorldSize);
                }
                self.plan.size = [x, y, z];
                self.seen_world = true;
            }
            "target" => {
                let cells = self.cells(rest)?;
                self.plan.target.push(cells);
            }
            "start" => {
                let (id, cells) = rest.split_first().ok_or(PlanProblem::StartFields)?;
                let id = id_of(id)?;
                if self.plan.start.iter().any(|p| p.id == id) {
                    return Err(PlanProblem::StartsTwice(id));
                }
                let cells = self.cells(cells)?;
                self.plan.start.push(Placed { id, cells });
            }
            "move" => {
                let [round, id, kind, cells @ ..] = rest else {
                    return Err(PlanProblem::MoveFields);
                };
                let round = round
                    .parse()
                    .map_err(|_| PlanProblem::Round((*round).to_owned()))?;
                let id = id_of(id)?;
                if !self.plan.start.iter().any(|p| p.id == id) {
                    return Err(PlanProblem::NeverStarted(id));
                }
                if self.plan.steps.last().is_some_and(|s| s.round > round) {
                    return Err(PlanProblem::RoundBackwards(round));
                }
                let filled = match *kind {
                    "fill" => true,
                    "step" => false,
                    other => return Err(PlanProblem::Kind(other.to_owned())),
                };
                let to = self.cells(cells)?;
                self.plan.steps.push(LatticeMove {
                    round,
                    id,
                    filled,
                    to,
                    via: Vec::new(),
                });
            }
            "via" => {
                let cells = self.cells(rest)?;
                self.plan
                    .steps
                    .last_mut()
                    .ok_or(PlanProblem::ViaFirst)?
                    .via
                    .push(cells);
            }
            other => return Err(PlanProblem::Unknown(other.to_owned())),
        }
        Ok(())
    }

    /// Cells inside the world, as many as every module before.
    fn cells(&mut self, words: &[&str]) -> Result<Vec<Cell>, PlanProblem> {
        let size = self.plan.size;
        let cells: Vec<Cell> = words
            .iter()
            .map(|w| {
                let v = numbers(&w.split(',').collect::<Vec<_>>())?;
                let [x, y, z] = v[..] else {
                    return Err(PlanProblem::NotACell((*w).to_owned()));
                };
                let c = [x, y, z];
                if (0..3).any(|k| c[k] < 0 || c[k] >= size[k]) {
                    return Err(PlanProblem::Outside((*w).to_owned()));
                }
                Ok(c)
            })
            .collect::<Result<_, _>>()?;
        let expected = *self.cells_per_module.get_or_insert(cells.len());
        if cells.len() != expected || cells.is_empty() {
            return Err(PlanProblem::Cells {
                expected: expected.max(1),
                found: cells.len(),
            });
        }
        Ok(cells)
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

    const GOOD: &str = "world 5 5 5\nstart 1 0,0,0 0,0,1 0,0,2 0,0,3\n";

    #[test]
    fn a_plan_reads_back_from_its_text() {
        let text = format!(
            "{GOOD}target 1,1,0 1,1,1 1,1,2 1,1,3\nmove 1 1 step 0,1,0 0,1,1 0,0,1 0,0,0\nvia 0,0,0 0,0,1 0,1,1 0,1,2\nmove 3 1 fill 1,1,0 1,1,1 1,1,2 1,1,3\n"
        );
        let plan = LatticePlan::parse(&text).unwrap();
        assert_eq!(plan.size, [5, 5, 5]);
        assert_eq!(plan.cells_per_module(), 4);
        assert_eq!(plan.steps.len(), 2);
        assert_eq!(plan.steps[0].via.len(), 1);
        assert!(plan.steps[1].filled);
        assert_eq!(LatticePlan::parse(&plan.to_text()).unwrap(), plan);
        // Serialised as data, it reads back the same too.
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(serde_json::from_str::<LatticePlan>(&json).unwrap(), plan);
    }

    #[test]
    fn bad_plans_name_their_line() {
        assert!(LatticePlan::parse(GOOD).is_ok());
        for (text, line, says) in [
            ("start 1 0,0,0 0,0,1 0,0,2 0,0,3\n", 1, "first line"),
            ("world 5 5\n", 1, "3 sizes"),
            ("world 5 5 0\n", 1, "1 to"),
            (
                &format!("{GOOD}start 2 1,0,0 1,0,1 1,0,2\n"),
                3,
                "4 cells, not 3",
            ),
            ("world 5 5 5\nstart 1\n", 2, "not 0"),
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
                &format!("{GOOD}move 1 1 hop 0,0,0 0,0,1 0,0,2 0,0,3\n"),
                3,
                "neither",
            ),
            (
                &format!(
                    "{GOOD}move 2 1 step 0,0,0 0,0,1 0,0,2 0,0,3\nmove 1 1 step 0,0,0 0,0,1 0,0,2 0,0,3\n"
                ),
                4,
                "later",
            ),
            ("world 5 5 5\nteleport\n", 2, "unknown"),
            (
                &format!("{GOOD}via 0,0,0 0,0,1 0,0,2 0,0,3\n"),
                3,
                "before any move",
            ),
            ("# nothing\n", 0, "no `world`"),
        ] {
            let e = LatticePlan::parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.what.to_string().contains(says), "{text:?}: {e}");
        }
    }
}
