//! Brute force: a regular `resolution`ⁿ grid over the first `dimensions`
//! (1 or 2) parameters of the space, the other parameters held at the start
//! point; every grid point is proposed in one batch. Thesis Fig 6.3 is the
//! 64×64 case.
//!
//! # Layout
//! - [`BruteForce`]: the plugin; [`Grid`]: the optimizer.

use yamor_optimizer_api::{
    Candidate, Fitness, Optimizer, Plugin, PluginInfo, SettingKind, SettingSpec, SettingValue,
    Settings, SettingsError, Space, Step,
};

pub struct BruteForce;

impl Plugin for BruteForce {
    fn info(&self) -> PluginInfo {
        PluginInfo {
            name: "brute-force".into(),
            author: "the yamor authors".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description:
                "regular grid over one or two parameters, evaluated in parallel (thesis Fig 6.3)"
                    .into(),
            settings: vec![
                SettingSpec {
                    name: "resolution".into(),
                    description: "grid points per parameter, bounds included".into(),
                    kind: SettingKind::Integer { min: 2, max: 1024 },
                    default: SettingValue::Int(64),
                },
                SettingSpec {
                    name: "dimensions".into(),
                    description: "how many leading parameters the grid spans (1 or 2)".into(),
                    kind: SettingKind::Integer { min: 1, max: 2 },
                    default: SettingValue::Int(2),
                },
            ],
        }
    }

    fn create(
        &self,
        space: &Space,
        settings: &Settings,
        _seed: u64,
        _budget: Option<u64>,
    ) -> Result<Box<dyn Optimizer>, SettingsError> {
        let config = GridConfig::try_from(settings)?;
        let dimensions = config.dimensions.min(space.dim());
        Ok(Box::new(Grid::new(space, config.resolution, dimensions)))
    }
}

/// The plugin's settings as Rust values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridConfig {
    /// Points per axis.
    pub resolution: usize,
    /// How many leading parameters the grid spans.
    pub dimensions: usize,
}

impl TryFrom<&Settings> for GridConfig {
    type Error = SettingsError;

    fn try_from(s: &Settings) -> Result<Self, SettingsError> {
        Ok(GridConfig {
            resolution: s.count("resolution")?,
            dimensions: s.count("dimensions")?,
        })
    }
}

/// All grid points in row-major order (first parameter slowest).
pub struct Grid {
    points: Option<Vec<Vec<f64>>>,
    outstanding: usize,
}

impl Grid {
    #[must_use]
    pub fn new(space: &Space, resolution: usize, dimensions: usize) -> Self {
        let axis = |i: usize| -> Vec<f64> {
            let b = &space.bounds[i];
            (0..resolution)
                .map(|k| b.min + (b.max - b.min) * k as f64 / (resolution - 1) as f64)
                .collect()
        };
        let mut points = vec![space.start.clone()];
        for i in 0..dimensions {
            let values = axis(i);
            points = points
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |v| {
                        let mut q = p.clone();
                        q[i] = *v;
                        q
                    })
                })
                .collect();
        }
        Grid {
            outstanding: points.len(),
            points: Some(points),
        }
    }
}

impl Optimizer for Grid {
    fn ask(&mut self) -> Step {
        match self.points.take() {
            Some(points) => Step::Evaluate(
                points
                    .into_iter()
                    .enumerate()
                    .map(|(i, x)| Candidate { tag: i as u64, x })
                    .collect(),
            ),
            None if self.outstanding > 0 => Step::Wait,
            None => Step::Finished,
        }
    }

    fn tell(&mut self, _tag: u64, _outcome: Fitness) {
        self.outstanding = self.outstanding.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yamor_optimizer_api::Bound;

    #[test]
    fn a_64_by_64_grid_covers_the_box_in_one_batch() {
        let space = Space::new(
            vec![
                Bound::new("a", 0.0, 6.0),
                Bound::new("b", -1.5, 1.5),
                Bound::new("c", 0.0, 1.0),
            ],
            vec![1.0, 0.0, 0.5],
        )
        .unwrap();
        let settings = Settings::defaults(&BruteForce.info().settings);
        let mut grid = BruteForce.create(&space, &settings, 0, None).unwrap();
        let Step::Evaluate(points) = grid.ask() else {
            panic!("expected the grid")
        };
        assert_eq!(points.len(), 64 * 64);
        assert_eq!(points[0].x, vec![0.0, -1.5, 0.5]);
        assert_eq!(points[4095].x, vec![6.0, 1.5, 0.5]);
        assert!(points.iter().all(|c| c.x[2] == 0.5));
        assert_eq!(grid.ask(), Step::Wait);
        for c in &points {
            grid.tell(c.tag, Fitness::Value(0.0));
        }
        assert_eq!(grid.ask(), Step::Finished);
    }
}
