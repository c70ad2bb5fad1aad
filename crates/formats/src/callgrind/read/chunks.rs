//! Reading a large Callgrind file in parts side by side.
//!
//! The body of a Callgrind file is a sequence of function bodies, each introduced by `fn=`. A
//! body depends on the lines before it only through:
//! - the current object and file (`ob=`, `fl=`), which stay in effect until changed;
//! - compressed names: `fn=(660)` refers to a name defined by `fn=(660) name` anywhere before;
//! - the previous line's positions, which relative positions (`+3`, `-2`, `*`) build on;
//! - the current part's headers (`events:`, `positions:`, `pid:`, `thread:`).
//!
//! So the file is cut before `fn=` lines whose next line gives every position in full (as
//! Valgrind writes the first line of every body). The first part is read by the main reader;
//! each later part by a reader of its own, which starts from the file's headers and stands in
//! placeholders ("forward" names) for what it cannot know: the object and file in effect at its
//! start and the names defined before it. When the main reader has read up to a cut, it joins
//! the next part's reader ([`Reader::absorb`]): it resolves the placeholders, interns the part's
//! names, images and functions in the order a single reader would have met them, and appends
//! the part's cost rows and associations. The profile is the one a single reader gives, index
//! for index.
//!
//! A part whose reading needed more than that is read again by the main reader where it stands,
//! which then reports any error at its line as a single reader does. That is the case for a part
//! that holds a header line (a new part of the profile), a `calls=` that relies on a `cfn=` before
//! the cut, any warning, any error, and for cuts where the main reader's state is not what the
//! part assumed (a different process, thread or events; a call, jump or `cob=` pending across
//! the cut; two objects of the part, besides the one at the cut, that turn out to be one and
//! both hold cost rows, whose rows would then not stay in file order).
//!
//! What it saves, measured against the same binary reading the same file from a pipe (one
//! stream), `scripts/bench-cores.sh` on a 16-core machine, wall seconds best / median of 7,
//! outputs identical: the 34 MB Valgrind profile of `clang++ -O2` (4 parts) converted to
//! Callgrind takes 0.71 / 0.75 s in parts and 0.70 / 0.73 s as one stream on 1 core, 0.57 / 0.65
//! against 0.60 / 0.62 on 2, 0.62 / 0.67 against 0.71 / 0.77 on 4, 0.64 / 0.72 against
//! 0.72 / 0.86 on 8 and 0.63 / 0.71 against 0.70 / 0.79 on 16: 10-17% from 4 cores on. The
//! 21 MB `cc1plus` profile (2 parts): 0.46 s both ways on 1 core, 0.38 against 0.40 on 2,
//! 0.38 against 0.45 on 4, 0.42 against 0.46 on 8 and 16. On an idle 2-core machine (medians
//! of 9 interleaved rounds, the same build with the parts turned off) the `cc1plus` profile
//! takes 0.62 s wall in parts against 0.66 s as one stream, at 0.78 s of processor time
//! against 0.72 s: under the project's 10% there, over it from 4 cores on, where it is kept
//! for (see docs/performance.md).

use std::collections::HashMap;

use rayon::prelude::*;

use super::{check_totals, read_into, Name, Pending, Reader, Table};
use cfghub_analysis::blocks::Transfer;
use cfghub_model::error::{Findings, Result};
use cfghub_model::ir::{Image, Meta};

/// A file is read in parts only from this size on: two parts of at least [`MIN_PART`].
pub(super) const MIN_PARALLEL: usize = 2 * MIN_PART;
/// Parts are at least this long. Joining a part costs the main reader time of its own, so more
/// parts than the file's size pays for make the read slower, not faster. The 21 MB Valgrind
/// profile of `cc1plus` converted to Callgrind on a 16-core Xeon (`taskset`, best of 12): in
/// parts of at least 2 MiB, 0.450 s on 1 core, 0.440 s on 2 and 0.478 s on 16 (10 parts,
/// slower than one core); in parts of at least 8 MiB, 0.442, 0.387 and 0.411 s (2 parts).
/// One thread reads the file as one stream whatever its size, so one core pays nothing for
/// the parts (figures in the module's comment).
pub(super) const MIN_PART: usize = 8 << 20;

/// Marks a name value (object, file or function) as a placeholder: its low bits index
/// [`Continuation::forwards`]. A reader's own tables never come near 2^31 names.
const FORWARD: u32 = 1 << 31;

