//! Interned strings: file names and frame names are stored once and referred to by index.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// A list of distinct strings with a lookup from string to index.
///
/// Each string is stored once, in one buffer of text; the lookup holds only indices (4 bytes
/// a string), hashed by the text they name. A million distinct frame names (a symbolized
/// profile of a million functions) take their text and about 25 bytes each, where a list of
/// `String`s beside a map of `String` keys took two copies and about 130 bytes each.
///
/// Equality compares the strings in order, so two tables built by interning the same names in
/// the same order are equal.
#[derive(Clone, Default)]
pub struct StringTable {
    /// The strings' text, one after the other.
    text: String,
    /// Where each string lies in `text`: (start, end).
    spans: Vec<(usize, usize)>,
    /// Indices into `spans`, by the hash of their string.
    index: HashTable<u32>,
}

impl std::fmt::Debug for StringTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter().map(|(_, s)| s)).finish()
    }
}

impl PartialEq for StringTable {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a.1 == b.1)
    }
}

fn hash(name: &str) -> u64 {
    FxBuildHasher.hash_one(name)
}

impl StringTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The index of `name`, adding it when new.
    pub fn intern(&mut self, name: &str) -> u32 {
        let h = hash(name);
        let (text, spans) = (&self.text, &self.spans);
        if let Some(&i) = self.index.find(h, |&i| span(text, spans, i) == name) {
            return i;
        }
        let i = u32::try_from(self.spans.len()).expect("more than 2^32 interned strings");
        let start = self.text.len();
        self.text.push_str(name);
        self.spans.push((start, self.text.len()));
        let (text, spans) = (&self.text, &self.spans);
        self.index.insert_unique(h, i, |&j| hash(span(text, spans, j)));
        i
    }

    /// The index of `name`, if interned.
    pub fn lookup(&self, name: &str) -> Option<u32> {
        self.index.find(hash(name), |&i| self.get(i) == name).copied()
    }

    /// The string at `id`. Panics on an id this table did not hand out.
    pub fn get(&self, id: u32) -> &str {
        span(&self.text, &self.spans, id)
    }

    /// Gives the string at `id` the name `name`, when no other index holds that name; `false`,
    /// with nothing changed, otherwise. For a reader that meets a name's use before its
    /// definition.
    pub fn rename(&mut self, id: u32, name: &str) -> bool {
        if self.lookup(name).is_some() || id as usize >= self.spans.len() {
            return false;
        }
        let old = hash(self.get(id));
        if let Ok(entry) = self.index.find_entry(old, |&i| i == id) {
            entry.remove();
        }
        // The old text stays in the buffer, unused: renaming is rare (one name per use
        // before definition).
        let start = self.text.len();
        self.text.push_str(name);
        self.spans[id as usize] = (start, self.text.len());
        let (text, spans) = (&self.text, &self.spans);
        self.index.insert_unique(hash(name), id, |&j| hash(span(text, spans, j)));
        true
    }

    /// Heap bytes the table holds: the strings and the lookup from string to index.
    pub(crate) fn heap_bytes(&self) -> u64 {
        let spans = self.spans.capacity() * std::mem::size_of::<(usize, usize)>();
        let slots = self.index.num_buckets() * (std::mem::size_of::<u32>() + 1);
        (self.text.capacity() + spans + slots) as u64
    }

    /// Number of distinct strings: every index below it is valid.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether no string was interned.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Every string with its index, in index order (the order they were first interned).
    pub fn iter(&self) -> impl Iterator<Item = (u32, &str)> {
        (0..self.spans.len() as u32).map(|i| (i, self.get(i)))
    }
}

fn span<'t>(text: &'t str, spans: &[(usize, usize)], id: u32) -> &'t str {
    let (start, end) = spans[id as usize];
    &text[start..end]
}
