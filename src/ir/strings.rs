//! Interned strings: file names and frame names are stored once and referred to by index.

use std::collections::HashMap;

/// A list of distinct strings with a lookup from string to index.
///
/// Equality compares the strings in order, so two tables built by interning the same names in
/// the same order are equal.
#[derive(Clone, Debug, Default)]
pub struct StringTable {
    names: Vec<String>,
    index: HashMap<String, u32>,
}

impl PartialEq for StringTable {
    fn eq(&self, other: &Self) -> bool {
        self.names == other.names
    }
}

impl StringTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// The index of `name`, adding it when new.
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = u32::try_from(self.names.len()).expect("more than 2^32 interned strings");
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }

    /// The index of `name`, if interned.
    pub fn lookup(&self, name: &str) -> Option<u32> {
        self.index.get(name).copied()
    }

    /// The string at `id`. Panics on an id this table did not hand out.
    pub fn get(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// Gives the string at `id` the name `name`, when no other index holds that name; `false`,
    /// with nothing changed, otherwise. For a reader that meets a name's use before its
    /// definition.
    pub fn rename(&mut self, id: u32, name: &str) -> bool {
        if self.index.contains_key(name) || id as usize >= self.names.len() {
            return false;
        }
        let old = std::mem::replace(&mut self.names[id as usize], name.to_string());
        self.index.remove(&old);
        self.index.insert(name.to_string(), id);
        true
    }

    /// Heap bytes the table holds: the strings and the lookup from string to index.
    pub fn heap_bytes(&self) -> u64 {
        let strings: u64 = self.names.iter().map(|n| n.capacity() as u64).sum();
        let slots = self.index.capacity() * (std::mem::size_of::<(String, u32)>() + 1);
        (self.names.capacity() * std::mem::size_of::<String>() + slots) as u64 + 2 * strings
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &str)> {
        self.names.iter().enumerate().map(|(i, s)| (i as u32, s.as_str()))
    }
}
