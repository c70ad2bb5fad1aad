//! One ELF file, mapped: what the search for debug information asks of it (build id, debug
//! links, whether it has DWARF or a symbol table) and what symbolization takes from it
//! (loadable segments, function symbols, DWARF sections).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::{
    Object, ObjectKind, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SegmentFlags, SymbolKind,
};

use cfghub_model::error::{Error, Result};
use cfghub_model::mem::MappedFile;

/// A loadable segment (`PT_LOAD`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// `p_vaddr`: where the file says the segment goes.
    pub address: u64,
    /// `p_memsz`.
    pub size: u64,
    /// `p_offset`, `p_filesz`.
    pub file_offset: u64,
    /// `p_filesz`: bytes of the segment the file holds; memory beyond them up to `size` is
    /// zero-filled.
    pub file_size: u64,
    /// `PF_X`: the segment holds code.
    pub executable: bool,
}

/// A function symbol of the symbol table.
#[derive(Clone, Debug)]
pub struct FunctionSymbol {
    /// Start, as the file states it (`st_value`).
    pub address: u64,
    /// Size as stated; 0 when the table does not say (the symbol then ends at the next one).
    pub size: u64,
    /// The raw (mangled) name.
    pub name: &'static str,
}

/// A symbol of the table as perf keeps it for naming code addresses: functions (`STT_FUNC`,
/// `STT_GNU_IFUNC`) and labels (`STT_NOTYPE` in a text section, not hidden), with the ELF
/// facts perf chooses among aliases by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSymbol {
    /// Start, as the file states it (`st_value`).
    pub address: u64,
    /// Size in bytes as stated (`st_size`); 0 when the table does not say.
    pub size: u64,
    /// The raw (mangled) name.
    pub name: &'static str,
    /// `STB_LOCAL`, `STB_GLOBAL`, `STB_WEAK`.
    pub binding: u8,
    /// `STT_NOTYPE`: a label.
    pub label: bool,
}

/// An ELF file mapped into memory and parsed. Its bytes live as long as the value (the
/// `'static` slices handed out below borrow from `map`, which is never moved out or dropped
/// before the value itself: see [`Storage`]).
pub struct ElfFile {
    /// The path the file was opened at.
    pub path: PathBuf,
    /// The parsed file, borrowing the mapped bytes.
    pub object: object::File<'static, &'static [u8]>,
    map: Arc<MappedFile>,
}

impl ElfFile {
    /// Maps and parses `path`. Errors say what the file is when it is not an ELF file.
    pub fn open(path: &Path) -> Result<ElfFile> {
        let shown = path.display().to_string();
        // Only a regular file can be an ELF file: opening a FIFO would wait for a writer
        // forever, and a device has no end.
        let meta = std::fs::metadata(path).map_err(|e| Error::io(shown.clone(), e))?;
        if !meta.is_file() {
            let kind =
                if meta.is_dir() { "a folder" } else { "not a regular file (a FIFO, socket or device)" };
            return Err(Error::input(format!("{kind}, not an ELF file"))
                .in_file(shown)
                .with_hint("--symbols takes an ELF binary, a separate debug file, or a directory of them"));
        }
        cfghub_model::io::note_read(path, &meta);
        let map = MappedFile::open_lazy(path).map_err(|e| Error::io(shown.clone(), e))?;
        let map = Arc::new(map);
        // SAFETY: the slice borrows the mapping, which `ElfFile` owns through `map` and keeps
        // alive (and unmoved: it is behind an `Arc`) for as long as `object` exists.
        let bytes: &'static [u8] = unsafe { std::slice::from_raw_parts(map.as_ptr(), map.len()) };
        if !bytes.starts_with(b"\x7fELF") {
            return Err(Error::input("not an ELF file (no \\x7fELF magic at byte 0)")
                .in_file(shown)
                .with_hint("--symbols takes an ELF binary, a separate debug file, or a directory of them"));
        }
        let object = object::File::parse(bytes).map_err(|e| {
            Error::input(format!("unreadable ELF file: {e}"))
                .in_file(shown.clone())
                .with_hint("the file may be truncated; rebuild it or point --symbols at another copy")
        })?;
        if object.format() != object::BinaryFormat::Elf {
            return Err(Error::input("not an ELF file").in_file(shown));
        }
        Ok(ElfFile { path: path.to_path_buf(), object, map })
    }

