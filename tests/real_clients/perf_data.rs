//! perf.data against perf itself: C programs compiled here and recorded with `perf record -g
//! -e cpu-clock` (a software event, so it works without a PMU). cfghub's folded stacks of the
//! file must be those of `perf script` of the same file read by cfghub's `perf script` reader,
//! stack for stack, in the file layout, the pipe layout and zstd-compressed, and for a program
//! that spends its time in the C library's aliased functions (perf's choice among symbols
//! that share an address) or in PLT stubs (perf's symbols for them); the Callgrind
//! total must be the samples' periods added up; functions are named from the build ids perf
//! recorded (the binary is gone, perf's build-id cache has it) with no `--symbols`; and
//! `callgrind_annotate` shows the hot loop's source lines.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, run, stderr};

/// Compiles the fixture program into `dir` and records it with call chains (`-g`) and
/// `extra` options; `None` (with a note) when this machine does not let perf record at all.
fn record(dir: &Path, program: &str, extra: &[&str], output: &str) -> Option<PathBuf> {
    let tries: Vec<Vec<&str>> = ["cpu-clock", "cpu-clock:u"]
        .iter()
        .map(|event| extra.iter().copied().chain(["-g", "-e", event]).collect())
        .collect();
    record_with(dir, program, &tries, output)
}

/// Compiles the fixture program into `dir` and records it with the first of `tries` (perf
/// record's options) that perf accepts.
fn record_with(dir: &Path, program: &str, tries: &[Vec<&str>], output: &str) -> Option<PathBuf> {
    common::require("perf");
    common::require("gcc");
    let cpp = program.ends_with("-cpp");
    // `hot-stripped`: hot.c without any symbol table.
    let source_name = program.strip_suffix("-stripped").unwrap_or(program);
    let source = common::fixture(&format!("perf-data/{source_name}.{}", if cpp { "cc" } else { "c" }));
    let binary = dir.join("hot");
    let freestanding: &[&str] = match program {
        "hot-nolibc" => &["-static", "-nostdlib", "-fno-stack-protector", "-fcf-protection=none"],
        // Calls straight through the GOT: no samples in PLT stubs, which perf names by
        // entries of its own making (`memcpy@plt`).
        "hot-libc" => &["-fno-plt"],
        // Calls through the PLT, to functions the compiler would otherwise inline.
        "hot-plt" => &["-fno-builtin"],
        // Stubs in `.plt.sec` (the calls, with CET's `-z ibtplt`) and `.plt.got` (`memcpy`,
        // whose address is taken too).
        "hot-plt-sections" => &["-fno-builtin", "-fcf-protection=full", "-Wl,-z,ibtplt"],
        "hot-stripped" => &["-s"],
        _ => &[],
    };
    // After the common flags, which they override: the interpreter without frame pointers,
    // as `--call-graph dwarf` is for.
    let unwound: &[&str] = match program {
        "interp" => &["-O2", "-fomit-frame-pointer"],
        _ => &[],
    };
    let argument = match program {
        // fib(33) interpreted: about 0.35 s, 1,400 samples of up to 40 frames.
        "interp" => "33",
        "hot-libc" => "100000",
        "hot-plt" | "hot-plt-sections" => "60000000",
        // About 0.13 s and 430 samples, 30 of them in the least sampled function the test
        // looks for (3,000,000 gave 50 samples, 3 there, and once none).
        "hot-cpp" => "30000000",
        _ => "30000000",
    };
    let cc = Command::new(if cpp { "g++" } else { "gcc" })
        .args(freestanding)
        .args(["-O1", "-g", "-gdwarf-4", "-fno-omit-frame-pointer"])
        .args(unwound)
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .status()
        .unwrap();
    assert!(cc.success());
    let data = dir.join(output);
    for options in tries {
        let mut perf = Command::new("perf");
        perf.arg("record").args(options);
        let o = if output == "-" {
            perf.args(["-o", "-"]).arg(&binary).arg(argument).current_dir(dir).output().unwrap()
        } else {
            perf.arg("-o").arg(&data).arg(&binary).arg(argument).current_dir(dir).output().unwrap()
        };
        if o.status.success() {
            if output == "-" {
                let piped = dir.join("pipe.perf.data");
                std::fs::write(&piped, &o.stdout).unwrap();
                return Some(piped);
            }
            return Some(data);
        }
    }
    common::unavailable(
        "`perf record -e cpu-clock` is not permitted here (see /proc/sys/kernel/perf_event_paranoid)",
    );
    None
}