/// Whether a name value of a part's reader is a placeholder.
pub(super) fn is_forward(value: u32) -> bool {
    value & FORWARD != 0 && value != u32::MAX
}

/// What a placeholder stands for.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Forward {
    /// The object (`ob=`) in effect at the start of the part.
    ObjectAtStart,
    /// The file (`fl=`) in effect at the start of the part.
    FileAtStart,
    /// A compressed object name `(id)` defined before the part.
    Object(u64),
    /// A compressed file name `(id)` defined before the part.
    File(u64),
    /// A compressed function name `(id)` defined before the part.
    Function(u64),
}

/// What the reader of a part (after the first) records for the join.
pub(in crate::callgrind) struct Continuation {
    forwards: Vec<Forward>,
    forward_ids: HashMap<Forward, u32>,
    /// Functions in the order the reader created them: image, symbol and function name value.
    symbols: Vec<(u32, u32, u32)>,
    /// `totals:` lines: costs stated, costs of the part's cost lines so far, line (counted from
    /// the start of the part).
    pub(super) totals: Vec<(Vec<u64>, Vec<u64>, u64)>,
    /// The headers in effect at the part's start, as the reader assumed them.
    assumed: PartState,
}

impl Continuation {
    /// The placeholder value for a name of `table` referred to by `id` but not defined in the
    /// part so far.
    pub(super) fn forward(&mut self, table: Table, id: u64) -> u32 {
        let f = match table {
            Table::Object => Forward::Object(id),
            Table::File => Forward::File(id),
            Table::Function => Forward::Function(id),
        };
        self.placeholder(f)
    }

    fn placeholder(&mut self, f: Forward) -> u32 {
        let next = FORWARD | self.forwards.len() as u32;
        *self.forward_ids.entry(f).or_insert_with(|| {
            self.forwards.push(f);
            next
        })
    }

    /// Records that symbol `symbol` of image `image`, named by function name value `name`, was
    /// created.
    pub(super) fn created(&mut self, image: u32, symbol: u32, name: u32) {
        self.symbols.push((image, symbol, name));
    }
}

/// The headers of a part that a reader needs to read its lines the same way.
#[derive(Clone, PartialEq, Eq)]
struct PartState {
    pid: Option<u64>,
    thread: u16,
    columns: Vec<super::Column>,
    event_map: Vec<usize>,
    events: Vec<String>,
    without_instr: bool,
}

impl Reader {
    fn part_state(&self) -> PartState {
        PartState {
            pid: self.pid,
            thread: self.thread,
            columns: self.columns.clone(),
            event_map: self.event_map.clone(),
            events: self.profile.events.iter().map(|e| e.name.clone()).collect(),
            without_instr: self.part_without_instr,
        }
    }
}

/// Reads `data` in `parts` parts side by side (fewer when the file has fewer places to cut),
/// up to [`Reader::end`]: the reader then holds nothing of `data`, which the caller may let go
/// of before the rest of the work.
pub(super) fn read_parts(data: &[u8], findings: &mut Findings, parts: usize) -> Result<Reader> {
    let headers = &data[..header_end(data)];
    let ncols = if parts > 1 { part_reader(headers).map(|r| r.columns.len()) } else { None };
    let cuts = match ncols {
        Some(ncols) => cut_points(data, headers.len(), ncols, parts),
        None => vec![0, data.len()],
    };
    read_at_cuts(data, headers, &cuts, findings).map(|(reader, _)| reader)
}

/// Reads `data` in the parts between `cuts` (0, the cuts, the length), each part after the first
/// with a reader of its own that starts from the file's `headers`, up to [`Reader::end`]; also
/// says how many parts were joined rather than read again.
fn read_at_cuts(
    data: &[u8],
    headers: &[u8],
    cuts: &[usize],
    findings: &mut Findings,
) -> Result<(Reader, usize)> {
    let mut main = Reader { input_size: data.len() as u64, ..Reader::default() };
    if cuts.len() <= 2 {
        read_into(&mut main, &mut &data[..], findings)?;
        return Ok((main, 0));
    }
    let ranges: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    let (first, mut rest) = rayon::join(
        || read_into(&mut main, &mut &data[..ranges[0].1], findings),
        || {
            ranges[1..]
                .par_iter()
                .map(|&(start, end)| read_part(headers, &data[start..end]))
                .collect::<Vec<Option<Reader>>>()
        },
    );
    first?;
    let mut joined = 0;
    for (k, &(start, end)) in ranges.iter().enumerate().skip(1) {
        if rest[k - 1].take().is_some_and(|part| main.absorb(part, findings)) {
            joined += 1;
        } else {
            read_into(&mut main, &mut &data[start..end], findings)?;
        }
        main.consumed = end as u64;
    }
    Ok((main, joined))
}

