//! The optimization problem a run solves: as the user gives it, or the one
//! of the robot the user names.

use std::f64::consts::PI;
use std::path::Path;

use yamor_core::optimize::{OptimizationConfig, ParamName, Rule};
use yamor_organizer::model::Problem;

use crate::LocalError;

/// Bare parameters when `params` (`name=min:max[:start]`) are given, else
/// the optimization configuration at `config`, else `default`.
pub fn run_problem(
    config: Option<&Path>,
    params: &[String],
    default: impl FnOnce() -> Result<String, LocalError>,
) -> Result<Problem, LocalError> {
    if params.is_empty() {
        return Ok(Problem::OptimizationXml(match config {
            // The thesis' own files are Windows-1252: read in the declared encoding.
            Some(path) => problem_file(path)?,
            None => default()?,
        }));
    }
    let bounds = params.iter().map(|p| p.parse().map_err(LocalError::Param));
    Ok(Problem::Space(bounds.collect::<Result<_, _>>()?))
}

/// The optimization file at `path`, read in its declared encoding (the
/// thesis' own files are Windows-1252) and checked here, so that an error
/// names the file and line the user wrote.
pub fn problem_file(path: &Path) -> Result<String, LocalError> {
    let text = yamor_core::read_xml_file(path)?;
    OptimizationConfig::from_xml_str(&path.display().to_string(), &text)?;
    Ok(text)
}

/// Everything a run of this build's organizer would refuse `spec` for that
/// needs neither a database nor hosts (the optimizer and its settings, the
/// walk, the problem), checked before a local run writes anything. The
/// walk's limits are named by the flags that set them.
pub fn check_run(spec: &yamor_organizer::model::RunSpec) -> Result<(), LocalError> {
    check_walk(&spec.spec)?;
    Ok(yamor_organizer::runs::check_run(
        &crate::optimizers(),
        spec,
    )?)
}

/// The walk's limits, named by the flags that set them (`--measure`), not
/// by the wire's fields.
pub fn check_walk(spec: &yamor_core::evaluation::EvaluationSpec) -> Result<(), LocalError> {
    spec.check().map_err(|e| {
        let flag = match e.field {
            "warmup_s" => "--warmup".to_owned(),
            "measure_s" => "--measure".to_owned(),
            other => format!("spec.{other}"),
        };
        LocalError::Problem(format!("{flag} must be {}, got {}", e.expected, e.value))
    })
}

/// The optimization configuration shipped with `robot`, or a generic one:
/// every oscillating module's amplitude and offset, and every coupled pair's
/// phase lag, within the module's limit angles.
pub fn default_optimization(robot: &str) -> Result<String, LocalError> {
    let families = yamor_families::builtin();
    let family = families
        .of_example(robot)
        .ok_or_else(|| LocalError::UnknownRobot {
            name: robot.to_owned(),
            known: example_names().join(", "),
        })?;
    match family.example_problem(robot) {
        Some(text) => Ok(text.to_owned()),
        None => generic_optimization(
            robot,
            family
                .example_gait(robot)
                .map_err(|e| LocalError::Problem(e.to_string()))?,
        ),
    }
}

/// The embedded robots of every built-in family, YaMoR's first.
#[must_use]
pub fn example_names() -> Vec<&'static str> {
    yamor_families::builtin().examples()
}

