//! A run's progress on the terminal.

use indicatif::{ProgressBar, ProgressStyle};
use tokio_stream::StreamExt as _;
use yamor_proto::v1 as pb;

use crate::LocalError;

/// Shows a run's progress until it ends; returns its final state.
pub async fn follow_run(
    mut stream: impl tokio_stream::Stream<Item = Result<pb::RunEvent, tonic::Status>> + Unpin,
) -> Result<pb::Run, LocalError> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} evals {msg}",
        )
        .expect("valid template"),
    );
    let mut last = pb::Run::default();
    while let Some(event) = stream.next().await {
        let event = event?;
        if let Some(run) = event.run {
            bar.set_length(if run.max_evaluations > 0 {
                run.max_evaluations
            } else {
                run.evaluations.max(1)
            });
            bar.set_position(run.evaluations);
            bar.set_message(format!(
                "best {}",
                run.best_velocity_m_s
                    .map_or("-".into(), |v| format!("{:.2} cm/s", v * 100.0))
            ));
            let done = run.state != pb::RunState::Running as i32;
            last = run;
            if done {
                break;
            }
        }
    }
    bar.finish();
    Ok(last)
}
