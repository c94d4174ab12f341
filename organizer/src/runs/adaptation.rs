//! An adaptation seen walk by walk: a run that adapts from another run's
//! map (`RunSpec::prior`, e.g. `ite`) replayed from what it stored, as
//! the executor replays it on resume, so that what its model believed
//! before each walk can be shown beside what the walk gave. Nothing of a
//! model is stored: plugins are deterministic, so the run's own settings,
//! seed, prior and told results rebuild it exactly.

use std::collections::{BTreeMap, HashMap};

use yamor_optimizer_api::map::Prior;
use yamor_optimizer_api::{Fitness, Optimizer, Space, Step};

use super::Runs;
use super::executor::{told_descriptors, told_velocity};
use super::map::RunMap;
use super::prepare::{create, prepare, resolve_settings};
use crate::model::{HELD_OUT_SEQ, Job, JobState, Scoring};
use crate::scheduler::ScheduleError;

/// One walk of an adaptation.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    /// 1-based, in the order the optimizer learnt the walks.
    pub walk: usize,
    pub job_id: u64,
    /// The elite of the prior walked (its index in [`Prior::elites`]);
    /// `None` when the point walked is no elite of the map.
    pub elite: Option<usize>,
    /// Its cell in the prior's map.
    pub cell: Option<usize>,
    /// Its descriptors in the map (the intact robot's), in axis order.
    pub descriptors: Vec<f64>,
    /// The descriptors the walk itself measured, when it has them all:
    /// where the damaged robot went instead.
    pub walked_descriptors: Option<Vec<f64>>,
    /// What the optimizer predicted for the elite before the walk:
    /// (mean, standard deviation); `None` when it keeps no beliefs.
    pub predicted: Option<(f64, f64)>,
    /// The value the walk was told with; `None` for a failed walk.
    pub value: Option<f64>,
}

/// A run's adaptation from its prior's map.
#[derive(Debug, Clone, PartialEq)]
pub struct Adaptation {
    pub run: u64,
    /// The run whose map is the prior.
    pub prior_run: u64,
    /// That run's map as it is now (the one the replay started from).
    pub map: RunMap,
    /// Elites in the prior.
    pub elites: usize,
    /// Every walk learnt, in tell order.
    pub trials: Vec<Trial>,
    /// Why the replay ended before the last walk learnt (the prior's map
    /// changed since the run, a plugin that is not deterministic); `None`
    /// when every walk was replayed.
    pub incomplete: Option<String>,
}

impl Adaptation {
    /// The adaptation as JSON (`/runs/{id}/adaptation.json`).
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let trials: Vec<serde_json::Value> = self
            .trials
            .iter()
            .map(|t| {
                serde_json::json!({
                    "walk": t.walk,
                    "job": t.job_id,
                    "elite": t.elite,
                    "cell": t.cell,
                    "descriptors": t.descriptors,
                    "walked_descriptors": t.walked_descriptors,
                    "predicted_mean": t.predicted.map(|p| p.0),
                    "predicted_sd": t.predicted.map(|p| p.1),
                    "value": t.value,
                })
            })
            .collect();
        serde_json::json!({
            "run": self.run,
            "prior_run": self.prior_run,
            "grid": self.map.grid.to_string(),
            "descriptors": self.map.grid.names(),
            "elites": self.elites,
            "walks": trials,
            "incomplete": self.incomplete,
        })
    }

    /// The best value walked, with its walk.
    #[must_use]
    pub fn best(&self) -> Option<&Trial> {
        self.trials
            .iter()
            .filter(|t| t.value.is_some_and(f64::is_finite))
            .max_by(|a, b| a.value.unwrap_or(0.0).total_cmp(&b.value.unwrap_or(0.0)))
    }
}

/// What a replay gives: the walks replayed and, if it ended early, why.
type Replayed = (Vec<Trial>, Option<String>);

