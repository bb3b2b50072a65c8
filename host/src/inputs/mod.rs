//! What the host reads to build a plan request: agent definitions ([`agents`]), settings,
//! the model registry, chain files and the Herdr machine catalog, through one careful file
//! reader ([`config_files`]).

pub mod age;
pub mod agents;
pub mod approval;
pub mod chain;
pub mod config_files;
pub mod deadline;
pub mod herdr;
pub mod pi_catalog;
pub mod project;
pub mod registry;
pub mod settings;
