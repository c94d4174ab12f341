//! The stateful IYaMoRHost3 surface (thesis 5.5.3): a session opens a robot,
//! keeps the host-side copy of every module parameter, queues changes until
//! `Flush`, and drives the robot with SNP messages, as YaMoR Host 3 drove
//! Webots or the real robot.
//!
//! All the logic lives in this module and reaches the robot only through a
//! [`RobotLink`], so the serial robot reuses it unchanged; the simulator's
//! link is `yamor_families::yamor::SimLink`. A link with a physical world behind it also
//! offers a [`Supervisor`] for what only a simulator can do (thesis 5.4.1,
//! C.2.6, C.2.7).
//!
//! Choices where the thesis is silent:
//! - Ids in requests and replies are *real* ids and the host copy is kept in
//!   real ids. The C.1 mapping (identity for unmapped ids) translates them on
//!   the way to the link, and only in simulation mode, as YaMoR Host 3 did.
//!   The mapping is a setting made before opening (C.1) and cannot change
//!   while a session is open: configured modules and defect marks would
//!   silently change identity.
//! - Values are checked against the limits the module firmware enforces
//!   before anything is stored or sent, so a refused value never leaves the
//!   host copy and the robot out of step; the error names the field.
//! - `Flush` sends only the messages whose content changed (limit angles,
//!   CPG structure, CPG parameters, per module); `Refresh` resends all three
//!   for every module and leaves the control flags alone.
//! - Defect motors (C.2.6) are host marks: marking sends motor-off and strips
//!   motor-on from every later control message to that module; the simulator
//!   also makes the joint limp or stuck. Healing lifts the mark and switches
//!   the motor back on. Marks survive `ResetSimulation` (they are the
//!   experiment, not the world) but not `OpenSimulation`.
//! - Every call runs on a blocking thread; long ones (sleeping, pauses in
//!   scripts) stop soon after the caller goes away.
//!
//! # Layout
//! - this file: [`SessionHost`] and the blocking thread every call runs on.
//! - `robot.rs`: open, close, connect, flush, refresh, control, state, sleep.
//! - `params.rs`: module parameters and couplings in the host copy.
//! - `world.rs`: defect marks, and what needs a supervisor: connections,
//!   scripts, friction, drop, reset.
//! - `ids.rs`: the C.1 id mapping and its translation to robot ids and SNP
//!   addresses.
//! - `state.rs`: the open session (host copy, pending changes, defect marks)
//!   and the state shared by all calls.
//! - `snp.rs`: the messages sent to the robot, the ConnectRobot sequence
//!   among them.
//! - `check.rs`: the firmware's limits checked before anything is stored or
//!   sent.
//! - `clock.rs`: [`Clock`] and real-clock pacing of simulated time.

mod check;
mod clock;
mod ids;
mod params;
mod robot;
mod snp;
mod state;
mod world;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use parking_lot::Mutex;

use crate::backend::CancelOnDrop;
pub use crate::backend::{RobotLink, SessionFactory, Supervisor};
use crate::model::SessionError;

pub use clock::{Clock, SystemClock};
use state::Shared;

/// The session calls of one host.
pub struct SessionHost {
    factory: Arc<dyn SessionFactory>,
    shared: Arc<Mutex<Shared>>,
    clock: Arc<dyn Clock>,
}

/// Largest SNP module address; 254 and 255 are the host and broadcast.
const MAX_WIRE_ID: u8 = 253;
/// Longest sleep or script pause (s).
const MAX_SLEEP: f64 = 3600.0;

impl SessionHost {
    /// The session surface of `backend`, or `None` when it has no robot;
    /// real-clock sleeps keep pace with `clock`.
    #[must_use]
    pub fn for_backend(backend: &Arc<dyn crate::Backend>, clock: Arc<dyn Clock>) -> Option<Self> {
        backend.session().map(|factory| SessionHost {
            shared: Arc::new(Mutex::new(Shared {
                simulation_mode: factory.simulation_mode(),
                session: None,
                mapping: HashMap::new(),
            })),
            factory,
            clock,
        })
    }

    /// Runs `f` on the shared state on a blocking thread: sessions do
    /// physics or serial I/O, never on the async runtime.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Shared, &AtomicBool) -> Result<T, SessionError> + Send + 'static,
    ) -> Result<T, SessionError> {
        let shared = self.shared.clone();
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(cancel.clone());
        tokio::task::spawn_blocking(move || {
            let mut shared = shared.lock();
            f(&mut shared, &cancel)
        })
        .await
        .map_err(|e| SessionError::Failed(format!("session thread: {e}")))?
    }
}
