//! Whether a posed meta-module runs into itself or the floor, checked
//! against the module's shape: each submodule is half of a cube of side
//! [`CELL`] cut from a sphere of radius [`RADIUS`], halved by the plane
//! through the cube's centre perpendicular to its diagonal (002 §1.1.3).
//!
//! Each half is a convex polyhedron: the hull of points sampled on its
//! surface (faces, the rounded edges, the cut disc), which lies inside the
//! true shape by at most [`SAMPLING_GAP`]. Two submodules collide when
//! they overlap by more than [`TOLERANCE`] (parry's contact query);
//! neighbours in the chain touch by design and are not compared.

use std::sync::OnceLock;

use nalgebra::{Isometry3, Vector3};
use parry3d::math::{Pose3, Rot3, Vec3};
use parry3d::shape::ConvexPolyhedron;

use crate::module::{CELL, HALF, ModulePose, RADIUS};

/// Overlap allowed between two submodules (m): faces that touch on the
/// lattice meet at 0, within floating-point noise.
pub const TOLERANCE: f64 = 1e-4;
/// How far inside the true shape the sampled hull may lie (m), at most.
pub const SAMPLING_GAP: f64 = 1e-3;
/// Samples per face edge: the gap between samples on the rounded rim is
/// about `CELL / SAMPLES` and the hull's chord sag (`gap² / 8r`) below
/// [`SAMPLING_GAP`].
const SAMPLES: usize = 10;

/// The `+++` half of a cube in its `M` frame, as hull points.
fn half_points() -> Vec<Vector3<f64>> {
    let inside = |p: Vector3<f64>| p.x + p.y + p.z >= -1e-12;
    // A point of the cube's surface pulled onto the sphere where it lies
    // beyond it: on the boundary of cube ∩ sphere.
    let onto_shape = |p: Vector3<f64>| {
        if p.norm() > RADIUS {
            p * (RADIUS / p.norm())
        } else {
            p
        }
    };
    let mut points = Vec::new();
    let step = CELL / SAMPLES as f64;
    for axis in 0..3 {
        for sign in [-1.0, 1.0] {
            for i in 0..=SAMPLES {
                for j in 0..=SAMPLES {
                    let (u, v) = (-HALF + i as f64 * step, -HALF + j as f64 * step);
                    let mut p = Vector3::zeros();
                    p[axis] = sign * HALF;
                    p[(axis + 1) % 3] = u;
                    p[(axis + 2) % 3] = v;
                    let p = onto_shape(p);
                    if inside(p) {
                        points.push(p);
                    }
                }
            }
        }
    }
    points.extend(rims(8 * SAMPLES));
    points
}

/// Points on the exact rims of the `+++` half: `per_rim` on each face
/// disc's circle (where the flat face meets the sphere) that lies on the
/// half, and `per_rim` on the cut's rim (the shape's edge in the plane
/// x + y + z = 0).
pub(crate) fn rims(per_rim: usize) -> Vec<Vector3<f64>> {
    let mut points = Vec::new();
    let angle = |k: usize| k as f64 / per_rim as f64 * std::f64::consts::TAU;
    let disc = (RADIUS * RADIUS - HALF * HALF).sqrt();
    for axis in 0..3 {
        for sign in [-1.0, 1.0] {
            for k in 0..per_rim {
                let a = angle(k);
                let mut p = Vector3::zeros();
                p[axis] = sign * HALF;
                p[(axis + 1) % 3] = disc * a.cos();
                p[(axis + 2) % 3] = disc * a.sin();
                if p.x + p.y + p.z >= -1e-12 {
                    points.push(p);
                }
            }
        }
    }
    let u = Vector3::new(1.0, -1.0, 0.0).normalize();
    let v = Vector3::new(1.0, 1.0, -2.0).normalize();
    for k in 0..per_rim {
        let a = angle(k);
        let d = u * a.cos() + v * a.sin();
        // The cube's boundary along d, then the sphere's.
        let to_cube = HALF / d.abs().max();
        points.push(d * to_cube.min(RADIUS));
    }
    points
}

