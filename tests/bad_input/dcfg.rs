//! DCFG: bad_input.
