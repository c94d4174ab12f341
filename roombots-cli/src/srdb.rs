//! `yamor roombots srdb`: 003 §2.4's Servo Rotation Database and §3.1's
//! searches for intermediate configurations, timed.

use anyhow::Result;
use clap::Args;
use yamor_roombots::chain::ConnectionType;

#[derive(Args)]
pub struct SrdbArgs {
    /// The connection type the searches are timed on.
    #[arg(long, default_value = "shear-s")]
    connection: ConnectionType,
    /// Database builds timed (the median is reported).
    #[arg(long, default_value_t = 101)]
    runs: usize,
    /// Search cases per level, tabled.
    #[arg(long, default_value_t = 200)]
    cases: usize,
    /// Of those, searched live (each sweep computed when needed).
    #[arg(long, default_value_t = 20)]
    live_cases: usize,
    /// Live cases at π/360 (a live level-3 search there takes seconds).
    #[arg(long, default_value_t = 3)]
    fine_live_cases: usize,
    /// Cells taken around the meta-module in each case, besides the floor.
    #[arg(long, default_value_t = 40)]
    others: usize,
    /// Cells taken in the crowded cases that no level-2 search solves.
    #[arg(long, default_value_t = 150)]
    crowded: usize,
    /// Threads sweeping the table of pairs.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Only the coarse step (π/8): sweeping every pair at π/360 takes
    /// seconds.
    #[arg(long)]
    coarse_only: bool,
}

pub fn srdb(args: &SrdbArgs) -> Result<()> {
    use std::f64::consts::PI;
    use yamor_reconfig::srdb::{Database, POSES_PER_TYPE};
    use yamor_reconfig::timing;
    anyhow::ensure!(
        args.cases > 0 && args.runs > 0,
        "--cases and --runs must be at least 1"
    );
    let db = Database::generate();
    println!(
        "servo rotation database (003 §2.4): {} poses per connection type",
        POSES_PER_TYPE
    );
    println!(
        "  {:<14} {:>7} {:>16} {:>7} {:>11} {:>12}",
        "connection", "visited", "cells and facing", "shapes", "goal cells", "rest poses"
    );
    for table in db.tables() {
        println!(
            "  {:<14} {:>7} {:>16} {:>7} {:>11} {:>12}",
            format!("{} ({})", table.connection, table.connection.short()),
            table.visited,
            table.kept().len(),
            table.shapes(),
            table.goal_cells(),
            table.configurations().len()
        );
    }
    println!(
        "  shapes: the ConfigurationMap's keys (the three cubes' cells): the seed's \"exactly 63\"; rest poses: the kept configurations and the poses they become after an inchworm step"
    );
    let build = timing::database_build(args.runs);
    println!(
        "build, all four types: {:.3} ms median of {} runs, one core (seed: 14-16 ms on a 2.1 GHz dual-core laptop; ratio {:.0}x)",
        build.as_secs_f64() * 1e3,
        args.runs,
        15.0 / (build.as_secs_f64() * 1e3)
    );
    let table = db.table(args.connection);
    let cases = timing::cases(table, args.cases, args.others, 1);
    let crowded = timing::cases(table, 20 * args.cases, args.crowded, 2);
    println!(
        "searches (003 §3.1), {}: a meta-module on the floor, {} other cells taken ({} in the crowded cases no level-2 search solves); each search runs to its end",
        args.connection, args.others, args.crowded
    );
    let steps = [
        (
            yamor_reconfig::sweep::ROTATION_STEP,
            "pi/8",
            args.live_cases,
            "level 1 < 10 ms, level 2 30-40 ms, level 3 2-3 s",
        ),
        (
            PI / 360.0,
            "pi/360",
            args.fine_live_cases,
            "level 2 3-5 s, level 3 300-440 s",
        ),
    ];
    let used = if args.coarse_only { 1 } else { 2 };
    for &(step, name, live, seed) in &steps[..used] {
        let t = timing::time_step(
            &db,
            args.connection,
            step,
            &cases,
            &crowded,
            live,
            args.threads,
        );
        println!(
            "  step {name}: every pair swept once in {:.2} s on {} threads; the seed: {seed}",
            t.table_build.as_secs_f64(),
            t.threads
        );
        for l in &t.levels {
            println!(
                "    level {} {:<6} {:<9} {:>4} searches, {:>4} found, median {:>10.3} ms, max {:>10.3} ms",
                l.level,
                if l.live { "live" } else { "table" },
                if l.hard { "(crowded)" } else { "" },
                l.searches,
                l.found,
                l.median.as_secs_f64() * 1e3,
                l.max.as_secs_f64() * 1e3
            );
        }
    }
    Ok(())
}
