//! The lifelong-learning runtime (thesis chapter 7): a robot walks on a host
//! of its own while this loop watches its velocity; on an anomaly it first
//! tries the stored gaits that fit (7.8.2), most likely first, and only when
//! none walks as remembered does it build a new CPG network for the robot as
//! it now is (7.4) and relearn it with an optimizer run on every free host
//! of the cluster. Every gait it settles on is kept in the organizer's gaits
//! database.
//!
//! The decisions (monitor, ranking, network construction) are in
//! [`crate::anomaly`], [`crate::gaits`] and `yamor_core::network`; this module only moves data
//! between them, the robot's host and the organizer.

use std::time::Instant;

use crate::anomaly::{Monitor, Symptom, Verdict, three_periods};
use crate::gaits::{GaitRecord, Orientation, body_key, candidates};
use tokio_stream::StreamExt as _;
use yamor_core::evaluation::{
    DefectMode, EvaluationSpec, LeadIn, RobotSource, Sample, Situation, planar_velocity,
};
use yamor_core::network::{Limit, plan};
use yamor_core::{ModuleId, Morphology, RobotConfig};
use yamor_host_agent::RobotClient;
use yamor_host_agent::model::SleepClock;
use yamor_organizer::model::{HeldOut, Problem, RunSpec};

use std::collections::BTreeMap;
use std::sync::Arc;

use yamor_core::optimize::OptimizationConfig;
use yamor_ite::{Ite, IteConfig};
use yamor_optimizer_api::{Fitness, Optimizer as _, Step};

use yamor_organizer::Organizer;

use crate::database::Gaits;

