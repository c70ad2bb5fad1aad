//! DCFG: corpus.
