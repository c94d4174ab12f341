//! What a run is checked for and made of before anything of it is stored or
//! asked: its problem as a space and a job template, its optimizer, its
//! settings. Kept apart so that a local run (`yamor run`) and a resumed run
//! check exactly what a started one does.

use std::sync::Arc;

use yamor_core::XmlError;
use yamor_core::evaluation::SpecError;
use yamor_core::evaluation::{BackendKind, EvaluationJob, Objective};
use yamor_core::optimize::{ApplyError, OptimizationConfig};
use yamor_optimizer_api::map::{Prior, PriorElite};
use yamor_optimizer_api::{Bound, Optimizer, Plugin, Settings, SettingsError, Space, SpaceError};

use crate::model::{HeldOutError, JobRequest, JobRequestError, Problem, RunSpec};

/// Why a run cannot start (or resume): its problem, objective, budget,
/// optimizer or settings. The messages name the field at fault.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Problem(#[from] XmlError),
    #[error("optimization_xml: no <optimize param min max> rule, nothing to optimize")]
    NothingToOptimize,
    /// The problem's bounds or start; `field` is `optimization_xml` or `space`.
    #[error("{field}: {source}")]
    Space {
        field: &'static str,
        source: SpaceError,
    },
    #[error(
        "a run over bare parameters must name its objective: an expression (expr:<text>) or an external objective's name"
    )]
    NoObjective,
    #[error("optimization_xml describes a gait, but the objective is {0}")]
    ObjectiveOfGait(Objective),
    #[error("objective: expr: needs an expression, e.g. expr:-(x*x + y*y)")]
    EmptyExpression,
    #[error("max_turn_deg_s must be a positive number of degrees per second, got {0}")]
    MaxTurn(f64),
    #[error(transparent)]
    HeldOut(#[from] HeldOutError),
    #[error("max_seconds must be non-negative, got {0}")]
    MaxSeconds(f64),
    /// A point of the space that makes no gait.
    #[error(transparent)]
    Gait(#[from] ApplyError),
    #[error(transparent)]
    Job(#[from] JobRequestError),
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("optimizer: unknown {name:?}; known: {}", .known.join(", "))]
    UnknownOptimizer { name: String, known: Vec<String> },
    #[error("settings: {0}")]
    Settings(#[from] SettingsError),
    #[error("{0} adapts from a map: name the map-elites run it starts from (prior)")]
    NoPrior(String),
}

/// How a point of the space becomes a job.
pub(super) enum Blueprint {
    /// A gait: a yamorconfig with <optimize> rules.
    Gait(Box<OptimizationConfig>),
    /// Bare named parameters of an expression or external objective.
    Bare,
}

pub(super) struct Prepared {
    pub(super) blueprint: Blueprint,
    pub(super) space: Space,
    pub(super) template: JobRequest,
}

impl Prepared {
    /// `x` as named parameters, in space order.
    pub(super) fn parameters(&self, x: &[f64]) -> Vec<(String, f64)> {
        self.space
            .bounds
            .iter()
            .zip(x)
            .map(|(b, &value)| (b.name.clone(), value))
            .collect()
    }

    /// The job that evaluates `x`, or why `x` cannot be turned into one.
    pub(super) fn job_for(&self, x: &[f64]) -> Result<JobRequest, PrepareError> {
        let mut request = self.template.clone();
        request.job.parameters = self.parameters(x);
        if let Blueprint::Gait(config) = &self.blueprint {
            request.job.gait = Some(config.apply(x)?);
        }
        Ok(request)
    }

    pub(super) fn best_gait(&self, x: &[f64]) -> String {
        match &self.blueprint {
            Blueprint::Gait(config) => config
                .apply(x)
                .map(|g| g.to_xml_string())
                .unwrap_or_default(),
            Blueprint::Bare => String::new(),
        }
    }
}

pub(super) fn prepare(spec: &RunSpec) -> Result<Prepared, PrepareError> {
    let (blueprint, space) = match &spec.problem {
        Problem::OptimizationXml(xml) => {
            let config = OptimizationConfig::from_xml_str("optimization_xml", xml)?;
            let free = config.free_parameters();
            if free.is_empty() {
                return Err(PrepareError::NothingToOptimize);
            }
            let bounds = free
                .iter()
                .map(|p| Bound {
                    name: p.name.clone(),
                    min: p.min,
                    max: p.max,
                    periodic: p.periodic,
                })
                .collect();
            let start = free.iter().map(|p| p.start).collect();
            let space = Space::new(bounds, start).map_err(|source| PrepareError::Space {
                field: "optimization_xml",
                source,
            })?;
            (Blueprint::Gait(Box::new(config)), space)
        }
        Problem::Space(bounds) => {
            let start = bounds.iter().map(|b| b.start).collect();
            let bounds = bounds
                .iter()
                .map(|b| Bound::new(b.name.clone(), b.min, b.max))
                .collect();
            let space = Space::new(bounds, start).map_err(|source| PrepareError::Space {
                field: "space",
                source,
            })?;
            (Blueprint::Bare, space)
        }
    };
    // Gaits default to simulation; a bare objective goes to whichever host
    // serves it, whatever its kind.
    let backend = match (&blueprint, spec.backend) {
        (_, Some(kind)) => Some(kind),
        (Blueprint::Gait(_), None) => Some(BackendKind::Simulation),
        (Blueprint::Bare, None) => None,
    };
    match (&blueprint, &spec.objective) {
        (Blueprint::Bare, Objective::Gait) => {
            return Err(PrepareError::NoObjective);
        }
        (Blueprint::Gait(_), objective @ (Objective::Expression(_) | Objective::Named(_))) => {
            return Err(PrepareError::ObjectiveOfGait(objective.clone()));
        }
        _ => {}
    }
    if let Some(max) = spec.max_turn_deg_s
        && !(max.is_finite() && max > 0.0)
    {
        return Err(PrepareError::MaxTurn(max));
    }
    spec.held_out.check()?;
    if !spec.max_seconds.is_finite() || spec.max_seconds < 0.0 {
        return Err(PrepareError::MaxSeconds(spec.max_seconds));
    }
    let template = JobRequest {
        job: EvaluationJob {
            objective: spec.objective.clone(),
            robot: spec.robot.clone(),
            gait: None,
            parameters: Vec::new(),
            spec: spec.spec.clone(),
        },
        backend,
        max_attempts: 0,
        timeout: None,
    };
    let prepared = Prepared {
        blueprint,
        space,
        template,
    };
    // Fail now, not in the middle of the run, if the start point cannot run.
    let start = prepared.space.start.clone();
    let job = prepared.job_for(&start)?;
    job.check()?;
    Ok(prepared)
}

pub(super) fn plugin<'a>(
    plugins: &'a [Arc<dyn Plugin>],
    name: &str,
) -> Result<&'a Arc<dyn Plugin>, PrepareError> {
    plugins
        .iter()
        .find(|p| p.info().name == name)
        .ok_or_else(|| PrepareError::UnknownOptimizer {
            name: name.to_owned(),
            known: plugins.iter().map(|p| p.info().name).collect(),
        })
}

