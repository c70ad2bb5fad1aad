//! The function every block belongs to, for writers that speak of functions rather than
//! blocks (Callgrind's `fn=` with `calls=`/`jump=` positions): each routine as a function
//! (its name and file), and of each block the source lines at its first and last instruction
//! and the routine that holds it.

use std::borrow::Cow;

use cfghub_analysis::names;
use cfghub_analysis::source::SourceIndex;
use cfghub_model::ir::NO_INDEX;
use cfghub_model::ir::{FileId, Process, Profile, Routine};

/// What an edge needs of a block beside the block itself (whose first instruction is its
/// `offset` and last `offset + last_instr_offset`): its routine and the source lines at its
/// two ends. Twelve bytes: a writer holds one per block of the profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockEnds {
    /// The routine holding the block, numbered as the call graph numbers its nodes (images in
    /// order, routines in order); [`NO_INDEX`] for none.
    pub routine: u32,
    /// The source line of the first and of the last instruction (0 for none).
    pub first_line: u32,
    pub last_line: u32,
}

/// How a routine is named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FunctionName {
    /// The symbol (index in its image) that starts at the routine's entry, or that the routine
    /// names ([`cfghub_model::ir::Routine::symbol`]).
    Symbol(u32),
    /// The code at the entry ([`names::code_name`]), or `image#N` for a routine without an
    /// entry block.
    Code(String),
}

/// A routine as a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RoutineFunction {
    pub image: u32,
    pub name: FunctionName,
    /// The file of the symbol at the entry, else of the entry's source line.
    pub file: Option<FileId>,
}

/// The functions of a process's routines and the ends of its blocks.
pub(crate) struct BlockFunctions {
    /// Per image, every block's ends.
    pub blocks: Vec<Vec<BlockEnds>>,
    /// Every routine, numbered as [`BlockEnds::routine`] numbers them.
    pub routines: Vec<RoutineFunction>,
}

