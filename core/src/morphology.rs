//! How modules are physically assembled: the robot's "world" file.
//!
//! ```xml
//! <morphology central="4">
//!   <module id="4" passive="true"/>
//!   <module id="0"/>
//!   <connect idfrom="0" connfrom="rear" idto="4" connto="left" angle="90"/>
//! </morphology>
//! ```
//!
//! * `family` names the module family: `yamor` (the default) is read here;
//!   `roombots` is the Roombots' (seed 002), read by `yamor-roombots`,
//!   and refused here with a sentence that says so.
//! * `central` is the module whose position is the robot position (it carries
//!   the tracking LED, thesis 6.2.1). It is placed first; every other module
//!   is placed through the connections, which must reach all modules.
//! * `<module passive="true">` is an inactive module: same body, no servo,
//!   its handle rigidly fixed at 0 rad.
//! * `<connect>` uses the vocabulary of the C.2.7 transformation scripts: the
//!   connector `connfrom` of module `idfrom` is mated to connector `connto` of
//!   module `idto`, rotated by `angle` degrees about the connector normal
//!   (a multiple of 15°, as the real screw allows). Connectors are `front`
//!   (the tip of the moving handle), `rear`, `left`, `right`, `top`, `bottom`.
//!   Each connector holds at most one connection.
//!
//! The connector geometry lives in the simulator; this module only checks
//! that the description is self-consistent.

use crate::ModuleId;
use crate::error::{Problem, XmlError};
use crate::xml::{Source, XmlOut, number, read_xml_file};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// The six connectors of a YaMoR module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Connector {
    /// On the tip of the servo-driven handle.
    Front,
    Rear,
    Left,
    Right,
    Top,
    Bottom,
}

impl Connector {
    pub const ALL: [Connector; 6] = [
        Connector::Front,
        Connector::Rear,
        Connector::Left,
        Connector::Right,
        Connector::Top,
        Connector::Bottom,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Connector::Front => "front",
            Connector::Rear => "rear",
            Connector::Left => "left",
            Connector::Right => "right",
            Connector::Top => "top",
            Connector::Bottom => "bottom",
        }
    }

    /// Stable small integer used on the wire.
    #[must_use]
    pub fn code(self) -> u8 {
        self as u8
    }

    #[must_use]
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.get(usize::from(code)).copied()
    }
}

impl fmt::Display for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Connector {
    type Err = Problem;
    fn from_str(s: &str) -> Result<Self, Problem> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == s.trim())
            .ok_or_else(|| Problem::UnknownConnector(s.to_owned()))
    }
}

/// One module of the morphology.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MorphologyModule {
    pub id: ModuleId,
    /// An inactive module has no servo: its handle is rigid.
    pub passive: bool,
}

/// A physical connection between two connectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connection {
    pub id_from: ModuleId,
    pub conn_from: Connector,
    pub id_to: ModuleId,
    pub conn_to: Connector,
    /// Rotation about the connector normal, a multiple of 15°.
    pub angle_deg: i32,
}

impl Connection {
    /// Checks the angle is one the screw connector allows.
    pub fn check_angle(angle_deg: f64) -> Result<i32, Problem> {
        let steps = angle_deg / 15.0;
        if !angle_deg.is_finite() || steps.fract() != 0.0 || steps.abs() > 1e6 {
            return Err(Problem::AngleNotMultipleOf15(angle_deg));
        }
        Ok(angle_deg as i32)
    }

    /// Whether this connection uses `connector` of `module`.
    #[must_use]
    pub fn uses(&self, module: ModuleId, connector: Connector) -> bool {
        (self.id_from == module && self.conn_from == connector)
            || (self.id_to == module && self.conn_to == connector)
    }

    #[must_use]
    pub fn involves(&self, module: ModuleId) -> bool {
        self.id_from == module || self.id_to == module
    }
}

/// A validated physical assembly of modules.
#[derive(Debug, Clone, PartialEq)]
pub struct Morphology {
    pub central: ModuleId,
    pub modules: Vec<MorphologyModule>,
    pub connections: Vec<Connection>,
}

impl Morphology {
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, XmlError> {
        let path = path.as_ref();
        Self::from_xml_str(&path.display().to_string(), &read_xml_file(path)?)
    }

