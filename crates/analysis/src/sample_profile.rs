//! LLVM sample profiles (AutoFDO) as LLVM holds them (`FunctionSamples`): per function, its
//! samples per (line offset, discriminator) with the calls made there, and the functions
//! inlined at each call site with their own samples. The llvm-sample writer builds one, its
//! reader reads one, and `cfghub overlap --sample` compares two with [`overlap`], LLVM's
//! `llvm-profdata overlap --sample` measure.

use std::collections::{BTreeMap, HashMap};

/// A place in a function: (line offset from the function's first line, or probe id;
/// discriminator).
pub type Location = (u32, u32);

/// The samples of one function, or of one function inlined at one call site.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionSamples {
    /// TOTAL: the samples of the function's code, its inlined callees' included.
    pub total: u64,
    /// HEAD: the calls into it (top-level functions only).
    pub head: u64,
    /// Its context's attributes (`!Attributes`, LLVM's `ContextAttributeMask`); an inlined
    /// callee marked [`DUPLICATED_INTO_BASE`] is left out of the profile summary.
    pub attributes: u32,
    /// By location: the count and the calls to each callee.
    pub body: BTreeMap<Location, (u64, BTreeMap<String, u64>)>,
    /// By location: the functions inlined there, by name.
    pub inlined: BTreeMap<Location, BTreeMap<String, FunctionSamples>>,
}

/// LLVM's `ContextDuplicatedIntoBase`: an inlined callee whose samples its own profile holds
/// too (a nested context-sensitive profile), not counted twice by the summary.
pub const DUPLICATED_INTO_BASE: u32 = 0x4;

impl FunctionSamples {
    /// Calls `f` with the count of every body line, its inlined callees' included (depth first,
    /// as LLVM's summary walks them), but those [`DUPLICATED_INTO_BASE`].
    pub fn for_each_count(&self, f: &mut impl FnMut(u64)) {
        for (count, _) in self.body.values() {
            f(*count);
        }
        for callees in self.inlined.values() {
            for callee in callees.values().filter(|c| c.attributes & DUPLICATED_INTO_BASE == 0) {
                callee.for_each_count(f);
            }
        }
    }
}

/// A whole sample profile: its top-level functions by name (a context-sensitive profile's
/// names are its contexts, `[main:3 @ foo]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampleProfile {
    /// The top-level functions.
    pub functions: HashMap<String, FunctionSamples>,
    /// Whether its functions carry `!CFGChecksum` metadata (probe-based, CSSPGO).
    pub probe_based: bool,
    /// Whether its names are calling contexts (`[main:3 @ foo]`).
    pub context_sensitive: bool,
}

/// The percentile of LLVM's hot count threshold (`-profile-summary-cutoff-hot`), in millionths.
pub const HOT_CUTOFF: u64 = 990_000;

impl SampleProfile {
    /// LLVM's hot count threshold (`ProfileSummaryBuilder::getHotCountThreshold`): the counts
    /// of every body line (inlined callees' included), largest first, are taken until they add
    /// up to [`HOT_CUTOFF`] of their sum; the last count taken. A context-sensitive profile's
    /// contexts are first merged by their leaf function, as LLVM's summary merges them.
    pub fn hot_threshold(&self) -> u64 {
        let mut counts: Vec<u64> = Vec::new();
        let mut add = |count: u64| counts.push(count);
        if self.context_sensitive {
            for f in flattened(self).values() {
                f.for_each_count(&mut add);
            }
        } else {
            for f in self.functions.values() {
                f.for_each_count(&mut add);
            }
        }
        hot_count_threshold(counts)
    }
}

/// LLVM's hot count threshold of any counts (`ProfileSummaryBuilder`'s detailed summary at
/// [`HOT_CUTOFF`]): the counts, largest first, are taken until they add up to that share of
/// their sum; the last count taken (0 when there is nothing to take).
pub fn hot_count_threshold(mut counts: Vec<u64>) -> u64 {
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let total: u128 = counts.iter().map(|&c| u128::from(c)).sum();
    let desired = total * u128::from(HOT_CUTOFF) / 1_000_000;
    // Equal counts are taken together, as LLVM takes each count with its frequency.
    let (mut sum, mut count, mut i) = (0u128, 0u64, 0usize);
    while sum < desired && i < counts.len() {
        count = counts[i];
        while i < counts.len() && counts[i] == count {
            sum += u128::from(count);
            i += 1;
        }
    }
    count
}

