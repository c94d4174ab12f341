//! The camera of the LED tracking set-up (thesis 4.2.1, 5.1.2, C.2.5): a
//! camera looking straight down from 2.7 m, whose CamApp reports the lit
//! LED as integer pixels (x in 0–639, y in 0–479). [`CameraModel`] maps
//! world positions to pixels and back, with barrel distortion, and
//! [`CameraModel::calibrate`] fits it to measured points.
//!
//! # The model
//! World: metres, right-handed, z up, the floor at z = 0 (the simulator's
//! frame). A pinhole camera at `(cx, cy, height)` looks straight down; its
//! image x axis points along `(cos yaw, sin yaw)` on the floor, and its image
//! y axis (downwards on the screen) along `(sin yaw, −cos yaw)`, which is
//! what a camera seen from above does: with `yaw = 0` world +y is up on the
//! screen.
//!
//! ```text
//! u  = cos(yaw)(x−cx) + sin(yaw)(y−cy)     v  = sin(yaw)(x−cx) − cos(yaw)(y−cy)
//! xn = u / (height − z)                    yn = v / (height − z)
//! r² = xn² + yn²                           d  = 1 + k1·r² + k2·r⁴
//! px = px0 + focal·xn·d                    py = py0 + focal·yn·d
//! ```
//!
//! `k1 < 0` is barrel distortion. The LED rides on the robot, so its
//! distance to the camera is `height − z`, not `height`: that is why 5.1.2
//! warns that a flat move still changes the distance, and why
//! [`CameraModel::unproject`] takes the LED's height.

use nalgebra::{DMatrix, DVector, Matrix2, SymmetricEigen};
use serde::{Deserialize, Serialize};

/// Image size of CamApp (5.1.2): x in 0–639, y in 0–479.
pub const IMAGE_WIDTH: f64 = 640.0;
pub const IMAGE_HEIGHT: f64 = 480.0;

/// The camera's height above the floor in the thesis' set-up (4.2.1).
pub const CAMERA_HEIGHT: f64 = 2.7;

/// Height of the LED above the floor on a YaMoR module. The thesis gives
/// none; a module is a ~5 cm cube and the LED sits on its top, so 5 cm.
pub const LED_HEIGHT: f64 = 0.05;

/// A sub-pixel image position (x, y) in CamApp's pixel units.
pub type Pixel = [f64; 2];

/// A downward-looking camera with radial distortion. Serialised as JSON or
/// TOML with these field names; missing fields take the defaults, unknown
/// ones are refused (a typo must not silently become a default).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
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
    /// Radial distortion coefficients (k1 < 0: barrel).
    pub k1: f64,
    pub k2: f64,
}

impl Default for CameraModel {
    /// The thesis gives only the height (2.7 m). The rest is a typical
    /// 640 × 480 surveillance camera: focal 576 px is a ~58° horizontal field
    /// of view, so the image's half-width of 320 px is 1.5 m on the floor
    /// at 2.7 m; with the mild barrel distortion (k1 = −0.08) the image
    /// covers about 3.08 m × 2.28 m of floor, 3.02 m × 2.24 m at the LED's
    /// height — room for a robot to walk a minute at a few cm/s.
    fn default() -> Self {
        CameraModel {
            height: CAMERA_HEIGHT,
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

/// Why a camera model or a calibration was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CameraError {
    #[error("calibration needs at least {needed} points, got {got}")]
    TooFewPoints { needed: usize, got: usize },
    #[error("the calibration points are degenerate ({0}): spread them over the whole image")]
    Degenerate(&'static str),
    #[error("calibration point {index} is not finite or not below the camera")]
    BadPoint { index: usize },
    #[error(
        "the image is mirrored relative to the floor axes (a camera seen from above is not): \
         check the axes of the floor points or CamApp's mirroring"
    )]
    Mirrored,
    #[error("camera model: {field} {why}")]
    InvalidModel { field: &'static str, why: String },
}

/// One calibration sample: a known world position (the LED's, so z is its
/// height) and where CamApp saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub world: [f64; 3],
    pub pixel: Pixel,
}

impl From<([f64; 3], Pixel)> for Sample {
    fn from((world, pixel): ([f64; 3], Pixel)) -> Self {
        Sample { world, pixel }
    }
}

/// A fitted camera and how well it explains the samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    pub model: CameraModel,
    /// Per sample, `unproject(pixel, z) − world` on the floor (m).
    pub residuals: Vec<[f64; 2]>,
    /// RMS and largest of the residuals' lengths (m).
    pub rms_m: f64,
    pub max_m: f64,
    /// RMS reprojection error (pixels).
    pub rms_px: f64,
}

