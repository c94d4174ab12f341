//! A Roombot planning job's build, step by step, as a page of the
//! organizer's dashboard ([`PlanView`], a
//! [`JobView`](yamor_organizer::http::views::JobView) named `plan`):
//! `/jobs/{id}/plan?step=K` draws the grid after the first K moves of the
//! stored plan as an isometric picture (one shaded cube per cell, far
//! cubes first), the meta-module that made move K in orange with where it
//! came from outlined, the structure's cells not yet filled as dashed
//! outlines, and links to step through. Drawn here as SVG; no script. The
//! job page names a `reconfig:` objective by what it builds and links
//! here from a finished planning job.

use std::collections::BTreeMap;

use maud::{Markup, PreEscaped, html};
use yamor_core::evaluation::{Objective, Outcome};
use yamor_organizer::http::views::{JobView, ViewError};
use yamor_organizer::model::Job;
use yamor_reconfig::grid::Cell;
use yamor_reconfig::plan::Plan;
use yamor_reconfig::planning::Task;

/// A planning job's build, stepped through on the dashboard; registered
/// in the dashboard's options by whoever serves it (`yamor-local`'s
/// `dashboard_options`).
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanView;

impl JobView for PlanView {
    fn name(&self) -> &str {
        "plan"
    }

    fn title(&self) -> &str {
        "the build"
    }

    fn link_text(&self) -> &str {
        "step through the build"
    }

    /// A planning task by what it builds and how, not as its JSON.
    fn describe_objective(&self, objective: &Objective) -> Option<String> {
        let Objective::Named(text) = objective else {
            return None;
        };
        match Task::from_objective(text)? {
            Ok(task) => Some(format!("a reconfiguration: {}", task.describe())),
            // Ours by its prefix, but unreadable: named as it is.
            Err(_) => Some(objective.to_string()),
        }
    }

    fn shows(&self, job: &Job) -> bool {
        job.outcome.as_ref().is_some_and(|o| o.plan().is_some())
    }

    fn render(&self, job: &Job, query: &BTreeMap<String, String>) -> Result<Markup, ViewError> {
        let step = match query.get("step") {
            None => 0,
            Some(text) => text.parse().map_err(|_| {
                ViewError::BadQuery(format!(
                    "step must be a step's number (0 for the start), got {text:?}"
                ))
            })?,
        };
        page(job, step)
    }
}

