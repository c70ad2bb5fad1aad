//! A chunk's metadata event: the classes of its events and constants, and how a value of
//! each is laid out.
//!
//! The metadata event (type 0) holds, after its size, type, start time, duration and id, a
//! table of strings (an `int` count, then the strings) and a tree of elements. An element is
//! its name, its attributes and its children, every name and value an index into the table:
//!
//! ```text
//! element := name:int  attributes:int (key:int value:int)*  children:int element*
//! root
//! ├── metadata
//! │   ├── class  id="101" name="jdk.ExecutionSample" superType="jdk.jfr.Event"
//! │   │   ├── field  name="startTime" class="4"  (a long)
//! │   │   ├── field  name="sampledThread" class="7" constantPool="true"
//! │   │   ├── field  name="stackTrace" class="24" constantPool="true"
//! │   │   └── annotation / setting ...      (not part of a value)
//! │   ├── class  id="4" name="long"
//! │   └── class  id="25" name="jdk.types.StackFrame" ...
//! │       └── field  name="lineNumber" class="3" / field  name="method" class="26" constantPool="true" ...
//! └── region  (locale, time zone)
//! ```
//!
//! A value of a class is its fields' values in order: a field marked `constantPool` holds a
//! `long` key into the chunk's pool of its class; a field of `dimension="1"` is an array (an
//! `int` count, then the elements); the classes `boolean`, `byte`, `char`, `short`, `int`,
//! `long`, `float`, `double` and `java.lang.String` are written as [`super::chunk`] says.

use std::collections::HashMap;

use super::chunk::{Cursor, Text, HINT};
use cfghub_model::error::{Error, Result};

/// Deepest nesting of elements, and of values held inline in values, that a chunk may have:
/// the JDK's go three deep; a cycle of classes holding each other inline would go on forever.
const MAX_DEPTH: usize = 32;

/// How a value of a class is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// An integer of this many bytes uncompressed (`short`, `char` 2, `int` 4, `long` 8).
    Integer(u8),
    /// One byte (`byte`, `boolean`).
    Byte,
    /// Four or eight raw bytes (`float`, `double`).
    Float(u8),
    /// A string (`java.lang.String`).
    Text,
    /// Its fields, in order.
    Fields,
}

/// One field of a class.
#[derive(Clone, Debug)]
pub(crate) struct Field {
    pub name: String,
    /// The class of its value.
    pub class: u64,
    /// Whether it holds a key into the pool of its class rather than the value itself.
    pub pooled: bool,
    /// Whether it holds an array of values.
    pub array: bool,
}

/// One class: an event type, a type of constants, or a primitive.
#[derive(Clone, Debug)]
pub(crate) struct Class {
    pub name: String,
    pub layout: Layout,
    pub fields: Vec<Field>,
    /// Whether its values take no bytes: fields (none, or held inline) of classes that take
    /// none. Such values are not walked field by field: a tree of them costs no input, and
    /// nothing else would bound the time spent on it.
    pub empty: bool,
}

impl Class {
    /// The index of the field called `name`.
    pub(crate) fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// A value read from a chunk.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    /// Any integer, `byte`, `boolean` or `char`.
    Integer(i64),
    /// A `float` or `double` (nothing cfghub reads is one).
    Float,
    Text(Text),
    /// A key into the pool of the field's class (0 is null).
    Pooled(u64),
    /// A value of a class with fields, inline.
    Object(Vec<Value>),
    Array(Vec<Value>),
}

/// The classes of a chunk, by id.
#[derive(Debug, Default)]
pub(crate) struct Classes {
    pub by_id: HashMap<u64, Class>,
}

/// An element of the metadata tree, its strings as indices into the table.
struct Element {
    name: usize,
    attributes: Vec<(usize, usize)>,
    children: Vec<Element>,
}

