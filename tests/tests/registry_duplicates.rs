//! Two definitions with one name: building the registry fails and names both places.

use tool_runtime::{Registry, RegistryError, tool};

mod first {
    use super::tool;

    /// One `read`.
    #[tool]
    pub(crate) async fn read() -> &'static str {
        "first"
    }
}

mod second {
    use super::tool;

    /// Another `read`.
    #[tool(name = "read")]
    pub(crate) async fn open() -> &'static str {
        "second"
    }
}

#[test]
fn duplicate_names_are_an_error_naming_both_definitions() {
    let err = Registry::from_inventory().expect_err("two tools are named `read`");
    let RegistryError::DuplicateName { name, first, second } = &err else { panic!("wrong error: {err}") };
    assert_eq!(name, "read");
    let mut modules =
        [first.as_ref().unwrap().module_path.as_str(), second.as_ref().unwrap().module_path.as_str()];
    modules.sort();
    assert_eq!(modules, ["registry_duplicates::first", "registry_duplicates::second"]);
    let text = err.to_string();
    assert!(text.starts_with("two tools are named `read`: one defined at registry_duplicates::"), "{text}");
    assert!(text.contains("registry_duplicates.rs:"), "{text}");
    assert!(text.ends_with("rename one with #[tool(name = \"...\")] or filter one out"), "{text}");
}

#[test]
fn filtering_one_out_resolves_the_clash() {
    let registry = Registry::builder()
        .with_inventory()
        .filter(|spec| spec.description != "Another `read`.")
        .build()
        .expect("only one `read` left");
    assert_eq!(registry.names().collect::<Vec<_>>(), ["read"]);
}
