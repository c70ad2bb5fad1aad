//! Stacks of a profile of flat costs (DCPI and dcpicat samples, Callgrind without calls or
//! blocks): every cost row becomes the stack of its function, then the functions inlined at
//! its address ([`cfghub_model::ir::Image::inlined`], filled by `--symbols`), outermost first; equal
//! stacks are summed, in order of first appearance, every event is kept, stacks whose values
//! are all zero are left out, and the stacks add up to the costs' totals. A row without a
//! function is named by the symbol covering its address, or `image+0xOFFSET`
//! ([`crate::names::code_name`]), or the image's name when it has no address.
//!
//! A profile without symbols has one such stack per sampled address: 25 million in the
//! 103 MB DCPI profile of `scripts/gen-dcpi.py`. Kept as model stacks (two lists each, and an
//! interned name per address) they took about 170 bytes an address, 42x the input. So the
//! rows of code no symbol covers are not kept at all when they are stacks of their own (the
//! image's offsets increase, no other image of the process has its name, and no function is
//! named like an address of it): [`FlatStacks::try_for_each`] walks the costs again as the
//! stacks are written and names such a frame ([`Frame::Address`]) only then, into the
//! writer's buffer. Only the stacks that sum several rows, or that are made of named frames,
//! are kept, each with the row it first appears at. Converting that profile to folded stacks
//! then peaks at 229 MiB (2.3x) in 2.45 s of CPU, against 4111 MiB in 52.8 s, and the 10 MB
//! one at 31.9 MiB, as reading it alone does, against 427 MiB (`scripts/bench-flat-stacks.sh`).

use std::convert::Infallible;

use crate::names::{code_name, image_base_name, SymbolIndex};
use cfghub_model::ir::{CostTable, FrameId, Image, Process, Profile, StackValue, Stacks, StringTable};

/// A stack kept whole by the first walk: its frames and its summed values.
struct Kept {
    frames: Vec<FrameId>,
    values: Vec<StackValue>,
}

/// A frame of a flat profile's stack.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Frame {
    /// A name of [`FlatStacks::frames`].
    Named(FrameId),
    /// Code at `offset` of an image that no symbol covers, written `IMAGE+0xOFFSET`; `image`
    /// is the image's base name in [`FlatStacks::frames`].
    Address {
        /// The image's base name, as an index into [`FlatStacks::frames`].
        image: FrameId,
        /// Bytes from the image's load address.
        offset: u64,
    },
}

/// The stacks of a profile of flat costs, named as they are written (see the module's doc).
pub struct FlatStacks<'p> {
    profile: &'p Profile,
    /// The names of [`Frame::Named`] frames and of the images of [`Frame::Address`] frames.
    pub frames: StringTable,
    processes: Vec<FlatProcess>,
    /// Whether some stack has a value that is not zero.
    has_values: bool,
}

/// What the first walk keeps of a process.
struct FlatProcess {
    /// The stacks kept whole, in order of first appearance.
    kept: Vec<Kept>,
    /// Where each stack kept whole first appears, (image, row), when rows may be named later
    /// (else empty).
    first_rows: Vec<(usize, usize)>,
    /// Per image: its base name when its rows of code no symbol covers are stacks of their
    /// own, walked again and named as they are written.
    address_rows: Vec<Option<FrameId>>,
}

impl<'p> FlatStacks<'p> {
    /// The stacks of `profile`'s costs; with `name_addresses_later`, the rows that are stacks
    /// of their own are left to [`FlatStacks::try_for_each`].
    pub fn new(profile: &'p Profile, name_addresses_later: bool) -> Self {
        let mut flat =
            FlatStacks { profile, frames: StringTable::new(), processes: Vec::new(), has_values: false };
        for process in &profile.processes {
            let mut walked = flat.first_walk(process, name_addresses_later);
            if name_addresses_later && flat.names_an_address(&walked) {
                walked = flat.first_walk(process, false);
            }
            flat.processes.push(walked);
        }
        flat
    }

    /// The stacks as model stacks, one process of them per process of the profile, every
    /// stack kept whole (built with `name_addresses_later` false).
    pub fn into_profile(self) -> Profile {
        let profile = self.profile;
        let processes = profile
            .processes
            .iter()
            .zip(self.processes)
            .map(|(process, flat)| {
                let mut stacks = Stacks::with_width(profile.events.len());
                for s in flat.kept.iter().filter(|s| s.values.iter().any(|&v| v != 0)) {
                    stacks.push(&s.frames, None, &s.values);
                }
                Process { pid: process.pid, stacks, ..Process::default() }
            })
            .collect();
        Profile {
            meta: profile.meta.clone(),
            events: profile.events.clone(),
            frames: self.frames,
            processes,
            ..Profile::default()
        }
    }

