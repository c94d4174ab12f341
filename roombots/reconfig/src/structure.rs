//! Target structures (003 §2.7.2): meta-modules placed in a structure,
//! each with its build level, its root cube and its three other cubes
//! relative to the root, and an offset placing the structure in the
//! world, read from XML:
//!
//! ```xml
//! <structure>
//!   <module level="0">
//!     <root x="0" y="0" z="0"/>
//!     <cube x="0" y="0" z="1"/> <cube x="0" y="0" z="2"/> <cube x="0" y="0" z="3"/>
//!   </module>
//!   <offset x="6" y="6" z="0"/>
//! </structure>
//! ```
//!
//! Here `z` is up and the floor is under `z = 0` (the seed's Webots world
//! had `y` up). Levels are built bottom-up: level `i + 1`'s seeds open
//! once every seed of level `i` is filled.

use crate::grid::{Cell, add, distance2};

/// One meta-module's place in a structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub level: u32,
    /// The root cube, relative to the structure's origin.
    pub root: Cell,
    /// The other three cubes relative to the root, in chain order.
    pub cubes: [Cell; 3],
}

impl Place {
    /// All four cubes, relative to the structure's origin, root first.
    #[must_use]
    pub fn cells(&self) -> [Cell; 4] {
        [
            self.root,
            add(self.root, self.cubes[0]),
            add(self.root, self.cubes[1]),
            add(self.root, self.cubes[2]),
        ]
    }
}

/// A structure to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Structure {
    pub places: Vec<Place>,
    /// Where the structure's origin lies in the world.
    pub offset: Cell,
}

impl Structure {
    /// Every place's cubes in the world, place by place.
    #[must_use]
    pub fn world_cells(&self) -> Vec<[Cell; 4]> {
        self.places
            .iter()
            .map(|p| p.cells().map(|c| add(c, self.offset)))
            .collect()
    }

    /// The levels, lowest first.
    #[must_use]
    pub fn levels(&self) -> Vec<u32> {
        let mut levels: Vec<u32> = self.places.iter().map(|p| p.level).collect();
        levels.sort_unstable();
        levels.dedup();
        levels
    }
}

/// A platform of `bars × rows` meta-modules lying flat on the floor, each
/// a bar of four cells along x, the bars of a row end to end: a
/// `4·bars × rows` area, centred on `centre`. Built from the middle row
/// outwards (level = distance from the middle row), so that no place is
/// walled in before it is filled.
#[must_use]
pub fn platform(bars: i32, rows: i32, centre: Cell) -> Structure {
    let mut places = Vec::new();
    let middle = rows / 2;
    for row in 0..rows {
        for bar in 0..bars {
            places.push(Place {
                level: (row - middle).unsigned_abs(),
                root: [4 * bar - 2 * bars, row - middle, 0],
                cubes: [[1, 0, 0], [2, 0, 0], [3, 0, 0]],
            });
        }
    }
    Structure {
        places,
        offset: centre,
    }
}

/// Why a structure file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StructureError {
    #[error("not XML: {0}")]
    Xml(String),
    #[error("line {line}: {what}")]
    At { line: u32, what: String },
}

fn at(
    doc: &roxmltree::Document<'_>,
    node: roxmltree::Node<'_, '_>,
    what: String,
) -> StructureError {
    StructureError::At {
        line: doc.text_pos_at(node.range().start).row,
        what,
    }
}

fn cell_of(
    doc: &roxmltree::Document<'_>,
    node: roxmltree::Node<'_, '_>,
) -> Result<Cell, StructureError> {
    let mut cell = [0; 3];
    for (k, name) in ["x", "y", "z"].iter().enumerate() {
        let value = node.attribute(*name).ok_or_else(|| {
            at(
                doc,
                node,
                format!("<{}> has no {name}", node.tag_name().name()),
            )
        })?;
        cell[k] = value.trim().parse().map_err(|_| {
            at(
                doc,
                node,
                format!(
                    "<{}> {name}={value:?} is not an integer",
                    node.tag_name().name()
                ),
            )
        })?;
    }
    for attribute in node.attributes() {
        if !["x", "y", "z"].contains(&attribute.name()) {
            return Err(at(
                doc,
                node,
                format!(
                    "<{}> has an unknown attribute {}",
                    node.tag_name().name(),
                    attribute.name()
                ),
            ));
        }
    }
    Ok(cell)
}