fn half_shape() -> &'static (ConvexPolyhedron, Vec<Vector3<f64>>) {
    static SHAPE: OnceLock<(ConvexPolyhedron, Vec<Vector3<f64>>)> = OnceLock::new();
    SHAPE.get_or_init(|| {
        let points = half_points();
        let glam: Vec<Vec3> = points
            .iter()
            .map(|p| Vec3::new(p.x as f32, p.y as f32, p.z as f32))
            .collect();
        let hull = ConvexPolyhedron::from_convex_hull(&glam).expect("a half cube has a hull");
        let vertices = hull
            .points()
            .iter()
            .map(|p| Vector3::new(f64::from(p.x), f64::from(p.y), f64::from(p.z)))
            .collect();
        (hull, vertices)
    })
}

/// The vertices of a half's hull, in its `M` frame: what a picture draws.
pub(crate) fn half_vertices() -> &'static [Vector3<f64>] {
    &half_shape().1
}

fn pose(m: &Isometry3<f64>) -> Pose3 {
    let t = m.translation.vector;
    let q = m.rotation.coords;
    Pose3::from_parts(
        Vec3::new(t.x as f32, t.y as f32, t.z as f32),
        Rot3::from_xyzw(q.x as f32, q.y as f32, q.z as f32, q.w as f32).normalize(),
    )
}

/// Whether two submodules, their `M` frames given, overlap.
#[must_use]
pub fn submodules_overlap(a: &Isometry3<f64>, b: &Isometry3<f64>) -> bool {
    submodules_depth(a, b) > TOLERANCE
}

/// How deep two submodules, their `M` frames given, run into each other
/// (m; 0 when apart or touching).
#[must_use]
pub fn submodules_depth(a: &Isometry3<f64>, b: &Isometry3<f64>) -> f64 {
    // Too far apart to touch: each lies within RADIUS of its centre.
    if (a.translation.vector - b.translation.vector).norm() > 2.0 * RADIUS {
        return 0.0;
    }
    let (shape, _) = half_shape();
    depth(parry3d::query::contact(
        &pose(a),
        shape,
        &pose(b),
        shape,
        0.0,
    ))
}

/// The depth of a contact query's answer; convex shapes are supported, so
/// an error is taken as the deepest overlap rather than as none.
fn depth(contact: Result<Option<parry3d::query::Contact>, parry3d::query::Unsupported>) -> f64 {
    match contact {
        Ok(Some(contact)) => f64::from(-contact.dist).max(0.0),
        Ok(None) => 0.0,
        Err(_) => f64::INFINITY,
    }
}

/// How deep the cubes of two modules' chains run into each other (m): the
/// deepest overlap of a submodule of `a` with one of `b` (two meta-modules,
/// or a meta-module and one that settled).
#[must_use]
pub fn chains_depth(a: &[ModulePose], b: &[ModulePose]) -> f64 {
    let (a, b) = (halves(a), halves(b));
    a.iter()
        .flat_map(|x| b.iter().map(move |y| submodules_depth(x, y)))
        .fold(0.0, f64::max)
}

/// How deep any submodule of `modules` runs into the cube of side
/// [`CELL`] centred at `centre` (m).
#[must_use]
pub fn cell_depth(modules: &[ModulePose], centre: &Vector3<f64>) -> f64 {
    halves_cell_depth(&halves(modules), centre)
}

/// [`cell_depth`] of submodules given by their `M` frames.
#[must_use]
pub fn halves_cell_depth(halves: &[Isometry3<f64>], centre: &Vector3<f64>) -> f64 {
    let (shape, _) = half_shape();
    let cube = parry3d::shape::Cuboid::new(Vec3::splat(HALF as f32));
    let at = pose(&Isometry3::translation(centre.x, centre.y, centre.z));
    halves
        .iter()
        // A half lies within RADIUS of its centre; a cube within HALF·√3.
        .filter(|m| (m.translation.vector - centre).norm() <= RADIUS + HALF * 3f64.sqrt())
        .map(|m| depth(parry3d::query::contact(&pose(m), shape, &at, &cube, 0.0)))
        .fold(0.0, f64::max)
}

