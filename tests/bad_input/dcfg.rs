//! DCFG: bad input exits 2 with a message that says where (the JSON path) and what, and leaves
//! no output file behind.

use crate::common;
use std::path::Path;

/// Converts `content` (written to a file named `name`) and checks the failure.
fn refused(name: &str, content: &[u8], expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join(name);
    std::fs::write(&input, content).unwrap();
    let output = dir.path().join("out.dcfg.json");
    let o =
        common::run(&["convert", input.to_str().unwrap(), "--from", "dcfg", "-o", output.to_str().unwrap()]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{name}: {err}");
    for e in expected {
        assert!(err.contains(e), "{name}: expected {e:?} in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(!output.exists(), "{name}: a failed conversion left {}", output.display());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "only the input may remain: {leftovers:?}");
    assert_eq!(std::fs::read(&input).unwrap(), content, "the input was changed");
}

fn hello() -> String {
    std::fs::read_to_string(common::fixture("dcfg/hello-world.dcfg.json")).unwrap()
}

#[test]
fn truncated_json() {
    let text = hello();
    refused(
        "cut.dcfg.json",
        &text.as_bytes()[..text.len() / 2],
        &["PROCESSES[0].IMAGES[0]", "ends too early"],
    );
}

/// A cost row of the extension table naming a symbol the image does not have.
#[test]
fn a_cost_of_a_symbol_the_image_lacks() {
    let text = hello();
    let at = text.find("\"BASIC_BLOCKS\"").unwrap();
    let costs = "\"CFGHUB_COSTS\": [[\"ADDR_OFFSET\", \"VALUES\", \"SYMBOL\"], [\"0x536\", [1], 99]], ";
    let text = format!("{}{costs}{}", &text[..at], &text[at..]);
    refused(
        "symbol.dcfg.json",
        text.as_bytes(),
        &["PROCESSES[0].IMAGES[0].IMAGE_DATA.CFGHUB_COSTS row 1", "SYMBOL 99 is not a row of the image's"],
    );
}

#[test]
fn wrong_type_in_a_row() {
    let text = hello().replace("[ 7, \"0x536\", 10, 2, 5, 3 ]", "[ 7, \"0x536\", \"ten\", 2, 5, 3 ]");
    refused(
        "type.dcfg.json",
        text.as_bytes(),
        &["PROCESSES[0].IMAGES[0].BASIC_BLOCKS row 4 column SIZE", "\"ten\""],
    );
}

/// Sizes, instruction counts and last-instruction offsets of blocks and source ranges are
/// held in 32 bits, as Pin's DCFG interface holds them: a larger one is named with its place.
#[test]
fn block_sizes_past_32_bits() {
    let big = "4294967296";
    for (row, column) in [
        (format!("[ 7, \"0x536\", {big}, 2, 5, 3 ]"), "SIZE"),
        (format!("[ 7, \"0x536\", 10, {big}, 5, 3 ]"), "NUM_INSTRS"),
        (format!("[ 7, \"0x536\", 10, 2, {big}, 3 ]"), "LAST_INSTR_OFFSET"),
    ] {
        let text = hello().replace("[ 7, \"0x536\", 10, 2, 5, 3 ]", &row);
        refused(
            "big.dcfg.json",
            text.as_bytes(),
            &[
                "PROCESSES[0].IMAGES[0].BASIC_BLOCKS row 4",
                &format!("{column} {big} is too large"),
                "4294967295",
            ],
        );
    }
    let text = hello().replace("[ 4, 3, \"0x52d\", 9, 3 ]", &format!("[ 4, 3, \"0x52d\", {big}, 3 ]"));
    refused(
        "big.dcfg.json",
        text.as_bytes(),
        &["PROCESSES[0].IMAGES[0].SOURCE_DATA row 1", &format!("SIZE {big} is too large")],
    );
    // The largest that fits reads.
    let text = hello().replace("[ 7, \"0x536\", 10, 2, 5, 3 ]", "[ 7, \"0x536\", 4294967295, 2, 5, 3 ]");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("fits.dcfg.json");
    std::fs::write(&input, text).unwrap();
    let o = common::run(&["info", input.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
}

#[test]
fn edge_naming_an_unknown_node() {
    let text = hello().replace("[ 9, 8, 9, 18, [ 1 ] ]", "[ 9, 8, 99, 18, [ 1 ] ]");
    refused("node.dcfg.json", text.as_bytes(), &["PROCESSES[0].EDGES row 9", "TARGET_NODE_ID 99"]);
}

#[test]
fn table_without_its_header_row() {
    let text = hello().replace("[ [ \"NAME\", \"ADDR_OFFSET\", \"SIZE\" ], [ \"puts\"", "[ [ \"puts\"");
    refused("header.dcfg.json", text.as_bytes(), &["PROCESSES[0].IMAGES[1].SYMBOLS", "no header row"]);
}

#[test]
fn array_nested_100000_deep() {
    let deep =
        |inner: &str| inner.replace("DEEP", &format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)));
    // Where a table is expected: the first row must be a header.
    let text = deep(r#"{"MAJOR_VERSION":1,"PROCESSES":DEEP}"#);
    refused("deep1.dcfg.json", text.as_bytes(), &["PROCESSES header row", "no header row"]);
    // Inside a value the reader skips: the nesting limit stops it, no stack overflow.
    let text = deep(r#"{"PROCESSES":[["PROCESS_ID","PROCESS_DATA"],[1,{"EXTRA":DEEP}]]}"#);
    refused("deep2.dcfg.json", text.as_bytes(), &["PROCESSES[0]", "recursion limit"]);
}

#[test]
fn bz2_that_is_not_bzip2() {
    refused("fake.dcfg.json.bz2", hello().as_bytes(), &["fake.dcfg.json.bz2", "not bzip2"]);
    let mut corrupt = b"BZh91AY&SY".to_vec();
    corrupt.extend(std::iter::repeat_n(0x42, 4000));
    refused("corrupt.dcfg.json.bz2", &corrupt, &["corrupt.dcfg.json.bz2"]);
}

#[test]
fn output_may_not_be_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("x.dcfg.json");
    std::fs::write(&input, hello()).unwrap();
    let same = input.to_str().unwrap();
    let o = common::run(&["convert", same, "-o", same]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("also an input"), "{}", common::stderr(&o));
    assert_eq!(std::fs::read_to_string(Path::new(same)).unwrap(), hello());
}

/// `validate` lists `expected` once (exit 1) and `convert` refuses the input naming it.
fn repeated_id(name: &str, text: &str, place: &str, expected: &str) {
    refused(name, text.as_bytes(), &[place, expected]);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join(name);
    std::fs::write(&input, text).unwrap();
    let o = common::run(&["validate", input.to_str().unwrap()]);
    let out = common::stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{name}: {out}");
    assert_eq!(out.matches(expected).count(), 1, "{name}: listed once: {out}");
}

#[test]
fn repeated_edge_image_and_process_ids_and_a_repeated_processes_key() {
    let text = hello().replace("[ 9, 8, 9, 18, [ 1 ] ]", "[ 8, 8, 9, 18, [ 1 ] ]");
    repeated_id(
        "edge.dcfg.json",
        &text,
        "PROCESSES[0].EDGES row 9",
        "EDGE_ID 8 is used twice (also EDGES row 8)",
    );

    let mut v: serde_json::Value = serde_json::from_str(&hello()).unwrap();
    let process = v["PROCESSES"][1].clone();
    v["PROCESSES"].as_array_mut().unwrap().push(process);
    repeated_id(
        "pid.dcfg.json",
        &v.to_string(),
        "PROCESSES[1].PROCESS_ID",
        "PROCESS_ID 13723 is used twice (also PROCESSES[0])",
    );

    let mut v: serde_json::Value = serde_json::from_str(&hello()).unwrap();
    let images = v["PROCESSES"][1][1]["IMAGES"].as_array_mut().unwrap();
    let mut image = images[1].clone();
    image[2] = serde_json::json!(0); // size 0: the copy holds the same blocks, found again
    images.push(image);
    repeated_id(
        "image.dcfg.json",
        &v.to_string(),
        "PROCESSES[0].IMAGES[2].IMAGE_ID",
        "IMAGE_ID 1 is used twice (also IMAGES[0])",
    );

    let text = hello().replacen(
        "\"PROCESSES\" :",
        "\"PROCESSES\" : [ [ \"PROCESS_ID\", \"PROCESS_DATA\" ] ], \"PROCESSES\" :",
        1,
    );
    repeated_id("key.dcfg.json", &text, "PROCESSES: ", "the key PROCESSES appears more than once");
}