impl Classes {
    /// The classes of the metadata event at `at` (its cursor ends where the event does).
    pub(crate) fn read(at: &mut Cursor<'_>) -> Result<Classes> {
        let event = at.pos;
        let strings_place;
        {
            let _start_time = at.long()?;
            let _duration = at.long()?;
            let _id = at.long()?;
            strings_place = at.pos;
        }
        let n = at.count("strings in the metadata")?;
        let mut strings = Vec::with_capacity(n);
        for _ in 0..n {
            strings.push(match at.text()? {
                Text::Inline(s) => s,
                Text::Null => String::new(),
                Text::Pooled(_) => {
                    return Err(Error::input("a metadata string refers to a constant pool")
                        .at_byte(strings_place)
                        .with_hint(HINT))
                }
            });
        }
        let root = element(at, strings.len(), 0)?;
        let text = |i: usize| strings[i].as_str();
        let attribute = |e: &Element, key: &str| {
            e.attributes.iter().find(|&&(k, _)| text(k) == key).map(|&(_, v)| text(v))
        };
        let mut classes = Classes::default();
        let bad = |message: String| Err(Error::input(message).at_byte(event).with_hint(HINT));
        for metadata in root.children.iter().filter(|e| text(e.name) == "metadata") {
            for class in metadata.children.iter().filter(|e| text(e.name) == "class") {
                let name = attribute(class, "name").unwrap_or_default().to_string();
                let Some(id) = attribute(class, "id").and_then(|i| i.parse::<u64>().ok()) else {
                    return bad(format!("the metadata's class {name:?} has no numeric id"));
                };
                let mut fields = Vec::new();
                for field in class.children.iter().filter(|e| text(e.name) == "field") {
                    let field_name = attribute(field, "name").unwrap_or_default().to_string();
                    let Some(of) = attribute(field, "class").and_then(|i| i.parse::<u64>().ok()) else {
                        return bad(format!("the field {field_name:?} of class {name:?} names no class id"));
                    };
                    fields.push(Field {
                        name: field_name,
                        class: of,
                        pooled: attribute(field, "constantPool") == Some("true"),
                        array: attribute(field, "dimension").is_some_and(|d| d != "0"),
                    });
                }
                let layout = match name.as_str() {
                    "boolean" | "byte" => Layout::Byte,
                    "short" | "char" => Layout::Integer(2),
                    "int" => Layout::Integer(4),
                    "long" => Layout::Integer(8),
                    "float" => Layout::Float(4),
                    "double" => Layout::Float(8),
                    "java.lang.String" => Layout::Text,
                    _ => Layout::Fields,
                };
                if classes
                    .by_id
                    .insert(id, Class { name: name.clone(), layout, fields, empty: false })
                    .is_some()
                {
                    return bad(format!(
                        "two classes of the metadata have the id {id} (the second: {name:?})"
                    ));
                }
            }
        }
        for (id, class) in &classes.by_id {
            if let Some(f) = class.fields.iter().find(|f| !classes.by_id.contains_key(&f.class)) {
                return bad(format!(
                    "the field {:?} of class {:?} (id {id}) is of class {}, which the metadata does not declare",
                    f.name, class.name, f.class
                ));
            }
        }
        classes.find_empty();
        Ok(classes)
    }

    /// Marks the classes whose values take no bytes: those with no fields, then those whose
    /// fields all hold such values inline, until no more are found (a class that holds itself
    /// is never marked: reading one fails at [`MAX_DEPTH`]).
    fn find_empty(&mut self) {
        loop {
            let found: Vec<u64> = self
                .by_id
                .iter()
                .filter(|(_, c)| {
                    !c.empty
                        && c.layout == Layout::Fields
                        && c.fields.iter().all(|f| !f.array && !f.pooled && self.by_id[&f.class].empty)
                })
                .map(|(&id, _)| id)
                .collect();
            if found.is_empty() {
                return;
            }
            for id in found {
                self.by_id.get_mut(&id).expect("a class found").empty = true;
            }
        }
    }

    /// The id of the class called `name`.
    pub(crate) fn id_of(&self, name: &str) -> Option<u64> {
        self.by_id.iter().find(|(_, c)| c.name == name).map(|(&id, _)| id)
    }

    /// The class of `id`, which [`Classes::read`] checked every field's class to be.
    pub(crate) fn get(&self, id: u64) -> &Class {
        &self.by_id[&id]
    }

    /// Reads a value of the field `field` (a key when pooled, an array when it is one).
    pub(crate) fn read_field(&self, at: &mut Cursor<'_>, field: &Field, depth: usize) -> Result<Value> {
        if field.array {
            let n = at.count("elements of an array")?;
            let mut elements = Vec::with_capacity(n);
            for _ in 0..n {
                elements.push(self.read_one(at, field, depth)?);
            }
            return Ok(Value::Array(elements));
        }
        self.read_one(at, field, depth)
    }

