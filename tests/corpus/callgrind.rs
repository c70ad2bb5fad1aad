//! Callgrind: corpus.