/// The leaf function of a context (`[main:3 @ foo]` -> `foo`), or the name itself.
fn leaf_of(name: &str) -> &str {
    let inner = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')).unwrap_or(name);
    inner.rsplit(" @ ").next().unwrap_or(inner)
}

/// A context-sensitive profile's functions merged by leaf function: body counts added per
/// location, inlined callees kept under their sites.
fn flattened(profile: &SampleProfile) -> HashMap<&str, FunctionSamples> {
    fn merge(into: &mut FunctionSamples, from: &FunctionSamples) {
        if into.body.is_empty() && into.inlined.is_empty() {
            into.attributes = from.attributes;
        }
        for (at, (count, _)) in &from.body {
            let e = into.body.entry(*at).or_default();
            e.0 = e.0.saturating_add(*count);
        }
        for (at, callees) in &from.inlined {
            for (name, callee) in callees {
                merge(into.inlined.entry(*at).or_default().entry(name.clone()).or_default(), callee);
            }
        }
    }
    let mut flat: HashMap<&str, FunctionSamples> = HashMap::new();
    for (name, f) in &profile.functions {
        merge(flat.entry(leaf_of(name)).or_default(), f);
    }
    flat
}

/// Counts of one measure in two profiles and their overlap (LLVM's `SampleOverlapStats`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Stats {
    /// Units (functions, hot functions, hot blocks) in both.
    pub overlap_count: u64,
    /// Units in the base only.
    pub base_unique_count: u64,
    /// Units in the test only.
    pub test_unique_count: u64,
    /// Units in the base.
    pub base_count: u64,
    /// Units in the test.
    pub test_count: u64,
    /// Units in either.
    pub union_count: u64,
}

/// One function's overlap, as `llvm-profdata overlap --sample`'s function-level details show it.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FunctionOverlap {
    /// The function (its context in a context-sensitive profile).
    pub name: String,
    /// Its share of the base's samples.
    pub base_weight: f64,
    /// Its share of the test's samples.
    pub test_weight: f64,
    /// Its similarity, weighted by how far its two weights are apart.
    pub similarity: f64,
    /// Samples both have over samples either has.
    pub overlap: f64,
    /// Share of its base samples on lines the test lacks.
    pub base_unique: f64,
    /// Share of its test samples on lines the base lacks.
    pub test_unique: f64,
    /// Its samples in the base (body lines, inlined callees' included).
    pub base_samples: u64,
    /// Its samples in the test.
    pub test_samples: u64,
}

/// LLVM's overlap of two sample profiles (`llvm-profdata overlap --sample`); fractions in
/// [0, 1] at full precision.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Overlap {
    /// Whole program profile similarity.
    pub similarity: f64,
    /// Whole program sample overlap: samples both have over samples either has.
    pub sample_overlap: f64,
    /// Percentage of samples unique in the base, as a fraction.
    pub base_unique: f64,
    /// Percentage of samples unique in the test, as a fraction.
    pub test_unique: f64,
    /// Total samples in the base (body lines, inlined callees' included).
    pub base_samples: u64,
    /// Total samples in the test.
    pub test_samples: u64,
    /// Function overlap: functions in both over functions in either.
    pub function_overlap: f64,
    /// Functions.
    pub functions: Stats,
    /// Hot-function overlap.
    pub hot_function_overlap: f64,
    /// Hot functions: those whose largest line count reaches the profile's hot threshold.
    pub hot_functions: Stats,
    /// Hot-block overlap.
    pub hot_block_overlap: f64,
    /// Hot blocks (body lines whose count reaches the hot threshold).
    pub hot_blocks: Stats,
    /// The hot count thresholds of the base and the test.
    pub hot_thresholds: [u64; 2],
    /// Function-level details of the functions [`Filter`] picks, the heaviest in the base
    /// first.
    pub details: Vec<FunctionOverlap>,
}

