//! Java Flight Recorder recordings against the JDK's own reader: `jfr print --json` prints
//! every CPU, native, allocation and lock event of the fixture (and of a recording this test
//! makes by compiling and running fixtures/jfr/Burn.java), the test adds up per method the
//! samples and bytes and nanoseconds of the events whose stack ends in it, and cfghub's self
//! values per function must be those, exactly, for every event.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{self, fixture};

/// The JFR event types cfghub reads, with its column for each and the field an event adds
/// (`None`: one).
const EVENTS: [(&str, &str, Option<&str>); 5] = [
    ("jdk.ExecutionSample", "cpu", None),
    ("jdk.NativeMethodSample", "native", None),
    ("jdk.ObjectAllocationSample", "allocation", Some("weight")),
    ("jdk.ObjectAllocationInNewTLAB", "tlab", Some("tlabSize")),
    ("jdk.JavaMonitorEnter", "lock", Some("duration")),
];

/// Nanoseconds of an ISO-8601 duration as `jfr print --json` writes one (`PT0.061224794S`,
/// `PT1M2.5S`).
fn nanoseconds(iso: &str) -> i128 {
    let mut rest = iso.strip_prefix("PT").unwrap_or_else(|| panic!("not a duration: {iso}"));
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let end = rest.find(|c: char| c.is_ascii_alphabetic()).unwrap();
        let (number, unit) = (&rest[..end], &rest[end..end + 1]);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        let mut nanos: i128 = whole.parse::<i128>().unwrap() * 1_000_000_000;
        if !fraction.is_empty() {
            nanos += format!("{fraction:0<9}")[..9].parse::<i128>().unwrap();
        }
        total += nanos
            * match unit {
                "H" => 3600,
                "M" => 60,
                "S" => 1,
                other => panic!("unit {other} in {iso}"),
            };
        rest = &rest[end + 1..];
    }
    total
}

/// Per column, the self value of each method as the JDK's `jfr` reads the recording: events
/// of the types above, by the method of their top frame (`package.Class.method`).
fn jdk_self_values(file: &Path) -> BTreeMap<&'static str, BTreeMap<String, i128>> {
    let types: Vec<&str> = EVENTS.iter().map(|e| e.0).collect();
    let o = Command::new("jfr")
        .args(["print", "--json", "--events", &types.join(",")])
        .arg(file)
        .output()
        .expect("jfr runs");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut values: BTreeMap<&str, BTreeMap<String, i128>> = BTreeMap::new();
    for event in json["recording"]["events"].as_array().unwrap() {
        let &(_, column, field) = EVENTS.iter().find(|e| e.0 == event["type"]).unwrap();
        let v = &event["values"];
        // An event whose stack trace the recording does not hold (`null`): cfghub keeps its
        // value under the frame `(no stack trace)`.
        let name = match v["stackTrace"]["frames"].as_array().and_then(|f| f.first()) {
            Some(top) => {
                let method = &top["method"];
                let class = method["type"]["name"].as_str().unwrap().replace('/', ".");
                format!("{class}.{}", method["name"].as_str().unwrap())
            }
            None => "(no stack trace)".to_string(),
        };
        let amount = match field {
            None => 1,
            Some("duration") => nanoseconds(v["duration"].as_str().unwrap()),
            Some(f) => i128::from(v[f].as_i64().unwrap()),
        };
        *values.entry(column).or_default().entry(name).or_default() += amount;
    }
    values
}

/// Per column, cfghub's self value of each function: its folded stacks of that event, by
/// their leaf.
fn cfghub_self_values(file: &Path) -> BTreeMap<&'static str, BTreeMap<String, i128>> {
    let mut values: BTreeMap<&str, BTreeMap<String, i128>> = BTreeMap::new();
    for &(_, column, _) in &EVENTS {
        let o =
            common::run(&["convert", file.to_str().unwrap(), "--to", "folded", "--event", column, "-o", "-"]);
        assert!(o.status.success(), "{column}: {}", common::stderr(&o));
        for line in common::stdout(&o).lines().filter(|l| !l.starts_with('#')) {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            let leaf = stack.rsplit(';').next().unwrap().to_string();
            *values.entry(column).or_default().entry(leaf).or_default() += n.parse::<i128>().unwrap();
        }
    }
    values
}

fn assert_same_self_values(file: &Path) {
    let jdk = jdk_self_values(file);
    for &(jfr_type, column, _) in &EVENTS {
        assert!(jdk.get(column).is_some_and(|m| !m.is_empty()), "{}: no {jfr_type} event", file.display());
    }
    assert_eq!(cfghub_self_values(file), jdk, "{}", file.display());
}

#[test]
fn the_fixture_per_method_as_the_jdk_reads_it() {
    if !common::clients(&["jfr"]) {
        return;
    }
    assert_same_self_values(&fixture("jfr/burn.jfr"));
}

#[test]
fn two_chunks_count_twice() {
    if !common::clients(&["jfr"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let one = std::fs::read(fixture("jfr/burn.jfr")).unwrap();
    let two = dir.path().join("two.jfr");
    std::fs::write(&two, [one.as_slice(), one.as_slice()].concat()).unwrap();
    assert_same_self_values(&two);
    let once = cfghub_self_values(&fixture("jfr/burn.jfr"));
    let twice = cfghub_self_values(&two);
    for (column, functions) in &once {
        for (f, v) in functions {
            assert_eq!(twice[column][f], 2 * v, "{column} {f}");
        }
    }
}

#[test]
fn a_recording_made_here_per_method_as_the_jdk_reads_it() {
    if !common::clients(&["javac", "java", "jfr"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new("javac").arg("-d").arg(dir.path()).arg(fixture("jfr/Burn.java")).output().unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let recording = dir.path().join("burn.jfr");
    let o = Command::new("java")
        .arg(format!(
            "-XX:StartFlightRecording=filename={},settings=profile,+jdk.ObjectAllocationInNewTLAB#enabled=true",
            recording.display()
        ))
        .args(["-cp", dir.path().to_str().unwrap(), "Burn", "1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_same_self_values(&recording);
}
