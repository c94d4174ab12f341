//! A quality-diversity run's map, rebuilt from what the run stored: every
//! learnt result filed in tell order on the grid its optimizer names
//! ([`yamor_optimizer_api::Plugin::grid`]), exactly as the optimizer filed
//! it, and each elite's held-out re-walks beside it. Nothing else is
//! stored for a map: a run resumed after a crash rebuilds the same one,
//! and the map is what a later run (lifelong learning's prior) reads.

use std::collections::HashMap;

use yamor_core::starts::Spread;
use yamor_core::world::World;
use yamor_optimizer_api::map::{Archive, Grid, Prior, PriorElite};
use yamor_optimizer_api::{Settings, Space};

use super::Runs;
use super::prepare::plugin;
use crate::model::{HELD_OUT_SEQ, Job, JobState, REFERENCE_SEQ, Run, Scoring, told_value};
use crate::scheduler::ScheduleError;

/// One filled cell of a run's map.
#[derive(Debug, Clone, PartialEq)]
pub struct MapCell {
    pub cell: usize,
    /// Its bin on each of the grid's axes.
    pub bins: Vec<usize>,
    /// The job whose walk holds the cell (its page replays it).
    pub job_id: u64,
    pub parameters: Vec<(String, f64)>,
    /// The value it was filed with (a walk's velocity, m/s).
    pub fitness: f64,
    /// Its descriptors, in the grid's axis order.
    pub descriptors: Vec<f64>,
    /// The world the walk was drawn into (the nominal one when the run
    /// learnt in a single world).
    pub world: World,
    /// The ground friction drawn with it, when the run drew one.
    pub friction: Option<f64>,
    /// Its held-out re-walks, once walked.
    pub held_out: Option<Spread>,
}

/// A run's map of elites.
#[derive(Debug, Clone, PartialEq)]
pub struct RunMap {
    pub grid: Grid,
    /// Filled cells, in cell order.
    pub cells: Vec<MapCell>,
    /// Results filed (the run's learnt results).
    pub results: usize,
}

impl RunMap {
    /// Files `told` (a run's learnt jobs, in tell order) on `grid` as the
    /// optimizer did, and reads each elite's spread from `held_out` (the
    /// run's held-out re-walks).
    #[must_use]
    pub fn build(grid: Grid, told: &[Job], held_out: &[Job], scoring: Scoring) -> Self {
        let names = grid.names();
        let mut archive: Archive<usize> = Archive::new(grid);
        for (k, job) in told.iter().enumerate() {
            let Some(outcome) = job.outcome.as_ref().filter(|_| job.state == JobState::Done) else {
                continue;
            };
            let Some(descriptors) = names
                .iter()
                .map(|n| outcome.descriptor(n))
                .collect::<Option<Vec<f64>>>()
            else {
                continue;
            };
            let x = job.request.job.parameters.iter().map(|(_, v)| *v).collect();
            archive.insert(x, told_value(outcome, scoring), descriptors, k);
        }
        let mut walks: HashMap<Vec<u64>, Vec<f64>> = HashMap::new();
        for job in held_out
            .iter()
            .filter(|j| (HELD_OUT_SEQ..REFERENCE_SEQ).contains(&j.seq))
        {
            if let Some(v) = job.fitness().filter(|v| v.is_finite()) {
                walks
                    .entry(bits(&job.request.job.parameters))
                    .or_default()
                    .push(v);
            }
        }
        let cells = archive
            .elites()
            .map(|(cell, elite)| {
                let job = &told[elite.tag];
                MapCell {
                    cell,
                    bins: archive.grid().bins_of(cell),
                    job_id: job.id,
                    parameters: job.request.job.parameters.clone(),
                    fitness: elite.fitness,
                    descriptors: elite.descriptors.clone(),
                    world: job.request.job.spec.world.clone(),
                    friction: job.request.job.spec.ground_friction,
                    held_out: walks
                        .get(&bits(&job.request.job.parameters))
                        .filter(|v| v.len() >= 2)
                        .and_then(|v| Spread::of(v)),
                }
            })
            .collect();
        RunMap {
            grid: archive.grid().clone(),
            cells,
            results: told.len(),
        }
    }

    /// Filled cells over all cells.
    #[must_use]
    pub fn coverage(&self) -> f64 {
        self.cells.len() as f64 / self.grid.cells() as f64
    }

