//! Pieces every DOT view shares: quoting, heat colours, block labels, edge styles.

use std::fmt::Write as _;

use cfghub_analysis::events::{self, Unnamed};
use cfghub_analysis::{names::SymbolIndex, source::SourceIndex};
use cfghub_model::error::{Findings, Result};
use cfghub_model::ir::{Block, EdgeClass, EventId, Image, NodeRef, Process, Profile};

/// A DOT double-quoted string: `"` and `\` are escaped, line breaks become `\n` (centred
/// lines), other control characters are dropped. Everything else (braces, `<`, `|`, C++
/// template brackets, non-ASCII) is literal inside a quoted string of a non-record node.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    push_escaped(&mut out, s);
    out.push('"');
    out
}

/// Appends `s` escaped for use inside a DOT quoted string.
pub(crate) fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
}

/// Graphviz's `ylorrd9` colours, coldest first: the heat scale of every view.
pub(crate) const HEAT: [&str; 9] =
    ["#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c", "#bd0026", "#800026"];

/// Node attributes for a value on a heat scale whose maximum is `max`: a fill colour (white
/// when the value is 0) and a font colour that stays readable.
pub(crate) fn heat_attrs(value: u64, max: u64) -> String {
    if value == 0 || max == 0 {
        return "style=filled, fillcolor=\"#ffffff\"".to_string();
    }
    let f = value as f64 / max as f64;
    let i = ((f * 8.0).ceil() as usize).clamp(0, 8);
    let font = if i >= 6 { ", fontcolor=\"#ffffff\"" } else { "" };
    format!("style=filled, fillcolor=\"{}\"{font}", HEAT[i])
}

/// Pen width of an edge traversed `count` times out of a maximum `max`: 1 to 5.
pub(crate) fn pen_width(count: u64, max: u64) -> f64 {
    if max == 0 {
        return 1.0;
    }
    let w = 1.0 + 4.0 * (count as f64 / max as f64);
    (w * 10.0).round() / 10.0
}

/// Groups digits by thousands: `135213` -> `135,213`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// DOT style attributes of each class of edge.
pub(crate) trait Styled {
    /// Style attributes (colour, line style) of the class.
    fn style(self) -> &'static str;
}

impl Styled for EdgeClass {
    fn style(self) -> &'static str {
        match self {
            EdgeClass::FallThrough => "color=\"#555555\"",
            EdgeClass::Taken => "color=\"#000000\"",
            EdgeClass::Back => "color=\"#c00000\", fontcolor=\"#c00000\", style=\"bold,dashed\"",
            EdgeClass::Bypass => "color=\"#888888\", fontcolor=\"#888888\", style=dashed",
            EdgeClass::Rep => "color=\"#1f5fbf\", style=dotted",
            EdgeClass::Call => "color=\"#1f7f1f\", fontcolor=\"#1f7f1f\", style=dotted",
            EdgeClass::Return => "color=\"#7f1f7f\", fontcolor=\"#7f1f7f\", style=dotted",
            EdgeClass::Other => "color=\"#555555\", style=dashed",
        }
    }
}

/// The event chosen with `--event`, resolved against the profile; none when none is named
/// (heat is then by execution count).
pub fn event_index(profile: &Profile, event: Option<&str>) -> Result<Option<EventId>> {
    Ok(events::chosen(profile, event, Unnamed::Neither)?.first().copied())
}

/// Per-image look-ups built once per view.
pub(crate) struct ImageIndex<'a> {
    pub image: &'a Image,
    pub symbols: SymbolIndex,
    pub source: SourceIndex,
    /// Costs of the chosen event sorted by offset: (offset, value).
    costs: Vec<(u64, u64)>,
}

impl<'a> ImageIndex<'a> {
    pub fn new(image: &'a Image, event: Option<EventId>) -> Self {
        let mut costs: Vec<(u64, u64)> = match event {
            Some(ev) => image.costs.iter().filter_map(|c| Some((c.offset?, c.value(ev)))).collect(),
            None => Vec::new(),
        };
        costs.sort_unstable();
        ImageIndex { image, symbols: SymbolIndex::new(image), source: SourceIndex::new(image), costs }
    }

    /// The chosen event's cost inside a block's address range.
    pub(crate) fn block_cost(&self, block: &Block) -> u64 {
        let end = block.end();
        let from = self.costs.partition_point(|c| c.0 < block.offset);
        self.costs[from..].iter().take_while(|c| c.0 < end).fold(0u64, |a, c| a.saturating_add(c.1))
    }
}

/// The label of block `b` of the index's image: id and address, symbol+offset, instructions
/// and executions, source lines, and the chosen event's cost. A block without an address (CSI)
/// shows its own id, its line range, and whether it records a completed path.
pub(crate) fn block_label(
    profile: &Profile,
    index: &ImageIndex<'_>,
    b: u32,
    count: u64,
    event: Option<(&str, u64)>,
) -> String {
    let image = index.image;
    let block = &image.blocks[b as usize];
    let mut s = String::with_capacity(96);
    if image.no_addresses {
        let _ = write!(s, "BB {}", image.display_id(b));
        match image.lines_of(b) {
            Some(l) => {
                match l.line_range() {
                    Some((lo, hi)) if lo == hi => {
                        let _ = write!(s, "\nline {lo}");
                    }
                    Some((lo, hi)) => {
                        let _ = write!(s, "\nlines {lo}-{hi}");
                    }
                    None => s.push_str("\nno line"),
                }
                if l.ends_path() {
                    s.push_str("\nrecords a path");
                }
            }
            None => s.push_str("\nno line"),
        }
        if block.count.is_some() {
            let _ = write!(s, "\n× {}", thousands(count));
        }
        return s;
    }
    let _ = writeln!(s, "BB {}  {:#x}", block.id, image.load_addr.wrapping_add(block.offset));
    s.push_str(&cfghub_analysis::names::code_name(profile, image, &index.symbols, block.offset));
    let _ = write!(
        s,
        "\n{} instr{} × {}",
        block.num_instrs,
        if block.num_instrs == 1 { "" } else { "s" },
        thousands(count)
    );
    if let Some(src) = index.source.describe(profile, image, block.offset, u64::from(block.size)) {
        s.push('\n');
        s.push_str(&src);
    }
    if let Some((name, value)) = event {
        let _ = write!(s, "\n{name}: {}", thousands(value));
    }
    s
}

