//! Plans: the campaign spec, its balanced schedule of arm orders, and sealing.

pub mod design;
pub mod seal;
pub mod spec;