/// Which functions the details list (`--value-cutoff`, `--similarity-cutoff`, `--function`).
#[derive(Clone, Debug)]
pub struct Filter {
    /// Functions whose largest line count in the test reaches this.
    pub value_cutoff: u64,
    /// Matched functions whose similarity is below this.
    pub similarity_cutoff: f64,
    /// Matched functions whose name contains this.
    pub name: Option<String>,
}

impl Default for Filter {
    /// llvm-profdata's defaults: every function with a count (value cutoff -1, as unsigned),
    /// similarity cutoff 0.
    fn default() -> Self {
        Filter { value_cutoff: u64::MAX, similarity_cutoff: 0.0, name: None }
    }
}

/// LLVM's epsilon for rounding accumulated similarities (`overlapSampleProfile`).
const EPSILON: f64 = 0.000005;

/// A function's sum of counts, largest count and hot lines (LLVM's `FuncSampleStats`).
#[derive(Clone, Copy, Default)]
struct FuncStats {
    sum: u64,
    max: u64,
    hot_blocks: u64,
}

fn func_stats(f: &FunctionSamples, hot: u64, stats: &mut FuncStats) {
    for (count, _) in f.body.values() {
        stats.sum = stats.sum.wrapping_add(*count);
        stats.max = stats.max.max(*count);
        stats.hot_blocks += u64::from(*count >= hot);
    }
    for callees in f.inlined.values() {
        for callee in callees.values() {
            func_stats(callee, hot, stats);
        }
    }
}

/// Per-function accumulators (LLVM's function-level `SampleOverlapStats`).
#[derive(Default)]
struct FuncOverlap {
    base_sample: u64,
    test_sample: u64,
    overlap_sample: u64,
    union_sample: u64,
    base_unique_sample: u64,
    test_unique_sample: u64,
}

#[derive(Clone, Copy, PartialEq)]
enum Match {
    Both,
    First,
    Second,
}

/// Walks two sorted maps side by side, as LLVM's `MatchStep` does.
fn merge_join<'a, K: Ord, V>(
    a: &'a BTreeMap<K, V>,
    b: &'a BTreeMap<K, V>,
    mut f: impl FnMut(Match, Option<&'a V>, Option<&'a V>),
) {
    let (mut x, mut y) = (a.iter().peekable(), b.iter().peekable());
    loop {
        match (x.peek(), y.peek()) {
            (None, None) => break,
            (Some(_), None) => f(Match::First, x.next().map(|e| e.1), None),
            (None, Some(_)) => f(Match::Second, None, y.next().map(|e| e.1)),
            (Some(p), Some(q)) => match p.0.cmp(q.0) {
                std::cmp::Ordering::Less => f(Match::First, x.next().map(|e| e.1), None),
                std::cmp::Ordering::Greater => f(Match::Second, None, y.next().map(|e| e.1)),
                std::cmp::Ordering::Equal => f(Match::Both, x.next().map(|e| e.1), y.next().map(|e| e.1)),
            },
        }
    }
}

struct Aggregator {
    thresholds: [u64; 2],
    hot_blocks: Stats,
    base_total: u64,
    test_total: u64,
}

impl Aggregator {
    fn hot_block(&mut self, base: u64, test: u64, blocks: u64) {
        let (b, t) = (base >= self.thresholds[0], test >= self.thresholds[1]);
        if !b && !t {
            return;
        }
        let h = &mut self.hot_blocks;
        h.union_count += blocks;
        h.base_count += if b { blocks } else { 0 };
        h.test_count += if t { blocks } else { 0 };
        h.overlap_count += if b && t { blocks } else { 0 };
    }

    fn block_similarity(base: u64, test: u64, o: &FuncOverlap) -> f64 {
        let frac = |s: u64, t: u64| if t > 0 { s as f64 / t as f64 } else { 0.0 };
        1.0 - (frac(base, o.base_sample) - frac(test, o.test_sample)).abs()
    }

