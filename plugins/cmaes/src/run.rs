//! One CMA-ES run (no restarts): strategy parameters, sampling, the update
//! of mean, step size and covariance, and the termination criteria that end
//! a run. Minimises `g`; the genotype is unbounded (see [`crate::bounds`]).
//!
//! Equations and default parameters follow Hansen, "The CMA Evolution
//! Strategy: A Tutorial" (arXiv:1604.00772), Table 1 and (A) ff., with
//! active covariance update (negative recombination weights), as pycma does
//! by default; `c_μ` uses pycma's `1/4 + μ_eff + 1/μ_eff − 2`, and `c_σ`,
//! `d_σ` are pycma 4.5's (see [`Params::new`]). The termination criteria
//! and their defaults are pycma's.

use std::collections::VecDeque;

use nalgebra::{DMatrix, DVector, SymmetricEigen};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Why a run ended (pycma's termination criteria of the same names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Best values of recent generations and all values of the last one lie
    /// within `tolfun`.
    TolFun,
    /// Every coordinate's standard deviation and `σ·p_c` are below `tolx`.
    TolX,
    /// Median of the best and of the median values did not improve over the
    /// stagnation window (pycma's `tolstagnation`).
    Stagnation,
    /// The covariance's condition number exceeds the limit.
    Condition,
    /// A 0.1-standard-deviation step along a principal axis leaves the mean
    /// unchanged in floating point.
    NoEffectAxis,
    /// A 0.2-standard-deviation step in a coordinate leaves the mean unchanged.
    NoEffectCoord,
    /// pycma's default `maxiter`, `100 + 150·(n + 3)²/√λ` generations, or
    /// BIPOP's limit for a small run (half the large runs' evaluations).
    MaxIter,
    /// The step size blew up: pycma's `tolupsigma` (`σ/σ₀ > 1e20·√λ_max`)
    /// or `tolfacupx` (a standard deviation above `1e3·σ₀`).
    TolUpSigma,
    /// The best value equalled the 75 % quantile of a generation for two
    /// generations in a row (pycma's `tolflatfitness`).
    FlatFitness,
}

/// Termination thresholds of one run (the user-facing tolerances).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerances {
    pub tolfun: f64,
    pub tolx: f64,
    /// Stagnation window in generations; 0: pycma's `100 + 100·n^1.5/λ`.
    pub stagnation: u64,
    pub max_condition: f64,
}

/// Strategy parameters for dimension `n` and population `λ` (tutorial
/// Table 1 / eq. (49)–(58)).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub n: usize,
    pub lambda: usize,
    pub mu: usize,
    /// All `λ` recombination weights, positive ones summing to one, then
    /// the (active) negative ones.
    pub weights: Vec<f64>,
    pub mueff: f64,
    pub cc: f64,
    pub cs: f64,
    pub c1: f64,
    pub cmu: f64,
    pub damps: f64,
    /// `E‖N(0, I)‖`.
    pub chi_n: f64,
}

impl Params {
    #[must_use]
    pub fn new(n: usize, lambda: usize) -> Self {
        assert!(n >= 1 && lambda >= 2, "n = {n}, λ = {lambda}");
        let raw: Vec<f64> = (1..=lambda)
            .map(|i| ((lambda as f64 + 1.0) / 2.0).ln() - (i as f64).ln())
            .collect();
        Params::from_weights(n, lambda, lambda / 2, &raw)
    }

    /// The parameters of a generation whose best `parents` alone recombine
    /// (log weights over them, none negative), the rates following their
    /// `μ_eff`: pyribs' "filter" selection, where the parents are the
    /// solutions a map kept.
    #[must_use]
    pub fn with_parents(n: usize, lambda: usize, parents: usize) -> Self {
        assert!(
            n >= 1 && (1..=lambda).contains(&parents),
            "n = {n}, {parents} parents of λ = {lambda}"
        );
        let raw: Vec<f64> = (1..=lambda)
            .map(|i| {
                if i <= parents {
                    (parents as f64 + 0.5).ln() - (i as f64).ln()
                } else {
                    0.0
                }
            })
            .collect();
        Params::from_weights(n, lambda, parents, &raw)
    }

