//! Memory for large models: where the allocator maps large allocations, lists appended without
//! holding both whole, and read-only mapped input files whose read pages can be handed back.
//!
//! (Transparent huge pages were asked for here for large lists allocated at their final size.
//! Measured with the system's huge pages on (`madvise`) and off (`never`), 5 interleaved rounds
//! on the 2-core machine, they paid nothing on a DCFG (`info` of the 98 MB Pin-style file 0.42
//! against 0.41 s of CPU) or a DCPI file (0.98-1.00 s both ways) and under 10% on the Callgrind
//! conversion (0.49 against 0.48 s CPU, median), so the advice is gone.)

/// Large allocations mapped on their own, and handed back to the system when freed, for the whole
/// process: a command-line program calls this once, before any thread starts.
///
/// glibc's `malloc` maps each allocation above a threshold (128 KiB at start) on its own and
/// unmaps it on `free`, but each time it frees such an allocation it raises the threshold to
/// that allocation's size (up to 32 MiB). Reading a large profile frees a list of tens of megabytes
/// midway (the block rebuild's transfers), after which every allocation below that size is
/// carved out of the heap, whose freed room is seldom returned: the model then sits among
/// holes. Setting the threshold fixes it where it starts. Measured on a 21 MB Callgrind
/// profile: peak memory of `cfghub convert` 115 -> 101 MB, at the same speed; DCFG and DCPI
/// reading unchanged (measured again since: 77 MB against 130 MB without it, converting that
/// profile to Callgrind). Elsewhere than glibc, nothing is done.
///
/// mimalloc as the global allocator instead was measured against this (5 interleaved rounds of
/// release builds on 2 cores, best of 5): it raised every peak (the Callgrind conversion of
/// that profile 74 -> 214 MiB, past `callgrind_annotate`'s 78 MiB; a 103 MB DCPI file 229 ->
/// 289 MiB; a 30 MB pprof profile 106 -> 167 MiB) and took more processor time on most
/// commands (0.44 -> 0.50 s converting the Callgrind profile, 0.59 -> 0.80 s the DCPI file;
/// only `info` of the DCPI file was faster at its best, 0.37 -> 0.28 s, and slower at its
/// median, 0.37 -> 0.71 s), so glibc stays.
pub fn map_large_allocations_apart() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets a parameter of the allocator; it is called before any thread
    // starts, as glibc asks of parameter changes.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

/// Allocations kept for reuse, for a command that reads many inputs one after another (`merge`):
/// each input's lists come from the heap and go back to it, not mapped and unmapped each time,
/// and freed room is not handed back to the system between inputs.
///
/// Each input's large lists (its inflated bytes, its frames and nodes) are mapped apart and
/// unmapped when it has been added ([`map_large_allocations_apart`]), and every unmapping
/// interrupts the other cores to flush their address caches: merging a thousand pprof files of
/// 100,000 samples spent 25.5 s of its 53 s of CPU in the kernel. With allocations up to 32 MiB
/// taken from the heap and its room kept (up to 1 GiB) it spends 1.5 s there and takes 15-16 s
/// instead of 28.4 s (a hundred files: 1.6 s instead of 3.5 s), its peak 172-180 MB instead of
/// 114 MB. glibc takes the parameters under its lock; threads started before (the signal
/// handler's) do not allocate.
pub fn reuse_allocations_across_inputs() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets parameters of the allocator.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

/// A file mapped into memory, read-only: its bytes without copying them, for readers that
/// parse parts of a large file side by side.
///
/// The mapping is private and populated at once (the page cache's pages, not fresh ones: no
/// zeroing and no copy). Like any mapping of a file, it assumes nobody truncates the file
/// while it is read; cfghub only maps inputs it reads once, start to end, and drops them after.
pub struct MappedFile {
    map: memmap2::Mmap,
}

impl MappedFile {
    /// Maps the regular file at `path`. An error for anything that cannot be mapped (a pipe,
    /// an empty file, a system without `mmap`): the caller then reads it as a stream.
    pub fn open(path: &std::path::Path) -> std::io::Result<MappedFile> {
        Self::open_with(path, true)
    }

