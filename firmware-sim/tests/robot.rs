//! Behaviour of the simulated robot on the rapier engine: servo, firmware,
//! walking, determinism, supervisor commands.

fn engine() -> yamor_sim::physics::Engine {
    yamor_sim::physics::Engine::Rapier
}

include!("robot/cases.rs");
