//! Names for the addresses of a recording, found as `perf script` finds them: each image's
//! ELF file by its build id (the image's own file when its build id matches, perf's build-id
//! cache `~/.debug`, `/usr/lib/debug`), through [`crate::symbolize`], and its functions told
//! apart and named as perf does (module `symtab`); the kernel's functions from the
//! `kallsyms` copy perf keeps in its cache, else from `/proc/kallsyms`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::records::{ImageKey, Recording};
use super::symtab;
use crate::ir::AddressKind;
use crate::symbolize::search::{self, Query};
use crate::symbolize::Symbolizer;

/// What is known at one offset of an image.
#[derive(Clone, Debug, Default)]
pub struct Place {
    /// Index into [`ImageNames::symbols`].
    pub function: Option<u32>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// The names of one image.
#[derive(Clone, Debug, Default)]
pub struct ImageNames {
    /// Functions, as `(name, offset, size)` (offsets as the recording's: file offsets, or
    /// addresses for the kernel).
    pub symbols: Vec<(String, u64, u64)>,
    /// The name `perf script` prints for each function of `symbols`, where it differs
    /// (without parameters or return type; see `symtab::demangle`).
    pub printed: Vec<Option<String>>,
    pub places: rustc_hash::FxHashMap<u64, Place>,
    /// The file that gave the names, when one did.
    pub source: Option<PathBuf>,
    /// The build id the recording states, in hex.
    pub build_id: Option<String>,
}

impl ImageNames {
    /// The function at an offset, named as `perf script` prints it.
    pub fn function(&self, offset: u64) -> Option<&str> {
        let f = self.places.get(&offset)?.function? as usize;
        let printed = self.printed.get(f).and_then(|p| p.as_deref());
        Some(printed.unwrap_or(self.symbols[f].0.as_str()))
    }
}

/// The names of every image of a recording. Images of one file (the same library in many
/// processes) share one entry: the file is read once.
#[derive(Clone, Debug, Default)]
pub struct Names {
    files: Vec<ImageNames>,
    /// Index into `files` of each image of the recording.
    of_image: Vec<usize>,
}

impl Names {
    /// Names of one file per image, in the images' order.
    #[cfg(test)]
    pub fn of_files(files: Vec<ImageNames>) -> Names {
        let of_image = (0..files.len()).collect();
        Names { files, of_image }
    }

