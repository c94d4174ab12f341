//! Hosts in memory: the scheduler driven without a network, each answer
//! scripted.
#![allow(dead_code)] // not every test binary uses every part

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use yamor_core::evaluation::{BackendKind, EvaluationJob, Outcome};
use yamor_organizer::model::HostInfo;
use yamor_organizer::scheduler::BoxFuture;
use yamor_organizer::{HostCallError, HostClient, HostConnector};

/// What a host does with its next evaluation.
pub enum Answer {
    /// The expression `x - y*y` of the job's parameters, at once.
    Compute,
    Value(f64),
    /// `value` once `gate` opens (or never, if it is dropped).
    Gated(oneshot::Receiver<()>, f64),
    Fail(HostCallError),
}

#[derive(Default)]
pub struct FakeHost {
    answers: Mutex<VecDeque<Answer>>,
    /// Answers `info` (heartbeat probes) while true.
    silent: AtomicBool,
    /// What `info` says of being busy.
    busy: AtomicBool,
    pub evaluations: AtomicU32,
    /// Calls abandoned before they answered.
    pub abandoned: Arc<AtomicU32>,
}

impl FakeHost {
    pub fn script(&self, answer: Answer) {
        self.answers.lock().unwrap().push_back(answer);
    }

    pub fn go_silent(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }

    /// Answers probes again.
    pub fn go_loud(&self) {
        self.silent.store(false, Ordering::SeqCst);
    }

    /// Probes find it busy (or not).
    pub fn set_busy(&self, busy: bool) {
        self.busy.store(busy, Ordering::SeqCst);
    }
}

fn compute(job: &EvaluationJob) -> Result<f64, HostCallError> {
    let get = |name: &str| {
        job.parameters
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .ok_or_else(|| HostCallError::InvalidJob(format!("InvalidArgument: {name} is missing")))
    };
    let (x, y) = (get("x")?, get("y").unwrap_or(0.0));
    Ok(x - y * y)
}

/// Counts a call as abandoned unless it was disarmed by answering.
struct Abandon(Option<Arc<AtomicU32>>);

impl Abandon {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if let Some(count) = self.0.take() {
            count.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl HostClient for FakeHost {
    fn info(&self) -> BoxFuture<'static, Result<HostInfo, HostCallError>> {
        let silent = self.silent.load(Ordering::SeqCst);
        let busy = self.busy.load(Ordering::SeqCst);
        Box::pin(async move {
            if silent {
                Err(HostCallError::Unavailable("Unavailable: silent".into()))
            } else {
                Ok(HostInfo {
                    backend: Some(BackendKind::Expression),
                    robot: "fake".into(),
                    objectives: vec!["expr:x".into()],
                    busy,
                })
            }
        })
    }

    fn evaluate(
        &self,
        _job_id: u64,
        _attempt: u32,
        job: &EvaluationJob,
    ) -> BoxFuture<'static, Result<Outcome, HostCallError>> {
        self.evaluations.fetch_add(1, Ordering::SeqCst);
        let answer = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Answer::Compute);
        let computed = compute(job);
        let mut guard = Abandon(Some(self.abandoned.clone()));
        Box::pin(async move {
            let velocity = match answer {
                Answer::Compute => computed,
                Answer::Value(v) => Ok(v),
                Answer::Gated(gate, v) => {
                    let _ = gate.await;
                    Ok(v)
                }
                Answer::Fail(e) => Err(e),
            };
            guard.disarm();
            // An expression host: its answer is a value.
            velocity.map(|value| Outcome::value(value, std::time::Duration::ZERO))
        })
    }
}

/// Addresses to fake hosts; an unknown address gets a fresh computing host.
#[derive(Default)]
pub struct FakeNet {
    hosts: Mutex<HashMap<String, Arc<FakeHost>>>,
}

impl FakeNet {
    pub fn host(&self, address: &str) -> Arc<FakeHost> {
        self.hosts
            .lock()
            .unwrap()
            .entry(address.to_owned())
            .or_default()
            .clone()
    }
}

impl HostConnector for FakeNet {
    fn connect(
        &self,
        address: &str,
    ) -> Result<Arc<dyn HostClient>, yamor_proto::transport::TransportError> {
        Ok(self.host(address))
    }
}
