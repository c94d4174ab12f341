//! Test functions shared by the Powell tests.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// −(x − c)ᵀ Qᵀ Λ Q (x − c): a fixed rotation Q, a centre inside
/// [-3, 3]^dim and eigenvalues from 1 to `condition`.
pub fn neg_rotated_quadratic(dim: usize, condition: f64) -> impl Fn(&[f64]) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
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
