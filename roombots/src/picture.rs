//! Pictures of Roombot modules: each submodule drawn as the outline of its
//! true shape seen from above at an angle, nearest last, on a floor of
//! cells; several moments side by side in one image. Drawn from whatever
//! poses are given (the simulation's, for the docs' pictures).

use std::path::Path;

use nalgebra::{Point3, Vector3};
use plotters::prelude::*;

use crate::collision::half_vertices;
use crate::module::{CELL, ModulePose};

/// Why a picture was not written.
#[derive(Debug, thiserror::Error)]
#[error("drawing {path}: {message}")]
pub struct PictureError {
    pub path: String,
    pub message: String,
}

/// One colour per module, cycled.
const PALETTE: [RGBColor; 6] = [
    RGBColor(214, 96, 77),
    RGBColor(67, 147, 195),
    RGBColor(120, 180, 90),
    RGBColor(230, 171, 2),
    RGBColor(152, 110, 180),
    RGBColor(90, 170, 170),
];

/// Where the camera looks from: a view along `-direction`.
struct Camera {
    right: Vector3<f64>,
    up: Vector3<f64>,
    towards: Vector3<f64>,
}

impl Camera {
    fn new() -> Self {
        let towards = Vector3::new(-0.55, 0.75, -0.65).normalize();
        let right = towards.cross(&Vector3::z()).normalize();
        let up = right.cross(&towards);
        Camera { right, up, towards }
    }

    /// Screen position (m) and depth (larger is farther).
    fn project(&self, p: &Vector3<f64>) -> (f64, f64, f64) {
        (p.dot(&self.right), p.dot(&self.up), p.dot(&self.towards))
    }
}

/// A submodule to draw: its outline on screen, its depth, its colour.
struct Shape {
    outline: Vec<(f64, f64)>,
    depth: f64,
    colour: RGBColor,
}

