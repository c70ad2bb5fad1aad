//! One law for every reader x writer pair: an output holds the total of every event its
//! source holds, or its writer says, in one warning, how much of which event it leaves out;
//! and a function's self cost in an output that names functions is its self cost in the
//! source.
//!
//! The inputs are every fixture the project keeps beside its expected outputs
//! (`fixtures/<format>/<input>` with `<input>.expected/`), every perf.data recording of
//! `fixtures/perf-data` (read without its binary) and the real files of `../shared/fixtures`
//! a reader of cfghub reads (`perf script` text among them); the writers are every format of
//! `converters::ALL` that writes, so a format added later joins by itself. Each output is
//! judged by what reads it:
//! - cfghub's own reader of the format, when it has one: the output read back, its totals
//!   ([`cfghub::analysis::totals::event_totals`]) and its functions' self costs compared with
//!   the source's;
//! - an SVG flame graph by its root frame (`all`), as inferno drew it; speedscope by the
//!   weights of its profiles, as speedscope reads them;
//! - DOT and GraphML draw the graph's blocks and edges with their counts, not the events'
//!   totals: listed as carrying no event.
//!
//! The real clients that read these outputs (callgrind_annotate, go tool pprof, inferno,
//! Graphviz) check the same outputs in `tests/corpus/clients.rs` and `tests/real_clients/`.
//! The matrix of pairs is printed (`--nocapture`).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use cfghub::analysis::names::{self, SymbolIndex};
use cfghub::analysis::totals::event_totals;
use cfghub::format::{Format, ReadOptions, WriteOptions};
use cfghub::ir::Profile;
use cfghub::registry::ALL;

use crate::common;

/// Whether an expected folder holds what cfghub must make of its input alone (`info.txt`,
/// `to-<format>`, ...): not only the outputs of other programs (`callgrind_annotate.txt`, a
/// generator's `model.json`), and no `args` (inputs whose outputs are made with a binary
/// named by `--symbols`, which this test does not name).
fn has_golden_outputs(expected: &std::path::Path) -> bool {
    let names: Vec<String> = std::fs::read_dir(expected)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    !names.iter().any(|n| n == "args")
        && names.iter().any(|n| !["callgrind_annotate.txt", "model.json"].contains(&n.as_str()))
}