/// Where the headers at the top of the file end: the first line that is not a header
/// (`key: value`), a comment or blank.
fn header_end(data: &[u8]) -> usize {
    let mut at = 0;
    while at < data.len() {
        let end = memchr::memchr(b'\n', &data[at..]).map_or(data.len(), |n| at + n + 1);
        let line = &data[at..end];
        let key = line.iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        let header = line.get(key) == Some(&b':') && key > 0;
        let blank = line.iter().all(|b| b.is_ascii_whitespace());
        if !(header || blank || line[0] == b'#') {
            break;
        }
        at = end;
    }
    at
}

/// A reader for parts after the first: the file's headers read, placeholders for the object
/// and file in effect. `None` when the headers do not read.
fn part_reader(headers: &[u8]) -> Option<Reader> {
    let mut r = Reader::default();
    read_into(&mut r, &mut &headers[..], &mut Findings::default()).ok()?;
    if r.columns.is_empty() || r.event_map.is_empty() {
        return None;
    }
    r.profile.meta = Meta::default();
    r.line_no = 0;
    let mut cont = Continuation {
        forwards: Vec::new(),
        forward_ids: HashMap::new(),
        symbols: Vec::new(),
        totals: Vec::new(),
        assumed: r.part_state(),
    };
    r.ob = Some(cont.placeholder(Forward::ObjectAtStart));
    r.fl = Some(cont.placeholder(Forward::FileAtStart));
    r.file = r.fl;
    r.cont = Some(Box::new(cont));
    Some(r)
}

/// Reads one part after the first, `data`, with a reader of its own that starts from the
/// file's `headers` (a few lines, read again for each part): `None` when the part must be read
/// again by the main reader.
fn read_part(headers: &[u8], data: &[u8]) -> Option<Reader> {
    let mut r = part_reader(headers)?;
    r.input_size = data.len() as u64;
    let mut findings = Findings::default();
    read_into(&mut r, &mut &data[..], &mut findings).ok()?;
    let quiet = findings.warnings().next().is_none() && !findings.has_violations();
    quiet.then_some(r)
}

/// Where to cut `data` into `parts` parts: offsets of `fn=` lines past the headers (at `head`)
/// and past the first `fn=`, whose next line is a cost line giving all `ncols` positions in
/// full. Starts with 0 and ends with the length.
fn cut_points(data: &[u8], head: usize, ncols: usize, parts: usize) -> Vec<usize> {
    let finder = memchr::memmem::Finder::new(b"\nfn=");
    let first_fn = finder.find(&data[head.saturating_sub(1)..]).map_or(data.len(), |n| head + n);
    let mut cuts = vec![0];
    for k in 1..parts {
        let mut from = (data.len() / parts * k).max(first_fn + 1);
        while let Some(n) = finder.find(&data[from.min(data.len())..]) {
            let at = from + n + 1;
            from = at;
            if at > *cuts.last().unwrap_or(&0) && body_starts_in_full(&data[at..], ncols) {
                cuts.push(at);
                break;
            }
        }
    }
    cuts.push(data.len());
    cuts.dedup();
    cuts
}

/// Whether the line after the `fn=` line at the start of `text` is a cost line whose first
/// `ncols` positions are all absolute (no `+`, `-` or `*`).
fn body_starts_in_full(text: &[u8], ncols: usize) -> bool {
    let Some(nl) = memchr::memchr(b'\n', text) else { return false };
    let next = &text[nl + 1..];
    let line = &next[..memchr::memchr(b'\n', next).unwrap_or(next.len())];
    let mut tokens = line.split(|&b| b == b' ' || b == b'\t').filter(|t| !t.is_empty());
    (0..ncols).all(|_| tokens.next().is_some_and(|t| t[0].is_ascii_digit()))
}

