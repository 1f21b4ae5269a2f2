//! Unit tests of the C surface, calling the extern functions directly.
