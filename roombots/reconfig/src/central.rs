//! A centralised planner to check the decentralised one: the fewest moves
//! that bring one meta-module from where it stands to fill an open seed,
//! the rest of the world held still, by A* over its placements (root
//! cell, root turn, pose).
//!
//! A move is what the Gradient Controller may do — an inchworm step to any
//! cell with a connector beside it, by a way of at most one intermediate
//! configuration (two onto a seed's root), or filling the seed from its
//! root — without the controller's preferences or history. An inchworm
//! step carries the root at most three cells along each axis (the goal
//! cube stays in the 7 × 7 × 7 window), so a third of the farthest axis
//! distance to the seed's root, rounded up, plus the fill, is a lower
//! bound: the search is exact.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::build::Build;
use crate::grid::SIGHT;
use crate::search::Sweeps;
use crate::search::find_way;
use crate::world::Placement;

/// The fewest moves for meta-module `id` of `build` to fill an open seed
/// (the fill counted), or `None` when it cannot within `max_expanded`
/// placements expanded. Moves the meta-module about in `build`'s world
/// while searching and puts it back.
pub fn fewest_moves(build: &mut Build<'_>, id: u32, max_expanded: usize) -> Option<usize> {
    let start = build.world.placement(id)?;
    let seeds: Vec<_> = build.world.open_seeds().map(|(_, s)| s.cells[0]).collect();
    let bound = |p: &Placement| -> usize {
        seeds
            .iter()
            .map(|s| {
                let far = (0..3).map(|k| (s[k] - p.root[k]).abs()).max().unwrap_or(0);
                (far as usize).div_ceil(SIGHT as usize) + 1
            })
            .min()
            .unwrap_or(usize::MAX)
    };
    let mut best: HashMap<Placement, usize> = HashMap::from([(start, 0)]);
    let mut open = BinaryHeap::from([(Reverse(bound(&start)), 0usize, Key(start))]);
    let mut expanded = 0;
    let mut found = None;
    while let Some((Reverse(_), moves, Key(here))) = open.pop() {
        if best.get(&here).is_some_and(|m| *m < moves) {
            continue;
        }
        expanded += 1;
        if expanded > max_expanded {
            break;
        }
        if build.world.place(id, here, build.table_ref()).is_err() {
            continue;
        }
        let blocked = build.world.blocked(id, &here);
        if build.fill_way(&here, &blocked).is_some() {
            found = Some(moves + 1);
            break;
        }
        for (goal, poses) in build.goal_cells(id, &here) {
            let level = if seeds.contains(&goal) { 3 } else { 2 };
            for b in poses {
                let next = build.after_step(&here, b, goal);
                if best.get(&next).is_some_and(|m| *m <= moves + 1) {
                    continue;
                }
                if find_way(
                    build.table_ref(),
                    Sweeps::Table(build.clouds_ref()),
                    here.pose,
                    b,
                    &blocked,
                    level,
                )
                .is_some()
                {
                    best.insert(next, moves + 1);
                    open.push((Reverse(moves + 1 + bound(&next)), moves + 1, Key(next)));
                }
            }
        }
    }
    build
        .world
        .place(id, start, build.table_ref())
        .expect("the start was free");
    found
}

/// One meta-module, one seed (a meta-module standing on floor cell (6, 6)
/// of a 13-cell world), `trials` random starts (seeds 0 …): for each, the
/// fewest moves and the moves the decentralised build took with
/// `settings` (`None` when it did not build).
pub fn against_decentralised(
    table: &crate::srdb::Table,
    clouds: &crate::sweep::Clouds,
    settings: crate::build::Settings,
    trials: u64,
) -> Vec<(Option<usize>, Option<usize>)> {
    let mut out = Vec::new();
    for seed in 0..trials {
        let world = crate::build::one_seed_world();
        let Some(starts) = crate::build::random_starts(&world, 1, 3, seed) else {
            continue;
        };
        let Ok(mut planner) = Build::new(world.clone(), table, clouds, &starts, settings) else {
            continue;
        };
        let fewest = fewest_moves(&mut planner, 1, 500_000);
        let report = Build::new(world, table, clouds, &starts, settings).map(|mut b| b.run());
        let moves = report.ok().filter(|r| r.built).map(|r| r.moves.len());
        out.push((fewest, moves));
    }
    out
}

/// A placement ordered for the heap (ties broken by its fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key(Placement);

impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.0.root, self.0.turn, self.0.pose).cmp(&(other.0.root, other.0.turn, other.0.pose))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{Rule, Settings, random_starts};
    use crate::srdb::Database;
    use crate::sweep::Clouds;
    use yamor_roombots::chain::ConnectionType;

    #[test]
    fn no_decentralised_build_of_one_meta_module_beats_the_fewest_moves() {
        let db = Database::generate();
        let table = db.table(ConnectionType::ShearZ);
        let clouds = Clouds::build(table, crate::sweep::ROTATION_STEP, 2);
        for seed in 0..12 {
            let world = crate::build::one_seed_world();
            let starts = random_starts(&world, 1, 3, seed).unwrap();
            let settings = Settings {
                rule: Rule::Reserve,
                ..Settings::default()
            };
            let mut planner = Build::new(world.clone(), table, &clouds, &starts, settings).unwrap();
            let placement = planner.world.placement(1).unwrap();
            let fewest =
                fewest_moves(&mut planner, 1, 200_000).expect("one meta-module reaches its seed");
            assert_eq!(planner.world.placement(1), Some(placement), "put back");
            // Never below the bound, never above what the controller does.
            let far = (0..2).map(|k| (6 - placement.root[k]).abs()).max().unwrap() as usize;
            assert!(fewest > far.div_ceil(3), "{fewest} moves from {far} cells");
            let report = Build::new(world, table, &clouds, &starts, settings)
                .unwrap()
                .run();
            assert!(report.built);
            assert!(
                fewest <= report.moves.len(),
                "{fewest} > {}",
                report.moves.len()
            );
        }
    }
}
