//! The PLT stubs BOLT makes functions of (`memcpy@PLT`), found as BOLT finds them.
//!
//! On x86-64 BOLT (`RewriteInstance::disassemblePLT`) reads three sections of stubs, each cut
//! into entries of one size: `.plt` (16 bytes), `.plt.got` and `.plt.sec` (8 bytes, or 16
//! when the section's first instruction is `endbr64`, as linkers lay them out for Intel CET's
//! indirect branch tracking, `-z ibtplt`). In each entry it decodes instructions up to the
//! first indirect jump; where that jump lies wholly inside the entry and reads its target
//! from memory at a RIP-relative address (a GOT slot: `jmp *slot(%rip)`, `bnd jmp`,
//! `notrack jmp`), and a dynamic relocation with a symbol fills that slot (`JUMP_SLOT` for
//! `.plt` and `.plt.sec`, `GLOB_DAT` for `.plt.got`), the entry becomes a function named
//! after the symbol with `@PLT` added. So:
//!
//! - `.plt` without CET: every entry but the header (`jmp *slot(%rip); push N; jmp .plt`);
//! - `.plt` with CET (`endbr64; push N; bnd jmp .plt`): none, its jumps are direct; the calls
//!   go through `.plt.sec`, whose entries are the functions;
//! - `.plt.got`: the stubs of functions whose address the program also takes (their GOT slot
//!   is the one the address is read from), and `__cxa_finalize` in a position-independent
//!   executable.
//!
//! Other architectures keep the `.plt` entries the relocation order gives
//! ([`cfghub_analysis::symbolize::elf::plt_entries`]).

use std::collections::HashMap;

use object::{Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationTarget};

use cfghub_analysis::symbolize::elf::{plt_entries, ElfFile, PltEntry};

/// The sections of stubs BOLT reads on x86-64, with the size of their entries.
const X86_64_SECTIONS: [(&str, u64); 3] = [(".plt", 16), (".plt.got", 8), (".plt.sec", 8)];

/// The PLT stubs BOLT makes functions of, in section order, each with the (raw) name of the
/// function it jumps to.
pub(crate) fn bolt_plt_entries(file: &ElfFile) -> Vec<PltEntry> {
    if file.object.architecture() != object::Architecture::X86_64 {
        return plt_entries(file);
    }
    let slots = relocated_slots(file);
    let mut entries = Vec::new();
    for (name, entry_size) in X86_64_SECTIONS {
        let Some(section) = file.object.section_by_name(name) else { continue };
        let Ok(code) = section.data() else { continue };
        let address = section.address();
        let mut entry_size = entry_size;
        if entry_size == 8 && code.starts_with(&ENDBR64) {
            entry_size = 16;
        }
        let mut offset = 0u64;
        while offset.saturating_add(entry_size) <= code.len() as u64 {
            let entry = &code[offset as usize..(offset + entry_size) as usize];
            let start = address + offset;
            if let Some(slot) = jump_slot(entry, start) {
                if let Some(&raw) = slots.get(&slot) {
                    entries.push(PltEntry { start, end: start + entry_size, raw });
                }
            }
            offset += entry_size;
        }
    }
    entries
}

/// The header of an x86-64 `.plt` whose entries are stubs BOLT makes functions of (the
/// lazy-binding code every first call runs: `push GOT+8; jmp *GOT+16`), as (start, end):
/// BOLT makes a pseudo function of it, `__BOLT_PSEUDO_.plt`, so that samples there are
/// named, as perf2bolt names them.
pub(crate) fn bolt_plt_header(file: &ElfFile, entries: &[PltEntry]) -> Option<(u64, u64)> {
    if file.object.architecture() != object::Architecture::X86_64 {
        return None;
    }
    let section = file.object.section_by_name(".plt")?;
    let (start, size) = (section.address(), section.size());
    let end = start + X86_64_SECTIONS[0].1;
    let has_entries = entries.iter().any(|e| e.start >= end && e.start < start + size);
    (size >= X86_64_SECTIONS[0].1 && has_entries && !entries.iter().any(|e| e.start == start))
        .then_some((start, end))
}

/// The GOT slots dynamic relocations fill, with the name of their symbol (relocations
/// without one, `R_X86_64_RELATIVE` and `IRELATIVE`, name no stub); the first relocation of
/// a slot names it.
fn relocated_slots(file: &ElfFile) -> HashMap<u64, &'static str> {
    let mut slots = HashMap::new();
    let (Some(relocations), Some(symbols)) =
        (file.object.dynamic_relocations(), file.object.dynamic_symbol_table())
    else {
        return slots;
    };
    for (offset, relocation) in relocations {
        let RelocationTarget::Symbol(index) = relocation.target() else { continue };
        let Some(name) = symbols.symbol_by_index(index).ok().and_then(|s| s.name().ok()) else { continue };
        if !name.is_empty() {
            slots.entry(offset).or_insert(name);
        }
    }
    slots
}

const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];

/// The GOT slot an entry's first indirect jump reads its target from, when that jump lies
/// wholly in the entry and its operand is RIP-relative (`entry` starts at `address`). The
/// instructions linkers put in PLT stubs are decoded (`endbr64`, `push`, `jmp`, `nop`, with
/// their prefixes); an entry with any other instruction before its indirect jump names no slot.
fn jump_slot(entry: &[u8], address: u64) -> Option<u64> {
    let mut at = 0usize;
    while at < entry.len() {
        let (length, instruction) = decode(&entry[at..])?;
        let end = at + length;
        if end > entry.len() {
            return None;
        }
        if let Instruction::IndirectJump(displacement) = instruction {
            return Some((address + end as u64).wrapping_add_signed(i64::from(displacement?)));
        }
        at = end;
    }
    None
}

