//! Name compression for the Callgrind writer.
//!
//! Callgrind compresses the names of objects (`ob=`, `cob=`), files (`fl=`, `fi=`, `fe=`,
//! `cfi=`, `jfi=`) and functions (`fn=`, `cfn=`, `jfn=`): the first time a name appears it is
//! written as `(id) name`, afterwards as `(id)` alone. Each of the three namespaces numbers its
//! names on its own, from 1, in the order they are first written. KCachegrind forgets the
//! definitions at a new part, so every part defines again the names it uses (with the same ids).
//!
//! The writer refers to names by *key*, a small integer given out once per distinct name
//! (hashing the name once), so that writing a line never hashes or compares strings: a key
//! indexes the written id and whether the current part has defined it.

use std::collections::HashMap;

use super::text::{put_num, Out};
use cfghub_model::ir::{FileId, Profile, NO_INDEX};

/// The key of the empty name, which is written without an id (`fn=`).
pub(super) const NO_NAME: u32 = NO_INDEX;

/// The key of the name [`NameTable::key_once`] was last given, which is written whole and not
/// kept (`fn=app+0x1a4`).
pub(super) const ONCE: u32 = NO_INDEX - 1;

/// The names of one namespace and their compressed ids.
#[derive(Default)]
pub(super) struct NameTable {
    /// Key of every name seen, by the name's hash ([`name_hash`]): the name is stored once, in
    /// `names`. A name whose hash is taken by another name goes to `collided`.
    by_hash: rustc_hash::FxHashMap<u64, u32>,
    collided: HashMap<String, u32>,
    /// Name of every key.
    names: Vec<String>,
    /// Written id of every key (0: not written yet).
    ids: Vec<u32>,
    /// Whether the current part has defined the key's name.
    defined: Vec<bool>,
    /// Last id given out.
    last_id: u32,
    /// Key of every file name of the profile, by [`FileId`] (`u32::MAX` until looked up).
    by_file: Vec<u32>,
    /// The name of [`ONCE`].
    once: String,
}

impl NameTable {
    /// The key of `name` ([`NO_NAME`] for the empty name). Callgrind has no escapes and a
    /// name ends at the end of its line, so line breaks inside a name (a pprof function name
    /// may hold one) are written as spaces.
    pub(super) fn key(&mut self, name: &str) -> u32 {
        if name.is_empty() {
            return NO_NAME;
        }
        if name.contains(['\n', '\r']) {
            return self.key(&name.replace(['\n', '\r'], " "));
        }
        let hash = name_hash(name.as_bytes());
        let k = match self.by_hash.get(&hash) {
            Some(&k) if self.names[k as usize] == name => return k,
            Some(_) => match self.collided.get(name) {
                Some(&k) => return k,
                None => {
                    let k = self.names.len() as u32;
                    self.collided.insert(name.to_string(), k);
                    k
                }
            },
            None => {
                let k = self.names.len() as u32;
                self.by_hash.insert(hash, k);
                k
            }
        };
        self.names.push(name.to_string());
        self.ids.push(0);
        self.defined.push(false);
        k
    }

    /// The key of `name` if it has one, else [`ONCE`]: the name is written whole where it is
    /// used next, without an id, and not kept. For names used once among millions (code no
    /// symbol covers, named by its address: a profile of 2.5 million sampled addresses took
    /// about 90 bytes an address to keep them); a name written whole more than once is one
    /// function to KCachegrind and callgrind_annotate all the same.
    pub(super) fn key_once(&mut self, name: &str) -> u32 {
        if name.is_empty() {
            return NO_NAME;
        }
        self.once.clear();
        self.once.extend(name.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }));
        match self.by_hash.get(&name_hash(self.once.as_bytes())) {
            Some(&k) if self.names[k as usize] == self.once => k,
            _ => self.collided.get(&self.once).copied().unwrap_or(ONCE),
        }
    }

    /// The key of a profile's file name ([`NO_NAME`] for none), hashed once per file.
    pub(super) fn file_key(&mut self, profile: &Profile, file: Option<FileId>) -> u32 {
        let Some(f) = file else { return NO_NAME };
        if let Some(&k) = self.by_file.get(f as usize) {
            if k != u32::MAX {
                return k;
            }
        }
        let k = self.key(profile.file_name(f));
        if self.by_file.len() <= f as usize {
            self.by_file.resize(f as usize + 1, u32::MAX);
        }
        self.by_file[f as usize] = k;
        k
    }

    /// Writes `tag=(id) name` the first time in a part, `tag=(id)` after, `tag=???` for no file
    /// and `tag=` for no object or function.
    pub(super) fn write(&mut self, out: &mut Out, tag: &[u8], key: u32) {
        let k = key as usize;
        let w = out.window();
        // Tags are two or three letters: copied byte by byte rather than by a call to memcpy.
        let t = tag.len();
        for (d, &b) in w.iter_mut().zip(tag) {
            *d = b;
        }
        w[t] = b'=';
        if key == ONCE {
            out.advance(t + 1);
            out.bytes(self.once.as_bytes());
            out.byte(b'\n');
            return;
        }
        if key == NO_NAME || k >= self.names.len() {
            // A missing file is written as Valgrind writes it, `???` (an empty name is a file
            // callgrind_annotate looks for); a missing object or function stays empty.
            if tag.ends_with(b"fn") || tag.ends_with(b"ob") {
                w[t + 1] = b'\n';
                out.advance(t + 2);
            } else {
                w[t + 1..t + 5].copy_from_slice(b"???\n");
                out.advance(t + 5);
            }
            return;
        }
        let mut id = self.ids[k];
        if id == 0 {
            self.last_id += 1;
            id = self.last_id;
            self.ids[k] = id;
        }
        w[t + 1] = b'(';
        let i = put_num(w, t + 2, id as u64);
        w[i] = b')';
        if self.defined[k] {
            w[i + 1] = b'\n';
            out.advance(i + 2);
            return;
        }
        self.defined[k] = true;
        w[i + 1] = b' ';
        out.advance(i + 2);
        out.bytes(self.names[k].as_bytes());
        out.byte(b'\n');
    }

    /// Starts a part: every name is defined again where first used.
    pub(super) fn new_part(&mut self) {
        self.defined.iter_mut().for_each(|d| *d = false);
    }
}

