//! The start form: one run or a batch, with each optimizer's typed settings.
//!
//! The form posts text; [`launch`] turns it into a [`RunSpec`] and hands it
//! to [`Runs::start`](crate::runs::Runs::start) or
//! [`Runs::batch_start`](crate::runs::Runs::batch_start), so it is checked
//! exactly as a gRPC `StartRun` is. A refused form comes back with its
//! values and the organizer's reason.

use std::collections::BTreeMap;

use axum::Form;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use maud::{Markup, html};
use yamor_core::evaluation::{BackendKind, EvaluationSpec, Objective, RobotSource};
use yamor_optimizer_api::{PluginInfo, SettingKind, SettingSpec};

use super::CallbackError;
use super::{App, page, script};
use crate::model::{
    BatchSeedsError, GAIT_RUN_BUDGET, ParameterBound, ParameterBoundError, Problem, RunSpec,
    RunVariant, batch_seeds, gait_run_default, parse_setting_list,
};
use crate::runs::MAX_BATCH_VARIANTS;
use crate::scheduler::ScheduleError;

/// Why the start form was refused; shown above the form, which keeps its
/// values.
#[derive(Debug, thiserror::Error)]
enum LaunchError {
    #[error("choose an optimizer (not {0:?})")]
    NoOptimizer(String),
    #[error("{field}: {text:?} is not a number")]
    NotANumber { field: String, text: String },
    #[error("this dashboard cannot read robot files: start it from yamor run or yamor organizer")]
    NoRobotFiles,
    /// The uploaded files, as the embedder's [`super::OwnRobot`] read them.
    #[error("{0}")]
    OwnRobot(CallbackError),
    #[error("robot: run {0} brought no robot of its own")]
    NoRobotInRun(String),
    #[error("this organizer knows no robots: give parameters")]
    NoRobots,
    /// The named robot's problem, as the embedder's
    /// [`super::ProblemForRobot`] answered.
    #[error("{0}")]
    RobotProblem(CallbackError),
    #[error("parameters: {0}")]
    Parameters(#[from] ParameterBoundError),
    #[error("hosts: {0:?} is not a host kind; choose one of {kinds}", kinds = HOST_KINDS.join(", "))]
    HostKind(String),
    #[error("direction: {0}")]
    Direction(#[from] yamor_core::evaluation::UnknownDirection),
    #[error(transparent)]
    Seeds(#[from] BatchSeedsError),
    #[error("variant {number}: {source}")]
    Variant {
        number: usize,
        source: yamor_optimizer_api::SettingsError,
    },
    #[error(transparent)]
    Refused(#[from] ScheduleError),
}

/// The form's host kinds, as `on` sends them.
const HOST_KINDS: [&str; 4] = [
    "any",
    BackendKind::Simulation.short(),
    BackendKind::Real.short(),
    BackendKind::Expression.short(),
];

/// The submitted form: field name to text (repeated names keep the last).
type Fields = BTreeMap<String, String>;

fn field<'a>(fields: &'a Fields, name: &str) -> &'a str {
    fields.get(name).map_or("", |v| v.trim())
}

/// The form's field for `setting` of `optimizer`.
fn setting_field(optimizer: &str, setting: &str) -> String {
    format!("set.{optimizer}.{setting}")
}

pub(super) async fn form_page(State(app): State<App>) -> Html<String> {
    if app.options.read_only {
        return super::read_only_page("Start runs");
    }
    let used = used_robots(&app).await;
    render(&app, &used, &Fields::new(), None)
}

pub(super) async fn launch(
    State(app): State<App>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let fields: Fields = pairs.into_iter().collect();
    let used = used_robots(&app).await;
    match start(&app, &used, &fields).await {
        Ok(Started::One(id)) => Redirect::to(&format!("/runs/{id}")).into_response(),
        Ok(Started::Batch) => Redirect::to("/runs").into_response(),
        Err(why) => (
            StatusCode::BAD_REQUEST,
            render(&app, &used, &fields, Some(&why.to_string())),
        )
            .into_response(),
    }
}

/// A robot a run brought (a user's own, uploaded or sent with `optimize
/// start --robot DIR`), offered again by the form as `run:ID`.
pub(super) struct UsedRobot {
    /// The latest run that brought it.
    run: u64,
    name: String,
    robot: RobotSource,
    robot_name: String,
    /// How the form lists it ([`RunSpec::robot_label`]).
    label: String,
    problem: Problem,
}

/// The distinct robots earlier runs brought, newest first: each one's
/// latest run with its problem.
async fn used_robots(app: &App) -> Vec<UsedRobot> {
    let rows = app
        .organizer
        .scheduler
        .store()
        .read_async(|s| s.runs())
        .await
        .unwrap_or_default();
    let mut used: Vec<UsedRobot> = Vec::new();
    for row in rows.into_iter().rev() {
        if !matches!(row.spec.robot, RobotSource::Morphology(_)) {
            continue;
        }
        if used.iter().any(|u| u.robot == row.spec.robot) {
            continue;
        }
        let label = row.spec.robot_label();
        used.push(UsedRobot {
            run: row.id,
            name: row.name,
            robot: row.spec.robot,
            label,
            robot_name: row.spec.robot_name,
            problem: row.spec.problem,
        });
    }
    used
}

enum Started {
    One(u64),
    Batch,
}

async fn start(app: &App, used: &[UsedRobot], fields: &Fields) -> Result<Started, LaunchError> {
    let runs = &app.organizer.runs;
    let optimizer = field(fields, "optimizer");
    let plugin = runs
        .optimizers()
        .into_iter()
        .find(|p| p.name == optimizer)
        .ok_or_else(|| LaunchError::NoOptimizer(optimizer.to_owned()))?;
    let spec = run_spec(app, used, &plugin, fields)?;
    let variants = variants(fields.get("variants").map_or("", String::as_str), spec.seed)?;
    if variants.is_empty() {
        let run = runs.start(spec).await?;
        Ok(Started::One(run.id))
    } else {
        runs.batch_start(spec, variants).await?;
        Ok(Started::Batch)
    }
}

fn number<T: std::str::FromStr>(fields: &Fields, name: &str, default: T) -> Result<T, LaunchError> {
    match field(fields, name) {
        "" => Ok(default),
        text => text.parse().map_err(|_| LaunchError::NotANumber {
            field: name.to_owned(),
            text: text.to_owned(),
        }),
    }
}

/// The robot a form names, what it is called, and the problem it brings:
/// uploaded files (checked by the dashboard's [`super::OwnRobot`]; called
/// by the `robot_name` field, else "uploaded"), a robot an earlier run
/// brought (`run:ID`), or an example by name.
fn robot_and_problem(
    app: &App,
    used: &[UsedRobot],
    fields: &Fields,
) -> Result<(RobotSource, String, Problem), LaunchError> {
    let world = field(fields, "world_xml");
    if !world.trim().is_empty() {
        let own = app
            .options
            .own_robot
            .as_ref()
            .ok_or(LaunchError::NoRobotFiles)?;
        let optimize = Some(field(fields, "optimize_xml")).filter(|t| !t.trim().is_empty());
        let (morphology, problem) =
            own(world, field(fields, "gait_xml"), optimize).map_err(LaunchError::OwnRobot)?;
        let name = match field(fields, "robot_name").trim() {
            "" => "uploaded",
            name => name,
        };
        return Ok((
            RobotSource::Morphology(morphology),
            name.to_owned(),
            Problem::OptimizationXml(problem),
        ));
    }
    let robot = field(fields, "robot");
    if let Some(id) = robot.strip_prefix("run:") {
        let run = used
            .iter()
            .find(|u| u.run.to_string() == id)
            .ok_or_else(|| LaunchError::NoRobotInRun(id.to_owned()))?;
        return Ok((
            run.robot.clone(),
            run.robot_name.clone(),
            run.problem.clone(),
        ));
    }
    let problem_for = app
        .options
        .problem_for_robot
        .as_ref()
        .ok_or(LaunchError::NoRobots)?;
    Ok((
        RobotSource::Example(robot.to_owned()),
        robot.to_owned(),
        Problem::OptimizationXml(problem_for(robot).map_err(LaunchError::RobotProblem)?),
    ))
}

fn run_spec(
    app: &App,
    used: &[UsedRobot],
    plugin: &PluginInfo,
    fields: &Fields,
) -> Result<RunSpec, LaunchError> {
    let params = field(fields, "params");
    let robot_run = params.is_empty();
    let mut robot = RobotSource::Default;
    let mut robot_name = String::new();
    let problem = if robot_run {
        let (source, name, problem) = robot_and_problem(app, used, fields)?;
        robot = source;
        robot_name = name;
        problem
    } else {
        Problem::Space(
            params
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.trim().parse::<ParameterBound>())
                .collect::<Result<_, _>>()?,
        )
    };
    let seed = number(fields, "seed", 1)?;
    let defaults = EvaluationSpec::default();
    // A script's post without a setting gets what the form shows: the
    // organizer fills a gait run's defaults.
    let settings = changed_settings(plugin, fields, robot_run);
    Ok(RunSpec {
        name: field(fields, "name").to_owned(),
        settings,
        seed,
        robot,
        robot_name,
        spec: EvaluationSpec {
            warmup: number(fields, "warmup", defaults.warmup)?,
            measure: number(fields, "measure", defaults.measure)?,
            seed,
            ..defaults
        },
        backend: match field(fields, "on") {
            // Scripts may leave it out.
            "" | "any" => None,
            other => Some(
                BackendKind::from_short(other)
                    .ok_or_else(|| LaunchError::HostKind(other.to_owned()))?,
            ),
        },
        max_evaluations: number(
            fields,
            "budget",
            if robot_run { GAIT_RUN_BUDGET } else { 0 },
        )?,
        max_seconds: number(fields, "time", 0.0)?,
        objective: Objective::parse(field(fields, "objective")),
        // Unsaid, the robot's own optimize.xml decides, as for `yamor run`.
        direction: problem.direction(match field(fields, "direction") {
            "" => None,
            named => Some(named.parse()?),
        }),
        ..RunSpec::new(plugin.name.clone(), problem)
    })
}

/// Settings whose field differs from the plugin's default: the run records
/// every setting anyway, and an untouched field must not pin today's
/// default. A field the form filled with a gait run's own default (CMA-ES's
/// population) is given either way, so that the form starts what `yamor
/// run` starts and a user's change back to the plugin's default holds.
fn changed_settings(
    plugin: &PluginInfo,
    fields: &Fields,
    robot_run: bool,
) -> BTreeMap<String, String> {
    plugin
        .settings
        .iter()
        .filter_map(|s| {
            let given = field(fields, &setting_field(&plugin.name, &s.name));
            let own = s.default.to_string();
            let filled =
                robot_run && gait_run_default(&plugin.name, &s.name).is_some_and(|d| d != own);
            (!given.is_empty() && (given != own || filled))
                .then(|| (s.name.clone(), given.to_owned()))
        })
        .collect()
}

/// What the form shows in a setting's field: a gait run's default where it
/// has its own, else the plugin's.
fn form_default(optimizer: &str, setting: &SettingSpec) -> String {
    gait_run_default(optimizer, &setting.name).unwrap_or_else(|| setting.default.to_string())
}

/// One variant per non-empty line `name=value, name=value`; seeds count up
/// from `seed`.
fn variants(text: &str, seed: u64) -> Result<Vec<RunVariant>, LaunchError> {
    // The cap on their number is `Runs::batch_start`'s, as for gRPC.
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let seeds = batch_seeds(seed, lines.len())?;
    lines
        .into_iter()
        .zip(seeds)
        .enumerate()
        .map(|(i, (line, seed))| {
            let settings = parse_setting_list(line).map_err(|source| LaunchError::Variant {
                number: i + 1,
                source,
            })?;
            Ok(RunVariant {
                name: String::new(),
                settings,
                seed,
            })
        })
        .collect()
}

/// An input for one typed setting, holding `value`.
fn setting_input(name: &str, spec: &SettingSpec, value: &str) -> Markup {
    // An unbounded float leaves its bound empty.
    let bound = |b: f64| b.is_finite().then(|| b.to_string());
    match &spec.kind {
        SettingKind::Integer { min, max } => html! {
            input type="number" name=(name) step="1" min=(min) max=(max) value=(value);
        },
        SettingKind::Float { min, max } => html! {
            input type="number" name=(name) step="any" min=[bound(*min)] max=[bound(*max)] value=(value);
        },
        SettingKind::Bool => select(name, &["true", "false"], value),
        SettingKind::Choice { options } => {
            let options: Vec<&str> = options.iter().map(String::as_str).collect();
            select(name, &options, value)
        }
        SettingKind::File => html! { input name=(name) size="30" value=(value); },
    }
}

fn select(name: &str, options: &[&str], chosen: &str) -> Markup {
    html! {
        select name=(name) {
            @for o in options { option selected[*o == chosen] { (o) } }
        }
    }
}

/// The form, filled with `fields` (defaults where empty), and `error`.
fn render(app: &App, used: &[UsedRobot], fields: &Fields, error: Option<&str>) -> Html<String> {
    let plugins = app.organizer.runs.optimizers();
    let value = |name: &str, default: &str| {
        fields
            .get(name)
            .map_or_else(|| default.to_owned(), Clone::clone)
    };
    let chosen = value("optimizer", "cmaes");
    let names: Vec<&str> = plugins.iter().map(|p| p.name.as_str()).collect();
    let chosen_robot = value("robot", "quadruped");
    let defaults = EvaluationSpec::default();
    let robot = html! {
        @if app.options.robots.is_empty() && used.is_empty() {
            input name="robot" value=(chosen_robot);
        } @else {
            select name="robot" {
                @for name in &app.options.robots {
                    option selected[*name == chosen_robot] { (name) }
                }
                @for u in used {
                    @let key = format!("run:{}", u.run);
                    option value=(key) selected[key == chosen_robot] {
                        (u.label) ": the robot of run " (u.run) " (" (u.name) ")"
                    }
                }
            }
        }
        @if app.options.own_robot.is_some() {
            br;
            small {
                "or your own: world.xml " input #world type="file" accept=".xml";
                " gait.xml " input #gait type="file" accept=".xml";
                " optimize.xml (optional) " input #optimize type="file" accept=".xml";
                " called " input name="robot_name" placeholder="uploaded" value=(value("robot_name", ""));
            }
            textarea name="world_xml" hidden { (value("world_xml", "")) }
            textarea name="gait_xml" hidden { (value("gait_xml", "")) }
            textarea name="optimize_xml" hidden { (value("optimize_xml", "")) }
            (script("robot-files.js"))
        }
    };
    let body = html! {
        @if let Some(why) = error { p.err #error { (why) } }
        form #start method="post" action="/runs" {
            table {
                tr { th { "optimizer" } td { (select("optimizer", &names, &chosen)) } }
                tr { th { "robot" } td { (robot) " " small { "its own optimization rules; or bare parameters below" } } }
                tr { th { "parameters" } td {
                    textarea name="params" rows="2" cols="40"
                        placeholder="x=-5:5 (one name=min:max[:start] per line)" { (value("params", "")) }
                } }
                tr { th { "objective" } td {
                    input name="objective" size="40" placeholder="expr:... for expression hosts"
                        value=(value("objective", ""));
                } }
                tr { th { "hosts" } td { (select("on", &HOST_KINDS, &value("on", "any"))) } }
                tr { th { "name" } td { input name="name" value=(value("name", "")); } }
                tr { th { "budget" } td {
                    input type="number" name="budget" min="0" value=(value("budget", &GAIT_RUN_BUDGET.to_string()));
                    " evaluations (0: the optimizer's own)"
                } }
                tr { th { "time" } td {
                    input type="number" name="time" min="0" step="any" value=(value("time", "0"));
                    " s (0: unlimited)"
                } }
                tr { th { "seed" } td { input type="number" name="seed" min="0" value=(value("seed", "1")); } }
                tr { th { "walk" } td {
                    input type="number" name="warmup" min="0" step="any" value=(value("warmup", &defaults.warmup.to_string()));
                    " s warm-up, "
                    input type="number" name="measure" min="0" step="any" value=(value("measure", &defaults.measure.to_string()));
                    " s measured"
                } }
            }
            @for p in &plugins {
                fieldset.settings data-optimizer=(p.name) hidden[p.name != chosen] {
                    legend { (p.name) " settings" }
                    table {
                        @for s in &p.settings {
                            @let name = setting_field(&p.name, &s.name);
                            tr {
                                th { (s.name) }
                                td { (setting_input(&name, s, &value(&name, &form_default(&p.name, s)))) }
                                td { small { (s.description) } }
                            }
                        }
                    }
                }
            }
            p {
                "batch: one run per line of settings, e.g. " code { "population=12, sigma0=0.1" }
                "; seeds count up from the seed; at most " (MAX_BATCH_VARIANTS) " lines"
                br;
                textarea name="variants" rows="4" cols="60" { (value("variants", "")) }
            }
            button #launch { "start" }
        }
        (script("settings.js"))
    };
    page("Start runs", body)
}