/// How the values of a part's reader read in the joining reader's tables: what each
/// placeholder stands for, and where each name the part interned went.
struct PartNames {
    /// The value of each placeholder, by its index in [`Continuation::forwards`].
    resolved: Vec<u32>,
    /// The part's object and file names, as the joining reader interned them.
    files: Vec<u32>,
    /// The part's function names, as the joining reader interned them.
    functions: Vec<u32>,
}

impl PartNames {
    /// A function name value of the part.
    fn name(&self, v: u32) -> u32 {
        if is_forward(v) {
            self.resolved[(v & !FORWARD) as usize]
        } else {
            self.functions[v as usize]
        }
    }

    /// An object or file value of the part; `u32::MAX` (the empty name, as id tables hold it)
    /// stays so.
    fn file(&self, v: Name) -> Name {
        let f = match v? {
            u32::MAX => u32::MAX,
            v if is_forward(v) => self.resolved[(v & !FORWARD) as usize],
            v => self.files[v as usize],
        };
        (f != u32::MAX).then_some(f)
    }
}

/// Where the part's images and symbols went in the joining reader: `images[i]` is the image
/// the part's image `i` became, `symbols[i][s]` the symbol its symbol `s` became.
struct PartPlaces {
    images: Vec<u32>,
    symbols: Vec<Vec<u32>>,
}

impl Reader {
    /// Joins `part`, the reader of the lines that follow this reader's: afterwards this reader
    /// is as if it had read those lines itself. `false`, with nothing changed, when the part
    /// cannot be joined and must be read again.
    fn absorb(&mut self, mut part: Reader, findings: &mut Findings) -> bool {
        let Some(cont) = part.cont.take() else { return false };
        let Some(p) = self.process else { return false };
        let Some(resolved) = self.resolve_placeholders(&part, &cont) else { return false };
        // From here on the join cannot fail. Names first, in the order the part met them.
        let names = PartNames {
            resolved,
            files: part.profile.files.iter().map(|(_, t)| self.profile.files.intern(t)).collect(),
            functions: part.fn_names.iter().map(|(_, t)| self.fn_names.intern(t)).collect(),
        };
        let places = self.append_part(p, &mut part, &cont, &names);
        self.add_part_checks(&part, cont.totals, findings);
        self.take_state_at_end(part, &names, &places);
        true
    }

    /// What the placeholders of `part` stand for, from this reader's state at the cut; `None`
    /// when the part cannot be joined: it reads more than one process, something is pending
    /// across the cut (a call or jump, a `cob=`/`cfi=`/`jfi=`/`jfn=`, a name used before its
    /// definition), the part assumed other headers, a placeholder names something this reader
    /// does not know, or two of the part's objects with cost rows turn out to be one.
    fn resolve_placeholders(&self, part: &Reader, cont: &Continuation) -> Option<Vec<u32>> {
        let single_process = part.profile.processes.len() <= 1 && part.states.len() <= 1;
        let nothing_pending = self.pending.is_none()
            && self.cob.is_none()
            && self.cfi.is_none()
            && self.jfi.is_none()
            && self.jfn.is_none();
        // A name used before its definition is renamed when the definition comes: only where
        // this reader meets that definition itself.
        let no_forward_names = self.forwards.iter().all(|f| f.defined);
        if !single_process || !nothing_pending || !no_forward_names || self.part_state() != cont.assumed {
            return None;
        }
        let resolved = cont
            .forwards
            .iter()
            .map(|f| match *f {
                Forward::ObjectAtStart => Some(self.ob.unwrap_or(u32::MAX)),
                Forward::FileAtStart => Some(self.fl.unwrap_or(u32::MAX)),
                Forward::Object(id) => self.objects.get(id),
                Forward::File(id) => self.files.get(id),
                Forward::Function(id) => self.functions.get(id),
            })
            .collect::<Option<Vec<u32>>>()?;
        // Placeholders may name an object the part also names otherwise (the object at the cut
        // and a later `ob=(2)`): such images become one, their cost rows one after the other.
        // That is file order for the rows of the object at the cut, which come before any
        // `ob=` line of the part; of the others, at most one may hold rows.
        let part_images = part.profile.processes.first().map_or(&[][..], |pr| &pr.images[..]);
        let at_cut = cont.forward_ids.get(&Forward::ObjectAtStart).copied();
        let mut with_rows = std::collections::HashSet::new();
        for image in part_images.iter().filter(|i| !i.costs.is_empty() && i.file != at_cut) {
            let key = match image.file {
                None => (0, 0),
                Some(v) if is_forward(v) => match resolved[(v & !FORWARD) as usize] {
                    u32::MAX => (0, 0),
                    f => (1, f),
                },
                Some(v) => match self.profile.files.lookup(part.profile.files.get(v)) {
                    Some(f) => (1, f),
                    None => (2, v),
                },
            };
            if !with_rows.insert(key) {
                return None;
            }
        }
        Some(resolved)
    }

