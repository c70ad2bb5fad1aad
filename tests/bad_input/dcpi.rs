//! DCPI binary profiles and dcpicat dumps: bad input exits 2 with the byte offset (or line)
//! and what was expected, allocates nothing from a bad length, and leaves no output behind.

use crate::common;

/// Converts `content` and checks the failure mentions every `expected` text.
fn refused(name: &str, content: &[u8], expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join(name);
    std::fs::write(&input, content).unwrap();
    let output = dir.path().join("out.dcpicat.txt");
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{name}: {err}");
    for e in expected {
        assert!(err.contains(e), "{name}: expected {e:?} in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(!output.exists(), "{name}: a failed conversion left {}", output.display());
}

fn alpha() -> Vec<u8> {
    std::fs::read(common::fixture("dcpi/alpha-cycles.dcpi")).unwrap()
}

/// Where the body starts: right after the `samples` line.
fn body_start(bytes: &[u8]) -> usize {
    let at = bytes.windows(8).position(|w| w == b"\nsamples").unwrap() + 1;
    at + bytes[at..].iter().position(|&b| b == b'\n').unwrap() + 1
}

fn put_u32(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

// The alpha-cycles body: chunk 1 (1 count) at +0, chunk 2 (7 counts, offsets 0x6cbd0..0x6cbec)
// at +12, chunk 3 (3 counts) at +48, chunk 4 at +68, footer at +80.

#[test]
fn a_chunk_longer_than_the_file() {
    let mut b = alpha();
    let s = body_start(&b);
    put_u32(&mut b, s + 12 + 4, 0x4000_0000);
    refused(
        "long.dcpi",
        &b,
        &[&format!("byte {}", s + 12), "claims 1073741824 counts", "left before the footer"],
    );
}

#[test]
fn overlapping_chunks() {
    let mut b = alpha();
    let s = body_start(&b);
    put_u32(&mut b, s + 48, 0x6cbd8);
    refused("overlap.dcpi", &b, &[&format!("byte {}", s + 48), "overlaps the previous chunk"]);
}

#[test]
fn descending_chunks() {
    let mut b = alpha();
    let s = body_start(&b);
    put_u32(&mut b, s + 48, 0x100);
    refused("down.dcpi", &b, &[&format!("byte {}", s + 48), "increasing offset order"]);
}

#[test]
fn footer_mismatches() {
    let mut b = alpha();
    let s = body_start(&b);
    put_u32(&mut b, s + 84, 12);
    refused("sum.dcpi", &b, &[&format!("byte {}", s + 84), "footer says 12 samples", "sum to 4000000055"]);
    let mut b = alpha();
    put_u32(&mut b, s + 80, 3);
    refused(
        "offsets.dcpi",
        &b,
        &[&format!("byte {}", s + 80), "footer says 3 addresses", "the chunks have 9"],
    );
    let b = alpha();
    refused("cut.dcpi", &b[..b.len() - 3], &["byte", "before the footer"]);
}

fn replace(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let at = bytes.windows(from.len()).position(|w| w == from.as_bytes()).unwrap();
    let mut out = bytes[..at].to_vec();
    out.extend_from_slice(to.as_bytes());
    out.extend_from_slice(&bytes[at + from.len()..]);
    out
}

#[test]
fn missing_or_doubled_required_keys() {
    let b = replace(&alpha(), "cpuspeed 500\n", "");
    refused("missing.dcpi", &b, &["byte", "without the required line(s): cpuspeed"]);
    let b = replace(&alpha(), "period 63488\n", "period 63488\nevent imiss\n");
    let at = b.windows(12).position(|w| w == b"\nevent imiss").unwrap() + 1;
    refused("double.dcpi", &b, &[&format!("byte {at}"), "`event` appears twice"]);
}

#[test]
fn no_samples_line() {
    let b = alpha();
    let s = body_start(&b);
    let at = b.windows(8).position(|w| w == b"\nsamples").unwrap() + 1;
    let mut cut = b[..at].to_vec();
    cut.extend_from_slice(&b[s..]);
    refused("nosamples.dcpi", &cut, &[&format!("byte {at}"), "`samples`"]);
    refused("headeronly.dcpi", &b[..at], &["byte", "no `samples` line"]);
}

#[test]
fn bad_header_values() {
    refused(
        "tstart.dcpi",
        &replace(&alpha(), "tstart 120000000", "tstart 0xzz"),
        &["byte", "`tstart` expects a hexadecimal address"],
    );
    refused(
        "line.dcpi",
        &replace(&alpha(), "platform walnut", "platform"),
        &["byte", "expected a header line `KEY VALUE`"],
    );
}

#[test]
fn major_version_1_points_at_the_text_dump() {
    let b = replace(&alpha(), "pdb-0.07", "pdb-1.01");
    refused("v1.dcpi", &b, &["byte 8", "never documented", "dcpicat"]);
}

#[test]
fn bad_dcpicat_dumps() {
    let good = "name x\npath /bin/x\ntext_start 0x1000\ntext_size 0x100\nevent 5 cycles:100:10000\n0x1004 2\n0x1008 3\n";
    refused(
        "order.dcpicat.txt",
        good.replace("0x1004", "0x100c").as_bytes(),
        &["order.dcpicat.txt:7", "does not come after"],
    );
    refused(
        "cols.dcpicat.txt",
        good.replace("0x1008 3", "0x1008 3 4").as_bytes(),
        &[":7", "2 sample column(s)", "1 event"],
    );
    refused("below.dcpicat.txt", good.replace("0x1004", "0x0ff0").as_bytes(), &[":6", "before text_start"]);
    refused(
        "num.dcpicat.txt",
        good.replace("0x1008 3", "0x1008 x3").as_bytes(),
        &[":7", "expected a sample count"],
    );
    refused(
        "event.dcpicat.txt",
        good.replace("event 5 cycles", "event cycles").as_bytes(),
        &[":5", "TOTAL NAME:PERIOD:FRACTION"],
    );
}

#[test]
fn addresses_past_two_to_the_64_are_refused() {
    // tstart at the top of the address space: the chunks' offsets would wrap to low addresses.
    let b = alpha();
    let text = String::from_utf8_lossy(&b[..body_start(&b)]).into_owned();
    let tstart = text.lines().find(|l| l.starts_with("tstart")).unwrap().to_string();
    let mut bad = text.replacen(&tstart, "tstart ffffffffffffffff", 1).into_bytes();
    bad.extend_from_slice(&b[body_start(&b)..]);
    let s = body_start(&bad);
    refused("wrap.dcpi", &bad, &[&format!("byte {}", s + 68), "past the 64-bit address space"]);
    // A slot step that carries a chunk past 2^64 on its own.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("step.dcpi");
    std::fs::write(&input, alpha()).unwrap();
    let step = (1u64 << 62).to_string();
    let o = common::run(&[
        "convert",
        "--address-step",
        &step,
        input.to_str().unwrap(),
        "-o",
        "-",
        "--to",
        "dcpicat",
    ]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("reach past 2^64") && err.contains("byte "), "{err}");
}
