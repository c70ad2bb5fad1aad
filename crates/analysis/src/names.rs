//! Names for code locations: the symbol covering an address, and routine names.

use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{Image, NodeRef, Process, Profile};

/// Symbols of one image sorted by start, for address look-ups.
pub struct SymbolIndex {
    /// (start offset, end offset, symbol index), sorted by start.
    ranges: Vec<(u64, u64, u32)>,
}

impl SymbolIndex {
    /// The index of `image`'s symbols; symbols without an offset are left out, and one without a
    /// size covers one byte.
    pub fn new(image: &Image) -> Self {
        Self::of(&image.symbols)
    }

    /// The index of `symbols` (an image's, or a binary's own).
    pub fn of(symbols: &[cfghub_model::ir::Symbol]) -> Self {
        let mut ranges: Vec<(u64, u64, u32)> = symbols
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let start = s.offset?;
                Some((start, start.saturating_add(s.size.unwrap_or(0).max(1)), i as u32))
            })
            .collect();
        ranges.sort_unstable();
        SymbolIndex { ranges }
    }

    /// The symbol whose range covers `offset` (the innermost-starting one when ranges nest).
    pub fn covering(&self, offset: u64) -> Option<u32> {
        let upto = self.ranges.partition_point(|r| r.0 <= offset);
        self.covering_below(offset, upto)
    }

    /// [`SymbolIndex::covering`] for offsets looked up mostly in order (a cost table's rows,
    /// a function's after another's): `hint` (0 to start) keeps the place of the last one,
    /// and an offset at the same place needs no search.
    pub fn covering_from(&self, offset: u64, hint: &mut usize) -> Option<u32> {
        let at = *hint;
        let here = at <= self.ranges.len()
            && (at == 0 || self.ranges[at - 1].0 <= offset)
            && self.ranges.get(at).is_none_or(|r| r.0 > offset);
        if !here {
            *hint = self.ranges.partition_point(|r| r.0 <= offset);
        }
        self.covering_below(offset, *hint)
    }

    /// The symbol covering `offset` among the first `upto` ranges (those starting at or
    /// before it).
    fn covering_below(&self, offset: u64, upto: usize) -> Option<u32> {
        self.ranges[..upto].iter().rev().take(8).find(|r| offset < r.1).map(|r| r.2)
    }
}

/// For every symbol of every image: the symbol of its base function when it is a recursion
/// level (Callgrind's names for the levels of a recursion) (`fib'2` -> `fib`, when `fib` is a symbol of the image), else itself.
pub fn recursion_bases(process: &cfghub_model::ir::Process) -> Vec<Vec<u32>> {
    process
        .images
        .iter()
        .map(|image| {
            let names: std::collections::HashMap<&str, u32> =
                image.symbols.iter().enumerate().map(|(k, s)| (s.name.as_str(), k as u32)).collect();
            image
                .symbols
                .iter()
                .enumerate()
                .map(|(k, s)| recursion_base(&s.name).and_then(|b| names.get(b).copied()).unwrap_or(k as u32))
                .collect()
        })
        .collect()
}

/// The base function of a recursion-level name (`fib'2` -> `fib`), when the name has such a
/// suffix.
pub fn recursion_base(name: &str) -> Option<&str> {
    let (base, level) = name.rsplit_once('\'')?;
    (!base.is_empty() && !level.is_empty() && level.bytes().all(|b| b.is_ascii_digit())).then_some(base)
}

/// The base name of an image's file, or `image<ID>` when it has none.
pub fn image_base_name(profile: &Profile, image: &Image) -> String {
    let full = profile.image_name(image);
    match full.rsplit_once('/') {
        Some((_, base)) if !base.is_empty() => base.to_string(),
        _ => full,
    }
}

/// The name of code at `offset` in `image`: the covering symbol, `symbol+0xN` when `offset`
/// is inside it, or `image+0xOFFSET` when no symbol covers it.
pub fn code_name(profile: &Profile, image: &Image, index: &SymbolIndex, offset: u64) -> String {
    match index.covering(offset) {
        Some(s) => {
            let sym = &image.symbols[s as usize];
            let start = sym.offset.unwrap_or(offset);
            if start == offset {
                sym.name.clone()
            } else {
                format!("{}+{:#x}", sym.name, offset - start)
            }
        }
        None => format!("{}+{:#x}", image_base_name(profile, image), offset),
    }
}

/// The name of code at `offset` in `image` as Valgrind names it in a Callgrind profile:
/// [`code_name`] where a symbol covers it, else the address its object states (`stated_base`
/// plus the offset, as Callgrind positions are written: `addresses::stated_base`) in 16 hex
/// digits (`0x00000000000154bb`), as Valgrind names code without a symbol and as `perf
/// report` names such an address of a library or PIE.
pub fn valgrind_code_name(
    profile: &Profile,
    image: &Image,
    index: &SymbolIndex,
    offset: u64,
    stated_base: u64,
) -> String {
    match index.covering(offset) {
        Some(_) => code_name(profile, image, index, offset),
        None => format!("0x{:016x}", stated_base.wrapping_add(offset)),
    }
}

