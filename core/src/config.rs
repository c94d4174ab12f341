//! The robot configuration of thesis appendix C.4: the `yamorconfig` XML.
//!
//! ```xml
//! <yamorconfig>
//!   <modulelist>
//!     <module id="6" amplitude="1.04" offset="1.04" speed="0.6"
//!             minangle="-1.57" maxangle="1.57">
//!       <bluetooth to="7"/>
//!       <cpglink to="12" phase="-2.09" weight="1.0"/>
//!     </module>
//!   </modulelist>
//! </yamorconfig>
//! ```
//!
//! The schema of C.4.1 names the identifier `realid`, the example of C.4.2
//! writes `id`; both are accepted and the one that was read is written back.
//! `speed` is the oscillator frequency ω in rad/s (Tables A.1, A.2).
//! `motion="rotate"` (not in the thesis; for the Roombots' continuous
//! joints) makes the joint turn round at the oscillator's phase instead of
//! swinging about its offset; absent, the joint oscillates.
//! A `cpglink` on module *i* pointing `to` *j* is the coupling term of *i*'s
//! phase equation, so in steady state φ_j − φ_i = phase.

use crate::ModuleId;
use crate::error::{Problem, XmlError};
use crate::xml::{Source, XmlOut, number, read_xml_file};
use std::collections::HashSet;
use std::path::Path;

/// Which attribute carried the module id in the source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IdAttribute {
    /// `id="…"` as in the C.4.2 example.
    #[default]
    Id,
    /// `realid="…"` as in the C.4.1 schema.
    RealId,
}

/// One CPG coupling from the owning module's oscillator to another one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpgLink {
    pub to: ModuleId,
    /// Phase bias ϕ_ij in radians.
    pub phase: f64,
    /// Coupling weight w_ij.
    pub weight: f64,
}

/// One module of the robot configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleConfig {
    pub id: ModuleId,
    /// Target amplitude R in radians.
    pub amplitude: f64,
    /// Target offset X in radians.
    pub offset: f64,
    /// Oscillator frequency ω in rad/s.
    pub speed: f64,
    /// Lower limit angle in radians.
    pub min_angle: f64,
    /// Upper limit angle in radians.
    pub max_angle: f64,
    /// The module this one opens a Bluetooth link to, if any.
    pub bluetooth_to: Option<ModuleId>,
    pub cpg_links: Vec<CpgLink>,
    /// How the joint follows its oscillator.
    pub motion: Motion,
}

/// How a joint follows its oscillator (`crate::cpg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Motion {
    /// θ = x + r cos φ: a swing about the offset (the thesis' CPG).
    #[default]
    Oscillate,
    /// θ = x + φ: the joint turns round continuously at the oscillator's
    /// frequency, the offset shifting where the turn starts; only a joint
    /// without stops can follow it (a Roombot's, not a YaMoR servo's).
    Rotate,
}

impl Motion {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Motion::Oscillate => "oscillate",
            Motion::Rotate => "rotate",
        }
    }
}

impl ModuleConfig {
    /// A module at rest: no amplitude, no offset, full ±90° range.
    #[must_use]
    pub fn at_rest(id: ModuleId) -> Self {
        Self {
            id,
            amplitude: 0.0,
            offset: 0.0,
            speed: 0.0,
            min_angle: -std::f64::consts::FRAC_PI_2,
            max_angle: std::f64::consts::FRAC_PI_2,
            bluetooth_to: None,
            cpg_links: Vec::new(),
            motion: Motion::Oscillate,
        }
    }
}

/// A whole robot configuration: modules in file order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RobotConfig {
    pub modules: Vec<ModuleConfig>,
    pub id_attribute: IdAttribute,
}

