//! DCFG: cli.