/// Replays `optimizer` (made fresh from the run's settings, seed and
/// `prior`) over the run's stored `jobs`: it is asked, its proposals are
/// matched to the stored ones by position, and the first `learnt` results
/// are told in tell order with what the executor told; before each, its
/// beliefs about the elite walked are read.
pub(super) fn replay(
    mut optimizer: Box<dyn Optimizer>,
    prior: &Prior,
    space: &Space,
    jobs: &[Job],
    learnt: u64,
    scoring: Scoring,
) -> Replayed {
    let proposals: BTreeMap<u64, &Job> = jobs
        .iter()
        .filter(|j| j.seq < HELD_OUT_SEQ)
        .map(|j| (j.seq, j))
        .collect();
    let last_seq = proposals.keys().next_back().copied();
    let mut told: Vec<&Job> = jobs
        .iter()
        .filter(|j| j.seq < HELD_OUT_SEQ && j.tell_seq.is_some_and(|t| t < learnt))
        .collect();
    told.sort_by_key(|j| j.tell_seq);
    // The optimizer proposes an elite's point as the run's space holds
    // it, so the elites are matched clamped, to the bit.
    let points: Vec<Vec<u64>> = prior
        .elites
        .iter()
        .map(|e| bits(&space.clamp(&e.x)))
        .collect();
    let names = optimizer.descriptors();
    let axes: Vec<String> = prior.axes.iter().map(|a| a.name.clone()).collect();
    let mut pending: HashMap<u64, (u64, Vec<f64>)> = HashMap::new();
    let mut next_seq = 0;
    let mut trials = Vec::with_capacity(told.len());
    for (k, job) in told.into_iter().enumerate() {
        let walk = k + 1;
        while !pending.contains_key(&job.id) {
            let stop = |why: String| Some(format!("replayed {k} walks; walk {walk}: {why}"));
            if last_seq.is_none_or(|last| next_seq > last) {
                return (trials, stop("the optimizer never proposed it again".into()));
            }
            match optimizer.ask() {
                Step::Evaluate(candidates) => {
                    for c in candidates {
                        let seq = next_seq;
                        next_seq += 1;
                        // A proposal never stored was past the budget: the
                        // executor dropped it too.
                        let Some(stored) = proposals.get(&seq) else {
                            continue;
                        };
                        let x: Vec<f64> = stored
                            .request
                            .job
                            .parameters
                            .iter()
                            .map(|(_, v)| *v)
                            .collect();
                        if bits(&x) != bits(&c.x) {
                            return (
                                trials,
                                stop(format!(
                                    "proposal {seq} differs from the stored one (has the \
                                     prior's map changed since the run?)"
                                )),
                            );
                        }
                        pending.insert(stored.id, (c.tag, c.x));
                    }
                }
                Step::Wait | Step::Finished => {
                    return (
                        trials,
                        stop(
                            "the optimizer did not propose it (has the prior's map changed \
                             since the run?)"
                                .into(),
                        ),
                    );
                }
            }
        }
        let (tag, x) = pending.remove(&job.id).expect("just matched");
        let beliefs = optimizer.beliefs();
        let elite = points.iter().position(|p| *p == bits(&x));
        let outcome = job.outcome.as_ref().filter(|_| job.state == JobState::Done);
        let value = told_velocity(outcome, scoring);
        trials.push(Trial {
            walk,
            job_id: job.id,
            elite,
            cell: elite.map(|e| prior.elites[e].cell),
            descriptors: elite.map_or_else(Vec::new, |e| prior.elites[e].descriptors.clone()),
            walked_descriptors: told_descriptors(outcome, &axes),
            predicted: elite.and_then(|e| beliefs.as_ref()?.get(e).copied()),
            value,
        });
        optimizer.tell_described(
            tag,
            value.map_or(Fitness::Failed, Fitness::Value),
            told_descriptors(outcome, &names).as_deref(),
        );
    }
    (trials, None)
}

fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

