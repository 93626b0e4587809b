//! Golden tests of the provider formats: definitions with schema lowering, tool-call parsing and
//! result rendering, for a realistic tool set.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::providers::{
    DefinitionOptions, LoweringError, ParseError, Provider, anthropic, gemini, mcp, openai_chat,
    openai_responses,
};
use tool_runtime::schema::{args_schema, empty_args_schema, generator, root_schema_with};
use tool_runtime::{
    Arguments, Content, Json, Registry, ToolCall, ToolOutput, ToolResult, ToolSpec,
    spec::{FnTool, IntoToolOutput, ToolAnnotations},
};

// ---------------------------------------------------------------------------------------------
// The tool set
// ---------------------------------------------------------------------------------------------

/// One replacement in a file.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Edit {
    /// Exact text to replace.
    old: String,
    /// Replacement text.
    new: String,
    /// Replace every occurrence instead of exactly one.
    #[serde(default)]
    replace_all: bool,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct EditArgs {
    /// File to edit, relative to the workspace root.
    path: String,
    /// Replacements, applied in order.
    #[schemars(length(min = 1))]
    edits: Vec<Edit>,
    /// Only report what would change.
    dry_run: Option<bool>,
}

/// How the pattern is matched.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum MatchMode {
    Literal,
    Regex,
    Fuzzy,
}

/// Lines of context around each match.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct ContextLines {
    /// Lines before.
    #[schemars(range(max = 20))]
    before: u8,
    /// Lines after.
    #[schemars(range(max = 20))]
    after: u8,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct SearchArgs {
    /// What to look for.
    #[schemars(length(min = 1, max = 200))]
    pattern: String,
    /// How the pattern is matched.
    #[serde(default = "default_mode")]
    mode: MatchMode,
    /// Maximum number of matches.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    limit: u32,
    /// Glob of files to search.
    #[schemars(regex(pattern = r"^[^\s]+$"))]
    glob: Option<String>,
    /// Context around matches.
    context: Option<ContextLines>,
    /// File extensions to include.
    extensions: Option<Vec<String>>,
}

fn default_mode() -> MatchMode {
    MatchMode::Literal
}

fn default_limit() -> u32 {
    100
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct CountArgs {
    /// Directory to count, relative to the workspace root.
    path: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct LineCounts {
    /// Total lines.
    total: u64,
    /// Lines per language.
    by_language: HashMap<String, u64>,
}

/// The shell to run the command in.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(dead_code)]
enum Shell {
    /// Bash.
    Bash {
        /// Start a login shell.
        login: bool,
    },
    /// No shell: run the program directly.
    Direct,
    /// Any other interpreter.
    Custom {
        /// Program path.
        program: String,
    },
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct ShellArgs {
    /// The command line.
    command: String,
    /// The shell to run it in.
    shell: Shell,
    /// Time limit in seconds.
    timeout_secs: Option<u64>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct RunArgs {
    /// The command line.
    command: String,
    /// Extra environment variables.
    #[serde(default)]
    env: HashMap<String, String>,
}

/// A section of a document outline.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Section {
    /// Heading text.
    title: String,
    /// Nested sections.
    #[serde(default)]
    children: Vec<Section>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct OutlineArgs {
    /// Document path.
    path: String,
    /// The new outline.
    sections: Vec<Section>,
}

fn edit_file() -> ToolSpec {
    ToolSpec::new("edit_file", "Replace text in a file.", args_schema::<EditArgs>()).with_annotations(
        ToolAnnotations { title: Some("Edit file".into()), destructive: true, ..Default::default() },
    )
}

fn search() -> ToolSpec {
    ToolSpec::new("search", "Search file contents.", args_schema::<SearchArgs>())
        .with_parallel(true)
        .with_annotations(ToolAnnotations { read_only: true, ..Default::default() })
}

fn count_lines() -> ToolSpec {
    ToolSpec::new("count_lines", "Count lines of code per language.", args_schema::<CountArgs>())
        .with_output_schema(root_schema_with::<LineCounts>(&mut generator()))
        .with_annotations(ToolAnnotations { read_only: true, idempotent: true, ..Default::default() })
}

fn list_todos() -> ToolSpec {
    ToolSpec::new("list_todos", "List the open to-do items.", empty_args_schema())
}

fn shell() -> ToolSpec {
    ToolSpec::new("shell", "Run a command in a shell.", args_schema::<ShellArgs>())
}

fn run_command() -> ToolSpec {
    ToolSpec::new("run_command", "Run a command.", args_schema::<RunArgs>())
        .with_annotations(ToolAnnotations { destructive: true, open_world: true, ..Default::default() })
}

fn outline() -> ToolSpec {
    ToolSpec::new("outline", "Replace a document's outline.", args_schema::<OutlineArgs>())
}

fn registry(specs: Vec<ToolSpec>) -> Registry {
    let mut builder = Registry::builder();
    for spec in specs {
        builder = builder.tool(FnTool::new(spec, |_ctx, _args| async { Ok(ToolOutput::text("")) }));
    }
    builder.build().expect("valid registry")
}

fn portable() -> Registry {
    registry(vec![edit_file(), search(), count_lines(), list_todos()])
}

fn plain() -> DefinitionOptions {
    DefinitionOptions::default()
}

fn strict() -> DefinitionOptions {
    DefinitionOptions::strict()
}

fn lowering_error(provider: Provider, spec: ToolSpec, options: DefinitionOptions) -> LoweringError {
    provider.definition(&spec, &options).expect_err("lowering should fail")
}

// ---------------------------------------------------------------------------------------------
// Provider names
// ---------------------------------------------------------------------------------------------

#[test]
fn provider_names_round_trip_and_unknown_names_list_the_choices() {
    for provider in Provider::ALL {
        assert_eq!(provider.as_str().parse::<Provider>(), Ok(provider));
        assert_eq!(provider.to_string(), provider.as_str());
    }
    let names: Vec<&str> = Provider::ALL.iter().map(|p| p.as_str()).collect();
    assert_eq!(names, ["openai-chat", "openai-responses", "anthropic", "gemini", "mcp"]);
    let error = "openai".parse::<Provider>().unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown provider format `openai`; expected one of openai-chat, openai-responses, anthropic, gemini, mcp"
    );
}

// ---------------------------------------------------------------------------------------------
// Definitions
// ---------------------------------------------------------------------------------------------

#[test]
fn openai_chat_definitions_keep_the_canonical_schema_without_dialect() {
    let definitions = openai_chat::definitions(&registry(vec![edit_file(), list_todos()]), &plain()).unwrap();
    assert_eq!(
        Value::Array(definitions),
        json!([
          {
            "type": "function",
            "function": {
              "name": "edit_file",
              "description": "Replace text in a file.",
              "parameters": {
                "type": "object",
                "properties": {
                  "path": {
                    "type": "string",
                    "description": "File to edit, relative to the workspace root."
                  },
                  "edits": {
                    "type": "array",
                    "items": {
                      "$ref": "#/$defs/Edit"
                    },
                    "description": "Replacements, applied in order.",
                    "minItems": 1
                  },
                  "dry_run": {
                    "type": [
                      "boolean",
                      "null"
                    ],
                    "description": "Only report what would change."
                  }
                },
                "required": [
                  "path",
                  "edits"
                ],
                "additionalProperties": false,
                "$defs": {
                  "Edit": {
                    "type": "object",
                    "properties": {
                      "old": {
                        "type": "string",
                        "description": "Exact text to replace."
                      },
                      "new": {
                        "type": "string",
                        "description": "Replacement text."
                      },
                      "replace_all": {
                        "type": "boolean",
                        "description": "Replace every occurrence instead of exactly one.",
                        "default": false
                      }
                    },
                    "required": [
                      "old",
                      "new"
                    ],
                    "description": "One replacement in a file."
                  }
                }
              }
            }
          },
          {
            "type": "function",
            "function": {
              "name": "list_todos",
              "description": "List the open to-do items.",
              "parameters": {
                "type": "object",
                "properties": {},
                "additionalProperties": false
              }
            }
          }
        ])
    );
}

#[test]
fn openai_strict_makes_every_property_required_optional_ones_nullable_and_objects_closed() {
    let definitions = openai_chat::definitions(&portable(), &strict()).unwrap();
    assert_eq!(
        Value::Array(definitions),
        json!([
          {
            "type": "function",
            "function": {
              "name": "edit_file",
              "description": "Replace text in a file.",
              "parameters": {
                "type": "object",
                "properties": {
                  "path": {
                    "type": "string",
                    "description": "File to edit, relative to the workspace root."
                  },
                  "edits": {
                    "type": "array",
                    "items": {
                      "$ref": "#/$defs/Edit"
                    },
                    "description": "Replacements, applied in order.",
                    "minItems": 1
                  },
                  "dry_run": {
                    "type": [
                      "boolean",
                      "null"
                    ],
                    "description": "Only report what would change."
                  }
                },
                "required": [
                  "path",
                  "edits",
                  "dry_run"
                ],
                "additionalProperties": false,
                "$defs": {
                  "Edit": {
                    "type": "object",
                    "properties": {
                      "old": {
                        "type": "string",
                        "description": "Exact text to replace."
                      },
                      "new": {
                        "type": "string",
                        "description": "Replacement text."
                      },
                      "replace_all": {
                        "type": [
                          "boolean",
                          "null"
                        ],
                        "description": "Replace every occurrence instead of exactly one.",
                        "default": false
                      }
                    },
                    "required": [
                      "old",
                      "new",
                      "replace_all"
                    ],
                    "description": "One replacement in a file.",
                    "additionalProperties": false
                  }
                }
              },
              "strict": true
            }
          },
          {
            "type": "function",
            "function": {
              "name": "search",
              "description": "Search file contents.",
              "parameters": {
                "type": "object",
                "properties": {
                  "pattern": {
                    "type": "string",
                    "description": "What to look for. (at least 1 character, at most 200 characters)"
                  },
                  "mode": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "enum": [
                      "literal",
                      "regex",
                      "fuzzy",
                      null
                    ],
                    "description": "How the pattern is matched."
                  },
                  "limit": {
                    "type": [
                      "integer",
                      "null"
                    ],
                    "minimum": 1,
                    "description": "Maximum number of matches.",
                    "maximum": 500,
                    "default": 100
                  },
                  "glob": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "description": "Glob of files to search.",
                    "pattern": "^[^\\s]+$"
                  },
                  "context": {
                    "anyOf": [
                      {
                        "$ref": "#/$defs/ContextLines"
                      },
                      {
                        "type": "null"
                      }
                    ],
                    "description": "Context around matches."
                  },
                  "extensions": {
                    "description": "File extensions to include.",
                    "anyOf": [
                      {
                        "type": "array",
                        "items": {
                          "type": "string"
                        }
                      },
                      {
                        "type": "null"
                      }
                    ]
                  }
                },
                "required": [
                  "pattern",
                  "mode",
                  "limit",
                  "glob",
                  "context",
                  "extensions"
                ],
                "additionalProperties": false,
                "$defs": {
                  "ContextLines": {
                    "type": "object",
                    "properties": {
                      "before": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 20,
                        "description": "Lines before."
                      },
                      "after": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 20,
                        "description": "Lines after."
                      }
                    },
                    "required": [
                      "before",
                      "after"
                    ],
                    "description": "Lines of context around each match.",
                    "additionalProperties": false
                  }
                }
              },
              "strict": true
            }
          },
          {
            "type": "function",
            "function": {
              "name": "count_lines",
              "description": "Count lines of code per language.",
              "parameters": {
                "type": "object",
                "properties": {
                  "path": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "description": "Directory to count, relative to the workspace root."
                  }
                },
                "required": [
                  "path"
                ],
                "additionalProperties": false
              },
              "strict": true
            }
          },
          {
            "type": "function",
            "function": {
              "name": "list_todos",
              "description": "List the open to-do items.",
              "parameters": {
                "type": "object",
                "properties": {},
                "required": [],
                "additionalProperties": false
              },
              "strict": true
            }
          }
        ])
    );
}

