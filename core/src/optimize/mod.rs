//! The general optimization configuration of thesis 5.7.2: a robot
//! configuration (appendix C.4) whose values are the starting point, plus
//! `<optimize>` rules as direct children of `<yamorconfig>`:
//!
//! ```xml
//! <optimize param="amplitude_0" min="0" max="1.2"/>     <!-- free, with bounds -->
//! <optimize param="amplitude_1" expr="amplitude_0()"/>  <!-- constrained -->
//! ```
//!
//! # Parameter names
//!
//! The thesis' names: the field, `_`, the module id, and for a CPG link the
//! second id ([`ParamName`]): `amplitude_<id>`, `offset_<id>`, `speed_<id>`,
//! `minangle_<id>`, `maxangle_<id>`, `phase_<from>_<to>`,
//! `weight_<from>_<to>`.
//!
//! A phase lag is one value per pair of modules: equation 6.1 only locks
//! consistently when φ_ba = −φ_ab, and the gait files store both directions
//! (the thesis' C.4.2 example and our quadruped: 0→1 is +π/2, 1→0 is −π/2).
//! Setting `phase_a_b` therefore sets the a→b link and, if a b→a link
//! exists, sets it to the negated value; `phase_a_b` and `phase_b_a` are
//! then the same parameter and may not both have a rule. A weight is set on
//! the named link only.
//!
//! # Applying values
//!
//! [`OptimizationConfig::apply`] copies the robot, sets the free parameters
//! (in file order) to the optimizer's values, then evaluates the constraints
//! in file order with the MathEval real engine. Every parameter of the robot
//! is a parameter function (`amplitude_2()` works whether or not
//! amplitude_2 is optimized), with the free values and the constraints
//! computed so far already in place. A constrained parameter's value in the
//! file is therefore only a placeholder: `apply` recomputes it.
//!
//! # Which way walks count
//!
//! `<yamorconfig direction="axis">` (not in the thesis) says how the
//! robot's gaits are valued when a run does not say: `axis` counts only
//! progress along the robot's long axis, `any` the thesis' distance in any
//! direction ([`Direction`]). A robot whose any-direction gaits walk
//! sideways declares `axis` in its optimize.xml; absent, a run counts any
//! direction.
//!
//! A configuration is validated when it is made: every rule names a
//! parameter the robot has, at most one rule per parameter, finite bounds
//! with the start value (the robot's value) inside, and every constraint
//! evaluates to a finite number at the start values.

use std::path::Path;

use crate::ModuleId;
use crate::config::{CpgLink, RobotConfig};
use crate::error::{Problem, XmlError};
use crate::evaluation::Direction;
use crate::matheval::{Context, Expr};
use crate::xml::{Source, number, read_xml_file};

pub(crate) mod param;
pub use param::{ApplyError, InvalidRule, ParamName, RuleError};

fn link(robot: &RobotConfig, from: ModuleId, to: ModuleId) -> Option<&CpgLink> {
    robot.module(from)?.cpg_links.iter().find(|l| l.to == to)
}

fn link_mut(robot: &mut RobotConfig, from: ModuleId, to: ModuleId) -> Option<&mut CpgLink> {
    robot
        .module_mut(from)?
        .cpg_links
        .iter_mut()
        .find(|l| l.to == to)
}

impl ParamName {
    /// The current value in `robot`, or `None` if it has no such module or
    /// link.
    #[must_use]
    pub fn get(&self, robot: &RobotConfig) -> Option<f64> {
        match *self {
            ParamName::Amplitude(m) => robot.module(m).map(|m| m.amplitude),
            ParamName::Offset(m) => robot.module(m).map(|m| m.offset),
            ParamName::Speed(m) => robot.module(m).map(|m| m.speed),
            ParamName::MinAngle(m) => robot.module(m).map(|m| m.min_angle),
            ParamName::MaxAngle(m) => robot.module(m).map(|m| m.max_angle),
            ParamName::Phase(a, b) => link(robot, a, b).map(|l| l.phase),
            ParamName::Weight(a, b) => link(robot, a, b).map(|l| l.weight),
        }
    }

