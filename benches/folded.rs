//! Reading folded stacks: throughput of the byte-level parser on a synthetic profile shaped
//! like real collapsed output (sorted lines, 8-48 frames of 10-60 byte names, shared
//! prefixes), and writing them back.
//!
//! `cargo bench --bench folded`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use cfghub::error::Findings;
use cfghub::formats::folded;

/// A deterministic folded profile of about `bytes` bytes.
pub fn synthetic(bytes: usize) -> Vec<u8> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let names: Vec<String> = (0..5000)
        .map(|i| {
            let len = 10 + next(50) as usize;
            let mut s = format!("lib{}.so`ns{}::Type<T>::method_{i}", i % 37, i % 101);
            s.truncate(len.max(12));
            s
        })
        .collect();
    let mut lines = Vec::new();
    let mut total = 0;
    while total < bytes {
        let depth = 8 + next(40) as usize;
        // A root and a trunk shared by many stacks, then a varied tail.
        let trunk = next(16) as usize;
        let mut line = String::new();
        for d in 0..depth {
            if d > 0 {
                line.push(';');
            }
            let pick = if d < 6 { (trunk * 7 + d) % names.len() } else { next(names.len() as u64) as usize };
            line.push_str(&names[pick]);
        }
        line.push(' ');
        line.push_str(&(1 + next(1000)).to_string());
        line.push('\n');
        total += line.len();
        lines.push(line);
    }
    lines.sort();
    lines.concat().into_bytes()
}

fn read(c: &mut Criterion) {
    let text = synthetic(64 << 20);
    let mut group = c.benchmark_group("folded");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    group.bench_function("read 64 MiB", |b| {
        b.iter(|| folded::read_bytes(&text, &mut Findings::default()).unwrap());
    });
    group.bench_function("read 64 MiB through BufRead", |b| {
        b.iter(|| {
            let mut input = std::io::BufReader::with_capacity(256 * 1024, &text[..]);
            folded::read(&mut input, &mut Findings::default()).unwrap()
        });
    });
    let profile = folded::read_bytes(&text, &mut Findings::default()).unwrap();
    group.bench_function("write 64 MiB", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(text.len());
            folded::write(&profile, &mut out, &Default::default(), &mut Findings::default()).unwrap();
            out
        });
    });
    group.finish();
}

criterion_group!(benches, read);
criterion_main!(benches);
