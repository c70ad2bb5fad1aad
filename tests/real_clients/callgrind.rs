//! Callgrind: real_clients.
