//! SVG flame graphs, drawn by inferno (`inferno::flamegraph`, the port of FlameGraph's
//! `flamegraph.pl`). Write only.
//!
//! Every stack of the model becomes one folded line handed to inferno: the frame names root
//! first, and the value of one event (`--event`, else the first). The event's name is the
//! graph's count name (`12 samples`), `--title` its title; `--reverse` merges stacks from the
//! leaf, `--inverted` draws an icicle graph, `--flamechart` keeps the stacks in model order
//! instead of merging them, `--colors` picks inferno's palette. Colours are chosen from a hash
//! of each function's name, so the same profile always gives the same picture.
//!
//! inferno draws whole samples only: fractional values are scaled by a power of ten (at most
//! 10^6) and labelled in that unit (`25 × 0.1 cycles`). See docs/formats/svg.md.

mod narrow;

use std::io::Write;
use std::str::FromStr;

use inferno::flamegraph::{self, color::Palette, Direction};

use crate::format::{Format, Needs, WriteOptions};
use cfghub_analysis::events::{self, Unnamed};
use cfghub_analysis::stacks::{self as derived, Frame, WrittenStacks};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{power_of_ten, rounded, EventId, Profile, StackValue};

/// What the flame-graph writer can be asked.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Title of the picture (`--title`).
    pub title: Option<String>,
    /// Merge stacks from the leaf (`--reverse`).
    pub reverse: bool,
    /// Icicle layout, root at the top (`--inverted`).
    pub inverted: bool,
    /// Keep stacks in model order, time on the x axis (`--flamechart`).
    pub flamechart: bool,
    /// Colour palette by inferno's name (`--colors`: hot, mem, io, java, rust, ...).
    pub colors: Option<String>,
}

/// The SVG flame-graph format.
pub static FORMAT: Format = Format {
    name: "svg",
    description: "SVG flame graph drawn by inferno (write only)",
    extensions: &[".svg"],
    writer: Some(write),
    needs: Needs::NAMED_STACKS,
    without_addresses: Some("stacks are made of functions; these blocks have no counts to put on them"),
    ..Format::NONE
};

/// The largest power of ten fractional values are scaled by.
const MAX_SCALE_DIGITS: u8 = 6;

/// The unit folded lines count their values in for inferno, which draws whole counts:
/// `10^-digits` of the event's unit, the fewest digits that make every value whole (at most
/// [`MAX_SCALE_DIGITS`]), and whether some value has digits beyond that (rounded off).
#[derive(Clone, Copy, Debug, Default)]
pub struct LineUnits {
    digits: u8,
    lossy: bool,
}

impl LineUnits {
    /// The units of the values, each with its decimal places.
    pub fn of(values: impl Iterator<Item = (StackValue, u8)>) -> Self {
        let mut units = LineUnits::default();
        values.for_each(|(v, decimals)| units.add(v, decimals));
        units
    }

    /// Makes room for value `v` of `decimals` places.
    pub fn add(&mut self, v: StackValue, decimals: u8) {
        let (mut needed, mut rest) = (decimals, v);
        while needed > 0 && rest % 10 == 0 {
            rest /= 10;
            needed -= 1;
        }
        if needed > MAX_SCALE_DIGITS {
            self.lossy = true;
            needed = MAX_SCALE_DIGITS;
        }
        self.digits = self.digits.max(needed);
    }

    /// Whether some value has more digits than the lines show.
    pub fn lossy(&self) -> bool {
        self.lossy
    }

    /// The decimal places of a line unit.
    pub fn digits(&self) -> u8 {
        self.digits
    }

    /// How many line units make one unit of the event (`10^digits`).
    pub fn per_unit(&self) -> f64 {
        10f64.powi(i32::from(self.digits))
    }

    /// Value `v` of `decimals` places in line units, rounded (0 for values that are not
    /// positive).
    pub fn whole(&self, v: StackValue, decimals: u8) -> u64 {
        if v <= 0 {
            return 0;
        }
        let w = if decimals >= self.digits {
            rounded(v, decimals - self.digits)
        } else {
            v.saturating_mul(power_of_ten(self.digits - decimals))
        };
        u64::try_from(w).unwrap_or(u64::MAX)
    }
}

/// inferno's options for a picture of `event`.
pub fn inferno_options(
    profile: &Profile,
    event: EventId,
    options: &WriteOptions,
) -> Result<flamegraph::Options<'static>> {
    let options = options.formats.get::<Options>();
    let mut opt = flamegraph::Options::default();
    if let Some(title) = &options.title {
        opt.title = title.clone();
    }
    opt.count_name = profile.events[event].name.clone();
    opt.reverse_stack_order = options.reverse;
    opt.flame_chart = options.flamechart;
    if options.inverted {
        opt.direction = Direction::Inverted;
    }
    opt.hash = true;
    if let Some(name) = &options.colors {
        opt.colors = Palette::from_str(name)
            .map_err(|e| Error::usage(e).with_hint(format!("palettes: {}", Palette::VARIANTS.join(", "))))?;
    }
    Ok(opt)
}

