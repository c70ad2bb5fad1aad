//! Where an image's debug information is, in the order debuggers look:
//!
//! 1. what the user names with `--symbols` (repeatable): a binary or a separate debug file, or a
//!    directory searched by the image's file name (`NAME`, `NAME.debug`), by build id
//!    (`.build-id/xx/yyyy.debug`, `xx/yyyy.debug`) and by the `.gnu_debuglink` name;
//! 2. the image's own file, when it still has DWARF;
//! 3. `/usr/lib/debug/.build-id/xx/yyyy.debug` (the distributions' debug packages);
//! 4. the `.gnu_debuglink` name beside the binary, in its `.debug/` folder and under
//!    `/usr/lib/debug/<its folder>/`, accepted only when the file's CRC-32 is the one the link
//!    states;
//! 5. the `.gnu_debugaltlink` supplementary file (dwz), matched by build id;
//! 6. `<binary>.dwp` for split DWARF (without one, [`super::Symbolizer`] reads the `.dwo` files
//!    the skeleton units name, as it meets them).
//!
//! When the profile states the image's build id (perf.data, pprof), that id is the one every
//! file must have, the image's own file included (a binary rebuilt since the recording is not
//! the image), and perf's build-id cache (`~/.debug/.build-id/xx/yyyy/{debug,elf,vdso}`, where
//! `perf record` copies what it sampled) is searched after the system's debug folder.
//!
//! When both the image's file and a candidate have a build id, they must be equal: a candidate
//! that differs is refused with a warning, never used. A file with a symbol table but no DWARF
//! is kept as the source of names in case nothing better turns up.

use std::path::{Path, PathBuf};

use super::elf::ElfFile;

/// The system's folder of separate debug files.
pub const SYSTEM_DEBUG_DIR: &str = "/usr/lib/debug";

/// Where perf keeps copies of the files it recorded, by build id: `$PERF_BUILDID_DIR`, else
/// `~/.debug`.
pub fn perf_build_id_cache() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PERF_BUILDID_DIR") {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME").map(|h| Path::new(&h).join(".debug"))
}

/// What to search for one image.
#[derive(Clone, Debug, Default)]
pub struct Query<'a> {
    /// The image's file as the profile names it (it may be absent on this machine).
    pub image: Option<&'a str>,
    /// `--symbols` paths, in order.
    pub paths: &'a [PathBuf],
    /// The image is the only one of its profile that needs names: a file named with
    /// `--symbols` applies to it whatever its name, when no build id says otherwise.
    pub sole: bool,
    /// Folders of system debug files (normally [`SYSTEM_DEBUG_DIR`]).
    pub system_dirs: &'a [PathBuf],
    /// The build id the profile states for the image, in hex.
    pub build_id: Option<&'a str>,
    /// Build-id caches laid out as perf's (`.build-id/xx/yyyy/elf` and `debug`).
    pub build_id_caches: &'a [PathBuf],
}

/// What was found for an image.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// The build id the image's own file states, in hex.
    pub build_id: Option<String>,
    /// The file that gives symbols and segments (the binary, or a debug file that kept them).
    pub binary: Option<PathBuf>,
    /// The file with DWARF.
    pub debug: Option<PathBuf>,
    /// The dwz supplementary file.
    pub sup: Option<PathBuf>,
    /// The DWARF package.
    pub dwp: Option<PathBuf>,
    /// Candidates refused, and why (each a sentence for a warning).
    pub refused: Vec<String>,
    /// Files named with `--symbols` for this very image (by its name, or as the only image
    /// that needs names) and refused as another build: always worth a warning, even when
    /// another file gives names.
    pub wrong_build: Vec<String>,
    /// What the files found name but could not be found (a dwz file): always worth a warning.
    pub missing: Vec<String>,
}

impl Found {
    /// Whether anything usable was found.
    pub fn any(&self) -> bool {
        self.binary.is_some() || self.debug.is_some()
    }
}

