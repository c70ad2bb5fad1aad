//! A binary's machine code: its functions' instructions (where each starts, how long it is,
//! how control leaves it) and the basic blocks BOLT builds from them.
//!
//! Branch records state taken branches and the ranges of code run between them, by address,
//! but not where instructions start: a range that runs over a conditional branch not taken
//! does not say where the next instruction (the next block) starts, nor whether a range runs
//! over a jump, which no run can do without a record of it. The binary's code says both.
//! x86-64 only (decoded with `iced-x86`); other machines give no code facts, and their
//! readers and writers go on without them.
//!
//! BOLT's blocks ([`FunctionCode::blocks`]), as `BinaryFunction::buildCFG` makes them: a
//! block starts at the function's entry, at every target of a direct jump or conditional
//! branch inside the function, and after every branch or return, except that an unconditional
//! jump after a conditional branch ends the conditional's block (`jcc A; jmp B` is one block
//! with two exits). Calls do not end blocks. No-operations belong to the block before them and
//! are never its last instruction. A block falls through into the next one unless it ends in
//! a return, an indirect jump, a trap, or a jump elsewhere.

use std::path::Path;

use iced_x86::{Decoder, DecoderOptions, FlowControl, Mnemonic, OpKind, Register};
use object::{Object, ObjectSection, SectionKind};

use crate::symbolize::elf::ElfFile;

/// How control leaves an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// On to the next instruction.
    Next,
    /// A call: on to the next instruction when the callee returns. The callee's address
    /// for a direct call.
    Call(Option<u64>),
    /// Conditionally to the target (an address), else on.
    Conditional(u64),
    /// Always to the target.
    Jump(u64),
    /// Never on to the next instruction, to no target known here: a return, a trap.
    Stop,
    /// An indirect jump (a jump table's, a computed goto's, or a tail call through a
    /// pointer): like [`Flow::Stop`], to targets the instruction does not state.
    Indirect,
    /// A no-operation (padding and alignment): on to the next instruction.
    Nop,
}

/// One instruction: its address, its length and how control leaves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// Address of its first byte, in the address space the function's code was decoded in.
    pub at: u64,
    /// Length in bytes (1 to 15 on x86-64).
    pub len: u8,
    /// How control leaves it.
    pub flow: Flow,
    /// How long it takes, in half cycles, as a rough static model has it
    /// ([`latency_estimate`]): what a time sample that falls on it is worth.
    pub half_cycles: u8,
}

/// A rough estimate, in half cycles, of what an instruction holds up a current x86-64 core:
/// a no-operation 1, any other instruction 2, a multiply 4 more, a divide 40 more, an
/// indirect branch (often mispredicted) 8 more. Time samples fall on instructions as their
/// costs add up, which their number alone does not say: an interpreter's dispatch ends in an
/// indirect jump, a hash's loop multiplies. (Loads are left at 2: whether one waits depends
/// on the cache, which the code does not say, and counting them dearer made the inference
/// of loops over arrays worse, not better.)
fn latency_estimate(i: &iced_x86::Instruction) -> u8 {
    let mnemonic = i.mnemonic();
    if mnemonic == Mnemonic::Nop {
        return 1;
    }
    let mut cost = 2u8;
    cost += match mnemonic {
        Mnemonic::Div | Mnemonic::Idiv => 40,
        Mnemonic::Imul | Mnemonic::Mul => 4,
        _ => 0,
    };
    if matches!(i.flow_control(), FlowControl::IndirectBranch | FlowControl::IndirectCall) {
        cost += 8;
    }
    cost
}

impl Instruction {
    /// One past its last byte: where the next instruction starts.
    pub fn end(&self) -> u64 {
        self.at + u64::from(self.len)
    }
}

/// A basic block as BOLT builds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeBlock {
    /// Address of its first instruction.
    pub start: u64,
    /// The address of its last instruction other than a no-operation (its start when it
    /// holds none).
    pub last: u64,
    /// Whether code runs on from it into the next block.
    pub falls_through: bool,
}