impl Runs {
    /// Run `id`'s adaptation from its prior's map, replayed walk by walk;
    /// `None` when the run names no prior.
    pub async fn adaptation(&self, id: u64) -> Result<Option<Adaptation>, ScheduleError> {
        let run = self.get(id)?;
        let row = self.stored(id).await?;
        let Some(prior_run) = row.spec.prior else {
            return Ok(None);
        };
        let invalid = move |e: String| ScheduleError::Invalid(format!("run {id}: {e}"));
        let prepared = prepare(&row.spec).map_err(|e| invalid(e.to_string()))?;
        let settings =
            resolve_settings(&self.plugins, &row.spec).map_err(|e| invalid(e.to_string()))?;
        let map = self.map(prior_run).await?.ok_or_else(|| {
            invalid(format!(
                "its prior, run {prior_run}, keeps no map to adapt from"
            ))
        })?;
        let prior = map.prior(prior_run, &prepared.space)?;
        let jobs = self.every_job(id).await?;
        let plugins = self.plugins.clone();
        let space = prepared.space;
        // Making the optimizer and replaying it is the optimizer's own
        // thinking, a process fitted per walk: off the runtime.
        let replayed = tokio::task::spawn_blocking(move || {
            let optimizer = create(
                &plugins,
                &row.spec,
                &space,
                &settings,
                row.seed,
                Some(&prior),
            )
            .map_err(|e| invalid(e.to_string()))?;
            let (trials, incomplete) = replay(
                optimizer,
                &prior,
                &space,
                &jobs,
                run.evaluations,
                row.spec.scoring(),
            );
            Ok::<_, ScheduleError>((prior.elites.len(), trials, incomplete))
        })
        .await
        .map_err(|e| ScheduleError::Invalid(format!("replaying the adaptation failed: {e}")))?;
        let (elites, trials, incomplete) = replayed?;
        Ok(Some(Adaptation {
            run: id,
            prior_run,
            map,
            elites,
            trials,
            incomplete,
        }))
    }
}

#[cfg(test)]
mod tests {
    use yamor_core::evaluation::{Objective, Outcome};
    use yamor_optimizer_api::map::{Axis, PriorElite};
    use yamor_optimizer_api::{Plugin as _, Settings};

    use super::*;
    use crate::model::{ParameterBound, Problem, RunSpec};

    fn spec() -> RunSpec {
        let bound = |name: &str| ParameterBound {
            name: name.into(),
            min: -1.0,
            max: 1.0,
            start: 0.0,
        };
        RunSpec {
            objective: Objective::Expression("-(x*x + y*y)".into()),
            prior: Some(1),
            ..RunSpec::new("ite", Problem::Space(vec![bound("x"), bound("y")]))
        }
    }

    /// A map of nine elites over x, y, the best at (0.5, 0.5).
    fn prior() -> Prior {
        let axis = |name: &str| Axis {
            name: name.into(),
            min: -1.0,
            max: 1.0,
            bins: 3,
        };
        let mut elites = Vec::new();
        for i in 0..3 {
            for j in 0..3 {
                let x = vec![-0.5 + 0.5 * f64::from(i), -0.5 + 0.5 * f64::from(j)];
                let value = -((x[0] - 0.5).powi(2) + (x[1] - 0.5).powi(2));
                elites.push(PriorElite {
                    cell: elites.len(),
                    descriptors: x.clone(),
                    x,
                    value,
                });
            }
        }
        Prior {
            run: 1,
            axes: vec![axis("x"), axis("y")],
            elites,
        }
    }

    fn ite(prior: &Prior, space: &Space) -> Box<dyn Optimizer> {
        let settings = Settings::defaults(&yamor_ite::ItePlugin.info().settings);
        yamor_ite::ItePlugin
            .create_from(space, &settings, 1, Some(20), Some(prior))
            .unwrap()
    }

