//! A walk recorded for watching: every part's box, its pose at a steady
//! frame rate, for a renderer (the dashboard draws them in the browser).

use yamor_core::evaluation::{EvaluationSpec, Walk};
use yamor_core::{Morphology, RobotConfig};

use crate::geometry::{BODY_HALF, HANDLE_CENTRE, HANDLE_HALF, Part};
use crate::physics::part_index;
use crate::{SimError, SimSettings, evaluate_observed};

/// A recorded walk: the boxes (two per module, body then handle) and,
/// per frame, each box's centre and orientation.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// Seconds between frames.
    pub frame_interval: f64,
    /// Half extents of each box (m), in box order.
    pub half_extents: Vec<[f32; 3]>,
    /// Per frame, per box: centre x, y, z (m, z up) and the rotation as a
    /// unit quaternion x, y, z, w.
    pub frames: Vec<Vec<[f32; 7]>>,
}

/// Walks `gait` on `morphology` as `spec` says (the same walk as
/// [`crate::evaluate`], to the bit) and records it at `frame_interval`.
pub fn record(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: &EvaluationSpec,
    frame_interval: f64,
) -> Result<(Walk, Replay), SimError> {
    let modules = morphology.modules.len();
    let half_extents = (0..modules)
        .flat_map(|_| [BODY_HALF, HANDLE_HALF])
        .collect();
    let mut frames = Vec::new();
    let mut next = 0.0;
    let outcome = evaluate_observed(morphology, gait, settings, spec, &mut |sim| {
        if sim.time() + 1e-9 < next {
            return;
        }
        next += frame_interval;
        let physics = sim.physics();
        let frame = (0..modules)
            .flat_map(|m| {
                let body = physics.part_state(part_index(m, Part::Body)).pose;
                let handle = physics.part_state(part_index(m, Part::Handle)).pose;
                // The handle's box sits along it, off its hinge frame.
                let handle_box = handle
                    * rapier3d::math::Pose::from_translation(rapier3d::math::Vector::new(
                        HANDLE_CENTRE,
                        0.0,
                        0.0,
                    ));
                [body, handle_box].map(|pose| {
                    let (t, q) = (pose.translation, pose.rotation);
                    [t.x, t.y, t.z, q.x, q.y, q.z, q.w]
                })
            })
            .collect();
        frames.push(frame);
    })?;
    Ok((
        outcome,
        Replay {
            frame_interval,
            half_extents,
            frames,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_walk_is_the_walk_and_its_boxes_stay_whole() {
        let (morphology, gait) = crate::robots::load("quadruped", None).unwrap();
        let spec = EvaluationSpec {
            warmup: 0.5,
            measure: 1.0,
            seed: 4,
            ..EvaluationSpec::default()
        };
        let settings = SimSettings::default();
        let (outcome, replay) = record(&morphology, &gait, settings, &spec, 0.05).unwrap();
        let walked = crate::evaluate(&morphology, &gait, settings, &spec).unwrap();
        assert_eq!(outcome.velocity.to_bits(), walked.velocity.to_bits());
        // 1.5 s at 20 frames a second, from t = 0.
        assert!(
            (29..=31).contains(&replay.frames.len()),
            "{}",
            replay.frames.len()
        );
        assert_eq!(replay.half_extents.len(), 2 * morphology.modules.len());
        for frame in &replay.frames {
            assert_eq!(frame.len(), replay.half_extents.len());
            for b in frame {
                let norm = (b[3] * b[3] + b[4] * b[4] + b[5] * b[5] + b[6] * b[6]).sqrt();
                assert!((norm - 1.0).abs() < 1e-3, "{b:?}");
                assert!(b[2] > -0.01 && b[2] < 0.5, "{b:?} above the ground");
            }
        }
        // The robot moved: the first box's centre is elsewhere at the end.
        let (first, last) = (&replay.frames[0][0], &replay.frames.last().unwrap()[0]);
        assert!((first[0] - last[0]).abs() + (first[1] - last[1]).abs() > 1e-3);
    }
}
