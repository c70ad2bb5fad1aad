//! What a sample profile asks of DWARF, read with gimli: each address's line and
//! discriminator (the line table), and its chain of functions, outermost first, each with its
//! first line (`DW_AT_decl_line`) and the line and discriminator of the call that inlined the
//! next one (`DW_TAG_inlined_subroutine`'s `DW_AT_call_line`, `DW_AT_GNU_discriminator`).

use std::path::Path;

use gimli::{AttributeValue, EndianSlice, RunTimeEndian};
use object::{Object, ObjectSection};

use cfghub_analysis::addresses::ElfLayout;
use cfghub_analysis::symbolize::elf::{ElfFile, Storage};
use cfghub_model::error::{Error, Result};

type Reader = EndianSlice<'static, RunTimeEndian>;

/// One line-table row: from `address` on (to the next row), code of `line`.
#[derive(Clone, Copy, Debug)]
struct Row {
    address: u64,
    line: u32,
    discriminator: u32,
    /// The row ends a sequence: no code from here.
    end: bool,
}

/// A function's code, or a function inlined into it, with the ranges it covers.
#[derive(Clone, Debug)]
struct Scope {
    ranges: Vec<(u64, u64)>,
    name: String,
    decl_line: u32,
    /// For an inlined function: the call that inlined it, in its caller's code.
    call_line: u32,
    call_discriminator: u32,
    children: Vec<usize>,
}

/// One frame of an address's chain: a function, its first line, and the line and
/// discriminator the address is at in it (the call site of the next frame, for all but the
/// innermost).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// The function's name (linkage name where DWARF gives one).
    pub function: String,
    /// The function's first line (`DW_AT_decl_line`).
    pub decl_line: u32,
    /// The source line the address is at in the function.
    pub line: u32,
    /// The line table's discriminator (0 when none).
    pub discriminator: u32,
}

/// The line table and function scopes of a binary.
pub(crate) struct DebugInfo {
    rows: Vec<Row>,
    scopes: Vec<Scope>,
    /// Outermost functions' ranges, by start: (start, end, scope).
    functions: Vec<(u64, u64, usize)>,
    /// Where its segments go, to turn image offsets into its addresses.
    pub layout: ElfLayout,
    /// The executable sections' bytes, by address.
    code: Vec<(u64, Vec<u8>)>,
}

impl DebugInfo {
    pub fn open(path: &Path) -> Result<DebugInfo> {
        let elf = ElfFile::open(path)?;
        if !elf.has_dwarf() {
            return Err(Error::input(format!("{}: no DWARF (.debug_info)", path.display())).with_hint(
                "sample profiles are by source line: build with -g (and -gdwarf-4 for valgrind)",
            ));
        }
        let mut storage = Storage::default();
        let endian = if elf.object.is_little_endian() { RunTimeEndian::Little } else { RunTimeEndian::Big };
        let dwarf = gimli::Dwarf::load(|id| -> Result<Reader> {
            Ok(EndianSlice::new(elf.section(id.name(), &mut storage)?, endian))
        })?;
        let bad = |e: gimli::Error| Error::input(format!("{}: unreadable DWARF: {e}", path.display()));
        let mut info = DebugInfo {
            rows: Vec::new(),
            scopes: Vec::new(),
            functions: Vec::new(),
            layout: ElfLayout::of(&elf),
            code: Vec::new(),
        };
        let mut units = dwarf.units();
        while let Some(header) = units.next().map_err(bad)? {
            let unit = dwarf.unit(header).map_err(bad)?;
            info.read_lines(&unit).map_err(bad)?;
            info.read_scopes(&dwarf, &unit).map_err(bad)?;
        }
        info.rows.sort_by_key(|r| (r.address, !r.end));
        info.functions.sort_unstable();
        for section in elf.object.sections().filter(|s| s.kind() == object::SectionKind::Text) {
            if let Ok(data) = section.data() {
                info.code.push((section.address(), data.to_vec()));
            }
        }
        Ok(info)
    }

