//! Source positions of code ranges: which file:lines a block's instructions come from.

use crate::ir::{Image, Profile};

/// An image's source lines sorted by start offset, for range look-ups.
pub struct SourceIndex {
    /// (start offset, end offset, index into `Image::source_lines`), sorted by start.
    ranges: Vec<(u64, u64, u32)>,
    /// The longest range, bounding how far back a look-up must search.
    longest: u64,
}

impl SourceIndex {
    pub fn new(image: &Image) -> Self {
        let mut ranges: Vec<(u64, u64, u32)> = image
            .source_lines
            .iter()
            .enumerate()
            .map(|(i, l)| (l.offset, l.offset.saturating_add(l.size.max(1)), i as u32))
            .collect();
        ranges.sort_unstable();
        let longest = ranges.iter().map(|r| r.1 - r.0).max().unwrap_or(0);
        SourceIndex { ranges, longest }
    }

    /// Source lines overlapping `[offset, offset + size)`, in address order.
    pub fn overlapping(&self, offset: u64, size: u64) -> impl Iterator<Item = u32> + '_ {
        let end = offset.saturating_add(size.max(1));
        let from = self.ranges.partition_point(|r| r.0 < offset.saturating_sub(self.longest));
        self.ranges[from..].iter().take_while(move |r| r.0 < end).filter(move |r| r.1 > offset).map(|r| r.2)
    }

    /// `file:lines` of a code range, e.g. `loop.c:5-6` or `a.c:3, b.h:10`; `None` when no
    /// source line covers it. File names are shortened to their last component.
    pub fn describe(&self, profile: &Profile, image: &Image, offset: u64, size: u64) -> Option<String> {
        let mut per_file: Vec<(Option<u32>, Vec<u32>)> = Vec::new();
        for i in self.overlapping(offset, size) {
            let l = &image.source_lines[i as usize];
            match per_file.iter_mut().find(|(f, _)| *f == l.file) {
                Some((_, lines)) => lines.push(l.line),
                None => per_file.push((l.file, vec![l.line])),
            }
        }
        if per_file.is_empty() {
            return None;
        }
        let parts: Vec<String> = per_file
            .into_iter()
            .map(|(file, mut lines)| {
                lines.sort_unstable();
                lines.dedup();
                let name = match file {
                    Some(f) => {
                        let full = profile.file_name(f);
                        full.rsplit('/').next().unwrap_or(full).to_string()
                    }
                    None => "?".to_string(),
                };
                format!("{name}:{}", line_ranges(&lines))
            })
            .collect();
        Some(parts.join(", "))
    }
}

/// `[3, 4, 5, 9]` as `3-5,9`.
fn line_ranges(lines: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j + 1 < lines.len() && lines[j + 1] == lines[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j > i {
            out.push_str(&format!("{}-{}", lines[i], lines[j]));
        } else {
            out.push_str(&lines[i].to_string());
        }
        i = j + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::SourceLine;

    #[test]
    fn lines_of_a_block() {
        let mut p = Profile::default();
        let f = p.files.intern("/src/loop.c");
        let image = Image {
            source_lines: [(4, 0x59d, 15), (5, 0x5ac, 9), (6, 0x5b5, 26), (5, 0x5cf, 15)]
                .iter()
                .map(|&(line, offset, size)| SourceLine { file: Some(f), line, offset, size, num_instrs: 1 })
                .collect(),
            ..Image::default()
        };
        let idx = SourceIndex::new(&image);
        assert_eq!(idx.describe(&p, &image, 0x59d, 0x18).as_deref(), Some("loop.c:4-5"));
        assert_eq!(idx.describe(&p, &image, 0x5b5, 0x1a).as_deref(), Some("loop.c:6"));
        assert_eq!(idx.describe(&p, &image, 0x5d3, 0x0b).as_deref(), Some("loop.c:5"));
        assert_eq!(idx.describe(&p, &image, 0x100, 4), None);
        assert_eq!(line_ranges(&[3, 4, 5, 9]), "3-5,9");
    }
}
