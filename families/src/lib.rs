//! The robot families yamor ships, as hosts serve them: YaMoR's one-servo
//! modules (walks and robot sessions on the simulator) and the Roombots
//! (walks), plus the host that plans Roombot self-reconfigurations and
//! the dashboard's page of its jobs. The host agent, the organizer and the
//! one-process run know no family; this crate is where the built-in ones
//! are put together.
//!
//! # Layout
//! - [`builtin`]: the registry of built-in families, YaMoR first, asked in
//!   that order for whose a robot is.
//! - [`example_backend`]: a host for any built-in family's example robot.
//! - [`yamor`]: YaMoR's host with robot sessions (`SimLink`: SNP to the
//!   simulated firmware, the supervisor's commands to the world).
//! - [`emulated`]: YaMoR's emulated real robot, its CamApp (one or two
//!   LEDs), the tracker and the serial backend started together in one
//!   process (`EmulatedRig`), for tests and `yamor lifelong reset-free`.
//! - [`planning`]: a host that plans Roombot self-reconfigurations
//!   (`reconfig:` objectives, seed 003) on a blocking thread, cancellable
//!   between rounds.
//! - [`plan_view`]: the dashboard's page of a planning job's build, step
//!   by step (`/jobs/{id}/plan?step=K`), and how its job page names a
//!   `reconfig:` objective: a `JobView` the organizer frames without
//!   knowing the Roombots ([`job_views`] lists it).
//!
//! A third family needs none of this: it implements
//! `yamor_core::family::RobotFamily` in its own crate and is served by
//! `yamor_host_agent::family::FamilyBackend` (see docs/architecture.md,
//! "Adding a robot family").

use std::sync::Arc;

use yamor_core::family::Families;
use yamor_host_agent::family::FamilyBackend;
use yamor_host_agent::{Backend, HostError};
use yamor_roombots::family::RoombotsFamily;
use yamor_sim::SimSettings;
use yamor_sim::family::YamorFamily;

pub mod emulated;
pub mod plan_view;
pub mod planning;
pub mod yamor;

pub use yamor::{own_sim_backend, sim_backend};

/// The built-in families with `settings` for YaMoR's simulator: YaMoR,
/// then the Roombots.
#[must_use]
pub fn builtin_with(settings: SimSettings) -> Families {
    Families::default()
        .with(Arc::new(YamorFamily { settings }))
        .with(Arc::new(RoombotsFamily))
}

/// The dashboard's pages of the built-in families' jobs (a planning job's
/// build), for `yamor_organizer::http::Options::job_views`.
#[must_use]
pub fn job_views() -> Vec<Arc<dyn yamor_organizer::http::views::JobView>> {
    vec![Arc::new(plan_view::PlanView)]
}

/// The built-in families on their default engines.
#[must_use]
pub fn builtin() -> Families {
    builtin_with(SimSettings::default())
}

/// A simulation host of the embedded example `name`, whichever built-in
/// family it belongs to. YaMoR's simulator runs with `settings` (and its
/// hosts open robot sessions); a Roombot walks on its one engine, and
/// asking for another is an error rather than ignored.
pub fn example_backend(name: &str, settings: SimSettings) -> Result<Arc<dyn Backend>, HostError> {
    let families = builtin_with(settings);
    let family = families
        .example(name)
        .map_err(|e| HostError::InvalidJob(e.to_string()))?;
    if family.name() == yamor_sim::family::FAMILY {
        return Ok(Arc::new(sim_backend(name, settings)?));
    }
    let engine = settings.engine.name();
    Ok(Arc::new(FamilyBackend::example(
        family.clone(),
        name,
        Some(engine),
    )?))
}
