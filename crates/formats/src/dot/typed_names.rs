//! Routines found by the names users type, when no symbol has the name as given: C++ names
//! without their parameters (`shapes::Sq::area` for `shapes::Sq::area() const`), a bare
//! function or method name (`spin` for `AM<int>::spin(long)`), part of a name, or a regular
//! expression (as pprof's `-focus` takes one). Several matches are listed, none gets the
//! nearest names; a profile without basic blocks is told what it lacks and how to get it.

use cfghub_analysis::names::{routine_name, typing_distance, without_parameters, SymbolIndex};
use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{Profile, Routine};

/// A routine found by name (here or by `routine::find_routine`): process, image and routine
/// indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// Index into `Profile::processes`.
    pub process: usize,
    /// Index into the process's images.
    pub image: usize,
    /// Index into the image's routines.
    pub routine: usize,
}

/// The routine `spec` names as users type names (see the module's documentation).
pub(crate) fn find(
    profile: &Profile,
    routines: &[Vec<std::borrow::Cow<'_, [Routine]>>],
    spec: &str,
    processes: &[u64],
) -> Result<Found> {
    let mut candidates: Vec<(Found, String)> = Vec::new();
    for (pi, process) in profile.processes.iter().enumerate() {
        if !processes.is_empty() && !processes.contains(&process.pid) {
            continue;
        }
        for (ii, image) in process.images.iter().enumerate() {
            let index = SymbolIndex::new(image);
            for (ri, r) in routines[pi][ii].iter().enumerate() {
                let found = Found { process: pi, image: ii, routine: ri };
                candidates.push((found, routine_name(profile, image, &index, r)));
            }
        }
    }
    if candidates.is_empty() {
        return Err(Error::usage(format!(
            "no routine '{spec}': this profile has no basic blocks, so no routine's control flow"
        ))
        .with_hint(
            "record one that has them: branch records (`perf record -b`, then `cfghub dot perf.data \
             --symbols ./app --routine NAME`), valgrind --tool=callgrind --dump-instr=yes \
             --collect-jumps=yes, or a Pin DCFG",
        ));
    }
    let last_part = |name: &str| {
        let plain = without_parameters(name);
        plain.rsplit("::").next().unwrap_or(plain).to_string()
    };
    let pattern = regex::Regex::new(spec).ok();
    let levels: [&dyn Fn(&str) -> bool; 4] = [
        &|name| without_parameters(name) == spec,
        &|name| last_part(name) == spec,
        &|name| name.contains(spec),
        &|name| pattern.as_ref().is_some_and(|p| p.is_match(name)),
    ];
    for matches in levels {
        // Each routine is one candidate: a hit is one routine.
        let hits: Vec<&(Found, String)> = candidates.iter().filter(|(_, name)| matches(name)).collect();
        match hits.as_slice() {
            [] => continue,
            [(found, _)] => return Ok(*found),
            several => {
                let mut names: Vec<&str> = several.iter().map(|(_, n)| n.as_str()).collect();
                names.sort_unstable();
                names.dedup();
                let shown: Vec<String> = names.iter().take(10).map(|n| format!("'{n}'")).collect();
                let more =
                    if names.len() > 10 { format!(" and {} more", names.len() - 10) } else { String::new() };
                return Err(Error::usage(format!(
                    "'{spec}' matches {} routines: {}{more}",
                    several.len(),
                    shown.join(", ")
                ))
                .with_hint("name one of them (quoted as shown), or give its address (0x...)"));
            }
        }
    }
    let mut near: Vec<(usize, &str)> = candidates
        .iter()
        .map(|(_, name)| {
            let plain = without_parameters(name);
            (typing_distance(spec, plain).min(typing_distance(spec, &last_part(name))), name.as_str())
        })
        .filter(|&(d, _)| d <= (spec.len() / 3).max(2))
        .collect();
    near.sort_unstable();
    near.dedup_by_key(|(_, n)| *n);
    let hint = match near.as_slice() {
        [] => "give a symbol name (main), an address (0x40059d) or a block id (29); \
               `cfghub info FILE` lists the hottest routines"
            .to_string(),
        near => {
            let names: Vec<String> = near.iter().take(3).map(|(_, n)| format!("'{n}'")).collect();
            format!("did you mean {}? `cfghub info FILE` lists the hottest routines", names.join(", "))
        }
    };
    Err(Error::usage(format!("no routine matches '{spec}'")).with_hint(hint))
}