/// Every oscillating module's amplitude and offset, and every coupled
/// pair's phase lag, of `gait`, within the module's limit angles.
///
/// Around the middle `c` of a joint's limits, with `h` half their span, an
/// amplitude ranges over `[0, h]` and an offset over `c ± h/2` (widened to
/// take in the gait's own offset where that lies between the limits): the
/// ranges `OptimizationConfig` accepts for any limits, symmetric or not. A
/// hand-made gait may drive a joint past its limits on purpose (the
/// thesis' trebuchet swings its amplitude-1 joints into limits 0.5 rad
/// apart, and the servo clamps); such a value is moved to the nearest one
/// in range, so the run starts from the closest gait of its space, and the
/// move is logged.
pub fn generic_optimization(
    robot: &str,
    mut gait: yamor_core::RobotConfig,
) -> Result<String, LocalError> {
    let mut rules = Vec::new();
    for m in &mut gait.modules {
        let half = (m.max_angle - m.min_angle) / 2.0;
        // A joint that cannot move has nothing to learn.
        if m.speed == 0.0 || half <= 0.0 {
            continue;
        }
        let centre = (m.max_angle + m.min_angle) / 2.0;
        let amplitude = m.amplitude.clamp(0.0, half);
        let offset = m.offset.clamp(m.min_angle, m.max_angle);
        for (param, from, to) in [
            (ParamName::Amplitude(m.id), m.amplitude, amplitude),
            (ParamName::Offset(m.id), m.offset, offset),
        ] {
            if from != to {
                tracing::info!(
                    "{robot}: the default problem starts {param} at {to} (the gait's {from} \
                     drives module {} past its joint limits [{}, {}])",
                    m.id,
                    m.min_angle,
                    m.max_angle
                );
            }
        }
        m.amplitude = amplitude;
        m.offset = offset;
        rules.push(Rule::Free {
            param: ParamName::Amplitude(m.id),
            min: 0.0,
            max: half,
        });
        rules.push(Rule::Free {
            param: ParamName::Offset(m.id),
            min: (centre - half / 2.0).min(offset),
            max: (centre + half / 2.0).max(offset),
        });
        for link in &m.cpg_links {
            if link.to > m.id && (-PI..=PI).contains(&link.phase) {
                rules.push(Rule::Free {
                    param: ParamName::Phase(m.id, link.to),
                    min: -PI,
                    max: PI,
                });
            }
        }
    }
    let config = OptimizationConfig::new(gait, rules).map_err(|e| {
        LocalError::Problem(format!(
            "the problem generated from {robot}'s gait (every amplitude, offset and phase lag \
             free) does not fit it: {e}; write the problem yourself (--config FILE, or an \
             optimize.xml beside the robot's files)"
        ))
    })?;
    Ok(config.to_xml_string())
}

/// The dashboard over the embedded robots: its start form offers each of
/// them with its default problem; it replays walks with their family's
/// simulator and draws the built-in families' own jobs (a planning job's
/// build, [`yamor_families::job_views`]).
#[must_use]
pub fn dashboard_options(
    token: Option<yamor_proto::transport::Token>,
) -> yamor_organizer::http::Options {
    yamor_organizer::http::Options {
        token,
        robots: example_names().into_iter().map(str::to_owned).collect(),
        problem_for_robot: Some(std::sync::Arc::new(|robot: &str| {
            default_optimization(robot).map_err(Into::into)
        })),
        replay: Some(std::sync::Arc::new(|job: &yamor_organizer::model::Job| {
            replay(job).map_err(Into::into)
        })),
        own_robot: Some(std::sync::Arc::new(
            |world: &str, gait: &str, optimize: Option<&str>| {
                own_robot(world, gait, optimize).map_err(Into::into)
            },
        )),
        job_views: yamor_families::job_views(),
        ..Default::default()
    }
}

/// An uploaded robot checked as `yamor run` checks a robot directory: the
/// files parse, the gait fits the morphology, and the problem is
/// optimize.xml or the generic one over the gait.
fn own_robot(
    world: &str,
    gait: &str,
    optimize: Option<&str>,
) -> Result<(String, String), OwnRobotError> {
    let morphology = yamor_core::Morphology::from_xml_str("world.xml", world)?;
    let gait = yamor_core::RobotConfig::from_xml_str("gait.xml", gait)?;
    yamor_sim::robots::fits(&morphology, &gait).map_err(OwnRobotError::GaitMisfits)?;
    let problem = match optimize {
        Some(text) => {
            // Its own gait is the one the run walks: it must fit too.
            let config = OptimizationConfig::from_xml_str("optimize.xml", text)?;
            yamor_sim::robots::fits(&morphology, config.robot())
                .map_err(OwnRobotError::OptimizeMisfits)?;
            text.to_owned()
        }
        None => generic_optimization("the uploaded robot", gait)?,
    };
    Ok((morphology.to_xml_string(), problem))
}

