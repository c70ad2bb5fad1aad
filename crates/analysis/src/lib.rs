#![deny(missing_docs)]
//! Derived facts, computed once from the model and shared by every writer and command.
//!
//! A reader fills only what its format says; everything that follows from it (per-thread block
//! counts, routines when a format has none, dominators, loops, the call graph, inclusive costs,
//! stacks) is computed here.
//!
//! The ELF/DWARF symbolizer ([`symbolize`]) lives here too, in one direction with the analyses:
//! it uses their symbol index ([`names`]), and the analyses that read machine code use only its
//! ELF reader ([`symbolize::elf`]). [`synth`] makes synthetic, self-consistent profiles of any
//! size for tests and benchmarks.

pub mod addresses;
pub mod ball_larus;
pub mod blocks;
pub mod branch_records;
pub mod callgraph;
pub mod cfg;
pub mod combine;
pub mod demangle;
pub mod dominators;
pub mod events;
pub mod executions;
pub mod inference;
pub mod labels;
pub mod loops;
pub mod machine_code;
pub mod merge;
pub mod names;
pub mod overlap;
pub mod path_graph;
pub mod plt;
pub mod repeats;
pub mod replay;
pub mod routines;
pub mod sample_profile;
pub mod sequence;
pub mod source;
pub mod stacks;
pub mod sum;
pub mod symbolize;
pub mod synth;
pub mod totals;
