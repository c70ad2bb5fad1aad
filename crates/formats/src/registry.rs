//! The formats cfghub speaks, and how one is chosen for a file.
//!
//! [`ALL`] lists every [`Format`] in the order content sniffing tries them (most distinctive
//! first). The registry picks a format from the content first, the file name second;
//! `--from`/`--to` on the command line always win.

use cfghub_model::error::{Error, Result};
use cfghub_model::io::{strip_compression_suffix, Input};

use crate::format::Format;
use crate::{
    bolt, callgrind, chrome_trace, cpuprofile, csi, dcfg, dcfg_trace, dcpi, dot, dtrace, firefox, folded,
    graphml, jfr, llvm_sample, perf, pprof, speedscope, svg, tables,
};

/// Every format cfghub knows.
pub static ALL: &[&Format] = &[
    &dcfg::FORMAT,
    &jfr::FORMAT,
    &dcfg_trace::FORMAT,
    &callgrind::FORMAT,
    &csi::FORMAT,
    &dcpi::FORMAT,
    &dcpi::cat::FORMAT,
    &dot::FORMAT,
    &graphml::FORMAT,
    &dtrace::FORMAT,
    &firefox::FORMAT,
    &perf::FORMAT,
    &perf::data::FORMAT,
    &pprof::FORMAT,
    &speedscope::FORMAT,
    &chrome_trace::FORMAT,
    &cpuprofile::FORMAT,
    &bolt::FORMAT,
    &bolt::PREAGGREGATED,
    &llvm_sample::FORMAT,
    &llvm_sample::UNSYMBOLIZED,
    &folded::FORMAT,
    &svg::FORMAT,
    &tables::FORMAT,
];

/// Every format, in the order content sniffing tries them.
pub fn formats() -> &'static [&'static Format] {
    ALL
}

/// Other names users know formats by: the tools that write or show them.
pub const ALIASES: &[(&str, &str)] = &[
    ("flamegraph", "svg"),
    ("valgrind", "callgrind"),
    ("kcachegrind", "callgrind"),
    ("perf-script", "perf"),
    ("perf.data", "perf-data"),
    ("bolt", "fdata"),
    ("autofdo", "llvm-sample"),
    ("parquet", "tables"),
    ("graphviz", "dot"),
    ("v8", "cpuprofile"),
    ("trace-event", "chrome-trace"),
    ("flight-recorder", "jfr"),
];

/// The format called `name`, or by one of its [`ALIASES`].
pub fn by_name(name: &str) -> Result<&'static Format> {
    let name = ALIASES.iter().find(|(alias, _)| *alias == name).map_or(name, |(_, format)| format);
    formats().iter().copied().find(|f| f.name() == name).ok_or_else(|| {
        let names: Vec<&str> = formats().iter().map(|f| f.name()).collect();
        let error = Error::usage(format!("unknown format '{name}'"));
        match names.iter().chain(ALIASES.iter().map(|(a, _)| a)).find(|n| close(n, name)) {
            Some(near) => {
                error.with_hint(format!("did you mean '{near}'? known formats: {}", names.join(", ")))
            }
            None => error.with_hint(format!("known formats: {}", names.join(", "))),
        }
    })
}

/// Whether two names are one typing slip apart, or one begins the other.
fn close(a: &str, b: &str) -> bool {
    let begins = a.len().min(b.len()) >= 3 && (a.starts_with(b) || b.starts_with(a));
    begins || cfghub_analysis::names::typing_distance(a, b) <= 1
}