/// Why an uploaded robot cannot run; the start form shows it.
#[derive(Debug, thiserror::Error)]
pub enum OwnRobotError {
    #[error(transparent)]
    Xml(#[from] yamor_core::XmlError),
    #[error(transparent)]
    GaitMisfits(yamor_sim::robots::LoadError),
    #[error("optimize.xml: {0}")]
    OptimizeMisfits(yamor_sim::robots::LoadError),
    /// No generic problem over the gait.
    #[error(transparent)]
    Problem(#[from] LocalError),
}

/// Why a job cannot be replayed here; the replay page shows it.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("this job walks no gait (an expression or external objective)")]
    NoGait,
    #[error("this job walked its host's own robot, which the job does not carry")]
    HostsOwnRobot,
    #[error("no family here knows the job's robot ({0:?})")]
    UnknownFamily(yamor_core::evaluation::RobotSource),
    #[error(transparent)]
    Family(#[from] yamor_core::family::FamilyError),
}

/// Frames a second of a replay: smooth enough to watch, small enough to
/// send (a 20-s walk of nine modules is about 300 kB of JSON).
const REPLAY_FRAME_RATE: f64 = 20.0;

/// Walks `job` again with its family's default simulator and records it
/// for the dashboard's replay.
fn replay(job: &yamor_organizer::model::Job) -> Result<yamor_core::family::Recording, ReplayError> {
    use yamor_core::evaluation::RobotSource;
    let request = &job.request.job;
    let gait = request.gait.as_ref().ok_or(ReplayError::NoGait)?;
    if request.robot == RobotSource::Default {
        return Err(ReplayError::HostsOwnRobot);
    }
    let families = yamor_families::builtin();
    let family = families
        .of(&request.robot)
        .ok_or_else(|| ReplayError::UnknownFamily(request.robot.clone()))?;
    let walker = family.walker(&request.robot, None)?;
    Ok(walker.record(gait, &request.spec, REPLAY_FRAME_RATE)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yamor_core::evaluation::RobotSource;
    use yamor_organizer::model::{Problem, RunSpec};

    /// What the start form and `optimize start --robot NAME` send for each
    /// listed robot (its default problem, the default optimizer) is a run
    /// the organizer accepts: before, trebuchet's and dog's were refused.
    #[test]
    fn every_listed_robots_default_run_is_accepted() {
        for name in example_names() {
            let problem = default_optimization(name)
                .unwrap_or_else(|e| panic!("{name}: no default problem: {e}"));
            let spec = RunSpec {
                robot: RobotSource::Example(name.to_owned()),
                robot_name: name.to_owned(),
                ..RunSpec::new("cmaes", Problem::OptimizationXml(problem))
            };
            check_run(&spec).unwrap_or_else(|e| panic!("{name}: refused: {e}"));
            assert_eq!(spec.robot_label(), name);
        }
    }

    /// A gait that drives a joint past asymmetric limits starts from the
    /// nearest gait of the space, every range inside the limits.
    #[test]
    fn the_generic_problem_follows_asymmetric_limits() {
        let text = default_optimization("trebuchet").unwrap();
        let config = OptimizationConfig::from_xml_str("trebuchet", &text).unwrap();
        let module = |id| config.robot().modules.iter().find(|m| m.id == id).unwrap();
        // Module 10: limits [-1, 0], the thesis' amplitude 1.
        assert_eq!(module(10).amplitude, 0.5);
        // Module 7: limits [1, 1.57], the thesis' offset 0.8 below them.
        assert_eq!(module(7).offset, 1.0);
        for p in config.free_parameters() {
            assert!(p.min <= p.start && p.start <= p.max, "{p:?}");
        }
    }
}
