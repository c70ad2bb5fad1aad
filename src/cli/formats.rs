//! `cfghub formats`: which formats can be read and written.

use cfghub_formats::registry::formats;
use cfghub_model::error::Result;

pub fn run() -> Result<i32> {
    let yes = |b: bool| if b { "yes" } else { "-" };
    let rows: Vec<[String; 5]> = formats()
        .iter()
        .map(|f| {
            [
                f.name().to_string(),
                yes(f.can_read()).to_string(),
                yes(f.can_write()).to_string(),
                // A format known by its content alone (Chrome traces are `.json` files).
                if f.extensions().is_empty() { "(by content)".to_string() } else { f.extensions().join(" ") },
                f.description().to_string(),
            ]
        })
        .collect();
    let header = ["format", "read", "write", "extensions", "description"].map(String::from);
    let width = |c: usize| rows.iter().chain([&header]).map(|r| r[c].len()).max().unwrap_or(0);
    let widths = [width(0), width(1), width(2), width(3)];
    let mut out = String::new();
    for row in [&header].into_iter().chain(&rows) {
        for (cell, w) in row.iter().zip(widths) {
            out += &format!("{cell:<w$}  ");
        }
        out += &row[4];
        out.push('\n');
    }
    let aliases: Vec<String> =
        cfghub_formats::registry::ALIASES.iter().map(|(alias, name)| format!("{alias} = {name}")).collect();
    out += &format!("\nOther names --from and --to take: {}.\n", aliases.join(", "));
    out += "\nAny input may be gzip or bzip2 compressed; outputs named *.gz or *.bz2 are compressed.\n";
    super::print_out(&out)?;
    Ok(0)
}