/// The submodules' `M` frames of posed modules in chain order: modules in
/// order, each from submodule 0 to 3.
#[must_use]
pub fn halves(modules: &[ModulePose]) -> Vec<Isometry3<f64>> {
    modules.iter().flat_map(|m| m.middles).collect()
}

/// Whether a submodule's frame sits on the grid: axes along the grid's,
/// centre on a cell centre (of the frame the poses are given in).
fn on_grid(m: &Isometry3<f64>) -> bool {
    let cell = m.translation.vector / CELL;
    axes_on_grid(m) && (cell - cell.map(f64::round)).amax() < 1e-9
}

/// Whether a frame's axes lie along the grid's.
fn axes_on_grid(m: &Isometry3<f64>) -> bool {
    let r = m.rotation.to_rotation_matrix();
    r.matrix()
        .iter()
        .all(|x| (x.abs() - x.abs().round()).abs() < 1e-9)
}

/// The first pair of cubes (chain indices, two per module) of `modules`,
/// joined in one chain end to end, that overlap.
///
/// Cubes next to each other in the chain are not compared: the module is
/// built for their halves to turn against each other (about the shared
/// face's normal, or about a diagonal), and across modules they are locked
/// face to face. The idealised shapes do overlap there, by up to 2.7 mm at
/// some angles of a diagonal joint (a half's rounded rim crossing the
/// neighbouring cube's face disc), which the real shells clear. Of the
/// others: cubes further apart than two radii cannot touch; cubes whose
/// halves all sit on the grid are whole cubes in cells (a half turned a
/// third of a turn is the other half's twin) and overlap only in the same
/// cell; the rest are compared half by half with parry.
#[must_use]
pub fn self_collision(modules: &[ModulePose]) -> Option<(usize, usize)> {
    let halves = halves(modules);
    let cubes: Vec<&[Isometry3<f64>]> = halves.chunks(2).collect();
    for k in 0..cubes.len() {
        for l in k + 2..cubes.len() {
            let (a, b) = (cubes[k], cubes[l]);
            let apart = (a[0].translation.vector - b[0].translation.vector).norm();
            if apart > 2.0 * RADIUS {
                continue;
            }
            let overlap = if a.iter().chain(b).all(on_grid) {
                apart < CELL / 2.0
            } else {
                a.iter().any(|x| b.iter().any(|y| submodules_overlap(x, y)))
            };
            if overlap {
                return Some((k, l));
            }
        }
    }
    None
}

/// How deep the lowest point of `modules` lies below the plane `z =
/// floor` of their frame (0 when nothing does).
#[must_use]
pub fn below(modules: &[ModulePose], floor: &Isometry3<f64>) -> f64 {
    halves_below(&halves(modules), floor)
}

/// How high the lowest point of `halves` (submodules' `M` frames) stands
/// above the plane `z = 0` of `floor` (m; negative below it).
#[must_use]
pub fn halves_height(halves: &[Isometry3<f64>], floor: &Isometry3<f64>) -> f64 {
    lowest_under(halves, floor, f64::INFINITY)
}

/// [`below`] of submodules given by their `M` frames.
#[must_use]
pub fn halves_below(halves: &[Isometry3<f64>], floor: &Isometry3<f64>) -> f64 {
    -lowest_under(halves, floor, 0.0)
}