#[test]
fn openai_responses_definitions_always_carry_strict() {
    let registry = registry(vec![count_lines()]);
    let definitions = openai_responses::definitions(&registry, &plain()).unwrap();
    assert_eq!(
        Value::Array(definitions),
        json!([
          {
            "type": "function",
            "name": "count_lines",
            "description": "Count lines of code per language.",
            "parameters": {
              "type": "object",
              "properties": {
                "path": {
                  "type": [
                    "string",
                    "null"
                  ],
                  "description": "Directory to count, relative to the workspace root."
                }
              },
              "additionalProperties": false
            },
            "strict": false
          }
        ])
    );
    let definitions = openai_responses::definitions(&registry, &strict()).unwrap();
    assert_eq!(
        Value::Array(definitions),
        json!([
          {
            "type": "function",
            "name": "count_lines",
            "description": "Count lines of code per language.",
            "parameters": {
              "type": "object",
              "properties": {
                "path": {
                  "type": [
                    "string",
                    "null"
                  ],
                  "description": "Directory to count, relative to the workspace root."
                }
              },
              "required": [
                "path"
              ],
              "additionalProperties": false
            },
            "strict": true
          }
        ])
    );
}

#[test]
fn anthropic_definitions_carry_the_canonical_schema_without_non_standard_formats() {
    let definitions = anthropic::definitions(&registry(vec![search(), list_todos()]), &plain()).unwrap();
    assert_eq!(
        Value::Array(definitions),
        json!([
          {
            "name": "search",
            "description": "Search file contents.",
            "input_schema": {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "type": "object",
              "properties": {
                "pattern": {
                  "type": "string",
                  "description": "What to look for.",
                  "minLength": 1,
                  "maxLength": 200
                },
                "mode": {
                  "$ref": "#/$defs/MatchMode",
                  "description": "How the pattern is matched."
                },
                "limit": {
                  "type": "integer",
                  "minimum": 1,
                  "description": "Maximum number of matches.",
                  "maximum": 500,
                  "default": 100
                },
                "glob": {
                  "type": [
                    "string",
                    "null"
                  ],
                  "description": "Glob of files to search.",
                  "pattern": "^[^\\s]+$"
                },
                "context": {
                  "anyOf": [
                    {
                      "$ref": "#/$defs/ContextLines"
                    },
                    {
                      "type": "null"
                    }
                  ],
                  "description": "Context around matches."
                },
                "extensions": {
                  "type": [
                    "array",
                    "null"
                  ],
                  "items": {
                    "type": "string"
                  },
                  "description": "File extensions to include."
                }
              },
              "required": [
                "pattern"
              ],
              "additionalProperties": false,
              "$defs": {
                "MatchMode": {
                  "type": "string",
                  "enum": [
                    "literal",
                    "regex",
                    "fuzzy"
                  ],
                  "description": "How the pattern is matched."
                },
                "ContextLines": {
                  "type": "object",
                  "properties": {
                    "before": {
                      "type": "integer",
                      "minimum": 0,
                      "maximum": 20,
                      "description": "Lines before."
                    },
                    "after": {
                      "type": "integer",
                      "minimum": 0,
                      "maximum": 20,
                      "description": "Lines after."
                    }
                  },
                  "required": [
                    "before",
                    "after"
                  ],
                  "description": "Lines of context around each match."
                }
              }
            }
          },
          {
            "name": "list_todos",
            "description": "List the open to-do items.",
            "input_schema": {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "type": "object",
              "properties": {},
              "additionalProperties": false
            }
          }
        ])
    );
    // Strict tool use has its own goldens (provider_extras.rs).
}

