//! Source positions of code ranges: which file:lines a block's instructions come from.

use cfghub_model::ir::{Block, FileId, Image, Profile, SourceLine};

/// A source line's share of a block: (start, file, line, its instructions when the line lies
/// wholly inside the block or `None` for a partial overlap, overlapping bytes).
pub type Part = (u64, Option<FileId>, u32, Option<u64>, u64);

/// An image's source lines in address order: the line at an address, the lines overlapping a
/// range, and a block's executions spread over its lines. Built once per image and shared by
/// every writer that places costs on source lines (Callgrind, DOT, GraphML).
pub struct SourceIndex {
    /// Indices into `Image::source_lines`, sorted by offset; `None` when the lines are in
    /// address order already (as readers usually give them).
    order: Option<Vec<u32>>,
    /// The longest line's size, bounding how far back a look-up must search.
    max_size: u64,
}

impl SourceIndex {
    /// The index of `image`'s source lines (a sorted order of its own only when they are not in
    /// address order).
    pub fn new(image: &Image) -> SourceIndex {
        let lines = &image.source_lines;
        let mut max_size = 0;
        let mut sorted = true;
        let mut prev = 0;
        for l in lines {
            max_size = max_size.max(u64::from(l.size));
            sorted &= prev <= l.offset;
            prev = l.offset;
        }
        let order = (!sorted).then(|| {
            let mut order: Vec<u32> = (0..lines.len() as u32).collect();
            order.sort_by_key(|&i| lines[i as usize].offset);
            order
        });
        SourceIndex { order, max_size }
    }

