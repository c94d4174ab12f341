//! The quadruped as MuJoCo walks it (`bench/peers/engines.py`,
//! `bench/peers/rank_good.py`): the MJCF model of the robot as assembled and
//! the servo controls of our walks, so that MuJoCo walks exactly the same
//! gaits from the same oscillator starts. `yamor bench-engines` writes them
//! for its own gaits and, with `--params`, for any gaits.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::Result;
use serde_json::json;
use yamor_core::evaluation::{EvaluationSpec, Walk};
use yamor_core::{Morphology, RobotConfig};
use yamor_sim::mjcf::{MjcfOptions, to_mjcf};
use yamor_sim::physics::ServoCommand;
use yamor_sim::{SimSettings, Simulation, evaluate_observed};

/// MuJoCo steps at 4.17 ms: four steps per 1/60-s tick, as in the issue's
/// comparison.
pub const MUJOCO_SUBSTEPS: usize = 4;

/// The robot as assembled: the MuJoCo model's bodies, and which hinge each
/// of its actuators drives, in the model's order.
pub struct MujocoExport {
    sim: Simulation,
    central: yamor_core::ModuleId,
    hinge_modules: Vec<usize>,
}

impl MujocoExport {
    pub fn new(morphology: &Morphology, settings: SimSettings) -> Result<Self> {
        let sim = Simulation::new(morphology, settings)?;
        let hinge_modules = sim
            .topology()
            .hinges
            .iter()
            .flatten()
            .map(|h| h.module)
            .collect();
        Ok(MujocoExport {
            sim,
            central: morphology.central,
            hinge_modules,
        })
    }

    /// One walk of `gait` as `spec` says, and, when `record`, the actuator
    /// controls after every tick (empty otherwise).
    pub fn walk(
        &self,
        morphology: &Morphology,
        gait: &RobotConfig,
        settings: SimSettings,
        spec: &EvaluationSpec,
        record: bool,
    ) -> Result<(Walk, Vec<Vec<f32>>)> {
        let mut controls = Vec::new();
        let outcome = evaluate_observed(morphology, gait, settings, spec, &mut |sim| {
            if record {
                controls.push(self.actuator_controls(sim));
            }
        })?;
        Ok((outcome, controls))
    }

    /// The control of every actuator of the MJCF model (hinges in module
    /// order) after one tick: MuJoCo's position actuator with kv applies
    /// kp·(ctrl − q) − kv·q̇, our PD law is kp·(q* − q) + kv·(q̇* − q̇), so
    /// ctrl = q* + kv/kp · q̇*.
    fn actuator_controls(&self, sim: &Simulation) -> Vec<f32> {
        self.hinge_modules
            .iter()
            .map(|&m| control(&sim.servo_commands()[m]))
            .collect()
    }

    /// Writes the MJCF model to `out/quadruped.xml` (MuJoCo's step a
    /// [`MUJOCO_SUBSTEPS`]th of the tick) and `out/summary.json`: `fields`
    /// and what the scripts need to know of the model, `robot`, `dt`,
    /// `substeps` and `robot_geom` (the central module's body, whose
    /// centre is the robot's position).
    pub fn write<'a>(
        &self,
        out: &Path,
        settings: SimSettings,
        fields: impl IntoIterator<Item = (&'a str, serde_json::Value)>,
    ) -> Result<()> {
        let model = to_mjcf(
            "yamor quadruped",
            &self.sim.topology(),
            &MjcfOptions {
                timestep: settings.dt / MUJOCO_SUBSTEPS as f64,
                ground_friction: settings.ground_friction,
                gains: Simulation::healthy_servo_gains(),
            },
        )?;
        fs::write(out.join("quadruped.xml"), model)?;
        let central = self.sim.module_index(self.central)?;
        let mut summary = serde_json::Map::new();
        summary.insert("robot".into(), json!("quadruped"));
        summary.insert("dt".into(), json!(settings.dt));
        summary.insert("substeps".into(), json!(MUJOCO_SUBSTEPS));
        summary.insert("robot_geom".into(), json!(format!("part{}", 2 * central)));
        summary.extend(fields.into_iter().map(|(k, v)| (k.to_owned(), v)));
        fs::write(
            out.join("summary.json"),
            serde_json::to_string_pretty(&summary)?,
        )?;
        Ok(())
    }
}

fn control(command: &ServoCommand) -> f32 {
    if command.stiffness > 0.0 {
        command.angle + command.damping / command.stiffness * command.velocity
    } else {
        command.angle
    }
}

/// Writes controls as CSV, one row per tick, six decimals.
pub fn write_controls(path: &Path, rows: &[Vec<f32>]) -> Result<()> {
    let mut out = std::io::BufWriter::new(fs::File::create(path)?);
    for row in rows {
        let line: Vec<String> = row.iter().map(|v| format!("{v:.6}")).collect();
        writeln!(out, "{}", line.join(","))?;
    }
    Ok(())
}