    /// The GNU build id (`.note.gnu.build-id`), when the file has one.
    pub fn build_id(&self) -> Option<&'static [u8]> {
        self.object.build_id().ok().flatten().filter(|id| !id.is_empty())
    }

    /// `.gnu_debuglink`: the debug file's name and the CRC-32 of its contents.
    pub fn debuglink(&self) -> Option<(String, u32)> {
        let (name, crc) = self.object.gnu_debuglink().ok().flatten()?;
        Some((String::from_utf8_lossy(name).into_owned(), crc))
    }

    /// `.gnu_debugaltlink`: the supplementary (dwz) file's path and build id.
    pub(crate) fn debugaltlink(&self) -> Option<(String, &'static [u8])> {
        let (name, id) = self.object.gnu_debugaltlink().ok().flatten()?;
        Some((String::from_utf8_lossy(name).into_owned(), id))
    }

    /// Whether the file holds DWARF: a `.debug_info` section with contents (a stripped
    /// binary has none; a file made by `objcopy --only-keep-debug` has it, its code does not).
    pub fn has_dwarf(&self) -> bool {
        self.object
            .section_by_name(".debug_info")
            .is_some_and(|s| s.kind() != SectionKind::UninitializedData && s.size() > 0)
    }

    /// Whether the file holds its code: a `.text` section with contents (a file made by
    /// `objcopy --only-keep-debug` keeps the section's header, not its bytes).
    pub(crate) fn has_code(&self) -> bool {
        self.object
            .section_by_name(".text")
            .is_some_and(|s| s.kind() != SectionKind::UninitializedData && s.size() > 0)
    }

    /// Whether the file has a full symbol table (`.symtab`) with at least one function.
    pub(crate) fn has_symtab(&self) -> bool {
        self.object.symbols().any(|s| s.kind() == SymbolKind::Text)
    }

    /// Whether the file has a symbol table, full or dynamic, with at least one function.
    pub(crate) fn has_symbols(&self) -> bool {
        self.object.symbols().chain(self.object.dynamic_symbols()).any(|s| s.kind() == SymbolKind::Text)
    }

    /// Whether the file is a position-independent executable or a shared library (`ET_DYN`),
    /// whose addresses move with its load address.
    pub(crate) fn is_relocatable(&self) -> bool {
        self.object.kind() == ObjectKind::Dynamic
    }

    /// The loadable segments, in file order.
    pub fn segments(&self) -> Vec<Segment> {
        self.object
            .segments()
            .map(|s| {
                let (file_offset, file_size) = s.file_range();
                let executable = match s.flags() {
                    SegmentFlags::Elf { p_flags, .. } => p_flags.contains(object::elf::PF_X),
                    _ => false,
                };
                Segment { address: s.address(), size: s.size(), file_offset, file_size, executable }
            })
            .collect()
    }

    /// The function symbols: of the symbol table, else of the dynamic symbol table; sorted by
    /// address, symbols at address 0 (undefined, imported) left out.
    pub fn function_symbols(&self) -> Vec<FunctionSymbol> {
        let collect =
            |iter: object::read::SymbolIterator<'static, '_, &'static [u8]>| -> Vec<FunctionSymbol> {
                iter.filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.address() != 0)
                    .filter_map(|s| {
                        Some(FunctionSymbol { address: s.address(), size: s.size(), name: s.name().ok()? })
                    })
                    .filter(|s| !s.name.is_empty())
                    .collect()
            };
        let mut symbols = collect(self.object.symbols());
        if symbols.is_empty() {
            symbols = collect(self.object.dynamic_symbols());
        }
        // Global names before local ones at one address would need binding; the first
        // name in table order is as good as any, and sorting is stable.
        symbols.sort_by_key(|s| s.address);
        symbols
    }

    /// The symbols perf reads from this file's table to name code: those of `.symtab`, else
    /// of `.dynsym`; functions and labels of allocated sections, in table order.
    pub fn table_symbols(&self) -> Vec<TableSymbol> {
        const STT_NOTYPE: u8 = 0;
        const STT_FUNC: u8 = 2;
        const STT_GNU_IFUNC: u8 = 10;
        const STV_INTERNAL: u8 = 1;
        const STV_HIDDEN: u8 = 2;
        // Per section: whether it is allocated, and whether it holds text (by its name).
        let mut sections = Vec::new();
        for section in self.object.sections() {
            let i = section.index().0;
            if sections.len() <= i {
                sections.resize(i + 1, (false, false));
            }
            let alloc = matches!(section.flags(), object::SectionFlags::Elf { sh_flags, .. }
                if sh_flags.contains(object::elf::SHF_ALLOC));
            sections[i] = (alloc, section.name().is_ok_and(|n| n.contains("text")));
        }
        let collect = |iter: object::read::SymbolIterator<'static, '_, &'static [u8]>| -> Vec<TableSymbol> {
            iter.filter_map(|s| {
                let object::SymbolFlags::Elf { st_info, st_other } = s.flags() else { return None };
                let (kind, binding, visibility) = (st_info.0 & 0xf, st_info.0 >> 4, st_other.0 & 3);
                if !matches!(kind, STT_NOTYPE | STT_FUNC | STT_GNU_IFUNC) {
                    return None;
                }
                let object::SymbolSection::Section(index) = s.section() else { return None };
                let &(alloc, text) = sections.get(index.0)?;
                let label = kind == STT_NOTYPE && !matches!(visibility, STV_INTERNAL | STV_HIDDEN) && text;
                if !alloc || kind == STT_NOTYPE && !label {
                    return None;
                }
                let name = s.name().ok().filter(|n| !n.is_empty())?;
                Some(TableSymbol { address: s.address(), size: s.size(), name, binding, label })
            })
            .collect()
        };
        let symbols = collect(self.object.symbols());
        if symbols.is_empty() {
            collect(self.object.dynamic_symbols())
        } else {
            symbols
        }
    }

    /// A section's bytes, uncompressed (`SHF_COMPRESSED` zlib or zstd, under the rule of
    /// [`cfghub_model::io::sections`]), into `storage` when they had to be copied; empty when the file
    /// has no such section.
    pub fn section(&self, name: &str, storage: &mut Storage) -> Result<&'static [u8]> {
        let Some(section) = self.object.section_by_name(name) else { return Ok(&[]) };
        if section.kind() == SectionKind::UninitializedData {
            return Ok(&[]);
        }
        let data = cfghub_model::io::sections::section_data(&section, name).map_err(|e| {
            let e = e.in_file(self.path.display().to_string());
            match e.hint {
                Some(_) => e,
                None => {
                    e.with_hint("the file may be truncated; rebuild it or point --symbols at another copy")
                }
            }
        })?;
        Ok(match data {
            Cow::Borrowed(b) => b,
            Cow::Owned(v) => storage.keep(v),
        })
    }

    /// CRC-32 (the `.gnu_debuglink` one: IEEE, as zlib's `crc32`) of the whole file.
    pub fn crc32(&self) -> u32 {
        crc32fast::hash(&self.map)
    }
}

