//! The camera of the LED tracking set-up (thesis 4.2.1, 5.1.2, C.2.5): a
//! camera looking straight down from 2.7 m, whose CamApp reports the lit
//! LED as integer pixels (x in 0–639, y in 0–479). [`CameraModel`] maps
//! floor positions to pixels and back, with barrel distortion, and
//! [`CameraModel::calibrate`] fits it to measured points.
//!
//! # The model
//! A world point `(x, y, z)` (metres, z up, the floor at z = 0) seen by a
//! pinhole camera at `(cx, cy, height)` whose image axes are turned by
//! `yaw` from the world axes:
//!
//! ```text
//! u = cos(yaw)(x−cx) + sin(yaw)(y−cy)      v = −sin(yaw)(x−cx) + cos(yaw)(y−cy)
//! xn = u / (height − z)                    yn = v / (height − z)
//! r² = xn² + yn²                           d = 1 + k1 r² + k2 r⁴
//! px = px0 + focal · xn · d                py = py0 + focal · yn · d
//! ```
//!
//! `k1 < 0` is barrel distortion. The LED rides on the robot, so its
//! distance to the camera is `height − led_height`, not `height`: that is
//! why 5.1.2 warns that a flat move still changes the distance.

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

/// Image size of CamApp (5.1.2).
pub const IMAGE_WIDTH: f64 = 640.0;
pub const IMAGE_HEIGHT: f64 = 480.0;

/// A downward-looking camera with radial distortion.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CameraModel {
    /// Height of the camera's centre of projection above the floor (m).
    pub height: f64,
    /// The floor point right under the camera (m).
    pub cx: f64,
    pub cy: f64,
    /// Turn of the image axes from the world axes (rad).
    pub yaw: f64,
    /// Focal length (pixels).
    pub focal: f64,
    /// Principal point (pixels).
    pub px0: f64,
    pub py0: f64,
    /// Radial distortion coefficients.
    pub k1: f64,
    pub k2: f64,
}

impl Default for CameraModel {
    /// The thesis' set-up: 2.7 m above the floor, centred on the origin, a
    /// lens whose image covers about 3.0 m × 2.25 m of floor (focal 576 px:
    /// 320 px = 1.5 m at 2.7 m minus a 5 cm LED) with mild barrel distortion.
    fn default() -> Self {
        CameraModel {
            height: 2.7,
            cx: 0.0,
            cy: 0.0,
            yaw: 0.0,
            focal: 576.0,
            px0: IMAGE_WIDTH / 2.0,
            py0: IMAGE_HEIGHT / 2.0,
            k1: -0.08,
            k2: 0.0,
        }
    }
}

/// Why a calibration failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CameraError {
    #[error("calibration needs at least {needed} points, got {got}")]
    TooFewPoints { needed: usize, got: usize },
    #[error("the calibration points are degenerate: spread them over the floor")]
    Degenerate,
    #[error("point {index} is above the camera or not finite")]
    BadPoint { index: usize },
}

/// One calibration sample: a known world position and where CamApp saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub world: [f64; 3],
    pub pixel: [f64; 2],
}

impl CameraModel {
    /// Where the camera sees `world` (sub-pixel), or `None` when the point
    /// is at or above the camera.
    #[must_use]
    pub fn project(&self, world: [f64; 3]) -> Option<[f64; 2]> {
        let depth = self.height - world[2];
        if depth.is_nan() || depth <= 1e-6 {
            return None;
        }
        let (s, c) = self.yaw.sin_cos();
        let (dx, dy) = (world[0] - self.cx, world[1] - self.cy);
        let (xn, yn) = ((c * dx + s * dy) / depth, (-s * dx + c * dy) / depth);
        let d = self.distortion(xn * xn + yn * yn);
        Some([
            self.px0 + self.focal * xn * d,
            self.py0 + self.focal * yn * d,
        ])
    }

    /// Whether `pixel` is inside CamApp's image.
    #[must_use]
    pub fn in_image(pixel: [f64; 2]) -> bool {
        (0.0..IMAGE_WIDTH).contains(&pixel[0]) && (0.0..IMAGE_HEIGHT).contains(&pixel[1])
    }

