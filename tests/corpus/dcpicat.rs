//! dcpicat: the dump printed in the dcpicat(1) manual page reads with both events, and converts
//! to one binary profile per event.

use crate::common;
use cfghub::convert::load;
use cfghub::format::ReadOptions;
use cfghub::ir::Event;

#[test]
fn the_manual_page_dump_reads_with_both_events() {
    let Some(path) = common::shared_fixture("dcpi/dcpicat-example.txt") else { return };
    let loaded = load(path.to_str().unwrap(), None, &ReadOptions::default()).unwrap();
    assert_eq!(loaded.format.name(), "dcpicat", "sniffed from the content");
    let p = &loaded.profile;
    assert_eq!(p.events, vec![Event::new("cycles"), Event::new("imiss")]);
    // The stated totals (470352, 134705) belong to the whole profile; the page shows six lines.
    let warnings: Vec<String> = loaded.findings.warnings().map(|w| w.to_string()).collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("line 9") && warnings[0].contains("470352") && warnings[0].contains("sum to 47")
    );
    assert!(
        warnings[1].contains("line 10")
            && warnings[1].contains("134705")
            && warnings[1].contains("sum to 29")
    );
    let headers: Vec<(&str, &str)> = p.meta.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        headers,
        [
            ("name", "xemacs"),
            ("image", "19970328081403c0c18b"),
            ("label", "foo"),
            ("path", "/usr/local/bin/xemacs"),
            ("epoch", "199805191724"),
            ("platform", "walnut"),
            ("event", "cycles:63488:10000"),
            ("event", "imiss:4096:10000"),
        ]
    );
    let image = &p.processes[0].images[0];
    assert_eq!(p.image_name(image), "/usr/local/bin/xemacs");
    assert_eq!(image.load_addr, 0x1_2000_0000);
    assert_eq!(image.size, Some(0x80_0000));
    let rows: Vec<(u64, Vec<u64>)> =
        image.costs.iter().map(|c| (c.offset.unwrap(), c.values.to_vec())).collect();
    assert_eq!(
        rows,
        [
            (0x6cbb8, vec![29, 27]),
            (0x6cbd0, vec![10, 0]),
            (0x6cbd4, vec![1, 0]),
            (0x6cbd8, vec![2, 0]),
            (0x6cbe0, vec![3, 2]),
            (0x6cbe8, vec![2, 0]),
        ]
    );
}

#[test]
fn each_event_becomes_a_binary_profile_and_they_combine_back() {
    let Some(path) = common::shared_fixture("dcpi/dcpicat-example.txt") else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (event, period) in [("cycles", "63488"), ("imiss", "4096")] {
        let out = dir.path().join(format!("{event}.dcpi"));
        let o = common::run(&[
            "-q",
            "convert",
            path.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--event",
            event,
        ]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let one = load(out.to_str().unwrap(), None, &ReadOptions::default()).unwrap().profile;
        assert_eq!(one.events, vec![Event::new(event)]);
        assert!(one.meta.headers.contains(&("period".into(), period.into())), "{:?}", one.meta.headers);
        assert!(one.meta.headers.contains(&("label".into(), "foo".into())), "unknown lines travel");
        files.push(one);
    }
    let combined =
        cfghub::analysis::combine::combine(files, &mut cfghub::error::Findings::default()).unwrap();
    assert_eq!(combined.events, vec![Event::new("cycles"), Event::new("imiss")]);
    let original = load(path.to_str().unwrap(), None, &ReadOptions::default()).unwrap().profile;
    // imiss has samples at two addresses only; the combination has every address of either.
    assert_eq!(combined.processes[0].images[0].costs, original.processes[0].images[0].costs);
    let specs = cfghub::formats::dcpi::model::event_specs(&combined);
    assert_eq!((specs[1].name.as_str(), specs[1].period), ("imiss", Some(4096)));
}
