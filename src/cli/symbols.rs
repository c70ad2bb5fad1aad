//! `--symbols PATH`, `--symbols-override`, `--no-inline`: the options every command that reads
//! a profile shares to name its addresses from ELF/DWARF (`cfghub_analysis::symbolize`).

use std::path::PathBuf;

use clap::Args;

use cfghub_analysis::symbolize::{self, ImageReport};
use cfghub_formats::convert::Loaded;
use cfghub_formats::format::ReadOptions;
use cfghub_model::error::Result;

/// Options that name a profile's addresses from ELF/DWARF.
#[derive(Args, Debug, Default, Clone)]
pub struct SymbolArgs {
    /// Name addresses from this binary, separate debug file, or folder of them (searched by
    /// file name and build id); repeatable. Then also the image's own file, the build-id
    /// folder and the .gnu_debuglink file are tried (see docs/symbols.md); `--symbols` without
    /// a path (after the input) tries only those.
    #[arg(long = "symbols", value_name = "PATH", num_args = 0..=1, default_missing_value = "")]
    pub symbols: Vec<String>,
    /// With --symbols: replace the names and source lines the profile has, not only the
    /// missing ones (`0x401190`, `prog+0x12`, `???`).
    #[arg(long)]
    pub symbols_override: bool,
    /// With --symbols: one frame per function, no inlined frames.
    #[arg(long)]
    pub no_inline: bool,
}

impl SymbolArgs {
    /// The files and folders named with `--symbols`: inputs, which no output may replace.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.symbols.iter().map(String::as_str).filter(|p| !p.is_empty())
    }

    /// Whether symbolization was asked for.
    pub fn wanted(&self) -> bool {
        !self.symbols.is_empty() || self.symbols_override
    }

    /// `options` with what readers take from `--symbols`: the binary a BOLT profile names
    /// functions of (the first `--symbols` path that is a file), the files perf.data's images
    /// are named from as they are read.
    pub fn reader_options(&self, options: ReadOptions) -> ReadOptions {
        let perf = cfghub_formats::perf::data::Options { symbol_paths: self.options().paths };
        options.with(cfghub_formats::bolt::Options { binary: self.binary(), image: None }).with(perf)
    }

    /// The first `--symbols` path that is a file: the binary, for formats that describe one.
    pub fn binary(&self) -> Option<PathBuf> {
        self.symbols.iter().map(PathBuf::from).find(|p| p.is_file())
    }

    pub fn options(&self) -> symbolize::Options {
        symbolize::Options {
            paths: self.symbols.iter().filter(|p| !p.is_empty()).map(PathBuf::from).collect(),
            override_names: self.symbols_override,
            inline: !self.no_inline,
            ..symbolize::Options::default()
        }
    }

    /// Names the addresses of a loaded profile when asked to, or when its format names them
    /// by default ([`cfghub_formats::format::Format::symbolize_by_default`]), printing the warnings;
    /// the report per image (empty when nothing was done).
    pub fn apply(&self, loaded: &mut Loaded, name: &str, quiet: bool) -> Result<Vec<ImageReport>> {
        let automatic = !self.wanted() && loaded.format.symbolize_by_default;
        if !self.wanted() && !automatic {
            return Ok(Vec::new());
        }
        let mut findings = cfghub_model::error::Findings::default();
        let kind = loaded.format.address_kind();
        let reports = match symbolize::symbolize(&mut loaded.profile, kind, &self.options(), &mut findings) {
            Ok(reports) => reports,
            // Unasked, finding no binary is no error: the frames stay addresses.
            Err(e) if automatic => {
                findings.warn(
                    None,
                    format!(
                        "{}; frames are left as IMAGE+0xOFFSET: name the binaries with --symbols",
                        e.message
                    ),
                );
                Vec::new()
            }
            Err(e) => return Err(e.in_file(name)),
        };
        super::check_findings(name, &findings, quiet)?;
        Ok(reports)
    }
}

/// `--infer`: block and edge counts from plain samples and the binary's code.
#[derive(Args, Debug, Default, Clone)]
pub struct InferArgs {
    /// Infer block and edge counts from sampled instruction addresses (no branch records
    /// needed), from the binary's machine code: the binary is found as --symbols finds it
    /// (docs/inference.md).
    #[arg(long)]
    pub infer: bool,
}

impl InferArgs {
    /// Infers the counts of a loaded profile when asked to, printing the warnings.
    pub fn apply(&self, symbols: &SymbolArgs, loaded: &mut Loaded, name: &str, quiet: bool) -> Result<()> {
        if !self.infer {
            return Ok(());
        }
        let mut findings = cfghub_model::error::Findings::default();
        let kind = loaded.format.address_kind();
        cfghub_analysis::inference::infer(&mut loaded.profile, kind, 0, &symbols.options(), &mut findings)
            .map_err(|e| e.in_file(name))?;
        super::check_findings(name, &findings, quiet)
    }
}
