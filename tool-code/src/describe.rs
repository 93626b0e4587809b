//! What the model reads about the script tool: a TypeScript-like declaration of each tool, made
//! from its JSON Schema, and a short guide.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use tool_core::ToolSpec;

use crate::limits::Limits;

/// How deep `$ref`s are followed before a type is given as `unknown` (a schema may refer to
/// itself).
const MAX_DEPTH: usize = 8;

/// The declaration of one tool as a method of `tools`: its description's first paragraph, its
/// arguments with their docs, and its result.
pub(crate) fn declaration(spec: &ToolSpec) -> String {
    let mut out = String::new();
    write_declaration(&mut out, spec, "");
    out
}

fn write_declaration(out: &mut String, spec: &ToolSpec, indent: &str) {
    let summary = first_paragraph(&spec.description);
    if !summary.is_empty() {
        write_doc(out, indent, &summary);
    }
    let key = property_key(&spec.name);
    let params = Params { root: &spec.input_schema };
    let _ = write!(out, "{indent}{key}(args: ");
    params.object(out, &spec.input_schema, indent, 0);
    let structured = match &spec.output_schema {
        Some(schema) => {
            let mut ty = String::new();
            Params { root: schema }.ty(&mut ty, schema, &format!("{indent}  "), 0);
            ty
        }
        None => "unknown".to_owned(),
    };
    let _ = writeln!(out, "): Promise<ToolResult<{structured}>>;");
}

/// The tool's description: the guide, then every tool that is not deferred.
pub(crate) fn description<'a>(
    specs: impl IntoIterator<Item = &'a ToolSpec>,
    deferred: usize,
    limits: &Limits,
) -> String {
    let mut out = String::from(GUIDE);
    let _ = write!(
        out,
        "\nLimits per script: {}, {} of memory, {} tool calls, {} of output.\n",
        crate::limits::seconds(limits.wall_time),
        crate::limits::bytes(limits.memory_bytes),
        limits.nested_calls,
        crate::limits::bytes(limits.output_bytes),
    );
    if deferred > 0 {
        let _ = writeln!(
            out,
            "{deferred} more tools are not listed here: find them with \
             `await tools.tool_search({{query: \"what the tool should do\"}})`, which returns their \
             declarations (`text`) and names (`tools`); then call them like the others."
        );
    }
    out.push_str(
        "\n```ts\ninterface ToolResult<S = unknown> {\n  /** What the tool returned, as the model would read it. */\n  \
         text: string;\n  /** Its structured content, when it has one. */\n  structured: S | null;\n  \
         is_error: false;\n}\n\
         /** Thrown by a tool call that failed: refused, invalid arguments, or an error of the tool. */\n\
         declare class ToolError extends Error {\n  tool: string;\n  /** invalid_arguments, not_found, \
         permission_denied, timeout, cancelled, execution */\n  kind: string;\n}\n\ndeclare const tools: {\n",
    );
    let mut first = true;
    for spec in specs {
        if !first {
            out.push('\n');
        }
        first = false;
        write_declaration(&mut out, spec, "  ");
    }
    out.push_str("};\n```\n");
    out
}

const GUIDE: &str = "\
Run a JavaScript program that calls tools, to do several steps in one go: search, then read \
what was found; loop over files; count, filter and summarize. Only what the program prints \
and its last expression's value come back, so intermediate results stay out of the \
conversation.