    fn read_lines(&mut self, unit: &gimli::Unit<Reader>) -> gimli::Result<()> {
        let Some(program) = unit.line_program.clone() else { return Ok(()) };
        let mut rows = program.rows();
        while let Some((_, row)) = rows.next_row()? {
            self.rows.push(Row {
                address: row.address(),
                line: row.line().map_or(0, |l| l.get() as u32),
                discriminator: row.discriminator() as u32,
                end: row.end_sequence(),
            });
        }
        Ok(())
    }

    fn read_scopes(&mut self, dwarf: &gimli::Dwarf<Reader>, unit: &gimli::Unit<Reader>) -> gimli::Result<()> {
        let mut entries = unit.entries();
        // (depth, scope) of the scopes enclosing the current entry.
        let mut open: Vec<(isize, usize)> = Vec::new();
        while let Some(entry) = entries.next_dfs()? {
            let depth = entry.depth();
            while open.last().is_some_and(|&(d, _)| d >= depth) {
                open.pop();
            }
            let tag = entry.tag();
            let inlined = tag == gimli::DW_TAG_inlined_subroutine;
            if tag != gimli::DW_TAG_subprogram && !inlined {
                continue;
            }
            if inlined && open.is_empty() {
                continue;
            }
            let mut ranges = Vec::new();
            let mut iter = dwarf.die_ranges(unit, entry)?;
            while let Some(r) = iter.next()? {
                if r.end > r.begin {
                    ranges.push((r.begin, r.end));
                }
            }
            if ranges.is_empty() {
                continue;
            }
            let (name, decl_line) = name_and_line(dwarf, unit, entry, 0)?;
            let call_line = match entry.attr_value(gimli::DW_AT_call_line) {
                Some(v) => v.udata_value().unwrap_or(0) as u32,
                None => 0,
            };
            let call_discriminator = match entry.attr_value(gimli::DW_AT_GNU_discriminator) {
                Some(v) => v.udata_value().unwrap_or(0) as u32,
                None => 0,
            };
            let k = self.scopes.len();
            if inlined {
                let parent = open.last().expect("checked above").1;
                self.scopes[parent].children.push(k);
            } else {
                self.functions.extend(ranges.iter().map(|&(lo, hi)| (lo, hi, k)));
            }
            self.scopes.push(Scope {
                ranges,
                name,
                decl_line,
                call_line,
                call_discriminator,
                children: Vec::new(),
            });
            open.push((depth, k));
        }
        Ok(())
    }

    /// The line row holding `address`: its line and discriminator, and where the next row
    /// starts.
    fn row(&self, address: u64) -> Option<(Row, u64)> {
        let k = self.rows.partition_point(|r| r.address <= address).checked_sub(1)?;
        let row = self.rows[k];
        let next = self.rows.get(k + 1).map_or(u64::MAX, |r| r.address);
        (!row.end).then_some((row, next))
    }

    /// Where the line-table row after the one holding `address` starts.
    pub fn next_row(&self, address: u64) -> u64 {
        self.row(address).map_or(u64::MAX, |(_, next)| next)
    }

    /// The functions at `address`, outermost first; empty where no function's DWARF covers it.
    pub fn frames(&self, address: u64) -> Vec<Frame> {
        let mut out = Vec::new();
        let end = self.functions.partition_point(|f| f.0 <= address);
        let Some(&(_, _, top)) = self.functions[..end].iter().rev().find(|f| address < f.1) else {
            return out;
        };
        let Some((row, _)) = self.row(address) else { return out };
        let mut scope = top;
        loop {
            let s = &self.scopes[scope];
            let inner = s
                .children
                .iter()
                .copied()
                .find(|&c| self.scopes[c].ranges.iter().any(|&(lo, hi)| lo <= address && address < hi));
            match inner {
                Some(c) => {
                    let callee = &self.scopes[c];
                    out.push(Frame {
                        function: s.name.clone(),
                        decl_line: s.decl_line,
                        line: callee.call_line,
                        discriminator: callee.call_discriminator,
                    });
                    scope = c;
                }
                None => {
                    out.push(Frame {
                        function: s.name.clone(),
                        decl_line: s.decl_line,
                        line: row.line,
                        discriminator: row.discriminator,
                    });
                    return out;
                }
            }
        }
    }

