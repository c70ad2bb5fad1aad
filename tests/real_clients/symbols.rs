//! Symbolization against the real tools: valgrind profiles a stripped build, cfghub names it
//! from the unstripped build (directly, through `.gnu_debuglink`, through a build-id folder),
//! and `callgrind_annotate` must show what it shows for valgrind's own profile of the
//! unstripped build; samples of a PIE at runtime addresses and 100,000 sampled addresses of
//! cfghub's own binary must name the functions GNU `addr2line -f -i -C` names.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags, SymbolKind};

use crate::callgrind::annotate;
use crate::common;

fn sh(dir: &Path, program: &str, args: &[&str]) {
    let o = Command::new(program).args(args).current_dir(dir).output().unwrap();
    assert!(o.status.success(), "{program} {args:?}: {}", common::stderr(&o));
}

/// Compiles the inlining fixture with `flags` into `dir/name`.
fn build(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    std::fs::copy(common::fixture("symbols/inlined.c"), dir.join("inlined.c")).unwrap();
    let mut args = vec!["-g", "-O2"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["-o", name, "inlined.c"]);
    sh(dir, "gcc", &args);
    dir.join(name)
}

/// Runs `exe` under callgrind, returning the profile's path.
fn callgrind(dir: &Path, exe: &str, out: &str) -> PathBuf {
    let profile = dir.join(out);
    let o = Command::new("valgrind")
        .args(["--tool=callgrind", "--dump-instr=yes"])
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg(format!("./{exe}"))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "valgrind: {}", common::stderr(&o));
    profile
}

/// The self costs `callgrind_annotate` shows for the program's own source file.
fn program_functions(profile: &Path) -> BTreeMap<String, u64> {
    annotate(profile).functions.into_iter().filter(|(k, _)| k.starts_with("inlined.c:")).collect()
}

fn convert(args: &[&str]) -> String {
    let o = common::run(args);
    assert!(o.status.success(), "cfghub {args:?}: {}", common::stderr(&o));
    common::stderr(&o)
}

