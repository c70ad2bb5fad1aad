//! Loading inputs into the model and saving the model, with format detection: the library
//! face of `cfghub convert`.

use std::io::BufRead;

use crate::dcfg_trace::{self, encode, paired};
use crate::format::{Format, ReadOptions, WriteOptions};
use crate::registry::{detect_input, detect_output};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::{write_output, Input};
use cfghub_model::ir::Profile;

/// A profile read from a file, with its format and what the reader noticed.
pub struct Loaded {
    /// The profile read.
    pub profile: Profile,
    /// The format it was read as, detected or named.
    pub format: &'static Format,
    /// Warnings and rule violations the reader reported.
    pub findings: Findings,
}

/// Opens `path` (`-` for standard input), detects its format unless `from` names one, and reads it.
pub fn load(path: &str, from: Option<&str>, options: &ReadOptions) -> Result<Loaded> {
    load_input(Input::open(path)?, from, options)
}

/// Reads an opened input (a file, or bytes in memory under a name), its format detected unless
/// `from` names one.
pub fn load_input(input: Input, from: Option<&str>, options: &ReadOptions) -> Result<Loaded> {
    let path = input.name.clone();
    let path = path.as_str();
    let format = detect_input(&input, from)?;
    if !format.can_read() {
        return Err(format.unsupported("read"));
    }
    let mut findings = Findings::default();
    let profile =
        format.read_source(&mut input.source(), options, &mut findings).map_err(|e| e.in_file(path))?;
    Ok(Loaded { profile, format, findings })
}

/// Reads a profile from any byte source in a known format (tests and embedding).
pub fn read_with(format: &Format, input: &mut dyn BufRead) -> Result<(Profile, Findings)> {
    let mut findings = Findings::default();
    let profile = format.read(input, &ReadOptions::default(), &mut findings)?;
    Ok((profile, findings))
}

/// Writes a profile to memory in a known format (tests and embedding).
pub fn write_to_vec(
    format: &Format,
    profile: &Profile,
    options: &WriteOptions,
) -> Result<(Vec<u8>, Findings)> {
    let mut out = Vec::new();
    let mut findings = Findings::default();
    format.write(profile, &mut out, options, &mut findings)?;
    Ok((out, findings))
}

/// Writes `profile` to `path` (`-` for standard output) in the format `to` or the one its name
/// asks for, atomically, refusing to overwrite any of `inputs`.
pub fn save(
    profile: &Profile,
    path: &str,
    to: Option<&str>,
    inputs: &[&str],
    options: &WriteOptions,
) -> Result<Findings> {
    let format = detect_output(path, to)?;
    if !format.can_write() {
        return Err(format.unsupported("write"));
    }
    let mut findings = Findings::default();
    if let Some(folder) = format.folder {
        let write = |dir: &std::path::Path, target: &std::path::Path| {
            (folder.write)(profile, dir, target, options, &mut findings).map_err(|e| e.in_file(path))
        };
        if (folder.adds_to)(std::path::Path::new(path), options) {
            cfghub_model::io::add_to_output_folder(path, inputs, write)?;
        } else {
            cfghub_model::io::write_output_folder(path, inputs, folder.holds, write)?;
        }
        return Ok(findings);
    }
    write_output(path, inputs, |out| {
        format.write(profile, out, options, &mut findings).map_err(|e| e.in_file(path))
    })?;
    Ok(findings)
}

/// Replays the DCFG-trace at `trace` (`-` for standard input) into `profile`, its paired DCFG
/// (`cfghub convert DCFG --trace TRACE`): the call stacks the trace walks and the exact
/// inclusive costs of calls. Where the trace's edge counts differ from the profile's, the
/// findings say so. `max_edges` bounds the edges the trace may declare.
pub fn replay_trace(profile: &mut Profile, trace: &str, max_edges: Option<u64>) -> Result<Findings> {
    let input = Input::open(trace)?;
    let replayer = cfghub_analysis::replay::Replayer::new(profile);
    let replays = paired::run(&mut input.reader(), profile, replayer, max_edges)
        .map_err(|e| e.in_file(trace))?
        .processes;
    let mut findings = Findings::default();
    cfghub_analysis::replay::apply(profile, &replays, &mut findings);
    Ok(findings)
}

/// Refuses an output name that does not name a DCFG-trace (`*.trace.json`, optionally `.bz2`
/// or `.gz`): what [`encode_trace`] writes.
pub fn check_trace_output(output: &str) -> Result<()> {
    let format = detect_output(output, None).unwrap_or(&dcfg_trace::FORMAT);
    if !std::ptr::eq(format, &dcfg_trace::FORMAT) {
        return Err(Error::usage(format!(
            "--trace-from writes a DCFG-trace, but {output} names a {} file",
            format.name()
        ))
        .with_hint("name the output *.trace.json (optionally .bz2 or .gz)"));
    }
    Ok(())
}