    /// From unnormalised weights: positive ones recombine, negative ones
    /// are the active update's.
    fn from_weights(n: usize, lambda: usize, mu: usize, raw: &[f64]) -> Self {
        let nf = n as f64;
        let pos_sum: f64 = raw.iter().filter(|w| **w > 0.0).sum();
        let pos_sq: f64 = raw.iter().filter(|w| **w > 0.0).map(|w| w * w).sum();
        let neg_sum: f64 = raw.iter().filter(|w| **w < 0.0).map(|w| -w).sum();
        let neg_sq: f64 = raw.iter().filter(|w| **w < 0.0).map(|w| w * w).sum();
        let mueff = pos_sum * pos_sum / pos_sq;
        let mueff_neg = if neg_sq > 0.0 {
            neg_sum * neg_sum / neg_sq
        } else {
            0.0
        };
        let alpha_cov = 2.0;
        let c1 = alpha_cov / ((nf + 1.3).powi(2) + mueff);
        let cmu = (1.0 - c1).min(
            alpha_cov * (0.25 + mueff + 1.0 / mueff - 2.0)
                / ((nf + 2.0).powi(2) + alpha_cov * mueff / 2.0),
        );
        let cc = (4.0 + mueff / nf) / (nf + 4.0 + 2.0 * mueff / nf);
        // Step-size cumulation and damping as in pycma 4.5 rather than the
        // tutorial's `(μ_eff + 2)/(n + μ_eff + 5)` and
        // `1 + 2·max(0, √((μ_eff − 1)/(n + 1)) − 1) + c_σ`: the damping grows
        // with μ_eff/n (pycma issue 231), which keeps the step size of the
        // large-population runs of IPOP/BIPOP from shrinking too early; for
        // the default λ the two agree up to c_σ.
        let cs = ((mueff + 2.0) / (nf + mueff + 3.0)).min(0.5);
        let inner = (3.0 * (1.0 - 0.5f64.powf(nf / 9.0))).max(1.0);
        let damps = 1.0 + 2.0 * (inner * ((mueff - 1.0) / (nf + 1.0)).sqrt() - 1.0).max(0.0) + cs;
        let alpha_mu_neg = 1.0 + c1 / cmu;
        let alpha_mueff_neg = 1.0 + 2.0 * mueff_neg / (mueff + 2.0);
        let alpha_posdef_neg = (1.0 - c1 - cmu) / (nf * cmu);
        let neg_scale = alpha_mu_neg.min(alpha_mueff_neg).min(alpha_posdef_neg);
        let weights = raw
            .iter()
            .map(|&w| {
                if w >= 0.0 {
                    w / pos_sum
                } else {
                    neg_scale * w / neg_sum
                }
            })
            .collect();
        let chi_n = nf.sqrt() * (1.0 - 1.0 / (4.0 * nf) + 1.0 / (21.0 * nf * nf));
        Params {
            n,
            lambda,
            mu,
            weights,
            mueff,
            cc,
            cs,
            c1,
            cmu,
            damps,
            chi_n,
        }
    }
}

/// Standard normal numbers by Box–Muller, in pairs, from `rng` only.
pub fn normals(rng: &mut ChaCha8Rng, count: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(count + 1);
    while out.len() < count {
        // 1 − U lies in (0, 1], so the logarithm is finite.
        let u1 = 1.0 - rng.random::<f64>();
        let u2: f64 = rng.random();
        let r = (-2.0 * u1.ln()).sqrt();
        let t = std::f64::consts::TAU * u2;
        out.push(r * t.cos());
        out.push(r * t.sin());
    }
    out.truncate(count);
    out
}

/// The state of one run.
#[derive(Debug, Clone)]
pub struct Run {
    pub params: Params,
    pub mean: DVector<f64>,
    pub sigma: f64,
    sigma0: f64,
    /// Per-coordinate factors on the sampling distribution (pycma's
    /// `sigma_vec`): a sample is `m + σ·s∘(B·D·z)`. They start at one and
    /// only shrink, to keep every coordinate's standard deviation at most
    /// `max_std` (pycma's `maxstd`).
    scaling: DVector<f64>,
    /// Largest standard deviation of a coordinate (genotype units).
    max_std: f64,
    c: DMatrix<f64>,
    /// Eigenvectors of `C` (columns) and the square roots of its eigenvalues.
    b: DMatrix<f64>,
    d: DVector<f64>,
    /// `C^{-1/2} = B·D⁻¹·Bᵀ`.
    inv_sqrt: DMatrix<f64>,
    pc: DVector<f64>,
    ps: DVector<f64>,
    /// Generations completed.
    pub generation: u64,
    tol: Tolerances,
    /// Best value of each of the last `10 + ⌈30n/λ⌉` generations.
    recent_best: VecDeque<f64>,
    /// Best and median value of every fifth generation (at most
    /// [`HISTORY`]), newest first, for the stagnation test.
    hist_best: VecDeque<f64>,
    hist_median: VecDeque<f64>,
    /// The run's best value and the generation that found it.
    best: f64,
    best_generation: u64,
    /// Consecutive generations with flat fitness.
    flat: u32,
    /// pycma's `maxiter`, `100 + 150·(n + 3)²/√λ`, unless limited.
    max_iter: f64,
}