    /// Takes the images, functions, cost rows and associations of `part` into process `p`,
    /// after this reader's own; where they went.
    fn append_part(
        &mut self,
        p: usize,
        part: &mut Reader,
        cont: &Continuation,
        names: &PartNames,
    ) -> PartPlaces {
        let mut part_process = part.profile.processes.pop();
        let part_state = part.states.pop();
        let images = part_process.as_mut().map(|pr| std::mem::take(&mut pr.images)).unwrap_or_default();
        let image_map: Vec<u32> = images.iter().map(|i| self.image_of(names.file(i.file))).collect();
        let mut symbol_map: Vec<Vec<u32>> = images.iter().map(|i| vec![0; i.symbols.len()]).collect();
        for &(image, symbol, fn_name) in &cont.symbols {
            let s = &images[image as usize].symbols[symbol as usize];
            symbol_map[image as usize][symbol as usize] =
                self.symbol_of(image_map[image as usize], names.name(fn_name), names.file(s.file));
        }
        // Cost rows, the object at the cut's first (see [`Reader::resolve_placeholders`]).
        let at_cut = cont.forward_ids.get(&Forward::ObjectAtStart).copied();
        let mut order: Vec<(usize, Image)> = images.into_iter().enumerate().collect();
        order.sort_by_key(|(_, image)| image.file != at_cut);
        for (k, image) in order {
            let costs = &mut self.profile.processes[p].images[image_map[k] as usize].costs;
            let symbols = &symbol_map[k];
            costs.append_mapped(image.costs, |s| symbols[s as usize], |f| names.file(Some(f)));
        }
        if let Some(mut state) = part_state {
            let own = &mut self.states[p];
            let base = own.inclusive.len();
            own.inclusive.extend_from_slice(&state.inclusive);
            own.arcs.reserve(state.arcs.len());
            for a in state.arcs.drain(..) {
                own.arcs.push(Transfer {
                    src_image: image_map[a.src_image as usize],
                    src_symbol: symbol_map[a.src_image as usize][a.src_symbol as usize],
                    tgt_image: image_map[a.tgt_image as usize],
                    tgt_symbol: symbol_map[a.tgt_image as usize][a.tgt_symbol as usize],
                    detail: if a.kind.is_call() { a.detail + base as u64 } else { a.detail },
                    ..a
                });
            }
        }
        PartPlaces { images: image_map, symbols: symbol_map }
    }

    /// The part's `totals:` checks (`totals` as the part recorded them) and its warning
    /// counts, with its lines counted from the cut.
    fn add_part_checks(
        &mut self,
        part: &Reader,
        totals: Vec<(Vec<u64>, Vec<u64>, u64)>,
        findings: &mut Findings,
    ) {
        let lines_before = self.line_no;
        for (stated, partial, line) in totals {
            let computed = self.part_totals.iter().zip(&partial).map(|(a, b)| a.wrapping_add(*b)).collect();
            check_totals(stated, computed, lines_before + line, findings);
        }
        for (t, add) in self.part_totals.iter_mut().zip(&part.part_totals) {
            *t = t.wrapping_add(*add);
        }
        if part.star_costs > 0 {
            if self.star_costs == 0 {
                self.star_line = lines_before + part.star_line;
            }
            self.star_costs += part.star_costs;
        }
        if part.jcnd_over > 0 {
            if self.jcnd_over == 0 {
                self.jcnd_over_line = lines_before + part.jcnd_over_line;
            }
            self.jcnd_over += part.jcnd_over;
        }
    }