    fn update(
        &mut self,
        mut base: u64,
        mut test: u64,
        blocks: u64,
        o: &mut FuncOverlap,
        diff: &mut f64,
        m: Match,
    ) {
        match m {
            Match::First => {
                test = 0;
                o.base_unique_sample = o.base_unique_sample.wrapping_add(base);
            }
            Match::Second => {
                base = 0;
                o.test_unique_sample = o.test_unique_sample.wrapping_add(test);
            }
            Match::Both => {}
        }
        o.union_sample = o.union_sample.wrapping_add(base.max(test));
        o.overlap_sample = o.overlap_sample.wrapping_add(base.min(test));
        *diff += 1.0 - Self::block_similarity(base, test, o);
        self.hot_block(base, test, blocks);
    }

    fn unmatched_callee(&mut self, f: &FunctionSamples, o: &mut FuncOverlap, diff: &mut f64, m: Match) {
        let mut s = FuncStats::default();
        if m == Match::First {
            func_stats(f, self.thresholds[0], &mut s);
            self.update(s.sum, 0, s.hot_blocks, o, diff, m);
        } else {
            func_stats(f, self.thresholds[1], &mut s);
            self.update(0, s.sum, s.hot_blocks, o, diff, m);
        }
    }

    fn internal(&mut self, base: &FunctionSamples, test: &FunctionSamples, o: &mut FuncOverlap) -> f64 {
        let mut diff = 0.0;
        merge_join(&base.body, &test.body, |m, b, t| {
            let (b, t) = (b.map_or(0, |v| v.0), t.map_or(0, |v| v.0));
            self.update(b, t, 1, o, &mut diff, m);
        });
        merge_join(&base.inlined, &test.inlined, |m, b, t| match (b, t) {
            (Some(b), Some(t)) => merge_join(b, t, |m, bf, tf| match (bf, tf) {
                (Some(bf), Some(tf)) => diff += 2.0 - 2.0 * self.internal(bf, tf, o),
                (Some(f), None) | (None, Some(f)) => self.unmatched_callee(f, o, &mut diff, m),
                (None, None) => {}
            }),
            (Some(site), None) | (None, Some(site)) => {
                for f in site.values() {
                    self.unmatched_callee(f, o, &mut diff, m);
                }
            }
            (None, None) => {}
        });
        (2.0 - diff) / 2.0
    }

    fn weighted(&self, internal: f64, base: u64, test: u64) -> f64 {
        let distance = (base as f64 / self.base_total as f64 - test as f64 / self.test_total as f64).abs();
        internal * (1.0 - distance)
    }

    fn importance(&self, similarity: f64, base: u64, test: u64) -> f64 {
        let b = base as f64 / self.base_total as f64 / 2.0;
        let t = test as f64 / self.test_total as f64 / 2.0;
        similarity * (b + t)
    }
}

/// Why two profiles cannot be compared, as llvm-profdata refuses them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// One profile is probe-based and the other is not.
    ProbeBased,
    /// One profile is context-sensitive and the other is not.
    ContextSensitive,
    /// A profile's samples add up to 0 (`which`: 0 the base, 1 the test).
    NoSamples(usize),
}

