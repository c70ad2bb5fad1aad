//! `cfghub formats`: which formats can be read and written.

use cfghub_formats::registry::formats;
use cfghub_model::error::Result;

pub fn run() -> Result<i32> {
    let mut out = format!("{:<11} {:<5} {:<5} {:<32} description\n", "format", "read", "write", "extensions");
    for f in formats() {
        let yes = |b: bool| if b { "yes" } else { "-" };
        out += &format!(
            "{:<11} {:<5} {:<5} {:<32} {}\n",
            f.name(),
            yes(f.can_read()),
            yes(f.can_write()),
            f.extensions().join(" "),
            f.description()
        );
    }
    out += "\nAny input may be gzip or bzip2 compressed; outputs named *.gz or *.bz2 are compressed.\n";
    super::print_out(&out)?;
    Ok(0)
}