/// A function's instructions and BOLT's blocks of them.
#[derive(Clone, Debug, Default)]
pub struct FunctionCode {
    /// The decoded instructions, by address.
    pub instructions: Vec<Instruction>,
    /// BOLT's basic blocks of them, by address.
    pub blocks: Vec<CodeBlock>,
    /// The jump tables of the function's indirect jumps, as (the jump's address, the
    /// distinct targets its table lists, in table order), by address of the jump.
    pub jump_tables: Vec<(u64, Vec<u64>)>,
    start: u64,
    end: u64,
}

/// Reads `len` bytes at an address of the space a function is decoded in (for its jump
/// tables); `None` where the file has none.
pub(crate) type DataReader<'a> = &'a dyn Fn(u64, usize) -> Option<&'a [u8]>;

impl FunctionCode {
    /// Decodes x86-64 `bytes`, the function's code from address `at` (any address space in
    /// which the function is contiguous: linked addresses, or file offsets). Decoding stops at
    /// bytes that are no instruction.
    #[cfg(test)]
    pub(crate) fn decode_x86_64(bytes: &[u8], at: u64) -> FunctionCode {
        Self::decode_x86_64_with_data(bytes, at, &|_, _| None)
    }

    /// [`FunctionCode::decode_x86_64`], reading the jump tables of its indirect jumps with
    /// `data`.
    pub(crate) fn decode_x86_64_with_data(bytes: &[u8], at: u64, data: DataReader) -> FunctionCode {
        let mut decoder = Decoder::with_ip(64, bytes, at, DecoderOptions::NONE);
        let end = at + bytes.len() as u64;
        let mut instructions = Vec::with_capacity(bytes.len() / 4);
        let mut decoded: Vec<iced_x86::Instruction> = Vec::with_capacity(bytes.len() / 4);
        let mut indirect = Vec::new();
        for i in &mut decoder {
            if i.is_invalid() {
                break;
            }
            if i.flow_control() == FlowControl::IndirectBranch {
                indirect.push(decoded.len());
            }
            decoded.push(i);
            let target = i.near_branch_target();
            let flow = match i.flow_control() {
                _ if i.mnemonic() == Mnemonic::Nop => Flow::Nop,
                FlowControl::ConditionalBranch => Flow::Conditional(target),
                FlowControl::UnconditionalBranch => Flow::Jump(target),
                FlowControl::IndirectBranch => Flow::Indirect,
                FlowControl::Return | FlowControl::Exception => Flow::Stop,
                FlowControl::Call => Flow::Call(Some(target)),
                FlowControl::IndirectCall => Flow::Call(None),
                _ => Flow::Next,
            };
            instructions.push(Instruction {
                at: i.ip(),
                len: i.len() as u8,
                flow,
                half_cycles: latency_estimate(&i),
            });
        }
        let starts = |t: u64| instructions.binary_search_by_key(&t, |i| i.at).is_ok();
        let jump_tables: Vec<(u64, Vec<u64>)> = indirect
            .iter()
            .filter_map(|&k| {
                let targets = jump_table(&decoded, k, data, at..end, &starts)?;
                Some((decoded[k].ip(), targets))
            })
            .collect();
        let blocks = blocks(&instructions, &jump_tables, at, end);
        FunctionCode { instructions, blocks, jump_tables, start: at, end }
    }

    /// The targets the jump table of the indirect jump at `at` lists, when it has one.
    pub fn jump_table(&self, at: u64) -> Option<&[u64]> {
        let k = self.jump_tables.binary_search_by_key(&at, |t| t.0).ok()?;
        Some(&self.jump_tables[k].1)
    }

    /// The block holding `addr`.
    fn block_index(&self, addr: u64) -> Option<usize> {
        if addr < self.start || addr >= self.end {
            return None;
        }
        self.blocks.partition_point(|b| b.start <= addr).checked_sub(1)
    }