/// A build id written in lower-case hex, as perf's cache and debuginfod name it.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a build id written in hex; `None` when it is not hex.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.is_empty() {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// Looks for the debug information of one image (see the module documentation for the order).
pub fn find(q: &Query) -> Found {
    let mut found = Found::default();
    let stated = q.build_id.and_then(unhex);
    let own = own_file(q, stated.as_deref(), &mut found.refused);
    let want: Option<&[u8]> = stated.as_deref().or_else(|| own.as_ref().and_then(|f| f.build_id()));
    found.build_id = want.map(hex);
    let base = q.image.and_then(|p| Path::new(p).file_name()).map(|n| n.to_string_lossy().into_owned());
    let link = own.as_ref().and_then(|f| f.debuglink());
    let id_path = want.filter(|id| id.len() > 1).map(|id| {
        let h = hex(id);
        (h[..2].to_string(), format!("{}.debug", &h[2..]))
    });

    let mut search = Search { want, base: base.clone(), sole: q.sole, found: &mut found, fallback: None };
    for p in q.paths {
        if search.done() {
            break;
        }
        if p.is_dir() {
            for c in folder_candidates(p, base.as_deref(), id_path.as_ref(), link.as_ref()) {
                if c.is_file() {
                    search.consider(&c, false, None);
                }
            }
        } else if p.exists() {
            search.consider(p, true, None);
        } else {
            search.found.refused.push(format!("--symbols {}: no such file or directory", p.display()));
        }
    }
    if let (false, Some(own)) = (search.done(), own.as_ref()) {
        search.consider(&own.path, false, None);
    }
    if let Some((xx, rest)) = &id_path {
        for dir in q.system_dirs {
            let c = dir.join(".build-id").join(xx).join(rest);
            if !search.done() && c.is_file() {
                search.consider(&c, false, None);
            }
        }
    }
    if let Some((xx, rest)) = &id_path {
        let rest = rest.strip_suffix(".debug").unwrap_or(rest);
        for dir in q.build_id_caches {
            // `vdso`: where perf keeps the copy of the vDSO it sampled (`[vdso]`).
            for leaf in ["debug", "elf", "vdso"] {
                let c = dir.join(".build-id").join(xx).join(rest).join(leaf);
                if !search.done() && c.is_file() {
                    search.consider(&c, false, None);
                }
            }
        }
    }
    if let (Some((name, crc)), Some(own)) = (&link, own.as_ref()) {
        for c in debuglink_candidates(&own.path, name, q.system_dirs) {
            // The link may name the binary itself (a file that links to itself is no help).
            if !search.done() && c.is_file() && c != own.path {
                search.consider(&c, false, Some(*crc));
            }
        }
    }
    // The image's own file gives segments (and perhaps a symbol table), unless it has no
    // symbol table and another file of the same build has; else the debug file gives both.
    let fallback = search.fallback.take();
    found.binary = match (own.as_ref(), fallback) {
        // A stripped image and an unstripped copy of the same build: the copy's symbol table.
        (Some(o), Some(f)) if !o.has_symtab() => Some(f),
        (Some(o), _) => Some(o.path.clone()),
        (None, f) => f,
    };
    if let Some(debug) = found.debug.clone() {
        if let Ok(d) = ElfFile::open(&debug) {
            found.sup = find_sup(&d, q, &mut found.refused, &mut found.missing);
        }
    }
    found.dwp = dwp_beside(&found);
    found
}

/// The image's own file, when it is on this machine and reads as ELF; `None`, with a sentence
/// in `refused`, when the profile states a build id (`stated`) and the file's is another.
fn own_file(q: &Query, stated: Option<&[u8]>, refused: &mut Vec<String>) -> Option<ElfFile> {
    let own = q.image.map(Path::new).filter(|p| p.is_file()).and_then(|p| ElfFile::open(p).ok());
    if let (Some(s), Some(o)) = (stated, &own) {
        if o.build_id().is_some_and(|id| id != s) {
            refused.push(format!(
                "{}: refused, its build id {} is not the {} the profile states",
                o.path.display(),
                hex(o.build_id().unwrap_or_default()),
                hex(s)
            ));
            return None;
        }
    }
    own
}

/// The files a `--symbols` folder may hold the image's debug information in: by the image's
/// file name (`base`: `NAME`, `NAME.debug`), by build id (`id_path`: `.build-id/xx/yyyy.debug`,
/// `xx/yyyy.debug`) and by the `.gnu_debuglink` name (`link`, also in `.debug/`).
fn folder_candidates(
    dir: &Path,
    base: Option<&str>,
    id_path: Option<&(String, String)>,
    link: Option<&(String, u32)>,
) -> Vec<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(b) = base {
        candidates.push(dir.join(b));
        candidates.push(dir.join(format!("{b}.debug")));
    }
    if let Some((xx, rest)) = id_path {
        candidates.push(dir.join(".build-id").join(xx).join(rest));
        candidates.push(dir.join(xx).join(rest));
    }
    if let Some((name, _)) = link {
        candidates.push(dir.join(name));
        candidates.push(dir.join(".debug").join(name));
    }
    candidates
}

/// Where the `.gnu_debuglink` file `name` of the image's own file (`own`) may be: beside it,
/// in the `.debug/` folder beside it, and under each system folder of debug files
/// (`system_dirs`) at the absolute path of its folder.
fn debuglink_candidates(own: &Path, name: &str, system_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let dir = own.parent().map(Path::to_path_buf).unwrap_or_default();
    let absolute = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
    let mut candidates = vec![dir.join(name), dir.join(".debug").join(name)];
    for sys in system_dirs {
        candidates.push(sys.join(absolute.strip_prefix("/").unwrap_or(&absolute)).join(name));
    }
    candidates
}

