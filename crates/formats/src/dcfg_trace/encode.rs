//! DCFG-trace encoder: per-thread edge-id sequences in, a trace that obeys every "Ordering" rule
//! of the spec out.
//!
//! 1. Each thread's sequence is checked against the DCFG (every edge exists and starts where
//!    the one before it ends) and cut into chunks of about [`EncodeOptions::chunk_instrs`]
//!    instructions (`INSTR_COUNT` counts the source blocks of a chunk's edges, so consecutive
//!    chunks add up to the thread's total).
//! 2. The transition table gets, per current edge, a Huffman code over the edges that follow it
//!    inside chunks (an edge with one successor costs zero bits), limited to 32 bits.
//! 3. Each chunk's bits become modified Base64; then consecutive repeats of the text (loops
//!    repeat their bits, so their text is periodic) become repeat groups `(N*...)`, nested when
//!    a body repeats inside, and bodies that recur across chunks and threads go into the
//!    `STRING_DICTIONARY` as `<key>` references.

use cfghub_model::json::parse_int;
use std::collections::{BinaryHeap, HashMap};
use std::io::Write;

use super::seq::base64_char;
use super::table::Row;
use super::{CHUNK_HEADER, PROCESS_HEADER, TABLE_HEADER, THREAD_HEADER};
use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{NodeRef, Process, Profile};

/// How to encode.
#[derive(Clone, Debug)]
pub struct EncodeOptions {
    /// A new chunk starts once a chunk holds at least this many instructions.
    pub chunk_instrs: u64,
    /// Longest repeat body looked for, in characters.
    pub max_period: usize,
    /// Put repeat bodies that recur into the string dictionary.
    pub dictionary: bool,
}

impl Default for EncodeOptions {
    fn default() -> Self {
        EncodeOptions { chunk_instrs: 1_000_000, max_period: 256, dictionary: true }
    }
}

/// One thread's edges, in execution order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadEdges {
    /// Index into the DCFG's INSTR_COUNT_PER_THREAD.
    pub thread: u64,
    /// Edge ids the thread traversed, in order.
    pub edges: Vec<u64>,
}

/// Reads the edge-list text `cfghub trace edges` prints: one edge id per line; a line
/// `# thread N` starts thread N's sequence (thread 0 when absent); other `#` lines are comments.
pub(crate) fn parse_edge_list(text: &str) -> Result<Vec<ThreadEdges>> {
    let mut threads: Vec<ThreadEdges> = Vec::new();
    let mut current: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let mut words = rest.split_whitespace();
            if words.next() == Some("thread") {
                let t: u64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(|| {
                    Error::input("expected `# thread N` with a thread index N").at_line(n as u64 + 1)
                })?;
                if threads.iter().any(|x| x.thread == t) {
                    return Err(Error::input(format!("thread {t} appears twice")).at_line(n as u64 + 1));
                }
                threads.push(ThreadEdges { thread: t, edges: Vec::new() });
                current = Some(threads.len() - 1);
            }
            continue;
        }
        let id = parse_int(line).ok_or_else(|| {
            Error::input(format!("expected an edge id, found \"{line}\"")).at_line(n as u64 + 1)
        })?;
        let slot = match current {
            Some(c) => c,
            None => {
                if threads.iter().any(|x| x.thread == 0) {
                    return Err(Error::input("thread 0 appears twice").at_line(n as u64 + 1));
                }
                threads.push(ThreadEdges { thread: 0, edges: Vec::new() });
                current = Some(threads.len() - 1);
                threads.len() - 1
            }
        };
        threads[slot].edges.push(id);
    }
    Ok(threads)
}

/// A piece of an encoded sequence string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Base64 characters written as they are.
    Lit(Vec<u8>),
    /// A repeat group `(M*...)`: the count `M` and the body.
    Rep(u64, Vec<Piece>),
}

