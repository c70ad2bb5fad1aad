//! `cfghub completions SHELL` and `cfghub man [COMMAND]`: what command-line tools are expected
//! to offer, made from the one description of the command line (clap's), so that they never
//! disagree with `--help`.

use clap::{Args, CommandFactory};

use cfghub_model::error::{Error, Result};

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// A command's own page (`cfghub man convert`); cfghub's page when absent.
    pub command: Option<String>,
}

/// Prints the completion script for a shell.
pub fn completions(args: CompletionsArgs) -> Result<i32> {
    let mut command = super::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "cfghub", &mut script);
    super::print_out(&String::from_utf8_lossy(&script))?;
    Ok(0)
}

/// Prints a manual page in roff: cfghub's, or one command's (`cfghub-convert(1)`).
pub fn man(args: ManArgs) -> Result<i32> {
    let mut command = super::Cli::command();
    command.build();
    let page = match &args.command {
        None => clap_mangen::Man::new(command),
        Some(name) => {
            let names: Vec<String> = command.get_subcommands().map(|c| c.get_name().to_string()).collect();
            let sub = command.find_subcommand(name).cloned().ok_or_else(|| {
                Error::usage(format!("no command '{name}'"))
                    .with_hint(format!("commands: {}", names.join(", ")))
            })?;
            clap_mangen::Man::new(sub).title(format!("cfghub-{name}"))
        }
    };
    let mut roff = Vec::new();
    page.render(&mut roff).map_err(|e| Error::io("standard output", e))?;
    super::print_out(&String::from_utf8_lossy(&roff))?;
    Ok(0)
}