/// Reads a structure; every mistake is refused with its line.
pub fn parse(text: &str) -> Result<Structure, StructureError> {
    let doc = roxmltree::Document::parse(text).map_err(|e| StructureError::Xml(e.to_string()))?;
    let top = doc.root_element();
    if top.tag_name().name() != "structure" {
        return Err(at(
            &doc,
            top,
            format!(
                "the document is <{}>, not <structure>",
                top.tag_name().name()
            ),
        ));
    }
    let mut places = Vec::new();
    let mut offset = None;
    for node in top.children().filter(roxmltree::Node::is_element) {
        match node.tag_name().name() {
            "module" => places.push(place(&doc, node)?),
            "offset" => {
                if offset.is_some() {
                    return Err(at(&doc, node, "a second <offset>".to_owned()));
                }
                offset = Some(cell_of(&doc, node)?);
            }
            other => {
                return Err(at(
                    &doc,
                    node,
                    format!("<{other}> in <structure>: only <module> and <offset>"),
                ));
            }
        }
    }
    if places.is_empty() {
        return Err(at(&doc, top, "the structure has no <module>".to_owned()));
    }
    let offset = offset.ok_or_else(|| at(&doc, top, "the structure has no <offset>".to_owned()))?;
    // No two places share a cell.
    let modules: Vec<_> = top
        .children()
        .filter(|n| n.is_element() && n.tag_name().name() == "module")
        .collect();
    for (i, p) in places.iter().enumerate() {
        for (j, q) in places.iter().enumerate().take(i) {
            if let Some(c) = p.cells().iter().find(|c| q.cells().contains(c)) {
                return Err(at(
                    &doc,
                    modules[i],
                    format!(
                        "this module's cube {c:?} is also the cube of module {} (line {})",
                        j + 1,
                        doc.text_pos_at(modules[j].range().start).row
                    ),
                ));
            }
        }
    }
    Ok(Structure { places, offset })
}

fn place(
    doc: &roxmltree::Document<'_>,
    node: roxmltree::Node<'_, '_>,
) -> Result<Place, StructureError> {
    let level = node
        .attribute("level")
        .ok_or_else(|| at(doc, node, "<module> has no level".to_owned()))?;
    let level: u32 = level.trim().parse().map_err(|_| {
        at(
            doc,
            node,
            format!("<module> level={level:?} is not a whole number 0 or more"),
        )
    })?;
    let mut root = None;
    let mut cubes = Vec::new();
    for child in node.children().filter(roxmltree::Node::is_element) {
        match child.tag_name().name() {
            "root" if root.is_none() => root = Some(cell_of(doc, child)?),
            "root" => return Err(at(doc, child, "a second <root> in one <module>".to_owned())),
            "cube" => cubes.push((child, cell_of(doc, child)?)),
            other => {
                return Err(at(
                    doc,
                    child,
                    format!("<{other}> in <module>: only <root> and <cube>"),
                ));
            }
        }
    }
    let root = root.ok_or_else(|| at(doc, node, "<module> has no <root>".to_owned()))?;
    if cubes.len() != 3 {
        return Err(at(
            doc,
            node,
            format!(
                "<module> has {} <cube>, a meta-module has 3 besides its root",
                cubes.len()
            ),
        ));
    }
    // The four cubes form a chain: each beside the one before.
    let mut previous = [0, 0, 0];
    for (child, cube) in &cubes {
        if distance2(*cube, previous) != 1 {
            return Err(at(
                doc,
                *child,
                format!(
                    "<cube> {cube:?} is not beside the cube before it ({previous:?}): a meta-module's cubes form a chain"
                ),
            ));
        }
        previous = *cube;
    }
    let cells: Vec<Cell> = std::iter::once([0, 0, 0])
        .chain(cubes.iter().map(|c| c.1))
        .collect();
    if (0..4).any(|i| (0..i).any(|j| cells[i] == cells[j])) {
        return Err(at(
            doc,
            node,
            "two cubes of this <module> share a cell".to_owned(),
        ));
    }
    Ok(Place {
        level,
        root,
        cubes: [cubes[0].1, cubes[1].1, cubes[2].1],
    })
}

