//! `cfghub dot FILE`: control-flow and call-graph pictures through Graphviz.
//!
//! Without a view option it draws the whole program (process > image > routine > loop
//! clusters); `--routine` draws one routine (or with `--loop` one loop of it), `--callgraph`
//! the call graph. `-o` picks the output by name: `.dot`/`.gv` writes DOT, `.svg`, `.png` and
//! `.pdf` run Graphviz's `dot` (exit 2 with install instructions when it is missing).

use clap::Args;

use cfghub_formats::convert::load;
use cfghub_formats::dot::{self, render, View};
use cfghub_formats::format::ReadOptions;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::{check_not_an_input, write_error, write_output};

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  cfghub dot app.dcfg.json.bz2 --routine main -o main.svg
  cfghub dot app.dcfg.json.bz2 --routine 0x40059d --loop 30 -o loop.dot
  cfghub dot app.dcfg.json.bz2 --callgraph --node-fraction 0.005 -o calls.svg
  cfghub dot app.dcfg.json.bz2 --image simple_loop --min-count 10 -o program.svg
  cfghub dot prog --routine main --increments -o main.svg    a CSI routine with its path increments")]
pub struct DotArgs {
    /// Input file, or - for standard input (any format with blocks and edges).
    pub input: String,
    /// Output: FILE.dot (DOT), FILE.svg, FILE.png or FILE.pdf (rendered by Graphviz), or - for
    /// DOT on standard output.
    #[arg(short, long, default_value = "-")]
    pub output: String,
    /// Input format; detected from content and name when absent.
    #[arg(long)]
    pub from: Option<String>,
    /// Draw one routine: a symbol name (main), an address (0x40059d) or an entry node id (29).
    #[arg(long, value_name = "NAME|ADDRESS|NODE")]
    pub routine: Option<String>,
    /// With --routine: draw only the innermost loop containing this block id.
    #[arg(long = "loop", value_name = "NODE", requires = "routine")]
    pub loop_node: Option<u64>,
    /// Draw the call graph instead of control flow.
    #[arg(long, conflicts_with = "routine")]
    pub callgraph: bool,
    /// Call graph: hide routines whose inclusive cost is below this fraction of the total.
    #[arg(long, default_value_t = 0.005, value_name = "FRACTION")]
    pub node_fraction: f64,
    /// Call graph: hide calls whose inclusive cost is below this fraction of the total.
    #[arg(long, default_value_t = 0.001, value_name = "FRACTION")]
    pub edge_fraction: f64,
    /// Colour blocks by this event's costs (e.g. cycles) instead of execution counts.
    #[arg(long)]
    pub event: Option<String>,
    /// Derive routines, dominators and loops from the edges even when the input has them.
    #[arg(long)]
    pub recompute: bool,
    /// Whole-program view: only images with this id or path substring (repeatable).
    #[arg(long, value_name = "ID|NAME")]
    pub image: Vec<String>,
    /// Only this process id (repeatable).
    #[arg(long, value_name = "PID")]
    pub process: Vec<u64>,
    /// Whole-program view: hide blocks and edges executed fewer times than this.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub min_count: u64,
    /// With --routine: label edges with their Ball-Larus increments (CSI's own, or computed as
    /// `cfghub convert -o x.debug_PT` numbers them).
    #[arg(long, requires = "routine")]
    pub increments: bool,
    #[command(flatten)]
    pub symbols: super::symbols::SymbolArgs,
    #[command(flatten)]
    pub infer: super::symbols::InferArgs,
    /// Whole-program view: draw at most N blocks one by one; the largest routines beyond that
    /// are drawn as one node each, named in the picture (0: every block, which Graphviz may
    /// take many minutes to lay out).
    #[arg(long, default_value_t = dot::MAX_BLOCKS, value_name = "N")]
    pub max_blocks: usize,
}

pub fn run(args: DotArgs, quiet: bool) -> Result<i32> {
    let inputs: Vec<&str> = std::iter::once(args.input.as_str()).chain(args.symbols.paths()).collect();
    check_not_an_input(&args.output, &inputs)?;
    for (name, f) in [("--node-fraction", args.node_fraction), ("--edge-fraction", args.edge_fraction)] {
        if !(0.0..=1.0).contains(&f) {
            return Err(Error::usage(format!("{name} {f} is not a fraction between 0 and 1")));
        }
    }
    let picture = render::picture_format(&args.output);
    if picture.is_some() && !render::available() {
        return Err(render::graphviz_missing(&args.output));
    }
    let mut loaded =
        load(&args.input, args.from.as_deref(), &args.symbols.reader_options(ReadOptions::default()))?;
    super::check_findings(&args.input, &loaded.findings, quiet)?;
    args.symbols.apply(&mut loaded, &args.input, quiet)?;
    args.infer.apply(&args.symbols, &mut loaded, &args.input, quiet)?;
    let view = match (&args.routine, args.callgraph) {
        (Some(spec), _) => View::Routine { spec: spec.clone(), loop_node: args.loop_node },
        (None, true) => View::CallGraph,
        (None, false) => View::Program,
    };
    let options = dot::Options {
        event: args.event.clone(),
        recompute: args.recompute,
        images: args.image.clone(),
        processes: args.process.clone(),
        min_count: args.min_count,
        node_fraction: args.node_fraction,
        edge_fraction: args.edge_fraction,
        increments: args.increments,
        max_blocks: args.max_blocks,
    };
    let mut findings = Findings::default();
    let text = dot::to_string(&loaded.profile, &view, &options, &mut findings)?;
    let bytes = match picture {
        Some(format) => render::render(&text, format, &args.output)?,
        None => text.into_bytes(),
    };
    write_output(&args.output, &inputs, |out| out.write_all(&bytes).map_err(write_error(&args.output)))?;
    super::check_findings(&args.output, &findings, quiet)?;
    Ok(0)
}