    /// The state at the end of the part, for the next part or the end of the file: the ids it
    /// defined, its positions, the names in effect and what is pending.
    fn take_state_at_end(&mut self, part: Reader, names: &PartNames, places: &PartPlaces) {
        for (id, v) in part.objects.entries() {
            self.objects.set(id, names.file(Some(v)).unwrap_or(u32::MAX));
        }
        for (id, v) in part.files.entries() {
            self.files.set(id, names.file(Some(v)).unwrap_or(u32::MAX));
        }
        for (id, v) in part.functions.entries() {
            self.functions.set(id, names.name(v));
        }
        let lines_before = self.line_no;
        let (images, symbols) = (&places.images, &places.symbols);
        self.line_no = lines_before + part.line_no;
        self.last = part.last;
        self.ob = names.file(part.ob);
        self.fl = names.file(part.fl);
        self.file = names.file(part.file);
        self.cob = part.cob.map(|v| names.file(v));
        self.cfi = part.cfi.map(|v| names.file(v));
        self.jfi = part.jfi.map(|v| names.file(v));
        self.cfn = part.cfn.map(|v| names.name(v));
        self.jfn = part.jfn.map(|v| names.name(v));
        self.image = part.image.map(|i| images[i as usize]);
        self.symbol = match (part.image, part.symbol) {
            (Some(i), Some(s)) => Some(symbols[i as usize][s as usize]),
            _ => None,
        };
        self.pending = part.pending.map(|q| Pending {
            target_image: images[q.target_image as usize],
            target_symbol: symbols[q.target_image as usize][q.target_symbol as usize],
            line_no: lines_before + q.line_no,
            ..q
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::Profile;

    /// Bodies whose reading depends on what came before a cut in every way the format allows:
    /// objects and files in effect, compressed names defined before and used after (`ob=`,
    /// `fl=`, `fi=`/`fe=`, `fn=`, `cob=`/`cfi=`/`cfn=`, `jfi=`/`jfn=`), an object left and come
    /// back to, recursion levels, a `jcnd=` followed more often than executed and a `totals:`
    /// line that disagrees with the cost lines (both warnings name lines after the cuts).
    const TANGLED: &str = "# callgrind format\nversion: 1\ncreator: test\npid: 42\ncmd: ./a\npart: 1\n\n\
        positions: instr line\nevents: Ir Dr\nsummary: 1000\n\n\
        ob=(1) /bin/a\nfl=(1) a.c\nfn=(1) main\n0x10 3 5 1\n+2 * 2\ncob=(2) /lib/libc.so\ncfi=(2) libc.c\n\
        cfn=(2) malloc\ncalls=3 0x900 10\n* * 30 3\n+1 4 1\njump=2 +4 *\n* * 1\n\
        fn=(3) helper\n0x40 7 4\n+1 +1 2 1\njcnd=1/3 -1 *\n* * 1\njcnd=5/2 0x40 7\n+1 0 1\n\
        fl=(3) b.c\nfn=(4) other\n0x60 1 3\ncfn=(3)\ncalls=1 0x40 7\n+1 1 1 0\n\
        ob=(2)\nfl=(2)\nfn=(2)\n0x900 10 20 2\n+1 * 10 1\n\
        ob=(1)\nfl=(1)\nfn=(1)\n0x30 8 7\nfi=(4) inl.h\n+1 2 1\nfe=(1)\n+1 9 1\n\
        fn=(3)\n0x50 2 2\njfi=(3)\njfn=(4)\njump=1 0x60 1\n* * 1\n\
        fn=(5) fib\n0x70 1 1\ncob=(2)\ncfn=(2)\ncalls=1 0x900 10\n* * 10 1\n\
        fn=(6) fib'2\n0x70 1 1\nob=(5) /lib/other.so\nfn=(7) far\n0x5 1 1\nob=(2)\nfn=(2)\n0x904 11 1\n\
        totals: 90 6\n";

    /// A read's profile or error message, and its findings.
    type Outcome = (std::result::Result<Profile, String>, String);

    fn sequential(data: &[u8]) -> Outcome {
        let mut findings = Findings::default();
        let r =
            super::super::read(&mut cfghub_model::io::Source::new(data), &Default::default(), &mut findings);
        outcome(r, findings)
    }

    fn outcome(r: Result<Profile>, findings: Findings) -> Outcome {
        match r {
            Ok(p) => (Ok(p), format!("{findings:?}")),
            Err(e) => (Err(e.to_string()), String::new()),
        }
    }

    /// Reads `data` cut at `cuts`: what it gives, and how many parts were joined.
    fn cut(data: &[u8], cuts: &[usize]) -> (Outcome, usize) {
        let headers = &data[..header_end(data)];
        let mut all = vec![0];
        all.extend_from_slice(cuts);
        all.push(data.len());
        let mut findings = Findings::default();
        match read_at_cuts(data, headers, &all, &mut findings)
            .and_then(|(r, joined)| Ok((r.end(&mut findings)?, joined)))
        {
            Ok((p, joined)) => (outcome(Ok(p), findings), joined),
            Err(e) => (outcome(Err(e), findings), 0),
        }
    }

    /// Every place [`cut_points`] may cut: the `fn=` lines after the first whose body starts
    /// with every position in full.
    fn cut_places(data: &[u8]) -> Vec<usize> {
        let head = header_end(data);
        let ncols = part_reader(&data[..head]).map_or(0, |t| t.columns.len());
        let mut places = Vec::new();
        let mut at = 0;
        let mut seen_fn = false;
        for line in data.split_inclusive(|&b| b == b'\n') {
            if line.starts_with(b"fn=") && at >= head {
                if seen_fn && body_starts_in_full(&data[at..], ncols) {
                    places.push(at);
                }
                seen_fn = true;
            }
            at += line.len();
        }
        places
    }

    /// Reads `data` cut at each place alone, at every place at once and at every pair of
    /// neighbouring places, and checks each gives what a single reader gives. The number of
    /// parts joined rather than read again.
    fn check_every_cut(name: &str, data: &[u8]) -> usize {
        let expected = sequential(data);
        let places = cut_places(data);
        let mut joined = 0;
        let mut sets: Vec<Vec<usize>> = places.iter().map(|&p| vec![p]).collect();
        sets.extend(places.windows(2).map(|w| w.to_vec()));
        sets.push(places.clone());
        for cuts in sets {
            let (got, j) = cut(data, &cuts);
            assert!(got.0 == expected.0, "{name} cut at {cuts:?}: profile\n{:?}\n{:?}", got.0, expected.0);
            assert_eq!(got.1, expected.1, "{name} cut at {cuts:?}: findings");
            joined += j;
        }
        joined
    }

    #[test]
    fn every_cut_of_a_tangled_file_reads_as_one_reader_reads_it() {
        let data = TANGLED.as_bytes();
        let places = cut_places(data);
        assert!(places.len() >= 8, "{places:?}");
        let joined = check_every_cut("tangled", data);
        // Every cut but those the part cannot stand on its own after is joined, not read again.
        assert!(joined >= places.len() * 2, "joined {joined} of the parts cut at {places:?}");
        let (seq, findings) = sequential(data);
        let seq = format!("{:?}", seq.expect("the file reads"));
        assert!(seq.contains("fib'2") && seq.contains("other.so"), "{seq}");
        assert!(findings.contains("totals") && findings.contains("jcnd"), "{findings}");
    }

    #[test]
    fn every_cut_of_a_valgrind_profile_reads_as_one_reader_reads_it() {
        let path =
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/callgrind/callgrind.out.recursion-loops");
        let data = std::fs::read(path).unwrap();
        assert!(check_every_cut("recursion-loops", &data) > 0, "parts of a valgrind profile are joined");
    }

    #[test]
    fn every_cut_of_the_shared_callgrind_files_reads_as_one_reader_reads_it() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/fixtures/callgrind");
        let Ok(entries) = std::fs::read_dir(dir) else {
            eprintln!("skipped: {dir} is absent");
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            check_every_cut(&path.display().to_string(), &data);
        }
    }

    /// Parts that cannot stand on their own are read again where they stand, with the same
    /// result: a new part of the profile (headers) after a cut, a `calls=` whose `cfn=` came
    /// before the cut, a second process, and a bad line after a cut (same message, same line).
    #[test]
    fn parts_that_need_what_came_before_are_read_again() {
        let head = "events: Ir\npositions: instr line\nob=a\nfl=a.c\nfn=main\n0x10 1 1\n";
        let cases = [
            format!("{head}fn=f\n0x20 1 1\npart: 2\nevents: Ir\nfn=g\n0x30 1 1\nfn=h\n0x40 1 1\n"),
            format!("{head}cfn=callee\nfn=f\n0x20 1 1\ncalls=1 0x30 1\n+1 1 1\nfn=g\n0x30 1 1\n"),
            format!("{head}fn=f\n0x20 1 1\npid: 7\nfn=g\n0x30 1 1\nfn=h\n0x40 1 1\n"),
            format!("{head}fn=f\n0x20 1 1\nfn=g\n0x30 1 1\n+1 1 x\nfn=h\n0x40 1 1\n"),
            format!("{head}fn=f\n0x20 1 1\ncalls=1 0x30 1\nfn=g\n0x30 1 1\n"),
        ];
        for (k, text) in cases.iter().enumerate() {
            check_every_cut(&format!("case {k}"), text.as_bytes());
        }
        let (bad, _) = cut(cases[3].as_bytes(), &cut_places(cases[3].as_bytes()));
        let message = bad.0.expect_err("a bad line");
        assert!(message.contains("line 11") && message.contains("expected a number"), "{message}");
    }

    /// A large file is cut where the parts are about even, only before bodies that start with
    /// every position in full, and never inside the headers.
    #[test]
    fn cut_points_fall_before_full_bodies() {
        let mut text = String::from("events: Ir\npositions: instr line\nfl=a.c\n");
        for k in 0..4000 {
            text.push_str(&format!("fn=f{k}\n0x{:x} 1 1\n+1 * 2\n", 16 * k));
            if k % 3 == 0 {
                text.push_str(&format!("fn=g{k}\n+1 1 1\n"));
            }
        }
        let data = text.as_bytes();
        let cuts = cut_points(data, header_end(data), 2, 4);
        assert_eq!((cuts.len(), cuts[0], cuts[4]), (5, 0, data.len()));
        for w in cuts.windows(2) {
            assert!(w[1] - w[0] > data.len() / 8, "even parts: {cuts:?}");
        }
        for &c in &cuts[1..4] {
            assert!(data[c..].starts_with(b"fn=f") && data[c - 1] == b'\n', "at {c}");
        }
        let (got, joined) = cut(data, &cuts[1..4]);
        assert!(got == sequential(data));
        assert_eq!(joined, 3);
    }

    /// A file large enough to be read in parts, loaded from disk (mapped, cut, read side by
    /// side where there are threads to spare) gives what reading it as a stream gives.
    #[test]
    fn a_large_file_on_disk_reads_as_a_stream_does() {
        let mut text = String::from("events: Ir\npositions: instr line\nob=(1) /bin/a\n");
        let mut k = 0u64;
        while text.len() < MIN_PARALLEL + (1 << 20) {
            let (ob, prev) = (if k.is_multiple_of(7) { 2 } else { 1 }, k.saturating_sub(5));
            text.push_str(&format!(
                "ob=({ob}){}\nfl=({k}) f{k}.c\nfn=({k}) f{k}\n0x{:x} 1 3\n+1 * 2\n+2 2 1\ncfn=({prev})\n\
                 calls=1 0x{:x} 1\n+1 * 4\njcnd=1/2 -3 *\n+1 3 1\nfl=({prev})\nfn=({prev})\n0x{:x} 9 1\n",
                if k == 0 { " /lib/b.so" } else { "" },
                64 * k,
                64 * prev,
                64 * prev + 8
            ));
            k += 1;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("callgrind.out.large");
        std::fs::write(&path, &text).unwrap();
        let input = cfghub_model::io::Input::open(path.to_str().unwrap()).unwrap();
        let mut loaded_findings = Findings::default();
        let loaded = crate::callgrind::FORMAT
            .read_source(&mut input.source(), &Default::default(), &mut loaded_findings)
            .unwrap();
        let (streamed, findings) = sequential(text.as_bytes());
        assert!(Ok(loaded) == streamed);
        assert_eq!(format!("{loaded_findings:?}"), findings);
        let mut findings = Findings::default();
        let parted = read_parts(text.as_bytes(), &mut findings, 2).and_then(|r| r.end(&mut findings));
        assert!(Ok(parted.unwrap()) == streamed);
        // Cut in four, every part is joined.
        let data = text.as_bytes();
        let cuts = cut_points(data, header_end(data), 2, 4);
        let (got, joined) = cut(data, &cuts[1..cuts.len() - 1]);
        assert!(got.0 == streamed);
        assert_eq!(joined, 3);
    }
}
