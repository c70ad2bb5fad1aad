//! Writing the model's stacks as a `.cpuprofile`: one call tree of every process's and
//! thread's call paths, and their samples one after another, each lasting its time.

use std::collections::BTreeSet;
use std::io::Write;

use crate::folded_stacks::stacks_for_writing;
use crate::format::WriteOptions;
use crate::v8_profile::{Weighing, Written};
use cfghub_model::error::{Findings, Result};
use cfghub_model::io::write_error;
use cfghub_model::ir::Profile;

/// Writes the profile's stacks (or, with a warning, those derived as for folded stacks): the
/// samples of every process and thread as the one thread a `.cpuprofile` holds, with a
/// note when there are several.
pub(crate) fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let (stacks, events) =
        stacks_for_writing(profile, options.event.as_deref(), findings, "V8 CPU profiles")?;
    let model = stacks.into_model();
    let mut weighing = Weighing::new(&model, &events, "cpuprofile");
    let mut written = Written::new(&model);
    let mut threads = BTreeSet::new();
    for (p, process) in model.processes.iter().enumerate() {
        weighing.add(&process.stacks, None, &mut written)?;
        threads.extend(process.stacks.samples().map(|s| (p, s.thread)));
    }
    if threads.len() > 1 {
        // A note: the format holds one thread by its nature (docs/formats/cpuprofile.md).
        let processes = threads.iter().map(|t| t.0).collect::<BTreeSet<_>>().len();
        findings.detail(
            None,
            format!(
                "cpuprofile: the samples of {} threads in {processes} process(es) written as one thread (a .cpuprofile holds one)",
                threads.len()
            ),
        );
    }
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    buf.extend_from_slice(b"{\"nodes\":[");
    written.push_nodes(&mut buf, false);
    buf.extend_from_slice(b"],\"startTime\":0,\"endTime\":");
    buf.extend_from_slice(itoa::Buffer::new().format(written.end_time()).as_bytes());
    buf.extend_from_slice(b",\"samples\":[");
    written.push_samples(&mut buf);
    buf.extend_from_slice(b"],\"timeDeltas\":[");
    written.push_deltas(&mut buf);
    buf.extend_from_slice(b"],\"cfghub\":");
    weighing.push_written_events(&model, &mut buf);
    buf.extend_from_slice(b"}\n");
    out.write_all(&buf).map_err(write_error("cpuprofile output"))?;
    weighing.warn(&model, findings);
    Ok(())
}