#[test]
fn gemini_definitions_inline_types_and_keep_only_its_schema_fields() {
    let definitions = gemini::definitions(&portable(), &plain()).unwrap();
    assert_eq!(
        Value::Array(definitions.clone()),
        json!([
          {
            "name": "edit_file",
            "description": "Replace text in a file.",
            "parameters": {
              "type": "OBJECT",
              "properties": {
                "path": {
                  "type": "STRING",
                  "description": "File to edit, relative to the workspace root."
                },
                "edits": {
                  "type": "ARRAY",
                  "items": {
                    "type": "OBJECT",
                    "properties": {
                      "old": {
                        "type": "STRING",
                        "description": "Exact text to replace."
                      },
                      "new": {
                        "type": "STRING",
                        "description": "Replacement text."
                      },
                      "replace_all": {
                        "type": "BOOLEAN",
                        "description": "Replace every occurrence instead of exactly one.",
                        "default": false
                      }
                    },
                    "required": [
                      "old",
                      "new"
                    ],
                    "description": "One replacement in a file."
                  },
                  "description": "Replacements, applied in order.",
                  "minItems": 1
                },
                "dry_run": {
                  "type": "BOOLEAN",
                  "description": "Only report what would change.",
                  "nullable": true
                }
              },
              "required": [
                "path",
                "edits"
              ]
            }
          },
          {
            "name": "search",
            "description": "Search file contents.",
            "parameters": {
              "type": "OBJECT",
              "properties": {
                "pattern": {
                  "type": "STRING",
                  "description": "What to look for.",
                  "minLength": 1,
                  "maxLength": 200
                },
                "mode": {
                  "type": "STRING",
                  "format": "enum",
                  "description": "How the pattern is matched.",
                  "enum": [
                    "literal",
                    "regex",
                    "fuzzy"
                  ]
                },
                "limit": {
                  "type": "INTEGER",
                  "minimum": 1,
                  "description": "Maximum number of matches.",
                  "maximum": 500,
                  "default": 100
                },
                "glob": {
                  "type": "STRING",
                  "description": "Glob of files to search.",
                  "pattern": "^[^\\s]+$",
                  "nullable": true
                },
                "context": {
                  "type": "OBJECT",
                  "properties": {
                    "before": {
                      "type": "INTEGER",
                      "minimum": 0,
                      "maximum": 20,
                      "description": "Lines before."
                    },
                    "after": {
                      "type": "INTEGER",
                      "minimum": 0,
                      "maximum": 20,
                      "description": "Lines after."
                    }
                  },
                  "required": [
                    "before",
                    "after"
                  ],
                  "description": "Context around matches.",
                  "nullable": true
                },
                "extensions": {
                  "type": "ARRAY",
                  "items": {
                    "type": "STRING"
                  },
                  "description": "File extensions to include.",
                  "nullable": true
                }
              },
              "required": [
                "pattern"
              ]
            }
          },
          {
            "name": "count_lines",
            "description": "Count lines of code per language.",
            "parameters": {
              "type": "OBJECT",
              "properties": {
                "path": {
                  "type": "STRING",
                  "description": "Directory to count, relative to the workspace root.",
                  "nullable": true
                }
              }
            }
          },
          {
            "name": "list_todos",
            "description": "List the open to-do items."
          }
        ])
    );
    assert_eq!(gemini::tool(&portable(), &plain()).unwrap(), json!({ "functionDeclarations": definitions }));
}

#[test]
fn mcp_definitions_carry_annotations_and_output_schemas_without_non_standard_formats() {
    let definitions = mcp::definitions(&portable(), &plain()).unwrap();
    assert_eq!(
        Value::Array(definitions),
        json!([
          {
            "name": "edit_file",
            "title": "Edit file",
            "description": "Replace text in a file.",
            "inputSchema": {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "type": "object",
              "properties": {
                "path": {
                  "type": "string",
                  "description": "File to edit, relative to the workspace root."
                },
                "edits": {
                  "type": "array",
                  "items": {
                    "$ref": "#/$defs/Edit"
                  },
                  "description": "Replacements, applied in order.",
                  "minItems": 1
                },
                "dry_run": {
                  "type": [
                    "boolean",
                    "null"
                  ],
                  "description": "Only report what would change."
                }
              },
              "required": [
                "path",
                "edits"
              ],
              "additionalProperties": false,
              "$defs": {
                "Edit": {
                  "type": "object",
                  "properties": {
                    "old": {
                      "type": "string",
                      "description": "Exact text to replace."
                    },
                    "new": {
                      "type": "string",
                      "description": "Replacement text."
                    },
                    "replace_all": {
                      "type": "boolean",
                      "description": "Replace every occurrence instead of exactly one.",
                      "default": false
                    }
                  },
                  "required": [
                    "old",
                    "new"
                  ],
                  "description": "One replacement in a file."
                }
              }
            },
            "annotations": {
              "title": "Edit file",
              "destructiveHint": true
            }
          },
          {
            "name": "search",
            "description": "Search file contents.",
            "inputSchema": {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "type": "object",
              "properties": {
                "pattern": {
                  "type": "string",
                  "description": "What to look for.",
                  "minLength": 1,
                  "maxLength": 200
                },
                "mode": {
                  "$ref": "#/$defs/MatchMode",
                  "description": "How the pattern is matched."
                },
                "limit": {
                  "type": "integer",
                  "minimum": 1,
                  "description": "Maximum number of matches.",
                  "maximum": 500,
                  "default": 100
                },
                "glob": {
                  "type": [
                    "string",
                    "null"
                  ],
                  "description": "Glob of files to search.",
                  "pattern": "^[^\\s]+$"
                },
                "context": {
                  "anyOf": [
                    {
                      "$ref": "#/$defs/ContextLines"
                    },
                    {
                      "type": "null"
                    }
                  ],
                  "description": "Context around matches."
                },
                "extensions": {
                  "type": [
                    "array",
                    "null"
                  ],
                  "items": {
                    "type": "string"
                  },
                  "description": "File extensions to include."
                }
              },
              "required": [
                "pattern"
              ],
              "additionalProperties": false,
              "$defs": {
                "MatchMode": {
                  "type": "string",
                  "enum": [
                    "literal",
                    "regex",
                    "fuzzy"
                  ],
                  "description": "How the pattern is matched."
                },
                "ContextLines": {
                  "type": "object",
                  "properties": {
                    "before": {
                      "type": "integer",
                      "minimum": 0,
                      "maximum": 20,
                      "description": "Lines before."
                    },
                    "after": {
                      "type": "integer",
                      "minimum": 0,
                      "maximum": 20,
                      "description": "Lines after."
                    }
                  },
                  "required": [
                    "before",
                    "after"
                  ],
                  "description": "Lines of context around each match."
                }
              }
            },
            "annotations": {
              "readOnlyHint": true
            }
          },
          {
            "name": "count_lines",
            "description": "Count lines of code per language.",
            "inputSchema": {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "type": "object",
              "properties": {
                "path": {
                  "type": [
                    "string",
                    "null"
                  ],
                  "description": "Directory to count, relative to the workspace root."
                }
              },
              "additionalProperties": false
            },
            "outputSchema": {
              "type": "object",
              "properties": {
                "total": {
                  "type": "integer",
                  "minimum": 0,
                  "description": "Total lines."
                },
                "by_language": {
                  "type": "object",
                  "additionalProperties": {
                    "type": "integer",
                    "minimum": 0
                  },
                  "description": "Lines per language."
                }
              },
              "required": [
                "total",
                "by_language"
              ],
              "$schema": "https://json-schema.org/draft/2020-12/schema"
            },
            "annotations": {
              "readOnlyHint": true,
              "idempotentHint": true
            }
          },
          {
            "name": "list_todos",
            "description": "List the open to-do items.",
            "inputSchema": {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "type": "object",
              "properties": {},
              "additionalProperties": false
            }
          }
        ])
    );
}