    /// Sets the value (a phase also sets the reverse link to the negated
    /// value, see the module documentation); `false` if `robot` has no such
    /// module or link.
    pub fn set(&self, robot: &mut RobotConfig, value: f64) -> bool {
        match *self {
            ParamName::Amplitude(m) => robot.module_mut(m).map(|m| m.amplitude = value),
            ParamName::Offset(m) => robot.module_mut(m).map(|m| m.offset = value),
            ParamName::Speed(m) => robot.module_mut(m).map(|m| m.speed = value),
            ParamName::MinAngle(m) => robot.module_mut(m).map(|m| m.min_angle = value),
            ParamName::MaxAngle(m) => robot.module_mut(m).map(|m| m.max_angle = value),
            ParamName::Phase(a, b) => {
                let Some(forward) = link_mut(robot, a, b) else {
                    return false;
                };
                forward.phase = value;
                if a != b
                    && let Some(back) = link_mut(robot, b, a)
                {
                    back.phase = -value;
                }
                Some(())
            }
            ParamName::Weight(a, b) => link_mut(robot, a, b).map(|l| l.weight = value),
        }
        .is_some()
    }

    /// The phase of the reverse link, which setting this one also sets.
    fn reverse(&self) -> Option<ParamName> {
        match *self {
            ParamName::Phase(a, b) if a != b => Some(ParamName::Phase(b, a)),
            _ => None,
        }
    }

    /// Every parameter `robot` has, in file order: each module's five
    /// fields, then its links' phases and weights.
    #[must_use]
    pub fn all(robot: &RobotConfig) -> Vec<ParamName> {
        let mut out = Vec::new();
        for m in &robot.modules {
            out.extend([
                ParamName::Amplitude(m.id),
                ParamName::Offset(m.id),
                ParamName::Speed(m.id),
                ParamName::MinAngle(m.id),
                ParamName::MaxAngle(m.id),
            ]);
            for l in &m.cpg_links {
                out.push(ParamName::Phase(m.id, l.to));
                out.push(ParamName::Weight(m.id, l.to));
            }
        }
        out
    }
}

/// One `<optimize>` rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// A parameter the optimizer chooses within `[min, max]`.
    Free {
        param: ParamName,
        min: f64,
        max: f64,
    },
    /// A parameter computed from the others by a MathEval expression.
    Constrained { param: ParamName, expr: Expr },
}

impl Rule {
    #[must_use]
    pub fn param(&self) -> ParamName {
        match self {
            Rule::Free { param, .. } | Rule::Constrained { param, .. } => *param,
        }
    }
}

/// A free parameter as an optimizer sees it: name, bounds, and the value in
/// the file as the starting point.
#[derive(Debug, Clone, PartialEq)]
pub struct FreeParameter {
    pub name: String,
    pub min: f64,
    pub max: f64,
    pub start: f64,
    /// The range is one whole turn of a phase lag, so `min` and `max` are
    /// the same gait: an optimizer may wrap across them instead of treating
    /// them as walls (the best quadruped gaits lie near a lag of ±π).
    pub periodic: bool,
}

/// Whether a free `param` over `[min, max]` is an angle covering exactly one
/// turn (to 1e-6 rad, so `-3.141593` … `3.141593` in a file counts).
fn is_whole_turn(param: ParamName, min: f64, max: f64) -> bool {
    matches!(param, ParamName::Phase(..)) && ((max - min) - std::f64::consts::TAU).abs() < 1e-6
}