    /// The `k`th line in address order.
    #[inline]
    fn nth<'i>(&self, lines: &'i [SourceLine], k: usize) -> &'i SourceLine {
        match &self.order {
            Some(order) => &lines[order[k] as usize],
            None => &lines[k],
        }
    }

    /// The number of lines starting at or before `addr`, searched in `lo..hi`.
    fn upto(&self, lines: &[SourceLine], addr: u64, mut lo: usize, mut hi: usize) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.nth(lines, mid).offset <= addr {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The line covering `addr` among the `k` lines starting at or before it (the
    /// latest-starting one when entries overlap).
    fn covering<'i>(&self, lines: &'i [SourceLine], addr: u64, mut k: usize) -> Option<&'i SourceLine> {
        while k > 0 {
            let l = self.nth(lines, k - 1);
            if l.offset.saturating_add(self.max_size) <= addr {
                break;
            }
            if addr < l.end() {
                return Some(l);
            }
            k -= 1;
        }
        None
    }

    /// The source line covering `addr` (the latest-starting one when entries overlap).
    pub fn at<'i>(&self, image: &'i Image, addr: u64) -> Option<&'i SourceLine> {
        let lines = &image.source_lines;
        let k = self.upto(lines, addr, 0, lines.len());
        self.covering(lines, addr, k)
    }

    /// [`SourceIndex::at`] for addresses that mostly come in increasing order: the search starts
    /// from `hint` (left where the previous look-up ended), so a run of increasing addresses
    /// walks the lines once instead of searching each time.
    pub fn at_from<'i>(&self, image: &'i Image, addr: u64, hint: &mut usize) -> Option<&'i SourceLine> {
        let lines = &image.source_lines;
        let n = lines.len();
        let mut k = (*hint).min(n);
        if k > 0 && self.nth(lines, k - 1).offset > addr {
            k = self.upto(lines, addr, 0, k);
        } else {
            // Gallop forward from the hint, then search the last step.
            let mut step = 1;
            while k + step <= n && self.nth(lines, k + step - 1).offset <= addr {
                k += step;
                step *= 2;
            }
            k = self.upto(lines, addr, k, (k + step).min(n));
        }
        *hint = k;
        self.covering(lines, addr, k)
    }

    /// Spreads `num_instrs x count` of a block over its source lines (whole lines inside the
    /// block take their own instruction counts, lines that overlap its ends share the rest by
    /// bytes):
    /// `(address, file, line, instructions executed)`, in address order. `parts` is scratch
    /// space.
    pub fn spread(
        &self,
        image: &Image,
        block: &Block,
        count: u64,
        parts: &mut Vec<Part>,
        out: &mut Vec<(u64, Option<FileId>, u32, u64)>,
    ) {
        let lo = block.offset;
        let hi = block.end();
        let lines = &image.source_lines;
        // Lines starting before hi.
        let end = match hi.checked_sub(1) {
            Some(h) => self.upto(lines, h, 0, lines.len()),
            None => 0,
        };
        let mut first = end;
        while first > 0 && self.nth(lines, first - 1).offset.saturating_add(self.max_size) > lo {
            first -= 1;
        }
        parts.clear();
        for k in first..end {
            let l = self.nth(lines, k);
            let l_end = l.end();
            if l_end <= lo || l.offset >= hi {
                continue;
            }
            let start = l.offset.max(lo);
            let bytes = l_end.min(hi) - start;
            let full = l.offset >= lo && l_end <= hi;
            parts.push((start, l.file, l.line, full.then_some(u64::from(l.num_instrs)), bytes));
        }
        let full_sum: u64 = parts.iter().filter_map(|p| p.3).sum();
        let num_instrs = u64::from(block.num_instrs);
        if parts.is_empty() || full_sum > num_instrs {
            let (file, line) = parts.first().map_or((None, 0), |p| (p.1, p.2));
            out.push((lo, file, line, num_instrs.saturating_mul(count)));
            return;
        }
        let mut rest = num_instrs - full_sum;
        let partial_bytes: u64 = parts.iter().filter(|p| p.3.is_none()).map(|p| p.4).sum();
        let npartial = parts.iter().filter(|p| p.3.is_none()).count();
        if npartial == 0 && rest > 0 {
            parts.insert(0, (lo, None, 0, Some(rest), 0));
            rest = 0;
        }
        let total_rest = rest;
        let mut seen = 0;
        for p in parts.iter() {
            let n = match p.3 {
                Some(n) => n,
                None => {
                    seen += 1;
                    if seen == npartial {
                        rest
                    } else {
                        let n = ((total_rest as u128 * p.4 as u128) / partial_bytes.max(1) as u128) as u64;
                        let n = n.min(rest);
                        rest -= n;
                        n
                    }
                }
            };
            if n > 0 {
                out.push((p.0, p.1, p.2, n.saturating_mul(count)));
            }
        }
    }

    /// Source lines overlapping `[offset, offset + size)`, in address order (indices into
    /// `Image::source_lines`).
    pub fn overlapping<'i>(
        &'i self,
        image: &'i Image,
        offset: u64,
        size: u64,
    ) -> impl Iterator<Item = u32> + 'i {
        let lines = &image.source_lines;
        let end = offset.saturating_add(size.max(1));
        let upto = match end.checked_sub(1) {
            Some(last) => self.upto(lines, last, 0, lines.len()),
            None => 0,
        };
        let mut first = upto;
        while first > 0 && self.nth(lines, first - 1).offset.saturating_add(self.max_size.max(1)) > offset {
            first -= 1;
        }
        (first..upto).map(move |k| self.index(k)).filter(move |&i| {
            let l = &lines[i as usize];
            l.end() > offset
        })
    }

    /// The index into `Image::source_lines` of the `k`th line in address order.
    fn index(&self, k: usize) -> u32 {
        match &self.order {
            Some(order) => order[k],
            None => k as u32,
        }
    }

    /// `file:lines` of a code range, e.g. `loop.c:5-6` or `a.c:3, b.h:10`; `None` when no
    /// source line covers it. File names are shortened to their last component.
    pub fn describe(&self, profile: &Profile, image: &Image, offset: u64, size: u64) -> Option<String> {
        let mut per_file: Vec<(Option<u32>, Vec<u32>)> = Vec::new();
        for i in self.overlapping(image, offset, size) {
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

    fn line(offset: u64, size: u32, line: u32) -> SourceLine {
        SourceLine { file: None, line, offset, size, num_instrs: 1 }
    }

    #[test]
    fn look_ups_from_a_hint_agree_with_a_search() {
        let image = Image {
            source_lines: vec![line(0x10, 4, 1), line(0x14, 8, 2), line(0x30, 2, 3), line(0x31, 1, 4)],
            ..Image::default()
        };
        let index = SourceIndex::new(&image);
        let addrs = [0x0, 0x10, 0x13, 0x14, 0x1b, 0x1c, 0x30, 0x31, 0x32, 0x40, 0x12, 0x31, 0x0];
        let mut hint = 0;
        for a in addrs {
            let searched = index.at(&image, a).map(|l| l.line);
            assert_eq!(index.at_from(&image, a, &mut hint).map(|l| l.line), searched, "{a:#x}");
        }
        assert_eq!(index.at(&image, 0x31).map(|l| l.line), Some(4));
        assert_eq!(index.at(&image, 0x1c), None);
    }

    #[test]
    fn overlapping_lines_agree_with_a_scan() {
        // Unsorted, overlapping and empty-sized lines, as real line tables have them.
        let spans = [(0x40, 4), (0x10, 8), (0x14, 2), (0x18, 0), (0x30, 0x20), (0x31, 1), (0x90, 3)];
        let image = Image {
            source_lines: spans.iter().enumerate().map(|(i, &(o, s))| line(o, s, i as u32)).collect(),
            ..Image::default()
        };
        let index = SourceIndex::new(&image);
        for offset in 0..0xa0u64 {
            for size in [0, 1, 3, 0x10] {
                let mut scan: Vec<u32> = (0..spans.len() as u32)
                    .filter(|&i| {
                        let l = &image.source_lines[i as usize];
                        l.offset < offset + size.max(1) && l.offset + u64::from(l.size.max(1)) > offset
                    })
                    .collect();
                let mut found: Vec<u32> = index.overlapping(&image, offset, size).collect();
                scan.sort_unstable();
                found.sort_unstable();
                assert_eq!(found, scan, "[{offset:#x}, +{size})");
            }
        }
    }
}