/// The height above the plane `z = 0` of `floor` of the lowest point of
/// `halves`, or `ceiling` when none lies lower.
fn lowest_under(halves: &[Isometry3<f64>], floor: &Isometry3<f64>, ceiling: f64) -> f64 {
    let (_, vertices) = half_shape();
    let to_floor = floor.inverse();
    let mut lowest = ceiling;
    for m in halves {
        let in_floor = to_floor * m;
        let height = in_floor.translation.vector.z;
        // A half lies within RADIUS of its centre, and within HALF of it
        // along each axis when its axes lie along the grid's: only the
        // halves that may reach lower are looked at closely.
        if height - RADIUS >= lowest || (axes_on_grid(&in_floor) && height - HALF >= lowest - 1e-9)
        {
            continue;
        }
        for v in vertices {
            lowest = lowest.min(in_floor.transform_point(&(*v).into()).z);
        }
    }
    lowest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{ConnectionType, MetaModule};

    #[test]
    fn the_hull_lies_within_the_sampling_gap_of_the_true_surface() {
        use parry3d::query::PointQuery;
        use rand::{Rng, SeedableRng};
        let (hull, _) = half_shape();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut worst = 0.0_f64;
        for _ in 0..20_000 {
            let d = Vector3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            );
            if d.norm() < 1e-3 || d.x + d.y + d.z < 0.0 {
                continue;
            }
            let d = d.normalize();
            // The true surface along d: the cube's face or the sphere.
            let p = d * (HALF / d.abs().max()).min(RADIUS);
            let outside =
                hull.distance_to_local_point(Vec3::new(p.x as f32, p.y as f32, p.z as f32), true);
            worst = worst.max(f64::from(outside));
        }
        assert!(worst <= SAMPLING_GAP, "{worst}");
    }

    #[test]
    fn cubes_closer_than_a_cell_always_collide() {
        // Every cube holds the ball of radius HALF about its centre, however
        // its halves are turned: two non-neighbours closer than a cell
        // overlap, and self_collision must say so.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
        let mut crowded = 0;
        for t in ConnectionType::ALL {
            let meta = MetaModule::new(t);
            for _ in 0..2000 {
                let q: [f64; 6] = std::array::from_fn(|_| {
                    rng.random_range(-std::f64::consts::PI..std::f64::consts::PI)
                });
                let c = meta.cube_centres(q);
                let close = [(0, 2), (0, 3), (1, 3)]
                    .iter()
                    .any(|&(a, b)| (c[a] - c[b]).norm() < CELL * 0.99);
                if close {
                    crowded += 1;
                    assert!(self_collision(&meta.poses(q)).is_some(), "{t}: {q:?}");
                }
            }
        }
        assert!(crowded > 100, "{crowded} crowded poses tried");
    }

    #[test]
    fn the_sampled_half_stays_inside_the_true_shape_and_close_to_it() {
        let points = half_points();
        for p in &points {
            assert!(p.norm() <= RADIUS + 1e-12);
            assert!(p.abs().max() <= HALF + 1e-12);
            assert!(p.x + p.y + p.z >= -1e-9);
        }
        // The face discs reach √(R² − h²) = 43.3 mm from their centre.
        let disc = (RADIUS * RADIUS - HALF * HALF).sqrt();
        let widest = points
            .iter()
            .filter(|p| (p.x - HALF).abs() < 1e-12)
            .map(|p| (p.y * p.y + p.z * p.z).sqrt())
            .fold(0.0, f64::max);
        assert!(disc - widest < SAMPLING_GAP, "{widest} vs {disc}");
    }

    #[test]
    fn a_straight_meta_module_is_free_and_a_folded_one_that_overlaps_is_not() {
        for t in ConnectionType::ALL {
            let meta = MetaModule::new(t);
            assert_eq!(self_collision(&meta.poses([0.0; 6])), None, "{t}");
        }
        // Two halves of the same pose overlap; a cell apart, face to face,
        // they touch and do not; the two halves of one cube meet on the cut.
        let at = |x: f64| Isometry3::translation(x, 0.0, 0.0);
        assert!(submodules_overlap(&at(0.0), &at(0.05)));
        assert!(!submodules_overlap(&at(0.0), &at(CELL)));
        let home = crate::module::home_middle_frames();
        assert!(!submodules_overlap(&home[0], &home[1]));
        assert!(submodules_overlap(&home[0], &home[0]));
    }

    #[test]
    fn a_module_on_the_floor_touches_it_and_one_pushed_into_it_is_below() {
        let meta = MetaModule::new(ConnectionType::Parallel);
        let poses = meta.poses([0.0; 6]);
        let floor = Isometry3::translation(0.0, 0.0, -HALF);
        assert!(below(&poses, &floor) < 1e-6);
        let lower = Isometry3::translation(0.0, 0.0, -HALF + 0.01);
        assert!((below(&poses, &lower) - 0.01).abs() < 1e-6);
    }
}