impl Run {
    #[must_use]
    pub fn new(mean: DVector<f64>, sigma: f64, lambda: usize, tol: Tolerances) -> Self {
        let n = mean.len();
        Run {
            params: Params::new(n, lambda),
            mean,
            sigma,
            sigma0: sigma,
            scaling: DVector::from_element(n, 1.0),
            max_std: f64::INFINITY,
            c: DMatrix::identity(n, n),
            b: DMatrix::identity(n, n),
            d: DVector::from_element(n, 1.0),
            inv_sqrt: DMatrix::identity(n, n),
            pc: DVector::zeros(n),
            ps: DVector::zeros(n),
            generation: 0,
            tol,
            recent_best: VecDeque::new(),
            hist_best: VecDeque::new(),
            hist_median: VecDeque::new(),
            best: f64::INFINITY,
            best_generation: 0,
            flat: 0,
            max_iter: 100.0 + 150.0 * (n as f64 + 3.0).powi(2) / (lambda as f64).sqrt(),
        }
    }

    /// Caps every coordinate's standard deviation at `max_std`, now and
    /// after every update, as pycma does with `maxstd` (by default a third
    /// of the bounds' range, `maxstd_boundrange = 1/3`): a coordinate whose
    /// `σ·s_i·√C_ii` exceeds it has its factor `s_i` reduced so that it
    /// equals `max_std`. Without it, a step size that grows (on a slope, or
    /// on a rugged function early on) spreads the samples over the whole box
    /// through the periodic map, a uniform random search.
    pub fn limit_std(&mut self, max_std: f64) {
        self.max_std = max_std;
        self.stds_into_limits();
    }

    fn stds_into_limits(&mut self) {
        for i in 0..self.params.n {
            let s = self.std(i);
            if s > self.max_std && s.is_finite() && s > 0.0 {
                self.scaling[i] *= self.max_std / s;
            }
        }
    }

    /// Multiplies the step size by `factor` (the uncertainty handling's
    /// raise), keeping every coordinate's standard deviation within its cap.
    pub fn scale_sigma(&mut self, factor: f64) {
        if factor != 1.0 {
            self.sigma *= factor;
            self.stds_into_limits();
        }
    }

    /// Ends the run after at most `generations` generations ([`Stop::MaxIter`]).
    pub fn limit_generations(&mut self, generations: f64) {
        self.max_iter = self.max_iter.min(generations);
    }

    /// `λ` genotypes `m + σ·s∘(B·D·z)`, `z ~ N(0, I)`, drawn candidate by
    /// candidate, coordinate by coordinate.
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> Vec<DVector<f64>> {
        let n = self.params.n;
        let z = normals(rng, n * self.params.lambda);
        z.chunks(n).map(|z| self.point(z)).collect()
    }

    /// A generation whose first candidate is the injected point `target`
    /// (as pycma's `inject`): the step to it is kept when its Mahalanobis
    /// length is at most `√n`, otherwise it is rescaled to the length of a
    /// standard normal vector, so the injected candidate looks like a
    /// sample. The other `λ − 1` are sampled as in [`Run::sample`].
    pub fn sample_injecting(
        &self,
        target: &DVector<f64>,
        rng: &mut ChaCha8Rng,
    ) -> Vec<DVector<f64>> {
        let n = self.params.n;
        let step = target - &self.mean;
        let length = self.mahalanobis(&step);
        let step = if length > (n as f64).sqrt() {
            let chi = normals(rng, n).iter().map(|z| z * z).sum::<f64>().sqrt();
            step * (chi / length)
        } else {
            step
        };
        let mut out = Vec::with_capacity(self.params.lambda);
        out.push(&self.mean + step);
        let z = normals(rng, n * (self.params.lambda - 1));
        out.extend(z.chunks(n).map(|z| self.point(z)));
        out
    }