    /// Whether some stack has a value that is not zero.
    pub fn has_values(&self) -> bool {
        self.has_values
    }

    /// The profile the stacks come from.
    pub fn profile(&self) -> &'p Profile {
        self.profile
    }

    /// The index, among `process`'s images, of the image whose code at addresses
    /// [`Frame::Address`] frames of `image` (its base name) name.
    pub fn address_image(&self, process: usize, image: FrameId) -> Option<usize> {
        self.processes.get(process)?.address_rows.iter().position(|&i| i == Some(image))
    }

    /// Appends the name of `frame` to `out`.
    pub fn push_name(&self, frame: Frame, out: &mut Vec<u8>) {
        match frame {
            Frame::Named(f) => out.extend_from_slice(self.frames.get(f).as_bytes()),
            Frame::Address { image, offset } => {
                out.extend_from_slice(self.frames.get(image).as_bytes());
                out.extend_from_slice(b"+0x");
                push_hex(offset, out);
            }
        }
    }

    /// The first walk over a process's costs: the frames of every row, the stacks kept whole
    /// summed, and which images' rows of code no symbol covers are left to the second walk.
    fn first_walk(&mut self, process: &Process, name_addresses_later: bool) -> FlatProcess {
        let profile = self.profile;
        let events = profile.events.len();
        let base_names: Vec<String> = process.images.iter().map(|i| image_base_name(profile, i)).collect();
        let mut walked = FlatProcess {
            kept: Vec::new(),
            first_rows: Vec::new(),
            address_rows: vec![None; process.images.len()],
        };
        // Each distinct stack once: indices into `kept`, by the hash of their frames.
        let mut seen: hashbrown::HashTable<usize> = hashbrown::HashTable::new();
        let mut frames: Vec<FrameId> = Vec::new();
        for (i, image) in process.images.iter().enumerate() {
            if image.costs.is_empty() {
                continue;
            }
            let named_once = process
                .images
                .iter()
                .zip(&base_names)
                .filter(|(other, name)| !other.costs.is_empty() && **name == base_names[i])
                .count()
                == 1;
            if name_addresses_later && named_once && offsets_increase(&image.costs) {
                walked.address_rows[i] = Some(self.frames.intern(&base_names[i]));
            }
            let index = SymbolIndex::new(image);
            // The frame of each symbol, once met.
            let mut by_symbol: Vec<Option<FrameId>> = vec![None; image.symbols.len()];
            // The frame of each inlined function's name, once met.
            let mut by_inline_name: Vec<Option<FrameId>> = vec![None; image.inline_names.len()];
            let mut symbols = image.costs.cursor();
            let Ok(()) =
                image.costs.try_for_each_row_values(|row, offset, values| -> Result<(), Infallible> {
                    let symbol = symbols.symbol(row);
                    if walked.address_rows[i].is_some()
                        && bare_address(image, &index, symbol, offset).is_some()
                    {
                        self.has_values |= values.iter().any(|&v| v != 0);
                        return Ok(());
                    }
                    let symbol = symbol.or_else(|| offset.and_then(|o| index.covering(o)));
                    frames.clear();
                    frames.push(match (symbol, offset) {
                        (Some(s), _) => *by_symbol[s as usize]
                            .get_or_insert_with(|| self.frames.intern(&image.symbols[s as usize].name)),
                        (None, Some(o)) => self.frames.intern(&code_name(profile, image, &index, o)),
                        (None, None) => self.frames.intern(&base_names[i]),
                    });
                    if let Some(o) = offset {
                        if let Ok(k) = image.inlined.binary_search_by_key(&o, |i| i.offset) {
                            frames.extend(image.inlined[k].frames.iter().rev().map(|f| {
                                *by_inline_name[f.name as usize]
                                    .get_or_insert_with(|| self.frames.intern(image.inline_names.get(f.name)))
                            }));
                        }
                    }
                    let kept = &mut walked.kept;
                    let hash = frames_hash(&frames);
                    let at = match seen.find(hash, |&k| kept[k].frames == frames) {
                        Some(&k) => k,
                        None => {
                            let stack = Kept { frames: frames.clone(), values: vec![0; events] };
                            kept.push(stack);
                            if name_addresses_later {
                                walked.first_rows.push((i, row));
                            }
                            seen.insert_unique(hash, kept.len() - 1, |&j| frames_hash(&kept[j].frames));
                            kept.len() - 1
                        }
                    };
                    for (slot, &v) in kept[at].values.iter_mut().zip(values) {
                        *slot += StackValue::from(v);
                    }
                    Ok(())
                });
        }
        self.has_values |= walked.kept.iter().any(|s| s.values.iter().any(|&v| v != 0));
        walked
    }

    /// Whether a stack kept whole is one frame named like an address of an image whose
    /// addresses are named later (a function called `app+0x10`): the two may be one stack.
    fn names_an_address(&self, walked: &FlatProcess) -> bool {
        let images: Vec<&str> = walked.address_rows.iter().flatten().map(|&f| self.frames.get(f)).collect();
        !images.is_empty()
            && walked.kept.iter().filter_map(|s| (s.frames.len() == 1).then_some(s.frames[0])).any(|f| {
                let name = self.frames.get(f);
                images
                    .iter()
                    .any(|image| name.strip_prefix(image).is_some_and(|rest| rest.starts_with("+0x")))
            })
    }

    /// `f(process, frames, values)` for every stack whose values are not all zero, in order of
    /// first appearance: the second walk over the costs, which names the rows left to it.
    pub fn try_for_each<E>(
        &self,
        mut f: impl FnMut(usize, &[Frame], &[StackValue]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut frames: Vec<Frame> = Vec::new();
        let mut values: Vec<StackValue> = Vec::new();
        for (p, (process, walked)) in self.profile.processes.iter().zip(&self.processes).enumerate() {
            let kept = &walked.kept;
            if walked.address_rows.iter().all(Option::is_none) {
                // Every stack is kept whole.
                for stack in kept.iter().filter(|s| s.values.iter().any(|&v| v != 0)) {
                    f(p, named(stack, &mut frames), &stack.values)?;
                }
                continue;
            }
            // The next stack kept whole, which first appears at `first_rows[next]`.
            let mut next = 0;
            for (i, image) in process.images.iter().enumerate() {
                let Some(image_name) = walked.address_rows[i] else {
                    while walked.first_rows.get(next).is_some_and(|&(at, _)| at == i) {
                        if kept[next].values.iter().any(|&v| v != 0) {
                            f(p, named(&kept[next], &mut frames), &kept[next].values)?;
                        }
                        next += 1;
                    }
                    continue;
                };
                let index = SymbolIndex::new(image);
                let mut symbols = image.costs.cursor();
                image.costs.try_for_each_row_values(|row, offset, row_values| -> Result<(), E> {
                    if walked.first_rows.get(next) == Some(&(i, row)) {
                        named(&kept[next], &mut frames);
                        values.clone_from(&kept[next].values);
                        next += 1;
                    } else if let Some(offset) = bare_address(image, &index, symbols.symbol(row), offset) {
                        frames.clear();
                        frames.push(Frame::Address { image: image_name, offset });
                        values.clear();
                        values.extend(row_values.iter().map(|&v| StackValue::from(v)));
                    } else {
                        return Ok(());
                    }
                    match values.iter().any(|&v| v != 0) {
                        true => f(p, &frames, &values),
                        false => Ok(()),
                    }
                })?;
            }
        }
        Ok(())
    }
}

