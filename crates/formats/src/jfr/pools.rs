//! A chunk's constant pools: the threads, stack traces, methods, classes, symbols and strings
//! that events refer to by key.
//!
//! They come in checkpoint events (type 1). The header names the last one; each names the one
//! before it by its distance back (0 for the first):
//!
//! ```text
//! checkpoint := size:int  type:long(1)  startTime:long  duration:long  delta:long  kind:byte
//!               pools:int  ( class:long  count:int  (key:long  value)* )*
//! ```
//!
//! A value is laid out as its class says ([`super::metadata`]). The pools are indexed here
//! (where each constant's value starts) and a value read only when an event needs it, so that
//! what the chunk's pools take in memory is their keys, not their values.

use std::collections::HashMap;

use super::chunk::{Cursor, Header, Text, HINT};
use super::metadata::{Classes, Value};
use cfghub_model::error::{Error, Result};

/// Where each constant of a chunk starts, by class and key.
#[derive(Default)]
pub(crate) struct Pools {
    by_class: HashMap<u64, HashMap<u64, u64>>,
}

impl Pools {
    /// The pools of the chunk of `header`, from its checkpoint events.
    pub(crate) fn read(file: &[u8], header: &Header, classes: &Classes) -> Result<Pools> {
        let mut pools = Pools::default();
        let mut at_event = header.constant_pool;
        loop {
            let mut at = Cursor::new(file, at_event, header.end, header.compressed);
            let size = at.int()?;
            let end = at_event.checked_add_signed(size).filter(|&e| size > 0 && e <= header.end).ok_or_else(
                || {
                    Error::input(format!("a checkpoint event of {size} bytes, past the end of its chunk"))
                        .at_byte(at_event)
                        .with_hint(HINT)
                },
            )?;
            at = Cursor::new(file, at.pos, end, header.compressed);
            let kind = at.long()?;
            if kind != 1 {
                return Err(Error::input(format!(
                    "the constant pools should be here, in an event of type 1, and the event here is of type {kind}"
                ))
                .at_byte(at_event)
                .with_hint(HINT));
            }
            let _start_time = at.long()?;
            let _duration = at.long()?;
            let delta_place = at.pos;
            let delta = at.long()?;
            let _kind = at.u8()?;
            let n = at.count("constant pools in a checkpoint")?;
            for _ in 0..n {
                let class_place = at.pos;
                let class = at.long()? as u64;
                if !classes.by_id.contains_key(&class) {
                    return Err(Error::input(format!(
                        "a constant pool of class {class}, which the metadata does not declare"
                    ))
                    .at_byte(class_place)
                    .with_hint(HINT));
                }
                let count = at.count("constants in a pool")?;
                let pool = pools.by_class.entry(class).or_default();
                for _ in 0..count {
                    let key = at.long()? as u64;
                    let value = at.pos;
                    classes.skip_value(&mut at, class, 0)?;
                    // The header names the latest checkpoint first: a key stated again in an
                    // earlier one keeps its latest value.
                    pool.entry(key).or_insert(value);
                }
            }
            if delta == 0 {
                return Ok(pools);
            }
            // Each checkpoint names an earlier one: a chain that went forward could go round.
            at_event = at_event
                .checked_add_signed(delta)
                .filter(|&e| delta < 0 && e >= header.start + super::chunk::HEADER_SIZE)
                .ok_or_else(|| {
                    Error::input(format!(
                        "the checkpoint before this one is said to be {delta} bytes away, which is not earlier in the chunk"
                    ))
                    .at_byte(delta_place)
                    .with_hint(HINT)
                })?;
        }
    }

    /// Where the constant of `class` and `key` starts, when a pool holds it.
    pub(crate) fn find(&self, class: u64, key: u64) -> Option<u64> {
        self.by_class.get(&class)?.get(&key).copied()
    }
}

/// A chunk's classes and pools together, to read the constants events refer to.
pub(crate) struct Constants<'f> {
    pub file: &'f [u8],
    pub header: Header,
    pub classes: Classes,
    pub pools: Pools,
    /// The id of `java.lang.String`, whose pool holds strings written by reference.
    string_class: Option<u64>,
    /// How many references to keys no pool holds were read as null.
    pub dangling: std::cell::Cell<u64>,
}

impl<'f> Constants<'f> {
    pub(crate) fn new(file: &'f [u8], header: Header, classes: Classes, pools: Pools) -> Self {
        let string_class = classes.id_of("java.lang.String");
        Constants { file, header, classes, pools, string_class, dangling: std::cell::Cell::new(0) }
    }

    /// The value of a field of class `class` as stated (`Value::Pooled`: the constant it
    /// refers to; inline: itself); `None` for a null reference (key 0), and for a key no pool
    /// of the chunk holds, which the JDK's recorder writes (a thread that ended before the
    /// chunk's pools were written) and its `jfr` tool reads as null: those are counted in
    /// [`Constants::dangling`]. `place` is where the reference is stated.
    pub(crate) fn resolve(&self, value: Value, class: u64, _place: u64) -> Result<Option<Value>> {
        let Value::Pooled(key) = value else {
            return Ok(Some(value));
        };
        if key == 0 {
            return Ok(None);
        }
        let Some(at) = self.pools.find(class, key) else {
            self.dangling.set(self.dangling.get() + 1);
            return Ok(None);
        };
        let mut cursor = Cursor::new(self.file, at, self.header.end, self.header.compressed);
        self.classes.read_value(&mut cursor, class, 0).map(Some)
    }

    /// The text of a string value (one written by reference read from the pool of strings);
    /// `None` for null.
    pub(crate) fn text(&self, value: Value, place: u64) -> Result<Option<String>> {
        match value {
            Value::Text(Text::Inline(s)) => Ok(Some(s)),
            Value::Text(Text::Pooled(key)) => {
                let Some(strings) = self.string_class else {
                    return Err(Error::input(
                        "a string refers to the pool of strings, and the metadata has no java.lang.String",
                    )
                    .at_byte(place)
                    .with_hint(HINT));
                };
                match self.resolve(Value::Pooled(key), strings, place)? {
                    Some(Value::Text(Text::Inline(s))) => Ok(Some(s)),
                    _ => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }

    /// The field `name` of an object of class `class`, when it has one.
    pub(crate) fn field(&self, object: &mut Value, class: u64, name: &str) -> Option<(Value, u64)> {
        let c = self.classes.get(class);
        let i = c.field(name)?;
        let Value::Object(fields) = object else {
            return None;
        };
        let value = std::mem::replace(fields.get_mut(i)?, Value::Integer(0));
        Some((value, c.fields[i].class))
    }
}