    /// `‖C^{-1/2}·(dx ⊘ s)‖/σ`: how many standard deviations `dx` is long.
    #[must_use]
    pub fn mahalanobis(&self, dx: &DVector<f64>) -> f64 {
        (&self.inv_sqrt * dx.component_div(&self.scaling)).norm() / self.sigma
    }

    fn point(&self, z: &[f64]) -> DVector<f64> {
        let n = self.params.n;
        let scaled = DVector::from_iterator(n, z.iter().zip(self.d.iter()).map(|(z, d)| z * d));
        &self.mean + self.sigma * (&self.b * scaled).component_mul(&self.scaling)
    }

    /// The standard deviation of coordinate `i` (`σ·s_i·√C_ii`).
    #[must_use]
    pub fn std(&self, i: usize) -> f64 {
        self.sigma * self.scaling[i] * self.c[(i, i)].sqrt()
    }

    /// Updates the distribution from the generation `xs` (as sampled) and
    /// their values `g` (minimised; `+∞` for failures). Ranks by value, ties
    /// by index, so the result depends only on the values. Returns why the
    /// run ends, if it does.
    pub fn update(&mut self, xs: &[DVector<f64>], g: &[f64]) -> Option<Stop> {
        self.update_injected(xs, g, 0)
    }

    /// [`Run::update`] where only the best `parents` recombine
    /// ([`Params::with_parents`]); the run keeps its own parameters after.
    pub fn update_with_parents(
        &mut self,
        xs: &[DVector<f64>],
        g: &[f64],
        parents: usize,
    ) -> Option<Stop> {
        let filtered = Params::with_parents(self.params.n, self.params.lambda, parents);
        let own = std::mem::replace(&mut self.params, filtered);
        let stop = self.update(xs, g);
        self.params = own;
        stop
    }

    /// [`Run::update`] for a generation whose first `injected` candidates
    /// were injected rather than sampled: as in pycma
    /// (`CMA_active_injected = 0`), they never get a negative weight, so a
    /// bad injected point cannot shrink the covariance in its direction.
    pub fn update_injected(
        &mut self,
        xs: &[DVector<f64>],
        g: &[f64],
        injected: usize,
    ) -> Option<Stop> {
        let p = self.params.clone();
        let n = p.n;
        let nf = n as f64;
        assert_eq!(xs.len(), p.lambda);
        let mut order: Vec<usize> = (0..p.lambda).collect();
        order.sort_by(|&a, &b| g[a].total_cmp(&g[b]).then(a.cmp(&b)));
        let sorted: Vec<f64> = order.iter().map(|&i| g[i]).collect();
        // Steps in the coordinates of C: (x − m)/(σ·s).
        let ys: Vec<DVector<f64>> = order
            .iter()
            .map(|&i| ((&xs[i] - &self.mean) / self.sigma).component_div(&self.scaling))
            .collect();

        let mut yw = DVector::zeros(n);
        for (w, y) in p.weights.iter().zip(&ys).take(p.mu) {
            yw.axpy(*w, y, 1.0);
        }
        self.mean
            .axpy(self.sigma, &yw.component_mul(&self.scaling), 1.0);

        let cs = p.cs;
        self.ps =
            (1.0 - cs) * &self.ps + (cs * (2.0 - cs) * p.mueff).sqrt() * (&self.inv_sqrt * &yw);
        let ps_norm = self.ps.norm();
        let generations = self.generation as f64 + 1.0;
        let hsig = ps_norm / (1.0 - (1.0 - cs).powf(2.0 * generations)).sqrt() / p.chi_n
            < 1.4 + 2.0 / (nf + 1.0);
        let cc = p.cc;
        self.pc *= 1.0 - cc;
        if hsig {
            self.pc.axpy((cc * (2.0 - cc) * p.mueff).sqrt(), &yw, 1.0);
        }

        let delta_h = if hsig { 0.0 } else { cc * (2.0 - cc) };
        let wsum: f64 = p.weights.iter().sum();
        let mut c = (1.0 + p.c1 * delta_h - p.c1 - p.cmu * wsum) * &self.c;
        c.ger(p.c1, &self.pc, &self.pc, 1.0);
        for ((w, y), &index) in p.weights.iter().zip(&ys).zip(&order) {
            let w = if *w >= 0.0 {
                *w
            } else if index < injected {
                0.0
            } else {
                // Negative weights are rescaled by n/‖C^{-1/2}y‖² so the
                // active update cannot shrink a direction arbitrarily.
                let norm2 = (&self.inv_sqrt * y).norm_squared();
                if norm2 > 0.0 { w * nf / norm2 } else { 0.0 }
            };
            if w != 0.0 {
                c.ger(p.cmu * w, y, y, 1.0);
            }
        }
        self.c = c;

        self.sigma *= ((cs / p.damps) * (ps_norm / p.chi_n - 1.0)).min(1.0).exp();
        // Flat fitness as pycma counts it: the best equals the 75 % quantile.
        if sorted[0] < sorted[(3 * p.lambda) / 4] {
            self.flat = 0;
        } else {
            self.flat += 1;
        }

        let degenerate = !self.decompose();
        if !degenerate {
            self.stds_into_limits();
        }
        self.generation += 1;
        self.record(&sorted);
        if degenerate {
            return Some(Stop::Condition);
        }
        self.stop(&sorted)
    }

