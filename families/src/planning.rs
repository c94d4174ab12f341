//! The planning backend: a host that plans Roombot self-reconfigurations
//! (seed 003) instead of walking a robot. It serves `reconfig:` objectives
//! (`yamor_reconfig::planning`); each job's seed draws the start. Planning runs
//! on a blocking thread and stops between rounds when the job is cancelled.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use yamor_core::evaluation::Objective;
use yamor_reconfig::planning::{Planner, SERVED, Task, TaskError};

use yamor_host_agent::backend::{
    Backend, BackendKind, BoxFuture, CancelFlag, EvaluationJob, HostError, Outcome,
};

/// Plans with one [`Planner`] for the host's life (the database and the
/// swept cells are built once).
pub struct PlanningBackend {
    planner: Arc<Planner>,
}

impl PlanningBackend {
    /// A planner sweeping on `threads` threads the first time each
    /// connection type is asked for.
    #[must_use]
    pub fn new(threads: usize) -> Self {
        PlanningBackend::sharing(Arc::new(Planner::new(threads)))
    }

    /// A host planning with `planner`, which other hosts of this process
    /// may share (the database and the swept cells are read-only).
    #[must_use]
    pub fn sharing(planner: Arc<Planner>) -> Self {
        PlanningBackend { planner }
    }
}

fn task_of(job: &EvaluationJob) -> Result<Task, HostError> {
    let text = match &job.objective {
        Objective::Named(text) => text.as_str(),
        other => {
            return Err(HostError::InvalidJob(format!(
                "this host plans reconfigurations ({SERVED}), not {other}"
            )));
        }
    };
    Task::from_objective(text)
        .ok_or_else(|| {
            HostError::InvalidJob(format!(
                "this host plans reconfigurations ({SERVED}), not {text:?}"
            ))
        })?
        .map_err(|e| HostError::InvalidJob(e.to_string()))
}

impl Backend for PlanningBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Planning
    }

    fn describe(&self) -> String {
        "Roombot self-reconfiguration planner".into()
    }

    fn objectives(&self) -> Vec<String> {
        vec![SERVED.to_owned()]
    }

    fn evaluate(
        &self,
        job: EvaluationJob,
        cancel: CancelFlag,
    ) -> BoxFuture<'_, Result<Outcome, HostError>> {
        let planner = self.planner.clone();
        Box::pin(async move {
            let task = task_of(&job)?;
            let seed = job.spec.seed;
            let planned = tokio::task::spawn_blocking(move || {
                planner.plan(&task, seed, &|| cancel.load(Ordering::Relaxed))
            })
            .await
            .map_err(|e| HostError::Failed(format!("the planner failed: {e}")))?
            .map_err(|e| match e {
                TaskError::Stopped => HostError::Cancelled,
                TaskError::Invalid(why) => HostError::InvalidJob(why),
            })?;
            Ok(Outcome::Plan(planned.result()))
        })
    }
}