/// One chunk before writing.
pub(crate) struct EncodedChunk {
    pub preceding: u64,
    pub instrs: u64,
    pub edges: u64,
    pub first: u64,
    pub pieces: Vec<Piece>,
}

/// The transition table: a Huffman code per current edge over the edges that follow it.
#[derive(Clone, Debug, Default)]
pub(crate) struct TransitionCodes {
    /// Per current edge: (next edge, code, length).
    pub per_current: HashMap<u64, Vec<(u64, u32, u8)>>,
    lookup: HashMap<(u64, u64), (u32, u8)>,
}

impl TransitionCodes {
    /// Codes from transition counts (current -> next -> count).
    pub(crate) fn from_counts(freq: &HashMap<u64, HashMap<u64, u64>>) -> Self {
        let mut t = TransitionCodes::default();
        for (&cur, nexts) in freq {
            let mut list: Vec<(u64, u64)> = nexts.iter().map(|(&n, &c)| (n, c)).collect();
            list.sort_unstable();
            let assigned = huffman(&list);
            for &(n, code, len) in &assigned {
                t.lookup.insert((cur, n), (code, len));
            }
            t.per_current.insert(cur, assigned);
        }
        t
    }

    /// The code of the transition `current -> next`; panics when the table lacks it (the
    /// table is always built from the transitions it then encodes).
    pub fn code(&self, current: u64, next: u64) -> (u32, u8) {
        self.lookup[&(current, next)]
    }
}

/// Codes for every transition of whole sequences.
pub(crate) fn transition_codes(threads: &[ThreadEdges]) -> TransitionCodes {
    let mut freq: HashMap<u64, HashMap<u64, u64>> = HashMap::new();
    for t in threads {
        for w in t.edges.windows(2) {
            *freq.entry(w[0]).or_default().entry(w[1]).or_default() += 1;
        }
    }
    TransitionCodes::from_counts(&freq)
}

/// Writes a trace of `process` (its edges weigh the chunks) with the given threads.
pub fn encode(
    profile: &Profile,
    pid: u64,
    threads: &[ThreadEdges],
    options: &EncodeOptions,
    out: &mut dyn Write,
) -> Result<()> {
    let process = profile
        .processes
        .iter()
        .find(|p| p.pid == pid)
        .ok_or_else(|| Error::usage(format!("the DCFG has no process {pid}")))?;
    let edges = EdgeInfo::new(process);
    let chunk_instrs = options.chunk_instrs.max(1);
    // Chunks as ranges of each thread's sequence, checked against the DCFG.
    let mut cuts: Vec<Vec<(usize, usize, u64, u64)>> = Vec::new(); // (start, end, preceding, instrs)
    for t in threads {
        let mut ranges = Vec::new();
        let mut start = 0usize;
        let mut preceding = 0u64;
        let mut instrs = 0u64;
        for (i, &id) in t.edges.iter().enumerate() {
            let w = edges.instrs(id).ok_or_else(|| {
                Error::input(format!(
                    "thread {}, edge {i}: edge id {id} is not an edge of the DCFG",
                    t.thread
                ))
            })?;
            if i > 0 && !edges.follows(t.edges[i - 1], id) {
                return Err(Error::input(format!(
                    "thread {}, edge {i}: edge {id} does not start at the node where edge {} ends",
                    t.thread,
                    t.edges[i - 1]
                )));
            }
            if instrs >= chunk_instrs {
                ranges.push((start, i, preceding, instrs));
                preceding += instrs;
                start = i;
                instrs = 0;
            }
            instrs += w;
        }
        if start < t.edges.len() {
            ranges.push((start, t.edges.len(), preceding, instrs));
        }
        cuts.push(ranges);
    }
    // Transition counts inside chunks, then Huffman codes per current edge.
    let mut freq: HashMap<u64, HashMap<u64, u64>> = HashMap::new();
    for (t, ranges) in threads.iter().zip(&cuts) {
        for &(s, e, _, _) in ranges {
            for w in t.edges[s..e].windows(2) {
                *freq.entry(w[0]).or_default().entry(w[1]).or_default() += 1;
            }
        }
    }
    let codes = TransitionCodes::from_counts(&freq);
    // Chunks.
    let mut encoded: Vec<(u64, Vec<EncodedChunk>)> = Vec::new();
    for (t, ranges) in threads.iter().zip(&cuts) {
        let mut chunks = Vec::with_capacity(ranges.len());
        for &(s, e, preceding, instrs) in ranges {
            let mut bits = BitText::default();
            for w in t.edges[s..e].windows(2) {
                let (code, len) = codes.code(w[0], w[1]);
                bits.push(code as u64, len as u32);
            }
            let text = bits.finish();
            chunks.push(EncodedChunk {
                preceding,
                instrs,
                edges: (e - s) as u64,
                first: t.edges[s],
                pieces: compress(&text, options.max_period),
            });
        }
        encoded.push((t.thread, chunks));
    }
    // Dictionary: repeat bodies and long literal runs that occur more than once.
    let (dict, keys) = if options.dictionary {
        let all: Vec<&[Piece]> =
            encoded.iter().flat_map(|(_, cs)| cs.iter().map(|c| c.pieces.as_slice())).collect();
        build_dictionary(&all)
    } else {
        (Vec::new(), HashMap::new())
    };
    write_parts(out, pid, &dict, &codes, &encoded, &keys).map_err(|e| Error::io("output", e))
}

