//! Callgrind: bad_input.