/// The format of an opened input: `forced` when given, else by content, else by file name.
pub fn detect_input(input: &Input, forced: Option<&str>) -> Result<&'static Format> {
    if let Some(name) = forced {
        return by_name(name);
    }
    if let Some(dir) = &input.folder {
        return formats()
            .iter()
            .copied()
            .find(|f| f.can_read() && f.folder.is_some_and(|folder| (folder.holds)(dir)))
            .ok_or_else(|| {
                if let Some(f) = by_file_name(&input.name).filter(|f| !f.can_read() && f.hint.is_some()) {
                    return f.unsupported("read").in_file(&input.name);
                }
                Error::usage("this folder holds no profile cfghub can read (no blocks.parquet)")
                    .in_file(&input.name)
                    .with_hint("name a folder of tables written by `cfghub convert ... -o NAME.tables/`")
            });
    }
    if let Some(f) = formats().iter().copied().find(|f| f.can_read() && f.sniff(&input.head)) {
        return Ok(f);
    }
    if let Some(f) = by_file_name(&input.name).filter(|f| f.can_read()) {
        return Ok(f);
    }
    if let Some(what) = unread_kind(&input.head) {
        return Err(Error::unsupported(format!("this is {what}, which cfghub does not read"))
            .in_file(&input.name)
            .with_hint("`cfghub formats` lists what cfghub reads"));
    }
    Err(Error::usage("cannot tell the format of this input from its content or its name")
        .in_file(&input.name)
        .with_hint("name it with --from FORMAT (see `cfghub formats`)"))
}

/// What an input no format reads is, when its first bytes tell it: profiles of the tools
/// around the ones cfghub reads, so that the refusal names what is not read.
fn unread_kind(head: &[u8]) -> Option<&'static str> {
    let text = String::from_utf8_lossy(&head[..head.len().min(4096)]);
    let t = text.trim_start();
    let json_keys =
        |keys: &[&str]| t.starts_with('{') && keys.iter().all(|k| t.contains(&format!("\"{k}\"")));
    if head.starts_with(b"PK\x03\x04") {
        Some("a zip archive (unpack it, then read the profile inside)")
    } else if t.starts_with("v8-version,") || t.starts_with("shared-library,") {
        Some("V8's tick log (`node --prof`; `node --prof-process` summarises it)")
    } else if json_keys(&["code", "ticks"]) || json_keys(&["functions", "ticks"]) {
        Some("V8's preprocessed tick log (`node --prof-process --preprocess`)")
    } else if json_keys(&["meta", "threads"]) && t.contains("\"processes\"") {
        Some("a Firefox Profiler profile in Gecko's own form (load it in the Firefox Profiler and save it again to get the processed form cfghub reads)")
    } else {
        None
    }
}

/// The format an output file name asks for: `forced` when given, else by file name.
pub fn detect_output(path: &str, forced: Option<&str>) -> Result<&'static Format> {
    if let Some(name) = forced {
        return by_name(name);
    }
    let existing = std::path::Path::new(path);
    if existing.is_dir() {
        if let Some(f) =
            formats().iter().copied().find(|f| f.folder.is_some_and(|folder| (folder.holds)(existing)))
        {
            return Ok(f);
        }
    }
    if let Some(f) = by_file_name(path).filter(|f| !f.can_write() && f.hint.is_some()) {
        return Err(f.unsupported("write"));
    }
    by_file_name(path).filter(|f| f.can_write()).ok_or_else(|| {
        Error::usage(format!("cannot tell the output format from the name {path}"))
            .with_hint("name it with --to FORMAT (see `cfghub formats`), or use a known extension")
    })
}

/// The format whose extensions match a path's file name (compression suffix ignored).
pub(crate) fn by_file_name(path: &str) -> Option<&'static Format> {
    let base = std::path::Path::new(path).file_name()?.to_str()?;
    let base = strip_compression_suffix(base);
    formats().iter().copied().find(|f| f.matches_file_name(base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_of_tools_cfghub_does_not_read_are_named_in_the_refusal() {
        let refusal = |head: &[u8]| {
            let input = Input::from_reader("x", Box::new(std::io::Cursor::new(head.to_vec())), None).unwrap();
            detect_input(&input, None).unwrap_err().to_string()
        };
        assert!(refusal(b"v8-version,10,2,154,26,0,0\nshared-library,\"/usr/bin/node\"").contains("tick log"));
        assert!(refusal(b"PK\x03\x04\x14\x00").contains("zip archive"));
        assert!(refusal(b"{\"code\":[],\"functions\":[],\"ticks\":[]}").contains("preprocessed tick log"));
        assert!(refusal(b"hello").contains("cannot tell the format"));
    }
}