/// Dictionary entries `(key, value)` and the map from text to key for the repeat bodies and
/// literal runs (16 characters or more) of `chunks` that occur more than once, when a reference
/// saves characters, most valuable first.
fn build_dictionary(chunks: &[&[Piece]]) -> (Vec<(String, String)>, HashMap<String, String>) {
    let mut seen: HashMap<String, u64> = HashMap::new();
    for pieces in chunks {
        for p in pieces.iter() {
            match p {
                Piece::Rep(_, body) => *seen.entry(render(body, &HashMap::new())).or_default() += 1,
                Piece::Lit(t) if t.len() >= 16 => {
                    *seen.entry(String::from_utf8_lossy(t).into_owned()).or_default() += 1
                }
                Piece::Lit(_) => {}
            }
        }
    }
    let mut texts: Vec<(String, u64)> = seen.into_iter().filter(|(b, n)| *n >= 2 && b.len() >= 6).collect();
    texts
        .sort_unstable_by(|a, b| (b.1 * b.0.len() as u64).cmp(&(a.1 * a.0.len() as u64)).then(a.0.cmp(&b.0)));
    let mut dict: Vec<(String, String)> = Vec::new();
    let mut keys: HashMap<String, String> = HashMap::new();
    for (text, n) in texts {
        let key = key_name(dict.len());
        // n copies become n references plus one entry (`"key" : "text",`).
        let saved =
            (n as i64 - 1) * text.len() as i64 - (n as i64) * (key.len() as i64 + 2) - key.len() as i64 - 6;
        if saved <= 0 {
            continue;
        }
        keys.insert(text.clone(), key.clone());
        dict.push((key, text));
    }
    (dict, keys)
}

/// The `n`th dictionary key: Base64 digits, shortest first.
fn key_name(mut n: usize) -> String {
    let mut s = Vec::new();
    loop {
        s.push(base64_char((n % 64) as u8));
        n /= 64;
        if n == 0 {
            break;
        }
        n -= 1;
    }
    s.reverse();
    String::from_utf8(s).unwrap_or_default()
}

/// Edge facts the encoder checks against.
struct EdgeInfo<'a> {
    process: &'a Process,
    by_id: HashMap<u64, usize>,
}

impl<'a> EdgeInfo<'a> {
    fn new(process: &'a Process) -> Self {
        let by_id = process.edges.iter().enumerate().map(|(i, e)| (e.id, i)).collect();
        EdgeInfo { process, by_id }
    }