/// Appends `n` in lower-case hexadecimal digits, as `{:x}` writes it (the formatting
/// machinery took a fifth of drawing 25 million addresses).
fn push_hex(n: u64, out: &mut Vec<u8>) {
    let digits = (64 - n.leading_zeros()).div_ceil(4).max(1);
    out.extend((0..digits).rev().map(|i| b"0123456789abcdef"[(n >> (4 * i) & 0xf) as usize]));
}

/// The frames of a stack kept whole, in `frames`.
fn named<'f>(stack: &Kept, frames: &'f mut Vec<Frame>) -> &'f [Frame] {
    frames.clear();
    frames.extend(stack.frames.iter().map(|&f| Frame::Named(f)));
    frames
}

/// The offset of a row that is code no symbol covers, with no inlined functions: a stack of
/// one frame named by its address.
fn bare_address(image: &Image, index: &SymbolIndex, symbol: Option<u32>, offset: Option<u64>) -> Option<u64> {
    let offset = offset?;
    let bare = symbol.is_none()
        && index.covering(offset).is_none()
        && image.inlined.binary_search_by_key(&offset, |i| i.offset).is_err();
    bare.then_some(offset)
}

/// Whether every row's offset is above the offset of the row before (rows without one aside):
/// then no two rows have one address.
fn offsets_increase(costs: &CostTable) -> bool {
    let mut last = None;
    costs.offsets().flatten().all(|o| {
        let above = last.is_none_or(|l| o > l);
        last = Some(o);
        above
    })
}

