// The script's globals, made from the host's functions. Evaluated once per script, before it;
// returns the function the host settles a tool call's promise with, and the one that makes a
// string well-formed.
(function (hostCall, hostPrint, hostSearch, names, hasSearch) {
  "use strict";

  class ToolError extends Error {
    constructor(tool, kind, message) {
      super(message);
      this.name = "ToolError";
      this.tool = tool;
      this.kind = kind;
    }
  }

  const pending = new Map();

  // Strings reach the host as UTF-8, which half of a character (a lone UTF-16 surrogate, as
  // slicing a string in the middle of an emoji leaves) cannot be: what is printed is made
  // well-formed (the host refuses such arguments). Taken now, before the script can replace them.
  const apply = Reflect.apply;
  const toWellFormed = String.prototype.toWellFormed;
  const isWellFormed = String.prototype.isWellFormed;
  const wellFormed = (text) => (apply(isWellFormed, text, []) ? text : apply(toWellFormed, text, []));

  const kindOf = (value) =>
    value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;

  const call = (name, args) => {
    try {
      if (args === undefined) args = {};
      if (typeof args !== "object" || args === null || Array.isArray(args)) {
        throw new TypeError(
          `tools.${name} takes one object of arguments, such as tools.${name}({ ... }); it was given ${kindOf(args)}`,
        );
      }
      const id = hostCall(name, JSON.stringify(args));
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    } catch (error) {
      return Promise.reject(error);
    }
  };

  const table = Object.create(null);
  for (const name of names) table[name] = (args) => call(name, args);
  if (hasSearch && !("tool_search" in table)) {
    table.tool_search = (args) => {
      if (typeof args === "string") args = { query: args };
      if (typeof args !== "object" || args === null || typeof args.query !== "string") {
        return Promise.reject(new TypeError('tools.tool_search takes { query: "what the tool should do", limit?: number }'));
      }
      const found = hostSearch(wellFormed(args.query), typeof args.limit === "number" ? args.limit : undefined);
      return Promise.resolve({
        text: found.map((tool) => tool.declaration).join("\n\n"),
        tools: found.map((tool) => tool.name),
        is_error: false,
      });
    };
  }

  // The tools are its own properties, found without a trap; a name that is no tool reaches the
  // proxy below it, and the dispatcher answers it with the names that come close.
  const unknown = new Proxy(Object.create(null), {
    get(_, name) {
      if (typeof name !== "string") return undefined;
      // Not a property a caller probes for: `await tools`, JSON.stringify(tools).
      if (name === "then" || name === "toJSON") return undefined;
      return (args) => call(wellFormed(name), args);
    },
  });
  const tools = Object.freeze(Object.setPrototypeOf(table, unknown));

  const format = (value) => {
    if (typeof value === "string") return value;
    try {
      const text = JSON.stringify(value, null, 2);
      return text === undefined ? String(value) : text;
    } catch (_) {
      return String(value);
    }
  };
  const log = (...values) => hostPrint(wellFormed(values.map(format).join(" ")));

  Object.defineProperty(globalThis, "tools", { value: tools, enumerable: true });
  globalThis.console = Object.freeze({ log, info: log, warn: log, error: log, debug: log });
  globalThis.print = log;
  globalThis.ToolError = ToolError;

  // `ok`: (text, structured); else (tool, kind, message).
  const settle = (id, ok, a, b, c) => {
    const entry = pending.get(id);
    if (entry === undefined) return;
    pending.delete(id);
    if (ok) entry.resolve({ text: a, structured: b, is_error: false });
    else entry.reject(new ToolError(a, b, c));
  };
  return [settle, wellFormed];
});