Every tool is an async function on `tools` that takes one object of arguments:
  const found = await tools.grep({ pattern: \"fn main\" });
  console.log(found.text);
A call that fails throws a `ToolError` (with `tool`, `kind`, `message`): catch it to go on. \
Start independent calls together with `Promise.all([...])`; a call you do not await still \
finishes before the program ends. Calls are checked, asked about and \
limited exactly as if you made them yourself. The program has no file system, network, \
process or clock of its own: only `tools`, `console.log` and `print`. Top-level `await` works.
";

/// The first paragraph of a description, on one line.
fn first_paragraph(text: &str) -> String {
    let paragraph = text.trim().split("\n\n").next().unwrap_or("");
    paragraph.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A `/** ... */` comment, on one line when it fits.
fn write_doc(out: &mut String, indent: &str, text: &str) {
    let text = text.replace("*/", "*\\/");
    let lines: Vec<&str> = text.trim().lines().map(str::trim_end).collect();
    if lines.len() == 1 {
        let _ = writeln!(out, "{indent}/** {} */", lines[0]);
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    for line in lines {
        if line.is_empty() {
            let _ = writeln!(out, "{indent} *");
        } else {
            let _ = writeln!(out, "{indent} * {line}");
        }
    }
    let _ = writeln!(out, "{indent} */");
}

/// A property name as TypeScript writes it: bare when it is an identifier, quoted otherwise.
fn property_key(name: &str) -> String {
    let mut chars = name.chars();
    let identifier = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier { name.to_owned() } else { Value::from(name).to_string() }
}

/// Types from one schema, whose `$ref`s point into `root`.
struct Params<'a> {
    root: &'a Value,
}

impl Params<'_> {
    /// An object type, its properties each with their docs on lines of their own.
    fn object(&self, out: &mut String, schema: &Value, indent: &str, depth: usize) {
        let schema = self.resolve(schema, depth);
        let Some(properties) = schema.get("properties").and_then(Value::as_object).filter(|p| !p.is_empty())
        else {
            self.ty(out, schema, indent, depth);
            return;
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let inner = format!("{indent}  ");
        out.push_str("{\n");
        for (name, property) in properties {
            let property = self.resolve(property, depth);
            if let Some(doc) = property_doc(property) {
                write_doc(out, &inner, &doc);
            }
            let optional = if required.contains(&name.as_str()) { "" } else { "?" };
            let _ = write!(out, "{inner}{}{optional}: ", property_key(name));
            self.ty(out, property, &inner, depth + 1);
            out.push_str(";\n");
        }
        let _ = write!(out, "{indent}}}");
    }

    /// The TypeScript type of `schema`.
    fn ty(&self, out: &mut String, schema: &Value, indent: &str, depth: usize) {
        if depth > MAX_DEPTH {
            out.push_str("unknown");
            return;
        }
        let schema = self.resolve(schema, depth);
        let Some(object) = schema.as_object() else {
            // `true` (anything) or `false` (nothing).
            out.push_str(if schema == &Value::Bool(false) { "never" } else { "unknown" });
            return;
        };
        if let Some(value) = object.get("const") {
            out.push_str(&value.to_string());
            return;
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array) {
            let literals: Vec<String> = values.iter().map(Value::to_string).collect();
            out.push_str(if literals.is_empty() { "never" } else { "" });
            out.push_str(&literals.join(" | "));
            return;
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = object.get(key).and_then(Value::as_array) {
                self.union(out, branches.iter(), indent, depth);
                return;
            }
        }
        if let Some(branches) = object.get("allOf").and_then(Value::as_array)
            && let [only] = branches.as_slice()
        {
            self.ty(out, only, indent, depth + 1);
            return;
        }
        match object.get("type") {
            Some(Value::String(ty)) => self.named(out, ty, object, indent, depth),
            Some(Value::Array(types)) => {
                let mut first = true;
                for ty in types.iter().filter_map(Value::as_str) {
                    if !first {
                        out.push_str(" | ");
                    }
                    first = false;
                    self.named(out, ty, object, indent, depth);
                }
                if first {
                    out.push_str("unknown");
                }
            }
            _ if object.contains_key("properties") => self.object(out, schema, indent, depth),
            _ => out.push_str("unknown"),
        }
    }

    fn union<'v>(
        &self,
        out: &mut String,
        branches: impl Iterator<Item = &'v Value>,
        indent: &str,
        depth: usize,
    ) {
        let mut first = true;
        for branch in branches {
            if !first {
                out.push_str(" | ");
            }
            first = false;
            self.ty(out, branch, indent, depth + 1);
        }
        if first {
            out.push_str("never");
        }
    }

    fn named(&self, out: &mut String, ty: &str, schema: &Map<String, Value>, indent: &str, depth: usize) {
        match ty {
            "string" => out.push_str("string"),
            "integer" | "number" => out.push_str("number"),
            "boolean" => out.push_str("boolean"),
            "null" => out.push_str("null"),
            "array" => {
                let mut item = String::new();
                match schema.get("items") {
                    Some(items) => self.ty(&mut item, items, indent, depth + 1),
                    None => item.push_str("unknown"),
                }
                if item.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    let _ = write!(out, "{item}[]");
                } else {
                    let _ = write!(out, "Array<{item}>");
                }
            }
            "object" => {
                if schema.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty()) {
                    self.object(out, &Value::Object(schema.clone()), indent, depth + 1);
                } else {
                    match schema.get("additionalProperties") {
                        Some(values @ Value::Object(_)) => {
                            out.push_str("Record<string, ");
                            self.ty(out, values, indent, depth + 1);
                            out.push('>');
                        }
                        _ => out.push_str("Record<string, unknown>"),
                    }
                }
            }
            _ => out.push_str("unknown"),
        }
    }

    /// `schema`, or what its local `$ref` (`#/$defs/...`, `#/definitions/...`) points to.
    fn resolve<'s>(&'s self, schema: &'s Value, depth: usize) -> &'s Value {
        let mut schema = schema;
        for _ in depth..MAX_DEPTH {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else { return schema };
            let Some(pointer) = reference.strip_prefix('#') else { return schema };
            match self.root.pointer(pointer) {
                Some(target) => schema = target,
                None => return schema,
            }
        }
        schema
    }
}