    fn read_one(&self, at: &mut Cursor<'_>, field: &Field, depth: usize) -> Result<Value> {
        if field.pooled {
            return Ok(Value::Pooled(at.long()? as u64));
        }
        self.read_value(at, field.class, depth + 1)
    }

    /// Reads a value of the class `class` held inline.
    pub(crate) fn read_value(&self, at: &mut Cursor<'_>, class: u64, depth: usize) -> Result<Value> {
        let c = self.get(class);
        Ok(match c.layout {
            Layout::Integer(width) => Value::Integer(at.integer(width)?),
            Layout::Byte => Value::Integer(i64::from(at.u8()?)),
            Layout::Float(width) => {
                at.take(u64::from(width))?;
                Value::Float
            }
            Layout::Text => Value::Text(at.text()?),
            Layout::Fields if c.empty => Value::Object(Vec::new()),
            Layout::Fields => {
                too_deep(at, depth, c)?;
                let mut values = Vec::with_capacity(c.fields.len());
                for f in &c.fields {
                    values.push(self.read_field(at, f, depth)?);
                }
                Value::Object(values)
            }
        })
    }

    /// Skips a value of the class `class` held inline, making nothing of it.
    pub(crate) fn skip_value(&self, at: &mut Cursor<'_>, class: u64, depth: usize) -> Result<()> {
        let c = self.get(class);
        match c.layout {
            Layout::Integer(width) => at.integer(width).map(drop),
            Layout::Byte => at.u8().map(drop),
            Layout::Float(width) => at.take(u64::from(width)).map(drop),
            Layout::Text => at.skip_text(),
            Layout::Fields if c.empty => Ok(()),
            Layout::Fields => {
                too_deep(at, depth, c)?;
                for f in &c.fields {
                    let n = if f.array { at.count("elements of an array")? } else { 1 };
                    for _ in 0..n {
                        if f.pooled {
                            at.long()?;
                        } else {
                            self.skip_value(at, f.class, depth + 1)?;
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

fn too_deep(at: &Cursor<'_>, depth: usize, class: &Class) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(Error::input(format!(
            "values held inside values more than {MAX_DEPTH} deep (the class {:?} holds itself?)",
            class.name
        ))
        .at_byte(at.pos)
        .with_hint(HINT));
    }
    Ok(())
}

/// An element of the metadata tree and its children, its strings checked to be in the table.
fn element(at: &mut Cursor<'_>, strings: usize, depth: usize) -> Result<Element> {
    let place = at.pos;
    if depth > MAX_DEPTH {
        return Err(Error::input(format!("metadata elements nested more than {MAX_DEPTH} deep"))
            .at_byte(place)
            .with_hint(HINT));
    }
    let string = |at: &mut Cursor<'_>| -> Result<usize> {
        let place = at.pos;
        let i = at.int()?;
        usize::try_from(i).ok().filter(|&i| i < strings).ok_or_else(|| {
            Error::input(format!("string {i} of the metadata, which has {strings}"))
                .at_byte(place)
                .with_hint(HINT)
        })
    };
    let name = string(at)?;
    let n = at.count("attributes of a metadata element")?;
    let mut attributes = Vec::with_capacity(n);
    for _ in 0..n {
        attributes.push((string(at)?, string(at)?));
    }
    let n = at.count("children of a metadata element")?;
    let mut children = Vec::with_capacity(n);
    for _ in 0..n {
        children.push(element(at, strings, depth + 1)?);
    }
    Ok(Element { name, attributes, children })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A metadata event's body after its size and type: start time, duration and id (0 each),
    /// the strings, then `tree`; integers compressed, every one of them below 128.
    fn metadata(strings: &[&str], tree: &[u8]) -> Vec<u8> {
        let mut b = vec![0, 0, 0, strings.len() as u8];
        for s in strings {
            b.extend_from_slice(&[3, s.len() as u8]);
            b.extend_from_slice(s.as_bytes());
        }
        b.extend_from_slice(tree);
        b
    }

    fn classes(bytes: &[u8]) -> Result<Classes> {
        Classes::read(&mut Cursor { bytes, pos: 0, compressed: true })
    }

    const STRINGS: [&str; 10] =
        ["root", "metadata", "class", "id", "name", "1", "Node", "field", "next", "class"];

    /// root > metadata > class Node (id 1) with one field `next` of class 1, held inline
    /// when `inline`, else by reference.
    fn node_class(inline: bool) -> Vec<u8> {
        let field: &[u8] = if inline { &[7, 2, 4, 8, 9, 5, 0] } else { &[7, 3, 4, 8, 9, 5, 10, 11, 0] };
        let mut strings = STRINGS.to_vec();
        strings.extend(["constantPool", "true"]);
        let mut tree = vec![0, 0, 1, 1, 0, 1, 2, 2, 3, 5, 4, 6, 1];
        tree.extend_from_slice(field);
        metadata(&strings, &tree)
    }

    #[test]
    fn classes_and_their_fields() {
        let c = classes(&node_class(false)).unwrap();
        let node = c.get(1);
        assert_eq!((node.name.as_str(), node.layout), ("Node", Layout::Fields));
        assert_eq!(node.field("next"), Some(0));
        assert!(node.fields[0].pooled && !node.fields[0].array);
        let v = c.read_value(&mut Cursor { bytes: &[42], pos: 0, compressed: true }, 1, 0).unwrap();
        assert_eq!(v, Value::Object(vec![Value::Pooled(42)]));
    }

    #[test]
    fn a_class_holding_itself_inline_is_refused_not_followed_forever() {
        let c = classes(&node_class(true)).unwrap();
        let e =
            c.read_value(&mut Cursor { bytes: &[], pos: 0, compressed: true }, 1, 0).unwrap_err().to_string();
        assert!(e.contains("more than 32 deep") && e.contains("Node"), "{e}");
        let e =
            c.skip_value(&mut Cursor { bytes: &[], pos: 0, compressed: true }, 1, 0).unwrap_err().to_string();
        assert!(e.contains("more than 32 deep"), "{e}");
    }

    #[test]
    fn values_of_classes_that_take_no_bytes_are_not_walked() {
        // Node holds one field of class 2, which has none: Node takes no bytes either.
        let mut strings = STRINGS.to_vec();
        strings.extend(["2", "Empty"]);
        let tree = [0, 0, 1, 1, 0, 2, 2, 2, 3, 5, 4, 6, 1, 7, 2, 4, 8, 9, 10, 0, 2, 2, 3, 10, 4, 11, 0];
        let c = classes(&metadata(&strings, &tree)).unwrap();
        assert!(c.get(1).empty && c.get(2).empty);
        let mut at = Cursor { bytes: &[], pos: 0, compressed: true };
        assert_eq!(c.read_value(&mut at, 1, 0).unwrap(), Value::Object(Vec::new()));
        c.skip_value(&mut at, 1, 0).unwrap();
        assert!(!classes(&node_class(true)).unwrap().get(1).empty);
    }

    #[test]
    fn references_past_the_strings_and_huge_counts_are_placed() {
        // The root's name is string 20 of 10.
        let bytes = metadata(&STRINGS, &[20, 0, 0]);
        let e = classes(&bytes).unwrap_err().to_string();
        let at = 3 + 1 + STRINGS.iter().map(|s| 2 + s.len()).sum::<usize>();
        assert!(
            e.contains("string 20 of the metadata, which has 10") && e.contains(&format!("byte {at}")),
            "{e}"
        );
        // A million strings declared in a few bytes.
        let e = classes(&[0, 0, 0, 0xc0, 0x84, 0x3d]).unwrap_err().to_string();
        assert!(e.contains("1000000 strings in the metadata") && e.contains("byte 3"), "{e}");
        // Elements nested past the limit.
        let mut deep = Vec::new();
        for _ in 0..40 {
            deep.extend_from_slice(&[0, 0, 1]);
        }
        let e = classes(&metadata(&STRINGS, &deep)).unwrap_err().to_string();
        assert!(e.contains("nested more than 32 deep"), "{e}");
        // A field of a class the metadata does not declare.
        let mut tree = vec![0, 0, 1, 1, 0, 1, 2, 2, 3, 5, 4, 6, 1];
        tree.extend_from_slice(&[7, 2, 4, 8, 9, 10, 0]);
        let mut strings = STRINGS.to_vec();
        strings.push("7");
        let e = classes(&metadata(&strings, &tree)).unwrap_err().to_string();
        assert!(e.contains("which the metadata does not declare"), "{e}");
    }
}
