//! Decompresses a `.bz2` file (or stdin) to stdout on N threads: the crate alone, to time its
//! decoding against `lbzip2 -dc -n N`.
//!
//! Usage: `bzcat [-n N] [FILE]`

use std::io::{self, BufRead, Read, Write};

fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1).peekable();
    let mut workers = 1;
    if args.peek().map(String::as_str) == Some("-n") {
        args.next();
        workers = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    }
    let input: Box<dyn BufRead + Send> = match args.next() {
        Some(path) => Box::new(io::BufReader::new(std::fs::File::open(path)?)),
        None => Box::new(io::BufReader::new(io::stdin())),
    };
    let mut reader = bzip2_parallel::decoder(input, workers);
    let mut out = io::stdout().lock();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            return out.flush();
        }
        out.write_all(&buf[..n])?;
    }
}
