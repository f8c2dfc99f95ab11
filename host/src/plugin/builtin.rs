//! placeholder: builtin workloads