#[test]
fn tagged_enums_become_any_of_for_openai_strict_and_gemini() {
    let parameters = &openai_chat::definition(&shell(), &strict()).unwrap()["function"]["parameters"];
    assert_eq!(
        parameters,
        &json!({
          "type": "object",
          "properties": {
            "command": {
              "type": "string",
              "description": "The command line."
            },
            "shell": {
              "anyOf": [
                {
                  "type": "object",
                  "properties": {
                    "kind": {
                      "type": "string",
                      "const": "bash"
                    },
                    "login": {
                      "type": "boolean",
                      "description": "Start a login shell."
                    }
                  },
                  "required": [
                    "kind",
                    "login"
                  ],
                  "description": "Bash.",
                  "additionalProperties": false
                },
                {
                  "type": "object",
                  "properties": {
                    "kind": {
                      "type": "string",
                      "const": "direct"
                    }
                  },
                  "required": [
                    "kind"
                  ],
                  "description": "No shell: run the program directly.",
                  "additionalProperties": false
                },
                {
                  "type": "object",
                  "properties": {
                    "kind": {
                      "type": "string",
                      "const": "custom"
                    },
                    "program": {
                      "type": "string",
                      "description": "Program path."
                    }
                  },
                  "required": [
                    "kind",
                    "program"
                  ],
                  "description": "Any other interpreter.",
                  "additionalProperties": false
                }
              ],
              "description": "The shell to run it in."
            },
            "timeout_secs": {
              "type": [
                "integer",
                "null"
              ],
              "minimum": 0,
              "description": "Time limit in seconds."
            }
          },
          "required": [
            "command",
            "shell",
            "timeout_secs"
          ],
          "additionalProperties": false
        })
    );
    let parameters = &gemini::definition(&shell(), &plain()).unwrap()["parameters"];
    assert_eq!(
        parameters,
        &json!({
          "type": "OBJECT",
          "properties": {
            "command": {
              "type": "STRING",
              "description": "The command line."
            },
            "shell": {
              "description": "The shell to run it in.",
              "anyOf": [
                {
                  "type": "OBJECT",
                  "properties": {
                    "kind": {
                      "type": "STRING",
                      "format": "enum",
                      "enum": [
                        "bash"
                      ]
                    },
                    "login": {
                      "type": "BOOLEAN",
                      "description": "Start a login shell."
                    }
                  },
                  "required": [
                    "kind",
                    "login"
                  ],
                  "description": "Bash."
                },
                {
                  "type": "OBJECT",
                  "properties": {
                    "kind": {
                      "type": "STRING",
                      "format": "enum",
                      "enum": [
                        "direct"
                      ]
                    }
                  },
                  "required": [
                    "kind"
                  ],
                  "description": "No shell: run the program directly."
                },
                {
                  "type": "OBJECT",
                  "properties": {
                    "kind": {
                      "type": "STRING",
                      "format": "enum",
                      "enum": [
                        "custom"
                      ]
                    },
                    "program": {
                      "type": "STRING",
                      "description": "Program path."
                    }
                  },
                  "required": [
                    "kind",
                    "program"
                  ],
                  "description": "Any other interpreter."
                }
              ]
            },
            "timeout_secs": {
              "type": "INTEGER",
              "minimum": 0,
              "description": "Time limit in seconds.",
              "nullable": true
            }
          },
          "required": [
            "command",
            "shell"
          ]
        })
    );
}

#[test]
fn recursive_types_keep_refs_without_siblings_in_openai_strict_mode() {
    let parameters = &openai_chat::definition(&outline(), &strict()).unwrap()["function"]["parameters"];
    assert_eq!(
        parameters,
        &json!({
          "type": "object",
          "properties": {
            "path": {
              "type": "string",
              "description": "Document path."
            },
            "sections": {
              "type": "array",
              "items": {
                "$ref": "#/$defs/Section"
              },
              "description": "The new outline."
            }
          },
          "required": [
            "path",
            "sections"
          ],
          "additionalProperties": false,
          "$defs": {
            "Section": {
              "type": "object",
              "properties": {
                "title": {
                  "type": "string",
                  "description": "Heading text."
                },
                "children": {
                  "description": "Nested sections.",
                  "anyOf": [
                    {
                      "type": "array",
                      "items": {
                        "$ref": "#/$defs/Section"
                      }
                    },
                    {
                      "type": "null"
                    }
                  ]
                }
              },
              "required": [
                "title",
                "children"
              ],
              "description": "A section of a document outline.",
              "additionalProperties": false
            }
          }
        })
    );
}

#[test]
fn recursive_types_are_a_lowering_error_for_gemini_naming_the_tool() {
    let error = lowering_error(Provider::Gemini, outline(), plain());
    assert_eq!(error.tool, "outline");
    assert_eq!(error.location, "sections[].children[]");
    assert_eq!(
        error.to_string(),
        "the tool `outline` cannot be described to Gemini: the argument `sections[].children[]` refers back to `Section`, a recursive type; Gemini function schemas cannot reference other schemas, so every type is inlined, and a recursive one never ends. Use a non-recursive argument type, or leave this tool out for Gemini"
    );
    // The registry-wide listing fails on it too, rather than leaving it out silently.
    let error = gemini::definitions(&registry(vec![search(), outline()]), &plain()).unwrap_err();
    assert_eq!(error.tool, "outline");
}

#[test]
fn recursive_types_pass_unchanged_where_references_are_allowed() {
    let canonical = args_schema::<OutlineArgs>();
    let mut without_dialect = canonical.clone();
    without_dialect.as_object_mut().unwrap().shift_remove("$schema");
    assert_eq!(anthropic::definition(&outline(), &plain()).unwrap()["input_schema"], canonical);
    assert_eq!(mcp::definition(&outline(), &plain()).unwrap()["inputSchema"], canonical);
    assert_eq!(
        openai_chat::definition(&outline(), &plain()).unwrap()["function"]["parameters"],
        without_dialect
    );
}

#[test]
fn maps_cannot_be_closed_for_openai_strict_nor_named_for_gemini() {
    let error = lowering_error(Provider::OpenAiChat, run_command(), strict());
    assert_eq!((error.tool.as_str(), error.location.as_str(), error.strict), ("run_command", "env", true));
    assert_eq!(
        error.to_string(),
        "the tool `run_command` cannot be described to OpenAI Chat Completions strict mode: the argument `env` is a map with free-form keys (`additionalProperties`), but strict mode requires every object to be closed (`additionalProperties: false`); use a list of key/value structs, or turn strict mode off"
    );
    let error = lowering_error(Provider::Gemini, run_command(), plain());
    assert_eq!(
        error.to_string(),
        "the tool `run_command` cannot be described to Gemini: the argument `env` is a map with free-form keys (`additionalProperties`); Gemini objects must list their properties by name, so free-form keys cannot be expressed. Use a list of key/value structs"
    );
    // Without strict mode OpenAI takes the map as it is.
    let parameters = &openai_chat::definition(&run_command(), &plain()).unwrap()["function"]["parameters"];
    assert_eq!(
        parameters["properties"]["env"],
        json!({
            "type": "object",
            "additionalProperties": { "type": "string" },
            "default": {},
            "description": "Extra environment variables."
        })
    );
}

fn spec_with(schema: Value) -> ToolSpec {
    ToolSpec::new("probe", "A hand-written schema.", schema)
}

