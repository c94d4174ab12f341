//! The cells a move sweeps (003 §2.4.4's `getCloud`), fast: the cube
//! centres by products of exponentials about the six home axes, and every
//! pair of a table's configurations swept once into a table of bit sets,
//! so that a search for intermediate configurations (§2.6.4: levels 1, 2
//! and 3) is bit-set ANDs.

use nalgebra::{Matrix3, Vector3};
use yamor_roombots::chain::MetaModule;

use crate::grid::{CellSet, cell_at};
use crate::srdb::Table;

/// The seed's `ROTATION_STEP` (003 §3.1): the sweeps builds use.
pub const ROTATION_STEP: f64 = std::f64::consts::PI / 8.0;

/// A meta-module's cube centres relative to its root cube, from the six
/// joint angles.
#[derive(Debug, Clone)]
pub struct Sweeper {
    /// Each joint at home: the rotation's skew matrix of its unit axis,
    /// and a point on it (relative to the root cube's centre).
    axes: [(Matrix3<f64>, Vector3<f64>); 6],
    /// Cubes 1–3 at home, relative to the root cube's centre.
    home: [Vector3<f64>; 3],
}

impl Sweeper {
    #[must_use]
    pub fn new(meta: &MetaModule) -> Self {
        let centres = meta.cube_centres([0.0; 6]);
        let root = centres[0];
        let axes = meta.joint_axes([0.0; 6]).map(|a| {
            let u = a.direction.into_inner();
            (u.cross_matrix(), a.point.coords - root)
        });
        Sweeper {
            axes,
            home: [centres[1] - root, centres[2] - root, centres[3] - root],
        }
    }

    /// The four cube centres (m), the root's at the origin.
    #[must_use]
    pub fn centres(&self, q: [f64; 6]) -> [Vector3<f64>; 4] {
        // Joint k turns everything after it about its home axis; a cube
        // sits on the axis of the joint inside it, so cube 1 moves with
        // joints 0–1, cube 2 with 0–2, cube 3 with 0–4.
        let mut r = Matrix3::identity();
        let mut t = Vector3::zeros();
        let turn = |k: usize, r: &mut Matrix3<f64>, t: &mut Vector3<f64>| {
            let (kk, p) = &self.axes[k];
            let (s, c) = q[k].sin_cos();
            let rk = Matrix3::identity() + kk * s + kk * kk * (1.0 - c);
            let tk = p - rk * p;
            *t += *r * tk;
            *r *= rk;
        };
        turn(0, &mut r, &mut t);
        turn(1, &mut r, &mut t);
        let c1 = r * self.home[0] + t;
        turn(2, &mut r, &mut t);
        let c2 = r * self.home[1] + t;
        turn(3, &mut r, &mut t);
        turn(4, &mut r, &mut t);
        let c3 = r * self.home[2] + t;
        [Vector3::zeros(), c1, c2, c3]
    }

    /// The cells the cubes pass through while the six joints turn
    /// together from `from` by `travel`: the cube centres' cells at every
    /// `step` of the farthest-turning joint, both ends included. A cube is
    /// in the cell its centre is in.
    #[must_use]
    pub fn cloud(&self, from: [f64; 6], travel: [f64; 6], step: f64) -> CellSet {
        let longest = travel.iter().fold(0.0f64, |m, d| m.max(d.abs()));
        let n = (longest / step).ceil().max(1.0) as usize;
        let mut set = CellSet::EMPTY;
        for s in 0..=n {
            let t = s as f64 / n as f64;
            let mut q = from;
            for k in 0..6 {
                q[k] += travel[k] * t;
            }
            for c in self.centres(q) {
                set.insert(cell_at(&c));
            }
        }
        set
    }
}

/// The joint travel from configuration `a` to `b` of a table, the shortest
/// way round; a middle joint turning half a turn goes forward from the
/// lower index to the higher, so that `b` to `a` sweeps the same cells.
#[must_use]
pub fn travel_between(table: &Table, a: usize, b: usize) -> [f64; 6] {
    let (qa, qb) = (
        table.configurations()[a].angles(),
        table.configurations()[b].angles(),
    );
    let mut d = crate::srdb::travel(qa, qb);
    for v in &mut d {
        if (v.abs() - std::f64::consts::PI).abs() < 1e-9 {
            *v = if a < b {
                std::f64::consts::PI
            } else {
                -std::f64::consts::PI
            };
        }
    }
    d
}

/// Every pair of a table's configurations swept at one step.
#[derive(Debug, Clone)]
pub struct Clouds {
    pub step: f64,
    n: usize,
    /// Row-major upper triangle, the diagonal included.
    sets: Vec<CellSet>,
}