/// What [`jump_slot`] tells apart among a stub's instructions.
enum Instruction {
    /// `jmp *mem` (`ff /4`), with its displacement when RIP-relative (BOLT cannot place the
    /// target of any other operand).
    IndirectJump(Option<i32>),
    Other,
}

/// One instruction of a stub: its length and kind; `None` for one not decoded here.
fn decode(code: &[u8]) -> Option<(usize, Instruction)> {
    // Prefixes: operand size, bnd (repne), notrack (ds), cs, rep (of endbr64 and pause).
    let prefixes = code.iter().take_while(|b| matches!(b, 0x66 | 0xf2 | 0x3e | 0x2e | 0xf3)).count();
    let rest = &code[prefixes..];
    let rex = usize::from(rest.first().is_some_and(|b| b & 0xf0 == 0x40));
    let op = &rest[rex..];
    let head = prefixes + rex;
    let plain = |n: usize| Some((head + n, Instruction::Other));
    match op {
        [0x0f, 0x1e, 0xfa, ..] if code[..prefixes].contains(&0xf3) => plain(3),
        [0x90, ..] | [0xcc, ..] => plain(1),
        [0x68, ..] | [0xe9, ..] => plain(5),
        [0x6a, ..] | [0xeb, ..] => plain(2),
        [0x0f, 0x1f, modrm @ ..] => Some((head + 2 + modrm_length(modrm)?, Instruction::Other)),
        [0xff, modrm @ ..] => {
            let &m = modrm.first()?;
            let length = head + 1 + modrm_length(modrm)?;
            match (m >> 3) & 7 {
                // jmp *mem: RIP-relative when mod is 0 and r/m 5.
                4 => {
                    let rip = m & 0xc7 == 0x05;
                    let displacement = modrm.get(1..5).map(|d| i32::from_le_bytes([d[0], d[1], d[2], d[3]]));
                    Some((length, Instruction::IndirectJump(displacement.filter(|_| rip))))
                }
                // push *mem
                6 => Some((length, Instruction::Other)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The length of a ModRM byte with its SIB byte and displacement.
fn modrm_length(code: &[u8]) -> Option<usize> {
    let &m = code.first()?;
    let (mode, rm) = (m >> 6, m & 7);
    if mode == 3 {
        return Some(1);
    }
    let sib = usize::from(rm == 4);
    let base_is_disp32 = rm == 4 && code.get(1).is_some_and(|s| s & 7 == 5);
    let displacement = match mode {
        0 if rm == 5 || base_is_disp32 => 4,
        0 => 0,
        1 => 1,
        _ => 4,
    };
    Some(1 + sib + displacement)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stubs of the three sections as GNU ld lays them out, with and without CET.
    #[test]
    fn stubs_name_the_slot_their_indirect_jump_reads() {
        // .plt, no CET: jmp *0x2fe2(%rip); push $0; jmp .plt
        let plain = [0xff, 0x25, 0xe2, 0x2f, 0, 0, 0x68, 0, 0, 0, 0, 0xe9, 0xe0, 0xff, 0xff, 0xff];
        assert_eq!(jump_slot(&plain, 0x1030), Some(0x1036 + 0x2fe2));
        // .plt, CET: endbr64; push $0; bnd jmp .plt; nop
        let lazy = [0xf3, 0x0f, 0x1e, 0xfa, 0x68, 0, 0, 0, 0, 0xf2, 0xe9, 0xe1, 0xff, 0xff, 0xff, 0x90];
        assert_eq!(jump_slot(&lazy, 0x1030), None);
        // .plt.sec: endbr64; bnd jmp *0x2f75(%rip); nopl 0x0(%rax,%rax,1)
        let sec = [0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0x75, 0x2f, 0, 0, 0x0f, 0x1f, 0x44, 0, 0];
        assert_eq!(jump_slot(&sec, 0x1080), Some(0x108b + 0x2f75));
        // .plt.got, CET: endbr64; jmp *0x2f66(%rip); nopw 0x0(%rax,%rax,1)
        let got = [0xf3, 0x0f, 0x1e, 0xfa, 0xff, 0x25, 0x66, 0x2f, 0, 0, 0x66, 0x0f, 0x1f, 0x44, 0, 0];
        assert_eq!(jump_slot(&got, 0x1070), Some(0x107a + 0x2f66));
        // .plt.got, no CET, 8 bytes: jmp *0x2f8a(%rip); xchg %ax,%ax
        assert_eq!(jump_slot(&[0xff, 0x25, 0x8a, 0x2f, 0, 0, 0x66, 0x90], 0x1060), Some(0x1066 + 0x2f8a));
        // The CET .plt.got stub cut at 8 bytes: its jump runs past the entry.
        assert_eq!(jump_slot(&got[..8], 0x1070), None);
        // A jump through a register-based operand names no slot.
        assert_eq!(jump_slot(&[0xff, 0xa3, 0x0c, 0, 0, 0, 0x68, 0], 0x1000), None);
    }
}