/// LLVM's overlap of `base` and `test` (`llvm-profdata overlap --sample`, LLVM 19's
/// `SampleOverlapAggregator`): the same quantities from the same sums, in the same order.
pub fn overlap(base: &SampleProfile, test: &SampleProfile, filter: &Filter) -> Result<Overlap, Refusal> {
    if base.probe_based != test.probe_based {
        return Err(Refusal::ProbeBased);
    }
    if base.context_sensitive != test.context_sensitive {
        return Err(Refusal::ContextSensitive);
    }
    // The two profiles' summaries, then their functions' sums, are made side by side.
    let thresholds = {
        let (b, t) = rayon::join(|| base.hot_threshold(), || test.hot_threshold());
        [b, t]
    };
    fn stats_of(p: &SampleProfile, hot: u64) -> HashMap<&str, FuncStats> {
        p.functions
            .iter()
            .map(|(name, f)| {
                let mut s = FuncStats::default();
                func_stats(f, hot, &mut s);
                (name.as_str(), s)
            })
            .collect()
    }
    let (base_stats, test_stats) =
        rayon::join(|| stats_of(base, thresholds[0]), || stats_of(test, thresholds[1]));
    let total = |s: &HashMap<&str, FuncStats>| s.values().fold(0u64, |a, f| a.wrapping_add(f.sum));
    let mut agg = Aggregator {
        thresholds,
        hot_blocks: Stats::default(),
        base_total: total(&base_stats),
        test_total: total(&test_stats),
    };
    if agg.base_total == 0 {
        return Err(Refusal::NoSamples(0));
    }
    if agg.test_total == 0 {
        return Err(Refusal::NoSamples(1));
    }
    let mut o = Overlap {
        base_samples: agg.base_total,
        test_samples: agg.test_total,
        hot_thresholds: thresholds,
        ..Overlap::default()
    };
    o.functions.base_count = base.functions.len() as u64;
    o.functions.test_count = test.functions.len() as u64;
    o.functions.union_count = base.functions.len() as u64;
    let (mut overlap_sample, mut union_sample, mut base_unique, mut test_unique) = (0u64, 0u64, 0u64, 0u64);
    let mut details: Vec<(f64, FunctionOverlap)> = Vec::new();
    // The test's functions in name order: LLVM's order is its hash map's, and the sums differ
    // from it only in the last bits.
    let mut names: Vec<&str> = test.functions.keys().map(String::as_str).collect();
    names.sort_unstable();
    for name in names {
        let test_f = &test.functions[name];
        let ts = test_stats[name];
        let mut fo = FuncOverlap { test_sample: ts.sum, ..FuncOverlap::default() };
        let mut matched = None;
        if let Some(base_f) = base.functions.get(name) {
            o.functions.overlap_count += 1;
            fo.base_sample = base_stats[name].sum;
            let mut internal = agg.internal(base_f, test_f, &mut fo);
            if internal.abs() < EPSILON {
                internal = 0.0;
            }
            let similarity = agg.weighted(internal, fo.base_sample, fo.test_sample);
            o.similarity += agg.importance(similarity, fo.base_sample, fo.test_sample);
            overlap_sample = overlap_sample.wrapping_add(fo.overlap_sample);
            union_sample = union_sample.wrapping_add(fo.union_sample);
            base_unique = base_unique.wrapping_add(fo.base_unique_sample);
            test_unique = test_unique.wrapping_add(fo.test_unique_sample);
            matched = Some(similarity);
        } else {
            o.functions.test_unique_count += 1;
            test_unique = test_unique.wrapping_add(ts.sum);
            fo.test_unique_sample = ts.sum;
            agg.hot_block(0, ts.sum, ts.hot_blocks);
            let similarity = agg.weighted(0.0, 0, ts.sum);
            o.similarity += agg.importance(similarity, 0, ts.sum);
            o.functions.union_count += 1;
            union_sample = union_sample.wrapping_add(ts.sum);
        }
        let listed = ts.max >= filter.value_cutoff
            || matched.is_some_and(|s| s < filter.similarity_cutoff)
            || (matched.is_some() && filter.name.as_deref().is_some_and(|n| name.contains(n)));
        if listed {
            let frac = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
            let base_weight = fo.base_sample as f64 / agg.base_total as f64;
            details.push((
                base_weight,
                FunctionOverlap {
                    name: name.to_string(),
                    base_weight,
                    test_weight: fo.test_sample as f64 / agg.test_total as f64,
                    similarity: matched.unwrap_or(0.0),
                    overlap: frac(fo.overlap_sample, fo.union_sample),
                    base_unique: frac(fo.base_unique_sample, fo.base_sample),
                    test_unique: frac(fo.test_unique_sample, fo.test_sample),
                    base_samples: fo.base_sample,
                    test_samples: fo.test_sample,
                },
            ));
        }
    }
    let mut only_base: Vec<&str> =
        base.functions.keys().map(String::as_str).filter(|n| !test.functions.contains_key(*n)).collect();
    only_base.sort_unstable();
    for name in only_base {
        let bs = base_stats[name];
        o.functions.base_unique_count += 1;
        base_unique = base_unique.wrapping_add(bs.sum);
        agg.hot_block(bs.sum, 0, bs.hot_blocks);
        let similarity = agg.weighted(0.0, bs.sum, 0);
        o.similarity += agg.importance(similarity, bs.sum, 0);
        union_sample = union_sample.wrapping_add(bs.sum);
    }
    if (o.similarity - 1.0).abs() < EPSILON {
        o.similarity = 1.0;
    }
    let fraction = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    o.sample_overlap = fraction(overlap_sample, union_sample);
    o.base_unique = fraction(base_unique, agg.base_total);
    o.test_unique = fraction(test_unique, agg.test_total);
    o.function_overlap = fraction(o.functions.overlap_count, o.functions.union_count);
    o.hot_functions = hot_functions(&base_stats, &test_stats, thresholds);
    let h = &o.hot_functions;
    o.hot_function_overlap = fraction(h.overlap_count, h.union_count);
    o.hot_blocks = agg.hot_blocks;
    let hb = &mut o.hot_blocks;
    hb.base_unique_count = hb.base_count - hb.overlap_count;
    hb.test_unique_count = hb.test_count - hb.overlap_count;
    o.hot_block_overlap = fraction(hb.overlap_count, hb.union_count);
    // Heaviest in the base first; ties in the order met (LLVM's multimap).
    details.sort_by(|a, b| b.0.total_cmp(&a.0));
    o.details = details.into_iter().map(|d| d.1).collect();
    Ok(o)
}