/// The stacks of a folded file, sorted, comment lines left out.
fn stacks(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().filter(|l| !l.starts_with('#')).map(str::to_string).collect();
    lines.sort();
    lines
}

/// cfghub's folded stacks of a perf.data file, and of `perf script` of it.
fn both_ways(dir: &Path, data: &Path) -> (Vec<String>, Vec<String>) {
    let direct = dir.join("direct.folded");
    let o = run(&["convert", data.to_str().unwrap(), "-o", direct.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let script = Command::new("perf").arg("script").arg("-i").arg(data).output().unwrap();
    assert!(script.status.success(), "{}", String::from_utf8_lossy(&script.stderr));
    let text = dir.join("script.perf.txt");
    std::fs::write(&text, &script.stdout).unwrap();
    let via = dir.join("via-script.folded");
    let o = run(&["convert", "--from", "perf", text.to_str().unwrap(), "-o", via.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    (stacks(&direct), stacks(&via))
}

#[test]
fn folded_stacks_equal_those_of_perf_script_in_every_layout() {
    for (extra, output) in [(&[][..], "perf.data"), (&["-z"][..], "perf.data"), (&[][..], "-")] {
        let dir = tempfile::tempdir().unwrap();
        let Some(data) = record(dir.path(), "hot-nolibc", extra, output) else { return };
        let (direct, via) = both_ways(dir.path(), &data);
        assert!(direct.iter().any(|s| s.contains("main;inner")), "{extra:?} {output}: {direct:#?}");
        assert_eq!(direct, via, "{extra:?} {output}");
    }
}

/// A program that spends its time in the C library's system call wrappers and `memcpy`,
/// whose addresses carry several symbols each (`write`, `__write`, `__libc_write`,
/// `__GI___libc_write`): every frame named as perf names it, by perf's choice among them,
/// the dynamic loader's labels (`_dl_start_user`) as functions, and `clock_gettime` in the vDSO.
#[test]
fn c_library_aliases_are_named_as_perf_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record(dir.path(), "hot-libc", &[], "perf.data") else { return };
    let (direct, via) = both_ways(dir.path(), &data);
    let user_write = |s: &String| s.split(';').any(|f| f.contains("write") && !f.contains("_[k]"));
    assert!(direct.iter().any(user_write), "{direct:#?}");
    assert_eq!(direct, via);
}

/// A program whose samples fall in its PLT stubs: each named as perf names it, by the
/// symbol perf made for the entry (`memcpy@plt`) or by `_init`, which perf stretched over the
/// PLT, as perf's symbol tree decides.
#[test]
fn plt_entries_are_named_as_perf_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record(dir.path(), "hot-plt", &[], "perf.data") else { return };
    let (direct, via) = both_ways(dir.path(), &data);
    assert!(via.iter().any(|s| s.contains("@plt")), "no sample in a PLT stub: {via:#?}");
    assert_eq!(direct, via);
}

/// A program whose samples fall in the stubs of `.plt.sec` and `.plt.got`, of which perf 6.1
/// makes no symbols: each named as perf names it, by `_init` (stretched over the PLT) where
/// perf's symbol tree meets it, else by no symbol (`[hot]`, the file).
#[test]
fn plt_sec_and_plt_got_stubs_are_named_as_perf_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record(dir.path(), "hot-plt-sections", &[], "perf.data") else { return };
    let elf =
        common::stdout(&Command::new("readelf").arg("-SW").arg(dir.path().join("hot")).output().unwrap());
    assert!(elf.contains(".plt.sec") && elf.contains(".plt.got"), "{elf}");
    let (direct, via) = both_ways(dir.path(), &data);
    let in_stubs = |s: &String| {
        let stack = s.rsplit_once(' ').map_or("", |(stack, _)| stack);
        matches!(stack.rsplit(';').next(), Some("_init" | "[hot]"))
    };
    assert!(via.iter().any(in_stubs), "no sample in a stub: {via:#?}");
    // (ld.so's own unnamed stub, `@plt`, may be sampled as the program starts.)
    let named_stub = |s: &String| s.split([';', ' ']).any(|f| f.len() > 4 && f.ends_with("@plt"));
    assert!(!via.iter().any(named_stub), "perf 6.1 names no stub of these sections: {via:#?}");
    assert_eq!(direct, via);
}

/// C++ names libiberty (perf's demangler) and cpp_demangle write differently: a function's
/// address and a function type among template arguments, a reference to a function type, a
/// substitution of a pointer type before a member type, `nullptr`'s type, a method for
/// rvalues.
#[test]
fn cpp_names_are_written_as_perf_writes_them() {
    common::require("g++");
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record(dir.path(), "hot-cpp", &[], "perf.data") else { return };
    let (direct, via) = both_ways(dir.path(), &data);
    assert!(via.iter().any(|s| s.contains(";via<&(inc(long&)), int (*)(double)>")), "{via:#?}");
    for name in
        [";Vec<std::pair<ns::Rec*, ns::Rec::Data*> >::run", ";drop<decltype(nullptr)>", ";Once::take "]
    {
        assert!(via.iter().any(|s| s.contains(name)), "{name}: {via:#?}");
    }
    assert_eq!(direct, via);
}

/// Breaks a library's `.dynsym` as BOLT leaves it: the last defined function's section index
/// made to point past the last section.
fn break_dynamic_symbols(library: &Path) {
    use object::read::elf::{FileHeader, SectionHeader, Sym};
    let mut bytes = std::fs::read(library).unwrap();
    let elf = object::elf::FileHeader64::<object::Endianness>::parse(&*bytes).unwrap();
    let endian = elf.endian().unwrap();
    let sections = elf.sections(endian, &*bytes).unwrap();
    let (_, dynsym) = sections.section_by_name(endian, b".dynsym").unwrap();
    let symbols = sections.symbols(endian, &*bytes, object::elf::SHT_DYNSYM).unwrap();
    let last = (0..symbols.len())
        .rev()
        .find(|&i| {
            let sym = symbols.symbol(object::SymbolIndex(i)).unwrap();
            sym.st_type() == object::elf::STT_FUNC && sym.st_shndx(endian) != object::elf::SHN_UNDEF
        })
        .unwrap();
    let at = dynsym.sh_offset(endian) as usize + last * 24 + 6;
    let past = u16::try_from(sections.len() + 4).unwrap();
    bytes[at..at + 2].copy_from_slice(&past.to_le_bytes());
    std::fs::write(library, bytes).unwrap();
}

/// A library whose `.dynsym` perf gives up reading part way: the aliases of one function it
/// read stay in its symbol tree unsorted, and an address is named by the first its walk meets
/// (here not the alias `choose_best_symbol` prefers).
#[test]
fn aliases_of_a_table_perf_gives_up_on_are_named_as_perf_names_them() {
    common::require("perf");
    common::require("gcc");
    let dir = tempfile::tempdir().unwrap();
    let source = common::fixture("perf-data/hot-aliases.c");
    let library = dir.path().join("libaliases.so");
    let gcc = |args: &[&str], out: &Path| {
        let o = Command::new("gcc").args(args).arg("-o").arg(out).arg(&source).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    gcc(&["-O1", "-DLIBRARY", "-shared", "-fPIC"], &library);
    break_dynamic_symbols(&library);
    let program = dir.path().join("hot");
    let link = format!("-Wl,-rpath,{}", dir.path().display());
    let libdir = format!("-L{}", dir.path().display());
    let o = Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&program)
        .arg(&source)
        .args([libdir.as_str(), "-laliases", link.as_str()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let data = dir.path().join("perf.data");
    let recorded = ["cpu-clock", "cpu-clock:u"].iter().any(|event| {
        let mut perf = Command::new("perf");
        perf.args(["record", "-g", "-e", event, "-o"]).arg(&data).arg(&program).arg("100000000");
        // perf exits with the program's status (here its result, not 0): it recorded when it
        // says it wrote the file.
        let o = perf.output().unwrap();
        o.status.success() || String::from_utf8_lossy(&o.stderr).contains("Captured and wrote")
    });
    if !recorded {
        common::unavailable("`perf record -e cpu-clock` is not permitted here");
        return;
    }
    let (direct, via) = both_ways(dir.path(), &data);
    assert!(via.iter().any(|s| s.contains(";qa")), "{via:#?}");
    assert_eq!(direct, via);
}

/// The periods of the samples, from `perf script -F period`.
fn periods(data: &Path) -> Vec<u64> {
    let o = Command::new("perf").args(["script", "-F", "period", "-i"]).arg(data).output().unwrap();
    String::from_utf8_lossy(&o.stdout).split_whitespace().map(|p| p.parse().unwrap()).collect()
}

#[test]
fn callgrind_names_functions_from_build_ids_and_shows_the_hot_loop() {
    common::require("callgrind_annotate");
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record(dir.path(), "hot", &[], "perf.data") else { return };
    // The binary goes away: its copy in perf's build-id cache is what names it now.
    std::fs::rename(dir.path().join("hot"), dir.path().join("hot.moved")).unwrap();
    let out = dir.path().join("callgrind.out.hot");
    let o = run(&["convert", data.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("fn=(") && text.contains(" inner\n"), "{text}");
    let periods = periods(&data);
    let total: u64 = periods.iter().sum();
    assert!(periods.iter().all(|&p| p == periods[0]), "cpu-clock samples share one period");
    assert_eq!(total, periods.len() as u64 * periods[0]);
    assert!(text.contains(&format!("\nsummary: {total}\n")), "{text}");
    let annotated = Command::new("callgrind_annotate")
        .arg("--auto=yes")
        .arg(&out)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&annotated.stdout);
    assert!(shown.contains(&format!("{} (100.0%)  PROGRAM TOTALS", thousands(total))), "{shown}");
    let hot_line = shown.lines().find(|l| l.contains("s += i * i")).unwrap_or_else(|| panic!("{shown}"));
    assert!(hot_line.trim_start().starts_with(|c: char| c.is_ascii_digit()), "{hot_line}");
}

/// Code no symbol names (a stripped program) is named in Callgrind as Valgrind names such
/// code: each sampled address its own function, `0x` and the address the object states in
/// 16 hex digits, beside its object; the names `perf report` gives those addresses.
#[test]
fn code_without_symbols_is_named_in_callgrind_by_its_address_as_valgrind_names_it() {
    common::require("callgrind_annotate");
    let dir = tempfile::tempdir().unwrap();
    let tries = [vec!["-e", "cpu-clock"], vec!["-e", "cpu-clock:u"]];
    let Some(data) = record_with(dir.path(), "hot-stripped", &tries, "perf.data") else { return };
    let out = dir.path().join("callgrind.out.hot");
    let o = run(&["convert", data.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The functions named in the program's object.
    let text = std::fs::read_to_string(&out).unwrap();
    let (mut objects, mut object, mut ours) = (std::collections::HashMap::new(), String::new(), Vec::new());
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("ob=") {
            object = match rest.split_once(") ") {
                Some((id, name)) => {
                    objects.insert(id.to_string(), name.to_string());
                    name.to_string()
                }
                None => objects.get(rest.trim_end_matches(')')).cloned().unwrap_or_default(),
            };
        } else if let Some(rest) = line.strip_prefix("fn=") {
            // `(id) name`, `(id)` again, or a name written once, uncompressed.
            let name = match rest.strip_prefix('(') {
                Some(r) => r.split_once(") ").map(|(_, n)| n),
                None => Some(rest),
            };
            if let Some(name) = name.filter(|_| object.ends_with("/hot")) {
                ours.push(name.to_string());
            }
        }
    }
    ours.sort();
    // The addresses perf reports in the program, named as perf names them.
    let mut sampled: Vec<String> =
        perf_report_self(&data, "cpu-clock").into_keys().filter(|n| n.starts_with("0x")).collect();
    if sampled.is_empty() {
        sampled =
            perf_report_self(&data, "cpu-clock:u").into_keys().filter(|n| n.starts_with("0x")).collect();
    }
    sampled.sort();
    assert!(!sampled.is_empty(), "{text}");
    assert_eq!(ours, sampled, "{text}");
    let total: u64 = periods(&data).iter().sum();
    let shown = Command::new("callgrind_annotate").arg(&out).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains(&format!("{} (100.0%)  PROGRAM TOTALS", thousands(total))), "{total}: {shown}");
    assert!(shown.contains(&format!(":{} [", sampled[0])), "{shown}");
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Self periods per function as `perf report --no-children` gives them for one event
/// (`cpu-clock`, `task-clock`), names as perf prints them.
fn perf_report_self(data: &Path, event: &str) -> std::collections::BTreeMap<String, u64> {
    let o = Command::new("perf")
        .args(["report", "--no-children", "--stdio", "-F", "period,sym", "-i"])
        .arg(data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut selfs = std::collections::BTreeMap::new();
    // One section per event, headed `# Samples: 512  of event 'cpu-clock'`.
    let mut in_event = false;
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        if let Some((_, name)) = line.strip_prefix("# Samples:").and_then(|l| l.split_once(" of event ")) {
            in_event = name.trim_matches('\'') == event;
        }
        if line.starts_with('#') || !in_event {
            continue;
        }
        // `  199250000  [.] AM<int>::spin`
        let mut words = line.split_whitespace();
        let (Some(period), Some(_), Some(_)) = (words.next(), words.next(), words.clone().next()) else {
            continue;
        };
        let name = line.split_once("] ").map_or("", |(_, n)| n).trim().to_string();
        *selfs.entry(name).or_insert(0) += period.parse::<u64>().unwrap();
    }
    selfs
}

/// Self totals per leaf function of a folded file's column `column` (kernel frames without
/// their `_[k]`).
fn folded_self(path: &Path, column: usize) -> std::collections::BTreeMap<String, u64> {
    let mut selfs = std::collections::BTreeMap::new();
    let text = std::fs::read_to_string(path).unwrap();
    let events = text.lines().next().and_then(|l| l.strip_prefix("# events: ")).unwrap();
    let columns = events.split(' ').count();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut words: Vec<&str> = line.rsplitn(columns + 1, ' ').collect();
        words.reverse();
        let (stack, values) = (words[0], &words[1..]);
        let leaf = stack.rsplit(';').next().unwrap().trim_end_matches("_[k]").to_string();
        *selfs.entry(leaf).or_insert(0) += values[column].parse::<u64>().unwrap();
    }
    selfs.retain(|_, v| *v > 0);
    selfs
}

/// A C++ function of an anonymous namespace (`(anonymous namespace)::spin_a`) is a function
/// like any other: with and without call chains its samples stay with it, in perf.data and in
/// `perf script` text alike, and every function's self period equals perf report's; the
/// method of a template with an empty parameter pack is named as c++filt and perf name it.
#[test]
fn anonymous_namespace_functions_keep_their_samples() {
    common::require("c++filt");
    for call_chains in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut options = vec!["-e", "cpu-clock"];
        if call_chains {
            options.push("-g");
        }
        let Some(data) = record_with(dir.path(), "anon-cpp", &[options], "perf.data") else { return };
        let (direct, via) = both_ways(dir.path(), &data);
        assert_eq!(direct, via, "call chains: {call_chains}");
        let expected = perf_report_self(&data, "cpu-clock");
        let ours = folded_self(&dir.path().join("direct.folded"), 0);
        assert_eq!(ours, expected, "call chains: {call_chains}");
        let anonymous = expected.get("(anonymous namespace)::spin_a").copied().unwrap_or(0);
        assert!(anonymous > 0, "{expected:#?}");
        let filt = Command::new("c++filt").arg("_ZN2AMIiJEE4spinEl").output().unwrap();
        assert_eq!(common::stdout(&filt).trim(), "AM<int>::spin(long)");
        assert!(ours.contains_key("AM<int>::spin"), "{ours:#?}");
    }
}

/// `perf record --call-graph dwarf` of an interpreter built without frame pointers: the user
/// stacks the kernel copied are unwound with the binaries' call frame information, as `perf
/// script` unwinds them, frame for frame (its inline frames too: the interpreter's `operand`
/// inlined into `arith`); so `main` holds about all of the program's time where the call
/// chains alone would give it none.
#[test]
fn dwarf_call_graphs_are_unwound_as_perf_script_unwinds_them() {
    let dir = tempfile::tempdir().unwrap();
    let tries: Vec<Vec<&str>> =
        ["cpu-clock", "cpu-clock:u"].iter().map(|event| vec!["--call-graph", "dwarf", "-e", event]).collect();
    let Some(data) = record_with(dir.path(), "interp", &tries, "perf.data") else { return };
    let (direct, via) = both_ways(dir.path(), &data);
    assert_eq!(direct, via);
    // The interpreter's own stacks (its comm; not perf's before the exec).
    let ours: Vec<&String> = direct.iter().filter(|s| s.starts_with("hot;")).collect();
    let weight = |s: &&String| s.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap();
    let total: u64 = ours.iter().map(weight).sum();
    let in_main: u64 = ours.iter().filter(|s| s.contains(";main;")).map(weight).sum();
    assert!(in_main * 100 >= total * 95, "main {in_main} of {total} ns: {ours:#?}");
    assert!(ours.iter().any(|s| s.contains(";arith;operand;eval")), "{ours:#?}");
    // Every stack was unwound to its outermost frame, or the reading says how many were not.
    let o = run(&["info", data.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cut_short = ours.iter().filter(|s| !s.starts_with("hot;_start;")).count();
    if cut_short > 0 {
        assert!(stderr(&o).contains("were unwound only in part"), "{}", stderr(&o));
    }
}

/// A recording of two events in `perf script` text: each event named as perf names it, its
/// values the periods in nanoseconds (perf pads the names of two events to one width, which
/// the collapse alone reads as no period), as the perf.data reader gives them. Two events
/// are two measures, not a before/after pair: folded stacks hold the first unless `--event`
/// names the other, from perf.data and `perf script` text alike.
#[test]
fn perf_script_of_two_events_gives_each_its_periods() {
    let dir = tempfile::tempdir().unwrap();
    let options = vec!["-g", "-e", "cpu-clock", "-e", "task-clock"];
    let Some(data) = record_with(dir.path(), "anon-cpp", &[options], "perf.data") else { return };
    let (direct, via) = both_ways(dir.path(), &data);
    assert_eq!(direct, via);
    let text = std::fs::read_to_string(dir.path().join("via-script.folded")).unwrap();
    assert!(text.starts_with("# events: cpu-clock\n"), "{text}");
    let script = Command::new("perf").arg("script").arg("-i").arg(&data).output().unwrap();
    let script_file = dir.path().join("two.perf.txt");
    std::fs::write(&script_file, &script.stdout).unwrap();
    for event in ["cpu-clock", "task-clock"] {
        let expected = perf_report_self(&data, event);
        // One event chosen: its stacks alone, none of the other's with 0.
        for (input, name) in [(&data, "data"), (&script_file, "script")] {
            let one = dir.path().join(format!("{event}-{name}.folded"));
            let o = run(&["convert", input.to_str().unwrap(), "--event", event, "-o", one.to_str().unwrap()]);
            assert!(o.status.success(), "{}", stderr(&o));
            let text = std::fs::read_to_string(&one).unwrap();
            assert!(text.lines().all(|l| l.starts_with('#') || !l.ends_with(" 0")), "{event}: {text}");
            assert_eq!(folded_self(&one, 0), expected, "{event} from {name}");
        }
    }
    // Both in nanoseconds, as info says.
    for input in [&data, &script_file] {
        let o = run(&["info", input.to_str().unwrap()]);
        assert!(
            common::stdout(&o).contains("events:   cpu-clock (nanoseconds) task-clock (nanoseconds)"),
            "{}",
            common::stdout(&o)
        );
    }
}

/// A system-wide recording: the idle task (pid 0, with no COMM record) is named `swapper`, as
/// perf names it, not `:0`.
#[test]
fn the_idle_task_is_swapper_as_perf_names_it() {
    common::require("perf");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("all.perf.data");
    let o = Command::new("perf")
        .args(["record", "-q", "-a", "-e", "cpu-clock", "-o"])
        .arg(&data)
        .args(["--", "sleep", "0.3"])
        .output()
        .unwrap();
    if !o.status.success() {
        // A machine's policy, not a missing program: nothing to install.
        eprintln!(
            "skipped: `perf record -a` is not permitted here (see /proc/sys/kernel/perf_event_paranoid)"
        );
        return;
    }
    let script = Command::new("perf").args(["script", "-F", "comm,pid", "-i"]).arg(&data).output().unwrap();
    let idle = common::stdout(&script).lines().filter(|l| l.split_whitespace().nth(1) == Some("0")).count();
    if idle == 0 {
        // Every CPU was busy all along: nothing to check.
        return;
    }
    assert!(common::stdout(&script).lines().any(|l| l.trim_start().starts_with("swapper ")));
    let folded = dir.path().join("all.folded");
    let o = run(&["convert", data.to_str().unwrap(), "-o", folded.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&folded).unwrap();
    assert!(text.lines().any(|l| l.starts_with("swapper;")), "{text}");
    assert!(!text.lines().any(|l| l.starts_with(":0;")), "{text}");
}
