//! User stacks of `perf record --call-graph dwarf`, unwound as `perf script` unwinds them.
//!
//! In that mode the kernel records no user call chain: each sample carries the user
//! registers (`REGS_USER`) and a copy of the user stack from the stack pointer up
//! (`STACK_USER`, 8 KiB unless `--call-graph dwarf,SIZE` says otherwise), and the frames are
//! found afterwards by running the binaries' call frame information (`.eh_frame`, DWARF CFI)
//! over that copy. The unwinder is `framehop`'s: one per process, holding a module for each
//! code mapping of its address space at the time of the sample (rebuilt when the process
//! maps something new), each module the unwind sections of the mapped file, found as the
//! names are (by build id in perf's cache, the system's debug files, `--symbols`, else the
//! recorded path).
//!
//! The frames are the sampled instruction, then each return address less one, as perf
//! writes them (the address inside the call, so that a call that ends its function is not
//! named after the next one). A stack ends where the unwind information says the outermost
//! frame is (`_start`, a thread's `clone3`); one that stops before that (the stack copy ran
//! out, a file without unwind information) keeps the frames found and is counted, and the
//! reading says how many there were.

use std::ops::{Deref, Range};
use std::path::PathBuf;
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection, ObjectSegment};
use rustc_hash::FxHashMap;

use cfghub_analysis::symbolize::search::{self, Query};

/// perf's x86-64 register numbers (`arch/x86/include/uapi/asm/perf_regs.h`).
const REG_BP: u32 = 6;
const REG_SP: u32 = 7;
const REG_IP: u32 = 8;

/// The deepest stack followed: the frames of a runaway unwinding (a loop in damaged stack
/// data) stop here, as perf's stop at its `max_stack` (127).
const MOST_FRAMES: usize = 1024;

/// A section of a mapped file: the unwinder reads it in place.
#[derive(Clone)]
pub(super) struct SectionBytes {
    file: Arc<memmap2::Mmap>,
    range: Range<usize>,
}

impl Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.file[self.range.clone()]
    }
}

/// What a file gives the unwinder: its unwind sections, and the stated address of file
/// offset 0 of its code (to place a mapping of the file).
struct FileUnwind {
    sections: ExplicitModuleSectionInfo<SectionBytes>,
    /// `p_vaddr - p_offset` of the file's executable segments (the segments of one ELF file
    /// keep the same difference, page-aligned, for code).
    stated_minus_offset: u64,
}

/// How the user stacks of a recording's samples went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Samples with user registers and a user stack.
    pub stacks: u64,
    /// Of those, the ones whose unwinding stopped before the outermost frame.
    pub cut_short: u64,
    /// Of those, the ones that stopped on the end of the stack copy.
    pub out_of_copy: u64,
    /// Files whose unwind information could not be read, by recorded path.
    pub without_unwind_info: Vec<String>,
}

/// The unwinding state of a replay: the files' unwind sections, each read once, and one
/// unwinder per process.
pub(super) struct Unwinding {
    paths: Vec<PathBuf>,
    caches: Vec<PathBuf>,
    system: Vec<PathBuf>,
    /// Per image of the recording: `None` until first needed, then its file's unwind
    /// information (`None` inside: none could be read).
    files: Vec<Option<Option<Arc<FileUnwind>>>>,
    /// Per pid: the generation of its address space the unwinder was built for.
    unwinders: FxHashMap<i32, (u64, UnwinderX86_64<SectionBytes>)>,
    cache: CacheX86_64,
    pub tally: Tally,
}

/// One code mapping of a process: its address range, file offset and image.
pub(super) struct CodeMapping<'a> {
    pub range: Range<u64>,
    pub pgoff: u64,
    pub image: u32,
    pub path: &'a str,
    pub build_id: Option<&'a [u8]>,
}

impl Unwinding {
    /// Unwinding that looks for files in `symbol_paths` (`--symbols`) first.
    pub(super) fn new(symbol_paths: &[PathBuf]) -> Unwinding {
        Unwinding {
            paths: symbol_paths.to_vec(),
            caches: search::perf_build_id_cache().into_iter().collect(),
            system: vec![PathBuf::from(search::SYSTEM_DEBUG_DIR)],
            files: Vec::new(),
            unwinders: FxHashMap::default(),
            cache: CacheX86_64::new(),
            tally: Tally::default(),
        }
    }

