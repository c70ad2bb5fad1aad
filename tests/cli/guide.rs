//! The user guide's workflows typed as written: every `cfghub` line of the shell blocks of
//! "Trying the workflows" and Workflows 1 to 3 of docs/user-guide.md, run in a copy of
//! `example/`, exits 0 and says no warning; and the README's first command, on its bundled
//! input, says nothing.

use std::path::Path;

use crate::common;

/// The lines of the first shell block of each of the guide's sections whose titles start with
/// one of `sections` (the workflow itself; later blocks show other inputs), as typed (comments
/// after `#` left out).
fn guide_lines(sections: &[&str]) -> Vec<String> {
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/user-guide.md")).unwrap();
    let mut lines = Vec::new();
    let (mut in_section, mut in_block) = (false, false);
    for line in guide.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            in_section = sections.iter().any(|s| title.starts_with(s));
            continue;
        }
        if line.starts_with("```") {
            in_block = !in_block && line == "```sh";
            if !in_block {
                // The section's first block is done.
                in_section = false;
            }
            continue;
        }
        if in_section && in_block {
            let command = line.split(" #").next().unwrap().trim();
            if !command.is_empty() {
                lines.push(command.to_string());
            }
        }
    }
    lines
}

#[test]
fn the_guides_three_workflows_run_as_written_on_the_example() {
    if !common::clients(&["dot"]) {
        return;
    }
    let lines = guide_lines(&["Trying the workflows", "Workflow 1", "Workflow 2", "Workflow 3"]);
    let commands: Vec<&String> = lines.iter().filter(|l| l.starts_with("cfghub ")).collect();
    assert!(lines.iter().any(|l| l == "cd example"), "{lines:#?}");
    assert!(commands.len() >= 12, "{commands:#?}");
    let dir = tempfile::tempdir().unwrap();
    let example = dir.path().join("example");
    std::fs::create_dir(&example).unwrap();
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("example")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, example.join(path.file_name().unwrap())).unwrap();
    }
    for command in commands {
        let args: Vec<&str> = command.split_whitespace().skip(1).collect();
        let o = common::cfghub().args(&args).current_dir(&example).output().unwrap();
        let said = common::stderr(&o);
        assert!(o.status.success(), "{command}: {said}");
        assert!(!said.contains("warning") && !said.contains("error"), "{command}: {said}");
    }
    // What the guide says of the example's merge.
    let merged = common::cfghub().args(["info", "merged.dcfg.json"]).current_dir(&example).output().unwrap();
    let info = common::stdout(&merged);
    let routine = |name: &str| {
        info.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")) && l.contains(" app "))
            .map(|l| l.split_whitespace().nth(6).unwrap().to_string())
    };
    assert_eq!((routine("mix").as_deref(), routine("main").as_deref()), (Some("243"), Some("69")), "{info}");
}

#[test]
fn the_readmes_first_command_says_nothing() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let first = readme.lines().find(|l| l.starts_with("cargo run ")).expect("the README's first command");
    let args: Vec<&str> = first.split(" -- ").nth(1).unwrap().split_whitespace().collect();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join(args.last().unwrap());
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    *args.last_mut().unwrap() = output.to_str().unwrap().to_string();
    let o = common::cfghub().args(&args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(common::stderr(&o), "");
}
