//! What the editing tools (`edit`, `multi_edit`, `write`, `apply_patch`) share: text files as
//! they see them, the stale-write guard, the check after an edit, and the help an error gives
//! when a text is not found (the closest lines, line-number prefixes a model copied).

pub(crate) mod closest;
pub mod file_versions;
pub(crate) mod line_numbers;
pub(crate) mod text_file;
pub mod verify;
