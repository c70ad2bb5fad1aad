//! DCPI benchmarks: decoding and reading binary profiles (throughput in bytes), and merging
//! 10^7 sampled addresses into a graph of 10^6 basic blocks.
//!
//! `cargo bench --bench dcpi`

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

use cfghub::analysis::merge::{merge, MergeOptions};
use cfghub::error::Findings;
use cfghub::formats::dcpi::read::{from_bytes, parse_body, parse_header};
use cfghub::ir::{Block, Cost, Event, Image, Process, Profile};

/// A profile of `slots` counts in chunks of 64 slots with 64-byte gaps, like a hot text.
fn dcpi_file(slots: usize) -> Vec<u8> {
    let mut b = b"version pdb-0.07\nimage 19970328081403c0c18b\npath /usr/bin/app\nepoch 9805191724\n\
platform walnut\nevent cycles\nperiod 63488\ntstart 120000000\ntsize 4294967295\ncpuspeed 500\nsamples   \n"
        .to_vec();
    while !b.len().is_multiple_of(4) {
        b.insert(b.len() - 1, b' ');
    }
    let (mut n, mut sum) = (0u32, 0u32);
    let mut offset = 0u32;
    let mut left = slots;
    let mut x = 12345u32;
    while left > 0 {
        let len = left.min(64);
        b.extend_from_slice(&offset.to_le_bytes());
        b.extend_from_slice(&(len as u32).to_le_bytes());
        for _ in 0..len {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let c = (x >> 20) & 0x3ff;
            n += (c != 0) as u32;
            sum = sum.wrapping_add(c);
            b.extend_from_slice(&c.to_le_bytes());
        }
        offset += len as u32 * 4 + 64;
        left -= len;
    }
    b.extend_from_slice(&n.to_le_bytes());
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

fn reading(c: &mut Criterion) {
    let data = dcpi_file(25_000_000);
    let mut g = c.benchmark_group("dcpi");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("decode 100 MB (header, chunks, footer checked)", |b| {
        b.iter(|| {
            let h = parse_header(&data, &mut Findings::default()).unwrap();
            parse_body(&data, h.body_start, 4).unwrap().slots
        })
    });
    g.bench_function("read 100 MB into the model (one cost per slot)", |b| {
        b.iter(|| from_bytes(&data, 4, &mut Findings::default()).unwrap())
    });
    g.finish();
}

fn merging(c: &mut Criterion) {
    const BLOCKS: u64 = 1_000_000;
    const SAMPLES: u64 = 10_000_000;
    let mut graph = Profile::default();
    let path = graph.files.intern("/usr/bin/app");
    let blocks = (0..BLOCKS)
        .map(|i| Block {
            id: i + 3,
            offset: i * 16,
            size: 16,
            num_instrs: 4,
            last_instr_offset: 12,
            count: Some(i % 100 + 1),
        })
        .collect();
    graph.processes.push(Process {
        images: vec![Image {
            file: Some(path),
            load_addr: 0x400000,
            size: Some(BLOCKS * 16),
            blocks,
            ..Image::default()
        }],
        ..Process::default()
    });
    let mut samples = Profile { events: vec![Event::new("cycles")], ..Profile::default() };
    let path = samples.files.intern("/usr/bin/app");
    // 10^7 distinct addresses, ascending, 1.6 bytes apart on average: every block gets some.
    let costs = (0..SAMPLES)
        .map(|i| Cost {
            offset: Some(i * 16 / 10),
            values: smallvec::smallvec![1 + i % 7],
            ..Cost::default()
        })
        .collect();
    samples.processes.push(Process {
        images: vec![Image { file: Some(path), load_addr: 0x400000, costs, ..Image::default() }],
        ..Process::default()
    });
    let mut g = c.benchmark_group("merge");
    g.sample_size(10);
    g.bench_function("10^7 sampled addresses into 10^6 blocks", |b| {
        b.iter_batched(
            || graph.clone(),
            |graph| merge(graph, &samples, &MergeOptions::default()).unwrap().0,
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, reading, merging);
criterion_main!(benches);