#[test]
fn argument_schemas_must_be_plain_objects_at_the_top() {
    let not_object = spec_with(json!({ "type": "array", "items": { "type": "string" } }));
    for provider in Provider::ALL {
        let error = lowering_error(provider, not_object.clone(), plain());
        assert!(
            error.reason.starts_with("the argument schema must be `\"type\": \"object\"` at the top"),
            "{error}"
        );
    }
    let union = spec_with(json!({
        "type": "object",
        "anyOf": [
            { "properties": { "a": { "type": "string" } }, "required": ["a"] },
            { "properties": { "b": { "type": "string" } }, "required": ["b"] }
        ]
    }));
    for provider in [Provider::OpenAiChat, Provider::OpenAiResponses, Provider::Anthropic, Provider::Gemini] {
        let error = lowering_error(provider, union.clone(), plain());
        assert_eq!(error.location, "");
        assert!(error.reason.starts_with("the argument schema uses `anyOf` at the top"), "{error}");
    }
    // MCP only asks for `type: object`.
    assert!(mcp::definition(&union, &plain()).is_ok());
}

#[test]
fn unsupported_keywords_are_errors_and_unsupported_constraints_become_words() {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": { "type": "string", "format": "uuid", "description": "Ticket id." },
            "url": { "type": "string", "format": "uri" },
            "tags": { "type": "array", "items": { "type": "string" }, "uniqueItems": true, "maxItems": 5 },
            "step": { "type": "integer", "exclusiveMinimum": 0, "multipleOf": 5 },
            "ratio": { "type": "number", "exclusiveMaximum": 1.5 }
        },
        "required": ["id", "url", "tags", "step", "ratio"],
        "additionalProperties": false
    });
    let parameters =
        &openai_chat::definition(&spec_with(schema.clone()), &strict()).unwrap()["function"]["parameters"];
    assert_eq!(
        parameters["properties"],
        json!({
            "id": { "type": "string", "format": "uuid", "description": "Ticket id." },
            "url": { "type": "string", "description": "(format: uri)" },
            "tags": { "type": "array", "items": { "type": "string" }, "maxItems": 5, "description": "(items must be unique)" },
            "step": { "type": "integer", "exclusiveMinimum": 0, "multipleOf": 5 },
            "ratio": { "type": "number", "exclusiveMaximum": 1.5 }
        })
    );
    let parameters = &gemini::definition(&spec_with(schema), &plain()).unwrap()["parameters"];
    assert_eq!(
        parameters["properties"],
        json!({
            "id": { "type": "STRING", "description": "Ticket id. (format: uuid)" },
            "url": { "type": "STRING", "description": "(format: uri)" },
            "tags": { "type": "ARRAY", "items": { "type": "STRING" }, "maxItems": 5, "description": "(items must be unique)" },
            "step": { "type": "INTEGER", "minimum": 1, "description": "(a multiple of 5)" },
            "ratio": { "type": "NUMBER", "description": "(less than 1.5)" }
        })
    );

    for (keyword, property) in [
        ("not", json!({ "type": "string", "not": { "const": "" } })),
        ("if", json!({ "type": "string", "if": { "minLength": 1 }, "then": { "pattern": "^a" } })),
        ("prefixItems", json!({ "type": "array", "prefixItems": [{ "type": "string" }], "items": false })),
        (
            "patternProperties",
            json!({ "type": "object", "patternProperties": { "^x-": { "type": "string" } }, "properties": { "a": { "type": "string" } } }),
        ),
    ] {
        let spec = spec_with(json!({
            "type": "object",
            "properties": { "field": property },
            "required": ["field"],
            "additionalProperties": false
        }));
        for (provider, options) in [(Provider::OpenAiResponses, strict()), (Provider::Gemini, plain())] {
            let error = lowering_error(provider, spec.clone(), options);
            assert_eq!(error.location, "field");
            assert!(
                error
                    .reason
                    .starts_with(&format!("the argument `field` uses the JSON Schema keyword `{keyword}`")),
                "{keyword} for {provider}: {error}"
            );
        }
    }
}

#[test]
fn values_of_any_type_cannot_be_expressed_in_strict_mode_or_gemini() {
    let spec = spec_with(json!({
        "type": "object",
        "properties": { "payload": { "description": "Anything." }, "list": { "type": "array" } },
        "required": ["payload", "list"],
        "additionalProperties": false
    }));
    let error = lowering_error(Provider::OpenAiChat, spec.clone(), strict());
    assert_eq!(
        error.reason,
        "the argument `payload` accepts any JSON value (no type), which OpenAI strict mode cannot express; give it a concrete type"
    );
    let error = lowering_error(Provider::Gemini, spec.clone(), plain());
    assert_eq!(error.location, "payload");
    let without_payload = spec_with(json!({
        "type": "object",
        "properties": { "list": { "type": "array" } },
        "additionalProperties": false
    }));
    let error = lowering_error(Provider::Gemini, without_payload.clone(), plain());
    assert_eq!(
        error.reason,
        "the argument `list` is a list whose items may be any JSON value; Gemini needs a schema for list items"
    );
    let error = lowering_error(Provider::OpenAiChat, without_payload, strict());
    assert_eq!(error.location, "list");
    // Anthropic and MCP take any JSON Schema.
    assert!(anthropic::definition(&spec, &plain()).is_ok());
    assert!(mcp::definition(&spec, &plain()).is_ok());
}

#[test]
fn refs_with_siblings_inside_a_recursive_type_become_one_branch_any_of() {
    let spec = spec_with(json!({
        "type": "object",
        "properties": { "root": { "$ref": "#/$defs/Node", "description": "The tree." } },
        "required": ["root"],
        "additionalProperties": false,
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": { "type": "string" },
                    "parent": { "$ref": "#/$defs/Node", "description": "The parent node." }
                },
                "required": ["name"]
            }
        }
    }));
    let parameters = &openai_chat::definition(&spec, &strict()).unwrap()["function"]["parameters"];
    assert_eq!(
        parameters,
        &json!({
            "type": "object",
            "properties": {
                "root": {
                    "type": "object",
                    "properties": {
                        "name": { "type": "string" },
                        "parent": {
                            "anyOf": [{ "$ref": "#/$defs/Node" }, { "type": "null" }],
                            "description": "The parent node."
                        }
                    },
                    "required": ["name", "parent"],
                    "additionalProperties": false,
                    "description": "The tree."
                }
            },
            "required": ["root"],
            "additionalProperties": false,
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "name": { "type": "string" },
                        "parent": {
                            "anyOf": [{ "$ref": "#/$defs/Node" }, { "type": "null" }],
                            "description": "The parent node."
                        }
                    },
                    "required": ["name", "parent"],
                    "additionalProperties": false
                }
            }
        })
    );
}

fn nested_objects(levels: usize) -> Value {
    let mut schema = json!({ "type": "string" });
    for _ in 0..levels {
        schema = json!({
            "type": "object",
            "properties": { "inner": schema },
            "required": ["inner"],
            "additionalProperties": false
        });
    }
    schema
}

#[test]
fn openai_strict_limits_are_checked_before_any_request() {
    assert!(openai_chat::definition(&spec_with(nested_objects(10)), &strict()).is_ok());
    let error = lowering_error(Provider::OpenAiChat, spec_with(nested_objects(11)), strict());
    assert_eq!(
        error.reason,
        "the argument schema nests objects 11 levels deep; strict mode allows at most 10"
    );
    // Without strict mode the limits do not apply.
    assert!(openai_chat::definition(&spec_with(nested_objects(11)), &plain()).is_ok());

    let values: Vec<String> = (0..1001).map(|i| format!("v{i}")).collect();
    let spec = spec_with(json!({
        "type": "object",
        "properties": { "pick": { "type": "string", "enum": values } },
        "required": ["pick"],
        "additionalProperties": false
    }));
    let error = lowering_error(Provider::OpenAiResponses, spec, strict());
    assert_eq!(
        error.reason,
        "the argument schema has 1001 enum values in all; strict mode allows at most 1000"
    );
}