    /// The fall-throughs between blocks that code running straight from `start` through the
    /// instruction at `end` makes, each as (the last instruction of the block it leaves, the
    /// start of the next block), as perf2bolt reads a trace (`getFallthroughsInTrace`); `None`
    /// when no run can go so: `start` above `end`, either outside the function, or a block on
    /// the way that does not fall through (a jump, a return).
    pub fn fall_throughs(&self, start: u64, end: u64) -> Option<Vec<(u64, u64)>> {
        if start > end {
            return None;
        }
        let (first, last) = (self.block_index(start)?, self.block_index(end)?);
        let mut out = Vec::with_capacity(last - first);
        for k in first..last {
            let block = self.blocks[k];
            if !block.falls_through {
                return None;
            }
            out.push((block.last, self.blocks[k + 1].start));
        }
        Some(out)
    }
}

impl FunctionCode {
    /// The call a trace starting at `start` and entered from another function (the callee's
    /// return) runs on from, as perf2bolt reads such a trace (`getFallthroughsInTrace`):
    /// when `start` begins a block other than the function's first, and the block before it
    /// falls through into it and ends in a call, BOLT takes the trace to start in the call's
    /// block, so it crosses the boundary between the two: a fall-through from the call.
    /// (BOLT also leaves out exception landing pads, which are not told from the code.)
    pub fn call_before(&self, start: u64) -> Option<u64> {
        let k = self.block_index(start)?;
        if k == 0 || self.blocks[k].start != start {
            return None;
        }
        let before = self.blocks[k - 1];
        let last = self.instructions.binary_search_by_key(&before.last, |i| i.at).ok()?;
        (before.falls_through && matches!(self.instructions[last].flow, Flow::Call(_))).then_some(before.last)
    }
}

/// BOLT's blocks of a function's instructions (see the module documentation).
fn blocks(
    instructions: &[Instruction],
    jump_tables: &[(u64, Vec<u64>)],
    start: u64,
    end: u64,
) -> Vec<CodeBlock> {
    let inside = |t: u64| (start..end).contains(&t);
    let mut targets: Vec<u64> = instructions
        .iter()
        .filter_map(|i| match i.flow {
            Flow::Conditional(t) | Flow::Jump(t) if inside(t) => Some(t),
            _ => None,
        })
        .chain(jump_tables.iter().flat_map(|t| t.1.iter().copied()))
        .collect();
    targets.push(start);
    targets.sort_unstable();
    targets.dedup();
    let is_target = |a: u64| targets.binary_search(&a).is_ok();
    let mut out: Vec<CodeBlock> = Vec::new();
    // The instructions other than no-operations of the block being filled.
    let mut open = false;
    // The last instruction other than a no-operation, and the one before it in its block.
    let mut last: Option<Instruction> = None;
    let mut before_last: Option<Instruction> = None;
    let close =
        |out: &mut Vec<CodeBlock>, last: Option<Instruction>, before: Option<Instruction>, next: u64| {
            if let Some(block) = out.last_mut() {
                block.falls_through = falls_into(last, before, next);
            }
        };
    for i in instructions {
        let terminated = !open;
        if is_target(i.at) {
            close(&mut out, last, before_last, i.at);
            out.push(CodeBlock { start: i.at, last: i.at, falls_through: true });
            (open, last, before_last) = (true, None, None);
        }
        if i.flow == Flow::Nop {
            continue;
        }
        if !open && terminated {
            // After a branch: a new block, unless an unconditional jump follows a conditional
            // branch (that jump is the branch's block's second exit).
            let pairs = matches!(i.flow, Flow::Jump(t) if inside(t))
                && matches!(last.map(|l| l.flow), Some(Flow::Conditional(t)) if inside(t));
            if !pairs {
                close(&mut out, last, before_last, i.at);
                out.push(CodeBlock { start: i.at, last: i.at, falls_through: true });
                last = None;
            }
            open = true;
        }
        before_last = last;
        last = Some(*i);
        if let Some(block) = out.last_mut() {
            block.last = i.at;
        }
        if matches!(i.flow, Flow::Conditional(_) | Flow::Jump(_) | Flow::Stop | Flow::Indirect) {
            open = false;
        }
    }
    if let Some(block) = out.last_mut() {
        block.falls_through = false;
    }
    out
}

