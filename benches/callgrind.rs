//! Callgrind reading and writing throughput on a real profile.
//!
//! The profile is large (tens of MB) and made by `scripts/bench-callgrind.sh`, which passes its
//! path in `CFGHUB_CALLGRIND_BENCH`; without it, the committed small valgrind fixture is used.
//! Reading runs from memory, so the figure is the parser's, not the disk's; the profile read is
//! dropped outside the timing (freeing the model is not reading it). `read` reads the bytes as a
//! stream, as `cfghub convert` reads a pipe, a compressed file or a file below 4 MiB (a larger
//! file on disk is read in parts side by side: the whole commands of the script time that).

use std::time::Duration;

use cfghub::convert::{read_with, write_to_vec};
use cfghub::error::Findings;
use cfghub::format::WriteOptions;
use cfghub::formats::callgrind::FORMAT as Callgrind;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

fn bench(c: &mut Criterion) {
    let path = std::env::var("CFGHUB_CALLGRIND_BENCH").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/callgrind/callgrind.out.recursion-loops").to_string()
    });
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (profile, _) = read_with(&Callgrind, &mut bytes.as_slice()).unwrap();
    let written = write_to_vec(&Callgrind, &profile, &WriteOptions::default()).unwrap().0;

    let mut g = c.benchmark_group("callgrind");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    // One read per batch: the profiles are hundreds of MB, so none waits for its drop.
    g.bench_function("read", |b| {
        b.iter_batched(
            || (),
            |()| read_with(&Callgrind, &mut bytes.as_slice()).unwrap(),
            BatchSize::PerIteration,
        )
    });
    g.throughput(Throughput::Bytes(written.len() as u64));
    // Into a buffer kept from one run to the next, as a buffered file would be: the figure is
    // the writer's, not that of a growing vector's reallocations.
    let mut out: Vec<u8> = Vec::with_capacity(written.len());
    g.bench_function("write", |b| {
        b.iter(|| {
            out.clear();
            let mut findings = Findings::default();
            Callgrind.write(&profile, &mut out, &WriteOptions::default(), &mut findings).unwrap();
            out.len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
