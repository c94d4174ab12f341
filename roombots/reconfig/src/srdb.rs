//! The Servo Rotation Database of 003 §2.4: every pose of a meta-module's
//! six servos that puts its four cubes on grid cells, indexed by where the
//! goal cube lands (the GridMap) and by the shape of the whole
//! meta-module (the ConfigurationMap).
//!
//! Servos 1, 3, 4 and 6 (the outer joints) take 0, 2π/3 and 4π/3; servos
//! 2 and 5 (the middle joints) 0, π/2, π and 3π/2: 1,296 poses per
//! connection type, 5,184 in all. Cells are the root cube's frame (its
//! `M` frame, the active connector's cube), the root cube at the origin.
//! Two poses are one configuration when their cubes' cells and the goal
//! connector's facing are the same (003 §2.4.4): 315 per connection
//! type. The seed's "exactly 63 different kinds of configurations" per
//! connection type (§3.1) are the ConfigurationMap's keys: the shapes, the
//! three cubes' cells without the facing.

use std::collections::HashMap;

use nalgebra::{Matrix3, Point3, Rotation3, Vector3};
use yamor_roombots::chain::{ConnectionType, MetaModule};
use yamor_roombots::module::{Connector, MIDDLE_STEP, ModulePose, OUTER_STEP};

use crate::grid::{Cell, Dir, Turn, cell_at, sub};

/// Poses visited per connection type: 3⁴ · 4².
pub const POSES_PER_TYPE: usize = 1296;

/// One configuration: a pose of the six servos and where it puts the
/// cubes, in the root cube's frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Configuration {
    /// The six servos in forward chain order, in steps: thirds of a turn
    /// for the outer joints (0–2), quarters for the middle ones (0–3).
    pub steps: [u8; 6],
    /// The four cubes' cells, the root first (always the origin), the goal
    /// cube last.
    pub cells: [Cell; 4],
    /// Where the goal cube's active connector faces: the neighbour it
    /// locks onto lies one cell that way.
    pub facing: Dir,
    /// The goal cube's frame (`M3` of the second module) in the root's:
    /// the root frame after an inchworm step.
    pub goal_turn: Turn,
}

impl Configuration {
    /// The six angles (rad), forward chain order.
    #[must_use]
    pub fn angles(&self) -> [f64; 6] {
        angles_of(self.steps)
    }

    /// The goal cube's cell.
    #[must_use]
    pub fn goal(&self) -> Cell {
        self.cells[3]
    }

    /// The same pose seen from the goal cube (the chain inverted, 002
    /// §2.1.2): its steps reversed. Seen from the goal cube's frame, the
    /// cubes lie where the table's configuration of the reversed steps
    /// puts them (tested), so one table serves both ends.
    #[must_use]
    pub fn reversed_steps(&self) -> [u8; 6] {
        let mut r = self.steps;
        r.reverse();
        r
    }

    /// The three cubes after the root: the ConfigurationMap's key.
    #[must_use]
    pub fn shape(&self) -> [Cell; 3] {
        [self.cells[1], self.cells[2], self.cells[3]]
    }
}

/// Where the root's active connector faces in the root's frame: the
/// floor (or whatever holds the root) lies that way.
#[must_use]
pub fn root_facing() -> Dir {
    let z = ModulePose::of([0.0; 3]).connector(Connector::C0X).rotation * Vector3::z();
    Dir::of(z.map(|v| v.round() as i32).into()).expect("C0X faces along an axis")
}

/// Step counts to angles.
#[must_use]
pub fn angles_of(steps: [u8; 6]) -> [f64; 6] {
    let mut q = [0.0; 6];
    for (k, s) in steps.iter().enumerate() {
        q[k] = f64::from(*s) * if k % 3 == 1 { MIDDLE_STEP } else { OUTER_STEP };
    }
    q
}

