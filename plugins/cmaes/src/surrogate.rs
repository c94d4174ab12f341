//! lq-CMA-ES's global surrogate (Hansen, "A Global Surrogate Assisted
//! CMA-ES", GECCO 2019): a linear, then diagonal-quadratic, then full
//! quadratic model of the objective fitted to the most recent evaluations by
//! rank-weighted least squares. Each generation, the candidates are ordered
//! by the model and evaluated best first in growing batches until the
//! model ranks the recent evaluations well (Kendall's τ ≥ 0.85); the rest of
//! the generation is ranked by the model alone. On smooth problems most of a
//! generation is never walked, which is what an expensive evaluation wants.
//!
//! The constants are pycma 4.5's (`cma.fitness_models`): the model grows to
//! the next complexity once `0.75·size ≥ 1.1·(degrees of freedom)`, keeps
//! `max(2·df_full, λ)` points, fits the best `max(df + 2, 0.75·(size + 1))`
//! of them with weights falling linearly from 20 to 1 by rank, and the
//! first batch of a generation is `⌊1 + max(0.02·λ, 4 − size)⌋` candidates,
//! growing by half after each batch. Values are minimised.
//!
//! Unlike pycma, the regression runs in coordinates centred on the fitted
//! points and scaled by their spread per coordinate. Each model type is
//! invariant under that change of variables, so the model is the same, but
//! the normal equations stay well conditioned when the step size is tiny.

use nalgebra::{DMatrix, DVector};

/// τ between the model's ranking and the true one that ends a generation's
/// evaluations.
pub const TAU_THRESHOLD: f64 = 0.85;

/// Largest regression weight (the best point); the worst used has weight 1.
const MAX_WEIGHT: f64 = 20.0;
/// Only this fraction of the best points is fitted.
const TRUNCATION: f64 = 0.75;
/// A model type is used from this many points per degree of freedom.
const MIN_RELATIVE_SIZE: f64 = 1.1;
/// The archive keeps this many points per degree of freedom of the full
/// model (or the population, if larger).
const MAX_RELATIVE_SIZE: f64 = 2.0;

/// How much of a quadratic the model fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ModelKind {
    /// `c + bᵀx`.
    Linear,
    /// `c + bᵀx + Σ h_i x_i²`.
    Diagonal,
    /// `c + bᵀx + xᵀHx`.
    Full,
}

impl ModelKind {
    /// The number of coefficients in dimension `n`.
    #[must_use]
    pub fn degrees_of_freedom(self, n: usize) -> usize {
        match self {
            ModelKind::Linear => n + 1,
            ModelKind::Diagonal => 2 * n + 1,
            ModelKind::Full => n * (n + 3) / 2 + 1,
        }
    }
}

/// A fitted model: coefficients in the centred and scaled coordinates.
#[derive(Debug, Clone)]
struct Fit {
    center: DVector<f64>,
    scale: DVector<f64>,
    coefficients: DVector<f64>,
}

/// The archive of evaluated points and the model fitted to it.
#[derive(Debug, Clone)]
pub struct LqModel {
    dim: usize,
    kind: ModelKind,
    /// At least this many points are kept (the population).
    min_capacity: usize,
    /// Newest first; within a generation, sorted by value once it ends.
    xs: Vec<DVector<f64>>,
    fs: Vec<f64>,
    fit: Option<Fit>,
}

impl LqModel {
    /// An empty model over `dim` coordinates for a population of `lambda`.
    #[must_use]
    pub fn new(dim: usize, lambda: usize) -> Self {
        LqModel {
            dim,
            kind: ModelKind::Linear,
            min_capacity: lambda,
            xs: Vec::new(),
            fs: Vec::new(),
            fit: None,
        }
    }

    /// The points in the archive.
    #[must_use]
    pub fn len(&self) -> usize {
        self.xs.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.xs.is_empty()
    }

    #[must_use]
    pub fn kind(&self) -> ModelKind {
        self.kind
    }