    /// The point at height `z` (the LED's height) that the camera sees at
    /// `pixel`: the inverse of [`project`](Self::project), the distortion
    /// undone by fixed-point iteration (it converges for the barrel
    /// distortion of any usable lens within a few steps).
    #[must_use]
    pub fn unproject(&self, pixel: [f64; 2], z: f64) -> [f64; 2] {
        let (xd, yd) = (
            (pixel[0] - self.px0) / self.focal,
            (pixel[1] - self.py0) / self.focal,
        );
        let (mut xn, mut yn) = (xd, yd);
        for _ in 0..50 {
            let d = self.distortion(xn * xn + yn * yn);
            let (nx, ny) = (xd / d, yd / d);
            let done = (nx - xn).abs() < 1e-13 && (ny - yn).abs() < 1e-13;
            (xn, yn) = (nx, ny);
            if done {
                break;
            }
        }
        let depth = self.height - z;
        let (u, v) = (xn * depth, yn * depth);
        let (s, c) = self.yaw.sin_cos();
        [self.cx + c * u - s * v, self.cy + s * u + c * v]
    }

    fn distortion(&self, r2: f64) -> f64 {
        1.0 + self.k1 * r2 + self.k2 * r2 * r2
    }

    /// Fits focal length, principal point, k1, yaw and the camera's floor
    /// position to `samples` by Levenberg–Marquardt, starting from `self`
    /// (height and k2 are kept: from points on one plane they cannot be told
    /// apart from the focal length). Returns the model and the RMS residual
    /// in metres on the floor.
    pub fn calibrate(&self, samples: &[Sample]) -> Result<(CameraModel, f64), CameraError> {
        const PARAMS: usize = 7;
        if samples.len() < 6 {
            return Err(CameraError::TooFewPoints {
                needed: 6,
                got: samples.len(),
            });
        }
        for (index, s) in samples.iter().enumerate() {
            let finite = s.world.iter().chain(&s.pixel).all(|v| v.is_finite());
            if !finite || s.world[2] >= self.height {
                return Err(CameraError::BadPoint { index });
            }
        }
        let spread = |k: usize| {
            let (lo, hi) = samples
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), s| {
                    (l.min(s.world[k]), h.max(s.world[k]))
                });
            hi - lo
        };
        if spread(0) < 0.1 || spread(1) < 0.1 {
            return Err(CameraError::Degenerate);
        }
        let pack = |m: &CameraModel| {
            DVector::from_vec(vec![m.focal, m.px0, m.py0, m.k1, m.yaw, m.cx, m.cy])
        };
        let unpack = |p: &DVector<f64>| CameraModel {
            focal: p[0],
            px0: p[1],
            py0: p[2],
            k1: p[3],
            yaw: p[4],
            cx: p[5],
            cy: p[6],
            ..*self
        };
        let residuals = |m: &CameraModel| -> Option<DVector<f64>> {
            let mut r = DVector::zeros(samples.len() * 2);
            for (i, s) in samples.iter().enumerate() {
                let p = m.project(s.world)?;
                r[2 * i] = p[0] - s.pixel[0];
                r[2 * i + 1] = p[1] - s.pixel[1];
            }
            Some(r)
        };
        let mut p = pack(self);
        let mut r = residuals(self).ok_or(CameraError::Degenerate)?;
        let mut lambda = 1e-3;
        for _ in 0..200 {
            let mut jacobian = DMatrix::zeros(r.len(), PARAMS);
            for k in 0..PARAMS {
                let h = 1e-6 * p[k].abs().max(1e-3);
                let mut q = p.clone();
                q[k] += h;
                let rq = residuals(&unpack(&q)).ok_or(CameraError::Degenerate)?;
                jacobian.set_column(k, &((rq - &r) / h));
            }
            let jt = jacobian.transpose();
            let jtj = &jt * &jacobian;
            let g = &jt * &r;
            let mut improved = false;
            for _ in 0..10 {
                let mut a = jtj.clone();
                for k in 0..PARAMS {
                    a[(k, k)] *= 1.0 + lambda;
                    a[(k, k)] += 1e-12;
                }
                let Some(step) = a.lu().solve(&(-&g)) else {
                    lambda *= 10.0;
                    continue;
                };
                let q = &p + &step;
                if let Some(rq) = residuals(&unpack(&q))
                    && rq.norm_squared() < r.norm_squared()
                {
                    let small = step.norm() < 1e-10 * p.norm().max(1.0);
                    p = q;
                    r = rq;
                    lambda = (lambda / 10.0).max(1e-12);
                    improved = !small;
                    break;
                }
                lambda *= 10.0;
            }
            if !improved {
                break;
            }
        }
        let fitted = unpack(&p);
        if !(fitted.focal.is_finite() && fitted.focal > 0.0) {
            return Err(CameraError::Degenerate);
        }
        let rms = (samples
            .iter()
            .map(|s| {
                let [x, y] = fitted.unproject(s.pixel, s.world[2]);
                (x - s.world[0]).powi(2) + (y - s.world[1]).powi(2)
            })
            .sum::<f64>()
            / samples.len() as f64)
            .sqrt();
        Ok((fitted, rms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn unproject_inverts_project(x in -1.4f64..1.4, y in -1.0f64..1.0, z in 0.0f64..0.3) {
            let model = CameraModel { yaw: 0.3, cx: 0.2, cy: -0.1, k1: -0.15, k2: 0.02, ..CameraModel::default() };
            let pixel = model.project([x, y, z]).unwrap();
            let back = model.unproject(pixel, z);
            prop_assert!((back[0] - x).abs() < 1e-6 && (back[1] - y).abs() < 1e-6, "{back:?} vs {x} {y}");
        }
    }

    #[test]
    fn the_default_camera_sees_about_three_by_two_metres() {
        let m = CameraModel::default();
        let corner = m.unproject([0.0, 0.0], 0.05);
        assert!(corner[0] < -1.4 && corner[0] > -1.8, "{corner:?}");
        assert!(corner[1] < -1.0 && corner[1] > -1.4, "{corner:?}");
        assert!(CameraModel::in_image(m.project([1.0, 0.8, 0.05]).unwrap()));
        assert!(!CameraModel::in_image(m.project([3.0, 0.0, 0.05]).unwrap()));
    }

    #[test]
    fn a_flat_move_of_the_led_is_not_a_move_of_the_floor_point() {
        // 5.1.2: the LED's height changes where it appears.
        let m = CameraModel::default();
        let low = m.project([1.0, 0.0, 0.0]).unwrap();
        let high = m.project([1.0, 0.0, 0.1]).unwrap();
        assert!(high[0] > low[0] + 5.0);
        let wrong = m.unproject(high, 0.0);
        assert!(
            (wrong[0] - 1.0).abs() > 0.03,
            "ignoring the LED height errs"
        );
    }

    #[test]
    fn calibration_recovers_a_camera_from_noisy_points() {
        let truth = CameraModel {
            cx: 0.12,
            cy: -0.07,
            yaw: 0.05,
            focal: 590.0,
            px0: 316.0,
            py0: 247.0,
            k1: -0.12,
            ..CameraModel::default()
        };
        let mut samples = Vec::new();
        let mut noise = 0.37_f64;
        for i in -3..=3 {
            for j in -2..=2 {
                let world = [f64::from(i) * 0.4, f64::from(j) * 0.4, 0.05];
                let p = truth.project(world).unwrap();
                // Deterministic ±0.5 px noise.
                noise = (noise * 7.13 + 0.29).fract();
                samples.push(Sample {
                    world,
                    pixel: [p[0] + noise - 0.5, p[1] + 0.5 - noise],
                });
            }
        }
        let (fitted, rms) = CameraModel::default().calibrate(&samples).unwrap();
        assert!(rms < 0.005, "rms {rms} m");
        assert!((fitted.focal - truth.focal).abs() < 5.0, "{fitted:?}");
        assert!((fitted.k1 - truth.k1).abs() < 0.03, "{fitted:?}");
        assert!((fitted.cx - truth.cx).abs() < 0.01 && (fitted.cy - truth.cy).abs() < 0.01);
        assert!((fitted.yaw - truth.yaw).abs() < 0.01);
    }

    #[test]
    fn bad_calibration_input_is_refused() {
        let m = CameraModel::default();
        let s = Sample {
            world: [0.0, 0.0, 0.0],
            pixel: [320.0, 240.0],
        };
        assert_eq!(
            m.calibrate(&[s; 3]),
            Err(CameraError::TooFewPoints { needed: 6, got: 3 })
        );
        assert_eq!(m.calibrate(&[s; 8]), Err(CameraError::Degenerate));
        let mut bad = vec![s; 8];
        bad[2].world[0] = f64::NAN;
        assert_eq!(m.calibrate(&bad), Err(CameraError::BadPoint { index: 2 }));
    }
}