/// The 2-D convex hull of `points` (Andrew's monotone chain).
fn hull(mut points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let cross = |o: (f64, f64), a: (f64, f64), b: (f64, f64)| {
        (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
    };
    let mut lower: Vec<(f64, f64)> = Vec::new();
    for &p in &points {
        while lower.len() >= 2 && cross(lower[lower.len() - 2], lower[lower.len() - 1], p) <= 0.0 {
            lower.pop();
        }
        lower.push(p);
    }
    let mut upper: Vec<(f64, f64)> = Vec::new();
    for &p in points.iter().rev() {
        while upper.len() >= 2 && cross(upper[upper.len() - 2], upper[upper.len() - 1], p) <= 0.0 {
            upper.pop();
        }
        upper.push(p);
    }
    lower.pop();
    upper.pop();
    lower.extend(upper);
    lower
}

fn shade(c: RGBColor, k: f64) -> RGBColor {
    let f = |v: u8| (f64::from(v) * k).clamp(0.0, 255.0) as u8;
    RGBColor(f(c.0), f(c.1), f(c.2))
}

fn shapes(camera: &Camera, modules: &[ModulePose], structure: &[[i64; 3]]) -> Vec<Shape> {
    let vertices = half_vertices();
    let mut shapes = Vec::new();
    for cell in structure {
        let centre = Vector3::new(cell[0] as f64, cell[1] as f64, cell[2] as f64 + 0.5) * CELL;
        let projected: Vec<(f64, f64, f64)> = (0..8)
            .map(|k| {
                let corner = Vector3::new(
                    if k & 1 == 0 { -0.5 } else { 0.5 },
                    if k & 2 == 0 { -0.5 } else { 0.5 },
                    if k & 4 == 0 { -0.5 } else { 0.5 },
                ) * CELL;
                camera.project(&(centre + corner))
            })
            .collect();
        shapes.push(Shape {
            outline: hull(projected.iter().map(|p| (p.0, p.1)).collect()),
            depth: camera.project(&centre).2,
            colour: RGBColor(170, 170, 160),
        });
    }
    for (m, module) in modules.iter().enumerate() {
        for (s, frame) in module.middles.iter().enumerate() {
            let projected: Vec<(f64, f64, f64)> = vertices
                .iter()
                .map(|v| camera.project(&(frame * Point3::from(*v)).coords))
                .collect();
            let depth = projected.iter().map(|p| p.2).sum::<f64>() / projected.len() as f64;
            // The two halves of a cube in two tones, so the joints show.
            let base = PALETTE[m % PALETTE.len()];
            shapes.push(Shape {
                outline: hull(projected.iter().map(|p| (p.0, p.1)).collect()),
                depth,
                colour: if s % 2 == 0 { base } else { shade(base, 0.75) },
            });
        }
    }
    shapes.sort_by(|a, b| b.depth.total_cmp(&a.depth));
    shapes
}

/// The floor cells (lowest, highest, in both x and y) that hold every
/// cube of `moments` and the origin, with a cell to spare around them.
#[must_use]
pub fn floor_around(moments: &[Vec<ModulePose>]) -> (i32, i32) {
    let (lo, hi) = moments
        .iter()
        .flatten()
        .flat_map(|m| [m.cube_centre(0), m.cube_centre(1)])
        .flat_map(|c| [c.x, c.y])
        .map(|v| (v / CELL).round() as i32)
        .fold((0, 0), |(lo, hi), c| (lo.min(c), hi.max(c)));
    (lo - 1, hi + 1)
}

/// The most moments one picture draws; more are thinned evenly, the first
/// and the last kept.
pub const MAX_PANELS: usize = 8;

/// Draws each of `moments` (the modules' poses at that moment) side by
/// side into a PNG at `path`, on a floor of cells from `cells.0` to
/// `cells.1` (inclusive, in x and y); at most [`MAX_PANELS`] of them.
pub fn draw(
    path: &Path,
    moments: &[Vec<ModulePose>],
    cells: (i32, i32),
) -> Result<(), PictureError> {
    draw_with(path, moments, cells, &[])
}

/// [`draw`] with a passive structure's cells (grey cubes) in every moment.
pub fn draw_with(
    path: &Path,
    moments: &[Vec<ModulePose>],
    cells: (i32, i32),
    structure: &[[i64; 3]],
) -> Result<(), PictureError> {
    let thinned: Vec<&Vec<ModulePose>> = if moments.len() > MAX_PANELS {
        (0..MAX_PANELS)
            .map(|k| &moments[k * (moments.len() - 1) / (MAX_PANELS - 1)])
            .collect()
    } else {
        moments.iter().collect()
    };
    let moments = thinned;
    let error = |e: &dyn std::fmt::Display| PictureError {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let panel = 420u32;
    let width = panel * moments.len().max(1) as u32;
    let root = BitMapBackend::new(path, (width, panel)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| error(&e))?;
    let camera = Camera::new();
    // One scale for every panel: the floor's extent.
    let span = f64::from(cells.1 - cells.0 + 1) * CELL;
    let scale = f64::from(panel) * 0.8 / (span * 1.5);
    let (lo, hi) = (
        f64::from(cells.0) * CELL - CELL / 2.0,
        f64::from(cells.1) * CELL + CELL / 2.0,
    );
    let centre = camera.project(&Vector3::new((lo + hi) / 2.0, (lo + hi) / 2.0, 0.15));
    for (k, modules) in moments.iter().copied().enumerate() {
        let x0 = f64::from(panel) * (k as f64 + 0.5);
        let y0 = f64::from(panel) * 0.5;
        let to_screen = |p: (f64, f64)| {
            (
                (x0 + (p.0 - centre.0) * scale) as i32,
                (y0 - (p.1 - centre.1) * scale) as i32,
            )
        };
        let floor = |x: f64, y: f64| {
            let p = camera.project(&Vector3::new(x, y, 0.0));
            to_screen((p.0, p.1))
        };
        root.draw(&Polygon::new(
            vec![floor(lo, lo), floor(hi, lo), floor(hi, hi), floor(lo, hi)],
            RGBColor(236, 236, 230).filled(),
        ))
        .map_err(|e| error(&e))?;
        for i in cells.0..=cells.1 + 1 {
            let v = f64::from(i) * CELL - CELL / 2.0;
            for line in [[floor(v, lo), floor(v, hi)], [floor(lo, v), floor(hi, v)]] {
                root.draw(&PathElement::new(line.to_vec(), RGBColor(200, 200, 190)))
                    .map_err(|e| error(&e))?;
            }
        }
        for shape in shapes(&camera, modules, structure) {
            let outline: Vec<(i32, i32)> = shape.outline.iter().map(|p| to_screen(*p)).collect();
            root.draw(&Polygon::new(outline.clone(), shape.colour.filled()))
                .map_err(|e| error(&e))?;
            let mut closed = outline;
            closed.push(closed[0]);
            root.draw(&PathElement::new(closed, shade(shape.colour, 0.45)))
                .map_err(|e| error(&e))?;
        }
    }
    root.present().map_err(|e| error(&e))?;
    Ok(())
}
