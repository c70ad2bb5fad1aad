//! BOLT's profiles: `.fdata` (the form `perf2bolt` writes and `llvm-bolt -data=` reads) and the
//! pre-aggregated branch records `perf2bolt -pa` and `llvm-bolt -pa` read.
//!
//! `.fdata`, LBR form: one line per branch, call, return or fall-through,
//! `IS_SYM FROM_NAME FROM_OFF IS_SYM TO_NAME TO_OFF MISPREDS COUNT`, offsets in hex from the
//! named symbol's start. `IS_SYM` is 1 for a symbol of the binary and 2 for a local symbol
//! (BOLT names a local function `name/1` or `name/file/1`); 0 names a shared object or
//! `[unknown]` with an address in it. A fall-through is written from the **last instruction of
//! the block it leaves** to the first instruction of the next block, which is how BOLT tells
//! it from a branch. `no_lbr EVENT` as the first line switches to the sample form, one line per
//! address: `IS_SYM NAME OFF COUNT`. BOLT's memory events (`IS_SYM` 3 to 5) are not control
//! flow and are skipped with a warning.
//!
//! Pre-aggregated form (format `bolt-pa`): `B FROM TO COUNT MISPREDS` (a taken branch),
//! `F START END COUNT` (code run straight from `START` through `END`), `f START END COUNT`
//! (the same, entered from outside the profile); locations are `[BUILDID:]HEXADDR`, runtime
//! addresses of the binary.
//!
//! Model: one process, one image (the binary: `--symbols` names it, and then names resolve
//! to its ELF symbols), its symbols, and blocks and edges rebuilt from the records through
//! [`cfghub_analysis::branch_records`]; the sample form gives one cost row per address. See
//! docs/formats/fdata.md and docs/formats/bolt-pa.md.

pub mod fdata_read;
pub mod fdata_write;
pub mod plt;
pub mod preagg;
pub mod records;

use std::path::PathBuf;

use crate::format::{Format, Needs};
use cfghub_model::ir::AddressKind;

/// What the BOLT readers and writers can be told.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The binary the profile is of (`--symbols PATH`). Reading, `.fdata` names resolve to its
    /// ELF symbols and the pre-aggregated form's addresses fall in its functions (without it,
    /// `.fdata` functions are laid out one after another in the order they first appear).
    /// Writing, addresses are named by its symbol table (else by the image's own file, else by
    /// the model's symbols).
    pub binary: Option<PathBuf>,
    /// Writing, the image written (`--image`: its id, path or file base name); default the
    /// image of `binary`, else the main binary. BOLT optimizes one binary per profile.
    pub image: Option<String>,
}

/// BOLT's `.fdata` profile.
pub static FORMAT: Format = Format {
    name: "fdata",
    description: "BOLT profile (.fdata, LBR and no_lbr forms; perf2bolt, llvm-bolt -data)",
    extensions: &[".fdata"],
    sniffer: Some(fdata_read::sniff),
    reader: Some(fdata_read::read),
    writer: Some(fdata_write::write),
    needs: Needs::SAMPLE_COUNTS,
    without_addresses: Some("BOLT profiles are by symbol and offset; these blocks are left out"),
    addresses: AddressKind::Stated,
    ..Format::NONE
};

/// BOLT's pre-aggregated branch records.
pub static PREAGGREGATED: Format = Format {
    name: "bolt-pa",
    description: "BOLT pre-aggregated branch records (B/F lines; perf2bolt -pa, llvm-bolt -pa)",
    extensions: &[".pa", ".preagg"],
    sniffer: Some(preagg::sniff),
    reader: Some(preagg::read),
    writer: Some(preagg::write),
    without_addresses: Some("pre-aggregated records are by address; these blocks are left out"),
    addresses: AddressKind::Runtime,
    ..Format::NONE
};

/// Reads the next line of a text profile into `line` (its bytes kept in `bytes`), `n` its
/// number from 1; 0 at the end. A line that is not UTF-8 is refused with its line and column.
pub(crate) fn read_text_line(
    input: &mut dyn std::io::BufRead,
    bytes: &mut Vec<u8>,
    line: &mut String,
    n: u64,
) -> cfghub_model::error::Result<usize> {
    use cfghub_model::error::{Error, Place};
    bytes.clear();
    line.clear();
    let read = input.read_until(b'\n', bytes).map_err(|e| Error::input(format!("cannot read: {e}")))?;
    match std::str::from_utf8(bytes) {
        Ok(text) => line.push_str(text),
        Err(e) => {
            let column = e.valid_up_to() + 1;
            return Err(Error::input(format!(
                "column {column}: not UTF-8 text (byte 0x{:02x})",
                bytes[e.valid_up_to()]
            ))
            .at(Place::Line(n)));
        }
    }
    Ok(read)
}
