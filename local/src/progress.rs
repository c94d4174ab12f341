//! A run's progress: a bar on a terminal, plain lines in a log.

use std::future::Future;
use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressFinish, ProgressStyle};
use tokio_stream::StreamExt as _;
use yamor_organizer::OrganizerClient;
use yamor_organizer::model::{Run, RunEvent, RunState};

use crate::LocalError;

/// Shows a run's progress until it ends or `interrupt` resolves; returns
/// the run as last seen (on interrupt: still running, with its true count).
///
/// On a terminal it draws a bar on stderr; elsewhere (a log, a pipe, CI) it
/// writes a line to stderr at every tenth of the budget, at most every few
/// seconds otherwise, and when the run's state changes.
pub async fn follow_run(
    mut stream: impl tokio_stream::Stream<Item = Result<RunEvent, LocalError>> + Unpin,
    interrupt: impl Future<Output = ()>,
) -> Result<Run, LocalError> {
    let mut view = if std::io::stderr().is_terminal() {
        View::Bar(bar())
    } else {
        View::Lines(Lines::default())
    };
    let mut last = None;
    tokio::pin!(interrupt);
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            () = &mut interrupt => break,
        };
        let Some(event) = event else { break };
        let run = event?.run;
        view.show(&run);
        let done = run.state != RunState::Running;
        last = Some(run);
        if done {
            break;
        }
    }
    if let View::Bar(bar) = view {
        // Left as it is: finishing would fill it to the budget.
        bar.abandon();
    }
    last.ok_or(LocalError::NoEvents)
}

/// [`follow_run`] on run `run_id` of a remote organizer; an interrupted
/// watch asks once more, for the run's true count.
pub async fn watch(
    organizer: &OrganizerClient,
    run_id: u64,
    interrupt: impl Future<Output = ()>,
) -> Result<Run, LocalError> {
    let events = organizer.watch_run(run_id).await?;
    let seen = follow_run(events.map(|e| e.map_err(LocalError::from)), interrupt).await?;
    if seen.state != RunState::Running {
        return Ok(seen);
    }
    Ok(organizer.get_run(run_id).await.unwrap_or(seen))
}

fn bar() -> ProgressBar {
    ProgressBar::new(0)
        .with_finish(ProgressFinish::Abandon)
        .with_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} evals {msg}",
            )
            .expect("valid template"),
        )
}

enum View {
    Bar(ProgressBar),
    Lines(Lines),
}

#[derive(Default)]
struct Lines {
    printed: Option<(Instant, u64, RunState)>,
}

fn best(run: &Run) -> String {
    run.best_text()
}

impl View {
    fn show(&mut self, run: &Run) {
        match self {
            View::Bar(bar) => {
                bar.set_length(if run.max_evaluations > 0 {
                    run.max_evaluations
                } else {
                    run.evaluations.max(1)
                });
                bar.set_position(run.evaluations);
                bar.set_message(format!("best {}", best(run)));
            }
            View::Lines(lines) => {
                if lines.due(run) {
                    let budget = if run.max_evaluations > 0 {
                        format!("/{}", run.max_evaluations)
                    } else {
                        String::new()
                    };
                    eprintln!(
                        "run {}: {}{budget} evaluations, best {}, {} after {:.0} s",
                        run.id,
                        run.evaluations,
                        best(run),
                        run.state.as_str(),
                        run.elapsed_s
                    );
                    lines.printed = Some((Instant::now(), run.evaluations, run.state));
                }
            }
        }
    }
}

impl Lines {
    const EVERY: Duration = Duration::from_secs(5);

    fn due(&self, run: &Run) -> bool {
        let Some((at, evaluations, state)) = self.printed else {
            return true;
        };
        let step = (run.max_evaluations / 10).max(1);
        state != run.state
            || (run.max_evaluations > 0 && run.evaluations / step > evaluations / step)
            || (run.evaluations > evaluations && at.elapsed() >= Self::EVERY)
    }
}
