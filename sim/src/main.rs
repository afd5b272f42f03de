//! `partmap-sim`: run one seed, or sweep many.

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    // Die quietly when the reader of our output goes away (`partmap-sim run ... | head`), as
    // command-line tools do, instead of panicking on the broken pipe.
    // SAFETY: restoring the default disposition of one signal at startup, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let usage = e.use_stderr();
            let _ = e.print();
            // --help and --version are not errors; everything else is bad usage.
            return if usage { ExitCode::from(64) } else { ExitCode::SUCCESS };
        }
    };
    match cli.command {
        Command::Run(args) => cli::run::run(args),
        Command::Shrink(args) => cli::run::shrink(args),
        Command::Timeline(args) => cli::run::timeline(args),
        Command::Sweep(args) => cli::sweeps::sweep(args),
        Command::Merge(args) => cli::sweeps::merge(args),
        Command::Report(args) => cli::report::report(args),
        Command::Bench(args) => cli::bench::bench(args),
        Command::Explore(args) => cli::search::explore(args),
        Command::Hunt(args) => cli::search::hunt(args),
        Command::Goals => cli::search::goals(),
        Command::Mutants(args) => cli::search::mutants(args),
        Command::Model(args) => cli::model::model(args),
    }
}