/// The one place a run's settings (text, from a request or the store)
/// become the typed values its optimizer is made with. A gait run gets the
/// gait-run defaults ([`crate::model::gait_run_settings`]) for what it does
/// not set, whichever way it came in (gRPC, the form, a local run); a
/// stored run names every setting already.
pub(super) fn resolve_settings(
    plugins: &[Arc<dyn Plugin>],
    spec: &RunSpec,
) -> Result<Settings, PrepareError> {
    let plugin = plugin(plugins, &spec.optimizer)?;
    let mut given = spec.settings.clone();
    if matches!(spec.problem, Problem::OptimizationXml(_)) {
        crate::model::gait_run_settings(&spec.optimizer, &mut given);
    }
    Settings::parse(
        &plugin.info().settings,
        given.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .map_err(PrepareError::Settings)
}

/// What a run is checked for before anything of it is stored: its
/// objective and problem ([`prepare`]), and its settings against the
/// optimizer made over its space.
pub(super) fn checked(
    plugins: &[Arc<dyn Plugin>],
    spec: &RunSpec,
    settings: &Settings,
) -> Result<Prepared, PrepareError> {
    if spec.objective == Objective::Expression(String::new()) {
        return Err(PrepareError::EmptyExpression);
    }
    let prepared = prepare(spec)?;
    // Creating the optimizer validates the settings against the space. The
    // map a run adapts from is read from the store where there is one
    // (`Runs::prior`); here a stand-in of one elite at the start point
    // checks that the optimizer takes a map and that its settings hold.
    let stand_in = spec.prior.map(|run| Prior {
        run,
        axes: Vec::new(),
        elites: vec![PriorElite {
            cell: 0,
            x: prepared.space.start.clone(),
            descriptors: Vec::new(),
            value: 0.0,
        }],
    });
    create(
        plugins,
        spec,
        &prepared.space,
        settings,
        spec.seed,
        stand_in.as_ref(),
    )?;
    Ok(prepared)
}

/// The run's optimizer over `space`, made from `prior` when the run adapts
/// from a map; refused when the run and its optimizer disagree on having
/// one.
pub(super) fn create(
    plugins: &[Arc<dyn Plugin>],
    spec: &RunSpec,
    space: &Space,
    settings: &Settings,
    seed: u64,
    prior: Option<&Prior>,
) -> Result<Box<dyn Optimizer>, PrepareError> {
    let plugin = plugin(plugins, &spec.optimizer)?;
    if plugin.needs_prior() && spec.prior.is_none() {
        return Err(PrepareError::NoPrior(spec.optimizer.clone()));
    }
    Ok(plugin.create_from(space, settings, seed, budget_of(spec), prior)?)
}

/// Everything [`Runs::start`](super::Runs::start) checks of `spec` that needs neither a
/// database nor hosts: a local run checks it before it writes anything.
pub fn check_run(plugins: &[Arc<dyn Plugin>], spec: &RunSpec) -> Result<(), PrepareError> {
    spec.spec.check()?;
    let settings = resolve_settings(plugins, spec)?;
    checked(plugins, spec, &settings).map(drop)
}

/// The budget a plugin may plan with (0 means the optimizer's own schedule).
pub(super) fn budget_of(spec: &RunSpec) -> Option<u64> {
    (spec.max_evaluations > 0).then_some(spec.max_evaluations)
}