#[test]
fn mcp_output_schemas_must_be_objects() {
    let spec = list_todos().with_output_schema(json!({ "type": "array", "items": { "type": "string" } }));
    let error = lowering_error(Provider::Mcp, spec, plain());
    assert_eq!(
        error.to_string(),
        "the tool `list_todos` cannot be described to MCP: the output schema is not `\"type\": \"object\"`, but MCP's `structuredContent` must be a JSON object; return `Json` of a struct (or a map)"
    );
}

#[test]
fn strict_mode_nulls_validate_against_the_canonical_schema() {
    // What a model writes for optional arguments under the strict schema ...
    let registry = portable();
    let validated = registry
        .validate(
            "search",
            r#"{"pattern":"TODO","mode":null,"limit":null,"glob":null,"context":null,"extensions":null}"#,
        )
        .unwrap();
    // ... reaches the tool as if they had been left out.
    assert_eq!(validated.value, json!({ "pattern": "TODO" }));
    let validated = registry
        .validate(
            "edit_file",
            r#"{"path":"a.rs","edits":[{"old":"x","new":"y","replace_all":null}],"dry_run":null}"#,
        )
        .unwrap();
    assert_eq!(validated.value, json!({ "path": "a.rs", "edits": [{ "old": "x", "new": "y" }] }));
}

// ---------------------------------------------------------------------------------------------
// Parsing tool calls
// ---------------------------------------------------------------------------------------------

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

/// A call whose arguments arrived as a JSON object (Anthropic, Gemini, MCP): kept as the parsed
/// value, never written out as text.
fn object_call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: Arguments::Json(arguments) }
}

#[test]
fn openai_chat_calls_keep_the_raw_argument_text() {
    let message = json!({
        "role": "assistant",
        "content": null,
        "refusal": null,
        "tool_calls": [
            { "id": "call_Xq1", "type": "function", "function": { "name": "search", "arguments": "{\"pattern\": \"TODO\", \"limit\": \"20\"}" } },
            { "id": "call_Xq2", "type": "function", "function": { "name": "edit_file", "arguments": "{\"path\": \"a.rs\", \"edits\": [" } },
            { "id": "call_Xq3", "type": "function", "function": { "name": "list_todos", "arguments": "" } }
        ]
    });
    let expected = vec![
        call("call_Xq1", "search", r#"{"pattern": "TODO", "limit": "20"}"#),
        call("call_Xq2", "edit_file", r#"{"path": "a.rs", "edits": ["#),
        call("call_Xq3", "list_todos", ""),
    ];
    assert_eq!(openai_chat::parse_tool_calls(&message).unwrap(), expected);
    // A whole completion reads its first choice.
    let completion = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{ "index": 0, "message": message, "finish_reason": "tool_calls" }]
    });
    assert_eq!(Provider::OpenAiChat.parse_tool_calls(&completion).unwrap(), expected);
    // A plain answer has no calls.
    assert_eq!(
        openai_chat::parse_tool_calls(&json!({ "role": "assistant", "content": "Done." })).unwrap(),
        vec![]
    );
}

fn parse_error(provider: Provider, message: Value) -> ParseError {
    provider.parse_tool_calls(&message).expect_err("parsing should fail")
}

#[test]
fn openai_chat_malformed_calls_say_where_and_what() {
    let error = parse_error(
        Provider::OpenAiChat,
        json!({ "role": "assistant", "tool_calls": [
            { "id": "call_1", "type": "function", "function": { "name": "search", "arguments": "{}" } },
            { "type": "function", "function": { "name": "search", "arguments": "{}" } }
        ]}),
    );
    assert_eq!(error.location, "tool_calls[1]");
    assert_eq!(
        error.to_string(),
        "invalid OpenAI Chat Completions message at `tool_calls[1]`: `id` is missing"
    );

    let error = parse_error(
        Provider::OpenAiChat,
        json!({ "role": "assistant", "tool_calls": [
            { "id": "call_1", "type": "function", "function": { "name": "search", "arguments": 7 } }
        ]}),
    );
    assert_eq!(
        error.to_string(),
        "invalid OpenAI Chat Completions message at `tool_calls[0].function`: `arguments` must be a string of JSON, found a number"
    );

    let error = parse_error(
        Provider::OpenAiChat,
        json!({ "role": "assistant", "tool_calls": [{ "id": "c", "type": "custom", "custom": { "name": "x", "input": "" } }] }),
    );
    assert_eq!(error.message, "unsupported tool call type \"custom\"; only `function` calls can be answered");

    let error = parse_error(Provider::OpenAiChat, json!({ "role": "user", "content": "hi" }));
    assert_eq!(
        error.message,
        "expected a message with role `assistant` (the model's turn), found role `user`"
    );

    let error = parse_error(Provider::OpenAiChat, json!({ "role": "assistant", "tool_calls": {} }));
    assert_eq!(error.message, "`tool_calls` must be an array, found an object");

    let error = parse_error(Provider::OpenAiChat, json!("tool_calls"));
    assert_eq!(
        error.to_string(),
        "invalid OpenAI Chat Completions message: expected an object, found a string"
    );
}

