//! The Gaussian process over a map: what the damaged robot is believed to
//! walk with each elite, given the map and the walks so far.
//!
//! As in Cully et al. (2015), the prior mean of an elite is its value in
//! the map and the kernel is a Matérn 5/2 over its descriptors, each
//! scaled to `[0, 1]` (a direction of travel laid on a circle of unit
//! diameter: opposite directions are as far apart as the two ends of any
//! other axis, and 180° and −180° are one place). A process with mean
//! `m` fitted to `y` is a zero-mean process fitted to `y − m` with `m`
//! added back, which is how it is computed here: friedrich's processes
//! take a prior over inputs, and an elite's map value is not a function
//! of its descriptors alone (two elites can share a place on the circle).
//! Values are divided by the map's best, so the kernel's unit variance and
//! the noise mean the same on every robot.

use friedrich::gaussian_process::GaussianProcess;
use friedrich::kernel::Matern2;
use friedrich::prior::ConstantPrior;
use yamor_optimizer_api::map::{Axis, Prior};

/// The process' fixed hyperparameters (IT&E fits none: twenty walks are
/// too few to learn them from).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hyper {
    /// Matérn length scale in scaled-descriptor units (IT&E: 0.4).
    pub length: f64,
    /// Standard deviation of one walk's value around the truth, as a share
    /// of the map's best value.
    pub noise: f64,
}

/// Posterior over every elite of a map.
pub struct Model {
    /// Each elite's place in scaled-descriptor space.
    places: Vec<Vec<f64>>,
    /// Each elite's map value over `scale`.
    prior: Vec<f64>,
    /// The map's best value: what values are divided by.
    scale: f64,
    hyper: Hyper,
    /// (elite, value over `scale`) for every walk told.
    observed: Vec<(usize, f64)>,
    posterior: Option<GaussianProcess<Matern2, ConstantPrior>>,
}

/// Where a descriptor sits in the kernel's space: one coordinate, or two
/// for a direction.
fn embed(axes: &[Axis], descriptors: &[f64]) -> Vec<f64> {
    let mut place = Vec::with_capacity(axes.len() + 1);
    for (axis, &d) in axes.iter().zip(descriptors) {
        let unit = (d - axis.min) / (axis.max - axis.min);
        if axis.is_turn() {
            // A circle of diameter one: opposite directions are one apart,
            // as the ends of a straight axis are, and the two ends meet.
            let angle = unit * std::f64::consts::TAU;
            let radius = 0.5;
            place.push(radius * angle.cos());
            place.push(radius * angle.sin());
        } else {
            place.push(unit.clamp(0.0, 1.0));
        }
    }
    place
}

impl Model {
    #[must_use]
    pub fn new(prior: &Prior, hyper: Hyper) -> Self {
        let best = prior
            .elites
            .iter()
            .map(|e| e.value)
            .fold(f64::NEG_INFINITY, f64::max);
        let scale = if best.is_finite() && best > 0.0 {
            best
        } else {
            1.0
        };
        Model {
            places: prior
                .elites
                .iter()
                .map(|e| embed(&prior.axes, &e.descriptors))
                .collect(),
            prior: prior.elites.iter().map(|e| e.value / scale).collect(),
            scale,
            hyper,
            observed: Vec::new(),
            posterior: None,
        }
    }

    /// Elites in the model.
    #[must_use]
    pub fn len(&self) -> usize {
        self.prior.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.prior.is_empty()
    }

    /// One walk of elite `i` measured `value` (m/s).
    pub fn observe(&mut self, i: usize, value: f64) {
        self.observed.push((i, value / self.scale));
        let inputs: Vec<Vec<f64>> = self
            .observed
            .iter()
            .map(|(i, _)| self.places[*i].clone())
            .collect();
        let residuals: Vec<f64> = self
            .observed
            .iter()
            .map(|(i, y)| y - self.prior[*i])
            .collect();
        self.posterior = Some(GaussianProcess::new(
            ConstantPrior::new(0.0),
            Matern2::new(self.hyper.length, 1.0),
            self.hyper.noise,
            Some(1e-9),
            inputs,
            residuals,
        ));
    }

    /// Walks told.
    #[must_use]
    pub fn walks(&self) -> usize {
        self.observed.len()
    }

    /// Walks told of elite `i`.
    #[must_use]
    pub fn walks_of(&self, i: usize) -> usize {
        self.observed.iter().filter(|(e, _)| *e == i).count()
    }

    /// The posterior mean and standard deviation of every elite (m/s).
    #[must_use]
    pub fn predict(&self) -> Vec<(f64, f64)> {
        let Some(gp) = &self.posterior else {
            // Matérn's variance at zero distance is its amplitude, one.
            return self
                .prior
                .iter()
                .map(|m| (m * self.scale, self.scale))
                .collect();
        };
        let (mean, variance) = gp.predict_mean_variance(&self.places);
        self.prior
            .iter()
            .zip(mean.iter().zip(&variance))
            .map(|(m, (r, v))| ((m + r) * self.scale, v.max(0.0).sqrt() * self.scale))
            .collect()
    }

    /// The best value walked so far (m/s), with its elite.
    #[must_use]
    pub fn best_walked(&self) -> Option<(usize, f64)> {
        self.observed
            .iter()
            .map(|(i, y)| (*i, y * self.scale))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

impl Model {
    /// The elite whose walks were best on average (a walk is noisy: an
    /// elite walked twice is judged on both), with that mean (m/s).
    #[must_use]
    pub fn best_mean_walked(&self) -> Option<(usize, f64)> {
        let mut sums: std::collections::BTreeMap<usize, (f64, usize)> = Default::default();
        for (i, y) in &self.observed {
            let e = sums.entry(*i).or_default();
            e.0 += y;
            e.1 += 1;
        }
        sums.into_iter()
            .map(|(i, (sum, n))| (i, sum / n as f64))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, mean)| (i, mean * self.scale))
    }

    /// The lowest of 0 (standing still), every map value and every walk.
    #[must_use]
    pub fn floor(&self) -> f64 {
        self.prior
            .iter()
            .copied()
            .chain(self.observed.iter().map(|(_, y)| *y))
            .fold(0.0, f64::min)
            * self.scale
    }

    /// Every walk told: (elite, m/s), in order.
    pub fn walked(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.observed.iter().map(|(i, y)| (*i, y * self.scale))
    }
}