/// Fewest samples [`CameraModel::calibrate`] accepts: seven parameters from
/// two equations each leaves room to see the noise.
pub const MIN_SAMPLES: usize = 6;

impl CameraModel {
    /// Where the camera sees `world` (sub-pixel; CamApp's integer rounding
    /// belongs to CamApp), or `None` when that is outside the 640 × 480
    /// image or the point is not below the camera.
    #[must_use]
    pub fn project(&self, world: [f64; 3]) -> Option<Pixel> {
        self.project_unbounded(world).filter(|&p| Self::in_image(p))
    }

    /// [`project`](Self::project) without the image bounds: what the
    /// calibration needs, since a poor early guess may put points outside.
    #[must_use]
    pub fn project_unbounded(&self, world: [f64; 3]) -> Option<Pixel> {
        let depth = self.height - world[2];
        if depth.is_nan() || depth <= 1e-6 {
            return None;
        }
        let [xn, yn] = self.normalised(world, depth);
        let d = self.distortion(xn * xn + yn * yn);
        let p = [
            self.px0 + self.focal * xn * d,
            self.py0 + self.focal * yn * d,
        ];
        p.iter().all(|v| v.is_finite()).then_some(p)
    }

    fn normalised(&self, world: [f64; 3], depth: f64) -> [f64; 2] {
        let (s, c) = self.yaw.sin_cos();
        let (dx, dy) = (world[0] - self.cx, world[1] - self.cy);
        [(c * dx + s * dy) / depth, (s * dx - c * dy) / depth]
    }

    /// Whether `pixel` is inside CamApp's image.
    #[must_use]
    pub fn in_image(pixel: Pixel) -> bool {
        (0.0..IMAGE_WIDTH).contains(&pixel[0]) && (0.0..IMAGE_HEIGHT).contains(&pixel[1])
    }

    /// The point at height `z` (the LED's height) that the camera sees at
    /// `pixel`: the inverse of [`project`](Self::project). The distortion is
    /// radial, so undoing it is one equation in the undistorted radius,
    /// solved by Newton's method; from the distorted radius it converges
    /// monotonically for any lens that does not fold the image (see
    /// [`check`](Self::check)).
    #[must_use]
    pub fn unproject(&self, pixel: Pixel, z: f64) -> [f64; 2] {
        let (xd, yd) = (
            (pixel[0] - self.px0) / self.focal,
            (pixel[1] - self.py0) / self.focal,
        );
        let rd = xd.hypot(yd);
        let scale = if rd > 0.0 {
            self.undistort_radius(rd) / rd
        } else {
            1.0
        };
        let depth = self.height - z;
        let (u, v) = (xd * scale * depth, yd * scale * depth);
        let (s, c) = self.yaw.sin_cos();
        [self.cx + c * u + s * v, self.cy + s * u - c * v]
    }

    /// The undistorted radius `r` with `r · d(r²) = rd`.
    fn undistort_radius(&self, rd: f64) -> f64 {
        let mut r = rd;
        for _ in 0..30 {
            let r2 = r * r;
            let g = r * self.distortion(r2) - rd;
            let slope = 1.0 + 3.0 * self.k1 * r2 + 5.0 * self.k2 * r2 * r2;
            if slope <= 1e-9 || !slope.is_finite() {
                // Past the fold of an invalid lens: no better answer exists.
                break;
            }
            let step = g / slope;
            r -= step;
            if step.abs() <= 1e-15 * r.abs().max(1e-3) {
                break;
            }
        }
        r
    }