/// Executions of the blocks of one image: the stated count, or else the sum of incoming edges.
pub fn block_counts(process: &Process, image: usize) -> Vec<u64> {
    let blocks = &process.images[image].blocks;
    let mut from_edges = vec![0u64; blocks.len()];
    if blocks.iter().any(|b| b.count.is_none()) {
        for e in &process.edges {
            if let NodeRef::Block(t) = e.target {
                if t.image as usize == image {
                    if let Some(slot) = from_edges.get_mut(t.block as usize) {
                        *slot = slot.saturating_add(e.total());
                    }
                }
            }
        }
    }
    blocks.iter().zip(from_edges).map(|(b, e)| b.count.unwrap_or(e)).collect()
}

/// Warns when `--event` was asked for but the shown code has no cost for it.
pub(crate) fn warn_no_costs(findings: &mut Findings, event: Option<&str>, any: bool) {
    if let (Some(name), false) = (event, any) {
        findings
            .warn(None, format!("dot: no '{name}' costs in the blocks shown; heat is by execution count"));
    }
}

/// Warns that nothing of a profile without basic blocks is drawn, where it holds stacks or
/// costs (folded stacks, DCPI samples): a picture of empty clusters and no word of why
/// would leave the user guessing.
pub(crate) fn warn_without_blocks(profile: &Profile, findings: &mut Findings) {
    let images = || profile.processes.iter().flat_map(|p| &p.images);
    if images().any(|i| !i.blocks.is_empty()) {
        return;
    }
    let stacks: usize = profile.processes.iter().map(|p| p.stacks.len()).sum();
    let costs: usize = images().map(|i| i.costs.len()).sum();
    if stacks + costs > 0 {
        findings.warn(
            None,
            format!(
                "dot: the profile has no basic blocks, so no control flow to draw: its {stacks} call \
                 stack(s) and {costs} cost record(s) are left out (folded stacks, SVG, pprof or \
                 Callgrind show them)"
            ),
        );
    }
}

/// DOT text as a view writes it: handed to `sink` a buffer at a time, or kept whole where there
/// is no sink. The whole-program view of a large program is tens of megabytes (13 MB for the
/// 21 MB cc1plus Callgrind profile), which a `convert -o x.dot` held whole beside the views.
pub struct DotText<'s> {
    text: String,
    sink: Option<&'s mut dyn std::io::Write>,
    /// The first error of the sink, kept until [`DotText::finish`].
    failed: Option<std::io::Error>,
}

impl<'s> DotText<'s> {
    /// Text kept whole ([`DotText::finish`] returns it).
    pub fn whole() -> DotText<'static> {
        DotText { text: String::new(), sink: None, failed: None }
    }

    /// Text handed to `sink` as it is written.
    pub fn to(sink: &'s mut dyn std::io::Write) -> DotText<'s> {
        DotText { text: String::with_capacity(1 << 16), sink: Some(sink), failed: None }
    }

    /// Appends `s`, passing the text on to the sink once 64 KiB have gathered.
    pub fn push_str(&mut self, s: &str) {
        self.text.push_str(s);
        if self.text.len() >= 1 << 16 {
            self.spill();
        }
    }

    fn spill(&mut self) {
        let Some(sink) = self.sink.as_mut() else { return };
        if self.failed.is_none() {
            self.failed = sink.write_all(self.text.as_bytes()).err();
        }
        self.text.clear();
    }

    /// The text (empty where it went to a sink), or the sink's first error.
    pub fn finish(mut self) -> std::io::Result<String> {
        self.spill();
        match self.failed {
            Some(e) => Err(e),
            None => Ok(self.text),
        }
    }
}

impl std::fmt::Write for DotText<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

/// The DOT header shared by every view.
pub fn header(out: &mut DotText<'_>, name: &str, label: &str) {
    let _ = writeln!(out, "digraph {} {{", quote(name));
    let _ =
        writeln!(out, "  graph [label={}, labelloc=t, fontname=\"Helvetica\", fontsize=14];", quote(label));
    out.push_str("  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n");
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=9];\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_dot_special_characters_literal() {
        assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quote("std::map<int, {x}>|y"), "\"std::map<int, {x}>|y\"");
        assert_eq!(quote("two\nlines\u{7}"), "\"two\\nlines\"");
    }

    #[test]
    fn heat_and_numbers() {
        assert_eq!(thousands(135213), "135,213");
        assert_eq!(thousands(12), "12");
        assert!(heat_attrs(10, 10).contains(HEAT[8]));
        assert!(heat_attrs(1, 100).contains(HEAT[1]));
        assert!(heat_attrs(0, 100).contains("#ffffff"));
        assert_eq!(pen_width(5, 10), 3.0);
    }
}