    /// The whole map as JSON (`/runs/{id}/map.json`, `yamor run`'s
    /// map.json): each cell's gait, descriptors, value, held-out spread
    /// and world, for a later run to start from.
    #[must_use]
    pub fn to_json(&self, run_id: u64) -> serde_json::Value {
        let spread =
            |s: &Spread| serde_json::json!({"n": s.n, "mean": s.mean, "se": s.se, "p10": s.p10});
        let cells: Vec<serde_json::Value> = self
            .cells
            .iter()
            .map(|c| {
                serde_json::json!({
                    "cell": c.cell,
                    "bins": c.bins,
                    "job": c.job_id,
                    "parameters": c.parameters.iter().map(|(n, v)| serde_json::json!({"name": n, "value": v})).collect::<Vec<_>>(),
                    "fitness": c.fitness,
                    "descriptors": c.descriptors,
                    "held_out": c.held_out.as_ref().map(spread),
                    "world": c.world,
                    "ground_friction": c.friction,
                })
            })
            .collect();
        serde_json::json!({
            "run": run_id,
            "grid": self.grid.to_string(),
            "descriptors": self.grid.names(),
            "cells_total": self.grid.cells(),
            "results": self.results,
            "coverage": self.coverage(),
            "qd_score": self.qd_score(),
            "cells": cells,
        })
    }

    /// This map (run `id`'s) as the prior of a run over `space` that
    /// adapts from it: every filled cell with its held-out mean where it
    /// was re-walked, else the value it was filed with. Refused when it
    /// holds no elite yet or its run searched other parameters.
    pub fn prior(&self, id: u64, space: &Space) -> Result<Prior, ScheduleError> {
        let invalid = |why: String| ScheduleError::Invalid(format!("prior: run {id} {why}"));
        let names: Vec<&str> = space.bounds.iter().map(|b| b.name.as_str()).collect();
        let elites: Vec<PriorElite> = self
            .cells
            .iter()
            .filter_map(|c| {
                let value = c.held_out.as_ref().map_or(c.fitness, |s| s.mean);
                value.is_finite().then(|| PriorElite {
                    cell: c.cell,
                    x: c.parameters.iter().map(|(_, v)| *v).collect(),
                    descriptors: c.descriptors.clone(),
                    value,
                })
            })
            .collect();
        let Some(first) = self.cells.first() else {
            return Err(invalid("holds no elite yet".into()));
        };
        let theirs: Vec<&str> = first.parameters.iter().map(|(n, _)| n.as_str()).collect();
        if theirs != names {
            return Err(invalid(format!(
                "searched {} and this run searches {}: adapt from a map of the same \
                 parameters (the same robot and optimize rules)",
                theirs.join(", "),
                names.join(", ")
            )));
        }
        Ok(Prior {
            run: id,
            axes: self.grid.axes().to_vec(),
            elites,
        })
    }

    /// pyribs' QD score with offset 0: the sum of the elites' values (a
    /// velocity is never negative).
    #[must_use]
    pub fn qd_score(&self) -> f64 {
        self.cells.iter().map(|c| c.fitness).sum()
    }
}

/// A point's coordinates as bits: a re-walk has the elite's parameters
/// to the bit.
fn bits(parameters: &[(String, f64)]) -> Vec<u64> {
    parameters.iter().map(|(_, v)| v.to_bits()).collect()
}

impl Runs {
    /// The map of run `id`, rebuilt from its stored results; `None` when
    /// its optimizer keeps none.
    pub async fn map(&self, id: u64) -> Result<Option<RunMap>, ScheduleError> {
        let run: Run = self.get(id)?;
        let Some(grid) = self.grid_of(&run)? else {
            return Ok(None);
        };
        let row = self.stored(id).await?;
        let told = run.learnt(self.told_jobs(id).await?);
        let held_out = self
            .scheduler
            .store()
            .read_async(move |s| s.held_out_jobs(id))
            .await?;
        let scoring = row.spec.scoring();
        let map =
            tokio::task::spawn_blocking(move || RunMap::build(grid, &told, &held_out, scoring))
                .await
                .map_err(|e| ScheduleError::Invalid(format!("building the map failed: {e}")))?;
        Ok(Some(map))
    }

    /// Run `id`'s map as the prior of a run over `space` that adapts from
    /// it ([`RunMap::prior`]); refused when the run keeps no map.
    pub async fn prior(&self, id: u64, space: &Space) -> Result<Prior, ScheduleError> {
        let Some(map) = self.map(id).await? else {
            let run = self.get(id)?;
            return Err(ScheduleError::Invalid(format!(
                "prior: run {id} keeps no map (its optimizer is {}): adapt from a map-elites run",
                run.optimizer
            )));
        };
        map.prior(id, space)
    }

    /// The grid `run`'s optimizer fills with its settings, if it keeps a map.
    pub fn grid_of(&self, run: &Run) -> Result<Option<Grid>, ScheduleError> {
        let invalid = |e: String| ScheduleError::Invalid(format!("run {}: {e}", run.id));
        let plugin = plugin(&self.plugins, &run.optimizer).map_err(|e| invalid(e.to_string()))?;
        let settings = Settings::parse(
            &plugin.info().settings,
            run.settings.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .map_err(|e| invalid(e.to_string()))?;
        plugin.grid(&settings).map_err(|e| invalid(e.to_string()))
    }
}