    pub fn from_xml_str(file: &str, text: &str) -> Result<Self, XmlError> {
        let doc = Source::parse(file, text)?;
        let src = Source { file, doc: &doc };
        let root = doc.root_element();
        if root.tag_name().name() != "morphology" {
            return Err(src.invalid(
                root,
                Problem::WrongRoot {
                    expected: "morphology",
                },
            ));
        }
        // The module family: YaMoR's unless it says otherwise. Another
        // family's robot is read by its own crate (`yamor-roombots`).
        match root.attribute("family") {
            None | Some("yamor") => {}
            Some(family) => {
                return Err(src.invalid(root, Problem::OtherFamily(family.to_owned())));
            }
        }
        let central = src.unsigned(root, "central")?;
        let mut modules = Vec::new();
        let mut connections = Vec::new();
        let mut ids = HashSet::new();
        let mut connect_nodes = Vec::new();
        for node in src.children(root, &["module", "connect"])? {
            if node.tag_name().name() == "module" {
                let id = src.unsigned(node, "id")?;
                if !ids.insert(id) {
                    return Err(src.invalid(node, Problem::DuplicateId(id)));
                }
                modules.push(MorphologyModule {
                    id,
                    passive: src.boolean(node, "passive", false)?,
                });
            } else {
                connect_nodes.push(node);
            }
        }
        if !ids.contains(&central) {
            return Err(src.invalid(root, Problem::UnknownModule(central)));
        }
        let mut used = HashSet::new();
        for node in connect_nodes {
            let connection = read_connection(&src, node)?;
            for id in [connection.id_from, connection.id_to] {
                if !ids.contains(&id) {
                    return Err(src.invalid(node, Problem::UnknownModule(id)));
                }
            }
            for (module, connector) in [
                (connection.id_from, connection.conn_from),
                (connection.id_to, connection.conn_to),
            ] {
                if !used.insert((module, connector)) {
                    return Err(src.invalid(
                        node,
                        Problem::ConnectorInUse {
                            module,
                            connector: connector.to_string(),
                        },
                    ));
                }
            }
            connections.push(connection);
        }
        let morphology = Morphology {
            central,
            modules,
            connections,
        };
        if let Some(lost) = morphology.unreachable_modules().first() {
            return Err(src.invalid(root, Problem::Unreachable(*lost)));
        }
        Ok(morphology)
    }

    #[must_use]
    pub fn to_xml_string(&self) -> String {
        let mut out = XmlOut::new();
        out.open("morphology", &[("central", self.central.to_string())]);
        for module in &self.modules {
            let mut attributes = vec![("id", module.id.to_string())];
            if module.passive {
                attributes.push(("passive", "true".to_owned()));
            }
            out.empty("module", &attributes);
        }
        for c in &self.connections {
            out.empty("connect", &connection_attributes(c));
        }
        out.close("morphology");
        out.finish()
    }

    #[must_use]
    pub fn module(&self, id: ModuleId) -> Option<&MorphologyModule> {
        self.modules.iter().find(|m| m.id == id)
    }

    /// Modules not linked to the central one through connections, in file order.
    #[must_use]
    pub fn unreachable_modules(&self) -> Vec<ModuleId> {
        let mut neighbours: HashMap<ModuleId, Vec<ModuleId>> = HashMap::new();
        for c in &self.connections {
            neighbours.entry(c.id_from).or_default().push(c.id_to);
            neighbours.entry(c.id_to).or_default().push(c.id_from);
        }
        let mut reached = HashSet::from([self.central]);
        let mut frontier = vec![self.central];
        while let Some(id) = frontier.pop() {
            for next in neighbours.get(&id).into_iter().flatten() {
                if reached.insert(*next) {
                    frontier.push(*next);
                }
            }
        }
        self.modules
            .iter()
            .map(|m| m.id)
            .filter(|id| !reached.contains(id))
            .collect()
    }

    /// Checks a new connection against this morphology (used by connect commands).
    pub fn check_connection(&self, connection: &Connection) -> Result<(), Problem> {
        for id in [connection.id_from, connection.id_to] {
            if self.module(id).is_none() {
                return Err(Problem::UnknownModule(id));
            }
        }
        if connection.id_from == connection.id_to {
            return Err(Problem::SelfConnection(connection.id_from));
        }
        for (module, connector) in [
            (connection.id_from, connection.conn_from),
            (connection.id_to, connection.conn_to),
        ] {
            if self.connections.iter().any(|c| c.uses(module, connector)) {
                return Err(Problem::ConnectorInUse {
                    module,
                    connector: connector.to_string(),
                });
            }
        }
        Connection::check_angle(f64::from(connection.angle_deg))?;
        Ok(())
    }
}

pub(crate) fn connection_attributes(c: &Connection) -> [(&'static str, String); 5] {
    [
        ("idfrom", c.id_from.to_string()),
        ("connfrom", c.conn_from.to_string()),
        ("idto", c.id_to.to_string()),
        ("connto", c.conn_to.to_string()),
        ("angle", number(f64::from(c.angle_deg))),
    ]
}

/// Reads a `<connect>` element (morphology files and C.2.7 scripts alike).
pub(crate) fn read_connection(
    src: &Source<'_>,
    node: roxmltree::Node<'_, '_>,
) -> Result<Connection, XmlError> {
    let connector = |name: &'static str| -> Result<Connector, XmlError> {
        src.required(node, name)?
            .parse()
            .map_err(|problem| src.invalid(node, problem))
    };
    let id_from = src.unsigned(node, "idfrom")?;
    let id_to = src.unsigned(node, "idto")?;
    if id_from == id_to {
        return Err(src.invalid(node, Problem::SelfConnection(id_from)));
    }
    let angle = src.finite(node, "angle")?;
    Ok(Connection {
        id_from,
        conn_from: connector("connfrom")?,
        id_to,
        conn_to: connector("connto")?,
        angle_deg: Connection::check_angle(angle).map_err(|p| src.invalid(node, p))?,
    })
}