    /// Adds an evaluated point as the newest. Non-finite values (failed
    /// evaluations) and points already in the archive are not added.
    pub fn add(&mut self, x: DVector<f64>, f: f64) {
        assert_eq!(x.len(), self.dim);
        if !f.is_finite() || x.iter().any(|v| !v.is_finite()) || self.xs.contains(&x) {
            return;
        }
        self.xs.insert(0, x);
        self.fs.insert(0, f);
        self.fit = None;
        let usable = self.len() as f64 * TRUNCATION;
        for kind in [ModelKind::Diagonal, ModelKind::Full] {
            if kind > self.kind
                && usable >= kind.degrees_of_freedom(self.dim) as f64 * MIN_RELATIVE_SIZE
            {
                self.kind = kind;
            }
        }
        let full = ModelKind::Full.degrees_of_freedom(self.dim) as f64;
        let keep = (full * MAX_RELATIVE_SIZE)
            .max(self.min_capacity as f64)
            .max(full * MIN_RELATIVE_SIZE / TRUNCATION);
        if self.len() as f64 > keep {
            let keep = keep.ceil() as usize;
            self.xs.truncate(keep);
            self.fs.truncate(keep);
        }
    }

    /// Sorts the newest `number` points by value (ties keep their order), as
    /// the generation that evaluated them ends, so that the oldest and,
    /// within a generation, the worst leave the archive first.
    pub fn sort_newest(&mut self, number: usize) {
        let number = number.min(self.len());
        let mut idx: Vec<usize> = (0..number).collect();
        idx.sort_by(|&a, &b| self.fs[a].total_cmp(&self.fs[b]));
        let xs: Vec<DVector<f64>> = idx.iter().map(|&i| self.xs[i].clone()).collect();
        let fs: Vec<f64> = idx.iter().map(|&i| self.fs[i]).collect();
        self.xs.splice(..number, xs);
        self.fs.splice(..number, fs);
    }

    /// The model's value at `x` (0 while the archive is empty).
    pub fn eval(&mut self, x: &DVector<f64>) -> f64 {
        let kind = self.kind;
        match self.fitted() {
            Some(fit) => fit.coefficients.dot(&features(kind, &fit.standardise(x))),
            None => 0.0,
        }
    }

    /// The model's optimum, where a candidate is injected: `−H⁺b/2` for a
    /// quadratic model; for a linear one, the newest best point stepped
    /// twice the gradient downhill (pycma's choice). `None` while empty.
    pub fn optimum(&mut self) -> Option<DVector<f64>> {
        let n = self.dim;
        let kind = self.kind;
        let newest = self.xs.first()?.clone();
        let fit = self.fitted()?;
        let c = &fit.coefficients;
        let b = c.rows(1, n).into_owned();
        if kind == ModelKind::Linear {
            // The gradient in the original coordinates is b_i / s_i.
            return Some(newest - 2.0 * b.component_div(&fit.scale));
        }
        let mut h = DMatrix::from_diagonal(&c.rows(n + 1, n).into_owned());
        if kind == ModelKind::Full {
            let mut k = 2 * n + 1;
            for i in 0..n {
                for j in i + 1..n {
                    h[(i, j)] = c[k] / 2.0;
                    h[(j, i)] = c[k] / 2.0;
                    k += 1;
                }
            }
        }
        let svd = h.svd(true, true);
        let eps = svd.singular_values.max() * n as f64 * f64::EPSILON;
        let u = svd.solve(&(-0.5 * b), eps).ok()?;
        let x = fit.center.clone() + u.component_mul(&fit.scale);
        x.iter().all(|v| v.is_finite()).then_some(x)
    }

    /// Kendall's τ (τ-b) between the values and the model's values of the
    /// newest `number` points; 0 with fewer than 3.
    pub fn kendall(&mut self, number: usize) -> f64 {
        let number = number.min(self.len());
        if number < 3 {
            return 0.0;
        }
        let truth: Vec<f64> = self.fs[..number].to_vec();
        let xs: Vec<DVector<f64>> = self.xs[..number].to_vec();
        let model: Vec<f64> = xs.iter().map(|x| self.eval(x)).collect();
        kendall_tau(&truth, &model)
    }

    fn fitted(&mut self) -> Option<&Fit> {
        if self.fit.is_none() && !self.is_empty() {
            self.fit = Some(self.regress());
        }
        self.fit.as_ref()
    }