    /// Eigendecomposition of the symmetrised `C`; false when `C` is no
    /// longer a usable covariance (non-finite or not positive definite).
    fn decompose(&mut self) -> bool {
        let n = self.params.n;
        let c = (&self.c + self.c.transpose()) * 0.5;
        if c.iter().any(|v| !v.is_finite()) {
            return false;
        }
        let eig = SymmetricEigen::new(c.clone());
        self.c = c;
        let min = eig.eigenvalues.min();
        if min <= 0.0 || !min.is_finite() {
            return false;
        }
        self.b = eig.eigenvectors;
        self.d = eig.eigenvalues.map(f64::sqrt);
        let inv_d = DMatrix::from_diagonal(&self.d.map(|d| 1.0 / d));
        self.inv_sqrt = &self.b * inv_d * self.b.transpose();
        debug_assert_eq!(self.inv_sqrt.nrows(), n);
        true
    }

    fn record(&mut self, sorted: &[f64]) {
        let p = &self.params;
        let recent = 10 + (30.0 * p.n as f64 / p.lambda as f64).ceil() as usize;
        self.recent_best.push_front(sorted[0]);
        self.recent_best.truncate(recent);
        if self.generation.is_multiple_of(5) {
            self.hist_best.push_front(sorted[0]);
            self.hist_median.push_front(median_sorted(sorted));
            self.hist_best.truncate(HISTORY);
            self.hist_median.truncate(HISTORY);
        }
        if sorted[0] < self.best {
            self.best = sorted[0];
            self.best_generation = self.generation;
        }
    }

    fn stagnation_window(&self) -> u64 {
        let p = &self.params;
        if self.tol.stagnation > 0 {
            self.tol.stagnation
        } else {
            (100.0 + 100.0 * (p.n as f64).powf(1.5) / p.lambda as f64) as u64
        }
    }

