//! Rendering DOT to pictures with Graphviz's `dot` program.

use std::io::Write;
use std::process::{Command, Stdio};

use cfghub_model::error::{Error, Result};

/// The Graphviz output format a file name asks for (`svg`, `png`, `pdf`), or `None` for DOT.
pub fn picture_format(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    ["svg", "png", "pdf"].into_iter().find(|ext| lower.ends_with(&format!(".{ext}")))
}

/// The error for a missing Graphviz, telling the user how to get it.
pub fn graphviz_missing(output: &str) -> Error {
    Error::usage(format!("writing {output} needs Graphviz's `dot` program, which is not installed"))
        .with_hint(
            "install Graphviz (Debian/Ubuntu: apt-get install graphviz; Fedora: dnf install graphviz; \
             macOS: brew install graphviz), or write DOT with -o FILE.dot and render it elsewhere",
        )
}

/// Whether Graphviz's `dot` can be run (`GRAPHVIZ_DOT` names another program).
pub fn available() -> bool {
    Command::new(program()).arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

fn program() -> String {
    std::env::var("GRAPHVIZ_DOT").unwrap_or_else(|_| "dot".to_string())
}

/// Runs `dot -T<format>` over `dot_text` and returns the picture. Anything Graphviz prints on
/// standard error with a failure status becomes the error message.
pub fn render(dot_text: &str, format: &str, output: &str) -> Result<Vec<u8>> {
    let mut child = Command::new(program())
        .arg(format!("-T{format}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => graphviz_missing(output),
            _ => Error::io("dot", e),
        })?;
    let mut stdin = child.stdin.take().expect("piped");
    let text = dot_text.to_string();
    let feeder = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let output_of = child.wait_with_output().map_err(|e| Error::io("dot", e))?;
    let _ = feeder.join();
    let (status, picture, errors) =
        (output_of.status, output_of.stdout, String::from_utf8_lossy(&output_of.stderr).into_owned());
    if !status.success() || picture.is_empty() {
        return Err(Error::unsupported(format!("Graphviz failed to render {output}: {}", errors.trim()))
            .with_hint("write DOT with -o FILE.dot to look at what was given to Graphviz"));
    }
    Ok(picture)
}