/// An entry of the PLT (`.plt`): `[start, end)` in the file's stated addresses, and the
/// function it jumps to. perf and BOLT both make symbols of them (`name@plt`, `name@PLT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PltEntry {
    /// First byte of the entry, as the file states its address.
    pub start: u64,
    /// One past the entry's last byte.
    pub end: u64,
    /// The raw (mangled) name of the function the entry jumps to.
    pub raw: &'static str,
}

/// The entries of a file's `.plt`, in address order: entry `i` after the section's header
/// jumps to the function of relocation `i` of `.rela.plt` (or `.rel.plt`), each entry as long
/// as the architecture's are (on x86 the section's `sh_entsize`, the header one entry). None
/// when the file has no `.dynsym`, no PLT relocations linked to it, or no `.plt`. This is how
/// perf 6.1 reads the PLT: entries of `.plt.sec` and `.plt.got` are not read (perf makes no
/// symbols of them), and with `-z ibtplt` the entries named are `.plt`'s lazy-binding stubs.
pub fn plt_entries(file: &ElfFile) -> Vec<PltEntry> {
    match &file.object {
        object::File::Elf32(f) => plt_of(f),
        object::File::Elf64(f) => plt_of(f),
        _ => Vec::new(),
    }
}

fn plt_of<Elf: object::read::elf::FileHeader<Endian = object::Endianness>>(
    f: &object::read::elf::ElfFile<'static, Elf, &'static [u8]>,
) -> Vec<PltEntry> {
    use object::elf;
    use object::read::elf::{Rel, Rela, SectionHeader};
    let (endian, data, sections) = (f.endian(), f.data(), f.elf_section_table());
    let Some((dynsym_index, dynsym)) = sections.section_by_name(endian, b".dynsym") else {
        return Vec::new();
    };
    if dynsym.sh_type(endian) != elf::SHT_DYNSYM {
        return Vec::new();
    }
    let Some((_, relocations)) = sections
        .section_by_name(endian, b".rela.plt")
        .or_else(|| sections.section_by_name(endian, b".rel.plt"))
    else {
        return Vec::new();
    };
    if relocations.sh_link(endian) as usize != dynsym_index.0 {
        return Vec::new();
    }
    let Some((_, plt)) = sections.section_by_name(endian, b".plt") else { return Vec::new() };
    let Ok(symbols) = sections.symbols(endian, data, elf::SHT_DYNSYM) else { return Vec::new() };
    let targets: Vec<u32> = if let Ok(Some((rela, _))) = relocations.rela(endian, data) {
        rela.iter().map(|r| r.r_sym(endian, false)).collect()
    } else if let Ok(Some((rel, _))) = relocations.rel(endian, data) {
        rel.iter().map(|r| r.r_sym(endian)).collect()
    } else {
        return Vec::new();
    };
    let entry_size: u64 = plt.sh_entsize(endian).into();
    let (header, size) = match f.elf_header().e_machine(endian) {
        elf::EM_ARM => (20, 12),
        elf::EM_AARCH64 => (32, 16),
        elf::EM_SPARC => (48, 12),
        elf::EM_SPARCV9 => (128, 32),
        _ => (entry_size, entry_size),
    };
    let mut start = Into::<u64>::into(plt.sh_addr(endian)).saturating_add(header);
    let mut entries = Vec::with_capacity(targets.len());
    for target in targets {
        let name = symbols
            .symbol(object::SymbolIndex(target as usize))
            .ok()
            .and_then(|s| symbols.symbol_name(endian, s).ok())
            .and_then(|n| std::str::from_utf8(n).ok())
            .unwrap_or("");
        entries.push(PltEntry { start, end: start.saturating_add(size), raw: name });
        start = start.saturating_add(size);
    }
    entries
}

/// Uncompressed copies of sections, which `'static` slices handed out by
/// [`ElfFile::section`] borrow. Dropped after everything that borrows it (it comes after the
/// DWARF in its owner's fields).
#[derive(Default)]
pub struct Storage {
    buffers: Vec<Box<[u8]>>,
}

impl Storage {
    fn keep(&mut self, v: Vec<u8>) -> &'static [u8] {
        let b = v.into_boxed_slice();
        // SAFETY: a boxed slice does not move when the box does; it is freed only when the
        // storage is dropped, after every user of the slice.
        let s: &'static [u8] = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) };
        self.buffers.push(b);
        s
    }
}
