//! What users of command-line tools expect besides `--help`: shell completions that the
//! shells accept and a manual page that groff renders without a warning.

use crate::common;
use std::process::{Command, Stdio};

/// The bash script parses (`bash -n`), completes cfghub's commands and `--to`'s option, and
/// every shell clap knows gets a script.
#[test]
fn completion_scripts_are_given_for_every_shell_and_bash_reads_its_own() {
    common::require("bash");
    let o = common::run(&["completions", "bash"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let script = common::stdout(&o);
    assert!(
        script.contains("_cfghub()") && script.contains("convert") && script.contains("--to"),
        "{script}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cfghub.bash");
    std::fs::write(&path, &script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    // Completing `cfghub con` in bash itself offers `convert`.
    let complete = format!(
        "source {}; COMP_WORDS=(cfghub con); COMP_CWORD=1; COMP_LINE='cfghub con'; COMP_POINT=10; \
         _cfghub cfghub con cfghub; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let offered = Command::new("bash").arg("-c").arg(complete).output().unwrap();
    assert!(common::stdout(&offered).lines().any(|l| l == "convert"), "{}", common::stderr(&offered));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = common::run(&["completions", shell]);
        assert!(o.status.success() && !o.stdout.is_empty(), "{shell}: {}", common::stderr(&o));
    }
    let o = common::run(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `cfghub man` and `cfghub man convert` are roff pages groff renders without a warning,
/// naming the commands and the options.
#[test]
fn manual_pages_render_in_groff_without_warnings() {
    common::require("groff");
    for (args, expected) in [(&["man"][..], "convert"), (&["man", "convert"][..], "--symbols")] {
        let o = common::run(args);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let page = o.stdout;
        assert!(
            page.starts_with(b".ie \\n(.g .ds Aq") || page.starts_with(b".TH"),
            "{}",
            String::from_utf8_lossy(&page)
        );
        let mut groff = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        groff.stdin.take().unwrap().write_all(&page).unwrap();
        let shown = groff.wait_with_output().unwrap();
        let warnings = String::from_utf8_lossy(&shown.stderr);
        assert!(shown.status.success() && warnings.trim().is_empty(), "{args:?}: {warnings}");
        assert!(String::from_utf8_lossy(&shown.stdout).contains(expected), "{args:?}");
    }
    let o = common::run(&["man", "nonesuch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("commands: "), "{}", common::stderr(&o));
}
