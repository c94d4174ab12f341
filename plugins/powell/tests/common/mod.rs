//! Test functions shared by the Powell tests.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// −(x − c)ᵀ Qᵀ Λ Q (x − c): a fixed rotation Q, a centre inside
/// [-3, 3]^dim and eigenvalues from 1 to `condition`.
pub fn neg_rotated_quadratic(dim: usize, condition: f64) -> impl Fn(&[f64]) -> f64 {
    let (q, centre) = rotation_and_centre(dim, 42);
    move |x: &[f64]| {
        -q.iter()
            .enumerate()
            .map(|(i, row)| {
                let y: f64 = row
                    .iter()
                    .zip(x.iter().zip(&centre))
                    .map(|(r, (a, c))| r * (a - c))
                    .sum();
                condition.powf(i as f64 / (dim - 1) as f64) * y * y
            })
            .sum::<f64>()
    }
}

/// −(BBOB's step ellipsoid) rotated and shifted: with z = Q(x − c),
/// Σ 100^(i/(dim−1)) ⌊z_i + ½⌋² + 10⁻⁴‖z‖², 0 at c. Every line crosses
/// plateaus and jumps, where a Brent search converges onto a jump.
// Only tests/powell.rs uses it; each test file compiles this module alone.
#[allow(dead_code)]
pub fn neg_rotated_step_ellipsoid(dim: usize, seed: u64) -> impl Fn(&[f64]) -> f64 {
    let (q, centre) = rotation_and_centre(dim, seed);
    move |x: &[f64]| {
        let z: Vec<f64> = q
            .iter()
            .map(|row| {
                row.iter()
                    .zip(x.iter().zip(&centre))
                    .map(|(r, (a, c))| r * (a - c))
                    .sum()
            })
            .collect();
        -z.iter()
            .enumerate()
            .map(|(i, v)| {
                let step = (v + 0.5).floor();
                100f64.powf(i as f64 / (dim - 1) as f64) * step * step + 1e-4 * v * v
            })
            .sum::<f64>()
    }
}

/// A random rotation (orthonormal rows) and a centre inside [-3, 3]^dim.
fn rotation_and_centre(dim: usize, seed: u64) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut q: Vec<Vec<f64>> = Vec::new();
    while q.len() < dim {
        let mut v: Vec<f64> = (0..dim).map(|_| rng.random_range(-1.0..1.0)).collect();
        for b in &q {
            let dot: f64 = v.iter().zip(b).map(|(x, y)| x * y).sum();
            v.iter_mut().zip(b).for_each(|(x, y)| *x -= dot * y);
        }
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        q.push(v.iter().map(|x| x / norm).collect());
    }
    let centre: Vec<f64> = (0..dim).map(|_| rng.random_range(-3.0..3.0)).collect();
    (q, centre)
}
