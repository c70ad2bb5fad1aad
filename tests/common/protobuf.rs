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
