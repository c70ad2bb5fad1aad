//! BOLT profiles: an `.fdata` (and a pre-aggregated file) written by cfghub reads back to the
//! same records. Models are made by running random programs (functions of blocks that fall
//! through, branch, jump forward, call later functions and return), so that their counts
//! agree the way a real run's do.

use cfghub::convert::{read_with, write_to_vec};
use cfghub::format::{Format, WriteOptions};
use cfghub::formats::bolt::{FORMAT as Fdata, PREAGGREGATED};
use cfghub::ir::{Block, BlockRef, Counts, Edge, EdgeKind, Image, NodeRef, Process, Profile, Symbol};
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug)]
enum End {
    Fall,
    Cond(usize),
    Jump(usize),
    Call(usize),
    Ret,
}

impl End {
    /// Bytes of the block's last instruction.
    fn len(self) -> u32 {
        match self {
            End::Fall => 3,
            End::Cond(_) | End::Jump(_) => 2,
            End::Call(_) => 5,
            End::Ret => 1,
        }
    }
}

/// Functions, each a list of (block size, how it ends).
type Program = Vec<Vec<(u32, End)>>;

/// A block: (function, block in it).
type At = (usize, usize);

fn program() -> impl Strategy<Value = Program> {
    (1usize..=3).prop_flat_map(|nfun| {
        let functions: Vec<_> = (0..nfun)
            .map(move |f| {
                (2usize..=6).prop_flat_map(move |n| {
                    let blocks: Vec<_> = (0..n)
                        .map(move |k| {
                            let last = k + 1 == n;
                            (16u32..=24, 0u8..4, 0usize..n, (f + 1)..=(f + 1).max(nfun - 1)).prop_map(
                                move |(size, pick, target, callee)| {
                                    let end = if last {
                                        End::Ret
                                    } else {
                                        match pick {
                                            1 if target != k + 1 => End::Cond(target),
                                            2 if target > k + 1 => End::Jump(target),
                                            3 if callee < nfun && callee > f => End::Call(callee),
                                            _ => End::Fall,
                                        }
                                    };
                                    (size, end)
                                },
                            )
                        })
                        .collect();
                    blocks
                })
            })
            .collect();
        functions
    })
}

/// Runs the program `runs` times from function 0 (choices from a small generator seeded by
/// `seed`), keeping the runs that return within a step budget, and returns the model.
fn run(program: &Program, seed: u64, runs: u32) -> Profile {
    let mut state = seed | 1;
    let mut coin = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state & 1 == 1
    };
    // (function, block) -> executions; (from, to, kind) -> traversals.
    let mut counts: BTreeMap<At, u64> = BTreeMap::new();
    let mut edges: BTreeMap<(At, At, EdgeKind), u64> = BTreeMap::new();
    for _ in 0..runs {
        let (mut c, mut e) = (BTreeMap::new(), BTreeMap::new());
        let mut stack: Vec<At> = Vec::new();
        let mut at: At = (0, 0);
        let mut done = false;
        for _ in 0..5000 {
            *c.entry(at).or_insert(0u64) += 1;
            let (f, k) = at;
            let next = match program[f][k].1 {
                End::Fall => ((f, k + 1), EdgeKind::FallThrough),
                End::Cond(t) if coin() => ((f, t), EdgeKind::ConditionalBranch),
                End::Cond(_) => ((f, k + 1), EdgeKind::FallThrough),
                End::Jump(t) => ((f, t), EdgeKind::UnconditionalBranch),
                End::Call(g) => {
                    stack.push((f, k + 1));
                    ((g, 0), EdgeKind::Call)
                }
                End::Ret => match stack.pop() {
                    Some(ret) => (ret, EdgeKind::Return),
                    None => {
                        done = true;
                        break;
                    }
                },
            };
            *e.entry((at, next.0, next.1)).or_insert(0u64) += 1;
            at = next.0;
        }
        if done {
            for (k, v) in c {
                *counts.entry(k).or_default() += v;
            }
            for (k, v) in e {
                *edges.entry(k).or_default() += v;
            }
        }
    }
    let mut image = Image::default();
    let mut index: BTreeMap<At, u32> = BTreeMap::new();
    let mut offset = 0x1000u64;
    for (f, blocks) in program.iter().enumerate() {
        let start = offset;
        for (k, &(size, end)) in blocks.iter().enumerate() {
            index.insert((f, k), image.blocks.len() as u32);
            image.blocks.push(Block {
                id: 4 + image.blocks.len() as u64,
                offset,
                size,
                num_instrs: 4,
                last_instr_offset: size - end.len(),
                count: Some(counts.get(&(f, k)).copied().unwrap_or(0)),
            });
            offset += u64::from(size);
        }
        image.symbols.push(Symbol {
            name: format!("f{f}"),
            offset: Some(start),
            size: Some(offset - start),
            file: None,
        });
        offset = offset.next_multiple_of(16) + 16;
    }
    let node = |at: &At| NodeRef::Block(BlockRef { image: 0, block: index[at] });
    let edges = edges
        .iter()
        .enumerate()
        .map(|(id, ((from, to, kind), &n))| Edge {
            id: id as u64 + 1,
            source: node(from),
            target: node(to),
            kind: *kind,
            counts: Counts::from(vec![n]),
            details: None,
        })
        .collect();
    Profile {
        processes: vec![Process { images: vec![image], edges, ..Process::default() }],
        ..Profile::default()
    }
}

fn write(format: &Format, p: &Profile) -> String {
    String::from_utf8(write_to_vec(format, p, &WriteOptions::default()).unwrap().0).unwrap()
}

fn sorted(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text.lines().collect();
    v.sort_unstable();
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn fdata_reads_back_to_the_same_records(program in program(), seed in any::<u64>(), runs in 1u32..6) {
        let model = run(&program, seed, runs);
        let text = write(&Fdata, &model);
        let (back, _) = read_with(&Fdata, &mut text.as_bytes()).unwrap();
        let again = write(&Fdata, &back);
        prop_assert_eq!(sorted(&again), sorted(&text), "program {:?}", program);
    }

    #[test]
    fn pre_aggregated_records_read_back_the_same(program in program(), seed in any::<u64>(), runs in 1u32..6) {
        let model = run(&program, seed, runs);
        prop_assume!(model.processes[0].edges.iter().any(|e| e.total() > 0 && !e.kind.is_return()));
        let text = write(&PREAGGREGATED, &model);
        let (back, _) = read_with(&PREAGGREGATED, &mut text.as_bytes()).unwrap();
        let again = write(&PREAGGREGATED, &back);
        prop_assert_eq!(sorted(&again), sorted(&text), "program {:?}", program);
    }
}