/// The functions of `process`'s routines (`routines`: per image, when given) and the ends of
/// its blocks; `lines` is each image's source-line index. A block belongs to the last routine
/// listing it (as node or entry).
pub(crate) fn of_blocks(
    profile: &Profile,
    lines: &[SourceIndex],
    process: &Process,
    routines: Option<&[Cow<'_, [Routine]>]>,
) -> BlockFunctions {
    // Block ends in one pass over each image's blocks and source lines, both usually in
    // address order.
    let mut blocks: Vec<Vec<BlockEnds>> = process
        .images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            let (mut first_hint, mut last_hint) = (0usize, 0usize);
            let index = &lines[i];
            image
                .blocks
                .iter()
                .map(|block| {
                    let last = block.last_instr();
                    BlockEnds {
                        routine: NO_INDEX,
                        first_line: index.at_from(image, block.offset, &mut first_hint).map_or(0, |l| l.line),
                        last_line: index.at_from(image, last, &mut last_hint).map_or(0, |l| l.line),
                    }
                })
                .collect()
        })
        .collect();
    // Routines: named as the call graph names them, by the symbol at their entry.
    let mut functions = Vec::new();
    for (i, image) in process.images.iter().enumerate() {
        let Some(rs) = routines.and_then(|rs| rs.get(i)) else { continue };
        let index = names::SymbolIndex::new(image);
        let ends = &mut blocks[i];
        for (r, routine) in rs.iter().enumerate() {
            let n = functions.len() as u32;
            for &b in &routine.nodes {
                if let Some(end) = ends.get_mut(b as usize) {
                    end.routine = n;
                }
            }
            if let Some(end) = ends.get_mut(routine.entry as usize) {
                end.routine = n;
            }
            let entry = image.blocks.get(routine.entry as usize);
            // A routine that names its function, or whose entry lies in a function's stated
            // range, is a part of that function entered apart from its entry (a catch block the
            // unwinder enters, the code after a call that does not return there): that
            // function, as the source counted it. (A symbol without a size covers its start.)
            // A section's name (Pin names the PLT's code `.plt`) covers many functions: a
            // routine inside it is code of its own.
            let named = routine.symbol.filter(|&s| (s as usize) < image.symbols.len());
            let covering = named.or_else(|| entry.and_then(|b| index.covering(b.offset)));
            let name = match (entry, covering) {
                (_, Some(s)) if named.is_some() => FunctionName::Symbol(s),
                (Some(b), Some(s))
                    if image.symbols[s as usize].offset == Some(b.offset)
                        || !image.symbols[s as usize].name.starts_with('.') =>
                {
                    FunctionName::Symbol(s)
                }
                (Some(b), _) => FunctionName::Code(names::valgrind_code_name(
                    profile,
                    image,
                    &index,
                    b.offset,
                    cfghub_analysis::addresses::stated_base(profile, image),
                )),
                (None, _) => FunctionName::Code(format!("{}#{}", names::image_base_name(profile, image), r)),
            };
            let file = covering
                .and_then(|s| image.symbols[s as usize].file)
                .or_else(|| entry.and_then(|b| lines[i].at(image, b.offset)).and_then(|l| l.file));
            functions.push(RoutineFunction { image: i as u32, name, file });
        }
    }
    BlockFunctions { blocks, routines: functions }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Block, Image, SourceLine, Symbol};

    #[test]
    fn blocks_belong_to_the_last_routine_listing_them_and_routines_are_named_by_the_function_holding_their_entry(
    ) {
        let block = |offset, size, last| Block { offset, size, last_instr_offset: last, ..Block::default() };
        let line = |line, offset, size| SourceLine { file: Some(0), line, offset, size, num_instrs: 1 };
        let image = Image {
            symbols: vec![Symbol { name: "f".into(), offset: Some(0x10), size: Some(0x20), file: Some(3) }],
            blocks: vec![block(0x10, 8, 4), block(0x18, 8, 6), block(0x40, 4, 0)],
            source_lines: vec![line(1, 0x10, 4), line(2, 0x14, 0x0c), line(9, 0x40, 4)],
            ..Image::default()
        };
        let process = Process { images: vec![image], ..Process::default() };
        let routines: Vec<Cow<'_, [Routine]>> = vec![Cow::Owned(vec![
            Routine { entry: 0, nodes: vec![0, 1], ..Routine::default() },
            Routine { entry: 1, nodes: vec![1], ..Routine::default() },
            Routine { entry: 2, nodes: vec![2], ..Routine::default() },
        ])];
        let profile = Profile::default();
        let lines: Vec<SourceIndex> = process.images.iter().map(SourceIndex::new).collect();
        let f = of_blocks(&profile, &lines, &process, Some(&routines));
        let ends: Vec<(u32, u32, u32)> =
            f.blocks[0].iter().map(|e| (e.routine, e.first_line, e.last_line)).collect();
        assert_eq!(ends, [(0, 1, 2), (1, 2, 2), (2, 9, 9)]);
        assert_eq!(f.routines[0], RoutineFunction { image: 0, name: FunctionName::Symbol(0), file: Some(3) });
        // Inside f but not at its start (a part of f entered apart): f, with f's file.
        assert_eq!(f.routines[1].name, FunctionName::Symbol(0));
        assert_eq!(f.routines[1].file, Some(3));
        // No symbol: named by its runtime address as Valgrind names such code, the file of
        // the entry's line.
        assert_eq!(f.routines[2].file, Some(0));
        assert_eq!(f.routines[2].name, FunctionName::Code("0x0000000000000040".into()));
        // Inside a section's name (Pin's `.plt`): code of its own.
        let mut plt = process.clone();
        plt.images[0].symbols[0].name = ".plt".into();
        let g = of_blocks(&profile, &lines, &plt, Some(&routines));
        assert_eq!(g.routines[1].name, FunctionName::Code(".plt+0x8".into()));
        // Without routines, blocks belong to none.
        let none = of_blocks(&profile, &lines, &process, None);
        assert!(none.routines.is_empty() && none.blocks[0].iter().all(|e| e.routine == NO_INDEX));
    }
}