/// A free amplitude or offset must stay where its module's joint can go:
/// the servo clamps at its limits, so a range beyond them only adds gaits
/// that walk alike, and a best gait outside them is not the gait walked.
/// An amplitude may reach half the limits' span; an offset lies between
/// them. Limits that are themselves optimized move, so they are not judged.
fn check_joint_limits(
    robot: &RobotConfig,
    rules: &[Rule],
    param: ParamName,
    min: f64,
    max: f64,
) -> Result<(), RuleError> {
    let (ParamName::Amplitude(id) | ParamName::Offset(id)) = param else {
        return Ok(());
    };
    let limits_optimized = rules
        .iter()
        .any(|r| matches!(r.param(), ParamName::MinAngle(m) | ParamName::MaxAngle(m) if m == id));
    let Some(module) = robot.modules.iter().find(|m| m.id == id) else {
        return Ok(());
    };
    if limits_optimized {
        return Ok(());
    }
    // Limits written with three decimals (0.785 for π/4) must not refuse
    // the π/4 they mean.
    const SLACK: f64 = 1e-3;
    let (beyond, hint) = match param {
        ParamName::Amplitude(_) => (
            max > (module.max_angle - module.min_angle) / 2.0 + SLACK,
            "an amplitude reaches at most half their span",
        ),
        _ => (
            min < module.min_angle - SLACK || max > module.max_angle + SLACK,
            "an offset lies between them",
        ),
    };
    if beyond {
        return Err(RuleError::BeyondJointLimits {
            param,
            min,
            max,
            module: id,
            min_angle: module.min_angle,
            max_angle: module.max_angle,
            hint,
        });
    }
    Ok(())
}

/// A robot and the rules saying what to optimize. The fields are private
/// because they are validated together: every rule fits the robot.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizationConfig {
    robot: RobotConfig,
    rules: Vec<Rule>,
    direction: Option<Direction>,
}

/// The root's `direction`, if it has one; a name nobody knows is an
/// error at the root's line.
fn declared_direction(
    src: &Source<'_>,
    root: roxmltree::Node<'_, '_>,
) -> Result<Option<Direction>, XmlError> {
    let Some(text) = root.attribute("direction") else {
        return Ok(None);
    };
    text.trim().parse().map(Some).map_err(|_| {
        src.invalid(
            root,
            Problem::BadValue {
                name: "direction",
                value: text.to_owned(),
                expected: "direction (any or axis)",
            },
        )
    })
}

const RULE_ATTRIBUTES: [&str; 4] = ["param", "min", "max", "expr"];

impl OptimizationConfig {
    /// Checks `rules` against `robot` (see the module documentation).
    pub fn new(robot: RobotConfig, rules: Vec<Rule>) -> Result<Self, InvalidRule> {
        let count = rules.len();
        let fail = |index: usize, error: RuleError| InvalidRule {
            index,
            count,
            error: Box::new(error),
        };
        for (index, rule) in rules.iter().enumerate() {
            let param = rule.param();
            let Some(start) = param.get(&robot) else {
                return Err(fail(index, RuleError::UnknownParameter(param)));
            };
            for earlier in rules[..index].iter().map(Rule::param) {
                if earlier == param {
                    return Err(fail(index, RuleError::Duplicate(param)));
                }
                if param.reverse() == Some(earlier) {
                    return Err(fail(index, RuleError::ReversePhase { param, earlier }));
                }
            }
            if let Rule::Free { min, max, .. } = *rule {
                if !min.is_finite() || !max.is_finite() {
                    return Err(fail(index, RuleError::NonFiniteBounds { param, min, max }));
                }
                if min > max {
                    return Err(fail(index, RuleError::BoundsReversed { param, min, max }));
                }
                if !(min..=max).contains(&start) {
                    return Err(fail(
                        index,
                        RuleError::StartOutOfBounds {
                            param,
                            start,
                            min,
                            max,
                        },
                    ));
                }
                check_joint_limits(&robot, &rules, param, min, max)
                    .map_err(|error| fail(index, error))?;
            }
        }
        let config = OptimizationConfig {
            robot,
            rules,
            direction: None,
        };
        // A constraint that fails at the start values is a mistake in the
        // file, better reported now, with its line, than mid-run.
        let mut start = config.robot.clone();
        config
            .constrain(&mut start)
            .map_err(|(index, error)| fail(index, RuleError::AtStart(error)))?;
        Ok(config)
    }

    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, XmlError> {
        let path = path.as_ref();
        let text = read_xml_file(path)?;
        Self::from_xml_str(&path.display().to_string(), &text)
    }