    /// The names of image `image` of the recording.
    pub fn get(&self, image: usize) -> Option<&ImageNames> {
        self.files.get(*self.of_image.get(image)?)
    }
}

/// Names every offset in `wanted` (per image of the recording): from the files named with
/// `--symbols`, perf's build-id cache and the system's debug files; source lines too when the
/// options ask for them.
pub fn name_images(rec: &Recording, wanted: &[Vec<u64>], options: &super::Options) -> Names {
    let cache = search::perf_build_id_cache();
    let caches: Vec<PathBuf> = cache.iter().cloned().collect();
    let system = vec![PathBuf::from(search::SYSTEM_DEBUG_DIR)];
    let places = Query {
        paths: &options.symbol_paths,
        system_dirs: &system,
        build_id_caches: &caches,
        ..Query::default()
    };
    let mut kallsyms: Option<Option<Kallsyms>> = None;
    // One entry per file (path, kernel or not, build id), with the offsets of all its images.
    let mut file_index: HashMap<(&str, bool, Option<&Vec<u8>>), usize> = HashMap::new();
    let mut files: Vec<(&ImageKey, Vec<u64>)> = Vec::new();
    let mut of_image = Vec::with_capacity(rec.images.len());
    for (image, offsets) in rec.images.iter().zip(wanted) {
        let key = (image.path.as_str(), image.kernel, rec.build_ids.get(&image.path));
        let i = *file_index.entry(key).or_insert_with(|| {
            files.push((image, Vec::new()));
            files.len() - 1
        });
        files[i].1.extend(offsets.iter().copied());
        of_image.push(i);
    }
    let files = files
        .into_iter()
        .map(|(image, mut offsets)| {
            offsets.sort_unstable();
            offsets.dedup();
            let id = rec.build_ids.get(&image.path).map(|i| search::hex(i));
            if offsets.is_empty() {
                return ImageNames { build_id: id, ..ImageNames::default() };
            }
            let mut names = if image.kernel {
                let table = kallsyms.get_or_insert_with(|| Kallsyms::load(rec, cache.as_deref()));
                match table {
                    Some(k) => k.name(&offsets),
                    None => ImageNames::default(),
                }
            } else {
                name_from_elf(image, id.as_deref(), &places, &offsets, options.source_lines)
            };
            names.build_id = id;
            names
        })
        .collect();
    Names { files, of_image }
}

/// Names the offsets of one image from its ELF file, searched in the `places` of a query.
fn name_from_elf(
    image: &ImageKey,
    build_id: Option<&str>,
    places: &Query,
    offsets: &[u64],
    lines: bool,
) -> ImageNames {
    let mut names = ImageNames::default();
    let query = Query { image: Some(&image.path), build_id, ..places.clone() };
    let found = search::find(&query);
    if !found.any() {
        return names;
    }
    let symbolizer = if lines { Symbolizer::new(found) } else { Symbolizer::symbols_only(found) };
    let Ok(symbolizer) = symbolizer else { return names };
    names.source = symbolizer.found.binary.clone().or_else(|| symbolizer.found.debug.clone());
    let Some(relocation) = symbolizer.relocation(AddressKind::FileOffset, 0, None) else { return names };
    let lookup = lines.then(|| symbolizer.lookup());
    // Functions as perf tells them apart, from the symbol table the symbolizer reads.
    // perf's runtime file: the binary (a separate debug file has no `.dynsym` or PLT).
    let runtime = symbolizer.binary_file().or(symbolizer.symbol_file());
    let table = symbolizer.symbol_file().map(|f| symtab::Table::of(f, runtime));
    let mut index: HashMap<usize, u32> = HashMap::new();
    for &offset in offsets {
        let Some(stated) = relocation.to_stated(offset) else { continue };
        let mut place = Place::default();
        if let Some((table, i)) = table.as_ref().and_then(|t| Some((t, t.find(stated)?))) {
            let next = names.symbols.len() as u32;
            let f = *index.entry(i).or_insert(next);
            if f == next {
                // Named (demangled) once per function, not once per address.
                let function = table.get(i);
                let start = relocation.from_stated(function.start).unwrap_or(offset);
                let (mut name, mut printed) =
                    (crate::symbolize::demangle(function.raw), symtab::demangle(function.raw));
                if function.plt {
                    name.push_str("@plt");
                    printed.push_str("@plt");
                }
                names.printed.push((printed != name).then_some(printed));
                names.symbols.push((name, start, function.end - function.start));
            }
            place.function = Some(f);
        }
        if let Some(lookup) = &lookup {
            if let Ok(Some(loc)) = lookup.find_location(stated) {
                place.file = loc.file;
                place.line = loc.line;
            }
        }
        names.places.insert(offset, place);
    }
    names
}

/// The kernel's function symbols: `(address, name)` sorted by address, each ending where
/// the next begins.
struct Kallsyms {
    symbols: Vec<(u64, String)>,
}

impl Kallsyms {
    /// The copy perf cached for the recorded kernel's build id, else the running kernel's.
    fn load(rec: &Recording, cache: Option<&Path>) -> Option<Kallsyms> {
        let cached = rec.build_ids.get("[kernel.kallsyms]").and_then(|id| {
            let p = cache?.join("[kernel.kallsyms]").join(search::hex(id)).join("kallsyms");
            std::fs::read_to_string(p).ok()
        });
        let text = cached.or_else(|| std::fs::read_to_string("/proc/kallsyms").ok())?;
        let mut symbols: Vec<(u64, u8, String)> = Vec::new();
        for line in text.lines() {
            let mut parts = line.split_ascii_whitespace();
            let (Some(a), Some(t), Some(name)) = (parts.next(), parts.next(), parts.next()) else { continue };
            let t = t.as_bytes().first().copied().unwrap_or(b'?');
            // Code and data symbols, as perf keeps them.
            if !matches!(t.to_ascii_uppercase(), b'T' | b'W' | b'D' | b'B') {
                continue;
            }
            let Ok(address) = u64::from_str_radix(a, 16) else { continue };
            if address == 0 {
                continue;
            }
            symbols.push((address, t, name.to_string()));
        }
        symbols.sort_by_key(|s| s.0);
        // One symbol per address, as perf ends up with among aliases: it ends each symbol
        // where the next begins (so of several at one address only the last in the file's
        // order has a size) and then prefers the one with a size.
        let mut kept: Vec<(u64, String)> = Vec::with_capacity(symbols.len());
        let mut best: Option<(u64, u8, String)> = None;
        for s in symbols {
            if let Some(b) = best.take().filter(|b| b.0 != s.0) {
                kept.push((b.0, b.2));
            }
            best = Some(s);
        }
        if let Some(b) = best {
            kept.push((b.0, b.2));
        }
        (!kept.is_empty()).then_some(Kallsyms { symbols: kept })
    }

    fn name(&self, offsets: &[u64]) -> ImageNames {
        let mut names = ImageNames::default();
        let mut index: HashMap<usize, u32> = HashMap::new();
        for &address in offsets {
            let Some(i) = self.symbols.partition_point(|s| s.0 <= address).checked_sub(1) else { continue };
            let next = names.symbols.len() as u32;
            let f = *index.entry(i).or_insert(next);
            if f == next {
                let (start, name) = &self.symbols[i];
                let end = self.symbols.get(i + 1).map_or(start + 1, |s| s.0);
                names.symbols.push((name.clone(), *start, end - start));
            }
            names.places.insert(address, Place { function: Some(f), ..Place::default() });
        }
        names
    }
}