    fn distortion(&self, r2: f64) -> f64 {
        1.0 + self.k1 * r2 + self.k2 * r2 * r2
    }

    /// Refuses a model that cannot be a camera: non-finite numbers, a
    /// camera not above the floor, a non-positive focal length, or a lens
    /// whose distortion folds the image back on itself before its corners
    /// (then two floor points share a pixel and `unproject` is ambiguous).
    pub fn check(&self) -> Result<(), CameraError> {
        let fields = [
            ("height", self.height),
            ("cx", self.cx),
            ("cy", self.cy),
            ("yaw", self.yaw),
            ("focal", self.focal),
            ("px0", self.px0),
            ("py0", self.py0),
            ("k1", self.k1),
            ("k2", self.k2),
        ];
        if let Some((field, _)) = fields.iter().find(|(_, v)| !v.is_finite()) {
            return Err(invalid(field, "is not a finite number"));
        }
        if self.height <= 0.0 {
            return Err(invalid("height", "must be above the floor (> 0 m)"));
        }
        if self.focal <= 0.0 {
            return Err(invalid("focal", "must be positive (pixels)"));
        }
        // The farthest image corner, as a distorted normalised radius.
        let corner = [0.0, IMAGE_WIDTH]
            .iter()
            .flat_map(|&x| [0.0, IMAGE_HEIGHT].map(|y| (x - self.px0).hypot(y - self.py0)))
            .fold(0.0, f64::max)
            / self.focal;
        // Walk out along the radius until the image corner is reached; the
        // radial map must keep growing on the way.
        let mut r = 0.0_f64;
        while r * self.distortion(r * r) < corner {
            let r2 = r * r;
            if 1.0 + 3.0 * self.k1 * r2 + 5.0 * self.k2 * r2 * r2 <= 0.0 {
                return Err(invalid(
                    "k1",
                    &format!(
                        "(with k2) folds the image before its corners (k1 {}, k2 {})",
                        self.k1, self.k2
                    ),
                ));
            }
            r += 1e-3;
        }
        Ok(())
    }

    /// Fits focal length, principal point, k1, yaw and the camera's floor
    /// position to `samples` by Levenberg–Marquardt on the pixel error.
    /// `self` supplies what is kept: the height and k2 (from points at one
    /// height they cannot be told apart from the focal length and k1). The
    /// starting point is a closed-form fit of an undistorted camera, so
    /// `self` need not be close otherwise.
    pub fn calibrate(&self, samples: &[Sample]) -> Result<Calibration, CameraError> {
        self.check()?;
        check_samples(samples, self.height)?;
        let start = self.linear_guess(samples)?;
        let fitted = levenberg_marquardt(&start, samples)?;
        fitted
            .check()
            .map_err(|_| CameraError::Degenerate("the fit folds the image"))?;
        Ok(fitted.residuals(samples))
    }

    /// How well this model explains `samples`.
    #[must_use]
    pub fn residuals(&self, samples: &[Sample]) -> Calibration {
        let residuals: Vec<[f64; 2]> = samples
            .iter()
            .map(|s| {
                let [x, y] = self.unproject(s.pixel, s.world[2]);
                [x - s.world[0], y - s.world[1]]
            })
            .collect();
        let n = samples.len().max(1) as f64;
        let lengths = residuals.iter().map(|r| r[0].hypot(r[1]));
        let rms_m = (lengths.clone().map(|l| l * l).sum::<f64>() / n).sqrt();
        let max_m = lengths.fold(0.0, f64::max);
        let rms_px = (samples
            .iter()
            .map(|s| match self.project_unbounded(s.world) {
                Some(p) => (p[0] - s.pixel[0]).powi(2) + (p[1] - s.pixel[1]).powi(2),
                None => f64::INFINITY,
            })
            .sum::<f64>()
            / n)
            .sqrt();
        Calibration {
            model: *self,
            residuals,
            rms_m,
            max_m,
            rms_px,
        }
    }