    /// Unwinds one sample's user stack: `frames` gets the sampled instruction and each
    /// return address less one, leaf first. `mappings` gives the process's code mappings
    /// when its unwinder must be (re)built for address-space `generation`.
    pub(super) fn unwind<'m, M>(
        &mut self,
        pid: i32,
        generation: u64,
        mappings: impl FnOnce() -> M,
        regs: impl Fn(u32) -> Option<u64>,
        stack: &[u8],
        frames: &mut Vec<u64>,
    ) where
        M: Iterator<Item = CodeMapping<'m>>,
    {
        let (Some(ip), Some(sp)) = (regs(REG_IP), regs(REG_SP)) else { return };
        self.tally.stacks += 1;
        let built = self.unwinders.get(&pid).is_some_and(|(g, _)| *g == generation);
        if !built {
            let mut unwinder = UnwinderX86_64::new();
            for m in mappings() {
                if let Some(file) = self.file(&m) {
                    let bias = (m.range.start.wrapping_sub(m.pgoff)).wrapping_sub(file.stated_minus_offset);
                    let module =
                        Module::new(m.path.to_string(), m.range.clone(), bias, file.sections.clone());
                    unwinder.add_module(module);
                }
            }
            self.unwinders.insert(pid, (generation, unwinder));
        }
        let unwinder = &self.unwinders[&pid].1;
        let mut ran_out = false;
        let mut read_stack = |address: u64| {
            let at = address.checked_sub(sp).and_then(|a| usize::try_from(a).ok());
            match at.and_then(|a| stack.get(a..a.checked_add(8)?)) {
                Some(word) => Ok(u64::from_le_bytes(word.try_into().unwrap_or_default())),
                None => {
                    ran_out = true;
                    Err(())
                }
            }
        };
        let bp = regs(REG_BP).unwrap_or(0);
        let mut iter =
            unwinder.iter_frames(ip, UnwindRegsX86_64::new(ip, sp, bp), &mut self.cache, &mut read_stack);
        let start = frames.len();
        let complete = loop {
            match iter.next() {
                Ok(Some(FrameAddress::InstructionPointer(a))) => frames.push(a),
                Ok(Some(FrameAddress::ReturnAddress(a))) => frames.push(a.get() - 1),
                Ok(None) => break true,
                Err(_) => break false,
            }
            if frames.len() - start >= MOST_FRAMES {
                break false;
            }
        };
        if !complete {
            self.tally.cut_short += 1;
            self.tally.out_of_copy += u64::from(ran_out);
        }
    }

    /// The unwind information of a mapping's file, read when first asked for.
    fn file(&mut self, m: &CodeMapping<'_>) -> Option<Arc<FileUnwind>> {
        let at = m.image as usize;
        if self.files.len() <= at {
            self.files.resize(at + 1, None);
        }
        if let Some(known) = &self.files[at] {
            return known.clone();
        }
        let id = m.build_id.map(search::hex);
        let query = Query {
            image: Some(m.path),
            build_id: id.as_deref(),
            paths: &self.paths,
            system_dirs: &self.system,
            build_id_caches: &self.caches,
            ..Query::default()
        };
        let found = search::find(&query);
        // The file found for its symbols, else the recorded path (a separate debug file
        // keeps no unwind sections of its own).
        let recorded = std::path::Path::new(m.path);
        let read = found
            .binary
            .as_deref()
            .and_then(read_unwind_sections)
            .or_else(|| read_unwind_sections(recorded))
            .map(Arc::new);
        // A file mapped at two bases is two images: named once.
        let named = self.tally.without_unwind_info.iter().any(|p| p == m.path);
        if read.is_none() && !m.path.starts_with('[') && !named {
            self.tally.without_unwind_info.push(m.path.to_string());
        }
        self.files[at] = Some(read.clone());
        read
    }
}

/// The unwind sections of an ELF file (`.eh_frame` with its `.eh_frame_hdr` index, or
/// `.debug_frame`), with `.text` for the unwinder's look at prologues and epilogues.
fn read_unwind_sections(path: &std::path::Path) -> Option<FileUnwind> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: a read-only private mapping of a file the reading does not write; like every
    // mapping of a file it assumes nobody truncates the file meanwhile.
    let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.ok()?);
    let elf = object::File::parse(&map[..]).ok()?;
    let bytes = |name: &str| -> Option<(Range<u64>, SectionBytes)> {
        let s = elf.section_by_name(name)?;
        let (offset, size) = s.file_range()?;
        let start = usize::try_from(offset).ok()?;
        let range = start..start.checked_add(usize::try_from(size).ok()?)?;
        map.get(range.clone())?;
        Some((s.address()..s.address() + s.size(), SectionBytes { file: map.clone(), range }))
    };
    let (eh_frame, eh_frame_hdr, debug_frame) =
        (bytes(".eh_frame"), bytes(".eh_frame_hdr"), bytes(".debug_frame"));
    if eh_frame.is_none() && debug_frame.is_none() {
        return None;
    }
    let text = bytes(".text");
    let got = elf.section_by_name(".got").map(|s| s.address()..s.address() + s.size());
    let executable = |s: &object::Segment<'_, '_>| matches!(s.flags(), object::SegmentFlags::Elf { p_flags, .. } if p_flags.0 & 1 != 0);
    let code = elf.segments().find(executable)?;
    let stated_minus_offset = code.address().wrapping_sub(code.file_range().0);
    let (text_svma, text) = text.map_or((None, None), |(r, b)| (Some(r), Some(b)));
    let (eh_frame_svma, eh_frame) = eh_frame.map_or((None, None), |(r, b)| (Some(r), Some(b)));
    let (eh_frame_hdr_svma, eh_frame_hdr) = eh_frame_hdr.map_or((None, None), |(r, b)| (Some(r), Some(b)));
    let sections = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma,
        text,
        got_svma: got,
        eh_frame_svma,
        eh_frame,
        eh_frame_hdr_svma,
        eh_frame_hdr,
        debug_frame: debug_frame.map(|(_, b)| b),
        stubs_svma: None,
        stub_helper_svma: None,
        unwind_info: None,
        text_segment_svma: None,
        text_segment: None,
    };
    Some(FileUnwind { sections, stated_minus_offset })
}
