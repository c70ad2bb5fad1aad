//! Short lists of numbers in 16 bytes: an edge's per-thread counts and a call's inclusive cost.
//!
//! A DCFG has millions of edges and a Callgrind profile hundreds of thousands, nearly all of one
//! thread, and most call graphs measure one event: one number lives inline, more live in one
//! boxed small vector (two take one 24-byte allocation). They read as a slice of `u64`.

use std::fmt;
use std::ops::{Deref, DerefMut};

type Many = smallvec::SmallVec<[u64; 2]>;

/// A slice of `u64` in 16 bytes that holds one number inline and boxes more. Build one with
/// `.into()` from a `Vec<u64>`, [`Numbers::from_slice`], [`Numbers::from_elem`] or `collect`,
/// or grow one with [`Numbers::push`] and [`Numbers::resize`].
#[derive(Clone)]
pub struct Numbers(Repr);

/// Per-thread counts of an edge, thread 0 first.
pub type Counts = Numbers;

#[derive(Clone)]
enum Repr {
    /// No number (`len` 0) or one (`len` 1, in `value`).
    Inline {
        len: u8,
        value: u64,
    },
    Boxed(Box<Many>),
}

impl Default for Numbers {
    fn default() -> Self {
        Numbers(Repr::Inline { len: 0, value: 0 })
    }
}

impl Numbers {
    /// None.
    pub fn new() -> Self {
        Numbers::default()
    }

    /// A copy of `values`.
    pub fn from_slice(values: &[u64]) -> Self {
        match values {
            [] => Numbers::new(),
            [v] => Numbers(Repr::Inline { len: 1, value: *v }),
            _ => Numbers(Repr::Boxed(Box::new(Many::from_slice(values)))),
        }
    }

    /// `n` times `value`.
    pub fn from_elem(value: u64, n: usize) -> Self {
        match n {
            0 | 1 => Numbers(Repr::Inline { len: n as u8, value }),
            _ => Numbers(Repr::Boxed(Box::new(Many::from_elem(value, n)))),
        }
    }

    /// Adds a number at the end.
    pub fn push(&mut self, v: u64) {
        match &mut self.0 {
            Repr::Boxed(many) => many.push(v),
            Repr::Inline { len: 0, .. } => self.0 = Repr::Inline { len: 1, value: v },
            Repr::Inline { value, .. } => {
                let first = *value;
                self.0 = Repr::Boxed(Box::new(Many::from_slice(&[first, v])));
            }
        }
    }

    /// Makes it `n` long, new places holding `value`.
    pub fn resize(&mut self, n: usize, value: u64) {
        if n <= 1 || matches!(self.0, Repr::Boxed(_)) {
            match &mut self.0 {
                Repr::Boxed(many) => many.resize(n, value),
                Repr::Inline { len, value: v } => {
                    if n > usize::from(*len) {
                        *v = value;
                    }
                    *len = n as u8;
                }
            }
        } else {
            let mut many = Many::from_slice(self);
            many.resize(n, value);
            self.0 = Repr::Boxed(Box::new(many));
        }
    }

    /// Heap bytes it holds: the box and, past two numbers, its buffer.
    pub(crate) fn heap_bytes(&self) -> u64 {
        match &self.0 {
            Repr::Inline { .. } => 0,
            Repr::Boxed(many) => {
                let buffer = if many.spilled() { many.capacity() * size_of::<u64>() } else { 0 };
                (size_of::<Many>() + buffer) as u64
            }
        }
    }
}

impl Deref for Numbers {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        match &self.0 {
            Repr::Inline { len, value } => &std::slice::from_ref(value)[..usize::from(*len)],
            Repr::Boxed(many) => many,
        }
    }
}

impl DerefMut for Numbers {
    fn deref_mut(&mut self) -> &mut [u64] {
        match &mut self.0 {
            Repr::Inline { len, value } => &mut std::slice::from_mut(value)[..usize::from(*len)],
            Repr::Boxed(many) => many,
        }
    }
}

impl From<Vec<u64>> for Numbers {
    fn from(v: Vec<u64>) -> Self {
        Numbers::from_slice(&v)
    }
}

impl FromIterator<u64> for Numbers {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let mut c = Numbers::new();
        for v in iter {
            c.push(v);
        }
        c
    }
}

impl<'a> IntoIterator for &'a Numbers {
    type Item = &'a u64;
    type IntoIter = std::slice::Iter<'a, u64>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl IntoIterator for Numbers {
    type Item = u64;
    type IntoIter = smallvec::IntoIter<[u64; 2]>;
    fn into_iter(self) -> Self::IntoIter {
        match self.0 {
            Repr::Boxed(many) => many.into_iter(),
            Repr::Inline { .. } => Many::from_slice(&self).into_iter(),
        }
    }
}

impl PartialEq for Numbers {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl Eq for Numbers {}

impl std::hash::Hash for Numbers {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self[..].hash(state);
    }
}

impl fmt::Debug for Numbers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_16_bytes_and_read_like_the_vector_they_were_built_from() {
        assert_eq!(size_of::<Numbers>(), 16);
        for v in [vec![], vec![7], vec![1, 2], vec![1, 2, 3, 4]] {
            let c = Numbers::from(v.clone());
            assert_eq!(&c[..], &v[..]);
            let mut pushed = Numbers::new();
            for &x in &v {
                pushed.push(x);
            }
            assert_eq!(pushed, c);
            assert_eq!(c.clone().into_iter().collect::<Vec<_>>(), v);
            assert_eq!(format!("{c:?}"), format!("{v:?}"));
        }
        let mut c = Numbers::from_elem(0, 1);
        c[0] = 5;
        c.resize(3, 9);
        assert_eq!(&c[..], &[5, 9, 9]);
        c.resize(1, 0);
        assert_eq!(&c[..], &[5]);
        let mut one = Numbers::new();
        one.resize(1, 4);
        assert_eq!(&one[..], &[4]);
        assert_eq!(one.heap_bytes(), 0);
        assert!(Numbers::from_slice(&[1, 2]).heap_bytes() > 0);
    }
}