    /// Parses the robot and the rules; `file` names the source in errors,
    /// which point at the offending `<optimize>` element.
    pub fn from_xml_str(file: &str, text: &str) -> Result<Self, XmlError> {
        let robot = RobotConfig::from_xml_str(file, text)?;
        let doc = Source::parse(file, text)?;
        let src = Source { file, doc: &doc };
        let mut rules = Vec::new();
        let mut nodes = Vec::new();
        for node in src.children(doc.root_element(), &["modulelist", "optimize"])? {
            if node.tag_name().name() == "optimize" {
                rules.push(read_rule(&src, node)?);
                nodes.push(node);
            }
        }
        let direction = declared_direction(&src, doc.root_element())?;
        Ok(OptimizationConfig::new(robot, rules)
            .map_err(|e| src.invalid(nodes[e.index], Problem::Optimize(e.error)))?
            .with_direction(direction))
    }

    /// The same configuration declaring which way its walks count.
    #[must_use]
    pub fn with_direction(mut self, direction: Option<Direction>) -> Self {
        self.direction = direction;
        self
    }

    /// Which way the file says its walks count, if it says
    /// (`<yamorconfig direction="…">`; see the module documentation).
    #[must_use]
    pub fn direction(&self) -> Option<Direction> {
        self.direction
    }

    /// Robot and rules as yamorconfig XML that reads back equal. Comments
    /// of the source file are not kept; expressions keep their text.
    #[must_use]
    pub fn to_xml_string(&self) -> String {
        let mut robot = self.robot.to_xml_string();
        if let Some(direction) = self.direction {
            robot = robot.replacen(
                "<yamorconfig>",
                &format!("<yamorconfig direction=\"{}\">", direction.name()),
                1,
            );
        }
        let rules: String = self
            .rules
            .iter()
            .map(|rule| match rule {
                Rule::Free { param, min, max } => format!(
                    "  <optimize param=\"{param}\" min=\"{}\" max=\"{}\"/>\n",
                    number(*min),
                    number(*max)
                ),
                Rule::Constrained { param, expr } => format!(
                    "  <optimize param=\"{param}\" expr=\"{}\"/>\n",
                    quick_xml::escape::escape(expr.source())
                ),
            })
            .collect();
        let at = robot.rfind("</yamorconfig>").unwrap_or(robot.len());
        format!("{}{rules}{}", &robot[..at], &robot[at..])
    }

    /// The robot with the starting values.
    #[must_use]
    pub fn robot(&self) -> &RobotConfig {
        &self.robot
    }

    /// The rules in file order.
    #[must_use]
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The free parameters in file order: the order of `apply`'s values.
    #[must_use]
    pub fn free_parameters(&self) -> Vec<FreeParameter> {
        self.free()
            .map(|(param, min, max)| FreeParameter {
                name: param.to_string(),
                min,
                max,
                start: param
                    .get(&self.robot)
                    .expect("OptimizationConfig::new checked every rule against the robot"),
                periodic: is_whole_turn(param, min, max),
            })
            .collect()
    }

