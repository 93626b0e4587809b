// The script's globals, made from the host's functions. A module, compiled once per process and
// loaded in each script's interpreter; its function is called once, before the script: it
// returns the function the host settles a tool call's promise with, and the one that writes the
// script's final value as console.log writes a value. A script can import the module (it is
// loaded, under its name), not run its function again.
let given = false;

export default function (hostCall, hostPrint, hostSearch, names, hasSearch, longest, hostCheck) {
  "use strict";
  if (given) throw new TypeError("the prelude has run already");
  given = true;

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

  // QuickJS looks at the time limit in the script's code, not inside its built-in functions:
  // one that loops long in C (`Array.prototype.reverse.call({ length: 2 ** 53 - 1 })`, a search
  // for a long text in a long text) would keep a core busy past it. So the array methods refuse
  // a length longer than an array of the script's memory could be, and one they cannot read as
  // the method will (a getter, an object to convert); `concat` the sum of what it joins; `flat`
  // and `flatMap` run here, where the limit is seen; and a string search that could compare
  // more than `SEARCH` characters runs as searches of that size, one after the other. Proxies,
  // whose traps could give a method another length than the one checked, are not offered.
  const getOwnDescriptor = Reflect.getOwnPropertyDescriptor;
  const getPrototypeOf = Reflect.getPrototypeOf;
  const defineProperty = Reflect.defineProperty;
  const isArray = Array.isArray;
  const isView = ArrayBuffer.isView;
  const toObject = Object;
  // Conversions as the built-ins make them: a Symbol has no text, a BigInt no number.
  const toText = (value) => `${value}`;
  const toNumber = (value) => +value;
  const { trunc: truncate, max, min, floor } = Math;
  const matchSymbol = Symbol.match;
  const splitSymbol = Symbol.split;
  const replaceSymbol = Symbol.replace;
  const typedArrayLength = getOwnDescriptor(getPrototypeOf(Uint8Array.prototype), "length").get;
  // `[length, bounded]`: the length a method will read, and whether an array of the script's
  // memory bounds it (not a typed array's own length nor a string's, which memory holds).
  const measure = (name, value) => {
    if (value === null || value === undefined) return [0, false]; // the method throws its own TypeError
    if (typeof value === "string") return [value.length, false];
    const object = toObject(value);
    // Each element missing is looked for along the whole prototype chain, in C: a long chain
    // makes a short length long work. And the tools' own object answers any name it is asked.
    let depth = 0;
    for (let at = object; at !== null; at = getPrototypeOf(at)) {
      if (at === unknown) {
        throw new TypeError(`Array.prototype.${name} does not run on the tools object, nor on an object made from it`);
      }
      if (++depth > 16) {
        throw new RangeError(`Array.prototype.${name} does not run on an object with a prototype chain deeper than 16; copy its elements into an array first`);
      }
    }
    for (let at = object; at !== null; at = getPrototypeOf(at)) {
      const descriptor = getOwnDescriptor(at, "length");
      if (descriptor === undefined) continue;
      if ("value" in descriptor) {
        const length = descriptor.value;
        if ((typeof length === "object" && length !== null) || typeof length === "function") {
          throw new TypeError(`Array.prototype.${name} does not run on an object whose length is not a number; copy its elements into an array first (Array.from)`);
        }
        return [toNumber(length), true];
      }
      if (descriptor.get === typedArrayLength && isView(object)) {
        return [apply(typedArrayLength, object, []), false];
      }
      throw new TypeError(`Array.prototype.${name} does not run on an object whose length is a getter; copy its elements into an array first (Array.from)`);
    }
    return [0, true];
  };
  const lengthOf = (name, value) => measure(name, value)[0];
  const tooLong = (name, length) =>
    new RangeError(
      `Array.prototype.${name}: a length of ${length} is more than an array of the script's memory can have (${longest}); work on fewer elements at a time`,
    );
  const checked = (name, value) => {
    // By index, not destructured: that would go through `Array.prototype[Symbol.iterator]`,
    // which the script may have replaced (and so answer any length).
    const measured = measure(name, value);
    const length = measured[0];
    const bounded = measured[1];
    if (bounded && length > longest) throw tooLong(name, length);
    return length;
  };
  // What the methods that run here do first, as the built-ins do.
  const objectOf = (name, value) => {
    if (value === null || value === undefined) {
      throw new TypeError(`Array.prototype.${name} called on ${value === null ? "null" : "undefined"}`);
    }
    return toObject(value);
  };
  const spreadSymbol = Symbol.isConcatSpreadable;
  const speciesSymbol = Symbol.species;
  // Whether `concat` spreads `value`, read once: a getter could say one thing here and another
  // to the method.
  const spreads = (value) => {
    if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
    for (let at = value; at !== null; at = getPrototypeOf(at)) {
      const descriptor = getOwnDescriptor(at, spreadSymbol);
      if (descriptor === undefined) continue;
      if (!("value" in descriptor)) {
        throw new TypeError("Array.prototype.concat does not run on an object whose Symbol.isConcatSpreadable is a getter");
      }
      if (descriptor.value !== undefined) return !!descriptor.value;
      break;
    }
    return isArray(value);
  };
  // A new array of the kind `object` makes (its constructor's `Symbol.species`), as the
  // built-in `flat` makes it.
  const like = (object) => {
    if (!isArray(object)) return [];
    let constructor = object.constructor;
    if ((typeof constructor === "object" || typeof constructor === "function") && constructor !== null) {
      constructor = constructor[speciesSymbol];
      if (constructor === null) constructor = undefined;
    }
    return constructor === undefined ? [] : new constructor(0);
  };
  // The built-in default order: by the values' text, `undefined` last (the method keeps those
  // and the holes out of the comparisons), compared in script code where the limit is seen.
  // Comparing two long texts is one step of script code but much work in C, where the limits
  // are not seen: every so many characters compared, they are looked at.
  let compared = 0;
  const comparing = (x, y) => {
    if (typeof x === "string" && typeof y === "string") {
      compared += min(x.length, y.length);
      if (compared > 2 ** 22) {
        compared = 0;
        hostCheck();
      }
    }
  };
  const byText = (a, b) => {
    const x = toText(a);
    const y = toText(b);
    comparing(x, y);
    return x < y ? -1 : x > y ? 1 : 0;
  };
  // Equality as `indexOf` (strict) and `includes` (NaN finds NaN) compare, element by element in
  // script code: the built-ins compare in C, where comparing long strings one after another
  // would not see the limit.
  const same = (a, b) => {
    comparing(a, b);
    return a === b || (a !== a && b !== b);
  };
  const search = (name, object, length, from, wanted, equal) => {
    for (let i = from; i < length; i++) {
      if ((name === "includes" || i in object) && equal(object[i], wanted)) return i;
    }
    return -1;
  };
  const start = (from, length) => {
    let at = from === undefined ? 0 : truncate(toNumber(from));
    if (at !== at) at = 0;
    if (at < 0) at = max(0, length + at);
    return at;
  };
  // Puts `value` at `index` of `target` as a new own property; the next index.
  const append = (target, index, value) => {
    if (!defineProperty(target, index, { value, writable: true, enumerable: true, configurable: true })) {
      throw new TypeError(`Cannot define property ${index}`);
    }
    return index + 1;
  };
  // `source`'s elements from `index` of `target` on, flattened `depth` levels; the next index.
  const flatten = (target, source, depth, index) => {
    const length = checked("flat", source);
    for (let i = 0; i < length; i++) {
      if (!(i in source)) continue;
      const element = source[i];
      if (depth > 0 && isArray(element)) index = flatten(target, element, depth - 1, index);
      else index = append(target, index, element);
    }
    return index;
  };
  const own = Object.create(null);
  Object.assign(own, {
    // Here, as the built-in does it: its species constructor (script code) runs first, and
    // could change a length checked before it.
    concat(...args) {
      const object = objectOf("concat", this);
      let total = spreads(object) ? checked("concat", object) : 1;
      for (let i = 0; i < args.length; i++) total += spreads(args[i]) ? checked("concat", args[i]) : 1;
      if (total > longest) throw tooLong("concat", total);
      const target = like(object);
      let index = 0;
      // By index: a spread or `for...of` would go through `Array.prototype[Symbol.iterator]`,
      // which the script may have replaced.
      for (let at = -1; at < args.length; at++) {
        const item = at < 0 ? object : args[at];
        if (!spreads(item)) {
          index = append(target, index, item);
          continue;
        }
        const length = checked("concat", item);
        if (index + length > longest) throw tooLong("concat", index + length);
        for (let i = 0; i < length; i++, index++) {
          if (i in item) append(target, index, item[i]);
        }
      }
      target.length = index;
      return target;
    },
    flat(depth) {
      const object = objectOf("flat", this);
      checked("flat", object);
      let levels = depth === undefined ? 1 : truncate(toNumber(depth));
      if (!(levels > 0)) levels = 0;
      const target = like(object);
      flatten(target, object, levels, 0);
      return target;
    },
    indexOf(wanted, from) {
      const object = objectOf("indexOf", this);
      const length = checked("indexOf", this);
      if (length === 0) return -1;
      return search("indexOf", object, length, start(from, length), wanted, (a, b) => a === b);
    },
    includes(wanted, from) {
      const object = objectOf("includes", this);
      const length = checked("includes", this);
      if (length === 0) return false;
      return search("includes", object, length, start(from, length), wanted, same) !== -1;
    },
    lastIndexOf(wanted, ...from) {
      const object = objectOf("lastIndexOf", this);
      const length = checked("lastIndexOf", this);
      if (length === 0) return -1;
      let at = from.length === 0 ? length - 1 : truncate(toNumber(from[0]));
      if (at !== at) at = 0;
      at = at < 0 ? length + at : min(at, length - 1);
      for (let i = at; i >= 0; i--) if (i in object && object[i] === wanted) return i;
      return -1;
    },
    sort(compare) {
      if (compare !== undefined && typeof compare !== "function") {
        throw new TypeError("Array.prototype.sort: the comparison is not a function");
      }
      checked("sort", this);
      return apply(originals.sort, this, [compare === undefined ? byText : compare]);
    },
    toSorted(compare) {
      if (compare !== undefined && typeof compare !== "function") {
        throw new TypeError("Array.prototype.toSorted: the comparison is not a function");
      }
      checked("toSorted", this);
      return apply(originals.toSorted, this, [compare === undefined ? byText : compare]);
    },
    flatMap(callback, thisArg) {
      const object = objectOf("flatMap", this);
      const length = checked("flatMap", object);
      if (typeof callback !== "function") throw new TypeError("Array.prototype.flatMap: the callback is not a function");
      const target = like(object);
      let index = 0;
      for (let i = 0; i < length; i++) {
        if (!(i in object)) continue;
        const mapped = apply(callback, thisArg, [object[i], i, object]);
        if (isArray(mapped)) index = flatten(target, mapped, 0, index);
        else index = append(target, index, mapped);
      }
      return target;
    },
  });
  const originals = Object.create(null);
  for (const name of Reflect.ownKeys(Array.prototype)) {
    const original = Array.prototype[name];
    if (typeof name !== "string" || typeof original !== "function" || name === "constructor") continue;
    originals[name] = original;
    const guarded =
      own[name] ??
      {
        [name](...args) {
          checked(name, this);
          return apply(original, this, args);
        },
      }[name];
    defineProperty(guarded, "length", { value: original.length, configurable: true });
    defineProperty(Array.prototype, name, { value: guarded, writable: true, configurable: true });
  }
  delete globalThis.Proxy;
  // V8's stack trace API, which QuickJS has, gives `Error.prepareStackTrace` each frame's
  // function (`CallSite.getFunction`): the built-ins kept above among them, and the prelude's own.
  // A stack is text here.
  if (!defineProperty(Error, "prepareStackTrace", { value: undefined, writable: false, configurable: false })) {
    throw new Error("the stack trace API could not be turned off");
  }

  // String searches: below `SEARCH` character comparisons, the built-in search itself; above,
  // the same search over windows of that many, the limits looked at between them.
  const SEARCH = 2 ** 26;
  const { indexOf, lastIndexOf, includes, slice, split, replace, replaceAll } = String.prototype;
  // Whether `value` has its own way to be searched with (`symbol`: `Symbol.match` for the
  // regular expressions `includes` refuses, `Symbol.split`, `Symbol.replace`): the built-in
  // then asks it.
  const searchesItself = (value, symbol) =>
    (typeof value === "object" || typeof value === "function") && value !== null && value[symbol] != null;
  const isRegExpLike = (value) => searchesItself(value, matchSymbol);
  const large = (text, search) => text.length * search.length > SEARCH;
  const searchFrom = (text, search, from) => {
    const n = text.length;
    const m = search.length;
    const step = max(1, floor(SEARCH / max(1, m)));
    for (let start = from; start + m <= n; start += step) {
      hostCheck();
      const found = apply(indexOf, apply(slice, text, [start, min(n, start + step + m - 1)]), [search]);
      if (found !== -1) return start + found;
    }
    return -1;
  };
  const searchBack = (text, search, from) => {
    const n = text.length;
    const m = search.length;
    const step = max(1, floor(SEARCH / max(1, m)));
    for (let end = min(n, from + m); end - m >= 0; end -= step) {
      const start = max(0, end - step - m + 1);
      hostCheck();
      const found = apply(lastIndexOf, apply(slice, text, [start, end]), [search]);
      if (found !== -1) return start + found;
    }
    return -1;
  };
  const position = (value, length, otherwise) => {
    if (value === undefined) return otherwise;
    const number = toNumber(value);
    if (number !== number) return otherwise;
    const at = truncate(number);
    return at < 0 ? 0 : at > length ? length : at;
  };
  // What `$$`, `$&`, `` $` `` and `$'` stand for in a replacement of a text found at `at`.
  const substitute = (template, found, at, text) => {
    if (apply(indexOf, template, ["$"]) === -1) return template;
    let out = "";
    for (let i = 0; i < template.length; i++) {
      const c = template[i];
      const next = template[i + 1];
      if (c !== "$" || next === undefined) out += c;
      else if (next === "$") (out += "$"), i++;
      else if (next === "&") (out += found), i++;
      else if (next === "`") (out += apply(slice, text, [0, at])), i++;
      else if (next === "'") (out += apply(slice, text, [at + found.length])), i++;
      else out += c;
    }
    return out;
  };
  const replaced = (text, search, replacement, at) =>
    typeof replacement === "function" ? toText(replacement(search, at, text)) : substitute(replacement, search, at, text);
  const strings = {
    indexOf(search, from) {
      if (this === null || this === undefined) return apply(indexOf, this, [search, from]);
      const text = toText(this);
      const wanted = toText(search);
      if (!large(text, wanted)) return apply(indexOf, text, [wanted, from]);
      return searchFrom(text, wanted, position(from, text.length, 0));
    },
    includes(search, from) {
      if (this === null || this === undefined || isRegExpLike(search)) return apply(includes, this, [search, from]);
      const text = toText(this);
      const wanted = toText(search);
      if (!large(text, wanted)) return apply(includes, text, [wanted, from]);
      return searchFrom(text, wanted, position(from, text.length, 0)) !== -1;
    },
    lastIndexOf(search, from) {
      if (this === null || this === undefined) return apply(lastIndexOf, this, [search, from]);
      const text = toText(this);
      const wanted = toText(search);
      if (!large(text, wanted)) return apply(lastIndexOf, text, [wanted, from]);
      return searchBack(text, wanted, position(from, text.length, text.length));
    },
    split(separator, limit) {
      if (this === null || this === undefined || searchesItself(separator, splitSymbol) || separator === undefined) {
        return apply(split, this, [separator, limit]);
      }
      const text = toText(this);
      const most = limit === undefined ? 2 ** 32 - 1 : limit >>> 0;
      const wanted = toText(separator);
      if (!large(text, wanted) || wanted.length === 0) return apply(split, text, [wanted, most]);
      const parts = [];
      let at = 0;
      while (parts.length < most) {
        const found = searchFrom(text, wanted, at);
        if (found === -1) break;
        append(parts, parts.length, apply(slice, text, [at, found]));
        at = found + wanted.length;
      }
      if (parts.length < most) append(parts, parts.length, apply(slice, text, [at]));
      return parts;
    },
    replace(search, replacement) {
      if (this === null || this === undefined || searchesItself(search, replaceSymbol)) {
        return apply(replace, this, [search, replacement]);
      }
      const text = toText(this);
      const wanted = toText(search);
      const by = typeof replacement === "function" ? replacement : toText(replacement);
      if (!large(text, wanted) || wanted.length === 0) return apply(replace, text, [wanted, by]);
      const found = searchFrom(text, wanted, 0);
      if (found === -1) return text;
      return apply(slice, text, [0, found]) + replaced(text, wanted, by, found) + apply(slice, text, [found + wanted.length]);
    },
    replaceAll(search, replacement) {
      if (this === null || this === undefined || searchesItself(search, replaceSymbol)) {
        return apply(replaceAll, this, [search, replacement]);
      }
      const text = toText(this);
      const wanted = toText(search);
      const by = typeof replacement === "function" ? replacement : toText(replacement);
      if (!large(text, wanted) || wanted.length === 0) return apply(replaceAll, text, [wanted, by]);
      let out = "";
      let at = 0;
      for (let found = searchFrom(text, wanted, 0); found !== -1; found = searchFrom(text, wanted, at)) {
        out += apply(slice, text, [at, found]) + replaced(text, wanted, by, found);
        at = found + wanted.length;
      }
      return out + apply(slice, text, [at]);
    },
  };
  for (const name of Object.keys(strings)) {
    defineProperty(strings[name], "length", { value: String.prototype[name].length, configurable: true });
    defineProperty(String.prototype, name, { value: strings[name], writable: true, configurable: true });
  }

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
}
