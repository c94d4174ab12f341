//! The behaviour of robot.rs, every case, on the articulated engine.

fn engine() -> yamor_sim::physics::Engine {
    yamor_sim::physics::Engine::Articulated
}

include!("robot/cases.rs");