/// The name of a routine: its own symbol when the format names routines (CSI), else the code
/// at its entry's address, else `routine_ID` (the entry block's id) in an image without
/// addresses.
pub fn routine_name(
    profile: &Profile,
    image: &Image,
    index: &SymbolIndex,
    r: &cfghub_model::ir::Routine,
) -> String {
    if let Some(s) = r.symbol.and_then(|s| image.symbols.get(s as usize)) {
        return s.name.clone();
    }
    match image.blocks.get(r.entry as usize) {
        Some(b) if !image.no_addresses => code_name(profile, image, index, b.offset),
        Some(b) => format!("routine_{}", b.id),
        None => format!("routine_{}", r.entry),
    }
}

/// Blocks of images without addresses (CSI metadata): writers whose format places code by
/// address name them in a warning.
pub(crate) fn blocks_without_addresses(profile: &Profile) -> usize {
    profile.processes.iter().flat_map(|p| &p.images).filter(|i| i.no_addresses).map(|i| i.blocks.len()).sum()
}

/// Names, in a warning of the writer `format`, the blocks without addresses it cannot place
/// and what becomes of them.
pub fn warn_blocks_without_addresses(
    profile: &Profile,
    findings: &mut cfghub_model::error::Findings,
    format: &str,
    consequence: &str,
) {
    let n = blocks_without_addresses(profile);
    if n > 0 {
        findings.warn(None, format!("{format}: {n} block(s) have no address (CSI metadata): {consequence}"));
    }
}

/// The first image, over every process, with a function `main` at an address, as `(process,
/// image)`: the program's own binary (pprof's first mapping, BOLT's and AutoFDO's binary).
pub fn image_with_main(processes: &[Process]) -> Option<(usize, u32)> {
    processes.iter().enumerate().find_map(|(p, process)| {
        let i = process
            .images
            .iter()
            .position(|i| i.symbols.iter().any(|s| s.name == "main" && s.offset.is_some()));
        i.map(|i| (p, i as u32))
    })
}

/// The image a profile of one program is mostly about, for formats that describe one binary
/// (BOLT profiles, LLVM sample profiles), as `(process, image)`: the first image with a
/// function `main` in any process, else the image whose blocks' edges were traversed most,
/// else the one with the most cost (of the first event), else the most cost rows. Every process counts: a recording of a command can
/// open with the few kernel samples of the process before its `exec` (perf's `perf-exec`).
fn main_image(processes: &[Process]) -> Option<(usize, u32)> {
    image_with_main(processes).or_else(|| {
        let mut candidates = Vec::new();
        for (p, process) in processes.iter().enumerate() {
            let mut traversals = vec![0u64; process.images.len()];
            for e in &process.edges {
                if let NodeRef::Block(s) = e.source {
                    traversals[s.image as usize] = traversals[s.image as usize].saturating_add(e.total());
                }
            }
            for (i, image) in process.images.iter().enumerate() {
                candidates.push((
                    (traversals[i], image.costs.total(0), image.costs.len()),
                    std::cmp::Reverse(p),
                    i,
                ));
            }
        }
        // Ties: the earliest process, and in it the last image (as this choice always made it).
        candidates.into_iter().max().map(|(_, std::cmp::Reverse(p), i)| (p, i as u32))
    })
}

/// The binary a profile of one binary (BOLT profiles, LLVM sample profiles) is written for,
/// in every process that loaded it (as perf2bolt adds up every process of the binary).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChosenBinary {
    /// `(process, image)` indices of each process that has the binary; the first names it.
    pub places: Vec<(usize, u32)>,
    /// The other images with blocks or costs, by name, sorted: what is left out.
    pub others: Vec<String>,
}

impl ChosenBinary {
    /// Whether `(process, image)` is the binary.
    pub fn holds(&self, process: usize, image: u32) -> bool {
        self.places.iter().any(|&(p, i)| p == process && i == image)
    }

    /// The images left out and how to write one of them instead, for a warning.
    pub fn left_out_note(&self) -> String {
        const SHOWN: usize = 5;
        let mut names: Vec<&str> = self.others.iter().take(SHOWN).map(String::as_str).collect();
        if self.others.len() > SHOWN {
            names.push("...");
        }
        format!("{}; write one of them with --image NAME", names.join(", "))
    }
}