/// The XML of examples/roombots/structures/`name`, for tests.
#[cfg(test)]
pub(crate) fn example_xml(name: &str) -> String {
    let path = format!(
        "{}/../../examples/roombots/structures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"<structure>
  <module level="0">
    <root x="0" y="0" z="0"/>
    <cube x="0" y="0" z="1"/>
    <cube x="0" y="0" z="2"/>
    <cube x="0" y="0" z="3"/>
  </module>
  <module level="1">
    <root x="1" y="0" z="3"/>
    <cube x="1" y="0" z="0"/>
    <cube x="2" y="0" z="0"/>
    <cube x="3" y="0" z="0"/>
  </module>
  <offset x="6" y="6" z="0"/>
</structure>"#;

    #[test]
    fn a_structure_reads_its_places_levels_and_offset() {
        let s = parse(TWO).unwrap();
        assert_eq!(s.places.len(), 2);
        assert_eq!(s.levels(), vec![0, 1]);
        assert_eq!(s.offset, [6, 6, 0]);
        assert_eq!(
            s.world_cells()[1],
            [[7, 6, 3], [8, 6, 3], [9, 6, 3], [10, 6, 3]]
        );
    }

    #[test]
    fn every_malformed_structure_is_refused_with_its_line() {
        let cases: Vec<(String, &str)> = vec![
            ("<structure>".to_owned(), "not XML"),
            (
                TWO.replace("<structure>", "<chair>")
                    .replace("</structure>", "</chair>"),
                "line 1: the document is <chair>",
            ),
            (
                TWO.replace(r#"level="1""#, r#"level="-1""#),
                "line 8: <module> level=\"-1\" is not a whole number",
            ),
            (
                TWO.replace(r#"<module level="1">"#, "<module>"),
                "line 8: <module> has no level",
            ),
            (
                TWO.replace(r#"<cube x="0" y="0" z="3"/>"#, ""),
                "line 2: <module> has 2 <cube>",
            ),
            (
                TWO.replace(
                    r#"<cube x="0" y="0" z="3"/>"#,
                    r#"<cube x="0" y="0" z="3"/><cube x="0" y="0" z="4"/>"#,
                ),
                "line 2: <module> has 4 <cube>",
            ),
            (
                TWO.replace(
                    r#"<cube x="0" y="0" z="2"/>"#,
                    r#"<cube x="0" y="0" z="two"/>"#,
                ),
                "line 5: <cube> z=\"two\" is not an integer",
            ),
            (
                TWO.replace(
                    r#"<cube x="0" y="0" z="2"/>"#,
                    r#"<cube x="0" y="0" z="5"/>"#,
                ),
                "line 5: <cube> [0, 0, 5] is not beside the cube before it",
            ),
            (
                TWO.replace(r#"<cube x="0" y="0" z="2"/>"#, r#"<cube x="0" y="0"/>"#),
                "line 5: <cube> has no z",
            ),
            (
                TWO.replace(
                    r#"<root x="1" y="0" z="3"/>"#,
                    r#"<root x="0" y="0" z="2"/>"#,
                ),
                "line 8: this module's cube [0, 0, 2] is also the cube of module 1 (line 2)",
            ),
            (
                TWO.replace(r#"<offset x="6" y="6" z="0"/>"#, ""),
                "line 1: the structure has no <offset>",
            ),
            (
                TWO.replace(
                    r#"<offset x="6" y="6" z="0"/>"#,
                    r#"<offset x="6" y="6" z="0"/><offset x="1" y="1" z="0"/>"#,
                ),
                "line 14: a second <offset>",
            ),
            (
                TWO.replace(
                    r#"<root x="0" y="0" z="0"/>"#,
                    r#"<root x="0" y="0" z="0" w="1"/>"#,
                ),
                "line 3: <root> has an unknown attribute w",
            ),
            (
                TWO.replace(r#"<root x="0" y="0" z="0"/>"#, ""),
                "line 2: <module> has no <root>",
            ),
            (
                TWO.replace("<offset", "<chair/><offset"),
                "line 14: <chair> in <structure>",
            ),
            (
                "<structure><offset x=\"0\" y=\"0\" z=\"0\"/></structure>".to_owned(),
                "has no <module>",
            ),
        ];
        for (text, why) in cases {
            let error = parse(&text).unwrap_err().to_string();
            assert!(error.contains(why), "expected {why:?}, got {error:?}");
        }
    }
}