    fn free(&self) -> impl Iterator<Item = (ParamName, f64, f64)> + '_ {
        self.rules.iter().filter_map(|rule| match *rule {
            Rule::Free { param, min, max } => Some((param, min, max)),
            Rule::Constrained { .. } => None,
        })
    }

    /// The robot with the free parameters set to `values` (in the order of
    /// [`free_parameters`](Self::free_parameters)) and the constraints
    /// applied.
    pub fn apply(&self, values: &[f64]) -> Result<RobotConfig, ApplyError> {
        let expected = self.free().count();
        if values.len() != expected {
            return Err(ApplyError::Length {
                expected,
                got: values.len(),
            });
        }
        let mut robot = self.robot.clone();
        for ((param, min, max), &value) in self.free().zip(values) {
            // Written so that NaN is out of bounds too.
            if !(value >= min && value <= max) {
                return Err(ApplyError::OutOfBounds {
                    param,
                    value,
                    min,
                    max,
                });
            }
            param.set(&mut robot, value);
        }
        self.constrain(&mut robot).map_err(|(_, error)| error)?;
        Ok(robot)
    }

    /// Evaluates the constraints in file order on `robot`; on failure, the
    /// index of the rule to blame.
    fn constrain(&self, robot: &mut RobotConfig) -> Result<(), (usize, ApplyError)> {
        let mut context = Context::new();
        for param in ParamName::all(robot) {
            if let Some(value) = param.get(robot) {
                context.set_parameter(&param.to_string(), value);
            }
        }
        for (index, rule) in self.rules.iter().enumerate() {
            let Rule::Constrained { param, expr } = rule else {
                continue;
            };
            let value = expr.eval_real(&context).map_err(|error| {
                let expr = expr.source().to_owned();
                let param = *param;
                (index, ApplyError::Constraint { param, expr, error })
            })?;
            if !value.is_finite() {
                let expr = expr.source().to_owned();
                let param = *param;
                return Err((index, ApplyError::NonFinite { param, expr, value }));
            }
            param.set(robot, value);
            context.set_parameter(&param.to_string(), value);
            if let Some(reverse) = param.reverse()
                && let Some(value) = reverse.get(robot)
            {
                context.set_parameter(&reverse.to_string(), value);
            }
        }
        // Only limits a rule wrote can have crossed: the robot's own were
        // checked when it was read. The last rule writing them is to blame.
        for (index, rule) in self.rules.iter().enumerate().rev() {
            if let ParamName::MinAngle(id) | ParamName::MaxAngle(id) = rule.param()
                && let Some(module) = robot.module(id)
                && module.min_angle > module.max_angle
            {
                return Err((
                    index,
                    ApplyError::LimitsCrossed {
                        module: id,
                        min: module.min_angle,
                        max: module.max_angle,
                    },
                ));
            }
        }
        Ok(())
    }
}

/// One `<optimize>` element, checked on its own; [`OptimizationConfig::new`]
/// checks it against the robot.
fn read_rule(src: &Source<'_>, node: roxmltree::Node<'_, '_>) -> Result<Rule, XmlError> {
    let bad = |error: RuleError| src.invalid(node, Problem::Optimize(Box::new(error)));
    if let Some(unknown) = node
        .attributes()
        .find(|a| !RULE_ATTRIBUTES.contains(&a.name()))
    {
        return Err(bad(RuleError::UnknownAttribute(unknown.name().to_owned())));
    }
    let param: ParamName = src.required(node, "param")?.parse().map_err(bad)?;
    let has_bounds = node.has_attribute("min") || node.has_attribute("max");
    match (has_bounds, node.attribute("expr")) {
        (true, Some(_)) => Err(bad(RuleError::BoundsAndExpr(param))),
        (false, None) => Err(bad(RuleError::NoBoundsNorExpr(param))),
        (true, None) => Ok(Rule::Free {
            param,
            min: src.finite(node, "min")?,
            max: src.finite(node, "max")?,
        }),
        (false, Some(text)) => match Expr::parse(text) {
            Ok(expr) => Ok(Rule::Constrained { param, expr }),
            Err(error) => Err(bad(RuleError::BadExpr {
                param,
                text: text.to_owned(),
                error,
            })),
        },
    }
}