/// A 64-bit hash of a name, eight bytes at a time (the multiply-and-rotate of rustc's FxHash):
/// C++ names run to hundreds of bytes, and SipHash byte by byte was most of the cost of
/// interning them.
fn name_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h.rotate_left(5) ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    // Mix the high bits down: the table indexes by the low bits.
    h ^ (h >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_first_writes_and_parts_define_again() {
        let mut t = NameTable::default();
        let (a, b) = (t.key("alpha"), t.key("beta"));
        assert_eq!(t.key("alpha"), a);
        assert_eq!(t.key(""), NO_NAME);
        let mut out = Out::with_capacity(0);
        t.write(&mut out, b"fn", b);
        t.write(&mut out, b"cfn", a);
        t.write(&mut out, b"fn", b);
        t.write(&mut out, b"fn", NO_NAME);
        t.new_part();
        t.write(&mut out, b"fn", a);
        t.write(&mut out, b"fn", a);
        assert_eq!(
            std::str::from_utf8(out.text()).unwrap(),
            "fn=(1) beta\ncfn=(2) alpha\nfn=(1)\nfn=\nfn=(2) alpha\nfn=(2)\n"
        );
    }

    #[test]
    fn names_used_once_are_written_whole_unless_they_have_a_key() {
        let mut t = NameTable::default();
        let main = t.key("main");
        let mut out = Out::with_capacity(0);
        let once = t.key_once("app+0x1a4");
        assert_eq!(once, ONCE);
        t.write(&mut out, b"fn", once);
        assert_eq!(t.key_once("main"), main);
        let lib = t.key_once("lib\n+0x8");
        t.write(&mut out, b"fn", lib);
        t.write(&mut out, b"fn", main);
        assert_eq!(std::str::from_utf8(out.text()).unwrap(), "fn=app+0x1a4\nfn=lib +0x8\nfn=(1) main\n");
        assert_eq!(t.names.len(), 1, "names used once are not kept");
    }

    #[test]
    fn line_breaks_in_names_become_spaces() {
        let mut t = NameTable::default();
        let k = t.key("outer\ninner\r\nend");
        assert_eq!(t.key("outer inner  end"), k);
        let mut out = Out::with_capacity(0);
        t.write(&mut out, b"fn", k);
        assert_eq!(std::str::from_utf8(out.text()).unwrap(), "fn=(1) outer inner  end\n");
    }

    #[test]
    fn names_whose_hashes_collide_keep_their_own_keys() {
        let mut t = NameTable::default();
        let a = t.key("first");
        // As if "second" and "third" hashed as "first" does.
        t.by_hash.insert(name_hash(b"second"), a);
        t.by_hash.insert(name_hash(b"third"), a);
        let (b, c) = (t.key("second"), t.key("third"));
        assert!(a != b && b != c && a != c);
        assert_eq!((t.key("first"), t.key("second"), t.key("third")), (a, b, c));
        assert_eq!((&t.names[b as usize][..], &t.names[c as usize][..]), ("second", "third"));
        assert_eq!(t.collided.len(), 2);
    }

    #[test]
    fn file_keys_are_the_keys_of_their_names() {
        let mut profile = Profile::default();
        let f = profile.files.intern("/src/a.c");
        let empty = profile.files.intern("");
        let mut t = NameTable::default();
        let k = t.file_key(&profile, Some(f));
        assert_eq!(t.key("/src/a.c"), k);
        assert_eq!(t.file_key(&profile, Some(f)), k);
        assert_eq!(t.file_key(&profile, Some(empty)), NO_NAME);
        assert_eq!(t.file_key(&profile, None), NO_NAME);
    }
}
