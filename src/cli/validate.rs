//! `cfghub validate FILE`: every rule of the format, each violation with its location.

use clap::Args;

use crate::convert::load;
use crate::error::Result;
use crate::registry::ReadOptions;

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Input file, or - for standard input.
    pub input: String,
    /// Input format; detected from content and name when absent.
    #[arg(long)]
    pub from: Option<String>,
    /// DCPI: bytes between consecutive sample slots (default 4, as on Alpha).
    #[arg(long, value_name = "BYTES")]
    pub address_step: Option<u64>,
}

/// Exit 0 when valid (warnings allowed), 1 on violations; unreadable input is an error (2).
pub fn run(args: ValidateArgs) -> Result<i32> {
    let loaded = load(
        &args.input,
        args.from.as_deref(),
        &ReadOptions { dcpi_address_step: args.address_step, ..ReadOptions::default() },
    )?;
    let mut findings = loaded.findings;
    findings.extend(crate::analysis::validate::check(&loaded.profile));
    for f in &findings.items {
        println!("{}: {f}", args.input);
    }
    let violations = findings.violations().count();
    let warnings = findings.warnings().count();
    println!(
        "{}: {} ({} violation(s), {} warning(s))",
        args.input,
        if violations == 0 { "valid" } else { "INVALID" },
        violations,
        warnings
    );
    Ok(if violations == 0 { 0 } else { 1 })
}
