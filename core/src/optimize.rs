//! The general optimization configuration of thesis 5.7.2: a robot
//! configuration plus `<optimize>` rules, as direct children of
//! `<yamorconfig>`:
//!
//! ```xml
//! <optimize param="amplitude_0" min="0" max="1.2"/>          <!-- free -->
//! <optimize param="amplitude_1" expr="amplitude_0()"/>       <!-- constrained -->
//! ```
//!
//! Parameter names (thesis: the parameter, `_`, the module id, and for links
//! the second id): `amplitude_<id>`, `offset_<id>`, `speed_<id>`,
//! `minangle_<id>`, `maxangle_<id>`, `phase_<from>_<to>`, `weight_<from>_<to>`.
//!
//! Phases are antisymmetric: equation 6.1 only locks consistently when
//! φ_ba = −φ_ab, and our gait files store both directions. Setting
//! `phase_a_b` therefore sets the a→b link and, if a b→a link exists, sets it
//! to the negated value. Weights are set on the named link only.
//!
//! [`OptimizationConfig::apply`] merges a vector of free values into a copy
//! of the robot and evaluates the constraints in file order; each constraint
//! sees every robot parameter (as a MathEval parameter function) with the
//! free values and earlier constraints already applied.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::ModuleId;
use crate::config::RobotConfig;
use crate::error::{Problem, XmlError};
use crate::matheval::{Context, Expr};
use crate::xml::{Source, XmlOut, number, read_file};

/// Which field of which module or link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamName {
    Amplitude(ModuleId),
    Offset(ModuleId),
    Speed(ModuleId),
    MinAngle(ModuleId),
    MaxAngle(ModuleId),
    Phase(ModuleId, ModuleId),
    Weight(ModuleId, ModuleId),
}

impl fmt::Display for ParamName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamName::Amplitude(m) => write!(f, "amplitude_{m}"),
            ParamName::Offset(m) => write!(f, "offset_{m}"),
            ParamName::Speed(m) => write!(f, "speed_{m}"),
            ParamName::MinAngle(m) => write!(f, "minangle_{m}"),
            ParamName::MaxAngle(m) => write!(f, "maxangle_{m}"),
            ParamName::Phase(a, b) => write!(f, "phase_{a}_{b}"),
            ParamName::Weight(a, b) => write!(f, "weight_{a}_{b}"),
        }
    }
}

impl FromStr for ParamName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || -> String {
            format!(
                "{s:?} is not a parameter name (amplitude_<id>, offset_<id>, speed_<id>, minangle_<id>, maxangle_<id>, phase_<from>_<to>, weight_<from>_<to>)"
            )
        };
        let mut parts = s.trim().split('_');
        let kind = parts.next().ok_or_else(bad)?;
        let ids: Vec<ModuleId> = parts
            .map(|p| p.parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        Ok(match (kind, &ids[..]) {
            ("amplitude", &[m]) => ParamName::Amplitude(m),
            ("offset", &[m]) => ParamName::Offset(m),
            ("speed", &[m]) => ParamName::Speed(m),
            ("minangle", &[m]) => ParamName::MinAngle(m),
            ("maxangle", &[m]) => ParamName::MaxAngle(m),
            ("phase", &[a, b]) => ParamName::Phase(a, b),
            ("weight", &[a, b]) => ParamName::Weight(a, b),
            _ => return Err(bad()),
        })
    }
}

impl ParamName {
    /// The current value in `robot`, or `None` if the module or link is missing.
    #[must_use]
    pub fn get(&self, robot: &RobotConfig) -> Option<f64> {
        let link = |a: ModuleId, b: ModuleId| robot.module(a)?.cpg_links.iter().find(|l| l.to == b);
        match *self {
            ParamName::Amplitude(m) => robot.module(m).map(|m| m.amplitude),
            ParamName::Offset(m) => robot.module(m).map(|m| m.offset),
            ParamName::Speed(m) => robot.module(m).map(|m| m.speed),
            ParamName::MinAngle(m) => robot.module(m).map(|m| m.min_angle),
            ParamName::MaxAngle(m) => robot.module(m).map(|m| m.max_angle),
            ParamName::Phase(a, b) => link(a, b).map(|l| l.phase),
            ParamName::Weight(a, b) => link(a, b).map(|l| l.weight),
        }
    }