/// Encodes the edge sequences at `edges` (`-` for standard input; the text `cfghub trace
/// edges` prints: edge ids one per line, `# thread N` before each thread's) into a DCFG-trace
/// of the first process of `dcfg`, the DCFG read from `dcfg_path`, written atomically to
/// `output` with chunks of about `chunk_instrs` instructions (`cfghub convert DCFG
/// --trace-from EDGES -o OUT`).
pub fn encode_trace(
    dcfg: &Profile,
    dcfg_path: &str,
    edges: &str,
    output: &str,
    chunk_instrs: u64,
) -> Result<()> {
    check_trace_output(output)?;
    let process = dcfg
        .processes
        .first()
        .ok_or_else(|| Error::input("the DCFG has no process to pair the trace with").in_file(dcfg_path))?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut Input::open(edges)?.reader(), &mut text)
        .map_err(|e| Error::io(edges, e))?;
    let threads = encode::parse_edge_list(&text).map_err(|e| e.in_file(edges))?;
    let options = encode::EncodeOptions { chunk_instrs, ..encode::EncodeOptions::default() };
    write_output(output, &[dcfg_path, edges], |out| {
        encode::encode(dcfg, process.pid, &threads, &options, out).map_err(|e| e.in_file(edges))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::WriterReads;
    use crate::registry::{by_name, formats};

    /// What `format` writes of `profile`: its bytes or its refusal, and its warnings.
    fn written(
        format: &Format,
        profile: &Profile,
        findings: &mut Findings,
    ) -> (Result<Vec<u8>, String>, Vec<String>) {
        let mut out = Vec::new();
        let result = format.write(profile, &mut out, &WriteOptions::default(), findings);
        (
            result.map(|()| out).map_err(|e| e.to_string()),
            findings.warnings().map(|w| w.to_string()).collect(),
        )
    }

    #[test]
    fn a_model_prepared_for_its_writer_is_written_as_the_model_itself() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        // A Callgrind profile (stated inclusive costs), a DCFG of two processes (the call graph's
        // estimate; no cost rows) and CSI (blocks without addresses: a warning before the
        // estimate's).
        let inputs = [
            "callgrind/callgrind.out.recursion-loops",
            "dcfg/two-processes.dcfg.json",
            "csi/recursion-loops.debug_PT",
        ];
        let (mut estimated, mut without_edges) = (0, 0);
        for input in inputs {
            let path = fixtures.join(input);
            let loaded = load(path.to_str().unwrap(), None, &ReadOptions::default()).unwrap();
            for format in formats().iter().filter(|f| f.needs.reads != WriterReads::Model) {
                let whole = written(format, &loaded.profile, &mut Findings::default());
                let mut model = loaded.profile.clone();
                let mut findings = Findings::default();
                format.prepare_to_write(&mut model, &mut findings);
                estimated += usize::from(model.processes.iter().all(|p| p.images.is_empty()));
                without_edges += usize::from(model.processes.iter().all(|p| p.edges.is_empty()));
                let prepared = written(format, &model, &mut findings);
                assert!(whole.0 == prepared.0, "{input} to {}: {:?}", format.name, prepared.0.err());
                assert_eq!(whole.1, prepared.1, "{input} to {}", format.name);
            }
        }
        let stack_writers = formats().iter().filter(|f| f.needs.reads == WriterReads::Stacks).count();
        assert!(stack_writers >= 5, "folded, SVG, pprof, speedscope and Firefox at least");
        assert_eq!(
            estimated,
            inputs.len() * stack_writers,
            "every model gave its place to the estimated stacks"
        );
        assert_eq!(without_edges, estimated + 2, "the Callgrind profile's edges went for DCPI and dcpicat");
    }

    #[test]
    fn a_model_with_stacks_or_no_blocks_is_left_as_it_is() {
        let mut profile = Profile::default();
        cfghub_analysis::stacks::estimate_in_place(&mut profile, &mut Findings::default());
        assert_eq!(profile.processes.len(), 0);
        let folded = by_name("folded").unwrap();
        let (mut stacks, _) = read_with(folded, &mut &b"main;work 3\nmain 1\n"[..]).unwrap();
        let before = stacks.clone();
        let mut findings = Findings::default();
        folded.prepare_to_write(&mut stacks, &mut findings);
        assert!(stacks == before && findings.warnings().count() == 0);
    }
}
