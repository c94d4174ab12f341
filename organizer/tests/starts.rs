//! A gait run values candidates over starts (issue 31): each proposal
//! walks from its own start, drawn from the run's seed, and recorded with
//! its job; at the end the finalists are re-walked from the held-out starts
//! and the winner's mean over them is the run's answer.

mod common;

use std::sync::Arc;
use std::time::Duration;

use tokio_stream::StreamExt;
use yamor_core::starts::{Spread, candidate_seed, held_out_seeds, is_held_out};
use yamor_organizer::Organizer;
use yamor_organizer::model::{
    HELD_OUT_SEQ, HeldOut, JobFilter, JobState, Problem, REFERENCE_SEQ, Run, RunSpec, RunState,
    Starts,
};
use yamor_sim::SimSettings;

const BUDGET: u64 = 12;

async fn organizer_with_sim_hosts(name: &str) -> Organizer {
    let organizer = common::open_organizer(name);
    for i in 0..2 {
        let backend = yamor_families::sim_backend("quadruped", SimSettings::default()).unwrap();
        let address = common::serve_host(&format!("sim{i}"), Arc::new(backend)).await;
        organizer
            .scheduler
            .register_host(&format!("sim{i}"), &address)
            .await
            .unwrap();
    }
    organizer
}

/// Every job of run `run_id`, held-out re-walks included.
fn run_jobs(organizer: &Organizer, run_id: u64) -> Vec<yamor_organizer::model::Job> {
    organizer
        .scheduler
        .store()
        .jobs(&JobFilter {
            run_id: Some(run_id),
            ..JobFilter::default()
        })
        .unwrap()
}

/// The quadruped's amplitude as the one free parameter; short walks.
fn gait_run(starts: Starts, held_out: HeldOut) -> RunSpec {
    let gait = yamor_sim::robots::ExampleRobot::named("quadruped")
        .unwrap()
        .gait()
        .unwrap()
        .to_xml_string();
    let at = gait.rfind("</yamorconfig>").unwrap();
    let config = format!(
        "{}<optimize param=\"amplitude_0\" min=\"0.2\" max=\"0.78\"/>\n{}",
        &gait[..at],
        &gait[at..]
    );
    let mut spec = RunSpec {
        seed: 7,
        max_evaluations: BUDGET,
        starts,
        held_out,
        ..RunSpec::new("pso", Problem::OptimizationXml(config))
    };
    spec.spec.warmup = 1.0;
    spec.spec.measure = 2.0;
    spec.settings.insert("particles".into(), "4".into());
    spec
}

