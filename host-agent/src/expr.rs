//! The expression backend: evaluates a MathEval expression of the job's
//! parameters (`x_0()`, `amplitude_3()` or bare `x_0`) instead of walking a
//! robot. With a delay it imitates a slow host without using the CPU.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use yamor_core::evaluation::Objective;
use yamor_core::matheval::{Context, Expr};

use crate::backend::{
    Backend, BackendKind, BoxFuture, CancelFlag, EvaluationJob, HostError, Outcome,
};

pub struct ExprBackend {
    text: String,
    expr: Expr,
    delay: Duration,
}

impl ExprBackend {
    /// Parses `text` once; errors carry the position.
    pub fn new(text: &str, delay: Duration) -> Result<Self, HostError> {
        let expr =
            Expr::parse(text).map_err(|e| HostError::InvalidJob(format!("expression: {e}")))?;
        Ok(ExprBackend {
            text: text.to_owned(),
            expr,
            delay,
        })
    }

    /// The value at `parameters`.
    pub fn value(&self, parameters: &[(String, f64)]) -> Result<f64, HostError> {
        let mut context = Context::new();
        for (name, value) in parameters {
            context.set_parameter(name, *value);
        }
        let value = self
            .expr
            .eval_real(&context)
            .map_err(|e| HostError::InvalidJob(format!("expression {:?}: {e}", self.text)))?;
        if value.is_finite() {
            Ok(value)
        } else {
            Err(HostError::InvalidJob(format!(
                "expression {:?} is {value} at these parameters",
                self.text
            )))
        }
    }
}

impl Backend for ExprBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Expression
    }

    fn describe(&self) -> String {
        self.text.clone()
    }

    fn objectives(&self) -> Vec<String> {
        vec![Objective::Expression(self.text.trim().to_owned()).to_text()]
    }

    fn evaluate(
        &self,
        job: EvaluationJob,
        cancel: CancelFlag,
    ) -> BoxFuture<'_, Result<Outcome, HostError>> {
        Box::pin(async move {
            let started = Instant::now();
            let value = self.value(&job.parameters)?;
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            if cancel.load(Ordering::Relaxed) {
                return Err(HostError::Cancelled);
            }
            // An expression measures nothing but its variables: they are
            // its behaviour descriptors, so a map of one is over them.
            Ok(Outcome::Value {
                value,
                wall: started.elapsed(),
                descriptors: job.parameters.iter().cloned().collect(),
            })
        })
    }
}