/// Hot functions (LLVM's `computeHotFuncOverlap`): those whose largest count reaches their
/// profile's threshold, counted in each and in both.
fn hot_functions(
    base: &HashMap<&str, FuncStats>,
    test: &HashMap<&str, FuncStats>,
    thresholds: [u64; 2],
) -> Stats {
    let hot = |stats: &HashMap<&str, FuncStats>, t: u64| -> std::collections::HashSet<String> {
        stats.iter().filter(|(_, s)| s.max >= t).map(|(n, _)| n.to_string()).collect()
    };
    let (base_hot, test_hot) = (hot(base, thresholds[0]), hot(test, thresholds[1]));
    let mut h =
        Stats { base_count: base_hot.len() as u64, test_count: test_hot.len() as u64, ..Stats::default() };
    h.union_count = h.test_count;
    for f in &base_hot {
        if test_hot.contains(f) {
            h.overlap_count += 1;
        } else {
            h.union_count += 1;
        }
    }
    h.base_unique_count = h.base_count - h.overlap_count;
    h.test_unique_count = h.test_count - h.overlap_count;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(lines: &[(u32, u64)]) -> FunctionSamples {
        FunctionSamples {
            total: lines.iter().map(|l| l.1).sum(),
            body: lines.iter().map(|&(l, c)| ((l, 0), (c, BTreeMap::new()))).collect(),
            ..FunctionSamples::default()
        }
    }

    fn profile(functions: &[(&str, FunctionSamples)]) -> SampleProfile {
        SampleProfile {
            functions: functions.iter().map(|(n, f)| (n.to_string(), f.clone())).collect(),
            ..SampleProfile::default()
        }
    }

    #[test]
    fn a_profile_overlaps_itself_wholly() {
        let p = profile(&[("main", function(&[(1, 100), (2, 50)])), ("f", function(&[(0, 7)]))]);
        let o = overlap(&p, &p, &Filter::default()).unwrap();
        assert_eq!(o.similarity, 1.0);
        assert_eq!(o.sample_overlap, 1.0);
        assert_eq!((o.base_samples, o.functions.overlap_count), (157, 2));
    }

    #[test]
    fn the_hot_threshold_is_the_count_reaching_99_percent() {
        // 1000 + 10 + 1: 99% of 1011 is 1000 (integer), reached by the first count.
        let p = profile(&[("main", function(&[(1, 1000), (2, 10), (3, 1)]))]);
        assert_eq!(p.hot_threshold(), 1000);
        let q = profile(&[("main", function(&[(1, 100), (2, 100), (3, 1)]))]);
        assert_eq!(q.hot_threshold(), 100);
    }

    #[test]
    fn disjoint_profiles_do_not_overlap() {
        let a = profile(&[("f", function(&[(1, 10)]))]);
        let b = profile(&[("g", function(&[(1, 10)]))]);
        let o = overlap(&a, &b, &Filter::default()).unwrap();
        assert_eq!((o.similarity, o.sample_overlap, o.function_overlap), (0.0, 0.0, 0.0));
        assert_eq!((o.functions.base_unique_count, o.functions.test_unique_count), (1, 1));
    }
}
