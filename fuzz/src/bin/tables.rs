//! Fuzzes the Parquet tables reader (a folder of `.parquet` files). The input is a series of
//! members, `NAME SIZE\n` and then SIZE bytes, the file `NAME.parquet`; every table no member
//! names is fixtures/tables/hello-world.tables's own (see `cfghub_fuzz::read_tables`).
//! `scripts/fuzz.sh` seeds it with each table of the folder below as a member of its own.
//! seeds: fixtures/tables/hello-world.tables
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read_tables(data));