/// One connection type's configurations and their two indexes.
#[derive(Debug, Clone)]
pub struct Table {
    pub connection: ConnectionType,
    /// The kept configurations (one per cells and facing), then the poses
    /// they become seen from the goal cube that are not kept.
    configurations: Vec<Configuration>,
    /// How many are kept: the targets of queries.
    kept: usize,
    /// Each configuration's index seen from its goal cube.
    reversed: Vec<usize>,
    /// (goal cell, facing) → configurations (003 §2.4.3's GridMap).
    grid_map: HashMap<(Cell, Dir), Vec<usize>>,
    /// The three cubes' cells → configurations (the ConfigurationMap).
    configuration_map: HashMap<[Cell; 3], Vec<usize>>,
    /// Poses visited while generating.
    pub visited: usize,
}

impl Table {
    /// Every pose a meta-module rests in: the kept configurations first,
    /// then the poses they become after an inchworm step.
    #[must_use]
    pub fn configurations(&self) -> &[Configuration] {
        &self.configurations
    }

    /// The kept configurations (one per cells and facing): 315.
    #[must_use]
    pub fn kept(&self) -> &[Configuration] {
        &self.configurations[..self.kept]
    }

    /// Configuration `i` seen from its goal cube (after an inchworm step,
    /// the goal cube is the root): an index of [`Table::configurations`].
    #[must_use]
    pub fn reversed(&self, i: usize) -> usize {
        self.reversed[i]
    }

    /// The configurations that put the goal cube on `goal` facing `facing`
    /// (the root's frame).
    pub fn query_grid(&self, goal: Cell, facing: Dir) -> impl Iterator<Item = usize> + '_ {
        self.grid_map
            .get(&(goal, facing))
            .into_iter()
            .flatten()
            .copied()
    }

    /// The configurations of one shape (the three cubes after the root).
    pub fn query_shape(&self, shape: [Cell; 3]) -> impl Iterator<Item = usize> + '_ {
        self.configuration_map
            .get(&shape)
            .into_iter()
            .flatten()
            .copied()
    }

    /// The kept configuration with these cells and facing.
    #[must_use]
    pub fn find(&self, cells: [Cell; 4], facing: Dir) -> Option<usize> {
        self.query_grid(cells[3], facing)
            .find(|i| self.configurations[*i].cells == cells)
    }

    /// Distinct shapes: the seed's 63.
    #[must_use]
    pub fn shapes(&self) -> usize {
        self.configuration_map.len()
    }

    /// Distinct goal cells.
    #[must_use]
    pub fn goal_cells(&self) -> usize {
        let goals: std::collections::HashSet<Cell> = self.grid_map.keys().map(|k| k.0).collect();
        goals.len()
    }
}

/// The database: one table per connection type.
#[derive(Debug, Clone)]
pub struct Database {
    tables: Vec<Table>,
}

impl Database {
    /// Visits all 5,184 poses and indexes them.
    #[must_use]
    pub fn generate() -> Self {
        let modules = module_poses();
        // What a second module carries depends on its own pose only.
        let carried: Vec<Carried> = modules
            .iter()
            .map(|(_, m)| {
                (
                    m.cube_centre(0),
                    m.cube_centre(1),
                    m.connector(Connector::C3X).rotation * Vector3::z(),
                    m.middles[3].rotation.to_rotation_matrix(),
                )
            })
            .collect();
        Database {
            tables: ConnectionType::ALL
                .into_iter()
                .map(|t| generate_table(t, &modules, &carried))
                .collect(),
        }
    }

    #[must_use]
    pub fn table(&self, connection: ConnectionType) -> &Table {
        &self.tables[type_index(connection)]
    }

    #[must_use]
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }
}

fn type_index(t: ConnectionType) -> usize {
    ConnectionType::ALL
        .iter()
        .position(|x| *x == t)
        .expect("every type is in ALL")
}

/// A module's 36 poses on the lattice, by their three steps.
fn module_poses() -> Vec<([u8; 3], ModulePose)> {
    let mut poses = Vec::with_capacity(36);
    for a in 0..3u8 {
        for b in 0..4u8 {
            for c in 0..3u8 {
                let q = angles_of([a, b, c, 0, 0, 0]);
                poses.push(([a, b, c], ModulePose::of([q[0], q[1], q[2]])));
            }
        }
    }
    poses
}

