//! DCFG-trace decoding: edges per second of the streaming decoder (parse, compile, decode and
//! count every edge) on a generated trace, with one and with two rayon threads; and encoding.
//!
//! `cargo bench --bench dcfg_trace`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use cfghub::formats::dcfg_trace::decode::totals;
use cfghub::formats::dcfg_trace::encode::EncodeOptions;
use cfghub::formats::dcfg_trace::generate::{looped, pair};
use cfghub::synth::SynthSpec;

fn decoding(c: &mut Criterion) {
    let spec = SynthSpec { seed: 1, threads: 2, steps_per_thread: 20_000, ..SynthSpec::default() };
    let edges_per_thread = 10_000_000;
    let (_, trace) = looped(&spec, edges_per_thread, 500_000).unwrap();
    let mut group = c.benchmark_group("dcfg-trace decode");
    group.sample_size(10);
    group.throughput(Throughput::Elements(2 * edges_per_thread));
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        group.bench_function(format!("{threads} thread(s)"), |b| {
            b.iter(|| pool.install(|| totals(&mut trace.as_slice(), None, None).unwrap()))
        });
    }
    group.finish();
}

fn encoding(c: &mut Criterion) {
    let spec = SynthSpec {
        seed: 1,
        threads: 2,
        steps_per_thread: 100_000,
        keep_sequences: true,
        ..SynthSpec::default()
    };
    let p = pair(&spec, &EncodeOptions::default()).unwrap();
    let edges: usize = p.sequences.iter().map(|t| t.edges.len()).sum();
    let mut group = c.benchmark_group("dcfg-trace encode");
    group.sample_size(10);
    group.throughput(Throughput::Elements(edges as u64));
    group.bench_function("whole walks", |b| {
        b.iter(|| {
            let mut out = Vec::new();
            cfghub::formats::dcfg_trace::encode::encode(
                &p.profile,
                4242,
                &p.sequences,
                &EncodeOptions::default(),
                &mut out,
            )
            .unwrap();
            out
        })
    });
    group.finish();
}

criterion_group!(benches, decoding, encoding);
criterion_main!(benches);