    /// An undistorted camera with the principal point at `self`'s, fitted
    /// in closed form: `pixel − p0 = M·(x, y)/depth + t/depth` is linear in
    /// the 2 × 2 matrix `M` and `t`; `M` is then focal × the yaw's
    /// reflection-rotation, and `t` gives the camera's floor position.
    fn linear_guess(&self, samples: &[Sample]) -> Result<CameraModel, CameraError> {
        let n = samples.len();
        let mut a = DMatrix::zeros(n, 3);
        let mut bx = DVector::zeros(n);
        let mut by = DVector::zeros(n);
        for (i, s) in samples.iter().enumerate() {
            let depth = self.height - s.world[2];
            a[(i, 0)] = s.world[0] / depth;
            a[(i, 1)] = s.world[1] / depth;
            a[(i, 2)] = 1.0 / depth;
            bx[i] = s.pixel[0] - self.px0;
            by[i] = s.pixel[1] - self.py0;
        }
        let svd = a.svd(true, true);
        let solve = |b: &DVector<f64>| {
            svd.solve(b, 1e-9)
                .map_err(|_| CameraError::Degenerate("no linear fit"))
        };
        let (rx, ry) = (solve(&bx)?, solve(&by)?);
        let m = Matrix2::new(rx[0], rx[1], ry[0], ry[1]);
        let det = m.determinant();
        if !det.is_finite() || det.abs() < 1e-6 {
            return Err(CameraError::Degenerate(
                "the pixels do not follow the points",
            ));
        }
        if det > 0.0 {
            return Err(CameraError::Mirrored);
        }
        // The nearest focal × [[c, s], [s, −c]] to M.
        let (c2, s2) = ((m[(0, 0)] - m[(1, 1)]) / 2.0, (m[(0, 1)] + m[(1, 0)]) / 2.0);
        let focal = c2.hypot(s2);
        let yaw = s2.atan2(c2);
        // t = −focal·R·c, and R is its own inverse.
        let (s, c) = yaw.sin_cos();
        let (tx, ty) = (-rx[2] / focal, -ry[2] / focal);
        Ok(CameraModel {
            focal,
            yaw,
            cx: c * tx + s * ty,
            cy: s * tx - c * ty,
            k1: 0.0,
            ..*self
        })
    }
}

fn invalid(field: &'static str, why: &str) -> CameraError {
    CameraError::InvalidModel {
        field,
        why: why.to_owned(),
    }
}

/// Enough points, finite, below the camera, and spread out both on the
/// floor and in the image (points on one line leave the yaw or the focal
/// length free; points bunched in the centre leave the distortion free).
fn check_samples(samples: &[Sample], height: f64) -> Result<(), CameraError> {
    if samples.len() < MIN_SAMPLES {
        return Err(CameraError::TooFewPoints {
            needed: MIN_SAMPLES,
            got: samples.len(),
        });
    }
    for (index, s) in samples.iter().enumerate() {
        let finite = s.world.iter().chain(&s.pixel).all(|v| v.is_finite());
        if !finite || s.world[2] >= height {
            return Err(CameraError::BadPoint { index });
        }
    }
    if narrowest_spread(samples.iter().map(|s| [s.world[0], s.world[1]])) < 0.1 {
        return Err(CameraError::Degenerate(
            "the floor points are on one line or bunched within 10 cm",
        ));
    }
    if narrowest_spread(samples.iter().map(|s| s.pixel)) < 40.0 {
        return Err(CameraError::Degenerate(
            "the pixels are on one line or bunched within 40 px",
        ));
    }
    Ok(())
}