#[test]
fn stripped_callgrind_profiles_are_named_as_valgrind_names_the_unstripped_build() {
    for tool in ["gcc", "valgrind", "callgrind_annotate", "strip", "objcopy"] {
        common::require(tool);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    build(dir, "prog", &["-no-pie"]);
    sh(dir, "strip", &["-o", "prog.stripped", "prog"]);
    sh(dir, "objcopy", &["--only-keep-debug", "prog", "prog.debug"]);
    sh(dir, "strip", &["-o", "prog.linked", "prog"]);
    sh(dir, "objcopy", &["--add-gnu-debuglink=prog.debug", "prog.linked"]);

    let want = program_functions(&callgrind(dir, "prog", "callgrind.out.full"));
    for f in ["inlined.c:work", "inlined.c:fib", "inlined.c:fib'2", "inlined.c:main"] {
        assert!(want.get(f).is_some_and(|&c| c > 0), "valgrind names {f}: {want:?}");
    }
    let stripped = callgrind(dir, "prog.stripped", "callgrind.out.stripped");
    assert!(program_functions(&stripped).is_empty(), "a stripped build has no source file");
    callgrind(dir, "prog.linked", "callgrind.out.linked");

    let path = |p: &str| dir.join(p).display().to_string();
    // The unstripped build named with --symbols.
    convert(&[
        "convert",
        &path("callgrind.out.stripped"),
        "--symbols",
        &path("prog"),
        "-o",
        &path("a.callgrind"),
    ]);
    assert_eq!(program_functions(&dir.join("a.callgrind")), want, "--symbols BINARY");
    // The debug file the stripped binary's .gnu_debuglink names, found beside it.
    convert(&["convert", &path("callgrind.out.linked"), "--symbols", "-o", &path("b.callgrind")]);
    assert_eq!(program_functions(&dir.join("b.callgrind")), want, ".gnu_debuglink");
    let o = common::run(&["info", &path("callgrind.out.linked"), "--json", "--symbols"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let info: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let image = info["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["image"].as_str().unwrap().ends_with("prog.linked"))
        .expect("a report for the program");
    assert_eq!(image["debug_file"].as_str(), Some(path("prog.debug").as_str()), "{image}");
    assert!(image["inline_frames"].as_u64().unwrap() > 0, "{image}");
    assert_eq!(image["unnamed"].as_u64(), Some(0), "{image}");
    // A folder holding the debug file under its build id.
    let id = build_id(&dir.join("prog"));
    let ids = dir.join("ids/.build-id").join(&id[..2]);
    std::fs::create_dir_all(&ids).unwrap();
    std::fs::copy(dir.join("prog.debug"), ids.join(format!("{}.debug", &id[2..]))).unwrap();
    convert(&[
        "convert",
        &path("callgrind.out.stripped"),
        "--symbols",
        &path("ids"),
        "-o",
        &path("c.callgrind"),
    ]);
    assert_eq!(program_functions(&dir.join("c.callgrind")), want, "build-id folder");
}

fn build_id(path: &Path) -> String {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.build_id().unwrap().unwrap().iter().map(|b| format!("{b:02x}")).collect()
}

/// Function symbols (address, size, name) and the start of the executable segment.
fn layout(path: &Path) -> (Vec<(u64, u64, String)>, u64) {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let text = file
        .segments()
        .find(
            |s| matches!(s.flags(), SegmentFlags::Elf { p_flags, .. } if p_flags.contains(object::elf::PF_X)),
        )
        .expect("an executable segment")
        .address();
    let mut symbols: Vec<(u64, u64, String)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.address() > 0)
        .map(|s| (s.address(), s.size(), s.name().unwrap().to_string()))
        .collect();
    symbols.sort();
    (symbols, text)
}

/// A dcpicat dump of one image with one event `cycles`: `samples` as (runtime address, count).
fn dcpicat(path: &str, text_start: u64, samples: &[(u64, u64)]) -> String {
    let total: u64 = samples.iter().map(|s| s.1).sum();
    let mut out = format!(
        "name                 test\nimage                1\npath                 {path}\nepoch                202611230000\n\
         platform             x86_64\ntext_start           {text_start:#014x}\ntext_size            0x000010000000\n\
         event                {total} cycles:63488:10000\n"
    );
    for (a, c) in samples {
        out.push_str(&format!("{a:#014x}      {c}\n"));
    }
    out
}

/// GNU addr2line's inline chains for `addresses` (stated), outermost function first.
fn addr2line(binary: &Path, addresses: &[u64]) -> Vec<Vec<String>> {
    let mut child = Command::new("addr2line")
        .args(["-a", "-f", "-i", "-C", "-e"])
        .arg(binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for a in addresses {
        input.push_str(&format!("{a:#x}\n"));
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let mut chains: Vec<Vec<String>> = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.starts_with("0x") {
            chains.push(Vec::new());
        } else {
            chains.last_mut().expect("an address line first").insert(0, line.to_string());
            lines.next(); // file:line
        }
    }
    assert_eq!(chains.len(), addresses.len());
    chains
}

/// Folded stacks as (frames joined by `;`) -> count.
fn folded(path: &Path) -> HashMap<String, u64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (stack, count) = line.rsplit_once(' ').unwrap();
        *out.entry(stack.to_string()).or_default() += count.parse::<u64>().unwrap();
    }
    out
}

/// The inlining fixture built as a PIE in a folder of its own, with the start of its executable
/// segment and every address of its functions `work`, `fib` and `main` as the file states them.
struct SampledPie {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    exe: PathBuf,
    text: u64,
    stated: Vec<u64>,
}

fn sampled_pie() -> SampledPie {
    for tool in ["gcc", "addr2line"] {
        common::require(tool);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let exe = build(&dir, "pie", &["-fPIE", "-pie"]);
    let (symbols, text) = layout(&exe);
    let mut stated = Vec::new();
    for (start, size, name) in &symbols {
        if ["work", "fib", "main"].contains(&name.as_str()) {
            stated.extend(*start..start + size);
        }
    }
    SampledPie { _tmp: tmp, dir, exe, text, stated }
}

/// The folded stacks GNU addr2line gives samples (one per stated address, with its count):
/// each address's inline chain, outermost first, counts summed.
fn addr2line_stacks(exe: &Path, stated: &[u64], samples: &[(u64, u64)]) -> HashMap<String, u64> {
    let mut want: HashMap<String, u64> = HashMap::new();
    for (chain, (_, count)) in addr2line(exe, stated).iter().zip(samples) {
        *want.entry(chain.join(";")).or_default() += count;
    }
    want
}

/// `cfghub convert INPUT --symbols BINARY EXTRA...` to folded stacks, read back.
fn symbolized_stacks(input: &Path, binary: &Path, extra: &[&str]) -> HashMap<String, u64> {
    let out = input.with_extension("folded");
    let mut args = vec!["convert", input.to_str().unwrap(), "--symbols", binary.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend(["-o", out.to_str().unwrap()]);
    convert(&args);
    // Frames named alike make one stack: each line of the output is a stack of its own.
    let text = std::fs::read_to_string(&out).unwrap();
    let stacks: Vec<&str> = text.lines().filter_map(|l| l.rsplit_once(' ').map(|(s, _)| s)).collect();
    let distinct: std::collections::HashSet<&&str> = stacks.iter().collect();
    assert_eq!(distinct.len(), stacks.len(), "equal stacks written apart: {text}");
    folded(&out)
}

#[test]
fn pie_samples_at_runtime_addresses_get_the_inline_chains_addr2line_gives() {
    let SampledPie { dir, exe, text, stated, .. } = &sampled_pie();
    let base = 0x5555_5555_4000u64;
    let samples: Vec<(u64, u64)> = stated.iter().map(|&a| (a + base, 1 + a % 3)).collect();
    let input = dir.join("pie.dcpicat");
    std::fs::write(&input, dcpicat(exe.to_str().unwrap(), base + text, &samples)).unwrap();
    let want = addr2line_stacks(exe, stated, &samples);
    assert!(want.keys().any(|k| k.starts_with("work;poly")), "inlined frames: {want:?}");
    assert_eq!(symbolized_stacks(&input, exe, &[]), want);
    // --no-inline: one frame per function.
    let got = symbolized_stacks(&input, exe, &["--no-inline"]);
    let mut names: Vec<&str> = got.keys().map(|k| k.as_str()).collect();
    names.sort();
    assert_eq!(names, ["fib", "main", "work"]);
}

/// A pprof profile of a PIE as perf_to_profile writes one from perf's mmap records: the text
/// segment's mapping starts at the segment's page (`memory_start`) and maps the file from
/// that page's offset (`file_offset`, 0x1000 for GNU ld), and its locations are runtime
/// addresses without lines; one sample at each address of `samples`.
fn pprof_of_a_text_mapping(binary: &Path, start: u64, file_offset: u64, samples: &[(u64, u64)]) -> Vec<u8> {
    use common::protobuf::{field, uint, varint};
    let strings = ["", "samples", "count", binary.to_str().unwrap()];
    let mut out = Vec::new();
    let mut message = Vec::new();
    uint(&mut message, 1, 1);
    uint(&mut message, 2, 2);
    field(&mut out, 1, &message);
    for (i, &(_, count)) in samples.iter().enumerate() {
        let (mut sample, mut location) = (Vec::new(), Vec::new());
        varint(&mut location, i as u64 + 1);
        field(&mut sample, 1, &location);
        let mut values = Vec::new();
        varint(&mut values, count);
        field(&mut sample, 2, &values);
        field(&mut out, 2, &sample);
    }
    let mut mapping = Vec::new();
    for (n, v) in [(1, 1), (2, start), (3, start + 0x10_0000), (4, file_offset), (5, 3)] {
        uint(&mut mapping, n, v);
    }
    field(&mut out, 3, &mapping);
    for (i, &(address, _)) in samples.iter().enumerate() {
        let mut location = Vec::new();
        for (n, v) in [(1, i as u64 + 1), (2, 1), (3, address)] {
            uint(&mut location, n, v);
        }
        field(&mut out, 4, &location);
    }
    for text in strings {
        field(&mut out, 6, text.as_bytes());
    }
    out
}

/// The stacks of a pprof profile whose locations are bare addresses are named by `--symbols`,
/// its mapping placed by the segment that holds the mapping's file offset, as pprof places it.
#[test]
fn pprof_locations_of_a_pie_text_mapping_get_the_inline_chains_addr2line_gives() {
    let SampledPie { dir, exe, text, stated, .. } = &sampled_pie();
    let data = std::fs::read(exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let text_offset = file.segments().find(|s| s.address() == *text).unwrap().file_range().0;
    let (page, page_offset) = (text & !0xfff, text_offset & !0xfff);
    let start = 0x5555_5555_5000u64;
    let samples: Vec<(u64, u64)> = stated.iter().map(|&a| (a - page + start, 1 + a % 3)).collect();
    let input = dir.join("pie.pb");
    std::fs::write(&input, pprof_of_a_text_mapping(exe, start, page_offset, &samples)).unwrap();
    assert!(page_offset > 0, "the text is mapped from past the file's first page");
    assert_eq!(symbolized_stacks(&input, exe, &[]), addr2line_stacks(exe, stated, &samples));
}

#[test]
fn samples_at_100000_addresses_of_cfghub_name_the_functions_addr2line_names() {
    common::require("addr2line");
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_cfghub"));
    let (symbols, text) = layout(&binary);
    // 100,000 distinct addresses inside functions, spread by a fixed pseudo-random sequence.
    let span: u64 = symbols.iter().map(|s| s.1).sum();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut picked = std::collections::BTreeSet::new();
    let ends: Vec<u64> = symbols
        .iter()
        .scan(0, |acc, s| {
            *acc += s.1;
            Some(*acc)
        })
        .collect();
    while picked.len() < 100_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let at = state % span;
        let k = ends.partition_point(|&e| e <= at);
        let (start, size, _) = &symbols[k];
        picked.insert(start + (at - (ends[k] - size)));
    }
    let addresses: Vec<u64> = picked.into_iter().collect();
    let samples: Vec<(u64, u64)> = addresses.iter().map(|&a| (a, 1 + (a * 2654435761) % 7)).collect();
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("cfghub.dcpicat");
    std::fs::write(&input, dcpicat(binary.to_str().unwrap(), text, &samples)).unwrap();
    let out = tmp.path().join("cfghub.folded");
    convert(&[
        "convert",
        input.to_str().unwrap(),
        "--symbols",
        binary.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);

    // Samples per outermost function, both ways.
    let mut ours: HashMap<String, u64> = HashMap::new();
    for (stack, count) in folded(&out) {
        let outer = stack.split(';').next().unwrap().to_string();
        *ours.entry(outer).or_default() += count;
    }
    let mut theirs: HashMap<String, u64> = HashMap::new();
    for (chain, (_, count)) in addr2line(&binary, &addresses).iter().zip(&samples) {
        *theirs.entry(chain[0].clone()).or_default() += count;
    }
    let total: u64 = samples.iter().map(|s| s.1).sum();
    assert_eq!(ours.values().sum::<u64>(), total, "every sample is in a stack");
    let agree: u64 = theirs.iter().map(|(f, &c)| c.min(ours.get(f).copied().unwrap_or(0))).sum();
    let mut worst: Vec<(i64, &String)> = theirs
        .iter()
        .map(|(f, &c)| (c as i64 - ours.get(f).copied().unwrap_or(0) as i64, f))
        .filter(|d| d.0 != 0)
        .collect();
    worst.sort();
    worst.reverse();
    worst.truncate(10);
    assert!(
        agree as f64 >= 0.99 * total as f64,
        "{agree} of {total} samples agree with addr2line; most different: {worst:?}"
    );
}

#[test]
fn dwz_compressed_debug_information_is_read_through_its_supplementary_file() {
    for tool in ["gcc", "dwz", "addr2line"] {
        common::require(tool);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let one = build(dir, "one", &["-no-pie"]);
    build(dir, "two", &["-no-pie", "-DSECOND_BUILD=1"]);
    // The DWARF both builds share moves to common.debug, which each names in .gnu_debugaltlink.
    let common_file = dir.join("common.debug");
    sh(dir, "dwz", &["-m", "common.debug", "-M", common_file.to_str().unwrap(), "one", "two"]);
    let (symbols, text) = layout(&one);
    let (start, size, _) = symbols.iter().find(|s| s.2 == "work").expect("work").clone();
    let stated: Vec<u64> = (start..start + size).collect();
    let samples: Vec<(u64, u64)> = stated.iter().map(|&a| (a, 1)).collect();
    let input = dir.join("one.dcpicat");
    std::fs::write(&input, dcpicat(one.to_str().unwrap(), text, &samples)).unwrap();
    let out = dir.join("one.folded");
    convert(&["convert", input.to_str().unwrap(), "--symbols", "-o", out.to_str().unwrap()]);
    let got = folded(&out);
    assert!(
        got.keys().any(|k| k == "work;poly;square"),
        "inlined functions described in the dwz file: {got:?}"
    );
    assert!(!got.keys().any(|k| k.contains("??")), "{got:?}");
    // Without the supplementary file, a warning says so.
    std::fs::rename(&common_file, dir.join("moved.debug")).unwrap();
    let err = convert(&["convert", input.to_str().unwrap(), "--symbols", "-o", out.to_str().unwrap()]);
    assert!(err.contains("common.debug") && err.contains("was not found"), "{err}");
}

/// `--symbols` naming a build other than the one profiled is refused, and said so even when
/// the image's own file gives the names instead; the libraries `--symbols ./prog` was not
/// meant for get one line between them, not warnings of their own.
#[test]
fn symbols_warn_about_the_image_they_were_named_for_and_only_once_about_the_others() {
    for tool in ["gcc", "valgrind", "strip"] {
        common::require(tool);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prog = build(dir, "prog", &["-no-pie"]);
    // Another build of the same name: other code, so another build id.
    let other = dir.join("other");
    std::fs::create_dir(&other).unwrap();
    let source = std::fs::read_to_string(common::fixture("symbols/inlined.c")).unwrap();
    std::fs::write(other.join("inlined.c"), source.replace("3 * x + 1", "5 * x + 2")).unwrap();
    sh(&other, "gcc", &["-g", "-O2", "-no-pie", "-o", "prog", "inlined.c"]);
    assert_ne!(build_id(&prog), build_id(&other.join("prog")));

    // Samples of the unstripped build: its own file names them, the other build is refused.
    let (work, _) =
        layout(&prog).0.into_iter().find(|(_, _, n)| n == "work").map(|(a, s, _)| (a, s)).unwrap();
    let samples = dir.join("samples.dcpicat");
    std::fs::write(&samples, dcpicat(prog.to_str().unwrap(), 0x400000, &[(work + 4, 10)])).unwrap();
    let out = dir.join("named.folded");
    let (samples, out) = (samples.to_str().unwrap(), out.to_str().unwrap());
    let other_prog = other.join("prog");
    let warnings = convert(&["convert", samples, "--symbols", other_prog.to_str().unwrap(), "-o", out]);
    assert!(
        warnings.contains("refused, its build id")
            && warnings.contains("another build than the one profiled"),
        "{warnings}"
    );
    assert!(std::fs::read_to_string(out).unwrap().contains("work"), "named from the image's own file");

    // A stripped build under valgrind, named with `--symbols ./prog`: its libraries (the
    // loader, valgrind's preload objects) are not what --symbols was for.
    std::fs::copy(&prog, dir.join("stripped")).unwrap();
    sh(dir, "strip", &["stripped"]);
    let profile = callgrind(dir, "stripped", "callgrind.out.stripped");
    let o = common::cfghub()
        .args(["convert", profile.to_str().unwrap(), "--symbols", "./prog", "-o", "named.callgrind"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let stderr = common::stderr(&o);
    let about_libraries: Vec<&str> = stderr.lines().filter(|l| l.contains(".so")).collect();
    assert!(about_libraries.len() <= 1, "one line at most about the libraries:\n{stderr}");
    assert!(!stderr.contains("refused"), "./prog is not refused by images it was not named for:\n{stderr}");
}

/// C++ names as addr2line and llvm-symbolizer give them: the two `std::function` handlers of
/// handlers.cpp keep their qualified names (DWARF names both `_M_invoke`, which would make
/// them one function of 30 samples), and `std::swap<double>` inlined into `app::order` is
/// demangled although its return type is beyond the demangler.
#[test]
fn cpp_functions_keep_their_qualified_names_and_inlined_frames_are_demangled() {
    for tool in ["g++", "addr2line", "c++filt"] {
        common::require(tool);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::copy(common::fixture("symbols/handlers.cpp"), dir.join("handlers.cpp")).unwrap();
    sh(dir, "g++", &["-g", "-O2", "-no-pie", "-o", "handlers", "handlers.cpp"]);
    let exe = dir.join("handlers");
    let (symbols, text) = layout(&exe);
    let handlers: Vec<(u64, String)> = symbols
        .iter()
        .filter(|(_, _, n)| n.contains("_M_invoke"))
        .map(|(a, _, n)| (a + 2, n.clone()))
        .collect();
    assert_eq!(handlers.len(), 2, "{symbols:?}");
    let (order, size, _) = symbols.iter().find(|(_, _, n)| n == "_ZN3app5orderEPdS0_i").unwrap().clone();
    // The address where the swap's stores are (inlined std::swap<double>).
    let swap = (order..order + size)
        .find(|&a| addr2line(&exe, &[a])[0].iter().any(|f| f.contains("std::swap<double>")))
        .expect("std::swap<double> inlined into app::order");
    let samples = dir.join("samples.dcpicat");
    let input = dcpicat(exe.to_str().unwrap(), text, &[(handlers[0].0, 10), (handlers[1].0, 20), (swap, 30)]);
    std::fs::write(&samples, input).unwrap();
    let out = dir.join("named.folded");
    convert(&[
        "convert",
        samples.to_str().unwrap(),
        "--symbols",
        exe.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let stacks = folded(&out);
    // Each handler is its own function, named as binutils demangles its symbol.
    for ((_, mangled), samples) in handlers.iter().zip([10, 20]) {
        let o = Command::new("c++filt").arg(mangled).output().unwrap();
        let outer = common::stdout(&o).trim().to_string();
        assert!(outer.contains("_Function_handler") && outer.contains("_M_invoke"), "{outer}");
        let own: u64 =
            stacks.iter().filter(|(k, _)| k.starts_with(&format!("{outer};"))).map(|(_, v)| v).sum();
        assert_eq!(own, samples, "{outer} in {stacks:?}");
    }
    assert!(stacks.keys().all(|k| !k.contains("_Z")), "nothing left mangled: {stacks:?}");
    // The inlined swap named as addr2line -C names it (libiberty's words, as c++filt's).
    let swap_name =
        addr2line(&exe, &[swap])[0].iter().find(|f| f.contains("std::swap<double>")).cloned().unwrap();
    let key = format!("app::order(double*, double*, int);{swap_name}");
    assert_eq!(stacks.get(&key), Some(&30), "{key} in {stacks:?}");
}

/// Inline chains from `llvm-symbolizer` (which reads split DWARF), outermost function first.
fn llvm_symbolizer(binary: &Path, addresses: &[u64]) -> Vec<Vec<String>> {
    let input: String = addresses.iter().map(|a| format!("{a:#x}\n")).collect();
    let mut child = Command::new("llvm-symbolizer-19")
        .args(["-f", "-i", "-e"])
        .arg(binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let chains: Vec<Vec<String>> = text
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut chain: Vec<String> = block.lines().step_by(2).map(String::from).collect();
            chain.reverse();
            chain
        })
        .collect();
    assert_eq!(chains.len(), addresses.len(), "{text}");
    chains
}

/// A `-gsplit-dwarf` build without a `.dwp`: the `.dwo` file the skeleton unit names is read,
/// so samples get the inline chains llvm-symbolizer gives; without it, a warning says which
/// file is missing instead of silently giving no inlined frames.
#[test]
fn split_dwarf_is_read_from_its_dwo_files_and_a_missing_one_is_named() {
    for tool in ["gcc", "llvm-symbolizer-19"] {
        common::require(tool);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let exe = build(dir, "split", &["-gsplit-dwarf", "-no-pie"]);
    let dwo: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "dwo"))
        .collect();
    assert_eq!(dwo.len(), 1, "gcc wrote one .dwo: {dwo:?}");
    let (symbols, text) = layout(&exe);
    let (work, size, _) = symbols.iter().find(|(_, _, n)| n == "work").unwrap().clone();
    let addresses: Vec<u64> = (work..work + size).collect();
    let mut expected: HashMap<String, u64> = HashMap::new();
    for chain in llvm_symbolizer(&exe, &addresses) {
        *expected.entry(chain.join(";")).or_default() += 1;
    }
    assert!(expected.keys().any(|k| k == "work;poly;square"), "{expected:?}");
    let samples = dir.join("samples.dcpicat");
    let counts: Vec<(u64, u64)> = addresses.iter().map(|&a| (a, 1)).collect();
    std::fs::write(&samples, dcpicat(exe.to_str().unwrap(), text, &counts)).unwrap();
    let (samples, exe) = (samples.to_str().unwrap(), exe.to_str().unwrap());
    let out = dir.join("named.folded");
    let warnings = convert(&["convert", samples, "--symbols", exe, "-o", out.to_str().unwrap()]);
    assert!(!warnings.contains(".dwo"), "{warnings}");
    assert_eq!(folded(&out), expected);

    let away = dir.join("away");
    std::fs::create_dir(&away).unwrap();
    std::fs::rename(&dwo[0], away.join(dwo[0].file_name().unwrap())).unwrap();
    let warnings = convert(&["convert", samples, "--symbols", exe, "-o", out.to_str().unwrap()]);
    assert!(
        warnings.contains(".dwo file(s) not found") && warnings.contains(dwo[0].to_str().unwrap()),
        "{warnings}"
    );
    assert_eq!(folded(&out).get("work"), Some(&size), "named from the skeleton and symbol table");
}