async fn run_to_end(organizer: &Organizer, spec: RunSpec) -> Run {
    let run = organizer.runs.start(spec).await.unwrap();
    let mut events = organizer.runs.watch(run.id).unwrap();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(120), events.next())
            .await
            .expect("the run progresses")
            .expect("the run ends before its stream");
        if event.run.state != RunState::Running {
            organizer.scheduler.store().sync().await.unwrap();
            return event.run;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_candidate_walks_from_its_own_recorded_start_and_the_answer_is_held_out() {
    let organizer = organizer_with_sim_hosts("starts-fresh").await;
    let plan = HeldOut {
        candidates: 2,
        starts: 3,
    };
    let run = run_to_end(&organizer, gait_run(Starts::Fresh, plan)).await;
    assert_eq!(run.state, RunState::Finished, "{}", run.error);
    assert_eq!(run.evaluations, BUDGET, "re-walks are not evaluations");

    let store = organizer.scheduler.store();
    let told = store.told_jobs(run.id).unwrap();
    assert_eq!(told.len() as u64, BUDGET);
    for job in &told {
        let seed = job.request.job.spec.seed;
        assert_eq!(seed, candidate_seed(7, job.seq), "job {}", job.id);
        assert!(!is_held_out(seed));
    }

    let (re_walks, reference): (Vec<_>, Vec<_>) = store
        .held_out_jobs(run.id)
        .unwrap()
        .into_iter()
        .partition(|j| j.seq < REFERENCE_SEQ);
    assert_eq!(re_walks.len(), 2 * 3);
    // The gait as given (the amplitude it starts at) walks the same
    // held-out starts; its figure is the run's reference.
    assert_eq!(reference.len(), 3);
    let Problem::OptimizationXml(problem) = gait_run(Starts::Fresh, plan).problem else {
        unreachable!("a gait run")
    };
    let given = yamor_core::optimize::OptimizationConfig::from_xml_str("problem", &problem)
        .unwrap()
        .free_parameters()[0]
        .start;
    let reference_seeds: Vec<u64> = reference.iter().map(|j| j.request.job.spec.seed).collect();
    assert_eq!(reference_seeds, held_out_seeds(3).collect::<Vec<_>>());
    assert!(
        reference
            .iter()
            .all(|j| j.request.job.parameters == [("amplitude_0".to_owned(), given)]),
        "{given}: {:?}",
        reference[0].request.job.parameters
    );
    let reference_velocities: Vec<f64> = reference.iter().map(|j| j.fitness().unwrap()).collect();
    assert_eq!(run.reference, Spread::of(&reference_velocities));
    assert!(re_walks.iter().all(|j| j.state == JobState::Done));
    let held_out: Vec<u64> = held_out_seeds(3).collect();
    for (k, finalist) in re_walks.chunks(3).enumerate() {
        let seeds: Vec<u64> = finalist.iter().map(|j| j.request.job.spec.seed).collect();
        assert_eq!(seeds, held_out, "finalist {k}");
        let x = &finalist[0].request.job.parameters;
        assert!(finalist.iter().all(|j| &j.request.job.parameters == x));
    }
    // The answer is a finalist's mean over its re-walks, and the best one.
    let spread = run.held_out.expect("a held-out figure");
    assert_eq!(spread.n, 3);
    assert_eq!(run.best_velocity, Some(spread.mean));
    let means: Vec<(f64, &Vec<(String, f64)>)> = re_walks
        .chunks(3)
        .map(|f| {
            let v: f64 = f.iter().map(|j| j.fitness().unwrap()).sum::<f64>() / 3.0;
            (v, &f[0].request.job.parameters)
        })
        .collect();
    let winner = means.iter().max_by(|a, b| a.0.total_cmp(&b.0)).unwrap();
    assert!((winner.0 - spread.mean).abs() < 1e-12);
    assert_eq!(&run.best_parameters, winner.1);
    // What every page and line shows is that figure, not the lucky walk.
    assert_eq!(run.best_text(), format!("{} held out", spread.cm_s()));

    // Read back after a restart, the run shows the same figure.
    let again = organizer.runs.get(run.id).unwrap();
    assert_eq!(again.held_out, run.held_out);
    drop(organizer);
    let reopened = Organizer::open(
        &std::env::temp_dir()
            .join(format!("yamor-test-{}-starts-fresh", std::process::id()))
            .join("yamor.db"),
        yamor_organizer::SchedulerConfig::default(),
        yamor_proto::transport::ClientSecurity::default(),
        vec![Arc::new(yamor_pso::Pso)],
    )
    .unwrap();
    let reread = reopened.runs.get(run.id).unwrap();
    assert_eq!(reread.held_out, run.held_out);
    assert_eq!(reread.reference, run.reference);
    assert_eq!(reread.best_velocity, run.best_velocity);
    assert_eq!(reread.evaluations, BUDGET);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_start_run_walks_every_candidate_from_its_seed_and_can_skip_the_re_walk() {
    let organizer = organizer_with_sim_hosts("starts-fixed").await;
    let mut spec = gait_run(Starts::Fixed, HeldOut::off());
    spec.spec.seed = 5;
    let run = run_to_end(&organizer, spec).await;
    assert_eq!(run.state, RunState::Finished, "{}", run.error);
    let jobs = run_jobs(&organizer, run.id);
    assert_eq!(jobs.len() as u64, BUDGET);
    assert!(jobs.iter().all(|j| j.seq < HELD_OUT_SEQ));
    assert!(jobs.iter().all(|j| j.request.job.spec.seed == 5));
    assert_eq!(run.held_out, None, "no re-walk asked for");
    // Its answer is one walk, and says so.
    assert!(
        run.best_text().ends_with("(one walk, provisional)"),
        "{}",
        run.best_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_out_of_time_still_earns_its_held_out_figure() {
    let organizer = organizer_with_sim_hosts("starts-time").await;
    let plan = HeldOut {
        candidates: 2,
        starts: 2,
    };
    let mut spec = gait_run(Starts::Fresh, plan);
    spec.max_evaluations = 0;
    spec.max_seconds = 1.0;
    let run = run_to_end(&organizer, spec).await;
    // Its time budget ended it, as an evaluation budget would: finished,
    // and re-walked.
    assert_eq!(run.state, RunState::Finished, "{}", run.error);
    assert!(run.evaluations > 0);
    let spread = run
        .held_out
        .expect("a held-out figure after the time budget");
    assert_eq!(spread.n, 2);
    assert_eq!(run.best_velocity, Some(spread.mean));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_constraint_must_be_a_positive_rate() {
    let organizer = organizer_with_sim_hosts("starts-turn").await;
    for bad in [0.0, -5.0, f64::NAN] {
        let mut spec = gait_run(Starts::Fresh, HeldOut::off());
        spec.max_turn_deg_s = Some(bad);
        let error = organizer.runs.start(spec).await.unwrap_err().to_string();
        assert!(
            error.contains("max_turn_deg_s must be a positive number of degrees per second"),
            "{error}"
        );
    }
    // A constraint no walk keeps: every walk ranks as infeasible, the run
    // still ends with a held-out figure (the finalists compared by velocity,
    // none keeping it).
    let mut spec = gait_run(
        Starts::Fresh,
        HeldOut {
            candidates: 2,
            starts: 2,
        },
    );
    spec.max_turn_deg_s = Some(1e-9);
    let run = run_to_end(&organizer, spec).await;
    assert_eq!(run.state, RunState::Finished, "{}", run.error);
    assert!(run.held_out.is_some());
}

/// Every job of a run in proposal order: (seed, early-stop bounds,
/// stopped-early checkpoint, velocity bits).
type JobTrace = Vec<(u64, Option<Vec<Option<f64>>>, Option<u32>, Option<u64>)>;

async fn early_stop_run(name: &str) -> (Run, JobTrace, Vec<yamor_organizer::model::Job>) {
    let organizer = organizer_with_sim_hosts(name).await;
    let mut spec = gait_run(
        Starts::Fresh,
        HeldOut {
            candidates: 2,
            starts: 2,
        },
    );
    spec.max_evaluations = 60;
    spec.early_stop = true;
    let run = run_to_end(&organizer, spec).await;
    let jobs = run_jobs(&organizer, run.id);
    let trace = jobs
        .iter()
        .map(|j| {
            let o = j.walk();
            (
                j.request.job.spec.seed,
                j.request
                    .job
                    .spec
                    .early_stop
                    .clone()
                    .map(|e| e.min_velocity),
                o.and_then(|o| o.stopped_early),
                o.map(|o| o.velocity.to_bits()),
            )
        })
        .collect();
    (run, trace, jobs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hopeless_walks_stop_early_below_the_best_quarters_pace_and_only_then() {
    use yamor_core::evaluation::CHECKPOINT_FRACTIONS;
    use yamor_organizer::runs::EARLY_STOP_AFTER;
    let (run, trace, jobs) = early_stop_run("starts-early").await;
    assert_eq!(run.state, RunState::Finished, "{}", run.error);
    assert_eq!(run.evaluations, 60);
    let candidates: Vec<_> = jobs.iter().filter(|j| j.seq < HELD_OUT_SEQ).collect();
    // No bound before enough complete walks; bounds afterwards.
    for job in candidates.iter().take(EARLY_STOP_AFTER) {
        assert_eq!(job.request.job.spec.early_stop, None, "job {}", job.seq);
    }
    assert!(
        candidates
            .iter()
            .any(|j| j.request.job.spec.early_stop.is_some())
    );
    let mut stopped = 0;
    for job in &candidates {
        let o = job.walk().expect("done, a walk");
        match o.stopped_early {
            Some(k) => {
                stopped += 1;
                let bound = job
                    .request
                    .job
                    .spec
                    .early_stop
                    .as_ref()
                    .unwrap()
                    .bound(k as usize);
                // Stopped only below its bound, its value the partial one,
                // and short of the whole walk.
                assert!(o.velocity < bound.unwrap(), "job {}", job.seq);
                assert_eq!(o.velocity, o.partial_velocities[k as usize]);
                assert!(o.simulated < job.request.job.spec.walk_seconds() - 0.4);
                // Listings say so: its value is a partial one.
                assert!(yamor_organizer::text::job_row(job).contains(" (early)"));
                let json = yamor_organizer::text::job_json(job);
                assert_eq!(json["stopped_early_at"], k);
            }
            None => assert_eq!(o.partial_velocities.len(), CHECKPOINT_FRACTIONS.len()),
        }
    }
    assert!(
        stopped > 0,
        "no walk was hopeless in {} walks",
        candidates.len()
    );
    // The held-out re-walks are walked whole.
    for job in jobs.iter().filter(|j| j.seq >= HELD_OUT_SEQ) {
        assert_eq!(job.request.job.spec.early_stop, None);
    }
    // The same run again makes the same bounds and stops the same walks:
    // what a resumed run's replay relies on.
    let (_, again, _) = early_stop_run("starts-early-again").await;
    assert_eq!(trace, again);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_over_worlds_records_each_walks_world_and_judges_in_held_out_worlds() {
    use yamor_core::world::{WorldDistribution, Worlds, candidate_world_seed};
    let organizer = organizer_with_sim_hosts("starts-worlds").await;
    let mut spec = gait_run(
        Starts::Fresh,
        HeldOut {
            candidates: 2,
            starts: 4,
        },
    );
    spec.worlds = Worlds::Robust;
    let run = run_to_end(&organizer, spec).await;
    assert_eq!(run.state, RunState::Finished, "{}", run.error);
    let jobs = run_jobs(&organizer, run.id);
    let robust = WorldDistribution::robust();
    let mut learnt_in = Vec::new();
    for job in &jobs {
        let spec = &job.request.job.spec;
        // Every walk's world is the one its stream draws, recorded whole.
        let drawn = if job.seq < HELD_OUT_SEQ {
            robust.draw(candidate_world_seed(7, job.seq))
        } else {
            assert!(is_held_out(spec.seed));
            // A held-out start in the held-out world of the same seed.
            robust.draw(spec.seed)
        };
        assert_eq!(
            (spec.world.clone(), spec.ground_friction),
            drawn,
            "job {}",
            job.seq
        );
        assert!(!spec.world.is_nominal());
        let walk = job.walk().expect("done, a walk");
        assert_eq!(Some(walk.engine.as_str()), spec.world.engine.as_deref());
        if job.seq < HELD_OUT_SEQ {
            learnt_in.push(spec.world.clone());
        }
    }
    // No held-out world is one the run learnt in.
    assert!(
        jobs.iter()
            .filter(|j| j.seq >= HELD_OUT_SEQ)
            .all(|j| !learnt_in.contains(&j.request.job.spec.world))
    );
    // A recorded walk re-walks to the bit from its job alone.
    let job = jobs.iter().find(|j| j.seq == 3).unwrap();
    let (morphology, _) = yamor_sim::robots::load("quadruped", None).unwrap();
    let again = yamor_sim::evaluate(
        &morphology,
        job.request.job.gait.as_ref().unwrap(),
        SimSettings::default(),
        &job.request.job.spec,
    )
    .unwrap();
    assert_eq!(
        again.velocity.to_bits(),
        job.walk().unwrap().velocity.to_bits()
    );
    // The answer's held-out walks, by engine: each engine's figure comes
    // from the walks on it, and together they are the answer's walks.
    let held_out = organizer.scheduler.store().held_out_jobs(run.id).unwrap();
    let by_engine = yamor_organizer::runs::held_out_by_engine(&held_out, &run.best_parameters);
    let walked: usize = held_out
        .iter()
        .filter(|j| j.seq < REFERENCE_SEQ && j.request.job.parameters == run.best_parameters)
        .count();
    assert_eq!(walked, 4);
    for (engine, spread) in &by_engine {
        assert!(["articulated", "rapier"].contains(&engine.as_str()));
        assert!(spread.n >= 1);
    }
    assert_eq!(by_engine.iter().map(|(_, s)| s.n).sum::<usize>(), walked);
    // The run's page shows each engine's figure. Held-out worlds 0–3 draw
    // both engines, so both are shown.
    assert_eq!(by_engine.len(), 2, "{by_engine:?}");
    use tower::ServiceExt;
    let page = yamor_organizer::http::router(organizer.clone(), Default::default())
        .oneshot(
            axum::http::Request::get(format!("/runs/{}", run.id))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let body = axum::body::to_bytes(page.into_body(), 1 << 22)
        .await
        .unwrap();
    let body = String::from_utf8_lossy(&body);
    let line = body
        .split("id=\"by-engine\"")
        .nth(1)
        .expect("the run page shows the answer by engine");
    for (engine, spread) in &by_engine {
        let shown = format!("{engine}</b> {}", spread.cm_s());
        assert!(line.contains(&shown), "{shown} not in {line}");
    }
    // A walk's page names the world it was drawn into.
    let page = yamor_organizer::http::router(organizer.clone(), Default::default())
        .oneshot(
            axum::http::Request::get(format!("/jobs/{}", job.id))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let body = axum::body::to_bytes(page.into_body(), 1 << 22)
        .await
        .unwrap();
    let body = String::from_utf8_lossy(&body);
    let spec = &job.request.job.spec;
    let world = spec.world.describe(spec.ground_friction);
    assert!(world.starts_with(spec.world.engine.as_deref().unwrap()));
    assert!(
        body.contains(&format!("<th>world</th><td>{world}</td>")),
        "{body}"
    );
}

/// `direction: axis`: the optimizer is told, and the answer is judged by,
/// each walk's velocity along the robot's long axis (its velocity times
/// |cos| of its heading), never more than the velocity in any direction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_along_the_axis_is_told_and_judged_by_the_velocity_along_the_long_axis() {
    use yamor_core::evaluation::{Direction, descriptors::HEADING};
    let organizer = organizer_with_sim_hosts("starts-axis").await;
    let plan = HeldOut {
        candidates: 2,
        starts: 3,
    };
    let mut spec = gait_run(Starts::Fresh, plan);
    spec.direction = Direction::Axis;
    let run = run_to_end(&organizer, spec).await;
    assert_eq!(run.state, RunState::Finished, "{}", run.error);
    let along = |j: &yamor_organizer::model::Job| {
        let walk = j.walk().expect("a walk");
        let heading = walk.descriptors[HEADING];
        walk.velocity * heading.to_radians().cos().abs()
    };
    let store = organizer.scheduler.store();
    let told = store.told_jobs(run.id).unwrap();
    let best_told = told.iter().map(along).fold(f64::NEG_INFINITY, f64::max);
    let best_any = told
        .iter()
        .map(|j| j.fitness().unwrap())
        .fold(f64::NEG_INFINITY, f64::max);
    assert!(best_told <= best_any + 1e-12);
    let re_walks: Vec<_> = store
        .held_out_jobs(run.id)
        .unwrap()
        .into_iter()
        .filter(|j| j.seq < REFERENCE_SEQ)
        .collect();
    let spreads: Vec<(Spread, Spread)> = re_walks
        .chunks(3)
        .map(|f| {
            let axis: Vec<f64> = f.iter().map(along).collect();
            let any: Vec<f64> = f.iter().map(|j| j.fitness().unwrap()).collect();
            (Spread::of(&axis).unwrap(), Spread::of(&any).unwrap())
        })
        .collect();
    let held_out = run.held_out.expect("a held-out figure");
    let (winner, any) = spreads
        .iter()
        .find(|(axis, _)| *axis == held_out)
        .expect("the figure is a finalist's mean along the axis");
    assert!(spreads.iter().all(|(axis, _)| axis.mean <= winner.mean));
    assert!(winner.mean < any.mean, "{winner:?} against {any:?}");
    // The run's page says which way its figure counts.
    use tower::ServiceExt;
    let page = yamor_organizer::http::router(organizer.clone(), Default::default())
        .oneshot(
            axum::http::Request::get(format!("/runs/{}", run.id))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let body = axum::body::to_bytes(page.into_body(), 1 << 22)
        .await
        .unwrap();
    let body = String::from_utf8_lossy(&body);
    assert!(
        body.contains("<span id=\"direction\">along the long axis</span>"),
        "{body}"
    );
}
