//! A build written down: the world, the target, where every meta-module
//! starts and every move in order. A [`Plan`] holds meta-modules as four
//! cubes; on a job and in a file it travels as core's
//! [`LatticePlan`](yamor_core::plan::LatticePlan) (structured data, and the
//! text form documented there), which it converts to and from.

use std::collections::BTreeMap;

use crate::decentralised::BuildReport;
use crate::grid::Cell;
use crate::srdb::Table;
use crate::world::WorldController;
use yamor_core::plan::{LatticeMove, LatticePlan, Placed};

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

pub use yamor_core::plan::{PlanError, PlanProblem};

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

    /// The text form [`Plan::parse`] reads ([`LatticePlan::to_text`]).
    #[must_use]
    pub fn to_text(&self) -> String {
        LatticePlan::from(self).to_text()
    }

    /// Reads the text form; every error names its line (0: a meta-module
    /// that is not four cubes).
    pub fn parse(text: &str) -> Result<Self, PlanError> {
        Plan::try_from(&LatticePlan::parse(text)?).map_err(|what| PlanError { line: 0, what })
    }
}

impl From<&Plan> for LatticePlan {
    fn from(plan: &Plan) -> Self {
        LatticePlan {
            size: plan.size,
            target: plan.target.iter().map(|c| c.to_vec()).collect(),
            start: plan
                .start
                .iter()
                .map(|(id, cells)| Placed {
                    id: *id,
                    cells: cells.to_vec(),
                })
                .collect(),
            steps: plan
                .steps
                .iter()
                .map(|s| LatticeMove {
                    round: u32::try_from(s.round).unwrap_or(u32::MAX),
                    id: s.id,
                    filled: s.filled,
                    to: s.to.to_vec(),
                    via: s.via.iter().map(|c| c.to_vec()).collect(),
                })
                .collect(),
        }
    }
}

impl TryFrom<&LatticePlan> for Plan {
    type Error = PlanProblem;

    /// A lattice plan whose every place and configuration is four cubes.
    fn try_from(plan: &LatticePlan) -> Result<Self, PlanProblem> {
        let four = |cells: &Vec<Cell>| -> Result<[Cell; 4], PlanProblem> {
            cells.as_slice().try_into().map_err(|_| PlanProblem::Cells {
                expected: 4,
                found: cells.len(),
            })
        };
        Ok(Plan {
            size: plan.size,
            target: plan.target.iter().map(four).collect::<Result<_, _>>()?,
            start: plan
                .start
                .iter()
                .map(|p| Ok((p.id, four(&p.cells)?)))
                .collect::<Result<_, PlanProblem>>()?,
            steps: plan
                .steps
                .iter()
                .map(|s| {
                    Ok(Step {
                        round: s.round as usize,
                        id: s.id,
                        filled: s.filled,
                        to: four(&s.to)?,
                        via: s.via.iter().map(four).collect::<Result<_, _>>()?,
                    })
                })
                .collect::<Result<_, PlanProblem>>()?,
        })
    }
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
    fn a_plan_of_meta_modules_is_four_cubes_each() {
        // The text form reads modules of any size; a plan of Roombots
        // meta-modules refuses anything but four cubes.
        let e = Plan::parse("world 5 5 5\nstart 1 0,0,0 0,0,1 0,0,2\n").unwrap_err();
        assert_eq!(e.line, 0);
        assert!(e.to_string().contains("4 cells, not 3"), "{e}");
        // Bad lines still name their line.
        assert_eq!(Plan::parse("world 5 5 5\nteleport\n").unwrap_err().line, 2);
    }
}
