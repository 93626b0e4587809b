// The script's globals, made from the host's functions. Evaluated once per script, before it;
// returns the function the host settles a tool call's promise with, and the one that writes the
// script's final value as console.log writes a value.
(function (hostCall, hostPrint, hostSearch, names, hasSearch, longest) {
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
  const stringify = JSON.stringify;
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
      const json = stringify(args);
      if (typeof json !== "string") {
        throw new TypeError(`tools.${name}: its arguments have no JSON form (a toJSON that returns undefined?)`);
      }
      const id = hostCall(name, json);
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
      // Not a property a caller probes for: `await tools`, JSON.stringify(tools), String(tools).
      if (name === "then" || name === "toJSON" || name === "toString" || name === "valueOf") return undefined;
      return (args) => call(wellFormed(name), args);
    },
  });
  const tools = Object.freeze(Object.setPrototypeOf(table, unknown));

  // Values JSON leaves out or empties, written as what they are: an error with its message (its
  // message and stack are not enumerable), a Map or Set with its entries, a BigInt with its digits.
  const replacer = (_, value) => {
    if (typeof value === "bigint") return `${value}n`;
    if (value instanceof Error) {
      const described = { error: `${value.name}: ${value.message}` };
      for (const key of Object.keys(value)) if (key !== "name" && key !== "message") described[key] = value[key];
      return described;
    }
    if (value instanceof Map) return { Map: [...value] };
    if (value instanceof Set) return { Set: [...value] };
    return value;
  };
  const format = (value) => {
    if (typeof value === "string") return value;
    if (typeof value === "bigint") return `${value}n`;
    let why;
    try {
      const text = stringify(value, replacer, 2);
      if (text !== undefined) return text;
    } catch (error) {
      why = error; // a cycle, a getter that throws, nesting past the stack
    }
    try {
      const text = String(value);
      if (why === undefined || !text.startsWith("[object ")) return text;
    } catch (error) {
      why ??= error;
    }
    try {
      return `(a value JSON cannot write: ${why})`;
    } catch (_) {
      return "(a value JSON cannot write)";
    }
  };
  const show = (value) => wellFormed(format(value));
  const log = (...values) => hostPrint(wellFormed(values.map(format).join(" ")));

  // QuickJS runs the generic array methods over an array-like's length without looking at the
  // time limit (`Array.prototype.reverse.call({ length: 2 ** 53 - 1 })` would spin for ever):
  // each refuses a length longer than an array of the script's memory could be, and a length
  // it cannot read as the method will (a getter, an object to convert), which could differ.
  // Proxies, whose traps could do the same, are not offered to scripts.
  const getOwnDescriptor = Reflect.getOwnPropertyDescriptor;
  const getPrototypeOf = Reflect.getPrototypeOf;
  const concatSpreadable = Symbol.isConcatSpreadable;
  const isArray = Array.isArray;
  const lengthOf = (name, object) => {
    if ((typeof object !== "object" && typeof object !== "function") || object === null) return 0;
    for (let at = object; at !== null; at = getPrototypeOf(at)) {
      const descriptor = getOwnDescriptor(at, "length");
      if (descriptor === undefined) continue;
      if (!("value" in descriptor)) {
        throw new TypeError(`Array.prototype.${name} does not run on an object whose length is a getter`);
      }
      const length = descriptor.value;
      if (typeof length === "object" || typeof length === "function") {
        throw new TypeError(`Array.prototype.${name} does not run on an object whose length is not a number`);
      }
      return Number(length);
    }
    return 0;
  };
  const checked = (name, object) => {
    const length = lengthOf(name, object);
    if (length > longest) {
      throw new RangeError(
        `Array.prototype.${name}: a length of ${length} is more than an array of the script's memory can have (${longest})`,
      );
    }
  };
  for (const name of Reflect.ownKeys(Array.prototype)) {
    const original = Array.prototype[name];
    if (typeof name !== "string" || typeof original !== "function" || name === "constructor") continue;
    const guarded = {
      [name](...args) {
        checked(name, this);
        if (name === "concat") {
          for (const arg of args) {
            if (typeof arg === "object" && arg !== null && (isArray(arg) || arg[concatSpreadable])) checked(name, arg);
          }
        }
        return apply(original, this, args);
      },
    }[name];
    Object.defineProperty(Array.prototype, name, { value: guarded, writable: true, configurable: true });
  }
  delete globalThis.Proxy;

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
  return [settle, show];
});