impl RobotConfig {
    /// Reads and validates a `yamorconfig` file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, XmlError> {
        let path = path.as_ref();
        Self::from_xml_str(&path.display().to_string(), &read_xml_file(path)?)
    }

    /// Parses and validates `yamorconfig` XML; `file` names the source in errors.
    pub fn from_xml_str(file: &str, text: &str) -> Result<Self, XmlError> {
        let doc = Source::parse(file, text)?;
        let src = Source { file, doc: &doc };
        let root = doc.root_element();
        if root.tag_name().name() != "yamorconfig" {
            return Err(src.invalid(
                root,
                Problem::WrongRoot {
                    expected: "yamorconfig",
                },
            ));
        }
        // <optimize> rules (thesis 5.7.2) may sit beside the module list;
        // `OptimizationConfig` reads them.
        let lists: Vec<_> = src
            .children(root, &["modulelist", "optimize"])?
            .into_iter()
            .filter(|n| n.tag_name().name() == "modulelist")
            .collect();
        let list = match lists[..] {
            [list] => list,
            [] => return Err(src.invalid(root, Problem::MissingElement("modulelist"))),
            [_, second, ..] => {
                return Err(
                    src.invalid(second, Problem::UnexpectedElement("modulelist".to_owned()))
                );
            }
        };
        let mut config = RobotConfig::default();
        let mut module_nodes = Vec::new();
        let mut seen = HashSet::new();
        for (index, node) in src.children(list, &["module"])?.into_iter().enumerate() {
            let (id, attribute) = read_id(&src, node)?;
            if index == 0 {
                config.id_attribute = attribute;
            }
            if !seen.insert(id) {
                return Err(src.invalid(node, Problem::DuplicateId(id)));
            }
            let module = read_module(&src, node, id)?;
            config.modules.push(module);
            module_nodes.push(node);
        }
        // A robot without modules walks nowhere at 0 m/s, which looks like
        // a result; say what is wrong instead.
        if config.modules.is_empty() {
            return Err(src.invalid(list, Problem::NoModules));
        }
        // Links may point forward in the file, so check them once all ids are known.
        for node in &module_nodes {
            for child in src.children(*node, &["bluetooth", "cpglink"])? {
                let target = src.unsigned(child, "to")?;
                if !seen.contains(&target) {
                    return Err(src.invalid(child, Problem::UnknownModule(target)));
                }
            }
        }
        let mut parents = HashSet::new();
        for (module, node) in config.modules.iter().zip(&module_nodes) {
            if let Some(to) = module.bluetooth_to
                && !parents.insert(to)
            {
                return Err(src.invalid(*node, Problem::BluetoothFanIn(to)));
            }
        }
        Ok(config)
    }

    /// Serialises to `yamorconfig` XML that [`RobotConfig::from_xml_str`] reads back identically.
    #[must_use]
    pub fn to_xml_string(&self) -> String {
        let mut out = XmlOut::new();
        out.open("yamorconfig", &[]);
        out.open("modulelist", &[]);
        let id_name = match self.id_attribute {
            IdAttribute::Id => "id",
            IdAttribute::RealId => "realid",
        };
        for module in &self.modules {
            let attributes = [
                (id_name, module.id.to_string()),
                ("amplitude", number(module.amplitude)),
                ("offset", number(module.offset)),
                ("speed", number(module.speed)),
                ("minangle", number(module.min_angle)),
                ("maxangle", number(module.max_angle)),
            ];
            let rotate = [("motion", Motion::Rotate.as_str().to_owned())];
            let attributes: Vec<(&str, String)> = if module.motion == Motion::Rotate {
                attributes.into_iter().chain(rotate).collect()
            } else {
                attributes.into_iter().collect()
            };
            if module.bluetooth_to.is_none() && module.cpg_links.is_empty() {
                out.empty("module", &attributes);
                continue;
            }
            out.open("module", &attributes);
            if let Some(to) = module.bluetooth_to {
                out.empty("bluetooth", &[("to", to.to_string())]);
            }
            for link in &module.cpg_links {
                out.empty(
                    "cpglink",
                    &[
                        ("to", link.to.to_string()),
                        ("phase", number(link.phase)),
                        ("weight", number(link.weight)),
                    ],
                );
            }
            out.close("module");
        }
        out.close("modulelist");
        out.close("yamorconfig");
        out.finish()
    }

    #[must_use]
    pub fn module(&self, id: ModuleId) -> Option<&ModuleConfig> {
        self.modules.iter().find(|m| m.id == id)
    }

    pub fn module_mut(&mut self, id: ModuleId) -> Option<&mut ModuleConfig> {
        self.modules.iter_mut().find(|m| m.id == id)
    }

    /// The Bluetooth tree as (from, to) edges in file order. C.2.1: the first
    /// edge starts at the master node.
    pub fn bluetooth_edges(&self) -> impl Iterator<Item = (ModuleId, ModuleId)> + '_ {
        self.modules
            .iter()
            .filter_map(|m| m.bluetooth_to.map(|to| (m.id, to)))
    }
}

fn read_id(
    src: &Source<'_>,
    node: roxmltree::Node<'_, '_>,
) -> Result<(ModuleId, IdAttribute), XmlError> {
    let id = node
        .attribute("id")
        .map(|text| src.unsigned_value(node, "id", text))
        .transpose()?;
    let realid = node
        .attribute("realid")
        .map(|text| src.unsigned_value(node, "realid", text))
        .transpose()?;
    match (id, realid) {
        (Some(id), None) => Ok((id, IdAttribute::Id)),
        (None, Some(realid)) => Ok((realid, IdAttribute::RealId)),
        (Some(id), Some(realid)) if id == realid => Ok((id, IdAttribute::Id)),
        (Some(id), Some(realid)) => Err(src.invalid(node, Problem::IdMismatch { id, realid })),
        (None, None) => Err(src.invalid(node, Problem::MissingAttribute("id"))),
    }
}

fn read_module(
    src: &Source<'_>,
    node: roxmltree::Node<'_, '_>,
    id: ModuleId,
) -> Result<ModuleConfig, XmlError> {
    let min_angle = src.finite(node, "minangle")?;
    let max_angle = src.finite(node, "maxangle")?;
    let module = ModuleConfig {
        id,
        amplitude: src.finite(node, "amplitude")?,
        offset: src.finite(node, "offset")?,
        speed: src.finite(node, "speed")?,
        min_angle,
        max_angle,
        bluetooth_to: None,
        cpg_links: Vec::new(),
        motion: match node.attribute("motion") {
            None | Some("oscillate") => Motion::Oscillate,
            Some("rotate") => Motion::Rotate,
            Some(other) => {
                return Err(src.invalid(
                    node,
                    Problem::BadValue {
                        name: "motion",
                        value: other.to_owned(),
                        expected: "motion (oscillate or rotate)",
                    },
                ));
            }
        },
    };
    if min_angle > max_angle {
        return Err(src.invalid(
            node,
            Problem::MinAboveMax {
                min: min_angle,
                max: max_angle,
            },
        ));
    }
    let mut module = module;
    for child in src.children(node, &["bluetooth", "cpglink"])? {
        match child.tag_name().name() {
            "bluetooth" => {
                if module.bluetooth_to.is_some() {
                    return Err(
                        src.invalid(child, Problem::UnexpectedElement("bluetooth".to_owned()))
                    );
                }
                module.bluetooth_to = Some(src.unsigned(child, "to")?);
            }
            _ => module.cpg_links.push(CpgLink {
                to: src.unsigned(child, "to")?,
                phase: src.finite(child, "phase")?,
                weight: src.finite(child, "weight")?,
            }),
        }
    }
    Ok(module)
}