#[test]
fn openai_responses_calls_come_from_function_call_items() {
    let response = json!({
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [
            { "type": "reasoning", "id": "rs_1", "summary": [] },
            { "type": "message", "id": "msg_1", "role": "assistant", "content": [{ "type": "output_text", "text": "Looking." }] },
            { "type": "function_call", "id": "fc_1", "call_id": "call_A", "name": "search", "arguments": "{\"pattern\":\"fn main\"}", "status": "completed" },
            { "type": "function_call", "id": "fc_2", "call_id": "call_B", "name": "count_lines", "arguments": "{\"path\":null}", "status": "completed" }
        ]
    });
    let expected = vec![
        call("call_A", "search", r#"{"pattern":"fn main"}"#),
        call("call_B", "count_lines", r#"{"path":null}"#),
    ];
    assert_eq!(openai_responses::parse_tool_calls(&response).unwrap(), expected);
    assert_eq!(openai_responses::parse_tool_calls(&response["output"]).unwrap(), expected);
    assert_eq!(openai_responses::parse_tool_calls(&response["output"][3]).unwrap(), expected[1..]);

    let error = parse_error(
        Provider::OpenAiResponses,
        json!([{ "type": "function_call", "id": "fc_1", "name": "search", "arguments": "{}" }]),
    );
    assert_eq!(error.to_string(), "invalid OpenAI Responses message at `[0]`: `call_id` is missing");
    let error = parse_error(
        Provider::OpenAiResponses,
        json!({ "output": [{ "type": "message" }, { "type": "function_call", "call_id": "c", "name": "search" }] }),
    );
    assert_eq!(error.to_string(), "invalid OpenAI Responses message at `output[1]`: `arguments` is missing");
    let error = parse_error(Provider::OpenAiResponses, json!({ "id": "resp_1" }));
    assert_eq!(
        error.message,
        "expected a response with `output`, an array of output items, or one `function_call` item"
    );
}

#[test]
fn anthropic_calls_keep_the_input_object_as_parsed() {
    let message = json!({
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            { "type": "thinking", "thinking": "Two calls.", "signature": "sig" },
            { "type": "text", "text": "Let me look." },
            { "type": "tool_use", "id": "toolu_01", "name": "search", "input": { "pattern": "TODO", "limit": 5 } },
            { "type": "tool_use", "id": "toolu_02", "name": "list_todos", "input": {} }
        ],
        "stop_reason": "tool_use"
    });
    let expected = vec![
        object_call("toolu_01", "search", json!({ "pattern": "TODO", "limit": 5 })),
        object_call("toolu_02", "list_todos", json!({})),
    ];
    assert_eq!(anthropic::parse_tool_calls(&message).unwrap(), expected);
    assert_eq!(anthropic::parse_tool_calls(&message["content"]).unwrap(), expected);
    assert_eq!(
        anthropic::parse_tool_calls(&json!({ "role": "assistant", "content": "Hi." })).unwrap(),
        vec![]
    );

    let error = parse_error(
        Provider::Anthropic,
        json!({ "role": "assistant", "content": [{ "type": "tool_use", "id": "toolu_01", "name": "search" }] }),
    );
    assert_eq!(error.to_string(), "invalid Anthropic Messages message at `content[0]`: `input` is missing");
    let error = parse_error(Provider::Anthropic, json!({ "role": "assistant", "content": ["text"] }));
    assert_eq!(
        error.to_string(),
        "invalid Anthropic Messages message at `content[0]`: expected an object, found a string"
    );
}

#[test]
fn gemini_calls_get_stable_ids_when_the_model_sends_none() {
    let response = json!({
        "candidates": [{
            "content": {
                "role": "model",
                "parts": [
                    { "text": "Checking." },
                    { "functionCall": { "name": "search", "args": { "pattern": "TODO" } }, "thoughtSignature": "c2ln" },
                    { "functionCall": { "name": "list_todos" } },
                    { "functionCall": { "id": "fc-7", "name": "count_lines", "args": { "path": "src" } } }
                ]
            },
            "finishReason": "STOP"
        }]
    });
    let calls = gemini::parse_tool_calls(&response).unwrap();
    assert_eq!(
        calls,
        vec![
            object_call("gemini-call-0-069e1cdb", "search", json!({ "pattern": "TODO" })),
            object_call("gemini-call-1-3ee08589", "list_todos", json!({})),
            object_call("fc-7", "count_lines", json!({ "path": "src" })),
        ]
    );
    // The same message always gives the same ids; the content alone works too.
    assert_eq!(gemini::parse_tool_calls(&response["candidates"][0]["content"]).unwrap(), calls);
    let other = json!({ "role": "model", "parts": [{ "functionCall": { "name": "search", "args": { "pattern": "FIXME" } } }] });
    assert_ne!(gemini::parse_tool_calls(&other).unwrap()[0].id, calls[0].id);

    let error = parse_error(
        Provider::Gemini,
        json!({ "role": "model", "parts": [{ "functionCall": { "args": {} } }] }),
    );
    assert_eq!(error.to_string(), "invalid Gemini message at `parts[0].functionCall`: `name` is missing");
    let error = parse_error(Provider::Gemini, json!({ "role": "user", "parts": [] }));
    assert_eq!(error.message, "expected a message with role `model` (the model's turn), found role `user`");
    let error = parse_error(Provider::Gemini, json!({ "candidates": [] }));
    assert_eq!(error.message, "`candidates` is empty");
}

#[test]
fn mcp_calls_come_from_tools_call_requests() {
    let request = json!({
        "jsonrpc": "2.0", "id": 42, "method": "tools/call",
        "params": { "name": "search", "arguments": { "pattern": "TODO" } }
    });
    assert_eq!(
        mcp::parse_tool_calls(&request).unwrap(),
        vec![object_call("42", "search", json!({ "pattern": "TODO" }))]
    );
    let batch = json!([
        request,
        { "jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": { "name": "list_todos" } }
    ]);
    assert_eq!(
        mcp::parse_tool_calls(&batch).unwrap(),
        vec![
            object_call("42", "search", json!({ "pattern": "TODO" })),
            object_call("b", "list_todos", json!({}))
        ]
    );
    assert_eq!(
        mcp::parse_tool_calls(&json!({ "name": "list_todos", "arguments": {} })).unwrap(),
        vec![object_call("mcp-call-0", "list_todos", json!({}))]
    );
    let error = parse_error(Provider::Mcp, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }));
    assert_eq!(error.message, "expected a `tools/call` request, found method `tools/list`");
    let error = parse_error(
        Provider::Mcp,
        json!([{ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {} }]),
    );
    assert_eq!(error.to_string(), "invalid MCP message at `[0].params`: `name` is missing");
}

#[test]
fn parsed_arguments_reach_validation_as_the_model_wrote_them() {
    let calls = anthropic::parse_tool_calls(&json!({ "role": "assistant", "content": [
        { "type": "tool_use", "id": "toolu_1", "name": "search", "input": { "pattern": "", "limit": 900 } }
    ]}))
    .unwrap();
    let error = portable().validate(&calls[0].name, calls[0].arguments.clone()).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("/limit: must be at most 500, received 900"), "{message}");
    assert!(message.contains("/pattern: must be at least 1 character long"), "{message}");
}

