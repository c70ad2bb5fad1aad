//! Protocol-buffer encoding by hand, for pprof inputs the writer would never make.

/// A base-128 varint: seven bits a byte, low bits first, the high bit set on all but the last.
pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field (wire type 2): a nested message, a string or a packed list.
pub fn field(out: &mut Vec<u8>, number: u64, body: &[u8]) {
    varint(out, number << 3 | 2);
    varint(out, body.len() as u64);
    out.extend_from_slice(body);
}

/// A varint field (wire type 0).
pub fn uint(out: &mut Vec<u8>, number: u64, v: u64) {
    varint(out, number << 3);
    varint(out, v);
}

/// A small profile.proto as samplers write it, with what the writers must carry: two sample
/// types (`samples/count`, `cpu/nanoseconds`), one mapping (`/bin/prog` at 0x400000, build id
/// `b1d`), functions with their files and start lines, one of them with a line break in its
/// name (`weird\nname`), and one location left unsymbolized (0x42ef04 in the mapping, no
/// line). Stacks, root first: `main;0x42ef04` 3 samples / 30 ns, `main;weird\nname` 2 / 20.
pub fn sampler_profile() -> Vec<u8> {
    let strings = [
        "",
        "samples",
        "count",
        "cpu",
        "nanoseconds",
        "/bin/prog",
        "b1d",
        "main",
        "/src/main.go",
        "weird\nname",
    ];
    let s = |x: &str| strings.iter().position(|t| *t == x).unwrap() as u64;
    let message = |fields: &[(u64, u64)]| {
        let mut m = Vec::new();
        for &(n, v) in fields {
            uint(&mut m, n, v);
        }
        m
    };
    let mut out = Vec::new();
    for (ty, unit) in [("samples", "count"), ("cpu", "nanoseconds")] {
        field(&mut out, 1, &message(&[(1, s(ty)), (2, s(unit))]));
    }
    for (locations, values) in [([2u64, 1], [3u64, 30]), ([3, 1], [2, 20])] {
        let mut sample = Vec::new();
        let mut packed = Vec::new();
        locations.iter().for_each(|&l| varint(&mut packed, l));
        field(&mut sample, 1, &packed);
        packed.clear();
        values.iter().for_each(|&v| varint(&mut packed, v));
        field(&mut sample, 2, &packed);
        field(&mut out, 2, &sample);
    }
    let mapping = message(&[(1, 1), (2, 0x400000), (3, 0x500000), (5, s("/bin/prog")), (6, s("b1d"))]);
    field(&mut out, 3, &mapping);
    for (id, address, function) in
        [(1u64, 0x401000u64, Some(1u64)), (2, 0x42ef04, None), (3, 0x401100, Some(2))]
    {
        let mut location = message(&[(1, id), (2, 1), (3, address)]);
        if let Some(f) = function {
            field(&mut location, 4, &message(&[(1, f), (2, 12)]));
        }
        field(&mut out, 4, &location);
    }
    for (id, name, line) in [(1u64, "main", 10u64), (2, "weird\nname", 20)] {
        field(
            &mut out,
            5,
            &message(&[(1, id), (2, s(name)), (3, s(name)), (4, s("/src/main.go")), (5, line)]),
        );
    }
    for t in strings {
        field(&mut out, 6, t.as_bytes());
    }
    out
}
