//! The validator against the official JSON Schema Test Suite (`scripts/json-schema-suite.sh`
//! fetches it into `target/json-schema-test-suite`; `JSON_SCHEMA_TEST_SUITE` names another
//! copy). Every case of draft 2020-12 and draft 7 runs, in both modes (valid or not, and the
//! list of errors), except what the module documents as left out: files of features not
//! supported, and schemas that refer to other documents (which must then fail to compile, not
//! pass silently). A second test crosses each draft 2020-12 schema with every instance of the
//! suite, where the suite says nothing, and compares the verdicts with the `jsonschema` crate's.

use std::path::PathBuf;

use serde_json::Value;

use super::Validator;

/// Files (or `file: group`s) of features the validator leaves out (see the module).
const LEFT_OUT: [&str; 7] = [
    // References to other documents: nothing is fetched.
    "refRemote.json",
    // `$dynamicRef` follows its static target.
    "dynamicRef.json",
    "unevaluatedItems.json: unevaluatedItems with $dynamicRef",
    "unevaluatedProperties.json: unevaluatedProperties with $dynamicRef",
    // Meta-schemas with their own vocabularies.
    "vocabulary.json",
    // Draft 7's `$ref` ignores its siblings; here they apply, as in draft 2020-12.
    "draft7/ref.json",
    // Draft 7's `$id` in a subschema beside a `$ref`: as above.
    "draft7/refOfUnknownKeyword.json",
];

fn suite_root() -> Option<PathBuf> {
    let root = std::env::var_os("JSON_SCHEMA_TEST_SUITE").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/json-schema-test-suite")
    });
    root.join("tests").is_dir().then_some(root)
}

#[test]
fn json_schema_test_suite() {
    let Some(root) = suite_root() else {
        eprintln!(
            "skipped: the JSON Schema Test Suite is not in target/json-schema-test-suite; run \
             scripts/json-schema-suite.sh to fetch it"
        );
        return;
    };
    let mut passed = 0;
    let mut refused_schemas = Vec::new();
    let mut failures = Vec::new();
    for draft in ["draft2020-12", "draft7"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("tests").join(draft))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            if LEFT_OUT.iter().any(|left| *left == name || *left == format!("{draft}/{name}")) {
                continue;
            }
            let groups: Vec<Value> = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            for group in groups {
                let description = group["description"].as_str().unwrap_or("");
                if LEFT_OUT.contains(&format!("{name}: {description}").as_str()) {
                    continue;
                }
                let what = format!("{draft}/{name}: {description}");
                let validator = match Validator::new(&group["schema"]) {
                    Ok(validator) => validator,
                    Err(error) if error.contains("references to other documents are not fetched") => {
                        refused_schemas.push(what);
                        continue;
                    }
                    Err(error) => {
                        failures.push(format!("{what}: the schema does not compile: {error}"));
                        continue;
                    }
                };
                for case in group["tests"].as_array().unwrap() {
                    let expected = case["valid"].as_bool().unwrap();
                    let fast = validator.is_valid(&case["data"]);
                    let errors = validator.errors(&case["data"]);
                    if fast != expected || errors.is_empty() != expected {
                        failures.push(format!(
                            "{what} / {}: expected {expected}, is_valid {fast}, errors {errors:?}",
                            case["description"].as_str().unwrap_or("")
                        ));
                    } else {
                        passed += 1;
                    }
                }
            }
        }
    }
    eprintln!(
        "JSON Schema Test Suite: {passed} cases passed, {} failed, {} schemas refused for referring to other \
         documents",
        failures.len(),
        refused_schemas.len()
    );
    for what in &refused_schemas {
        eprintln!("  refused: {what}");
    }
    assert!(failures.is_empty(), "{} cases failed:\n{}", failures.len(), failures.join("\n"));
    assert!(passed > 1500, "only {passed} cases ran");
}

/// Schemas whose verdicts may differ from the `jsonschema` crate's for a documented reason.
fn differs_by_design(schema: &Value) -> bool {
    let text = schema.to_string();
    // Patterns: ECMA-262 against the `regex` crate (Unicode classes, look-around), and formats,
    // which that crate may assert where they are annotations here.
    ["pattern", "format", "$dynamicRef", "$dynamicAnchor", "$recursiveRef"]
        .iter()
        .any(|k| text.contains(&format!("\"{k}\"")))
}

#[test]
fn verdicts_agree_with_the_jsonschema_crate_beyond_the_suites_cases() {
    let Some(root) = suite_root() else {
        eprintln!("skipped: the JSON Schema Test Suite is not fetched; run scripts/json-schema-suite.sh");
        return;
    };
    let mut compared = 0;
    let mut disagreements = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("tests/draft2020-12"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .filter(|path| !LEFT_OUT.contains(&path.file_name().unwrap().to_string_lossy().as_ref()))
        .collect();
    files.sort();
    let groups: Vec<(String, Value)> = files
        .iter()
        .flat_map(|file| {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            let groups: Vec<Value> = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
            groups.into_iter().map(move |group| (name.clone(), group))
        })
        .collect();
    // Every instance of every file, once each.
    let mut instances: Vec<&Value> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (_, group) in &groups {
        for case in group["tests"].as_array().unwrap() {
            if seen.insert(case["data"].to_string()) {
                instances.push(&case["data"]);
            }
        }
    }
    for (name, group) in &groups {
        let schema = &group["schema"];
        if differs_by_design(schema) {
            continue;
        }
        let (Ok(ours), Ok(theirs)) = (Validator::new(schema), jsonschema::draft202012::new(schema)) else {
            continue;
        };
        for instance in &instances {
            compared += 1;
            let (a, b) = (ours.is_valid(instance), theirs.is_valid(instance));
            if a != b {
                disagreements.push(format!(
                    "{name}: {}: {instance}: ours {a}, jsonschema {b}",
                    group["description"].as_str().unwrap_or("")
                ));
            }
        }
    }
    eprintln!("{compared} schema and instance pairs compared with the jsonschema crate");
    assert!(disagreements.is_empty(), "{} disagreements:\n{}", disagreements.len(), disagreements.join("\n"));
    assert!(compared > 100_000, "only {compared} pairs compared");
}
