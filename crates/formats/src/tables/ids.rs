//! Identifiers derived from content, so that the stack tables of any number of profiles join
//! without renumbering: the same frame, or the same call path, has the same id in every
//! profile that holds it, whichever tool wrote the profile and in whatever order.
//!
//! An id is the 64-bit FNV-1a hash of its fields, each written as its length (8 bytes, little
//! endian) and its bytes, finished with the SplitMix64 mixer and taken as a signed 64-bit
//! integer (`BIGINT`, which every SQL engine joins natively):
//!
//! - a frame: `"frame"`, its name, its source file's path (empty when none), its line, its
//!   system name, and for a frame named by its address the address and its image's build id
//!   (else the image's path);
//! - an image: `"image"` and its build id (else its path);
//! - a call path (a `stack_nodes` row): `"node"`, its parent's id (0 at a root) and its frame's id.
//!
//! Two different frames or paths share an id with a chance of about `n^2 / 2^65` for `n` of
//! them (one in 3.6 million for 10 million frames); the reader refuses a folder where one id
//! names two different frames.

use cfghub_model::ir::{FrameId, Profile};

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// The hash of a list of fields.
#[derive(Clone, Copy)]
pub struct IdHasher(u64);

impl IdHasher {
    /// A hash of `kind` (`"frame"`, `"node"`) and the fields that follow.
    pub fn new(kind: &str) -> IdHasher {
        IdHasher(OFFSET).field(kind.as_bytes())
    }

    /// Adds a field.
    pub fn field(mut self, bytes: &[u8]) -> IdHasher {
        for &b in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(PRIME);
        }
        self
    }

    /// Adds a number.
    pub fn number(self, n: u64) -> IdHasher {
        self.field(&n.to_le_bytes())
    }

    /// The id.
    pub fn finish(self) -> i64 {
        // SplitMix64's finalizer: every input bit moves about half the output bits.
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as i64
    }
}

/// What is wrong with a frame id that names two frames: a collision, or tables that do not
/// come from one profile's ids.
pub fn two_frames(id: i64, first: &str, second: &str) -> String {
    format!("frame id {id} names both {first:?} and {second:?}")
}

/// The id of frame `f` of `profile`.
pub fn frame_id(profile: &Profile, f: FrameId) -> i64 {
    let source = profile.frame_source(f);
    let file = source.and_then(|s| s.file).map_or("", |file| profile.files.get(file));
    let mut h = IdHasher::new("frame")
        .field(profile.frames.get(f).as_bytes())
        .field(file.as_bytes())
        .number(source.and_then(|s| s.line).map_or(0, u64::from))
        .field(source.and_then(|s| s.system_name.as_deref()).unwrap_or("").as_bytes());
    if let Some(address) = source.and_then(|s| s.address) {
        let image = address
            .image
            .and_then(|i| profile.processes.first().and_then(|p| p.images.get(i as usize)))
            .map(|image| image.build_id.clone().unwrap_or_else(|| profile.image_name(image)))
            .unwrap_or_default();
        h = h.number(address.address).field(image.as_bytes());
    }
    h.finish()
}

/// The id of an image: `"image"` and its build id, else its path (the same binary in every
/// profile of a fleet, wherever it was loaded).
pub fn image_id(profile: &Profile, image: &cfghub_model::ir::Image) -> i64 {
    let name = image.build_id.clone().unwrap_or_else(|| profile.image_name(image));
    IdHasher::new("image").field(name.as_bytes()).finish()
}

/// The id of the call path of `frame` called from the path `parent` (`None` at a root).
pub fn node_id(parent: Option<i64>, frame: i64) -> i64 {
    IdHasher::new("node").number(parent.unwrap_or(0) as u64).number(frame as u64).finish()
}

/// The id of every node of `stacks`, parents before children as the model makes them, given
/// every frame's id.
pub fn node_ids(stacks: &cfghub_model::ir::Stacks, frame_ids: &[i64]) -> Vec<i64> {
    let mut ids: Vec<i64> = Vec::with_capacity(stacks.nodes().len());
    for node in stacks.nodes() {
        let parent = (node.parent != cfghub_model::ir::NO_INDEX).then(|| ids[node.parent as usize]);
        ids.push(node_id(parent, frame_ids[node.frame as usize]));
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_content_and_nothing_else() {
        let mut a = Profile::default();
        let mut b = Profile::default();
        let fa = a.frames.intern("main");
        b.frames.intern("other");
        let fb = b.frames.intern("main");
        assert_eq!(frame_id(&a, fa), frame_id(&b, fb));
        assert_ne!(frame_id(&a, fa), frame_id(&b, FrameId::default()));
        let root = node_id(None, frame_id(&a, fa));
        assert_eq!(root, node_id(None, frame_id(&b, fb)));
        assert_ne!(node_id(Some(root), frame_id(&a, fa)), root);
        // The fields are delimited: ("ab", "c") is not ("a", "bc").
        assert_ne!(
            IdHasher::new("x").field(b"ab").field(b"c").finish(),
            IdHasher::new("x").field(b"a").field(b"bc").finish()
        );
        // Fixed forever, so that tables written by any version join: "main" without a source,
        // as an independent implementation of the description above computes it.
        assert_eq!(frame_id(&a, fa), 5741750608679452167);
    }
}
