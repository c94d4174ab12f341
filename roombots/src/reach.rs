//! Grid targets, what a meta-module can reach of them, and 002 §5.3's
//! experiment rebuilt.
//!
//! A grid target is a connector frame on a face of a cell (002 §5.3,
//! Fig 5.10): the cell `(dx, dy, dz)` counted from the first module's
//! cube A, the face given by its outward direction, and one of four
//! quarter-turns about the face's normal (the seed's
//! `GridPosition::getTransformationTo(dx, dy, dz, dirX, dirY, dirZ, o)`).
//! `reachfw` places the end connector (`C3X` of the second module) on it:
//! the end cube then fills that cell and its connector faces the
//! direction, ready to lock onto what is there.
//!
//! The reachability map enumerates the joint space on a grid of π/6 steps
//! (12⁶ = 2,985,984 poses per connection type; the lattice's thirds and
//! quarters of a turn are on it) and keeps, for each grid target some pose
//! places the end on exactly, one such pose free of self-collision and of
//! the floor: a proof that the target is reachable.

use std::collections::BTreeMap;
use std::f64::consts::{FRAC_PI_2, FRAC_PI_6};

use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};

use crate::ik::{MetaJoints, Solver};
use crate::module::{CELL, Connector, home_middle_frames};

/// A cell face's outward direction, as a unit step along one axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Direction {
    pub axis: u8,
    pub positive: bool,
}

impl Direction {
    pub const ALL: [Direction; 6] = [
        Direction::new(0, true),
        Direction::new(0, false),
        Direction::new(1, true),
        Direction::new(1, false),
        Direction::new(2, true),
        Direction::new(2, false),
    ];

    const fn new(axis: u8, positive: bool) -> Self {
        Direction { axis, positive }
    }

    /// From App. B's `dirX dirY dirZ`: exactly one of them ±1.
    #[must_use]
    pub fn from_components(d: [i32; 3]) -> Option<Direction> {
        let nonzero: Vec<usize> = (0..3).filter(|&k| d[k] != 0).collect();
        match nonzero.as_slice() {
            [k] if d[*k].unsigned_abs() == 1 => Some(Direction::new(*k as u8, d[*k] > 0)),
            _ => None,
        }
    }

    /// The frame of the connector on this face of a cube whose `M` frame
    /// is `M0`'s (002 Fig 5.10): `C0X`, `C0Y`, `C0Z` on the positive
    /// faces, `'C1X'`, `C1Z`, `C1Y` on the negative ones.
    #[must_use]
    pub fn face_frame(self) -> Isometry3<f64> {
        let home = home_middle_frames();
        let (submodule, connector) = match (self.axis, self.positive) {
            (0, true) => (0, Connector::C0X),
            (1, true) => (0, Connector::C0Y),
            (2, true) => (0, Connector::C0Z),
            (0, false) => (1, Connector::C1X),
            (1, false) => (1, Connector::C1Z),
            _ => (1, Connector::C1Y),
        };
        home[submodule] * connector.in_middle_frame()
    }
}

/// A connector frame on a face of a grid cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GridTarget {
    pub cell: [i32; 3],
    pub direction: Direction,
    /// Quarter-turns about the face normal, 0..4.
    pub orientation: u8,
}

impl GridTarget {
    /// Its frame in `M0` of the first module.
    #[must_use]
    pub fn frame(&self) -> Isometry3<f64> {
        let offset = Vector3::new(
            f64::from(self.cell[0]),
            f64::from(self.cell[1]),
            f64::from(self.cell[2]),
        ) * CELL;
        let turn = UnitQuaternion::from_axis_angle(
            &Vector3::z_axis(),
            f64::from(self.orientation) * FRAC_PI_2,
        );
        Translation3::from(offset)
            * self.direction.face_frame()
            * Isometry3::from_parts(Default::default(), turn)
    }

    /// The grid target a frame is, when it is one (within 1e-6 m and rad).
    #[must_use]
    pub fn of_frame(frame: &Isometry3<f64>) -> Option<GridTarget> {
        // The face centre is half a cell from its cube's centre along Z.
        let z = frame.rotation * Vector3::z();
        let direction = Direction::from_components(z.map(|c| c.round() as i32).into())?;
        if (z - z.map(f64::round)).norm() > 1e-6 {
            return None;
        }
        let centre = (frame.translation.vector - z * (CELL / 2.0)) / CELL;
        let cell = centre.map(f64::round);
        if (centre - cell).norm() > 1e-6 / CELL {
            return None;
        }
        let cell = [cell.x as i32, cell.y as i32, cell.z as i32];
        (0..4).find_map(|orientation| {
            let target = GridTarget {
                cell,
                direction,
                orientation,
            };
            (target.frame().rotation.angle_to(&frame.rotation) < 1e-6).then_some(target)
        })
    }
}

