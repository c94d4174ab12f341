//! `yamor bench-serial`: how long ConnectRobot takes with the real robot's
//! timing, on an emulated robot behind a pseudo-terminal.

use anyhow::Result;
use clap::Args;
use yamor_host_agent::serial::{SerialBackend, SerialSettings};
use yamor_sim::robots::ExampleRobot;
use yamor_sim::serial_robot::{EmulatedRobot, EmulationSettings};
use yamor_sim::{SimSettings, Simulation};

#[derive(Args)]
pub struct BenchSerialArgs {
    /// Robot seconds per wall second for the emulated robot.
    #[arg(long, default_value_t = 50.0)]
    pub time_scale: f64,
    /// Connections measured (seeds 1..=N).
    #[arg(long, default_value_t = 5)]
    pub runs: u64,
}

/// How long `ConnectRobot` (thesis 5.2.1) takes on a robot with the real
/// robot's timing (joins up to 7 s, 1 s per message, 20 % lost join
/// acknowledgements), in robot seconds, against YaMoR Host 3's fixed 10 s
/// wait per join (5.5.4).
pub fn bench_serial(args: BenchSerialArgs) -> Result<()> {
    let example = ExampleRobot::named("quadruped").expect("embedded");
    let gait = example.gait()?;
    let joins = gait.bluetooth_edges().count();
    let never = std::sync::atomic::AtomicBool::new(false);
    println!(
        "ConnectRobot on the emulated quadruped ({} modules, {joins} Bluetooth links), time scale {}",
        gait.modules.len(),
        args.time_scale
    );
    println!("| seed | robot seconds | messages | lost acks | thesis' Host 3 (10 s per join) |");
    println!("|---|---|---|---|---|");
    let mut ours = Vec::new();
    for seed in 1..=args.runs {
        let sim = Simulation::new(&example.morphology()?, SimSettings::default())?;
        let robot = EmulatedRobot::spawn(
            sim,
            EmulationSettings {
                time_scale: args.time_scale,
                seed,
                ..EmulationSettings::default()
            },
        )?;
        let backend = SerialBackend::new(
            SerialSettings {
                time_scale: args.time_scale,
                ..SerialSettings::new(robot.path())
            },
            None,
        )?;
        // Robot time, from the robot: on a loaded machine the emulator can
        // fall behind the wall clock times the scale.
        let before = robot.observe().time;
        backend.robot().program(&gait, &never)?;
        let seconds = robot.observe().time - before;
        let stats = backend.robot().stats();
        let lost = robot.observe().lost_acks;
        // Host 3 waited 10 s for every join and sent every other message
        // once, each taking the robot's 1 s.
        let others = stats.requests - joins as u64 - stats.silent_joins - stats.retries;
        let thesis =
            joins as f64 * 10.0 + others as f64 * EmulationSettings::default().message_delay;
        println!(
            "| {seed} | {seconds:.1} | {} | {lost} | {thesis:.1} |",
            stats.requests
        );
        ours.push((seconds, thesis));
        backend.robot().motors_off();
    }
    let mean = |f: fn(&(f64, f64)) -> f64| ours.iter().map(f).sum::<f64>() / ours.len() as f64;
    println!(
        "mean: {:.1} s here, {:.1} s with a fixed 10 s wait per join ({:.2}x)",
        mean(|p| p.0),
        mean(|p| p.1),
        mean(|p| p.1) / mean(|p| p.0)
    );
    Ok(())
}