    /// Maps the regular file at `path` without reading it in: pages come in as they are
    /// touched. For files read in small parts (an ELF file's debug sections).
    pub fn open_lazy(path: &std::path::Path) -> std::io::Result<MappedFile> {
        Self::open_with(path, false)
    }

    fn open_with(path: &std::path::Path, populate: bool) -> std::io::Result<MappedFile> {
        // Opening a FIFO would wait for a writer (forever, when the input was read from it
        // already): only a regular file is opened to be mapped.
        if !std::fs::metadata(path)?.is_file() {
            return Err(std::io::Error::other("not a non-empty regular file"));
        }
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        let len = usize::try_from(meta.len()).map_err(|_| std::io::Error::other("file too large to map"))?;
        if !meta.is_file() || len == 0 {
            return Err(std::io::Error::other("not a non-empty regular file"));
        }
        let mut options = memmap2::MmapOptions::new();
        options.len(len);
        if populate {
            options.populate();
        }
        // SAFETY: a read-only private mapping of a regular file; as the type's doc says, it
        // assumes nobody truncates the file while it is read.
        let map = unsafe { options.map_copy_read_only(&file)? };
        Ok(MappedFile { map })
    }
}

impl MappedFile {
    /// A handle that hands pages of this mapping back to the system (see [`PageReleaser`]).
    pub fn releaser(&self) -> PageReleaser<'_> {
        PageReleaser {
            mapping: Some((self.map.as_ptr() as usize, self.map.len())),
            _file: std::marker::PhantomData,
        }
    }
}

/// Hands the pages of part of a mapped file back to the system, for a reader that has gone
/// past them: they leave the process's memory, and come back from the file (the page cache)
/// if they are read again, with the same bytes. Made by [`MappedFile::releaser`]; the one
/// [`PageReleaser::none`] makes (for bytes that are not a mapped file) does nothing.
#[derive(Clone, Copy, Debug)]
pub struct PageReleaser<'a> {
    /// Address and length of the mapping.
    mapping: Option<(usize, usize)>,
    _file: std::marker::PhantomData<&'a MappedFile>,
}

impl PageReleaser<'_> {
    /// A releaser that releases nothing.
    pub fn none() -> PageReleaser<'static> {
        PageReleaser { mapping: None, _file: std::marker::PhantomData }
    }

    /// Releases the whole pages inside `range` (byte offsets into the mapping).
    pub fn release(&self, range: std::ops::Range<usize>) {
        let Some((base, len)) = self.mapping else { return };
        const PAGE: usize = 4096;
        let (start, end) = (range.start.min(len), range.end.min(len));
        // Whole pages only (the mapping starts on a page).
        let first = start.div_ceil(PAGE) * PAGE;
        let last = if end == len { end } else { end / PAGE * PAGE };
        if first >= last {
            return;
        }
        #[cfg(target_os = "linux")]
        // SAFETY: the range lies inside a private, read-only mapping of a file that lives as
        // long as `'a`; MADV_DONTNEED only drops its pages, which read back from the file.
        unsafe {
            libc::madvise((base + first) as *mut libc::c_void, last - first, libc::MADV_DONTNEED);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = base;
    }
}

impl std::ops::Deref for MappedFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Released pages read back with the file's bytes; the range is cut to whole pages.
    #[test]
    fn released_pages_read_back_the_same() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let bytes: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        let mapped = MappedFile::open(file.path()).unwrap();
        let pages = mapped.releaser();
        pages.release(100..30_000);
        pages.release(0..mapped.len());
        pages.release(49_000..60_000);
        PageReleaser::none().release(0..10);
        assert_eq!(&mapped[..], &bytes[..]);
    }

    #[test]
    fn a_mapped_file_holds_its_bytes_and_other_inputs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bytes");
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let mapped = MappedFile::open(&path).unwrap();
        assert_eq!(&mapped[..], &bytes[..]);
        std::fs::write(dir.path().join("empty"), b"").unwrap();
        assert!(MappedFile::open(&dir.path().join("empty")).is_err());
        assert!(MappedFile::open(dir.path()).is_err());
        assert!(MappedFile::open(&dir.path().join("missing")).is_err());
    }
}