    fn stop(&self, sorted: &[f64]) -> Option<Stop> {
        let p = &self.params;
        let n = p.n;
        let nf = n as f64;
        let range = |v: &mut dyn Iterator<Item = f64>| {
            let (lo, hi) = v.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(x), hi.max(x))
            });
            hi - lo
        };
        if self.generation > 1
            && range(&mut sorted.iter().copied()) < self.tol.tolfun
            && range(&mut self.recent_best.iter().copied()) < self.tol.tolfun
        {
            return Some(Stop::TolFun);
        }
        // pycma's tolfunhist (1e-12 by default: a tenth of tolfun).
        if self.recent_best.len() > 9
            && range(&mut self.recent_best.iter().copied()) < 0.1 * self.tol.tolfun
        {
            return Some(Stop::TolFun);
        }
        if (0..n).any(|i| self.std(i) > TOL_FAC_UP_X * self.sigma0) {
            return Some(Stop::TolUpSigma);
        }
        if (0..n).all(|i| {
            self.std(i) < self.tol.tolx
                && self.sigma * self.scaling[i] * self.pc[i].abs() < self.tol.tolx
        }) {
            return Some(Stop::TolX);
        }
        let (dmin, dmax) = (self.d.min(), self.d.max());
        if (dmax / dmin).powi(2) > self.tol.max_condition {
            return Some(Stop::Condition);
        }
        if self.sigma / self.sigma0 > 1e20 * dmax {
            return Some(Stop::TolUpSigma);
        }
        let axis = (self.generation % n as u64) as usize;
        let step = 0.1 * self.sigma * self.d[axis];
        if (0..n).all(|j| self.mean[j] == self.mean[j] + step * self.scaling[j] * self.b[(j, axis)])
        {
            return Some(Stop::NoEffectAxis);
        }
        if (0..n).any(|j| self.mean[j] == self.mean[j] + 0.2 * self.std(j)) {
            return Some(Stop::NoEffectCoord);
        }
        if self.flat > 1 {
            return Some(Stop::FlatFitness);
        }
        if self.generation as f64 >= self.max_iter {
            return Some(Stop::MaxIter);
        }
        // pycma's tolstagnation: over the (every fifth generation) history,
        // the newest `l` entries are no better than the `l` before them, and
        // the run's best is older than half the window.
        let window = self.stagnation_window();
        let len = self.hist_best.len();
        let l = (window as usize / 10).max(len / 10);
        if self.generation as f64 > nf * (5.0 + 100.0 / p.lambda as f64)
            && self.generation - self.best_generation > window / 2
            && len > 100
            && 2 * l < len
        {
            let med = |h: &VecDeque<f64>, r: std::ops::Range<usize>| {
                let mut v: Vec<f64> = h.range(r).copied().collect();
                v.sort_by(f64::total_cmp);
                median_sorted(&v)
            };
            if med(&self.hist_median, 0..l) >= med(&self.hist_median, l..2 * l)
                && med(&self.hist_best, 0..l) >= med(&self.hist_best, l..2 * l)
            {
                return Some(Stop::Stagnation);
            }
        }
        None
    }
}

/// Longest stagnation history kept (pycma: 2·10⁴ entries).
const HISTORY: usize = 20_000;

/// pycma's `tolfacupx`: a standard deviation grew this many times `σ₀`.
const TOL_FAC_UP_X: f64 = 1e3;