/// What a second module's pose carries: its two cube centres, its goal
/// connector's outward axis and its goal frame, in its own `M0`.
type Carried = (Point3<f64>, Point3<f64>, Vector3<f64>, Rotation3<f64>);

fn generate_table(
    connection: ConnectionType,
    modules: &[([u8; 3], ModulePose)],
    carried: &[Carried],
) -> Table {
    let meta = MetaModule::new(connection);
    // The second module hangs from the first's C3X, by a link the same
    // whatever the first's pose: worked out once, at home.
    let home_second = ModulePose::of([0.0; 3]).middles[0];
    let home_c3x = ModulePose::of([0.0; 3]).connector(Connector::C3X);
    let link = home_c3x.inverse() * meta.poses([0.0; 6])[1].middles[0] * home_second.inverse();
    // Each first pose: the second module's frame as a matrix and an
    // offset from the root cube's centre (matrices transform faster), and
    // the first module's second cube.
    let held: Vec<(Matrix3<f64>, Vector3<f64>, Cell)> = modules
        .iter()
        .map(|(_, m)| {
            let h = m.connector(Connector::C3X) * link;
            let root = m.cube_centre(0);
            (
                *h.rotation.to_rotation_matrix().matrix(),
                h.translation.vector - root.coords,
                cell_at(&(m.cube_centre(1) - root)),
            )
        })
        .collect();
    // Module poses are numbered (a·4 + b)·3 + c by their steps. The goal
    // frame is worked out for the poses kept only.
    let goal_turn = |first: usize, second: usize| {
        Turn::of_matrix(&(held[first].0 * carried[second].3.matrix()))
            .expect("a lattice pose's frames lie along the grid")
    };
    let pose = |first: usize, second: usize| -> Configuration {
        let (r, t, c1) = &held[first];
        let (a, b, z, _) = &carried[second];
        let cell = |p: &Point3<f64>| cell_at(&(r * p.coords + t));
        let facing = Dir::of((r * z).map(|v| v.round() as i32).into())
            .expect("a lattice pose faces along an axis");
        let (s1, s2) = (modules[first].0, modules[second].0);
        Configuration {
            steps: [s1[0], s1[1], s1[2], s2[0], s2[1], s2[2]],
            cells: [[0, 0, 0], *c1, cell(a), cell(b)],
            facing,
            goal_turn: Turn::IDENTITY,
        }
    };
    let number = |s: [u8; 3]| (usize::from(s[0]) * 4 + usize::from(s[1])) * 3 + usize::from(s[2]);
    let mut table = Table {
        connection,
        configurations: Vec::with_capacity(640),
        kept: 0,
        reversed: Vec::new(),
        grid_map: HashMap::with_capacity(256),
        configuration_map: HashMap::with_capacity(64),
        visited: 0,
    };
    // A shape is three unit steps (6³) and a facing (6): 1,296 slots.
    let mut seen = [false; 6 * 6 * 6 * 6];
    for first in 0..modules.len() {
        for second in 0..modules.len() {
            table.visited += 1;
            let mut c = pose(first, second);
            let slot = [
                c.cells[1],
                sub(c.cells[2], c.cells[1]),
                sub(c.cells[3], c.cells[2]),
            ]
            .iter()
            .fold(0, |k, step| {
                k * 6 + Dir::of(*step).expect("cubes side by side").index()
            });
            if std::mem::replace(&mut seen[slot * 6 + c.facing.index()], true) {
                continue;
            }
            c.goal_turn = goal_turn(first, second);
            let index = table.configurations.len();
            table
                .grid_map
                .entry((c.goal(), c.facing))
                .or_default()
                .push(index);
            table
                .configuration_map
                .entry(c.shape())
                .or_default()
                .push(index);
            table.configurations.push(c);
        }
    }
    table.kept = table.configurations.len();
    // Each kept pose seen from its goal cube, appended when not kept: the
    // poses a meta-module rests in after an inchworm step.
    // Poses by their two modules' numbers.
    let mut by_steps = vec![usize::MAX; modules.len() * modules.len()];
    let code = |s: [u8; 6]| number([s[0], s[1], s[2]]) * modules.len() + number([s[3], s[4], s[5]]);
    for (i, c) in table.configurations.iter().enumerate() {
        by_steps[code(c.steps)] = i;
    }
    table.reversed = vec![usize::MAX; table.kept];
    for i in 0..table.kept {
        let r = table.configurations[i].reversed_steps();
        let mut j = by_steps[code(r)];
        if j == usize::MAX {
            let (first, second) = (number([r[0], r[1], r[2]]), number([r[3], r[4], r[5]]));
            let mut c = pose(first, second);
            c.goal_turn = goal_turn(first, second);
            table.configurations.push(c);
            table.reversed.push(i);
            j = table.configurations.len() - 1;
            by_steps[code(r)] = j;
        }
        table.reversed[i] = j;
    }
    table
}

