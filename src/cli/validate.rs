//! `cfghub validate FILE`: every rule of the input's own format, each violation with its
//! location in the input's terms (line, byte offset or JSON path).

use clap::Args;

use super::convert::ReadArgs;
use cfghub_formats::convert::load;
use cfghub_model::error::Result;

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Input file, or - for standard input.
    pub input: String,
    /// Input format; detected from content and name when absent.
    #[arg(long)]
    pub from: Option<String>,
    #[command(flatten)]
    pub read: ReadArgs,
    /// Print the result as one JSON object (input, format, valid, counts, and each finding
    /// with its severity, place and message) for scripts and CI.
    #[arg(long)]
    pub json: bool,
}

/// Exit 0 when valid (warnings allowed), 1 on violations; unreadable input is an error (2).
pub fn run(args: ValidateArgs) -> Result<i32> {
    let loaded = load(&args.input, args.from.as_deref(), &args.read.options())?;
    let mut findings = loaded.findings;
    // Each input by its own format's rules: a Callgrind profile records neither returns nor
    // every fall-through, so a DCFG's flow conservation is not asked of it. The reader names
    // some rule breaks (a repeated id) as the checks do: list each once.
    let named: std::collections::HashSet<String> = findings.items.iter().map(|f| f.to_string()).collect();
    for f in loaded.format.validate(&loaded.profile).items {
        if !named.contains(&f.to_string()) {
            findings.items.push(f);
        }
    }
    let violations = findings.violations().count();
    let warnings = findings.warnings().count();
    if args.json {
        let listed: Vec<serde_json::Value> = findings.items.iter().map(finding_json).collect();
        let result = serde_json::json!({
            "input": args.input,
            "format": loaded.format.name(),
            "valid": violations == 0,
            "violations": violations,
            "warnings": warnings,
            "findings": listed,
        });
        super::print_out(&format!("{result:#}\n"))?;
        return Ok(if violations == 0 { 0 } else { 1 });
    }
    let mut out = String::new();
    for f in &findings.items {
        out += &format!("{}: {f}\n", args.input);
    }
    out += &format!(
        "{}: {} ({} violation(s), {} warning(s))\n",
        args.input,
        if violations == 0 { "valid" } else { "INVALID" },
        violations,
        warnings
    );
    super::print_out(&out)?;
    Ok(if violations == 0 { 0 } else { 1 })
}

/// A finding as JSON: `{"severity": "violation", "place": {"line": 3}, "message": "..."}`
/// (`place` is `null` for the profile as a whole, else one of `line`, `byte`, `path`).
fn finding_json(f: &cfghub_model::error::Finding) -> serde_json::Value {
    use cfghub_model::error::{Place, Severity};
    let severity = match f.severity {
        Severity::Detail => "note",
        Severity::Warning => "warning",
        Severity::Violation => "violation",
    };
    let place = match &f.place {
        None => serde_json::Value::Null,
        Some(Place::Line(n)) => serde_json::json!({ "line": n }),
        Some(Place::Byte(n)) => serde_json::json!({ "byte": n }),
        Some(Place::Path(p)) => serde_json::json!({ "path": p }),
    };
    serde_json::json!({ "severity": severity, "place": place, "message": f.message })
}
