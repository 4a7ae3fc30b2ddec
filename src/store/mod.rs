//! What openivm keeps in a database besides the views: its metadata tables, its settings and where the metadata of
//! a view's home lives.

pub mod feed_state;
pub mod home;
pub mod metadata;
pub mod settings;