fn frames_hash(frames: &[FrameId]) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Cost, Event, InlineFrame, Inlined, Symbol};

    #[test]
    fn addresses_are_written_in_hexadecimal_as_format_writes_them() {
        for n in [0, 1, 0xf, 0x10, 0x120070004, 0xdead_beef_0000_0001, u64::MAX] {
            let mut out = Vec::new();
            push_hex(n, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), format!("{n:x}"));
        }
    }

    fn image(profile: &mut Profile, path: &str, rows: &[(Option<u32>, Option<u64>, u64)]) -> Image {
        let mut image = Image { file: Some(profile.files.intern(path)), ..Image::default() };
        for &(symbol, offset, v) in rows {
            image.costs.push(Cost { symbol, offset, values: [v].into_iter().collect(), ..Cost::default() });
        }
        image
    }

    /// (frame names, values) of every stack, as written.
    fn written(flat: &FlatStacks) -> Vec<(String, Vec<StackValue>)> {
        let mut out = Vec::new();
        let Ok(()) = flat.try_for_each(|p, frames, values| -> Result<(), Infallible> {
            let mut names = format!("{p}:");
            for &f in frames {
                let mut name = Vec::new();
                flat.push_name(f, &mut name);
                names.push_str(&String::from_utf8(name).unwrap());
                names.push(';');
            }
            out.push((names, values.to_vec()));
            Ok(())
        });
        out
    }

    /// A process of two images: `app` with a symbol, inlined frames at one address, addresses
    /// no symbol covers and a row without an address; `lib.so` with a repeated address.
    fn mixed() -> Profile {
        let mut p = Profile { events: vec![Event::new("cycles")], ..Profile::default() };
        let mut app = image(
            &mut p,
            "/bin/app",
            &[
                (None, Some(0x4), 1),
                (None, Some(0x8), 0),
                (None, Some(0x20), 3),
                (None, None, 4),
                (None, Some(0x30), 6),
                (None, Some(0x100), 2),
                (None, None, 7),
                (None, Some(0x104), 5),
                (None, Some(0x200), 8),
            ],
        );
        app.symbols.push(Symbol { name: "f".into(), offset: Some(0x100), size: Some(0x10), file: None });
        let g = app.inline_names.intern("g");
        app.inlined.push(Inlined { offset: 0x30, frames: vec![InlineFrame::new(g, None, None)].into() });
        let lib = image(
            &mut p,
            "/lib/lib.so",
            &[(None, Some(0x10), 1), (None, Some(0x10), 2), (None, Some(0x8), 3)],
        );
        p.processes.push(Process { images: vec![app, lib], ..Process::default() });
        p
    }

    #[test]
    fn addresses_named_later_give_the_stacks_of_every_row_named_at_once() {
        let p = mixed();
        let (later, at_once) = (FlatStacks::new(&p, true), FlatStacks::new(&p, false));
        let expected: Vec<(String, Vec<StackValue>)> = [
            ("app+0x4;", 1),
            ("app+0x20;", 3),
            ("app;", 11),
            ("app+0x30;g;", 6),
            ("f;", 7),
            ("app+0x200;", 8),
            ("lib.so+0x10;", 3),
            ("lib.so+0x8;", 3),
        ]
        .iter()
        .map(|(n, v)| (format!("0:{n}"), vec![*v]))
        .collect();
        assert_eq!(written(&at_once), expected);
        assert_eq!(written(&later), expected);
        // Named later: the addresses of `app` that are stacks of their own are not kept; those
        // of `lib.so`, where an address repeats, are.
        let kept: Vec<&str> = later.processes[0].kept.iter().map(|s| later.frames.get(s.frames[0])).collect();
        assert_eq!(kept, ["app", "app+0x30", "f", "lib.so+0x10", "lib.so+0x8"]);
    }

    #[test]
    fn a_million_addresses_without_symbols_keep_no_stack() {
        let mut p = Profile { events: vec![Event::new("cycles")], ..Profile::default() };
        let rows: Vec<_> = (0..1_000_000u64).map(|a| (None, Some(4 * a), 1 + a % 3)).collect();
        let app = image(&mut p, "/bin/app", &rows);
        p.processes.push(Process { images: vec![app], ..Process::default() });
        let flat = FlatStacks::new(&p, true);
        assert!(flat.processes[0].kept.is_empty());
        assert_eq!(flat.frames.len(), 1, "the image's name alone");
        let (mut stacks, mut total) = (0, 0);
        let Ok(()) = flat.try_for_each(|_, _, v| -> Result<(), Infallible> {
            stacks += 1;
            total += v[0];
            Ok(())
        });
        assert_eq!((stacks, total), (1_000_000, 1_999_999));
    }

    #[test]
    fn a_function_named_like_an_address_is_one_stack_with_it() {
        let mut p = Profile { events: vec![Event::new("cycles")], ..Profile::default() };
        let mut app = image(&mut p, "/bin/app", &[(None, Some(0x10), 1), (Some(0), None, 2)]);
        app.symbols.push(Symbol { name: "app+0x10".into(), ..Symbol::default() });
        p.processes.push(Process { images: vec![app], ..Process::default() });
        let expected = vec![("0:app+0x10;".to_string(), vec![3])];
        assert_eq!(written(&FlatStacks::new(&p, true)), expected);
        assert_eq!(written(&FlatStacks::new(&p, false)), expected);
    }
}