/// For each grid target some pose of the joint grid reaches exactly, a
/// collision-free pose reaching it (`None`: reached only by colliding
/// poses).
pub type ReachMap = BTreeMap<GridTarget, Option<MetaJoints>>;

/// Every pose of the joint grid with `steps` per turn (12: π/6) through
/// `visit`.
fn each_grid_pose(steps: u32, mut visit: impl FnMut(MetaJoints)) {
    let angle = |k: u32| f64::from(k) * std::f64::consts::TAU / f64::from(steps);
    let n = steps;
    for a in 0..n {
        for b in 0..n {
            for c in 0..n {
                for d in 0..n {
                    for e in 0..n {
                        for f in 0..n {
                            visit(crate::module::wrapped([
                                angle(a),
                                angle(b),
                                angle(c),
                                angle(d),
                                angle(e),
                                angle(f),
                            ]));
                        }
                    }
                }
            }
        }
    }
}

/// The reachability map of `solver`'s meta-module (and floor) over the
/// joint grid of `steps` per turn (12 for π/6; it must be a multiple of
/// 12 to hold the lattice).
#[must_use]
pub fn reach_map(solver: &Solver, steps: u32) -> ReachMap {
    let meta = solver.meta();
    let mut map = ReachMap::new();
    each_grid_pose(steps, |q| {
        let Some(target) = GridTarget::of_frame(&meta.end(q)) else {
            return;
        };
        let entry = map.entry(target).or_insert(None);
        if entry.is_none() && solver.is_free(q) {
            *entry = Some(q);
        }
    });
    map
}

/// The π/6 step of the seed's rounding, for the reader.
pub const SEED_ROUNDING: f64 = FRAC_PI_6;

/// The targets of 002 §5.3's plane: the meta-module lies on a floor of
/// connectors (its first cube on the floor cell `(0, 0, 0)`), and each
/// floor cell within three cells, its top face seen from above (the
/// connector faces down onto it), in four quarter-turns.
#[must_use]
pub fn plane_targets() -> Vec<GridTarget> {
    let mut targets = Vec::new();
    for dx in -3..=3 {
        for dy in -3..=3 {
            if (dx, dy) == (0, 0) {
                continue;
            }
            for orientation in 0..4 {
                targets.push(GridTarget {
                    cell: [dx, dy, 0],
                    direction: Direction::new(2, false),
                    orientation,
                });
            }
        }
    }
    targets
}

/// The floor under the plane experiment: the bottom faces of the cells
/// at `z = 0`.
#[must_use]
pub fn plane_floor() -> Isometry3<f64> {
    Isometry3::translation(0.0, 0.0, -CELL / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{ConnectionType, MetaModule};
    use crate::ik::lattice;

    #[test]
    fn a_grid_target_reads_back_from_its_frame() {
        for direction in Direction::ALL {
            for orientation in 0..4 {
                let t = GridTarget {
                    cell: [2, -1, 3],
                    direction,
                    orientation,
                };
                assert_eq!(GridTarget::of_frame(&t.frame()), Some(t));
            }
        }
        // The seed's example: reachfw 010 100 3.
        let example = GridTarget {
            cell: [0, 1, 0],
            direction: Direction::from_components([1, 0, 0]).unwrap(),
            orientation: 3,
        };
        let f = example.frame();
        assert!((f.translation.vector - Vector3::new(CELL / 2.0, CELL, 0.0)).norm() < 1e-12);
        assert_eq!(Direction::from_components([1, 1, 0]), None);
        assert_eq!(Direction::from_components([0, 0, 2]), None);
    }

    #[test]
    fn the_lattice_holds_63_distinct_cube_placements_per_connection_type() {
        // 003 §2.4: 5,184 configurations, 63 distinct per connection type
        // (the cells of the three cubes other than the root's).
        let mut total = 0;
        for t in ConnectionType::ALL {
            let meta = MetaModule::new(t);
            let mut placements = std::collections::BTreeSet::new();
            for q in lattice() {
                total += 1;
                let cells: Vec<[i64; 3]> = meta.cube_centres(q)[1..]
                    .iter()
                    .map(|c| {
                        let c = c / CELL;
                        [c.x.round() as i64, c.y.round() as i64, c.z.round() as i64]
                    })
                    .collect();
                placements.insert(cells);
            }
            assert_eq!(placements.len(), 63, "{t}");
        }
        assert_eq!(total, 5184);
    }

    #[test]
    fn the_lattice_end_lands_on_grid_targets_within_three_cells() {
        for t in ConnectionType::ALL {
            let meta = MetaModule::new(t);
            let mut farthest = 0;
            for q in lattice() {
                let target = GridTarget::of_frame(&meta.end(q)).expect("a grid frame");
                farthest = target.cell.iter().map(|c| c.abs()).fold(farthest, i32::max);
            }
            assert_eq!(farthest, 3, "{t}");
        }
    }
}
