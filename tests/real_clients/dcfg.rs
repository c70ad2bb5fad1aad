//! DCFG: real_clients.
