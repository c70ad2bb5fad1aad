//! The Firefox Profiler's processed format: the test fixtures of the profiler's own repository
//! (fixtures/firefox/upstream, versions 0, 7, 24, 49, 58, 68, 69 and 70; see fixtures/README.md)
//! read with every sample, each thread's weights summed as the profiler counts them; the
//! profiler's own upgrades of a profile to versions 69 and 70 read alike; its Gecko profile
//! (the profiler's input format) is refused by version.

use cfghub::error::Findings;
use serde_json::Value;

use crate::common::{self, fixture};

/// The file's JSON, gunzipped when it is compressed.
fn json(name: &str) -> Value {
    let bytes = std::fs::read(fixture(&format!("firefox/upstream/{name}"))).unwrap();
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out).unwrap();
        out
    } else {
        bytes
    };
    serde_json::from_slice(&text).unwrap()
}

/// The samples of every thread that have a stack, by the file itself: its weights, or 1 each.
fn samples_with_stacks(v: &Value) -> f64 {
    let mut total = 0.0;
    for t in v["threads"].as_array().unwrap() {
        let stacks = t["samples"]["stack"].as_array().unwrap();
        let weights = t["samples"]["weight"].as_array();
        for (i, s) in stacks.iter().enumerate() {
            if !s.is_null() {
                total += weights.and_then(|w| w[i].as_f64()).unwrap_or(1.0);
            }
        }
    }
    total
}

fn read(name: &str) -> cfghub::Profile {
    let path = fixture(&format!("firefox/upstream/{name}"));
    let input = cfghub::io::Input::open(path.to_str().unwrap()).unwrap();
    let mut findings = Findings::default();
    cfghub::formats::firefox::FORMAT
        .read_source(&mut input.source(), &Default::default(), &mut findings)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_version_in_the_profilers_fixtures_reads_with_all_its_samples() {
    for (name, version) in [
        ("processed-1.json", 0),
        ("processed-2.json", 7),
        ("processed-3.json", 24),
        ("unsymbolicated.json", 49),
        ("argument-values.json.gz", 58),
        ("sourcemap-single.json", 68),
        ("processed-1.v69.json", 69),
        ("processed-1.v70.json", 70),
        ("perf-import.v70.json", 70),
    ] {
        let p = read(name);
        assert_eq!(p.meta.format_version, Some((version, 0)), "{name}");
        let read_total: f64 = p
            .processes
            .iter()
            .flat_map(|p| p.stacks.listed())
            .filter(|s| !s.frames.is_empty())
            .map(|s| s.values.iter().sum::<i128>() as f64)
            .sum();
        assert_eq!(read_total, samples_with_stacks(&json(name)), "{name}");
        assert!(read_total > 0.0, "{name}");
    }
}

/// Folded stacks of a fixture, as cfghub writes them.
fn folded(name: &str) -> String {
    let path = fixture(&format!("firefox/upstream/{name}"));
    let o =
        common::run(&["convert", "--from", "firefox", path.to_str().unwrap(), "--to", "folded", "-o", "-"]);
    assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// Samples per stack of folded stacks, and their sum.
fn total(folded: &str) -> u64 {
    folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum()
}

#[test]
fn the_profilers_own_upgrades_to_versions_69_and_70_read_alike_with_every_sample() {
    // processed-1.json is version 0; the profiler's upgrader took it to 69 (the library on
    // the resource) and to 70 (the library on the frame): both read the same stacks.
    let v69 = folded("processed-1.v69.json");
    let v70 = folded("processed-1.v70.json");
    assert_eq!(v69, v70);
    // Against the original, the profiler's upgraders changed two things that show: callers'
    // return addresses are one less (firefox+0xf84 becomes firefox+0xf83 where it calls),
    // and a JavaScript function's name lost the location it carried (`frobnicate
    // (chrome://blargh:34)` is `frobnicate`, its file and line apart). The samples are the same.
    let original = folded("processed-1.json");
    assert!(original.contains(";firefox+0xf84;frobnicate (chrome://blargh:34) 1"), "{original}");
    assert!(v70.contains(";firefox+0xf83;frobnicate 1"), "{v70}");
    assert_eq!(total(&v70), total(&original));
    assert_eq!(v70.lines().count(), original.lines().count());
}

#[test]
fn names_and_addresses_come_out_as_the_profiler_shows_them() {
    let names =
        |p: &cfghub::Profile| -> Vec<String> { p.frames.iter().map(|(_, n)| n.to_string()).collect() };
    // Version 7: a symbolized function, and an address in the firefox binary left as such.
    let v7 = names(&read("processed-2.json"));
    assert!(v7.iter().any(|n| n == "Startup::XRE_Main"), "{v7:?}");
    assert!(v7.iter().any(|n| n == "firefox+0xf84"), "{v7:?}");
    // Version 49, samply's layout on macOS: addresses in a.out and the system libraries.
    let v49 = read("unsymbolicated.json");
    assert_eq!(v49.processes.len(), 1);
    assert!(v49.processes[0].images.iter().any(|i| v49.image_name(i) == "/usr/helloworld/a.out"));
    assert!(names(&v49).iter().any(|n| n.starts_with("a.out+0x")));
    // Version 68: tables in `shared`, prefixes as offsets.
    assert!(names(&read("sourcemap-single.json")).iter().any(|n| n == "Ajs"));
}

#[test]
fn a_gecko_profile_is_refused_by_its_version() {
    let path = fixture("firefox/upstream/gecko-1.json");
    let o =
        common::run(&["convert", "--from", "firefox", path.to_str().unwrap(), "-o", "-", "--to", "folded"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("a Gecko profile (meta.version 3)") && err.contains("versions 0 to 70"), "{err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn a_profile_from_a_newer_profiler_is_refused_by_its_version() {
    let mut v = json("sourcemap-single.json");
    v["meta"]["preprocessedProfileVersion"] = 99.into();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("new.json");
    std::fs::write(&input, serde_json::to_vec(&v).unwrap()).unwrap();
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", "-", "--to", "folded"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("processed profile version 99") && err.contains("versions 0 to 70"), "{err}");
}