#[test]
fn an_object_and_the_same_text_validate_alike_for_every_provider() {
    // The same arguments as each provider delivers them: text from OpenAI, an object from the
    // others. Valid, coerced and invalid calls give the same outcome and the same words.
    let cases = [
        json!({ "pattern": "TODO", "limit": 5 }),
        json!({ "pattern": "TODO", "limit": "5", "glob": null }),
        json!({ "pattern": "", "limit": 900, "extra": true }),
        json!(["not", "an", "object"]),
    ];
    let registry = portable();
    for arguments in cases {
        let object = registry.validate("search", Arguments::Json(arguments.clone()));
        let text = registry.validate("search", arguments.to_string());
        match (object, text) {
            (Ok(object), Ok(text)) => assert_eq!(object, text, "{arguments}"),
            (Err(object), Err(text)) => assert_eq!(object.to_string(), text.to_string(), "{arguments}"),
            (object, text) => panic!("{arguments}: {object:?} vs {text:?}"),
        }
    }
    // Through each provider's parser.
    let input = json!({ "pattern": "TODO", "limit": "5" });
    let anthropic = anthropic::parse_tool_calls(&json!({ "role": "assistant", "content": [
        { "type": "tool_use", "id": "t", "name": "search", "input": input }
    ]}))
    .unwrap();
    let gemini = gemini::parse_tool_calls(&json!({ "role": "model", "parts": [
        { "functionCall": { "name": "search", "args": input } }
    ]}))
    .unwrap();
    let mcp = mcp::parse_tool_calls(&json!({ "name": "search", "arguments": input })).unwrap();
    let openai = openai_chat::parse_tool_calls(&json!({ "role": "assistant", "tool_calls": [
        { "id": "c", "type": "function", "function": { "name": "search", "arguments": input.to_string() } }
    ]}))
    .unwrap();
    let expected = registry.validate("search", openai[0].arguments.clone()).unwrap();
    assert_eq!(expected.value["limit"], json!(5));
    for calls in [anthropic, gemini, mcp] {
        assert_eq!(calls[0].arguments, Arguments::Json(input.clone()));
        assert_eq!(registry.validate("search", calls[0].arguments.clone()).unwrap(), expected);
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering results
// ---------------------------------------------------------------------------------------------

const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

fn result(call_id: &str, tool: &str, output: ToolOutput) -> ToolResult {
    ToolResult { call_id: call_id.to_owned(), tool: tool.to_owned(), output, freeform: false }
}

/// A batch with every kind of result: text, an error, text with a PNG and a TIFF, structured
/// output (with its text mirror), and nothing at all.
fn batch() -> Vec<ToolResult> {
    let counts = Json(LineCounts { total: 42, by_language: HashMap::from([("rust".to_owned(), 42)]) })
        .into_tool_output()
        .unwrap();
    vec![
        result("c1", "search", ToolOutput::text("src/main.rs:3: // TODO")),
        result("c2", "edit_file", ToolOutput::error("`old` was not found in a.rs")),
        result(
            "c3",
            "screenshot",
            ToolOutput::text("Screenshot of the page:")
                .with_content(Content::image("image/png", PNG))
                .with_content(Content::image("image/tiff", "AAAAAAAA")),
        ),
        result("c4", "count_lines", counts),
        result("c5", "list_todos", ToolOutput::default()),
    ]
}

const TIFF_PLACEHOLDER: &str =
    "[image/tiff image of 6 bytes omitted: images cannot be returned in this tool result]";
const PNG_PLACEHOLDER: &str =
    "[image/png image of 68 bytes omitted: images cannot be returned in this tool result]";
const COUNTS_MIRROR: &str = "{\n  \"total\": 42,\n  \"by_language\": {\n    \"rust\": 42\n  }\n}";

#[test]
fn openai_chat_results_are_text_tool_messages() {
    assert_eq!(
        openai_chat::render_results(&batch()),
        vec![
            json!({ "role": "tool", "tool_call_id": "c1", "content": "src/main.rs:3: // TODO" }),
            json!({ "role": "tool", "tool_call_id": "c2", "content": "Error: `old` was not found in a.rs" }),
            json!({ "role": "tool", "tool_call_id": "c3", "content": format!("Screenshot of the page:\n{PNG_PLACEHOLDER}\n{TIFF_PLACEHOLDER}") }),
            json!({ "role": "tool", "tool_call_id": "c4", "content": COUNTS_MIRROR }),
            json!({ "role": "tool", "tool_call_id": "c5", "content": "" }),
        ]
    );
}

#[test]
fn openai_responses_results_are_function_call_outputs_with_images_as_input_images() {
    let mut results = batch();
    results.push(result(
        "c6",
        "screenshot",
        ToolOutput { is_error: true, ..ToolOutput::default() }.with_content(Content::image("image/png", PNG)),
    ));
    assert_eq!(
        openai_responses::render_results(&results),
        vec![
            json!({ "type": "function_call_output", "call_id": "c1", "output": "src/main.rs:3: // TODO" }),
            json!({ "type": "function_call_output", "call_id": "c2", "output": "Error: `old` was not found in a.rs" }),
            json!({ "type": "function_call_output", "call_id": "c3", "output": [
                { "type": "input_text", "text": "Screenshot of the page:" },
                { "type": "input_image", "image_url": format!("data:image/png;base64,{PNG}") },
                { "type": "input_text", "text": TIFF_PLACEHOLDER }
            ]}),
            json!({ "type": "function_call_output", "call_id": "c4", "output": COUNTS_MIRROR }),
            json!({ "type": "function_call_output", "call_id": "c5", "output": "" }),
            json!({ "type": "function_call_output", "call_id": "c6", "output": [
                { "type": "input_text", "text": "Error:" },
                { "type": "input_image", "image_url": format!("data:image/png;base64,{PNG}") }
            ]}),
        ]
    );
}

#[test]
fn anthropic_results_are_one_user_message_of_tool_result_blocks() {
    assert_eq!(
        anthropic::render_results(&batch()),
        vec![json!({ "role": "user", "content": [
            { "type": "tool_result", "tool_use_id": "c1", "content": "src/main.rs:3: // TODO" },
            { "type": "tool_result", "tool_use_id": "c2", "content": "`old` was not found in a.rs", "is_error": true },
            { "type": "tool_result", "tool_use_id": "c3", "content": [
                { "type": "text", "text": "Screenshot of the page:" },
                { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": PNG } },
                { "type": "text", "text": TIFF_PLACEHOLDER }
            ]},
            { "type": "tool_result", "tool_use_id": "c4", "content": COUNTS_MIRROR },
            { "type": "tool_result", "tool_use_id": "c5" }
        ]})]
    );
    assert_eq!(anthropic::render_results(&[]), Vec::<Value>::new());
}

#[test]
fn gemini_results_are_function_responses_with_response_objects() {
    let mut results = batch();
    results[0].call_id = "gemini-call-0-0badcafe".to_owned();
    assert_eq!(
        gemini::render_results(&results),
        vec![json!({ "role": "user", "parts": [
            { "functionResponse": { "name": "search", "response": { "output": "src/main.rs:3: // TODO" } } },
            { "functionResponse": { "id": "c2", "name": "edit_file", "response": { "error": "`old` was not found in a.rs" } } },
            { "functionResponse": {
                "id": "c3",
                "name": "screenshot",
                "response": { "output": format!("Screenshot of the page:\n{TIFF_PLACEHOLDER}") },
                "parts": [{ "inlineData": { "mimeType": "image/png", "data": PNG } }]
            }},
            { "functionResponse": { "id": "c4", "name": "count_lines", "response": { "total": 42, "by_language": { "rust": 42 } } } },
            { "functionResponse": { "id": "c5", "name": "list_todos", "response": { "output": "" } } }
        ]})]
    );
}

#[test]
fn mcp_results_are_call_tool_results_with_structured_content_and_a_text_mirror() {
    assert_eq!(
        mcp::render_results(&batch()),
        vec![
            json!({ "content": [{ "type": "text", "text": "src/main.rs:3: // TODO" }], "isError": false }),
            json!({ "content": [{ "type": "text", "text": "`old` was not found in a.rs" }], "isError": true }),
            json!({ "content": [
                { "type": "text", "text": "Screenshot of the page:" },
                { "type": "image", "data": PNG, "mimeType": "image/png" },
                { "type": "image", "data": "AAAAAAAA", "mimeType": "image/tiff" }
            ], "isError": false }),
            json!({
                "content": [{ "type": "text", "text": COUNTS_MIRROR }],
                "structuredContent": { "total": 42, "by_language": { "rust": 42 } },
                "isError": false
            }),
            json!({ "content": [], "isError": false }),
        ]
    );
}

#[test]
fn a_turn_round_trips_through_every_provider() {
    // Parse a model turn, answer every call, render: each provider's answer refers to each call.
    let turns = [
        (
            Provider::OpenAiChat,
            json!({ "role": "assistant", "tool_calls": [
                { "id": "a", "type": "function", "function": { "name": "list_todos", "arguments": "{}" } },
                { "id": "b", "type": "function", "function": { "name": "search", "arguments": "{\"pattern\":\"x\"}" } }
            ]}),
        ),
        (
            Provider::OpenAiResponses,
            json!([
                { "type": "function_call", "call_id": "a", "name": "list_todos", "arguments": "{}" },
                { "type": "function_call", "call_id": "b", "name": "search", "arguments": "{\"pattern\":\"x\"}" }
            ]),
        ),
        (
            Provider::Anthropic,
            json!({ "role": "assistant", "content": [
                { "type": "tool_use", "id": "a", "name": "list_todos", "input": {} },
                { "type": "tool_use", "id": "b", "name": "search", "input": { "pattern": "x" } }
            ]}),
        ),
        (
            Provider::Gemini,
            json!({ "role": "model", "parts": [
                { "functionCall": { "id": "a", "name": "list_todos", "args": {} } },
                { "functionCall": { "id": "b", "name": "search", "args": { "pattern": "x" } } }
            ]}),
        ),
    ];
    for (provider, turn) in turns {
        let calls = provider.parse_tool_calls(&turn).unwrap();
        let results: Vec<ToolResult> = calls
            .iter()
            .map(|c| result(&c.id, &c.name, ToolOutput::text(format!("ran {}", c.name))))
            .collect();
        let rendered = serde_json::to_string(&provider.render_results(&results)).unwrap();
        for (id, text) in [("a", "ran list_todos"), ("b", "ran search")] {
            assert!(rendered.contains(&format!("\"{id}\"")), "{provider}: {rendered}");
            assert!(rendered.contains(text), "{provider}: {rendered}");
        }
    }
}
