//! The example robots of `examples/robots/`, embedded in the binary so the
//! main command runs on a fresh machine without any file.

use yamor_core::{Morphology, RobotConfig, XmlError};

/// One example robot: its morphology and its reference gait.
#[derive(Debug, Clone, Copy)]
pub struct ExampleRobot {
    pub name: &'static str,
    pub world_xml: &'static str,
    pub gait_xml: &'static str,
}

macro_rules! example {
    ($name:literal) => {
        ExampleRobot {
            name: $name,
            world_xml: include_str!(concat!("../../examples/robots/", $name, "/world.xml")),
            gait_xml: include_str!(concat!("../../examples/robots/", $name, "/gait.xml")),
        }
    };
}

/// Every embedded example, the default (quadruped) first.
pub const EXAMPLES: [ExampleRobot; 5] = [
    example!("quadruped"),
    example!("snake"),
    example!("trebuchet"),
    example!("dog"),
    example!("wheel"),
];

impl ExampleRobot {
    /// The names of every embedded robot, for error messages and listings.
    #[must_use]
    pub fn names() -> Vec<&'static str> {
        EXAMPLES.iter().map(|e| e.name).collect()
    }

    #[must_use]
    pub fn named(name: &str) -> Option<ExampleRobot> {
        EXAMPLES.into_iter().find(|e| e.name == name)
    }

    pub fn morphology(&self) -> Result<Morphology, XmlError> {
        Morphology::from_xml_str(&format!("{}/world.xml", self.name), self.world_xml)
    }

    pub fn gait(&self) -> Result<RobotConfig, XmlError> {
        RobotConfig::from_xml_str(&format!("{}/gait.xml", self.name), self.gait_xml)
    }
}