    /// Rank-weighted least squares over the best points.
    fn regress(&self) -> Fit {
        let n = self.dim;
        let size = self.len();
        let df = self.kind.degrees_of_freedom(n);
        let used = ((df + 2) as f64)
            .max(TRUNCATION * (size + 1) as f64)
            .min(size as f64) as usize;
        let mut by_value: Vec<usize> = (0..size).collect();
        by_value.sort_by(|&a, &b| self.fs[a].total_cmp(&self.fs[b]));
        by_value.truncate(used);

        let mut center = DVector::zeros(n);
        for &i in &by_value {
            center += &self.xs[i];
        }
        center /= used as f64;
        let mut scale = DVector::zeros(n);
        for &i in &by_value {
            scale += (&self.xs[i] - &center).map(|d| d * d);
        }
        let scale = scale.map(|s| {
            let s = (s / used as f64).sqrt();
            if s > 0.0 && s.is_finite() { s } else { 1.0 }
        });
        let fit = Fit {
            center,
            scale,
            coefficients: DVector::zeros(df),
        };
        let mut a = DMatrix::zeros(used, df);
        let mut y = DVector::zeros(used);
        for (rank, &i) in by_value.iter().enumerate() {
            let w = if used > 1 {
                MAX_WEIGHT - (MAX_WEIGHT - 1.0) * rank as f64 / (used - 1) as f64
            } else {
                MAX_WEIGHT
            };
            let z = features(self.kind, &fit.standardise(&self.xs[i]));
            a.row_mut(rank).copy_from(&(w * z).transpose());
            y[rank] = w * self.fs[i];
        }
        Fit {
            coefficients: least_squares(a, &y),
            ..fit
        }
    }
}

impl Fit {
    fn standardise(&self, x: &DVector<f64>) -> DVector<f64> {
        (x - &self.center).component_div(&self.scale)
    }
}

/// `[1, x, x_i² …, x_i·x_j (i < j) …]` as far as `kind` goes.
fn features(kind: ModelKind, x: &DVector<f64>) -> DVector<f64> {
    let n = x.len();
    let mut z = Vec::with_capacity(kind.degrees_of_freedom(n));
    z.push(1.0);
    z.extend(x.iter());
    if kind >= ModelKind::Diagonal {
        z.extend(x.iter().map(|v| v * v));
    }
    if kind == ModelKind::Full {
        for i in 0..n {
            for j in i + 1..n {
                z.push(x[i] * x[j]);
            }
        }
    }
    DVector::from_vec(z)
}

/// The minimum-norm least-squares solution of `a·c ≈ y`: the normal
/// equations by Cholesky when `a` has full column rank (fast, and the
/// standardised features keep them well conditioned), else the SVD's
/// pseudo-inverse, as numpy's `pinv`.
fn least_squares(a: DMatrix<f64>, y: &DVector<f64>) -> DVector<f64> {
    if a.nrows() >= a.ncols() {
        let normal = a.tr_mul(&a);
        let rhs = a.tr_mul(y);
        let largest = normal.diagonal().max();
        if let Some(chol) = normal.clone().cholesky() {
            // Cholesky succeeds on nearly singular matrices too; only a
            // solution whose pivots are all clearly positive is trusted.
            let pivots = chol.l_dirty().diagonal();
            if pivots.min() * pivots.min() > largest * 1e-10 {
                return chol.solve(&rhs);
            }
        }
    }
    let svd = a.svd(true, true);
    let eps = svd.singular_values.max() * svd.singular_values.len().max(1) as f64 * f64::EPSILON;
    svd.solve(y, eps)
        .unwrap_or_else(|_| DVector::zeros(svd.singular_values.len()))
}

/// Kendall's τ-b of two equally long samples (0 when either is constant).
#[must_use]
pub fn kendall_tau(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let (mut s, mut pairs_a, mut pairs_b) = (0.0, 0.0, 0.0);
    for i in 0..a.len() {
        for j in 0..i {
            let da = sign(a[i] - a[j]);
            let db = sign(b[i] - b[j]);
            s += da * db;
            pairs_a += da.abs();
            pairs_b += db.abs();
        }
    }
    if pairs_a == 0.0 || pairs_b == 0.0 {
        0.0
    } else {
        s / (pairs_a * pairs_b).sqrt()
    }
}

