//! DCFG: roundtrip.
