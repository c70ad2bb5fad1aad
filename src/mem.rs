//! Memory for large models.
//!
//! Reading a large profile fills a few vectors of hundreds of megabytes once (a DCPI input and
//! its sample columns). Backed by ordinary 4 KiB pages, such a vector takes a page fault every
//! 4 KiB as it fills, and those faults cost more than the parsing. Transparent huge pages make
//! that one fault every 2 MiB; most Linux systems give them only to memory that asks for them
//! (`madvise` mode), which is what [`vec_with_capacity`] does. Only for vectors allocated at
//! their final size: a vector that grows by doubling would have its unused capacity committed
//! 2 MiB at a time (measured: +28% peak memory reading a DCFG).

/// Below this, a vector is not worth the advice (a few faults at most).
const WORTH_ADVISING: usize = 8 << 20;

/// `Vec::with_capacity(n)`, backed by huge pages where the system offers them.
pub fn vec_with_capacity<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    advise_huge_pages(&v);
    v
}

/// `n` zeros, backed by huge pages where the system offers them. The pages are mapped but not
/// touched: each is zeroed by the kernel on first write, by whichever thread writes it first,
/// so threads that fill disjoint parts also share the zeroing.
pub fn zeroed_u64(n: usize) -> Vec<u64> {
    let v = vec![0u64; n];
    advise_huge_pages(&v);
    v
}

/// Asks the kernel to back the spare capacity of `v` with huge pages. Only a hint: the contents
/// and the meaning of the vector do not change, and a refusal is ignored.
fn advise_huge_pages<T>(v: &Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < WORTH_ADVISING {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = v.as_ptr() as usize;
        let first = (start + PAGE - 1) & !(PAGE - 1);
        let end = (start + bytes) & !(PAGE - 1);
        if end > first {
            // SAFETY: the range lies inside the vector's own allocation; MADV_HUGEPAGE changes
            // how the kernel backs those pages, never their contents.
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
}