    /// Sets the value; `false` if the module or link is missing.
    pub fn set(&self, robot: &mut RobotConfig, value: f64) -> bool {
        fn link(robot: &mut RobotConfig, a: ModuleId, b: ModuleId) -> Option<&mut crate::CpgLink> {
            robot
                .module_mut(a)?
                .cpg_links
                .iter_mut()
                .find(|l| l.to == b)
        }
        match *self {
            ParamName::Amplitude(m) => robot.module_mut(m).map(|m| m.amplitude = value).is_some(),
            ParamName::Offset(m) => robot.module_mut(m).map(|m| m.offset = value).is_some(),
            ParamName::Speed(m) => robot.module_mut(m).map(|m| m.speed = value).is_some(),
            ParamName::MinAngle(m) => robot.module_mut(m).map(|m| m.min_angle = value).is_some(),
            ParamName::MaxAngle(m) => robot.module_mut(m).map(|m| m.max_angle = value).is_some(),
            ParamName::Phase(a, b) => {
                let Some(l) = link(robot, a, b) else {
                    return false;
                };
                l.phase = value;
                if let Some(back) = link(robot, b, a) {
                    back.phase = -value;
                }
                true
            }
            ParamName::Weight(a, b) => link(robot, a, b).map(|l| l.weight = value).is_some(),
        }
    }

    /// Every parameter `robot` has, in file order.
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
    Free {
        param: ParamName,
        min: f64,
        max: f64,
    },
    Constrained {
        param: ParamName,
        expr: Expr,
        text: String,
    },
}

impl Rule {
    #[must_use]
    pub fn param(&self) -> ParamName {
        match self {
            Rule::Free { param, .. } | Rule::Constrained { param, .. } => *param,
        }
    }
}

/// A free parameter: name, bounds, and its value in the file (the start).
#[derive(Debug, Clone, PartialEq)]
pub struct FreeParameter {
    pub name: String,
    pub min: f64,
    pub max: f64,
    pub start: f64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApplyError {
    #[error("expected {expected} values, got {got}")]
    Length { expected: usize, got: usize },
    #[error("{name} = {value} lies outside [{min}, {max}]")]
    OutOfBounds {
        name: String,
        value: f64,
        min: f64,
        max: f64,
    },
    #[error("constraint {name} = {expr}: {why}")]
    Constraint {
        name: String,
        expr: String,
        why: String,
    },
}

/// A robot and the rules saying what to optimize.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizationConfig {
    pub robot: RobotConfig,
    pub rules: Vec<Rule>,
}

impl OptimizationConfig {
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, XmlError> {
        let path = path.as_ref();
        let text = read_file(path)?;
        Self::from_xml_str(&path.display().to_string(), &text)
    }

    /// Parses robot and rules; every rule is checked against the robot.
    pub fn from_xml_str(file: &str, text: &str) -> Result<Self, XmlError> {
        let robot = RobotConfig::from_xml_str(file, text)?;
        let doc = Source::parse(file, text)?;
        let src = Source { file, doc: &doc };
        let mut rules: Vec<Rule> = Vec::new();
        for node in src.children(doc.root_element(), &["modulelist", "optimize"])? {
            if node.tag_name().name() != "optimize" {
                continue;
            }
            let bad = |why: String| src.invalid(node, Problem::Optimize(why));
            let name = src.required(node, "param")?;
            let param: ParamName = name.parse().map_err(bad)?;
            let Some(current) = param.get(&robot) else {
                return Err(bad(format!(
                    "{param} names a module or link the robot does not have"
                )));
            };
            if rules.iter().any(|r| r.param() == param) {
                return Err(bad(format!("{param} has two rules")));
            }
            let has_bounds = node.has_attribute("min") || node.has_attribute("max");
            let rule = match (has_bounds, node.attribute("expr")) {
                (true, Some(_)) => {
                    return Err(bad(format!("{param}: give min/max or expr, not both")));
                }
                (false, None) => return Err(bad(format!("{param}: give min and max, or expr"))),
                (true, None) => {
                    let min = src.finite(node, "min")?;
                    let max = src.finite(node, "max")?;
                    if min > max {
                        return Err(bad(format!("{param}: min {min} is greater than max {max}")));
                    }
                    if !(min..=max).contains(&current) {
                        return Err(bad(format!(
                            "{param}: its value in the file, {current}, lies outside [{min}, {max}]"
                        )));
                    }
                    Rule::Free { param, min, max }
                }
                (false, Some(text)) => {
                    let expr = Expr::parse(text)
                        .map_err(|e| bad(format!("{param}: expr {text:?}: {e}")))?;
                    Rule::Constrained {
                        param,
                        expr,
                        text: text.to_owned(),
                    }
                }
            };
            rules.push(rule);
        }
        let config = OptimizationConfig { robot, rules };
        // A constraint that cannot be evaluated at the start is a file error.
        let start: Vec<f64> = config.free_parameters().iter().map(|p| p.start).collect();
        if let Err(e) = config.apply(&start) {
            return Err(XmlError::Invalid {
                file: file.to_owned(),
                line: 1,
                element: "optimize".into(),
                problem: Problem::Optimize(e.to_string()),
            });
        }
        Ok(config)
    }