/// The joint travel from `from` to `to` the shortest way round, each
/// joint in (−π, π] (003 §2.5.4: the goal rotation normalised).
#[must_use]
pub fn travel(from: [f64; 6], to: [f64; 6]) -> [f64; 6] {
    let mut d = [0.0; 6];
    for k in 0..6 {
        d[k] = yamor_roombots::module::wrap(to[k] - from[k]);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn all_5184_poses_give_63_shapes_per_connection_type() {
        let db = Database::generate();
        let mut visited = 0;
        for table in db.tables() {
            visited += table.visited;
            assert_eq!(table.visited, POSES_PER_TYPE);
            assert_eq!(table.shapes(), 63, "{}", table.connection);
            assert_eq!(table.kept().len(), 315, "{}", table.connection);
            for c in table.configurations() {
                // On the grid, four distinct cells, each cube beside the next.
                let cells: HashSet<Cell> = c.cells.into_iter().collect();
                assert_eq!(cells.len(), 4, "{c:?}");
                for w in c.cells.windows(2) {
                    assert_eq!(crate::grid::distance2(w[0], w[1]), 1, "{c:?}");
                }
                // The cubes' cells agree with the chain's own forward
                // kinematics (through the meta-module's whole chain).
                let meta = MetaModule::new(table.connection);
                let centres = meta.cube_centres(c.angles());
                for (k, p) in centres.iter().enumerate() {
                    let cell = cell_at(&(p - centres[0]));
                    assert_eq!(cell, c.cells[k]);
                }
                let kept = table
                    .find(c.cells, c.facing)
                    .expect("every pose's cells and facing are kept");
                assert!(table.query_grid(c.goal(), c.facing).any(|i| i == kept));
                assert!(table.query_shape(c.shape()).any(|i| i == kept));
            }
        }
        assert_eq!(visited, 5184);
    }

    #[test]
    fn seen_from_the_goal_cube_a_configuration_is_the_one_of_its_reversed_steps() {
        use nalgebra::Point3;
        let db = Database::generate();
        for table in db.tables() {
            let meta = MetaModule::new(table.connection);
            for (i, c) in table.configurations().iter().enumerate() {
                let poses = meta.poses(c.angles());
                let goal = poses[1].middles[3];
                // Independently of the table: the chain's frames.
                let turn = Turn::of_matrix(goal.rotation.to_rotation_matrix().matrix()).unwrap();
                assert_eq!(turn, c.goal_turn);
                let centres = meta.cube_centres(c.angles());
                let from_goal = |p: &Point3<f64>| -> Cell {
                    cell_at(&(goal.inverse() * p - goal.inverse() * Point3::from(centres[3])))
                };
                let cells = [3, 2, 1, 0].map(|k: usize| from_goal(&Point3::from(centres[k])));
                let facing = Dir::of(
                    (goal.inverse().rotation
                        * (poses[0].connector(Connector::C0X).rotation * Vector3::z()))
                    .map(|v| v.round() as i32)
                    .into(),
                )
                .unwrap();
                let r = table.configurations()[table.reversed(i)];
                assert_eq!(
                    (r.cells, r.facing),
                    (cells, facing),
                    "{}: {c:?}",
                    table.connection
                );
                assert_eq!(r.steps, c.reversed_steps());
                assert_eq!(table.reversed(table.reversed(i)), i);
            }
        }
    }
}