/// Picks the binary: the image `choice` names (its id, its path, or its file's base name),
/// else the image of the file `binary` (`--symbols`: by path, else by base name), else
/// [`main_image`]; then the image of the same file in every process. `None`
/// for a profile without images; an error when `choice` names no image.
pub fn choose_binary(
    profile: &Profile,
    choice: Option<&str>,
    binary: Option<&std::path::Path>,
) -> Result<Option<ChosenBinary>> {
    let base_name =
        |name: &str| std::path::Path::new(name).file_name().map(|b| b.to_string_lossy().into_owned());
    let find = |matches: &dyn Fn(&Image, &str) -> bool| {
        profile.processes.iter().enumerate().find_map(|(p, process)| {
            let i = process.images.iter().position(|image| matches(image, &profile.image_name(image)))?;
            Some((p, i as u32))
        })
    };
    let first = if let Some(choice) = choice {
        let named = |image: &Image, name: &str| {
            choice.parse::<u64>().is_ok_and(|id| id == image.id)
                || name == choice
                || base_name(name).as_deref() == Some(choice)
        };
        let Some(found) = find(&named) else {
            let mut names: Vec<String> =
                profile.processes.iter().flat_map(|p| &p.images).map(|i| profile.image_name(i)).collect();
            names.sort();
            names.dedup();
            return Err(Error::usage(format!("--image {choice}: the profile has no such image"))
                .with_hint(format!("its images: {}", names.join(", "))));
        };
        Some(found)
    } else {
        let by_file = binary.and_then(|b| {
            let path = b.to_string_lossy();
            find(&|_: &Image, name: &str| name == path)
                .or_else(|| find(&|_: &Image, name: &str| base_name(name) == base_name(&path)))
        });
        by_file.or_else(|| main_image(&profile.processes))
    };
    let Some((p, i)) = first else { return Ok(None) };
    let name = profile.image_name(&profile.processes[p].images[i as usize]);
    let mut places = vec![(p, i)];
    let mut others = Vec::new();
    for (q, process) in profile.processes.iter().enumerate() {
        for (j, image) in process.images.iter().enumerate() {
            let this = profile.image_name(image);
            if this == name {
                if q != p && !places.iter().any(|&(k, _)| k == q) {
                    places.push((q, j as u32));
                }
            } else if !image.blocks.is_empty() || !image.costs.is_empty() {
                others.push(this);
            }
        }
    }
    others.sort();
    others.dedup();
    Ok(Some(ChosenBinary { places, others }))
}

/// An error for a writer whose format is made from code addresses when the profile has none:
/// no blocks with addresses and no samples at addresses (a Callgrind profile without
/// `--dump-instr=yes`, folded stacks, CSI), with the hint to record one with addresses.
pub fn require_code_addresses(profile: &Profile, format: &str) -> Result<()> {
    let images = || profile.processes.iter().flat_map(|p| p.images.iter());
    if images().any(|i| (!i.no_addresses && !i.blocks.is_empty()) || i.costs.has_offsets()) {
        return Ok(());
    }
    Err(Error::input(format!(
        "{format}: this profile has no code addresses (no blocks, no samples at addresses)"
    ))
    .with_hint(
        "record one with addresses: valgrind --tool=callgrind --dump-instr=yes --collect-jumps=yes, \
             a Pin/SDE DCFG or its trace, or DCPI samples",
    ))
}

/// A function's name without its parameters and qualifiers (`shapes::Sq::area() const` ->
/// `shapes::Sq::area`), as users type it: cut at the first `(` outside template arguments
/// that does not open C++'s `(anonymous namespace)`.
pub fn without_parameters(name: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in name.char_indices() {
        match c {
            '<' | '[' | '{' => depth += 1,
            '>' | ']' | '}' => depth = depth.saturating_sub(1),
            '(' if depth == 0 && i > 0 && !name[i..].starts_with("(anonymous namespace)") => {
                return &name[..i];
            }
            _ => {}
        }
    }
    name
}

/// The number of typing slips between two names: letters added, left out or changed, and two
/// neighbours swapped (the optimal string alignment distance).
pub fn typing_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    // d[i][j]: the distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let change = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + change);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod typed_name_tests {
    use super::*;

    #[test]
    fn parameters_and_qualifiers_go_templates_and_anonymous_namespaces_stay() {
        assert_eq!(without_parameters("shapes::Sq::area() const"), "shapes::Sq::area");
        assert_eq!(without_parameters("AM<int (*)(long)>::spin(long)"), "AM<int (*)(long)>::spin");
        assert_eq!(without_parameters("(anonymous namespace)::f(int)"), "(anonymous namespace)::f");
        assert_eq!(without_parameters("main"), "main");
    }

    #[test]
    fn typing_distance_counts_slips() {
        assert_eq!(typing_distance("folded", "foldd"), 1);
        assert_eq!(typing_distance("main", "mian"), 1);
        assert_eq!(typing_distance("area", "areas"), 1);
        assert_eq!(typing_distance("main", "exit"), 3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hinted_look_up_finds_what_a_search_finds() {
        let sym = |name: &str, offset, size| cfghub_model::ir::Symbol {
            name: name.into(),
            offset: Some(offset),
            size,
            file: None,
        };
        let symbols = [
            sym("a", 0x10, Some(0x20)),
            sym("b", 0x18, Some(4)),
            sym("c", 0x40, None),
            sym("d", 0x50, Some(8)),
        ];
        let index = SymbolIndex::of(&symbols);
        let mut hint = 0;
        for offset in [0x50, 0x10, 0x19, 0x1c, 0x2f, 0x40, 0x41, 0x57, 0x58, 0x0, 0x12, 0x12, 0x60] {
            assert_eq!(index.covering_from(offset, &mut hint), index.covering(offset), "{offset:#x}");
        }
    }
}
