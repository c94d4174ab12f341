//! A run's progress on the terminal.

use indicatif::{ProgressBar, ProgressStyle};
use tokio_stream::StreamExt as _;
use yamor_organizer::model::{Run, RunEvent, RunState};

use crate::LocalError;

/// Shows a run's progress until it ends; returns its final state.
pub async fn follow_run(
    mut stream: impl tokio_stream::Stream<Item = Result<RunEvent, LocalError>> + Unpin,
) -> Result<Run, LocalError> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} evals {msg}",
        )
        .expect("valid template"),
    );
    let mut last = None;
    while let Some(event) = stream.next().await {
        let run = event?.run;
        {
            bar.set_length(if run.max_evaluations > 0 {
                run.max_evaluations
            } else {
                run.evaluations.max(1)
            });
            bar.set_position(run.evaluations);
            bar.set_message(format!(
                "best {}",
                run.best_velocity
                    .map_or("-".into(), |v| format!("{:.2} cm/s", v * 100.0))
            ));
            let done = run.state != RunState::Running;
            last = Some(run);
            if done {
                break;
            }
        }
    }
    bar.finish();
    last.ok_or(LocalError::NoEvents)
}