/// The event to draw: `--event`, else the profile's default (pprof's `default_sample_type`) or
/// the first, with a warning that says how much of each other event the picture leaves out.
pub(crate) fn drawn_event(
    profile: &Profile,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<EventId> {
    let chosen = events::chosen(profile, options.event.as_deref(), Unnamed::StatedDefault)?;
    let Some(&event) = chosen.first() else {
        return Err(Error::unsupported("a flame graph needs an event, the profile has none"));
    };
    if profile.events.len() > 1 {
        let totals = cfghub_analysis::totals::event_totals(profile);
        let drawn: Vec<(String, f64)> =
            totals.iter().filter(|t| t.0 == profile.events[event].name).cloned().collect();
        let why =
            format!("one event is drawn, '{}'; choose another with --event", profile.events[event].name);
        cfghub_analysis::totals::note_left_out(findings, "svg", &totals, &drawn, &why);
    }
    Ok(event)
}

/// Folded lines (`frames value [value]`) of the stacks, values in `units`; stacks without
/// frames are left out.
pub fn folded_lines(stacks: &WrittenStacks, columns: &[EventId], units: LineUnits) -> FoldedLines {
    let mut lines = FoldedLines { text: Vec::new(), ends: Vec::new() };
    let decimals: Vec<u8> = columns.iter().map(|&e| stacks.decimals(e)).collect();
    let Ok(()) = stacks.try_for_each(|frames, values| -> std::result::Result<(), std::convert::Infallible> {
        if frames.is_empty() {
            return Ok(());
        }
        let text = &mut lines.text;
        push_frames(stacks, frames, text);
        for (&e, &places) in columns.iter().zip(&decimals) {
            text.push(b' ');
            let v = units.whole(values.get(e).copied().unwrap_or(0), places);
            text.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        }
        lines.ends.push(text.len());
        Ok(())
    });
    lines
}

/// Appends the names of `frames`, separated by `;`.
fn push_frames(stacks: &WrittenStacks, frames: &[Frame], out: &mut Vec<u8>) {
    for (i, &frame) in frames.iter().enumerate() {
        if i > 0 {
            out.push(b';');
        }
        stacks.push_name(frame, out);
    }
}

/// Folded lines one after the other in one buffer, which is all inferno needs of them (as
/// `&str`s, all at once): about 20 bytes a line where a `String` each took 60.
pub struct FoldedLines {
    text: Vec<u8>,
    /// Where each line ends in `text`.
    ends: Vec<usize>,
}

impl FoldedLines {
    /// The lines, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        // Frame names are text and the lines are cut between names: each line is UTF-8.
        starts
            .zip(&self.ends)
            .map(|(start, &end)| std::str::from_utf8(&self.text[start..end]).unwrap_or_default())
    }

    /// Whether there is no line.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// Draws a flame graph of the profile's stacks (or of stacks estimated from its call graph).
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let stacks = derived::stacks_to_write(profile, findings)?;
    let profile = stacks.profile();
    let differential = options.event.is_none()
        && profile.events.iter().map(|e| e.name.clone()).eq(crate::folded_stacks::unnamed_column_names(2));
    let event = if differential { 1 } else { drawn_event(profile, options, findings)? };
    if differential {
        let totals = cfghub_analysis::totals::event_totals(profile);
        let widths: Vec<(String, f64)> = totals.iter().skip(1).cloned().collect();
        let why = "a differential graph's widths are the second column; the first only colours the change";
        cfghub_analysis::totals::note_left_out(findings, "svg", &totals, &widths, why);
    }
    // Two unnamed count columns are a differential profile (before, after): inferno draws the
    // change, as it does from the same folded file.
    let mut units = LineUnits::default();
    let (drawn_places, first_places) = (stacks.decimals(event), stacks.decimals(0));
    let Ok(()) = stacks.try_for_each(|_, values| -> std::result::Result<(), std::convert::Infallible> {
        let v = |e: usize| values.get(e).copied().unwrap_or(0);
        units.add(v(event), drawn_places);
        if differential {
            units.add(v(0), first_places);
        }
        Ok(())
    });
    if units.lossy() {
        findings.warn(None, "svg: values with more than 6 decimal digits are rounded to 6");
    }
    let drawn: Vec<usize> = if differential { vec![0, 1] } else { vec![event] };
    let negative = cfghub_analysis::stacks::negative_stacks(profile, &drawn);
    if negative > 0 {
        findings.warn(
            None,
            format!("svg: {negative} stack(s) with negative values (a difference profile) drawn as 0"),
        );
    }
    let mut opt = inferno_options(profile, event, options)?;
    // A differential graph's colours come from every line's change, and --reverse and
    // --flamechart order the lines otherwise: they get every line.
    let lines = if differential || opt.reverse_stack_order || opt.flame_chart {
        folded_lines(&stacks, &if differential { vec![0, 1] } else { vec![event] }, units)
    } else {
        narrow::lines_to_draw(&stacks, event, units, opt.min_width)
    };
    if lines.is_empty() {
        return Err(Error::unsupported("the profile has no stacks to draw"));
    }
    if profile.processes.len() > 1 {
        findings.detail(
            None,
            format!("svg: the stacks of {} processes are drawn as one", profile.processes.len()),
        );
    }
    if differential {
        opt.count_name = crate::folded_stacks::UNNAMED_COLUMN.to_string();
    }
    if units.per_unit() > 1.0 {
        // inferno labels whole counts only (its `factor` rounds the labels and skews the
        // percentages), so fractional counts are drawn in units of 1/scale.
        let unit = format!("{}", 1.0 / units.per_unit());
        findings.detail(
            None,
            format!("svg: fractional counts are labelled in units of {unit} {}", opt.count_name),
        );
        opt.count_name = format!("\u{d7} {unit} {}", opt.count_name);
    }
    flamegraph::from_lines(&mut opt, lines.iter(), out).map_err(|e| Error::io("svg output", e))
}