    /// The name of the function whose code starts at `address`, if one does.
    pub(crate) fn function_at(&self, address: u64) -> Option<&str> {
        let k = self.functions.binary_search_by_key(&address, |f| f.0).ok()?;
        Some(&self.scopes[self.functions[k].2].name)
    }
}

/// A function's linkage name (else its name) and first line, through
/// `DW_AT_abstract_origin` and `DW_AT_specification` within the unit (by unit offset, or by
/// `.debug_info` offset as Go's linker writes them).
fn name_and_line(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &gimli::Unit<Reader>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
    hops: u32,
) -> gimli::Result<(String, u32)> {
    let mut name = None;
    let mut line = None;
    for at in [gimli::DW_AT_linkage_name, gimli::DW_AT_MIPS_linkage_name, gimli::DW_AT_name] {
        if let Some(v) = entry.attr_value(at) {
            if let Ok(s) = dwarf.attr_string(unit, v) {
                name = Some(s.to_string_lossy().into_owned());
                break;
            }
        }
    }
    if let Some(v) = entry.attr_value(gimli::DW_AT_decl_line) {
        line = v.udata_value().map(|l| l as u32);
    }
    if (name.is_none() || line.is_none()) && hops < 4 {
        for at in [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification] {
            // Within the unit, by unit offset or (as Go writes it) by .debug_info offset.
            let offset = match entry.attr_value(at) {
                Some(AttributeValue::UnitRef(offset)) => Some(offset),
                Some(AttributeValue::DebugInfoRef(offset)) => offset.to_unit_offset(&unit.header),
                _ => None,
            };
            if let Some(offset) = offset {
                let origin = unit.entry(offset)?;
                let (n, l) = name_and_line(dwarf, unit, &origin, hops + 1)?;
                if name.is_none() && !n.is_empty() {
                    name = Some(n);
                }
                if line.is_none() && l != 0 {
                    line = Some(l);
                }
                break;
            }
        }
    }
    Ok((name.unwrap_or_default(), line.unwrap_or(0)))
}

impl DebugInfo {
    /// The length of the x86-64 instruction at `address` when it is one that ends blocks (a
    /// return, a jump, a conditional jump or a call, direct or through a register or memory,
    /// with their usual prefixes); `None` for anything else or outside the code.
    pub(crate) fn branch_length(&self, address: u64) -> Option<u64> {
        let (start, bytes) = self.code.iter().find(|(a, b)| *a <= address && address < a + b.len() as u64)?;
        let at = &bytes[(address - start) as usize..];
        let mut k = 0;
        // Prefixes: operand size, rep/bnd, notrack, REX.
        while k < at.len().min(4) && matches!(at[k], 0x66 | 0xf2 | 0xf3 | 0x3e | 0x40..=0x4f) {
            k += 1;
        }
        let op = *at.get(k)?;
        let len = match op {
            0xc3 => 1,
            0xc2 => 3,
            0xeb | 0x70..=0x7f => 2,
            0xe8 | 0xe9 => 5,
            0x0f if at.get(k + 1).is_some_and(|b| (0x80..=0x8f).contains(b)) => 6,
            0xff => 1 + modrm_length(at.get(k + 1..)?)?,
            _ => return None,
        };
        Some(k as u64 + len)
    }
}

/// Bytes taken by a ModRM byte and what it asks for (SIB, displacement), 64-bit addressing.
fn modrm_length(at: &[u8]) -> Option<u64> {
    let modrm = *at.first()?;
    let (md, rm) = (modrm >> 6, modrm & 7);
    let mut len = 1;
    if md != 3 && rm == 4 {
        let sib = *at.get(1)?;
        len += 1;
        if md == 0 && sib & 7 == 5 {
            len += 4;
        }
    }
    len += match md {
        0 if rm == 5 => 4,
        1 => 1,
        2 => 4,
        _ => 0,
    };
    Some(len)
}