/// Job `job`'s build after `step` moves.
fn page(job: &Job, step: usize) -> Result<Markup, ViewError> {
    let id = job.id;
    let outcome = job
        .outcome
        .as_ref()
        .and_then(Outcome::plan)
        .ok_or_else(|| {
            ViewError::NotFound(format!(
                "a plan in job {id} (not a finished planning job) not found"
            ))
        })?;
    let plan = Plan::try_from(&outcome.plan)
        .map_err(|e| ViewError::Unreadable(format!("job {id}'s plan is not Roombots': {e}")))?;
    let last = plan.steps.len();
    if step > last {
        return Err(ViewError::NotFound(format!(
            "step {step} of job {id}'s plan (it has {last}) not found"
        )));
    }
    let now = plan.after(step);
    let mover = step.checked_sub(1).map(|k| &plan.steps[k]);
    let before = mover.map(|m| plan.after(step - 1)[&m.id]);
    let said = match mover {
        None => "the start".to_owned(),
        Some(m) => format!(
            "move {step} of {last}, round {}: meta-module {} {}",
            m.round,
            m.id,
            if m.filled { "fills its seed" } else { "steps" }
        ),
    };
    let link = |k: usize| format!("/jobs/{id}/plan?step={k}");
    let body = html! {
        p {
            a href={ "/jobs/" (id) } { "job " (id) } ": "
            (if outcome.built { "built" } else { "not built" }) ", "
            (outcome.filled) " of " (outcome.seeds) " seeds filled in "
            (outcome.rounds) " rounds, " (outcome.moves) " moves, "
            (outcome.collisions) " collisions."
        }
        p #stepper {
            a href=(link(0)) { "« start" } " · "
            @if step > 0 { a #prev href=(link(step - 1)) { "‹ back" } } @else { "‹ back" }
            " · " strong #said { "step " (step) " of " (last) ": " (said) } " · "
            @if step < last { a #next href=(link(step + 1)) { "next ›" } } @else { "next ›" }
            " · " a href=(link(last)) { "end »" }
        }
        form method="get" action={ "/jobs/" (id) "/plan" } {
            "go to step " input type="number" name="step" min="0" max=(last) value=(step);
            " " button { "show" }
        }
        (picture(&plan, &now, mover.map(|m| m.id), before))
        p.note {
            "Orange: the meta-module that made this move (its cells before the move outlined); "
            "blue: the others; dashed: cells of the structure not yet filled."
        }
    };
    Ok(body)
}

/// One cell's cube: where it is and how it is drawn.
struct Cube {
    cell: Cell,
    class: &'static str,
}

/// Screen coordinates of a grid point (x, y, z) in cells: x to the lower
/// right, y to the lower left, z up; larger x + y + z is nearer.
fn iso(p: [f64; 3], scale: f64) -> (f64, f64) {
    const COS30: f64 = 0.866_025_403_784_438_6;
    (
        (p[0] - p[1]) * COS30 * scale,
        (p[0] + p[1]) * 0.5 * scale - p[2] * scale,
    )
}

/// The picture: the floor's extent, the outlines, then every cube far to
/// near with its three visible faces.
fn picture(
    plan: &Plan,
    now: &BTreeMap<u32, [Cell; 4]>,
    mover: Option<u32>,
    before: Option<[Cell; 4]>,
) -> Markup {
    let mut cubes: Vec<Cube> = now
        .iter()
        .flat_map(|(id, cells)| {
            let class = if Some(*id) == mover {
                "cube mover"
            } else {
                "cube"
            };
            cells.iter().map(move |c| Cube { cell: *c, class })
        })
        .collect();
    let taken: Vec<Cell> = cubes.iter().map(|c| c.cell).collect();
    let open: Vec<Cell> = plan
        .target
        .iter()
        .flatten()
        .filter(|c| !taken.contains(c))
        .copied()
        .collect();
    cubes.sort_by_key(|c| c.cell[0] + c.cell[1] + c.cell[2]);
    // The drawing frames every cell the plan ever uses, one cell around.
    let every = plan
        .start
        .iter()
        .flat_map(|(_, c)| c.iter())
        .chain(plan.steps.iter().flat_map(|s| s.to.iter()))
        .chain(plan.target.iter().flatten());
    let (mut lo, mut hi) = ([i32::MAX; 3], [i32::MIN; 3]);
    for c in every {
        for k in 0..3 {
            lo[k] = lo[k].min(c[k] - 1).max(0);
            hi[k] = hi[k].max(c[k] + 2).min(plan.size[k]);
        }
    }
    if lo[0] > hi[0] {
        (lo, hi) = ([0; 3], plan.size);
    }
    let corners = [
        [lo[0], lo[1], lo[2]],
        [hi[0], lo[1], lo[2]],
        [hi[0], hi[1], lo[2]],
        [lo[0], hi[1], lo[2]],
        [lo[0], lo[1], hi[2]],
        [hi[0], hi[1], hi[2]],
        [hi[0], lo[1], hi[2]],
        [lo[0], hi[1], hi[2]],
    ];
    let span = corners
        .iter()
        .fold([f64::MAX, f64::MIN, f64::MAX, f64::MIN], |b, c| {
            let (x, y) = iso(c.map(f64::from), 1.0);
            [b[0].min(x), b[1].max(x), b[2].min(y), b[3].max(y)]
        });
    let scale = (760.0 / (span[1] - span[0]))
        .min(520.0 / (span[3] - span[2]))
        .min(40.0);
    let (width, height) = (
        (span[1] - span[0]) * scale + 20.0,
        (span[3] - span[2]) * scale + 20.0,
    );
    let at = |p: [f64; 3]| {
        let (x, y) = iso(p, scale);
        (x - span[0] * scale + 10.0, y - span[2] * scale + 10.0)
    };
    let poly = |points: &[[f64; 3]]| {
        points
            .iter()
            .map(|p| {
                let (x, y) = at(*p);
                format!("{x:.1},{y:.1}")
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let faces = |c: Cell| {
        let [x, y, z] = c.map(f64::from);
        [
            (
                "top",
                poly(&[
                    [x, y, z + 1.0],
                    [x + 1.0, y, z + 1.0],
                    [x + 1.0, y + 1.0, z + 1.0],
                    [x, y + 1.0, z + 1.0],
                ]),
            ),
            (
                "east",
                poly(&[
                    [x + 1.0, y, z],
                    [x + 1.0, y + 1.0, z],
                    [x + 1.0, y + 1.0, z + 1.0],
                    [x + 1.0, y, z + 1.0],
                ]),
            ),
            (
                "south",
                poly(&[
                    [x, y + 1.0, z],
                    [x + 1.0, y + 1.0, z],
                    [x + 1.0, y + 1.0, z + 1.0],
                    [x, y + 1.0, z + 1.0],
                ]),
            ),
        ]
    };
    let floor = poly(&[
        [f64::from(lo[0]), f64::from(lo[1]), 0.0],
        [f64::from(hi[0]), f64::from(lo[1]), 0.0],
        [f64::from(hi[0]), f64::from(hi[1]), 0.0],
        [f64::from(lo[0]), f64::from(hi[1]), 0.0],
    ]);
    html! {
        svg #build xmlns="http://www.w3.org/2000/svg" width=(format!("{width:.0}")) height=(format!("{height:.0}"))
            viewBox=(format!("0 0 {width:.0} {height:.0}")) {
            style { (PreEscaped(SVG_STYLE)) }
            polygon.floor points=(floor) {}
            @for c in &open {
                g.open { @for (side, points) in faces(*c) { polygon class=(side) points=(points) {} } }
            }
            @for c in &cubes {
                g class=(c.class) { @for (side, points) in faces(c.cell) { polygon class=(side) points=(points) {} } }
            }
            @if let Some(cells) = before {
                @for c in cells {
                    g.was { @for (side, points) in faces(c) { polygon class=(side) points=(points) {} } }
                }
            }
        }
    }
}

const SVG_STYLE: &str = "
.floor{fill:#eef1f4;stroke:#c8ced6}
.cube polygon{stroke:#2b3440;stroke-width:.6}
.cube .top{fill:#8fb3dc}.cube .east{fill:#5d87b8}.cube .south{fill:#476d99}
.mover .top{fill:#ffb25c}.mover .east{fill:#e8892a}.mover .south{fill:#c96f17}
.open polygon{fill:none;stroke:#5a9e5a;stroke-dasharray:3 2;stroke-width:.8}
.was polygon{fill:none;stroke:#e8892a;stroke-dasharray:2 2;stroke-width:.8}
";