    fn instrs(&self, id: u64) -> Option<u64> {
        let e = &self.process.edges[*self.by_id.get(&id)?];
        Some(match e.source {
            NodeRef::Block(b) => u64::from(self.process.block(b).num_instrs),
            _ => 0,
        })
    }

    fn follows(&self, a: u64, b: u64) -> bool {
        match (self.by_id.get(&a), self.by_id.get(&b)) {
            (Some(&x), Some(&y)) => self.process.edges[x].target == self.process.edges[y].source,
            _ => false,
        }
    }
}

/// Canonical Huffman codes, at most 32 bits long, for `(symbol, frequency)` pairs sorted by
/// symbol: `(symbol, code, length)`. One symbol gets the empty code.
fn huffman(list: &[(u64, u64)]) -> Vec<(u64, u32, u8)> {
    if list.len() == 1 {
        return vec![(list[0].0, 0, 0)];
    }
    let mut freqs: Vec<u64> = list.iter().map(|x| x.1.max(1)).collect();
    let lengths = loop {
        let lengths = code_lengths(&freqs);
        if lengths.iter().all(|&l| l <= 32) {
            break lengths;
        }
        for f in &mut freqs {
            *f = (*f).div_ceil(2);
        }
    };
    let mut order: Vec<usize> = (0..list.len()).collect();
    order.sort_by_key(|&i| (lengths[i], list[i].0));
    let mut out = Vec::with_capacity(list.len());
    let mut code: u64 = 0;
    let mut prev = lengths[order[0]];
    for (k, &i) in order.iter().enumerate() {
        let l = lengths[i];
        if k > 0 {
            code = (code + 1) << (l - prev);
        }
        prev = l;
        out.push((list[i].0, code as u32, l as u8));
    }
    out
}

/// Huffman code lengths for the frequencies.
fn code_lengths(freqs: &[u64]) -> Vec<u32> {
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    struct Item(std::cmp::Reverse<u64>, usize);
    let n = freqs.len();
    let mut parent = vec![usize::MAX; 2 * n];
    let mut heap: BinaryHeap<Item> =
        freqs.iter().enumerate().map(|(i, &f)| Item(std::cmp::Reverse(f), i)).collect();
    let mut next = n;
    while heap.len() > 1 {
        let (Some(a), Some(b)) = (heap.pop(), heap.pop()) else { break };
        parent[a.1] = next;
        parent[b.1] = next;
        heap.push(Item(std::cmp::Reverse(a.0 .0 + b.0 .0), next));
        next += 1;
    }
    (0..n)
        .map(|i| {
            let mut d = 0;
            let mut x = i;
            while parent[x] != usize::MAX {
                x = parent[x];
                d += 1;
            }
            d
        })
        .collect()
}

/// Bits to modified Base64 text (the last character padded with zeros).
#[derive(Default)]
pub(crate) struct BitText {
    text: Vec<u8>,
    acc: u64,
    have: u32,
}

impl BitText {
    pub fn push(&mut self, code: u64, len: u32) {
        let mut len = len;
        while len > 0 {
            let take = len.min(32);
            let part = (code >> (len - take)) & ((1u64 << take) - 1);
            self.acc = (self.acc << take) | part;
            self.have += take;
            len -= take;
            while self.have >= 6 {
                self.have -= 6;
                self.text.push(base64_char(((self.acc >> self.have) & 63) as u8));
            }
            self.acc &= (1u64 << self.have) - 1;
        }
    }

    pub fn finish(mut self) -> Vec<u8> {
        if self.have > 0 {
            self.text.push(base64_char(((self.acc << (6 - self.have)) & 63) as u8));
        }
        self.text
    }
}

fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Replaces consecutive repeats in `s` with repeat groups (greedy, best saving at each place,
/// bodies compressed in turn).
fn compress(s: &[u8], max_period: usize) -> Vec<Piece> {
    let n = s.len();
    let mut out = Vec::new();
    let mut lit_start = 0;
    let mut i = 0;
    let mut found: Vec<usize> = Vec::new();
    while i < n {
        let mut best: Option<(usize, usize, u64)> = None; // (saving, period, reps)
        found.clear();
        let maxp = max_period.min((n - i) / 2);
        for p in 1..=maxp {
            if s[i] != s[i + p] || found.iter().any(|&f| p % f == 0) {
                continue;
            }
            if s[i..i + p] != s[i + p..i + 2 * p] {
                continue;
            }
            let mut r = 2u64;
            let mut at = i + 2 * p;
            while at + p <= n && s[at..at + p] == s[i..i + p] {
                r += 1;
                at += p;
            }
            found.push(p);
            let covered = p * r as usize;
            let cost = p + 3 + digits(r);
            if covered > cost {
                let saving = covered - cost;
                if best.is_none_or(|b| saving > b.0) {
                    best = Some((saving, p, r));
                }
            }
        }
        match best {
            Some((_, p, r)) => {
                if lit_start < i {
                    out.push(Piece::Lit(s[lit_start..i].to_vec()));
                }
                let body = &s[i..i + p];
                let inner = if p >= 8 { compress(body, max_period) } else { vec![Piece::Lit(body.to_vec())] };
                out.push(Piece::Rep(r, inner));
                i += p * r as usize;
                lit_start = i;
            }
            None => i += 1,
        }
    }
    if lit_start < n {
        out.push(Piece::Lit(s[lit_start..].to_vec()));
    }
    out
}

/// Sequence text of pieces; top-level repeat bodies found in `keys` become references.
fn render(pieces: &[Piece], keys: &HashMap<String, String>) -> String {
    let mut s = String::new();
    render_into(pieces, keys, &mut s);
    s
}

fn render_into(pieces: &[Piece], keys: &HashMap<String, String>, s: &mut String) {
    for p in pieces {
        match p {
            Piece::Lit(t) => {
                let text = std::str::from_utf8(t).unwrap_or("");
                match keys.get(text) {
                    Some(k) if t.len() >= 16 => {
                        s.push('<');
                        s.push_str(k);
                        s.push('>');
                    }
                    _ => s.push_str(text),
                }
            }
            Piece::Rep(r, body) => {
                s.push('(');
                s.push_str(&r.to_string());
                s.push('*');
                let plain = render(body, &HashMap::new());
                match keys.get(&plain) {
                    Some(k) => {
                        s.push('<');
                        s.push_str(k);
                        s.push('>');
                    }
                    None => s.push_str(&plain),
                }
                s.push(')');
            }
        }
    }
}

fn header(h: &[&str]) -> String {
    let cols: Vec<String> = h.iter().map(|c| format!("\"{c}\"")).collect();
    format!("[{}]", cols.join(", "))
}

/// Writes a one-process trace: dictionary entries `(key, value)`, the codes, and per thread
/// its chunks; repeat bodies found in `keys` (body -> key) are written as references.
pub(crate) fn write_parts(
    out: &mut dyn Write,
    pid: u64,
    dict: &[(String, String)],
    codes: &TransitionCodes,
    threads: &[(u64, Vec<EncodedChunk>)],
    keys: &HashMap<String, String>,
) -> std::io::Result<()> {
    writeln!(out, "{{ \"MAJOR_VERSION\" : 1,")?;
    writeln!(out, "  \"MINOR_VERSION\" : 0,")?;
    writeln!(out, "  \"PROCESSES\" : [")?;
    writeln!(out, "  {},", header(&PROCESS_HEADER))?;
    write!(out, "  [ {pid},\n    {{")?;
    for (i, (k, v)) in dict.iter().enumerate() {
        write!(out, "{}\n      \"{k}\" : \"{v}\"", if i > 0 { "," } else { "" })?;
    }
    writeln!(out, " }},")?;
    writeln!(out, "    [ {}", header(&TABLE_HEADER))?;
    let mut currents: Vec<&u64> = codes.per_current.keys().collect();
    currents.sort_unstable();
    for cur in currents {
        for &(next, code, len) in &codes.per_current[cur] {
            writeln!(out, "    , [ {cur}, \"{}\", [ {next} ] ]", Row::code_text(code, len))?;
        }
    }
    writeln!(out, "    ],")?;
    writeln!(out, "    [ {}", header(&THREAD_HEADER))?;
    for (thread, chunks) in threads {
        writeln!(out, "    , [ {thread},")?;
        writeln!(out, "      [ {}", header(&CHUNK_HEADER))?;
        for c in chunks {
            writeln!(
                out,
                "      , [ {}, {}, {}, {}, \"{}\" ]",
                c.preceding,
                c.instrs,
                c.edges,
                c.first,
                render(&c.pieces, keys)
            )?;
        }
        writeln!(out, "      ] ]")?;
    }
    writeln!(out, "    ] ]")?;
    writeln!(out, "  ]")?;
    writeln!(out, "}}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huffman_codes_are_prefix_free_and_limited() {
        let list: Vec<(u64, u64)> = (0..40u64).map(|i| (i, 1u64 << i.min(60))).collect();
        let codes = huffman(&list);
        assert!(codes.iter().all(|c| c.2 <= 32 && c.2 >= 1));
        for a in &codes {
            for b in &codes {
                if a.0 != b.0 && a.2 <= b.2 {
                    assert_ne!(b.1 >> (b.2 - a.2), a.1, "{a:?} prefixes {b:?}");
                }
            }
        }
        assert_eq!(huffman(&[(7, 3)]), vec![(7, 0, 0)]);
    }

    #[test]
    fn repeats_are_found_and_nested() {
        let s = b"xyABCABCABCABCABCqq";
        let p = compress(s, 64);
        assert_eq!(render(&p, &HashMap::new()), "xy(5*ABC)qq");
        let inner = "ab".repeat(10) + "Q";
        let s = inner.repeat(6);
        let p = compress(s.as_bytes(), 64);
        assert_eq!(render(&p, &HashMap::new()), "(6*(10*ab)Q)");
    }

    #[test]
    fn recurring_bodies_and_literal_runs_go_into_the_dictionary() {
        let long = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef".to_vec();
        let a = vec![Piece::Lit(long.clone()), Piece::Rep(9, vec![Piece::Lit(b"xyzxyzQRSTUV".to_vec())])];
        let b = vec![Piece::Rep(4, vec![Piece::Lit(b"xyzxyzQRSTUV".to_vec())]), Piece::Lit(b"q".to_vec())];
        let c = vec![Piece::Lit(long.clone()), Piece::Rep(2, vec![Piece::Lit(b"xyzxyzQRSTUV".to_vec())])];
        let (dict, keys) = build_dictionary(&[&a, &b, &c]);
        assert_eq!(dict.len(), 2, "{dict:?}");
        let ka = &keys[std::str::from_utf8(&long).unwrap()];
        let kb = &keys["xyzxyzQRSTUV"];
        assert_eq!(render(&a, &keys), format!("<{ka}>(9*<{kb}>)"));
        assert_eq!(render(&b, &keys), format!("(4*<{kb}>)q"));
    }

    #[test]
    fn edge_lists_parse_with_threads_and_comments() {
        let t = parse_edge_list("# a comment\n1\n2\n# thread 3\n5\n0x10\n").unwrap();
        assert_eq!(
            t,
            vec![ThreadEdges { thread: 0, edges: vec![1, 2] }, ThreadEdges { thread: 3, edges: vec![5, 16] }]
        );
        assert!(parse_edge_list("1\nx\n").unwrap_err().to_string().contains("line 2"));
        assert!(parse_edge_list("# thread 1\n1\n# thread 1\n").is_err());
        assert_eq!(key_name(0), "A");
        assert_eq!(key_name(64), "AA");
    }
}