/// Inputs: the project's fixtures that have expected outputs, and the shared real files, each
/// with the format to read it as when detection alone does not say (as `clients.rs` reads them).
fn inputs() -> Vec<(PathBuf, Option<&'static str>)> {
    let mut out = Vec::new();
    let root = common::fixture("");
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    for dir in dirs {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort();
        for expected in names {
            let name = expected.file_name().unwrap().to_string_lossy().into_owned();
            if let (Some(input), true) = (name.strip_suffix(".expected"), expected.is_dir()) {
                if has_golden_outputs(&expected) {
                    out.push((dir.join(input), None));
                }
            }
        }
    }
    // perf.data recordings, every event of each, read without their binaries as a user
    // without them converts them (a recording's golden outputs may name one). Not the
    // `--call-graph dwarf` one: its unwound stacks name code by its inline chain, as `perf
    // script` does (a sample in `operand` inlined into `arith` is `operand`'s), where outputs
    // by address name the function whose code it is (`arith`'s), as `perf report` and
    // Valgrind do; `real_clients::perf_data` holds its stacks to perf's own.
    let mut recorded: Vec<PathBuf> = std::fs::read_dir(root.join("perf-data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "data") && !out.iter().any(|(i, _)| i == p))
        .filter(|p| !p.to_string_lossy().ends_with("-dwarf.perf.data"))
        .collect();
    recorded.sort();
    out.extend(recorded.into_iter().map(|p| (p, None)));
    if let Some(shared) = common::shared_fixture("") {
        for (dir, from) in [
            ("callgrind", None),
            ("dcfg", None),
            ("dcpi", Some("dcpicat")),
            ("dtrace", Some("dtrace")),
            ("folded", Some("folded")),
            ("perf", Some("perf")),
        ] {
            let Ok(entries) = std::fs::read_dir(shared.join(dir)) else { continue };
            let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
            files.sort();
            for f in files {
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                if name.ends_with(".dot") || name.ends_with(".orig") {
                    continue; // pictures and inputs of other tools' tests
                }
                // inferno's expected collapses of DTrace files are folded stacks.
                let from = if name.contains("__results__") { Some("folded") } else { from };
                out.push((f, from));
            }
        }
    }
    out
}

/// Recursion levels (`fib'2`) are their function's.
fn base(name: &str) -> &str {
    names::recursion_base(name).unwrap_or(name)
}

/// A stack's leaf by name; an unsymbolized pprof location, named by its runtime address,
/// by the name the readers of costs give code no symbol covers (`IMAGE+0xOFFSET`), which is
/// what a writer made it of.
fn leaf_name(profile: &Profile, leaf: cfghub::ir::FrameId) -> String {
    let code = profile.frame_source(leaf).and_then(|s| s.address).and_then(|at| {
        let image = profile.processes.first()?.images.get(at.image? as usize)?;
        let offset = at.address.wrapping_sub(image.load_addr);
        Some(names::code_name(profile, image, &SymbolIndex::new(image), offset))
    });
    code.unwrap_or_else(|| profile.frames.get(leaf).to_string())
}

/// Self cost of every function by name, per event, as the model states it: a stack's values
/// are its leaf's; a cost row's are its function's (the symbol covering its address, else
/// the code's name); a model of blocks alone counts each routine's executed instructions.
/// Code no symbol names counts as one: perf and inferno name it by its image in stacks
/// (`[libc.so.6]`, `[unknown]`), DTrace and Valgrind by its address (`0x104d08831`), a model of
/// addresses `IMAGE+0xOFFSET` an address at a time, and one rebuilt from branch records by
/// placeholder functions (`0x8d0`, `0x8d0+0x19`): which of these an output gives depends on its
/// form, not on what it kept. `images`: the base names of the images of the two profiles.
fn self_costs(profile: &Profile, images: &HashSet<String>) -> BTreeMap<String, Vec<f64>> {
    let events = event_totals(profile).len();
    let hex = |h: &str| !h.is_empty() && h.bytes().all(|c| c.is_ascii_hexdigit());
    let unnamed = |name: &str| {
        let head = match name.rsplit_once("+0x") {
            Some((head, off)) if hex(off) => head,
            _ => name,
        };
        images.contains(head)
            || head.strip_prefix("0x").is_some_and(hex)
            || (name.starts_with('[') && name.ends_with(']'))
    };
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut add = |name: &str, values: &mut dyn Iterator<Item = f64>| {
        let name = if unnamed(name) { "(code without a symbol)".to_string() } else { base(name).to_string() };
        let slot = out.entry(name).or_insert_with(|| vec![0.0; events]);
        for (s, v) in slot.iter_mut().zip(values) {
            *s += v;
        }
    };
    for process in &profile.processes {
        if !process.stacks.is_empty() {
            for s in process.stacks.samples() {
                if let Some(leaf) = process.stacks.leaf(s.node) {
                    let places = |e: usize| process.stacks.decimals_of(e);
                    let values = s.values.iter().enumerate().map(|(e, &v)| cfghub::ir::to_f64(v, places(e)));
                    add(&leaf_name(profile, leaf), &mut values.collect::<Vec<_>>().into_iter());
                }
            }
        } else if process.images.iter().any(|i| !i.costs.is_empty()) {
            for image in &process.images {
                let index = SymbolIndex::new(image);
                for row in image.costs.iter() {
                    let name =
                        match (row.symbol.or_else(|| row.offset.and_then(|o| index.covering(o))), row.offset)
                        {
                            (Some(s), _) => image.symbols[s as usize].name.clone(),
                            (None, Some(o)) => names::code_name(profile, image, &index, o),
                            (None, None) => names::image_base_name(profile, image),
                        };
                    add(&name, &mut row.values.iter().map(|&v| v as f64));
                }
            }
        } else {
            // The DCFG's view: routines, each with the instructions its blocks executed.
            let graph = cfghub::analysis::callgraph::build(profile, process);
            for node in &graph.nodes {
                add(&node.name, &mut std::iter::once(node.self_instrs as f64));
            }
            for (i, image) in process.images.iter().enumerate() {
                let index = SymbolIndex::new(image);
                for (b, block) in image.blocks.iter().enumerate() {
                    let at = cfghub::ir::BlockRef { image: i as u32, block: b as u32 };
                    if graph.node_of(at).is_none() && block.executed_instrs() > 0 {
                        let name = if image.no_addresses {
                            names::image_base_name(profile, image)
                        } else {
                            names::code_name(profile, image, &index, block.offset)
                        };
                        add(&name, &mut std::iter::once(block.executed_instrs() as f64));
                    }
                }
            }
        }
    }
    out
}

/// Functions by their names without BOLT's suffix for local (static) functions, `name/N` or
/// `name/FILE/N`, which a BOLT profile read without its binary keeps.
fn without_bolt_local_suffixes(costs: BTreeMap<String, Vec<f64>>) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (name, values) in costs {
        let plain = match name.rsplit_once('/') {
            Some((head, n)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => {
                head.split('/').next().unwrap_or(head).to_string()
            }
            _ => name,
        };
        let slot = out.entry(plain).or_insert_with(|| vec![0.0; values.len()]);
        for (s, v) in slot.iter_mut().zip(values) {
            *s += v;
        }
    }
    out
}

/// What became of one pair.
enum Verdict {
    /// Totals (and self costs, where checked) equal the source's (`said`: or the writer said
    /// how much of an event it leaves out).
    Kept {
        functions: bool,
        said: bool,
    },
    /// The writer refused the profile (a format that cannot hold it, with its reason).
    Refused,
    /// The output carries no event totals (a picture of the graph).
    NoEvents,
    Failed(String),
}

/// Totals of an output a cfghub reader cannot read back, by event name.
fn client_totals(format: &str, bytes: &[u8], source: &[(String, f64)]) -> Option<Vec<(String, f64)>> {
    let text = String::from_utf8_lossy(bytes);
    match format {
        "svg" => {
            let at = text.find("<title>all (")?;
            let rect = &text[at..];
            let w = rect.find("fg:w=\"")? + 6;
            let mut width: f64 = rect[w..w + rect[w..].find('"')?].parse().ok()?;
            // The drawn event is named in the root frame's title: `all (1,234 Ir, 100%)`, or
            // `all (334,618 × 0.001 samples, 100%)` for fractional counts; a differential
            // graph draws its second column.
            let title = &rect[..rect.find("</title>")?];
            if let Some(at) = title.find('\u{d7}') {
                let unit: f64 = title[at + 2..].split_whitespace().next()?.parse().ok()?;
                width *= unit;
            }
            let names: Vec<&String> = source.iter().map(|s| &s.0).collect();
            let differential = names
                .iter()
                .map(|n| n.as_str())
                .eq(cfghub::folded_stacks::unnamed_column_names(2).iter().map(|n| n.as_str()));
            let event = if differential {
                names[1]
            } else {
                names.iter().copied().filter(|e| title.contains(e.as_str())).max_by_key(|e| e.len())?
            };
            Some(vec![(event.clone(), width)])
        }
        "speedscope" => {
            let doc: serde_json::Value = serde_json::from_slice(bytes).ok()?;
            let mut totals: Vec<(String, f64)> = Vec::new();
            for p in doc["profiles"].as_array()? {
                let name = p["name"].as_str().unwrap_or("");
                let event = source
                    .iter()
                    .map(|s| &s.0)
                    .filter(|e| name.contains(e.as_str()))
                    .max_by_key(|e| e.len())
                    .or(if source.len() == 1 { Some(&source[0].0) } else { None })?;
                let sum: f64 = p["weights"].as_array()?.iter().filter_map(|w| w.as_f64()).sum();
                match totals.iter_mut().find(|t| &t.0 == event) {
                    Some(t) => t.1 += sum,
                    None => totals.push((event.clone(), sum)),
                }
            }
            Some(totals)
        }
        _ => None,
    }
}

/// The same event under the names two formats give instructions executed.
fn same_event(a: &str, b: &str) -> bool {
    let instr = |e: &str| e == "Ir" || e == "instructions";
    a == b || (instr(a) && instr(b))
}

fn close(a: f64, b: f64) -> bool {
    // Fractional values (sampling weights) are written rounded by integer formats.
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Judges one output against its source.
fn judge(source: &Profile, format: &Format, bytes: &[u8], warnings: &[String]) -> Verdict {
    let source_totals = event_totals(source);
    let said = |event: &str, left: f64| {
        let part = format!("{} {event}", cfghub::analysis::totals::amount(left));
        warnings.iter().any(|w| w.contains("left out") && w.contains(&part))
    };
    // A format that holds none of the events' costs (a BOLT profile's branch counts) says so of
    // every event's whole total.
    if !source_totals.is_empty()
        && source_totals.iter().all(|(event, total)| *total == 0.0 || said(event, *total))
    {
        return Verdict::Kept { functions: false, said: true };
    }
    let (out_totals, out_profile) = if format.can_read() {
        // A DCPI file does not record how far apart its slots are: its writer says.
        let step = warnings
            .iter()
            .find_map(|w| w.split("--address-step ").nth(1)?.split_whitespace().next()?.parse().ok());
        let options = ReadOptions::default().with(cfghub::formats::dcpi::Options { address_step: step });
        match format.read(&mut &bytes[..], &options, &mut Default::default()) {
            Ok(p) => (event_totals(&p), Some(p)),
            Err(e) => return Verdict::Failed(format!("the output does not read back: {e}")),
        }
    } else {
        match client_totals(format.name(), bytes, &source_totals) {
            Some(t) => (t, None),
            None if matches!(format.name(), "dot" | "graphml") => return Verdict::NoEvents,
            None => return Verdict::Failed("no totals found in the output".into()),
        }
    };
    let mut problems = Vec::new();
    let mut left_out = false;
    for (event, total) in &source_totals {
        let kept = out_totals.iter().find(|o| same_event(&o.0, event)).map_or(0.0, |o| o.1);
        if !close(kept, *total) {
            left_out = true;
            if !said(event, total - kept) {
                problems.push(format!("{event}: {kept} of {total}, not said"));
            }
        }
    }
    // Attribution: a function's self cost, where the output names functions and keeps the
    // event whole.
    let mut functions = false;
    // (Outputs that name code by address only, as DCPI does, are not compared by name.)
    let names_functions = |p: &Profile| {
        p.processes.iter().any(|p| !p.stacks.is_empty() || p.images.iter().any(|i| !i.symbols.is_empty()))
    };
    if let Some(out) = out_profile.filter(|o| problems.is_empty() && names_functions(o)) {
        let images = [source, &out]
            .iter()
            .flat_map(|p| {
                p.processes.iter().flat_map(|q| q.images.iter().map(|i| names::image_base_name(p, i)))
            })
            .collect();
        let (want, mut got) = (self_costs(source, &images), self_costs(&out, &images));
        if matches!(format.name(), "fdata" | "bolt-pa") {
            got = without_bolt_local_suffixes(got);
        }
        let out_events = event_totals(&out);
        for (e, (event, total)) in source_totals.iter().enumerate() {
            let Some(k) = out_events.iter().position(|o| same_event(&o.0, event)) else { continue };
            if !close(out_events[k].1, *total) || total.fract() != 0.0 {
                continue;
            }
            functions = true;
            for name in want.keys().chain(got.keys()) {
                let w = want.get(name).map_or(0.0, |v| v[e]);
                let g = got.get(name).map_or(0.0, |v| v[k]);
                if !close(w, g) {
                    problems.push(format!("{event} of {name}: {g}, source {w}"));
                    break;
                }
            }
        }
    }
    if problems.is_empty() {
        Verdict::Kept { functions, said: left_out }
    } else {
        Verdict::Failed(problems.join("; "))
    }
}

#[test]
fn every_reader_writer_pair_keeps_every_events_total_and_every_functions_self_cost() {
    let inputs = inputs();
    assert!(inputs.len() >= 15, "{} inputs", inputs.len());
    let writers: Vec<&Format> = ALL.iter().copied().filter(|f| f.can_write()).collect();
    // (reader, writer) -> (kept, of which self costs checked, of which a part said left out,
    // refused, no events, failed)
    let mut matrix: BTreeMap<(&str, &str), [usize; 6]> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut unread = Vec::new();
    for (input, from) in &inputs {
        let name = input.display().to_string();
        let loaded = match cfghub::convert::load(input.to_str().unwrap(), *from, &ReadOptions::default()) {
            Ok(l) => l,
            Err(e) => {
                unread.push(format!("{name}: {e}"));
                continue;
            }
        };
        for writer in &writers {
            let cell = matrix.entry((loaded.format.name(), writer.name())).or_default();
            let verdict =
                match cfghub::convert::write_to_vec(writer, &loaded.profile, &WriteOptions::default()) {
                    Err(_) => Verdict::Refused,
                    Ok((bytes, findings)) => {
                        // What is left out is said, as a warning or, for what the format cannot hold by its
                        // nature, as a note (`-v`).
                        let warnings: Vec<String> = findings
                            .items
                            .iter()
                            .filter(|f| f.severity != cfghub::error::Severity::Violation)
                            .map(|w| w.message.clone())
                            .collect();
                        judge(&loaded.profile, writer, &bytes, &warnings)
                    }
                };
            match verdict {
                Verdict::Kept { functions, said } => {
                    cell[0] += 1;
                    cell[1] += usize::from(functions);
                    cell[2] += usize::from(said);
                }
                Verdict::Refused => cell[3] += 1,
                Verdict::NoEvents => cell[4] += 1,
                Verdict::Failed(why) => {
                    cell[5] += 1;
                    failures.push(format!("{name} -> {}: {why}", writer.name()));
                }
            }
        }
    }
    println!(
        "reader -> writer: kept (self costs checked, part left out and said) / refused / no events / failed"
    );
    for ((reader, writer), [kept, functions, said, refused, none, failed]) in &matrix {
        println!(
            "  {reader:>10} -> {writer:<10} {kept:>3} ({functions:>2}, {said:>2}) {refused:>3} {none:>3} {failed:>3}"
        );
    }
    if !unread.is_empty() {
        println!("not read: \n  {}", unread.join("\n  "));
    }
    assert!(failures.is_empty(), "{} pair(s) lose or move cost:\n{}", failures.len(), failures.join("\n"));
}
