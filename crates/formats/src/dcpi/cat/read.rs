//! Reading a dcpicat text dump.

use std::io::BufRead;

use crate::dcpi::model::split_spec;
use cfghub_model::error::{Error, Findings, Place, Result};
use cfghub_model::ir::{Cost, Event, Image, Process, Profile};

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t' || b == b'\r'
}

fn parse_hex(s: &str) -> Option<u64> {
    let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

fn parse_dec(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((b - b'0') as u64)?;
    }
    Some(v)
}

/// Reads a dcpicat dump: header lines into [`Meta::headers`](cfghub_model::ir::Meta) (`text_start`
/// and `text_size` become the image's load address and size, each `event` line becomes an
/// event and is kept without its total), then one cost per address line.
pub fn read(input: &mut dyn BufRead, findings: &mut Findings) -> Result<Profile> {
    let data = crate::dcpi::read::read_all(input, None)?;
    let mut profile = Profile::default();
    let mut stated: Vec<(u64, u64)> = Vec::new(); // (total, line)
    let mut text_start: Option<u64> = None;
    let mut text_size: Option<u64> = None;
    let mut path: Option<String> = None;
    let mut costs: Vec<Cost> = Vec::new();
    let mut sums: Vec<u64> = Vec::new();
    let mut last_addr: Option<u64> = None;
    let mut pos = 0usize;
    let mut line_no = 0u64;
    while pos < data.len() {
        line_no += 1;
        let len = memchr::memchr(b'\n', &data[pos..]).unwrap_or(data.len() - pos);
        let line = &data[pos..pos + len];
        pos += len + 1;
        let line = match line.iter().rposition(|&b| !is_space(b)) {
            Some(end) => &line[..=end],
            None => continue, // blank line
        };
        let at = |msg: String| Error::input(msg).at_line(line_no);
        if line.starts_with(b"0x") || line.starts_with(b"0X") {
            // An address line.
            if profile.events.is_empty() {
                return Err(at("an address line before any `event` line: the columns mean nothing".into()));
            }
            let start =
                text_start.ok_or_else(|| at("an address line before the `text_start` line".into()))?;
            let (addr, values) = address_line(line, start, last_addr, profile.events.len(), &at)?;
            last_addr = Some(addr);
            for (s, v) in sums.iter_mut().zip(&values) {
                *s = s.saturating_add(*v);
            }
            costs.push(Cost { offset: Some(addr - start), values: values.into(), ..Cost::default() });
            continue;
        }
        if last_addr.is_some() {
            return Err(at("a header line after the address lines".into()));
        }
        let text = std::str::from_utf8(line).map_err(|_| at("the line is not text".into()))?;
        let key_len = text.find([' ', '\t']).unwrap_or(text.len());
        let key = &text[..key_len];
        let value = text[key_len..].trim_start_matches([' ', '\t']);
        if value.is_empty() {
            return Err(at(format!("expected `KEY VALUE`, found {text:?}")));
        }
        match key {
            "text_start" | "text_size" => {
                let v =
                    parse_hex(value).ok_or_else(|| at(format!("`{key}` expects 0xHEX, found {value:?}")))?;
                let slot = if key == "text_start" { &mut text_start } else { &mut text_size };
                if slot.is_some() {
                    return Err(at(format!("`{key}` appears twice")));
                }
                *slot = Some(v);
            }
            "event" => {
                let (total, spec) = event_value(value).ok_or_else(|| {
                    at(format!("`event` expects `TOTAL NAME:PERIOD:FRACTION`, found {value:?}"))
                })?;
                let name = split_spec(spec).map(|(n, _, _)| n).unwrap_or(spec);
                if profile.event_index(name).is_some() {
                    return Err(at(format!("event '{name}' is declared twice")));
                }
                profile.events.push(Event::new(name));
                stated.push((total, line_no));
                sums.push(0);
                profile.meta.headers.push(("event".into(), spec.to_string()));
            }
            _ => {
                if key == "path" && path.is_none() {
                    path = Some(value.to_string());
                }
                profile.meta.headers.push((key.to_string(), value.to_string()));
            }
        }
    }
    let start = text_start
        .ok_or_else(|| Error::input("the dump has no `text_start` line").at_line(line_no.max(1)))?;
    warn_totals_differ(&profile, &stated, &sums, findings);
    let file = path.as_deref().map(|p| profile.files.intern(p));
    let image = Image { file, load_addr: start, size: text_size, costs: costs.into(), ..Image::default() };
    profile.processes.push(Process { images: vec![image], ..Process::default() });
    Ok(profile)
}

/// The address and the sample counts of an address line (`0xADDR COUNT...`): the address must
/// lie at or after `text_start` (`start`) and after the previous line's (`last_addr`), and
/// there must be one count per event (`events`). `at` makes an error at the line.
#[inline]
fn address_line(
    line: &[u8],
    start: u64,
    last_addr: Option<u64>,
    events: usize,
    at: &impl Fn(String) -> Error,
) -> Result<(u64, Vec<u64>)> {
    let mut fields = line.split(|&b| b == b' ' || b == b'\t').filter(|f| !f.is_empty());
    let addr_text = fields.next().unwrap_or_default();
    let addr = std::str::from_utf8(addr_text).ok().and_then(parse_hex).ok_or_else(|| {
        at(format!("expected a hexadecimal address, found {:?}", String::from_utf8_lossy(addr_text)))
    })?;
    if addr < start {
        return Err(at(format!("address {addr:#x} lies before text_start {start:#x}")));
    }
    if let Some(prev) = last_addr {
        if addr <= prev {
            return Err(at(format!("address {addr:#x} does not come after {prev:#x} (addresses ascend)")));
        }
    }
    let mut values = Vec::with_capacity(events);
    for field in fields {
        let v = parse_dec(field).ok_or_else(|| {
            at(format!("expected a sample count, found {:?}", String::from_utf8_lossy(field)))
        })?;
        values.push(v);
    }
    if values.len() != events {
        return Err(at(format!(
            "{} sample column(s), but the header declares {events} event(s)",
            values.len()
        )));
    }
    Ok((addr, values))
}

/// The total and the `NAME:PERIOD:FRACTION` of an `event` line's value (`TOTAL SPEC`, the spec
/// without white space); `None` when it is not that.
fn event_value(value: &str) -> Option<(u64, &str)> {
    value
        .split_once([' ', '\t'])
        .and_then(|(t, s)| Some((parse_dec(t.as_bytes())?, s.trim_start_matches([' ', '\t']))))
        .filter(|(_, s)| !s.is_empty() && !s.contains([' ', '\t']))
}

/// Warns of each event whose stated total (`stated`: total, line) is not what its address
/// lines sum to (`sums`).
fn warn_totals_differ(profile: &Profile, stated: &[(u64, u64)], sums: &[u64], findings: &mut Findings) {
    for (k, ((total, line), sum)) in stated.iter().zip(sums).enumerate() {
        if total != sum {
            findings.warn(
                Some(Place::Line(*line)),
                format!(
                    "event '{}' states {total} samples, the address lines sum to {sum} (an excerpt?); the lines are kept",
                    profile.events[k].name
                ),
            );
        }
    }
}
