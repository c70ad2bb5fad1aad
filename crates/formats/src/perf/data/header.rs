//! The header features of a perf.data file (`perf report --header-only` prints them): the
//! machine, the command line, and the build id of every file samples fell in.

use std::collections::HashMap;

use linux_perf_data::{Feature, PerfFile};

use super::layout::Order;

/// `misc` bit of a build-id entry: byte 20 of the id field holds the id's length.
const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

/// What the header features say that the model keeps.
#[derive(Default)]
pub struct Features {
    /// `(key, value)` in the order `perf report --header-only` prints them.
    pub headers: Vec<(String, String)>,
    /// The perf version that recorded the file (`perf 6.1.27`).
    pub creator: Option<String>,
    /// The command line of `perf record`.
    pub command: Option<String>,
    /// Build ids by recorded path (the first entry of a path).
    pub build_ids: HashMap<String, Vec<u8>>,
}

/// Reads the features the model keeps.
pub fn read(file: &PerfFile, order: Order) -> Features {
    let mut rec = Features::default();
    let mut put = |key: &str, value: Option<String>| {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            rec.headers.push((key.to_string(), v));
        }
    };
    put("hostname", file.hostname().ok().flatten().map(str::to_string));
    put("os release", file.os_release().ok().flatten().map(str::to_string));
    put("arch", file.arch().ok().flatten().map(str::to_string));
    put("cpu", file.cpu_desc().ok().flatten().map(str::to_string));
    put("cpuid", file.cpu_id().ok().flatten().map(str::to_string));
    put(
        "nrcpus",
        file.nr_cpus()
            .ok()
            .flatten()
            .map(|n| format!("{} online, {} available", n.nr_cpus_online, n.nr_cpus_available)),
    );
    put("total memory", file.total_mem().ok().flatten().map(|kb| format!("{kb} kB")));
    if let Ok(Some(v)) = file.perf_version() {
        rec.creator = Some(format!("perf {v}"));
    }
    if let Ok(Some(args)) = file.cmdline() {
        rec.command = Some(args.join(" "));
    }
    if let Some(mut table) = file.feature_section_data(Feature::BUILD_ID) {
        // Entries: `{u32 type, u16 misc, u16 size}`, pid, 24 bytes of id, the path.
        while table.len() >= 8 {
            let size = usize::from(order.u16(&table[6..]));
            if size < 8 || size > table.len() {
                break;
            }
            let misc = order.u16(&table[4..]);
            if let Some((path, id)) = build_id_entry(misc, &table[8..size], order) {
                rec.build_ids.entry(path).or_insert(id);
            }
            table = &table[size..];
        }
    }
    rec
}

/// The path and build id of one build-id entry's body (`pid`, 24 bytes of id, the path):
/// the id's length is in its byte 20 when `misc` says so, else trailing zero words are not
/// part of it (older perf).
pub(crate) fn build_id_entry(misc: u16, body: &[u8], _order: Order) -> Option<(String, Vec<u8>)> {
    let id = body.get(4..28)?;
    let path = &body[28..];
    let path = &path[..memchr::memchr(0, path).unwrap_or(path.len())];
    let len = if misc & MISC_BUILD_ID_SIZE != 0 {
        usize::from(id[20]).min(20)
    } else {
        let mut n = 20;
        while n >= 4 && id[n - 4..n].iter().all(|&b| b == 0) {
            n -= 4;
        }
        n
    };
    (len > 0).then(|| (String::from_utf8_lossy(path).into_owned(), id[..len].to_vec()))
}