    /// Robot and rules as yamorconfig XML that reads back identically.
    #[must_use]
    pub fn to_xml_string(&self) -> String {
        let robot = self.robot.to_xml_string();
        let mut out = XmlOut::new();
        for rule in &self.rules {
            match rule {
                Rule::Free { param, min, max } => out.empty(
                    "optimize",
                    &[
                        ("param", param.to_string()),
                        ("min", number(*min)),
                        ("max", number(*max)),
                    ],
                ),
                Rule::Constrained { param, text, .. } => {
                    out.empty(
                        "optimize",
                        &[("param", param.to_string()), ("expr", text.clone())],
                    );
                }
            }
        }
        let rules = out.finish();
        let rules = rules
            .lines()
            .filter(|l| l.trim_start().starts_with("<optimize"))
            .map(|l| format!("  {}\n", l.trim()))
            .collect::<String>();
        let at = robot
            .rfind("</yamorconfig>")
            .expect("robot XML closes its root");
        format!("{}{}{}", &robot[..at], rules, &robot[at..])
    }

    /// The free parameters in file order.
    #[must_use]
    pub fn free_parameters(&self) -> Vec<FreeParameter> {
        self.rules
            .iter()
            .filter_map(|r| match r {
                Rule::Free { param, min, max } => Some(FreeParameter {
                    name: param.to_string(),
                    min: *min,
                    max: *max,
                    start: param.get(&self.robot).expect("checked when parsed"),
                }),
                Rule::Constrained { .. } => None,
            })
            .collect()
    }

    /// The robot with the free parameters set to `values` and the
    /// constraints applied.
    pub fn apply(&self, values: &[f64]) -> Result<RobotConfig, ApplyError> {
        let free: Vec<(&ParamName, f64, f64)> = self
            .rules
            .iter()
            .filter_map(|r| match r {
                Rule::Free { param, min, max } => Some((param, *min, *max)),
                Rule::Constrained { .. } => None,
            })
            .collect();
        if free.len() != values.len() {
            return Err(ApplyError::Length {
                expected: free.len(),
                got: values.len(),
            });
        }
        let mut robot = self.robot.clone();
        for ((param, min, max), &value) in free.iter().zip(values) {
            if !(value >= *min && value <= *max) {
                return Err(ApplyError::OutOfBounds {
                    name: param.to_string(),
                    value,
                    min: *min,
                    max: *max,
                });
            }
            param.set(&mut robot, value);
        }
        for rule in &self.rules {
            let Rule::Constrained { param, expr, text } = rule else {
                continue;
            };
            let mut context = Context::new();
            for p in ParamName::all(&robot) {
                if let Some(v) = p.get(&robot) {
                    context.set_parameter(&p.to_string(), v);
                }
            }
            let fail = |why: String| ApplyError::Constraint {
                name: param.to_string(),
                expr: text.clone(),
                why,
            };
            let value = expr.eval_real(&context).map_err(|e| fail(e.to_string()))?;
            if !value.is_finite() {
                return Err(fail(format!("the value is {value}")));
            }
            param.set(&mut robot, value);
        }
        Ok(robot)
    }
}