fn sign(v: f64) -> f64 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_points(n: usize, count: usize, seed: u64) -> Vec<DVector<f64>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..count)
            .map(|_| DVector::from_fn(n, |_, _| rng.random::<f64>() * 2.0 - 1.0))
            .collect()
    }

    #[test]
    fn tau_is_one_for_the_same_order_and_minus_one_reversed() {
        let a = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(kendall_tau(&a, &[10.0, 20.0, 30.0, 40.0]), 1.0);
        assert_eq!(kendall_tau(&a, &[4.0, 3.0, 2.0, 1.0]), -1.0);
        assert_eq!(kendall_tau(&a, &[5.0, 5.0, 5.0, 5.0]), 0.0);
        // scipy.stats.kendalltau([1,2,3,4,5], [1,3,2,5,4]) = 0.6
        let t = kendall_tau(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1.0, 3.0, 2.0, 5.0, 4.0]);
        assert!((t - 0.6).abs() < 1e-12, "{t}");
        // With ties (τ-b): scipy.stats.kendalltau([1,1,2,3], [1,2,3,4])
        // gives 0.912870929175277 = 5/√30.
        let t = kendall_tau(&[1.0, 1.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0]);
        assert!((t - 5.0 / 30f64.sqrt()).abs() < 1e-12, "{t}");
    }

    #[test]
    fn the_model_grows_from_linear_to_full_with_the_data() {
        let n = 4;
        let mut m = LqModel::new(n, 8);
        let pts = random_points(n, 40, 1);
        let mut kinds = Vec::new();
        for x in pts {
            let f = x.norm_squared();
            m.add(x, f);
            kinds.push(m.kind());
        }
        // Diagonal from 0.75·size ≥ 1.1·9, full from 0.75·size ≥ 1.1·15.
        assert_eq!(kinds[12], ModelKind::Linear);
        assert_eq!(kinds[13], ModelKind::Diagonal);
        assert_eq!(kinds[20], ModelKind::Diagonal);
        assert_eq!(kinds[21], ModelKind::Full);
        // The archive keeps 2·df_full = 30 points.
        assert_eq!(m.len(), 30);
    }

    #[test]
    fn a_rotated_ellipsoid_is_learnt_exactly_and_its_optimum_found() {
        // f(x) = (x − x*)ᵀ Rᵀ D R (x − x*) + 7 with condition 1e6, on a
        // cloud of points with a tiny spread far from the origin, where
        // unscaled features would be nearly collinear.
        let n = 5;
        let rot = nalgebra::Rotation3::from_euler_angles(0.3, -0.7, 1.1);
        let mut r = DMatrix::identity(n, n);
        r.view_mut((0, 0), (3, 3)).copy_from(rot.matrix());
        let d = DMatrix::from_diagonal(&DVector::from_fn(n, |i, _| 1e6f64.powf(i as f64 / 4.0)));
        let h = r.transpose() * d * &r;
        let opt = DVector::from_fn(n, |i, _| 3.0 + 1e-4 * i as f64);
        let f = |x: &DVector<f64>| {
            let dx = x - &opt;
            (dx.transpose() * &h * &dx)[0] + 7.0
        };
        let mut m = LqModel::new(n, 8);
        for p in random_points(n, 60, 2) {
            let x = &opt + 1e-3 * p;
            let v = f(&x);
            m.add(x, v);
        }
        assert_eq!(m.kind(), ModelKind::Full);
        let probe = &opt + DVector::from_element(n, 2e-4);
        assert!((m.eval(&probe) - f(&probe)).abs() < 1e-6 * f(&probe));
        let x = m.optimum().unwrap();
        assert!((&x - &opt).norm() < 1e-7, "{x} vs {opt}");
        assert!(m.kendall(20) > 0.999);
    }

    #[test]
    fn a_nonquadratic_function_ranks_badly_by_the_model() {
        // A rugged function (Rastrigin with many periods in the cloud):
        // the quadratic model cannot rank it, so τ stays far below 0.85
        // and a generation would be evaluated in full.
        let n = 3;
        let f = |x: &DVector<f64>| {
            x.iter()
                .map(|v| v * v - 10.0 * (40.0 * std::f64::consts::PI * v).cos())
                .sum::<f64>()
        };
        let mut m = LqModel::new(n, 7);
        for p in random_points(n, 30, 3) {
            let v = f(&p);
            m.add(p, v);
        }
        assert!(m.kendall(15) < 0.5, "{}", m.kendall(15));
    }

    #[test]
    fn failures_and_repeats_are_not_added() {
        let mut m = LqModel::new(2, 6);
        let x = DVector::from_vec(vec![0.1, 0.2]);
        m.add(x.clone(), 1.0);
        m.add(x.clone(), 2.0);
        m.add(DVector::from_vec(vec![0.3, 0.2]), f64::INFINITY);
        assert_eq!(m.len(), 1);
        assert_eq!(m.eval(&x), 1.0);
    }

    #[test]
    fn sorting_the_newest_points_puts_the_best_first() {
        let mut m = LqModel::new(1, 6);
        for (x, f) in [(0.0, 5.0), (1.0, 3.0), (2.0, 4.0), (3.0, 1.0)] {
            m.add(DVector::from_vec(vec![x]), f);
        }
        m.sort_newest(3);
        assert_eq!(m.fs, vec![1.0, 3.0, 4.0, 5.0]);
        assert_eq!(m.xs[0][0], 3.0);
    }
}