/// Standard deviation of the points along their narrowest direction.
fn narrowest_spread(points: impl Iterator<Item = [f64; 2]> + Clone) -> f64 {
    let n = points.clone().count() as f64;
    let mean = points
        .clone()
        .fold([0.0, 0.0], |m, p| [m[0] + p[0] / n, m[1] + p[1] / n]);
    let mut cov = Matrix2::zeros();
    for p in points {
        let d = nalgebra::Vector2::new(p[0] - mean[0], p[1] - mean[1]);
        cov += d * d.transpose() / n;
    }
    SymmetricEigen::new(cov).eigenvalues.min().max(0.0).sqrt()
}

/// Levenberg–Marquardt over (focal, px0, py0, k1, yaw, cx, cy) on the pixel
/// residuals, with a central-difference Jacobian.
fn levenberg_marquardt(
    start: &CameraModel,
    samples: &[Sample],
) -> Result<CameraModel, CameraError> {
    const PARAMS: usize = 7;
    let pack =
        |m: &CameraModel| DVector::from_vec(vec![m.focal, m.px0, m.py0, m.k1, m.yaw, m.cx, m.cy]);
    let unpack = |p: &DVector<f64>| CameraModel {
        focal: p[0],
        px0: p[1],
        py0: p[2],
        k1: p[3],
        yaw: p[4],
        cx: p[5],
        cy: p[6],
        ..*start
    };
    let residuals = |p: &DVector<f64>| -> Option<DVector<f64>> {
        let m = unpack(p);
        let mut r = DVector::zeros(samples.len() * 2);
        for (i, s) in samples.iter().enumerate() {
            let p = m.project_unbounded(s.world)?;
            r[2 * i] = p[0] - s.pixel[0];
            r[2 * i + 1] = p[1] - s.pixel[1];
        }
        Some(r)
    };
    // Steps that suit each parameter's scale: pixels, a distortion
    // coefficient, radians, metres.
    let steps = [1e-3, 1e-3, 1e-3, 1e-6, 1e-7, 1e-6, 1e-6];
    let mut p = pack(start);
    let mut r = residuals(&p).ok_or(CameraError::Degenerate("points above the camera"))?;
    let mut lambda = 1e-3;
    for _ in 0..200 {
        let mut jacobian = DMatrix::zeros(r.len(), PARAMS);
        for (k, h) in steps.iter().enumerate() {
            let (mut up, mut down) = (p.clone(), p.clone());
            up[k] += h;
            down[k] -= h;
            let (Some(ru), Some(rd)) = (residuals(&up), residuals(&down)) else {
                return Err(CameraError::Degenerate("the fit left the image plane"));
            };
            jacobian.set_column(k, &((ru - rd) / (2.0 * h)));
        }
        let jtj = jacobian.tr_mul(&jacobian);
        let g = jacobian.tr_mul(&r);
        let mut improved = false;
        let mut converged = false;
        for _ in 0..12 {
            let mut a = jtj.clone();
            for k in 0..PARAMS {
                // Marquardt's scaling keeps the damping fair across units.
                a[(k, k)] += lambda * jtj[(k, k)].max(1e-12);
            }
            let Some(step) = a.cholesky().map(|c| c.solve(&(-&g))) else {
                lambda *= 10.0;
                continue;
            };
            let q = &p + &step;
            match residuals(&q) {
                Some(rq) if rq.norm_squared() <= r.norm_squared() => {
                    converged = r.norm_squared() - rq.norm_squared() <= 1e-14 * r.norm_squared()
                        || step.iter().zip(&steps).all(|(s, h)| s.abs() < h * 1e-3);
                    p = q;
                    r = rq;
                    lambda = (lambda / 10.0).max(1e-12);
                    improved = true;
                    break;
                }
                _ => lambda *= 10.0,
            }
        }
        if !improved || converged {
            break;
        }
    }
    let fitted = unpack(&p);
    // The fit is only as good as its worst-determined direction: a nearly
    // singular normal matrix means the points do not pin the camera down.
    let jtj = {
        let mut jacobian = DMatrix::zeros(r.len(), PARAMS);
        for (k, h) in steps.iter().enumerate() {
            let (mut up, mut down) = (p.clone(), p.clone());
            up[k] += h;
            down[k] -= h;
            if let (Some(ru), Some(rd)) = (residuals(&up), residuals(&down)) {
                jacobian.set_column(k, &((ru - rd) / (2.0 * h)));
            }
        }
        jacobian.tr_mul(&jacobian)
    };
    let scale = DVector::from_iterator(PARAMS, (0..PARAMS).map(|k| jtj[(k, k)].sqrt().max(1e-300)));
    let normalised = DMatrix::from_fn(PARAMS, PARAMS, |i, j| jtj[(i, j)] / (scale[i] * scale[j]));
    let eigen = SymmetricEigen::new(normalised).eigenvalues;
    if eigen.min() < 1e-10 * eigen.max() {
        return Err(CameraError::Degenerate(
            "the points leave a camera parameter undetermined",
        ));
    }
    Ok(fitted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn distorted() -> CameraModel {
        CameraModel {
            yaw: 0.3,
            cx: 0.2,
            cy: -0.1,
            k1: -0.15,
            k2: 0.02,
            ..CameraModel::default()
        }
    }

    proptest! {
        #[test]
        fn unproject_inverts_project_on_the_floor(
            x in -1.6f64..1.6, y in -1.2f64..1.2, z in 0.0f64..0.3,
        ) {
            let model = distorted();
            let Some(pixel) = model.project([x, y, z]) else {
                return Ok(());
            };
            let back = model.unproject(pixel, z);
            prop_assert!((back[0] - x).abs() < 1e-6 && (back[1] - y).abs() < 1e-6, "{back:?} vs {x} {y}");
        }

        #[test]
        fn any_sensible_camera_round_trips_every_pixel(
            focal in 450.0f64..900.0, k1 in -0.2f64..0.05, k2 in -0.01f64..0.02,
            yaw in -3.2f64..3.2, cx in -1.0f64..1.0, cy in -1.0f64..1.0,
            px0 in 300.0f64..340.0, py0 in 220.0f64..260.0,
            px in 0.0f64..640.0, py in 0.0f64..480.0, z in 0.0f64..0.5,
        ) {
            let model = CameraModel { focal, k1, k2, yaw, cx, cy, px0, py0, ..CameraModel::default() };
            prop_assume!(model.check().is_ok());
            let [x, y] = model.unproject([px, py], z);
            let again = model.project_unbounded([x, y, z]).unwrap();
            prop_assert!((again[0] - px).abs() < 1e-6 && (again[1] - py).abs() < 1e-6, "{again:?}");
            // And back on the floor, well under the 1 mm asked for.
            let back = model.unproject(again, z);
            prop_assert!((back[0] - x).hypot(back[1] - y) < 1e-6);
        }
    }

    #[test]
    fn every_pixel_of_a_strongly_distorted_image_round_trips() {
        let model = CameraModel {
            k1: -0.25,
            k2: 0.03,
            ..distorted()
        };
        model.check().unwrap();
        for i in 0..=64 {
            for j in 0..=48 {
                let pixel = [f64::from(i) * 9.999, f64::from(j) * 9.999];
                let [x, y] = model.unproject(pixel, LED_HEIGHT);
                let again = model.project_unbounded([x, y, LED_HEIGHT]).unwrap();
                assert!(
                    (again[0] - pixel[0]).abs() < 1e-7 && (again[1] - pixel[1]).abs() < 1e-7,
                    "{pixel:?} -> {again:?}"
                );
            }
        }
    }

    #[test]
    fn the_default_camera_sees_about_three_by_two_metres() {
        let m = CameraModel::default();
        m.check().unwrap();
        // The edges' midpoints: 3.08 m × 2.28 m of floor, 3.02 m × 2.24 m
        // at the LED's height.
        for (z, half_width, half_height) in [(0.0, 1.54, 1.14), (LED_HEIGHT, 1.51, 1.12)] {
            let left = m.unproject([0.0, 240.0], z);
            let top = m.unproject([320.0, 0.0], z);
            assert!((left[0] + half_width).abs() < 0.005, "{left:?}");
            assert!((top[1] - half_height).abs() < 0.005, "{top:?}");
        }
        assert!(m.project([1.0, 0.8, LED_HEIGHT]).is_some());
        assert_eq!(m.project([3.0, 0.0, LED_HEIGHT]), None);
        assert_eq!(m.project([0.0, 0.0, 3.0]), None, "above the camera");
    }

    #[test]
    fn seen_from_above_the_floor_axes_keep_their_handedness() {
        // World +x is right on the screen, world +y up (smaller py).
        let m = CameraModel::default();
        let right = m.project([0.5, 0.0, 0.0]).unwrap();
        let up = m.project([0.0, 0.5, 0.0]).unwrap();
        assert!(right[0] > 320.0 && (right[1] - 240.0).abs() < 1e-9);
        assert!(up[1] < 240.0 && (up[0] - 320.0).abs() < 1e-9);
        // A quarter turn of the camera turns the picture the other way.
        let turned = CameraModel {
            yaw: std::f64::consts::FRAC_PI_2,
            ..m
        };
        let p = turned.project([0.0, 0.5, 0.0]).unwrap();
        assert!(p[0] > 320.0, "{p:?}");
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
    fn impossible_cameras_are_refused() {
        let folding = CameraModel {
            k1: -0.6,
            ..CameraModel::default()
        };
        assert!(matches!(
            folding.check(),
            Err(CameraError::InvalidModel { field: "k1", .. })
        ));
        let m = CameraModel {
            focal: 0.0,
            ..CameraModel::default()
        };
        assert!(m.check().unwrap_err().to_string().contains("focal"));
        let m = CameraModel {
            height: f64::NAN,
            ..CameraModel::default()
        };
        assert_eq!(
            m.check().unwrap_err().to_string(),
            "camera model: height is not a finite number"
        );
    }

    /// `truth`'s view of a grid of LED positions, rounded like CamApp, with
    /// Gaussian pixel noise.
    fn measure(truth: &CameraModel, heights: &[f64], noise_px: f64, seed: u64) -> Vec<Sample> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut gauss = || {
            // Box–Muller: rand's distributions crate is not a dependency.
            let (u1, u2): (f64, f64) = (rng.random_range(1e-12..1.0), rng.random());
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        };
        let mut samples = Vec::new();
        for (n, &z) in heights.iter().enumerate() {
            // 9 × 7 points over the whole image, corners included.
            for i in -4..=4 {
                for j in -3..=3 {
                    let world = [
                        f64::from(i) * 0.36 + 0.05 * n as f64,
                        f64::from(j) * 0.36,
                        z,
                    ];
                    let Some(p) = truth.project(world) else {
                        continue;
                    };
                    let pixel = [
                        (p[0] + gauss() * noise_px).round(),
                        (p[1] + gauss() * noise_px).round(),
                    ];
                    samples.push(Sample { world, pixel });
                }
            }
        }
        samples
    }

    /// Largest floor distance between two cameras' readings of the image.
    fn floor_disagreement(a: &CameraModel, b: &CameraModel) -> f64 {
        let mut worst = 0.0_f64;
        for i in 0..=16 {
            for j in 0..=12 {
                let pixel = [f64::from(i) * 39.9, f64::from(j) * 39.9];
                let (p, q) = (
                    a.unproject(pixel, LED_HEIGHT),
                    b.unproject(pixel, LED_HEIGHT),
                );
                worst = worst.max((p[0] - q[0]).hypot(p[1] - q[1]));
            }
        }
        worst
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
        let samples = measure(&truth, &[LED_HEIGHT], 0.5, 7);
        assert!(samples.len() >= 30);
        let fit = CameraModel::default().calibrate(&samples).unwrap();
        let m = fit.model;
        // Rounding and 0.5 px noise are ~0.6 px, ~3 mm on the floor; the
        // tolerances hold for 200 noise seeds, not just this one.
        assert!(fit.rms_m < 0.005 && fit.max_m < 0.015, "{fit:?}");
        assert!(fit.rms_px < 1.0, "{fit:?}");
        assert_eq!(fit.residuals.len(), samples.len());
        assert!((m.focal - truth.focal).abs() < 5.0, "{m:?}");
        assert!((m.k1 - truth.k1).abs() < 0.02, "{m:?}");
        assert!((m.yaw - truth.yaw).abs() < 0.005, "{m:?}");
        // Principal point and camera position trade off against each other
        // (only the distortion centre tells them apart); what matters is
        // where the image lands on the floor.
        assert!(
            (m.cx - truth.cx).abs() < 0.05 && (m.cy - truth.cy).abs() < 0.05,
            "{m:?}"
        );
        let off = floor_disagreement(&m, &truth);
        assert!(off < 0.015, "fitted and true cameras differ by {off} m");
    }

    #[test]
    fn calibration_does_not_need_a_close_start() {
        // Turned 2 rad, shifted and zoomed: far from the default camera.
        let truth = CameraModel {
            cx: -0.4,
            cy: 0.3,
            yaw: 2.0,
            focal: 700.0,
            px0: 330.0,
            py0: 235.0,
            k1: -0.18,
            ..CameraModel::default()
        };
        let samples = measure(&truth, &[0.0, 0.15], 0.3, 11);
        let fit = CameraModel::default().calibrate(&samples).unwrap();
        assert!((fit.model.yaw - truth.yaw).abs() < 0.005, "{:?}", fit.model);
        let off = floor_disagreement(&fit.model, &truth);
        assert!(off < 0.01, "{off} m; {:?}", fit.model);
        assert!(fit.rms_m < 0.004, "{fit:?}");
    }

    #[test]
    fn exact_points_give_the_exact_camera() {
        let truth = CameraModel {
            yaw: -0.4,
            k1: -0.1,
            cx: 0.1,
            px0: 325.0,
            ..CameraModel::default()
        };
        let samples: Vec<Sample> = measure(&truth, &[0.0, 0.2], 0.0, 1)
            .into_iter()
            .map(|s| Sample {
                pixel: truth.project(s.world).unwrap(),
                ..s
            })
            .collect();
        let fit = CameraModel::default().calibrate(&samples).unwrap();
        assert!(fit.rms_m < 1e-6, "{fit:?}");
        assert!(
            (fit.model.focal - truth.focal).abs() < 1e-3,
            "{:?}",
            fit.model
        );
        assert!((fit.model.cx - truth.cx).abs() < 1e-5, "{:?}", fit.model);
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
        assert!(matches!(
            m.calibrate(&[s; 8]),
            Err(CameraError::Degenerate(_))
        ));
        let mut bad = vec![s; 8];
        bad[2].world[0] = f64::NAN;
        assert_eq!(m.calibrate(&bad), Err(CameraError::BadPoint { index: 2 }));
        bad[2].world = [0.0, 0.0, 3.0];
        assert_eq!(m.calibrate(&bad), Err(CameraError::BadPoint { index: 2 }));
        // Well spread along one line: the cross direction is unknown.
        let line: Vec<Sample> = (0..10)
            .map(|i| {
                let t = f64::from(i) * 0.2 - 1.0;
                (
                    [t, t * 0.5, 0.0],
                    m.project_unbounded([t, t * 0.5, 0.0]).unwrap(),
                )
                    .into()
            })
            .collect();
        let error = m.calibrate(&line).unwrap_err();
        assert!(matches!(error, CameraError::Degenerate(_)), "{error}");
        assert!(error.to_string().contains("one line"), "{error}");
        // A mirrored picture (world y flipped) is named as such.
        let mirrored: Vec<Sample> = measure(&m, &[0.0], 0.0, 3)
            .into_iter()
            .map(|s| Sample {
                world: [s.world[0], -s.world[1], s.world[2]],
                ..s
            })
            .collect();
        assert_eq!(m.calibrate(&mirrored), Err(CameraError::Mirrored));
    }
}