impl Clouds {
    /// Sweeps all pairs on `threads` threads.
    #[must_use]
    pub fn build(table: &Table, step: f64, threads: usize) -> Self {
        let meta = MetaModule::new(table.connection);
        let sweeper = Sweeper::new(&meta);
        let n = table.configurations().len();
        let rows: Vec<usize> = (0..n).collect();
        let chunk = n.div_ceil(threads.max(1));
        let mut parts: Vec<Vec<CellSet>> = Vec::new();
        std::thread::scope(|scope| {
            let handles: Vec<_> = rows
                .chunks(chunk)
                .map(|rows| {
                    let sweeper = &sweeper;
                    scope.spawn(move || {
                        let mut sets = Vec::new();
                        for &a in rows {
                            let qa = table.configurations()[a].angles();
                            for b in a..n {
                                sets.push(sweeper.cloud(qa, travel_between(table, a, b), step));
                            }
                        }
                        sets
                    })
                })
                .collect();
            parts = handles
                .into_iter()
                .map(|h| h.join().expect("a sweeping thread panicked"))
                .collect();
        });
        Clouds {
            step,
            n,
            sets: parts.into_iter().flatten().collect(),
        }
    }

    /// The cells swept between configurations `a` and `b` (either way).
    #[must_use]
    pub fn get(&self, a: usize, b: usize) -> &CellSet {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        // Rows before `a` hold n, n − 1, …, n − a + 1 entries.
        let row_start = a * (2 * self.n - a + 1) / 2;
        &self.sets[row_start + (b - a)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::srdb::Database;
    use yamor_roombots::chain::ConnectionType;

    #[test]
    fn the_fast_centres_are_the_chains_own() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 20.0
        };
        for t in ConnectionType::ALL {
            let meta = MetaModule::new(t);
            let sweeper = Sweeper::new(&meta);
            for _ in 0..50 {
                let q = [next(), next(), next(), next(), next(), next()];
                let slow = meta.cube_centres(q);
                let fast = sweeper.centres(q);
                for k in 0..4 {
                    assert!(
                        ((slow[k] - slow[0]) - fast[k]).norm() < 1e-9,
                        "{t} {q:?} cube {k}"
                    );
                }
            }
        }
    }

    /// The seed's way: the whole chain's forward kinematics at every step.
    fn brute_force_cloud(meta: &MetaModule, from: [f64; 6], to: [f64; 6], steps: usize) -> CellSet {
        let travel = crate::srdb::travel(from, to);
        let mut set = CellSet::EMPTY;
        for s in 0..=steps {
            let mut q = from;
            for k in 0..6 {
                q[k] += travel[k] * s as f64 / steps as f64;
            }
            let centres = meta.cube_centres(q);
            for c in centres {
                set.insert(cell_at(&(c - centres[0])));
            }
        }
        set
    }

    #[test]
    fn a_cloud_is_the_brute_force_interpolations_cells_and_holds_both_ends() {
        let db = Database::generate();
        let step = std::f64::consts::PI / 360.0;
        for t in ConnectionType::ALL {
            let table = db.table(t);
            let meta = MetaModule::new(t);
            let sweeper = Sweeper::new(&meta);
            let n = table.configurations().len();
            let mut moved = 0;
            for k in 0..60 {
                let (a, b) = ((k * 37) % n, (k * 101 + 5) % n);
                let (ca, cb) = (table.configurations()[a], table.configurations()[b]);
                let travel = crate::srdb::travel(ca.angles(), cb.angles());
                let steps = (travel.iter().fold(0.0f64, |m, d| m.max(d.abs())) / step)
                    .ceil()
                    .max(1.0) as usize;
                let cloud = sweeper.cloud(ca.angles(), travel, step);
                assert_eq!(
                    cloud,
                    brute_force_cloud(&meta, ca.angles(), cb.angles(), steps),
                    "{t}: {a} → {b}"
                );
                for c in ca.cells.iter().chain(&cb.cells) {
                    assert!(cloud.contains(*c), "{t}: {c:?} of an end");
                }
                let ends: CellSet = ca.cells.into_iter().chain(cb.cells).collect();
                moved += usize::from(cloud.len() > ends.len());
            }
            // Most moves sweep cells beyond their two ends.
            assert!(moved > 30, "{t}: {moved} of 60");
            // Standing still sweeps only the cubes.
            let a = table.configurations()[0];
            assert_eq!(
                sweeper.cloud(a.angles(), [0.0; 6], step),
                a.cells.into_iter().collect()
            );
        }
    }

    #[test]
    fn the_table_of_clouds_is_every_pair_swept_either_way() {
        let db = Database::generate();
        let table = db.table(ConnectionType::Perpendicular);
        let step = ROTATION_STEP;
        let clouds = Clouds::build(table, step, 2);
        let sweeper = Sweeper::new(&MetaModule::new(table.connection));
        let n = table.configurations().len();
        for (a, b) in [
            (0, 0),
            (0, 1),
            (3, 200),
            (200, 3),
            (n - 1, n - 1),
            (17, n - 1),
        ] {
            let qa = table.configurations()[a].angles();
            assert_eq!(
                *clouds.get(a, b),
                sweeper.cloud(qa, travel_between(table, a, b), step),
                "{a} → {b}"
            );
        }
    }
}
