//! `cfghub formats`: which formats can be read and written.

use crate::error::Result;
use crate::registry::formats;

pub fn run() -> Result<i32> {
    println!("{:<11} {:<5} {:<5} {:<32} description", "format", "read", "write", "extensions");
    for f in formats() {
        let yes = |b: bool| if b { "yes" } else { "-" };
        println!(
            "{:<11} {:<5} {:<5} {:<32} {}",
            f.name(),
            yes(f.can_read()),
            yes(f.can_write()),
            f.extensions().join(" "),
            f.description()
        );
    }
    println!("\nAny input may be gzip or bzip2 compressed; outputs named *.gz or *.bz2 are compressed.");
    Ok(0)
}