/// The median of ascending `v`: the middle value, or the mean of the two
/// middle ones.
pub(crate) fn median_sorted(v: &[f64]) -> f64 {
    let k = v.len();
    if k % 2 == 1 {
        v[k / 2]
    } else {
        let (a, b) = (v[k / 2 - 1], v[k / 2]);
        if a == b { a } else { 0.5 * (a + b) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn default_parameters_match_the_tutorial() {
        // n = 10: λ = 4 + ⌊3 ln 10⌋ = 10, μ = 5.
        let p = Params::new(10, 10);
        assert_eq!(p.mu, 5);
        let pos: f64 = p.weights[..5].iter().sum();
        assert!((pos - 1.0).abs() < 1e-12);
        assert!(p.weights[..5].windows(2).all(|w| w[0] > w[1]));
        assert!(p.weights[5..].iter().all(|w| *w < 0.0));
        assert!((p.mueff - 3.1672).abs() < 1e-3, "{}", p.mueff);
        assert!((p.c1 - 2.0 / (11.3f64.powi(2) + p.mueff)).abs() < 1e-15);
        assert!((p.chi_n - 3.0847).abs() < 1e-3, "{}", p.chi_n);
        // pycma 4.5's values for n = 20, λ = 48.
        let p48 = Params::new(20, 48);
        assert!((p48.mueff - 13.424522329793223).abs() < 1e-9);
        assert!((p48.cs - 0.4234653289379399).abs() < 1e-12);
        assert!((p48.damps - 3.0495014724243767).abs() < 1e-12);
        assert!((p48.cc - 0.18432415590827378).abs() < 1e-12);
        assert!((p48.c1 - 0.004281605268927939).abs() < 1e-12);
        assert!((p48.cmu - 0.04723937943751996).abs() < 1e-9, "{}", p48.cmu);
        let wsum: f64 = p48.weights.iter().sum();
        assert!((wsum + 0.003907149699156509).abs() < 1e-9, "{wsum}");
        // The negative weights keep C positive definite:
        // c1 + cμ·Σw ≤ 1 with Σ|w⁻| ≤ (1 − c1 − cμ)/(n cμ).
        let neg: f64 = p.weights[5..].iter().map(|w| -w).sum();
        assert!(neg <= (1.0 - p.c1 - p.cmu) / (10.0 * p.cmu) + 1e-12);
    }

    #[test]
    fn normals_have_unit_variance() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let z = normals(&mut rng, 100_001);
        assert_eq!(z.len(), 100_001);
        let mean = z.iter().sum::<f64>() / z.len() as f64;
        let var = z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / z.len() as f64;
        assert!(
            mean.abs() < 0.02 && (var - 1.0).abs() < 0.02,
            "{mean} {var}"
        );
    }

    fn tolerances() -> Tolerances {
        Tolerances {
            tolfun: 1e-11,
            tolx: 1e-12,
            stagnation: 0,
            max_condition: 1e14,
        }
    }

    /// Runs `generations` generations of `run` on `g`, calling `check`
    /// after each update; returns the last stop reason.
    fn iterate(
        run: &mut Run,
        g: impl Fn(&DVector<f64>) -> f64,
        generations: usize,
        mut check: impl FnMut(&Run),
    ) -> Option<Stop> {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..generations {
            let xs = run.sample(&mut rng);
            let values: Vec<f64> = xs.iter().map(&g).collect();
            let stop = run.update(&xs, &values);
            check(run);
            if stop.is_some() {
                return stop;
            }
        }
        None
    }

    #[test]
    fn the_initial_standard_deviation_is_capped() {
        let mut run = Run::new(DVector::from_element(3, 0.5), 0.9, 7, tolerances());
        assert!((run.std(0) - 0.9).abs() < 1e-15);
        run.limit_std(1.0 / 3.0);
        for i in 0..3 {
            assert!((run.std(i) - 1.0 / 3.0).abs() < 1e-15, "{}", run.std(i));
        }
        assert_eq!(run.sigma, 0.9, "the step size itself is kept, as in pycma");
        // Samples spread by the capped deviation, not by σ.
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut sq = 0.0;
        let mut count = 0.0;
        for _ in 0..400 {
            for x in run.sample(&mut rng) {
                sq += (x[1] - 0.5).powi(2);
                count += 1.0;
            }
        }
        let sd = (sq / count).sqrt();
        assert!((sd - 1.0 / 3.0).abs() < 0.02, "{sd}");
    }

    #[test]
    fn a_growing_step_size_keeps_every_coordinate_within_the_cap() {
        // On a linear slope σ grows every generation; uncapped, the
        // coordinates' deviations pass a third of the range within a few
        // generations.
        let slope = |x: &DVector<f64>| -x[0] - 0.5 * x[1] + 0.1 * x[2];
        let mut free = Run::new(DVector::from_element(4, 0.5), 0.1, 8, tolerances());
        iterate(&mut free, slope, 60, |_| {});
        assert!(free.std(0) > 1.0, "uncapped: {}", free.std(0));

        let mut capped = Run::new(DVector::from_element(4, 0.5), 0.1, 8, tolerances());
        capped.limit_std(1.0 / 3.0);
        let mut largest: f64 = 0.0;
        iterate(&mut capped, slope, 60, |run| {
            for i in 0..4 {
                largest = largest.max(run.std(i));
            }
        });
        assert!(largest <= 1.0 / 3.0 + 1e-12, "{largest}");
        assert!(capped.sigma > 1.0, "σ still grows: {}", capped.sigma);
        // The direction of progress is still followed: the mean moved
        // along the slope by many deviations.
        assert!(capped.mean[0] > 3.0, "{}", capped.mean[0]);
    }

    #[test]
    fn a_capped_run_still_converges_on_the_sphere() {
        // Start far off with a step size the cap cuts: the factors shrink
        // once and the run converges as usual.
        let sphere = |x: &DVector<f64>| x.iter().map(|v| (v - 0.3).powi(2)).sum::<f64>();
        let mut run = Run::new(DVector::from_element(5, 0.9), 0.8, 8, tolerances());
        run.limit_std(1.0 / 3.0);
        let mut best = f64::INFINITY;
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for _ in 0..400 {
            let xs = run.sample(&mut rng);
            let values: Vec<f64> = xs.iter().map(sphere).collect();
            best = values.iter().copied().fold(best, f64::min);
            if run.update(&xs, &values).is_some() {
                break;
            }
        }
        assert!(best < 1e-10, "{best}");
    }

    #[test]
    fn median_of_sorted_values() {
        assert_eq!(median_sorted(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median_sorted(&[1.0, 2.0, 4.0, 9.0]), 3.0);
        assert_eq!(
            median_sorted(&[1.0, f64::INFINITY, f64::INFINITY, 9.0]),
            f64::INFINITY
        );
    }
}