    /// A run of `walks` walks as the executor stores it, on a robot
    /// whose best place moved to (-0.5, -0.5); walk `failed` (0-based)
    /// failed for good.
    fn walked(walks: u64, failed: Option<u64>) -> (Vec<Job>, Space) {
        let prepared = prepare(&spec()).unwrap();
        let mut optimizer = ite(&prior(), &prepared.space);
        let mut jobs = Vec::new();
        for seq in 0..walks {
            let Step::Evaluate(c) = optimizer.ask() else {
                panic!("no walk {seq}")
            };
            let x = &c[0].x;
            let value = -((x[0] + 0.5).powi(2) + (x[1] + 0.5).powi(2));
            let ok = failed != Some(seq);
            optimizer.tell(
                c[0].tag,
                if ok {
                    Fitness::Value(value)
                } else {
                    Fitness::Failed
                },
            );
            jobs.push(Job {
                id: 100 + seq,
                run_id: 2,
                owner: "run-2".into(),
                seq,
                tell_seq: Some(seq),
                state: if ok { JobState::Done } else { JobState::Failed },
                request: prepared.job_for(x).unwrap(),
                attempts: 1,
                host: "h".into(),
                outcome: ok.then(|| Outcome::Value {
                    value,
                    wall: std::time::Duration::ZERO,
                    descriptors: [("x".to_owned(), x[0]), ("y".to_owned(), x[1])].into(),
                }),
                error: String::new(),
                submitted_ms: 0,
                started_ms: 0,
                finished_ms: 0,
            });
        }
        (jobs, prepared.space)
    }

    #[test]
    fn a_replay_reads_the_models_belief_before_each_walk_and_the_value_told() {
        let prior = prior();
        let (mut jobs, space) = walked(4, None);
        // Stored out of order, as a query may give them.
        jobs.reverse();
        let (trials, incomplete) = replay(
            ite(&prior, &space),
            &prior,
            &space,
            &jobs,
            4,
            Scoring::default(),
        );
        assert_eq!(incomplete, None);
        assert_eq!(trials.len(), 4);
        let mut fresh = yamor_ite::Ite::new(&space, &prior, &yamor_ite::IteConfig::default());
        for (k, t) in trials.iter().enumerate() {
            assert_eq!(t.walk, k + 1);
            assert_eq!(t.job_id, 100 + k as u64);
            let elite = fresh.next_elite();
            assert_eq!(t.elite, Some(elite));
            assert_eq!(t.cell, Some(prior.elites[elite].cell));
            assert_eq!(t.descriptors, prior.elites[elite].descriptors);
            assert_eq!(t.walked_descriptors.as_ref(), Some(&prior.elites[elite].x));
            assert_eq!(t.predicted, Some(fresh.model().predict()[elite]));
            let Step::Evaluate(c) = fresh.ask() else {
                panic!()
            };
            fresh.tell(c[0].tag, Fitness::Value(t.value.unwrap()));
        }
        // The map's best first, believed at its map value.
        assert_eq!(trials[0].elite, Some(8));
        assert_eq!(trials[0].predicted.unwrap().0, 0.0);
        // Only what the run learnt.
        let (learnt, _) = replay(
            ite(&prior, &space),
            &prior,
            &space,
            &jobs,
            2,
            Scoring::default(),
        );
        assert_eq!(learnt, trials[..2]);
    }

    #[test]
    fn a_failed_walk_is_told_as_failed_and_a_changed_map_stops_the_replay_in_words() {
        let prior = prior();
        // Told as standing still (0), the best any walk here gives: IT&E
        // stops after it, so it is the last walk.
        let (jobs, space) = walked(2, Some(1));
        let (trials, incomplete) = replay(
            ite(&prior, &space),
            &prior,
            &space,
            &jobs,
            2,
            Scoring::default(),
        );
        assert_eq!(incomplete, None);
        assert_eq!(trials.len(), 2);
        assert_eq!(trials[1].value, None);
        assert_eq!(trials[1].walked_descriptors, None);
        // The map changed since: its best is now elsewhere, and the first
        // proposal is not the one stored.
        let mut changed = prior.clone();
        changed.elites[0].value = 1.0;
        let (trials, incomplete) = replay(
            ite(&changed, &space),
            &changed,
            &space,
            &jobs,
            3,
            Scoring::default(),
        );
        assert!(trials.is_empty());
        let why = incomplete.unwrap();
        assert!(why.contains("proposal 0 differs"), "{why}");
        assert!(why.contains("prior's map changed"), "{why}");
    }
}