/// The DWARF package of split DWARF: `FILE.dwp` beside the binary, else beside the debug file.
fn dwp_beside(found: &Found) -> Option<PathBuf> {
    [found.binary.as_ref(), found.debug.as_ref()].into_iter().flatten().find_map(|p| {
        let mut name = p.as_os_str().to_owned();
        name.push(".dwp");
        let dwp = PathBuf::from(name);
        dwp.is_file().then_some(dwp)
    })
}

/// Whether the `--symbols` paths of `q` were meant for its image: one of them is a file named
/// as the image is (a `.debug` suffix aside), or the debug information found lies in one of
/// them (a folder of debug files).
pub(crate) fn meant_for(found: &Found, q: &Query) -> bool {
    let base = q.image.and_then(|p| Path::new(p).file_name());
    let named = q.paths.iter().any(|p| {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let stem = name.strip_suffix(".debug").unwrap_or(&name);
        base.is_some_and(|b| b.to_string_lossy() == stem)
    });
    let inside = [&found.debug, &found.binary]
        .into_iter()
        .flatten()
        .any(|f| q.paths.iter().any(|p| f == p || (p.is_dir() && f.starts_with(p))));
    named || inside
}

struct Search<'f, 'w> {
    want: Option<&'w [u8]>,
    base: Option<String>,
    sole: bool,
    found: &'f mut Found,
    /// A file with a symbol table and no DWARF, kept for names.
    fallback: Option<PathBuf>,
}

impl Search<'_, '_> {
    fn done(&self) -> bool {
        self.found.debug.is_some()
    }

    /// Whether a file named with `--symbols` is meant for this image: the only image that
    /// needs names, or one of the file's name (a `.debug` suffix aside).
    fn meant(&self, path: &Path) -> bool {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let stem = name.strip_suffix(".debug").unwrap_or(&name);
        self.sole || self.base.as_deref() == Some(stem)
    }

    /// Takes `path` if it is the image's: `named` when the user gave this very file, `crc`
    /// when a debug link states the file's checksum.
    fn consider(&mut self, path: &Path, named: bool, crc: Option<u32>) {
        let shown = path.display();
        let file = match ElfFile::open(path) {
            Ok(f) => f,
            Err(e) => {
                if named {
                    self.found.refused.push(format!("--symbols {shown}: {}", e.message));
                }
                return;
            }
        };
        let id = file.build_id();
        match (self.want, id) {
            (Some(w), Some(h)) if w != h => {
                let why = format!("{shown}: refused, its build id {} is not the image's {}", hex(h), hex(w));
                if !named {
                    self.found.refused.push(why);
                } else if self.meant(path) {
                    self.found.wrong_build.push(why);
                }
                // A file named for another image of the profile says nothing about this one.
                return;
            }
            (None, _) if named && !self.meant(path) => {
                // Nothing to match by but the name.
                return;
            }
            _ => {}
        }
        if let Some(crc) = crc {
            let actual = file.crc32();
            if actual != crc {
                self.found.refused.push(format!(
                    "{shown}: refused, its CRC-32 {actual:08x} is not the {crc:08x} the .gnu_debuglink states"
                ));
                return;
            }
        }
        if file.has_dwarf() {
            self.found.debug = Some(path.to_path_buf());
        }
        // A file of the build with its code is the binary where the image's own file is not
        // here (a profile recorded on another machine, the binary named with `--symbols`),
        // whether or not it also holds the DWARF.
        let binary = !file.has_dwarf() || file.has_code();
        if binary && file.has_symbols() && self.fallback.is_none() {
            self.fallback = Some(path.to_path_buf());
        }
    }
}

/// The dwz supplementary file a debug file names in `.gnu_debugaltlink`, when its build id
/// is the one the link states.
fn find_sup(
    debug: &ElfFile,
    q: &Query,
    refused: &mut Vec<String>,
    missing: &mut Vec<String>,
) -> Option<PathBuf> {
    let (name, id) = debug.debugaltlink()?;
    let dir = debug.path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut candidates = vec![dir.join(&name)];
    if id.len() > 1 {
        let h = hex(id);
        for d in q.system_dirs.iter().chain(q.paths.iter().filter(|p| p.is_dir())) {
            candidates.push(d.join(".build-id").join(&h[..2]).join(format!("{}.debug", &h[2..])));
        }
    }
    for c in candidates {
        let Ok(f) = ElfFile::open(&c) else { continue };
        if f.build_id() == Some(id) {
            return Some(c);
        }
        refused.push(format!(
            "{}: refused as the dwz file, its build id is not the one the link states",
            c.display()
        ));
    }
    missing.push(format!(
        "{}: the dwz supplementary file {name} it names was not found: functions described there stay `??`",
        debug.path.display()
    ));
    None
}
