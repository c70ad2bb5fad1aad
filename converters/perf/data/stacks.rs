//! The samples' call chains as stacks: each distinct chain written once as `perf script`
//! prints a sample (its period the sum of the chain's samples), then collapsed by the same
//! inferno collapse the `perf script` reader uses, one event at a time (the collapse keeps one
//! event), and split into processes and threads as that reader splits them.

use std::fmt::Write as _;

use super::names::Names;
use super::records::{Recording, NO_IMAGE, NO_KERNEL_IMAGE};
use crate::error::{Findings, Result};
use crate::ir::{Process, Profile, Stack};

/// Adds the stacks of every event to `profile` (whose events are already set).
/// `columns` gives each event's column in the profile (`None`: left out).
pub fn add_stacks(
    profile: &mut Profile,
    rec: &Recording,
    names: &Names,
    columns: &[Option<usize>],
) -> Result<()> {
    let width = profile.events.len();
    let mut all = Process::default();
    for ((e, event), column) in rec.events.iter().enumerate().zip(columns) {
        let Some(column) = *column else { continue };
        let text = script_text(rec, names, e as u64, &event.name);
        if text.is_empty() {
            continue;
        }
        let folded = super::super::collapse(text.as_bytes())?;
        let collapsed = crate::stacks::folded::read_bytes(&folded, &mut Findings::default())?;
        for process in collapsed.processes {
            for stack in process.stacks {
                let frames =
                    stack.frames.iter().map(|&f| profile.frames.intern(collapsed.frames.get(f))).collect();
                let mut values = vec![0.0; width];
                values[column] = stack.values.first().copied().unwrap_or(0.0);
                all.stacks.push(Stack { frames, values, thread: None });
            }
        }
    }
    if all.stacks.is_empty() {
        return Ok(());
    }
    let mut with_stacks = std::mem::take(profile);
    with_stacks.processes.push(all);
    let events = std::mem::take(&mut with_stacks.events);
    *profile = super::super::by_process_and_thread(with_stacks);
    profile.events = events;
    Ok(())
}

/// The chains of event `event` as `perf script` prints samples:
///
/// ```text
/// comm pid/tid 0.0: PERIOD EVENT:
/// \tADDRESS FUNCTION (FILE)
/// ```
fn script_text(rec: &Recording, names: &Names, event: u64, event_name: &str) -> String {
    let mut text = String::new();
    // In any order: the collapse sorts what it folds.
    for (key, total) in rec.stacks.iter().filter(|(k, _)| k[0] == event) {
        let (pid, tid, comm) = (key[1] as u32 as i32, key[2] as u32 as i32, &rec.comms[key[3] as usize]);
        let _ = writeln!(text, "{comm} {pid}/{tid} 0.0: {} {event_name}:", total.period);
        for pair in key[4..].chunks_exact(2) {
            let (image, offset) = (pair[0] as u32, pair[1]);
            let (function, file) = match image {
                NO_IMAGE | NO_KERNEL_IMAGE => (None, "[unknown]".into()),
                i => {
                    let key = &rec.images[i as usize];
                    (
                        names.get(i as usize).and_then(|n| n.function(offset)),
                        module_name(&key.path, key.kernel),
                    )
                }
            };
            let _ = writeln!(text, "\t{offset:x} {} ({file})", function.unwrap_or("[unknown]"));
        }
        text.push('\n');
    }
    text
}

/// The file name `perf script` shows: the path, or `[name]` for a kernel module.
fn module_name(path: &str, kernel: bool) -> std::borrow::Cow<'_, str> {
    if kernel && !path.starts_with('[') {
        let file = path.rsplit('/').next().unwrap_or(path);
        let stem = file.split(".ko").next().unwrap_or(file);
        return format!("[{stem}]").into();
    }
    path.into()
}