/// A property's doc: its description, then its default.
fn property_doc(property: &Value) -> Option<String> {
    let description = property.get("description").and_then(Value::as_str).map(str::trim).unwrap_or("");
    let default = property.get("default").map(|value| format!("Default: {value}."));
    match (description.is_empty(), default) {
        (true, None) => None,
        (true, Some(default)) => Some(default),
        (false, None) => Some(description.to_owned()),
        (false, Some(default)) => Some(format!("{description} {default}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(schema: Value) -> ToolSpec {
        ToolSpec::new("grep", "Search file contents.\n\nLong details the model does not need here.", schema)
    }

    #[test]
    fn a_declaration_has_the_arguments_their_types_and_docs() {
        let spec = spec(json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for."},
                "path": {"type": ["string", "null"]},
                "limit": {"type": "integer", "default": 100, "description": "Most matches."},
                "mode": {"enum": ["content", "files"]},
                "globs": {"type": "array", "items": {"type": "string"}},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
            },
            "required": ["pattern"],
        }));
        assert_eq!(
            declaration(&spec),
            "/** Search file contents. */\n\
             grep(args: {\n  \
               /** Regular expression to search for. */\n  \
               pattern: string;\n  \
               path?: string | null;\n  \
               /** Most matches. Default: 100. */\n  \
               limit?: number;\n  \
               mode?: \"content\" | \"files\";\n  \
               globs?: string[];\n  \
               env?: Record<string, string>;\n\
             }): Promise<ToolResult<unknown>>;\n"
        );
    }

    #[test]
    fn references_are_followed_and_a_recursive_schema_ends() {
        let spec = spec(json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {
                "type": "object",
                "properties": {"child": {"$ref": "#/$defs/Node"}, "name": {"type": "string"}},
            }},
        }));
        let text = declaration(&spec);
        assert!(text.contains("node?: {"), "{text}");
        assert!(text.contains("name?: string;"), "{text}");
        assert!(text.contains("unknown"), "{text}");
    }

    #[test]
    fn odd_names_are_quoted_and_the_description_lists_every_tool() {
        let odd = ToolSpec::new("mcp-server.tool", "Does it.", json!({"type": "object"}));
        assert!(
            declaration(&odd)
                .starts_with("/** Does it. */\n\"mcp-server.tool\"(args: Record<string, unknown>)")
        );
        let text = description([&odd, &spec(json!({"type": "object"}))], 3, &Limits::default());
        assert!(
            text.contains("declare const tools: {\n  /** Does it. */\n  \"mcp-server.tool\"(args: "),
            "{text}"
        );
        assert!(text.contains("  grep(args: "), "{text}");
        assert!(text.contains("3 more tools are not listed here"), "{text}");
        assert!(text.contains("1000 tool calls"), "{text}");
    }
}
