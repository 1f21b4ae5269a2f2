//! C ABI surface (see include/kstate.h). Thin: validate, call the core, convert.
