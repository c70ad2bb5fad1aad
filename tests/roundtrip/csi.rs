//! CSI `.debug_PT`: read -> write -> read keeps every function, block (its lines and `-1`
//! markers), edge, increment, weight and back-edge mark, up to order; and writing what was read
//! back gives the same bytes.

use crate::common::csi;
use cfghub::convert::write_to_vec;
use cfghub::formats::csi::{self as csi_format, read_bytes};
use proptest::prelude::*;

/// One generated function: name, blocks (lines, -1 position), edges (from, to, back, increment,
/// weight) between block positions; position 0 is the entry and 1 the exit.
type Gen = (String, Vec<(Vec<u32>, Option<usize>)>, Vec<(usize, usize, bool, i64, i64)>);

fn arb_function() -> impl Strategy<Value = Gen> {
    (2usize..9)
        .prop_flat_map(|n| {
            (
                "[a-z_][a-zA-Z0-9_]{0,12}",
                prop::collection::vec(
                    (prop::collection::vec(1u32..500, 0..6), prop::option::of(0usize..6)),
                    n,
                ),
                prop::collection::vec((0..n, 0..n, any::<bool>(), -3i64..50, -3i64..50), 0..14),
            )
        })
        .prop_map(|(name, blocks, edges)| {
            // The exit has no lines and no out-edges.
            let blocks = blocks
                .into_iter()
                .enumerate()
                .map(|(i, b)| if i == 1 { (Vec::new(), None) } else { b })
                .collect();
            let edges = edges.into_iter().filter(|e| e.0 != 1).collect();
            (name, blocks, edges)
        })
}

fn text(functions: &[Gen], ids: &[u64]) -> String {
    let mut s = String::new();
    for (name, blocks, edges) in functions {
        s.push_str(&format!("#\n{name}\n"));
        for (i, (lines, end)) in blocks.iter().enumerate() {
            s.push_str(&ids[i].to_string());
            match i {
                1 => {
                    s.push_str("|EXIT\n");
                    continue;
                }
                0 => s.push_str("|ENTRY"),
                _ => {}
            }
            let mut items: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            if let Some(p) = end {
                items.insert((*p).min(items.len()), "-1".into());
            }
            if items.is_empty() {
                s.push_str("|NULL");
            }
            for it in items {
                s.push('|');
                s.push_str(&it);
            }
            s.push('\n');
        }
        s.push_str("$\n");
        for (a, b, back, inc, w) in edges {
            let arrow = if *back { "~>" } else { "->" };
            s.push_str(&format!("{}{arrow}{}|{inc}${w}\n", ids[*a], ids[*b]));
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn read_write_read_keeps_every_function(
        functions in prop::collection::vec(arb_function(), 1..5),
        ids in prop::collection::btree_set(0u64..100_000, 9).prop_map(|s| s.into_iter().collect::<Vec<u64>>()).prop_shuffle(),
        blank_lines in any::<bool>(),
    ) {
        let ids: Vec<u64> = ids.into_iter().collect();
        let mut input = text(&functions, &ids);
        if blank_lines {
            input = input.replace("#\n", "\n#\n\n");
        }
        let first = read_bytes(input.as_bytes(), None).unwrap();
        let (written, _) = write_to_vec(&csi_format::FORMAT, &first, &Default::default()).unwrap();
        let second = read_bytes(&written, None).unwrap();
        prop_assert_eq!(csi::canonical(&second), csi::canonical(&first));
        let (again, _) = write_to_vec(&csi_format::FORMAT, &second, &Default::default()).unwrap();
        prop_assert_eq!(String::from_utf8(again).unwrap(), String::from_utf8(written).unwrap());
    }
}