#[derive(Debug, thiserror::Error)]
pub enum LifelongError {
    #[error("the robot's host: {0}")]
    Robot(#[from] yamor_host_agent::RobotClientError),
    #[error("the gaits database: {0}")]
    Store(#[from] yamor_organizer::store::StoreError),
    #[error("relearning: {0}")]
    Run(String),
    #[error("the new CPG network: {0}")]
    Network(#[from] yamor_core::network::NetworkError),
    #[error("a gait: {0}")]
    Config(#[from] yamor_core::XmlError),
    /// The robot's position was not known at one end of a measurement (the
    /// tracker lost the LED): no velocity, rather than a distance from 0.
    #[error("no position of the robot at the {0} of a measurement")]
    NoPosition(&'static str),
}

/// How the loop behaves.
#[derive(Debug, Clone)]
pub struct LifelongSettings {
    /// The monitor's threshold `t` (m/s, 7.3).
    pub threshold: f64,
    /// Robot seconds walked from a standstill before the first measurement
    /// (the evaluation warm-up of 6.2.1).
    pub warmup_s: f64,
    /// Robot seconds walked after switching gaits before measuring the new
    /// one.
    pub settle_s: f64,
    /// At most this many stored gaits are tried before relearning.
    pub try_stored: usize,
    /// A stored gait is taken when it walks at least this fraction of the
    /// velocity it is remembered for.
    pub accept: f64,
    /// How the relearnt network's free parameters are kept down: the
    /// thesis' random fixation or tying over symmetries (7.8.1).
    pub limit: Limit,
    /// The relearning run: its optimizer, settings, seed, budget and
    /// evaluation protocol. Its name, robot and problem are filled in at
    /// each relearning (the body and gait of that moment), and so is the
    /// situation of its spec (ground, orientation, defects, lead-in).
    pub relearn: RunSpec,
    /// Robot seconds each relearning walk first walks the gait in use
    /// before the candidate is loaded, as the robot will (0: walks start
    /// from a standstill).
    pub lead_in_s: f64,
    /// Relearning stops early once its best gait reaches this fraction of
    /// the velocity before the anomaly (`None`: run the whole budget).
    pub good_enough: Option<f64>,
    /// The run's best few gaits are each walked on the robot itself and
    /// the one that walks best there is kept (the gait in use too, so
    /// relearning never leaves the robot worse off): a simulation host
    /// builds the body afresh, the robot has lived in it.
    pub shortlist: usize,
    /// Windows of three CPG periods averaged when a gait is measured on
    /// the robot to compare it with others.
    pub compare_windows: usize,
    /// Maps of gaits built ahead of time on the cluster for bodies the
    /// robot may take (a `map-elites` run each), by [`body_key`] and the
    /// way up the robot lies. On an anomaly no stored gait answers, the
    /// loop adapts from the map of the body it now has, lying as it now
    /// lies, walking on the robot itself (Intelligent Trial and Error), and
    /// relearns on the cluster only without one.
    pub maps: BTreeMap<(String, Orientation), u64>,
    /// Walks on the robot an adaptation from a map may spend.
    pub adapt_walks: usize,
    /// How the adaptation models the map and when it stops.
    pub ite: IteConfig,
}

impl Default for LifelongSettings {
    fn default() -> Self {
        LifelongSettings {
            threshold: 0.02,
            warmup_s: EvaluationSpec::default().warmup,
            settle_s: 6.0,
            try_stored: 3,
            accept: 0.9,
            limit: Limit::Symmetric { max: 7, seed: 1 },
            relearn: RunSpec {
                settings: [("variant".to_owned(), "interval".to_owned())].into(),
                seed: 1,
                spec: EvaluationSpec {
                    warmup: 4.0,
                    measure: 8.0,
                    ..EvaluationSpec::default()
                },
                max_seconds: 110.0,
                // The shortlist is compared on the robot itself (7.5), from
                // its own starts: a held-out re-walk on the hosts after the
                // time budget would only delay that.
                held_out: HeldOut::off(),
                ..RunSpec::new("powell", Problem::Space(Vec::new()))
            },
            lead_in_s: 4.0,
            good_enough: None,
            shortlist: 5,
            compare_windows: 2,
            maps: BTreeMap::new(),
            adapt_walks: 20,
            ite: IteConfig::default(),
        }
    }
}

/// What the robot knows of itself and its world: what relearning hosts must
/// reproduce. Physical changes are known directly (7.3); the ground is
/// known only when the caller says so.
#[derive(Debug, Clone)]
pub struct Known {
    pub body: Morphology,
    /// 0: the simulator's default.
    pub ground_friction: f64,
    pub defects: Vec<(ModuleId, DefectMode)>,
    pub dead_cpg: Vec<ModuleId>,
}

/// Something that happened, for timelines and plots.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// One three-period velocity measurement.
    Measured { robot_s: f64, velocity: f64 },
    Anomaly {
        robot_s: f64,
        wall_s: f64,
        symptom: Symptom,
        expected: Option<f64>,
        measured: Option<f64>,
    },
    /// A stored gait was tried.
    Tried {
        gait: u64,
        velocity: f64,
        remembered: f64,
        accepted: bool,
    },
    /// One of the relearning run's best gaits walked on the robot:
    /// `evaluated` on the hosts, `on_robot` here (`rank` 0 is the gait that
    /// was in use).
    Shortlisted {
        rank: usize,
        evaluated: f64,
        on_robot: f64,
    },
    /// A relearning run; `curve` is (wall seconds since the anomaly, best
    /// velocity so far).
    Relearnt {
        run: u64,
        evaluations: u64,
        best: f64,
        curve: Vec<(f64, f64)>,
    },
    /// One walk of an adaptation from a map, on the robot: the elite's
    /// cell, what the model predicted it would walk (mean and standard
    /// deviation, m/s) and what it walked.
    Trial {
        map: u64,
        walk: usize,
        cell: usize,
        predicted: f64,
        sd: f64,
        velocity: f64,
        robot_s: f64,
    },
    /// The gait now in use and its measured velocity.
    Walking {
        robot_s: f64,
        wall_s: f64,
        gait: u64,
        velocity: f64,
        reused: bool,
    },
}

/// How an adaptation ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Adaptation {
    pub symptom: Symptom,
    /// The stored gait that was reused, if any.
    pub reused: Option<u64>,
    /// The relearning run, if there was one.
    pub run: Option<u64>,
    /// Relearning found nothing that walks better on the robot than the
    /// gait in use, which was kept.
    pub kept_current: bool,
    pub gait: u64,
    pub velocity: f64,
    /// Wall seconds from the anomaly to walking again.
    pub wall_s: f64,
    /// Walks the robot spent from the anomaly to walking again: stored
    /// gaits tried, shortlisted gaits compared or trials of a map, and the
    /// walk that measured the gait it took up.
    pub walks: usize,
    /// The map the gait was adapted from, if it was.
    pub map: Option<u64>,
}

/// Which gait an adaptation ends with.
#[derive(Debug, Clone, Copy)]
enum Choice {
    /// A stored gait, taken back without optimization.
    Stored(u64),
    /// A gait a relearning run found, stored as `id`.
    Relearnt { run: u64, id: u64 },
    /// The gait in use, after a relearning run or trials of a map (`Some`),
    /// or neither.
    Kept { run: Option<u64>, map: Option<u64> },
    /// An elite of a map, chosen by trials on the robot, stored as `id`.
    Adapted { map: u64, id: u64 },
}

/// The robot under lifelong learning.
pub struct Lifelong {
    organizer: Organizer,
    gaits: Arc<Gaits>,
    robot: RobotClient,
    settings: LifelongSettings,
    known: Known,
    gait: RobotConfig,
    gait_id: u64,
    monitor: Monitor,
    orientation: Orientation,
    window: f64,
    started: Instant,
    events: Vec<Event>,
    /// Gaits loaded and measured on the robot so far, and that count when
    /// the last anomaly was answered.
    walks: usize,
    walks_at_anomaly: usize,
}

impl Lifelong {
    /// Loads `gait` on the robot behind `robot` (a session already open),
    /// stores it if the database does not know it, and lets it settle.
    pub async fn start(
        organizer: Organizer,
        gaits: Arc<Gaits>,
        robot: RobotClient,
        known: Known,
        gait: RobotConfig,
        settings: LifelongSettings,
    ) -> Result<Lifelong, LifelongError> {
        let state = robot.connect_robot(&gait).await?;
        let orientation = Orientation::from_up(state.up.unwrap_or(1.0));
        let mut me = Lifelong {
            organizer,
            gaits,
            robot,
            monitor: Monitor::new(settings.threshold),
            window: window(&gait),
            settings,
            known,
            gait,
            gait_id: 0,
            orientation,
            started: Instant::now(),
            events: Vec::new(),
            walks: 0,
            walks_at_anomaly: 0,
        };
        me.walk(me.settings.warmup_s).await?;
        let velocity = me.measure().await?;
        me.monitor.observe(velocity);
        me.gait_id = me.remember(velocity, None).await?;
        let robot_s = me.elapsed().await?;
        me.events.push(Event::Walking {
            robot_s,
            wall_s: me.wall(),
            gait: me.gait_id,
            velocity,
            reused: false,
        });
        Ok(me)
    }

    /// The robot's host, to cause changes through its API.
    pub fn robot(&self) -> &RobotClient {
        &self.robot
    }

    #[must_use]
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    #[must_use]
    pub fn gait(&self) -> &RobotConfig {
        &self.gait
    }

    #[must_use]
    pub fn gait_id(&self) -> u64 {
        self.gait_id
    }

    /// The velocity the monitor expects (m/s).
    #[must_use]
    pub fn expected(&self) -> Option<f64> {
        self.monitor.expected()
    }

    #[must_use]
    pub fn orientation(&self) -> Orientation {
        self.orientation
    }

    /// Robot seconds since the session opened.
    pub async fn elapsed(&mut self) -> Result<f64, LifelongError> {
        Ok(self.robot.get_state().await?.elapsed)
    }

    fn wall(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Walks for `seconds` of robot time, measuring every three CPG periods,
    /// until an anomaly; returns it (already recorded), or `None`.
    pub async fn watch(&mut self, seconds: f64) -> Result<Option<Symptom>, LifelongError> {
        let end = self.elapsed().await? + seconds;
        while self.elapsed().await? + self.window / 2.0 <= end {
            if let Some(symptom) = self.check().await? {
                return Ok(Some(symptom));
            }
        }
        Ok(None)
    }

    /// One measurement and its verdict (7.3), plus the robot's attitude:
    /// turning over is an anomaly whatever the velocity says.
    pub async fn check(&mut self) -> Result<Option<Symptom>, LifelongError> {
        let (velocity, up) = self.measure_with_attitude().await?;
        let orientation = up.map_or(self.orientation, Orientation::from_up);
        let symptom = if orientation != self.orientation {
            self.orientation = orientation;
            Some(Symptom::TurnedOver)
        } else {
            match self.monitor.observe(velocity) {
                Verdict::Anomaly {
                    expected, measured, ..
                } if measured < expected => Some(Symptom::VelocityDrop),
                Verdict::Anomaly { .. } => Some(Symptom::VelocityRise),
                _ => None,
            }
        };
        if let Some(symptom) = symptom {
            self.record_anomaly(symptom, Some(velocity)).await?;
        }
        Ok(symptom)
    }

    async fn record_anomaly(
        &mut self,
        symptom: Symptom,
        measured: Option<f64>,
    ) -> Result<(), LifelongError> {
        let robot_s = self.elapsed().await?;
        self.events.push(Event::Anomaly {
            robot_s,
            wall_s: self.wall(),
            symptom,
            expected: self.monitor.expected(),
            measured,
        });
        Ok(())
    }

    /// A physical change the robot knows of directly (a module inserted or
    /// removed, a motor reported dead): the anomaly needs no measurement.
    pub async fn known_change(
        &mut self,
        symptom: Symptom,
        known: Known,
    ) -> Result<(), LifelongError> {
        self.known = known;
        self.record_anomaly(symptom, None).await
    }

    /// What the robot knows of its world changed without an anomaly of its
    /// own (the caller learnt the new ground friction, say).
    pub fn set_known(&mut self, known: Known) {
        self.known = known;
    }

    /// The base strategy of 7.2 with the gaits database of 7.8.2: stored
    /// gaits that fit, most likely first; relearning when none walks as
    /// remembered. Ends walking with the chosen gait.
    pub async fn adapt(&mut self, symptom: Symptom) -> Result<Adaptation, LifelongError> {
        let began = Instant::now();
        self.walks_at_anomaly = self.walks;
        let before = self.monitor.expected();
        let body = body_key(&self.known.body);
        let records = self.gaits.list(Some(&body))?;
        let previous = self.gait_id;
        let tries: Vec<GaitRecord> =
            candidates(&records, &body, self.orientation, Some(previous), symptom)
                .into_iter()
                .take(self.settings.try_stored)
                .cloned()
                .collect();
        // A rise is good news: a stored gait may do better still, but
        // nothing is relearnt; the gait in use is the one to beat.
        let current = if symptom == Symptom::VelocityRise {
            Some(self.load_and_measure(self.gait.clone()).await?)
        } else {
            None
        };
        for record in tries {
            let gait = RobotConfig::from_xml_str("stored gait", &record.gait_xml)?;
            let velocity = self.load_and_measure(gait.clone()).await?;
            let accepted = velocity >= self.settings.accept * record.expected_velocity
                && current.is_none_or(|c| velocity > c);
            self.events.push(Event::Tried {
                gait: record.id,
                velocity,
                remembered: record.expected_velocity,
                accepted,
            });
            if accepted {
                self.gaits
                    .used(record.id, velocity, Some((previous, symptom)))
                    .await?;
                return self
                    .settle_on(symptom, gait, Choice::Stored(record.id), velocity, began)
                    .await;
            }
        }
        if let Some(velocity) = current {
            return self
                .keep_current(symptom, velocity, (None, None), began)
                .await;
        }
        if let Some(&map) = self.settings.maps.get(&(body, self.orientation)) {
            return self.adapt_from_map(map, symptom, previous, began).await;
        }
        let (run, shortlist) = self.relearn(before, began).await?;
        // The gait in use takes part too (`None`): relearning must not make
        // the robot worse than it already is.
        let current_xml = self.gait.to_xml_string();
        let mut best: (f64, Option<RobotConfig>) =
            (self.load_and_measure(self.gait.clone()).await?, None);
        self.events.push(Event::Shortlisted {
            rank: 0,
            evaluated: f64::NAN,
            on_robot: best.0,
        });
        for (rank, (evaluated, gait)) in shortlist.into_iter().enumerate() {
            let on_robot = self.switch_and_measure(gait.clone()).await?;
            self.events.push(Event::Shortlisted {
                rank: rank + 1,
                evaluated,
                on_robot,
            });
            if on_robot > best.0 {
                // The run starts from the gait in use, so it may be listed.
                let is_current = gait.to_xml_string() == current_xml;
                best = (on_robot, (!is_current).then_some(gait));
            }
        }
        let (_, Some(gait)) = best else {
            return self
                .keep_current(symptom, best.0, (Some(run), None), began)
                .await;
        };
        self.take_up(gait, symptom, previous, began, |id| Choice::Relearnt {
            run,
            id,
        })
        .await
    }

    /// Nothing walks better on the robot than the gait in use (measured at
    /// `velocity`): it is loaded again, since the robot walks the last gait
    /// tried, and kept.
    async fn keep_current(
        &mut self,
        symptom: Symptom,
        velocity: f64,
        (run, map): (Option<u64>, Option<u64>),
        began: Instant,
    ) -> Result<Adaptation, LifelongError> {
        let gait = self.gait.clone();
        self.load_and_measure(gait.clone()).await?;
        self.gaits.used(self.gait_id, velocity, None).await?;
        self.settle_on(symptom, gait, Choice::Kept { run, map }, velocity, began)
            .await
    }

    async fn settle_on(
        &mut self,
        symptom: Symptom,
        gait: RobotConfig,
        choice: Choice,
        velocity: f64,
        began: Instant,
    ) -> Result<Adaptation, LifelongError> {
        let (id, reused, run) = match choice {
            Choice::Stored(id) => (id, Some(id), None),
            Choice::Relearnt { run, id } => (id, None, Some(run)),
            Choice::Kept { run, .. } => (self.gait_id, None, run),
            Choice::Adapted { id, .. } => (id, None, None),
        };
        self.window = window(&gait);
        self.gait = gait;
        self.gait_id = id;
        self.monitor.reset();
        self.monitor.observe(velocity);
        let robot_s = self.elapsed().await?;
        self.events.push(Event::Walking {
            robot_s,
            wall_s: self.wall(),
            gait: id,
            velocity,
            reused: reused.is_some(),
        });
        Ok(Adaptation {
            symptom,
            reused,
            run,
            kept_current: matches!(choice, Choice::Kept { .. }),
            gait: id,
            velocity,
            wall_s: began.elapsed().as_secs_f64(),
            walks: self.walks - self.walks_at_anomaly,
            map: match choice {
                Choice::Adapted { map, .. } | Choice::Kept { map: Some(map), .. } => Some(map),
                _ => None,
            },
        })
    }

    /// Intelligent Trial and Error on the robot itself: the elites of
    /// `map` (a map of gaits built on the cluster for the body as it now
    /// is) are walked one at a time, each chosen by the Gaussian process
    /// told every walk before it, until the stop rule or the walk budget;
    /// the elite whose walks were best is taken up and stored. `tried`
    /// stored gaits were walked before.
    async fn adapt_from_map(
        &mut self,
        map: u64,
        symptom: Symptom,
        previous: u64,
        began: Instant,
    ) -> Result<Adaptation, LifelongError> {
        let run_error = |e: yamor_organizer::scheduler::ScheduleError| {
            LifelongError::Run(format!("the map of run {map}: {e}"))
        };
        let spec = self.organizer.runs.spec(map).await.map_err(run_error)?;
        let Problem::OptimizationXml(xml) = &spec.problem else {
            return Err(LifelongError::Run(format!(
                "run {map} maps bare parameters, not gaits"
            )));
        };
        let config = OptimizationConfig::from_xml_str("the map's problem", xml)?;
        let space = self.organizer.runs.space(map).await.map_err(run_error)?;
        let prior = self
            .organizer
            .runs
            .prior(map, &space)
            .await
            .map_err(run_error)?;
        // The gait in use takes part, measured as a trial is: one window
        // that raised the anomaly may be bad luck, and adapting must not
        // leave the robot worse than it already is.
        let current = self.load_and_measure(self.gait.clone()).await?;
        let mut ite = Ite::new(&space, &prior, &self.settings.ite);
        for walk in 0..self.settings.adapt_walks.saturating_sub(1) {
            // What ask() walks: a confirmation of the answer, once the
            // search has stopped, is recorded as the walk of that elite.
            let Some(elite) = ite.next_walk() else {
                break;
            };
            let (predicted, sd) = ite.model().predict()[elite];
            let Step::Evaluate(candidates) = ite.ask() else {
                break;
            };
            let Some(candidate) = candidates.into_iter().next() else {
                break;
            };
            let gait = config
                .apply(&candidate.x)
                .map_err(|e| LifelongError::Run(format!("an elite of run {map}: {e}")))?;
            let velocity = self.switch_and_measure(gait).await?;
            ite.tell(candidate.tag, Fitness::Value(velocity));
            let robot_s = self.elapsed().await?;
            self.events.push(Event::Trial {
                map,
                walk: walk + 1,
                cell: prior.elites[elite].cell,
                predicted,
                sd,
                velocity,
                robot_s,
            });
        }
        let (answer, answered) = ite
            .model()
            .best_mean_walked()
            .ok_or_else(|| LifelongError::Run(format!("no walk of run {map}'s map")))?;
        if answered <= current {
            return self
                .keep_current(symptom, current, (None, Some(map)), began)
                .await;
        }
        let gait = config
            .apply(&space.clamp(&prior.elites[answer].x))
            .map_err(|e| LifelongError::Run(format!("an elite of run {map}: {e}")))?;
        self.take_up(gait, symptom, previous, began, |id| Choice::Adapted {
            map,
            id,
        })
        .await
    }

    /// Switches to a gait found for the robot as it now is, measures it,
    /// stores it with the gait it replaced and walks on with it.
    async fn take_up(
        &mut self,
        gait: RobotConfig,
        symptom: Symptom,
        previous: u64,
        began: Instant,
        choice: impl FnOnce(u64) -> Choice,
    ) -> Result<Adaptation, LifelongError> {
        let velocity = self.switch_and_measure(gait.clone()).await?;
        self.gait = gait;
        let id = self.remember(velocity, Some((previous, symptom))).await?;
        self.settle_on(symptom, self.gait.clone(), choice(id), velocity, began)
            .await
    }

    /// The relearning run for the robot as `known` says it is, lying as
    /// `orientation` says: a new CPG network for that body (7.4) grown
    /// from the gait in use, walked in the robot's situation, each walk
    /// leading in with the gait in use. A map of gaits for a change
    /// expected ahead (a [`LifelongSettings::maps`] entry) is a run of the
    /// same problem with another optimizer.
    pub fn relearn_spec(
        &self,
        known: &Known,
        orientation: Orientation,
    ) -> Result<RunSpec, LifelongError> {
        // Modules that cannot move take no part in the new network.
        let mut network_body = known.body.clone();
        for m in &mut network_body.modules {
            let broken = known
                .defects
                .iter()
                .any(|(id, mode)| *id == m.id && *mode != DefectMode::Healthy)
                || known.dead_cpg.contains(&m.id);
            m.passive |= broken;
        }
        let problem = plan(&network_body, &self.gait, &self.settings.limit)?;
        let mut spec = self.settings.relearn.spec.clone();
        spec.ground_friction = (known.ground_friction > 0.0).then_some(known.ground_friction);
        spec.situation = Situation {
            upside_down: orientation == Orientation::UpsideDown,
            defects: known.defects.clone(),
            dead_cpg: known.dead_cpg.clone(),
            lead_in: (self.settings.lead_in_s > 0.0).then(|| LeadIn {
                gait: self.gait.clone(),
                seconds: self.settings.lead_in_s,
            }),
        };
        Ok(RunSpec {
            name: format!("lifelong relearn after gait {}", self.gait_id),
            robot: RobotSource::Morphology(known.body.to_xml_string()),
            problem: Problem::OptimizationXml(problem.to_xml_string()),
            spec,
            ..self.settings.relearn.clone()
        })
    }

    /// Adapt from run `map`'s map of gaits whenever the robot's body is
    /// `body` (a [`body_key`]) and it lies `orientation`.
    pub fn add_map(&mut self, body: String, orientation: Orientation, map: u64) {
        self.settings.maps.insert((body, orientation), map);
    }

    /// A new CPG network for the body as it now is, relearnt from the
    /// current gait by an optimizer run on every free host; returns the
    /// run and its best distinct gaits with their velocities, best first.
    async fn relearn(
        &mut self,
        before: Option<f64>,
        began: Instant,
    ) -> Result<(u64, Vec<(f64, RobotConfig)>), LifelongError> {
        let run = self
            .organizer
            .runs
            .start(self.relearn_spec(&self.known.clone(), self.orientation)?)
            .await
            .map_err(|e| LifelongError::Run(e.to_string()))?;
        let stop_at = self
            .settings
            .good_enough
            .zip(before)
            .map(|(fraction, v)| fraction * v);
        let mut curve = Vec::new();
        let mut events = self
            .organizer
            .runs
            .watch(run.id)
            .map_err(|e| LifelongError::Run(e.to_string()))?;
        let mut last = run;
        let mut stopping = false;
        while let Some(event) = events.next().await {
            let r = event.run;
            if let Some(best) = r.best_velocity
                && event.evaluation.is_some()
            {
                curve.push((began.elapsed().as_secs_f64(), best));
                if !stopping && stop_at.is_some_and(|target| best >= target) {
                    stopping = true;
                    self.organizer
                        .runs
                        .stop(r.id)
                        .map_err(|e| LifelongError::Run(e.to_string()))?;
                }
            }
            let finished = r.state != yamor_organizer::model::RunState::Running;
            last = r;
            if finished {
                break;
            }
        }
        self.organizer.scheduler.store().sync().await?;
        if last.best_gait_xml.is_empty() {
            return Err(LifelongError::Run(format!(
                "run {} found no gait: {}",
                last.id, last.error
            )));
        }
        self.events.push(Event::Relearnt {
            run: last.id,
            evaluations: last.evaluations,
            best: last.best_velocity.unwrap_or(0.0),
            curve,
        });
        Ok((last.id, self.best_gaits(last.id).await?))
    }

    /// The run's `shortlist` best evaluated gaits, distinct, best first.
    async fn best_gaits(&self, run: u64) -> Result<Vec<(f64, RobotConfig)>, LifelongError> {
        let mut jobs: Vec<(f64, RobotConfig)> = self
            .organizer
            .runs
            .told_jobs(run)
            .await
            .map_err(|e| LifelongError::Run(e.to_string()))?
            .into_iter()
            .filter_map(|job| {
                let velocity = job.fitness().filter(|v| v.is_finite())?;
                Some((velocity, job.request.job.gait?))
            })
            .collect();
        jobs.sort_by(|a, b| b.0.total_cmp(&a.0));
        jobs.dedup_by(|a, b| a.1 == b.1);
        jobs.truncate(self.settings.shortlist.max(1));
        Ok(jobs)
    }

    /// Stores the current gait as a new record, or marks it used when the
    /// database already holds the same gait for this body and orientation.
    async fn remember(
        &mut self,
        velocity: f64,
        switched_from: Option<(u64, Symptom)>,
    ) -> Result<u64, LifelongError> {
        let body = body_key(&self.known.body);
        let xml = self.gait.to_xml_string();
        let same = self
            .gaits
            .list(Some(&body))?
            .into_iter()
            .find(|r| r.gait_xml == xml && r.orientation == self.orientation);
        if let Some(same) = same {
            self.gaits.used(same.id, velocity, switched_from).await?;
            return Ok(same.id);
        }
        Ok(self
            .gaits
            .insert(GaitRecord {
                id: 0,
                body,
                gait_xml: xml,
                orientation: self.orientation,
                expected_velocity: velocity,
                windows: 1,
                velocity_se: None,
                last_used_ms: yamor_organizer::now_ms(),
                predecessors: switched_from.into_iter().collect(),
            })
            .await?)
    }

    /// [`Self::load_and_measure`] for a relearnt gait, switched to from the
    /// gait in use after its lead-in as every relearning walk was: the
    /// shortlist is compared, and the choice taken, the way the hosts judged
    /// it, not from whichever candidate the robot walked last.
    async fn switch_and_measure(&mut self, gait: RobotConfig) -> Result<f64, LifelongError> {
        if self.settings.lead_in_s > 0.0 {
            self.robot.connect_robot(&self.gait).await?;
            self.walk(self.settings.lead_in_s).await?;
        }
        self.load_and_measure(gait).await
    }

    async fn load_and_measure(&mut self, gait: RobotConfig) -> Result<f64, LifelongError> {
        self.walks += 1;
        self.robot.connect_robot(&gait).await?;
        self.window = window(&gait);
        self.walk(self.settings.settle_s).await?;
        let n = self.settings.compare_windows.max(1);
        let mut sum = 0.0;
        for _ in 0..n {
            sum += self.measure().await?;
        }
        Ok(sum / n as f64)
    }

    async fn walk(&mut self, seconds: f64) -> Result<(), LifelongError> {
        self.robot.sleep(seconds, SleepClock::Virtual).await?;
        Ok(())
    }

    async fn measure(&mut self) -> Result<f64, LifelongError> {
        Ok(self.measure_with_attitude().await?.0)
    }

    /// Velocity over one window (three CPG periods) and the attitude at its
    /// end.
    async fn measure_with_attitude(&mut self) -> Result<(f64, Option<f64>), LifelongError> {
        let a = self.robot.get_state().await?;
        let b = self.robot.sleep(self.window, SleepClock::Virtual).await?;
        let from = a.position.ok_or(LifelongError::NoPosition("start"))?;
        let to = b.position.ok_or(LifelongError::NoPosition("end"))?;
        // Robot time of the session's clock, not the samples' own stamps.
        let velocity = planar_velocity(
            &Sample {
                t: a.elapsed,
                ..from
            },
            &Sample { t: b.elapsed, ..to },
        );
        self.events.push(Event::Measured {
            robot_s: b.elapsed,
            velocity,
        });
        Ok((velocity, b.up))
    }
}

/// Three periods of the gait's fastest oscillator (7.3).
fn window(gait: &RobotConfig) -> f64 {
    three_periods(gait.modules.iter().map(|m| m.speed).fold(0.0, f64::max))
}