/// Whether a block whose last two instructions (no-operations aside) are `before` and `last`
/// runs on into the block at `next`.
fn falls_into(last: Option<Instruction>, before: Option<Instruction>, next: u64) -> bool {
    let Some(last) = last else { return true };
    match last.flow {
        Flow::Next | Flow::Call(_) | Flow::Nop | Flow::Conditional(_) => true,
        Flow::Jump(t) => {
            t == next || matches!(before.map(|b| b.flow), Some(Flow::Conditional(c)) if c == next)
        }
        Flow::Stop | Flow::Indirect => false,
    }
}

/// Most entries read from a jump table whose bound the code does not state.
const MAX_TABLE_ENTRIES: usize = 1024;

/// The targets of the jump table the indirect jump `decoded[k]` goes through, in the two forms
/// compilers emit for x86-64 (BOLT's `analyzeIndirectBranch` knows them too):
/// - position-independent: `lea TABLE(%rip),B; movslq (B,I,4),R; add B,R; jmp *R`, each entry
///   a 32-bit offset from the table;
/// - absolute: `jmp *TABLE(,I,8)`, each entry an address.
///
/// The bound is the `cmp $N,I` before the jump (N + 1 entries after `ja`); without one,
/// entries are read while they land on instructions of the function. Targets outside the
/// function or not at an instruction's start end the table.
fn jump_table(
    decoded: &[iced_x86::Instruction],
    k: usize,
    data: DataReader,
    function: std::ops::Range<u64>,
    starts: &dyn Fn(u64) -> bool,
) -> Option<Vec<u64>> {
    let jump = &decoded[k];
    let earlier = |from: usize| decoded[..from].iter().enumerate().rev();
    let same = |a: Register, b: Register| a != Register::None && a.full_register() == b.full_register();
    // (table address, entry size, index register, relative base)
    let (table, size, index, relative) = match jump.op0_kind() {
        OpKind::Memory if jump.memory_base() == Register::None && jump.memory_index_scale() == 8 => {
            (jump.memory_displacement64(), 8usize, jump.memory_index(), false)
        }
        OpKind::Register => {
            let r = jump.op0_register();
            let (a, _) = earlier(k).take(6).find(|(_, i)| {
                i.mnemonic() == Mnemonic::Add
                    && i.op_count() == 2
                    && i.op1_kind() == OpKind::Register
                    && same(i.op0_register(), r)
            })?;
            let base = decoded[a].op1_register();
            let (m, load) = earlier(a).take(6).find(|(_, i)| {
                i.mnemonic() == Mnemonic::Movsxd
                    && same(i.op0_register(), r)
                    && i.op1_kind() == OpKind::Memory
            })?;
            if !same(load.memory_base(), base) || load.memory_index_scale() != 4 {
                return None;
            }
            let (_, lea) = earlier(m).find(|(_, i)| {
                i.mnemonic() == Mnemonic::Lea
                    && same(i.op0_register(), base)
                    && i.memory_base() == Register::RIP
            })?;
            (lea.memory_displacement64(), 4, load.memory_index(), true)
        }
        _ => return None,
    };
    // The bound: `cmp $N, I` then `ja` (N + 1 entries) or `jae` (N).
    let bound = earlier(k).take(12).find_map(|(c, i)| {
        let compares = i.mnemonic() == Mnemonic::Cmp
            && i.op0_kind() == OpKind::Register
            && same(i.op0_register(), index)
            && matches!(
                i.op1_kind(),
                OpKind::Immediate8
                    | OpKind::Immediate8to32
                    | OpKind::Immediate8to64
                    | OpKind::Immediate32
                    | OpKind::Immediate32to64
            );
        if !compares {
            return None;
        }
        let n = i.immediate(1) as usize;
        match decoded.get(c + 1)?.mnemonic() {
            Mnemonic::Ja => Some(n + 1),
            Mnemonic::Jae => Some(n),
            _ => None,
        }
    });
    let count = bound.unwrap_or(MAX_TABLE_ENTRIES).min(MAX_TABLE_ENTRIES);
    let mut targets = Vec::new();
    for e in 0..count {
        let Some(bytes) = data(table.wrapping_add((e * size) as u64), size) else { break };
        let target = if relative {
            table.wrapping_add(i32::from_le_bytes(bytes.try_into().ok()?) as i64 as u64)
        } else {
            u64::from_le_bytes(bytes.try_into().ok()?)
        };
        if !function.contains(&target) || !starts(target) {
            if bound.is_some() {
                return None; // not a table of this function after all
            }
            break;
        }
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    (!targets.is_empty()).then_some(targets)
}

/// The executable sections of an x86-64 ELF file, to decode its functions by address or by
/// file offset.
pub struct BinaryCode {
    /// (address, file offset, bytes) of each executable section with contents.
    sections: Vec<(u64, u64, &'static [u8])>,
    /// (address, file offset, bytes) of each loaded section with contents, for jump tables.
    loaded: Vec<(u64, u64, &'static [u8])>,
    /// Keeps the bytes above mapped.
    _elf: ElfFile,
}

impl BinaryCode {
    /// The code of an x86-64 ELF file; `None` for another machine, or a file without code
    /// (a separate debug file).
    pub fn open(path: &Path) -> Option<BinaryCode> {
        let elf = ElfFile::open(path).ok()?;
        if elf.object.architecture() != object::Architecture::X86_64 {
            return None;
        }
        let sections: Vec<(u64, u64, &'static [u8])> = elf
            .object
            .sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .filter_map(|s| {
                let (offset, _) = s.file_range()?;
                let data: &'static [u8] = s.data().ok()?;
                (!data.is_empty()).then_some((s.address(), offset, data))
            })
            .collect();
        let loaded: Vec<(u64, u64, &'static [u8])> = elf
            .object
            .sections()
            .filter(|s| s.address() != 0)
            .filter_map(|s| {
                let (offset, _) = s.file_range()?;
                let data: &'static [u8] = s.data().ok()?;
                (!data.is_empty()).then_some((s.address(), offset, data))
            })
            .collect();
        (!sections.is_empty()).then_some(BinaryCode { sections, loaded, _elf: elf })
    }

    /// The function of `size` bytes at linked address `address`.
    pub fn function_at_address(&self, address: u64, size: u64) -> Option<FunctionCode> {
        self.function(address, size, |s| s.0)
    }

    /// The function of `size` bytes at `offset` into the file, decoded in file offsets.
    pub fn function_at_file_offset(&self, offset: u64, size: u64) -> Option<FunctionCode> {
        self.function(offset, size, |s| s.1)
    }

    /// `len` bytes of the file's contents at linked address `address` (code or data);
    /// `None` where the file has none.
    pub fn bytes_at(&self, address: u64, len: usize) -> Option<&[u8]> {
        let s = self.loaded.iter().find(|s| address >= s.0 && address - s.0 < s.2.len() as u64)?;
        let from = (address - s.0) as usize;
        s.2.get(from..from.checked_add(len)?)
    }

    /// Up to `len` bytes of the file's contents from linked address `address`, fewer where
    /// its section ends first.
    pub fn bytes_from(&self, address: u64, len: usize) -> Option<&[u8]> {
        let s = self.loaded.iter().find(|s| address >= s.0 && address - s.0 < s.2.len() as u64)?;
        let from = (address - s.0) as usize;
        Some(&s.2[from..from.saturating_add(len).min(s.2.len())])
    }

    /// The linked address ranges of the sections with one of `names`.
    pub fn sections_named(&self, names: &[&str]) -> Vec<std::ops::Range<u64>> {
        self._elf
            .object
            .sections()
            .filter(|s| s.name().is_ok_and(|n| names.contains(&n)))
            .map(|s| s.address()..s.address().saturating_add(s.size()))
            .collect()
    }

    /// What each slot of the global offset table that the procedure linkage table jumps
    /// through is bound to, by the slot's address, as objdump names the stub that reads it
    /// (without the `@plt`): the symbol of its `JUMP_SLOT` relocation, or `*ABS*+0xADDR` for
    /// an `IRELATIVE` one (a function the loader picks at startup by running the resolver at
    /// ADDR, as glibc does for its string functions).
    pub fn jump_slots(&self) -> std::collections::HashMap<u64, String> {
        use object::elf::{R_X86_64_IRELATIVE, R_X86_64_JUMP_SLOT};
        use object::{ObjectSymbol, ObjectSymbolTable, RelocationFlags, RelocationTarget};
        let object = &self._elf.object;
        let symbols = object.dynamic_symbol_table();
        let mut slots = std::collections::HashMap::new();
        for (slot, r) in object.dynamic_relocations().into_iter().flatten() {
            let RelocationFlags::Elf { r_type } = r.flags() else { continue };
            let name = match (r_type, r.target()) {
                (R_X86_64_JUMP_SLOT, RelocationTarget::Symbol(index)) => symbols
                    .as_ref()
                    .and_then(|t| t.symbol_by_index(index).ok())
                    .and_then(|s| s.name().ok())
                    .map(str::to_string),
                (R_X86_64_IRELATIVE, _) => Some(format!("*ABS*+{:#x}", r.addend())),
                _ => None,
            };
            if let Some(name) = name {
                slots.insert(slot, name);
            }
        }
        slots
    }

    fn function(&self, at: u64, size: u64, base: impl Fn(&(u64, u64, &[u8])) -> u64) -> Option<FunctionCode> {
        let s = self.sections.iter().find(|s| at >= base(s) && at - base(s) < s.2.len() as u64)?;
        let from = (at - base(s)) as usize;
        let to = from.saturating_add(usize::try_from(size).ok()?).min(s.2.len());
        let read = |address: u64, len: usize| -> Option<&[u8]> {
            let s =
                self.loaded.iter().find(|s| address >= base(s) && address - base(s) < s.2.len() as u64)?;
            let from = (address - base(s)) as usize;
            s.2.get(from..from.checked_add(len)?)
        };
        Some(FunctionCode::decode_x86_64_with_data(&s.2[from..to], at, &read))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `compute_flag` of fixtures/perf-data/propeller_sample_1.bin, at 0x18d0.
    const COMPUTE_FLAG: &[u8] = &[
        0x89, 0x7c, 0x24, 0xf8, // mov %edi,-0x8(%rsp)
        0x8b, 0x44, 0x24, 0xf8, // mov -0x8(%rsp),%eax
        0xb9, 0x0a, 0x00, 0x00, 0x00, // mov $0xa,%ecx
        0x99, // cltd
        0xf7, 0xf9, // idiv %ecx
        0x83, 0xfa, 0x04, // cmp $0x4,%edx
        0x0f, 0x8d, 0x10, 0x00, 0x00, 0x00, // 0x18e3: jge 0x18f9
        0x8b, 0x44, 0x24, 0xf8, // 0x18e9
        0x83, 0xc0, 0x01, // add $1,%eax
        0x89, 0x44, 0x24, 0xfc, // mov %eax,-0x4(%rsp)
        0xe9, 0x08, 0x00, 0x00, 0x00, // 0x18f4: jmp 0x1901
        0xc7, 0x44, 0x24, 0xfc, 0x00, 0x00, 0x00, 0x00, // 0x18f9: movl $0,-0x4(%rsp)
        0x8b, 0x44, 0x24, 0xfc, // 0x1901: mov -0x4(%rsp),%eax
        0xc3, // 0x1905: ret
        0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, // cs nopw
    ];

    #[test]
    fn blocks_and_fall_throughs_of_a_function() {
        let code = FunctionCode::decode_x86_64(COMPUTE_FLAG, 0x18d0);
        let starts: Vec<(u64, u64, bool)> =
            code.blocks.iter().map(|b| (b.start, b.last, b.falls_through)).collect();
        assert_eq!(
            starts,
            vec![
                (0x18d0, 0x18e3, true),
                (0x18e9, 0x18f4, false),
                (0x18f9, 0x18f9, true),
                (0x1901, 0x1905, false)
            ]
        );
        // Entered at 0x18d0, not taken at 0x18e3, on to the jump at 0x18f4.
        assert_eq!(code.fall_throughs(0x18d0, 0x18f4), Some(vec![(0x18e3, 0x18e9)]));
        assert_eq!(code.fall_throughs(0x18f9, 0x1905), Some(vec![(0x18f9, 0x1901)]));
        // Inside one block: none; over the jump: no run goes so.
        assert_eq!(code.fall_throughs(0x18d4, 0x18e3), Some(vec![]));
        assert_eq!(code.fall_throughs(0x18e9, 0x1901), None);
        assert_eq!(code.fall_throughs(0x1901, 0x18d0), None);
    }

    /// `run` of a loop whose body calls when `i` is odd (`if (i & 1) s = work(s); s += i;`),
    /// by clang 19 -O1, at 0x401120: the call at 0x401140 returns to a block of its own, the
    /// target of the jump at 0x401161 that skips the call.
    pub(crate) const CALL_IN_LOOP: &[u8] = &[
        0x85, 0xff, // test %edi,%edi
        0x7e, 0x46, // 0x401122: jle 0x40116a
        0x55, 0x41, 0x56, 0x53, // push %rbp; push %r14; push %rbx
        0x89, 0xfb, // mov %edi,%ebx
        0x45, 0x31, 0xf6, // xor %r14d,%r14d
        0xbd, 0x01, 0x00, 0x00, 0x00, // mov $1,%ebp
        0x31, 0xff, // xor %edi,%edi
        0xeb, 0x23, // 0x401134: jmp 0x401159
        0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, // cs nopw
        0xe8, 0xcb, 0xff, 0xff, 0xff, // 0x401140: call work
        0x42, 0x8d, 0x3c, 0x30, // 0x401145: lea (%rax,%r14,1),%edi
        0x41, 0xff, 0xc6, // inc %r14d
        0x89, 0xe9, // mov %ebp,%ecx
        0xff, 0xcd, // dec %ebp
        0x01, 0xd9, // add %ebx,%ecx
        0xff, 0xc9, // dec %ecx
        0x83, 0xf9, 0x01, // cmp $1,%ecx
        0x74, 0x0a, // 0x401157: je 0x401163
        0x41, 0xf6, 0xc6, 0x01, // 0x401159: test $1,%r14b
        0x75, 0xe1, // 0x40115d: jne 0x401140
        0x89, 0xf8, // mov %edi,%eax
        0xeb, 0xe2, // 0x401161: jmp 0x401145
        0x29, 0xe8, // 0x401163: sub %ebp,%eax
        0x5b, 0x41, 0x5e, 0x5d, // pop %rbx; pop %r14; pop %rbp
        0xc3, // ret
        0x31, 0xc0, // 0x40116a: xor %eax,%eax
        0xc3, // ret
    ];

    #[test]
    fn a_trace_entered_after_a_call_runs_on_from_the_call() {
        let code = FunctionCode::decode_x86_64(CALL_IN_LOOP, 0x401120);
        let starts: Vec<u64> = code.blocks.iter().map(|b| b.start).collect();
        assert_eq!(
            starts,
            vec![0x401120, 0x401124, 0x401140, 0x401145, 0x401159, 0x40115f, 0x401163, 0x40116a]
        );
        // The call does not end its block: the jump's target after it does.
        assert_eq!(code.blocks[2].last, 0x401140);
        assert_eq!(code.call_before(0x401145), Some(0x401140));
        // Not after a call: a jump (0x401134) ends the block before 0x401140; the entry;
        // inside a block.
        assert_eq!(code.call_before(0x401140), None);
        assert_eq!(code.call_before(0x401159), None);
        assert_eq!(code.call_before(0x401120), None);
        assert_eq!(code.call_before(0x401149), None);
        // The trace from the landing to the loop's branch crosses one boundary of its own.
        assert_eq!(code.fall_throughs(0x401145, 0x40115d), Some(vec![(0x401157, 0x401159)]));
    }

    #[test]
    fn a_jump_after_a_conditional_branch_ends_its_block() {
        // 0: je 6; 2: jmp 8; 4: nop; nop; 6: nop; 7: ret; 8: ret. The pair's block runs on
        // into the next (the conditional's target); a ret does not.
        let bytes = [0x74, 0x04, 0xeb, 0x04, 0x90, 0x90, 0x90, 0xc3, 0xc3];
        let code = FunctionCode::decode_x86_64(&bytes, 0);
        let starts: Vec<(u64, u64, bool)> =
            code.blocks.iter().map(|b| (b.start, b.last, b.falls_through)).collect();
        assert_eq!(starts, vec![(0, 2, true), (6, 7, false), (8, 8, false)]);
        assert_eq!(code.fall_throughs(0, 7), Some(vec![(2, 6)]));
        assert_eq!(code.fall_throughs(6, 8), None);
    }

    /// A switch of three cases through a position-independent jump table at 0x40 (each entry
    /// the case's offset from the table), bounded by `cmp $2; ja default`.
    pub(crate) const SWITCH: &[u8] = &[
        0x48, 0x83, 0xff, 0x02, // cmp $2,%rdi
        0x77, 0x22, // 0x04: ja 0x28
        0x48, 0x8d, 0x0d, 0x33, 0x00, 0x00, 0x00, // 0x06: lea 0x40(%rip),%rcx
        0x48, 0x63, 0x04, 0xb9, // 0x0d: movslq (%rcx,%rdi,4),%rax
        0x48, 0x01, 0xc8, // 0x11: add %rcx,%rax
        0xff, 0xe0, // 0x14: jmp *%rax
        0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3, // 0x16: case 0
        0xb8, 0x02, 0x00, 0x00, 0x00, 0xc3, // 0x1c: case 1
        0xb8, 0x03, 0x00, 0x00, 0x00, 0xc3, // 0x22: case 2
        0x31, 0xc0, 0xc3, // 0x28: default
    ];

    /// The table of [`SWITCH`]: -0x2a, -0x24, -0x1e.
    pub(crate) fn switch_table(at: u64, len: usize) -> Option<&'static [u8]> {
        const TABLE: [u8; 12] = [0xd6, 0xff, 0xff, 0xff, 0xdc, 0xff, 0xff, 0xff, 0xe2, 0xff, 0xff, 0xff];
        let from = usize::try_from(at.checked_sub(0x40)?).ok()?;
        TABLE.get(from..from.checked_add(len)?)
    }

    #[test]
    fn a_jump_table_gives_its_jump_the_cases_as_targets() {
        let code = FunctionCode::decode_x86_64_with_data(SWITCH, 0, &switch_table);
        assert_eq!(code.jump_table(0x14), Some(&[0x16, 0x1c, 0x22][..]));
        let starts: Vec<u64> = code.blocks.iter().map(|b| b.start).collect();
        assert_eq!(starts, vec![0, 0x06, 0x16, 0x1c, 0x22, 0x28]);
        assert_eq!(code.instructions.iter().find(|i| i.at == 0x14).map(|i| i.flow), Some(Flow::Indirect));
        // Without the table's bytes, the jump's targets are unknown.
        let code = FunctionCode::decode_x86_64(SWITCH, 0);
        assert_eq!(code.jump_table(0x14), None);
        // A table whose entries land outside the function is no table of it.
        let wrong = |at: u64, len: usize| {
            switch_table(at, len).map(|_| &[0x00u8, 0x10, 0, 0, 0, 0x10, 0, 0, 0, 0x10, 0, 0][..len])
        };
        assert_eq!(FunctionCode::decode_x86_64_with_data(SWITCH, 0, &wrong).jump_table(0x14), None);
    }

    #[test]
    fn dear_instructions_weigh_more() {
        let code = FunctionCode::decode_x86_64(SWITCH, 0);
        let cost = |at: u64| code.instructions.iter().find(|i| i.at == at).unwrap().half_cycles;
        // A compare 2, an indirect jump 10; a divide (`div %rcx`) 42; a no-operation 1.
        assert_eq!((cost(0), cost(0x14)), (2, 10));
        let div = FunctionCode::decode_x86_64(&[0x48, 0xf7, 0xf1, 0x90, 0xc3], 0);
        let costs: Vec<u8> = div.instructions.iter().map(|i| i.half_cycles).collect();
        assert_eq!(costs, vec![42, 1, 2]);
    }
}
