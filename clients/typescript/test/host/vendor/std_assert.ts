// Copyright The silt authors. Apache-2.0.
//
// NOT vendored: a local stand-in for jsr:@std/assert@1.0.19, with exactly
// the two functions the vendored suite imports (assertEquals, assertExists).
// CI has npm, Debian and the Go proxy but no jsr, and npm does not serve
// @std/assert (npm view @std/assert: 404), so ../import_map.json maps the
// jsr specifier here. Semantics follow @std/assert: assertEquals is a deep
// structural equality that throws AssertionError; assertExists throws when
// the value is null or undefined.

export class AssertionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AssertionError";
  }
}

function equal(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (a instanceof Date) return a.getTime() === (b as Date).getTime();
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => equal(v, bb[i]));
  }
  if (a instanceof Uint8Array) {
    const bb = b as Uint8Array;
    return a.length === bb.length && a.every((v, i) => v === bb[i]);
  }
  if (a instanceof Map || a instanceof Set) {
    return equal([...a.entries()], [...(b as Map<unknown, unknown>).entries()]);
  }
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && equal((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

export function assertEquals<T>(actual: T, expected: T, msg?: string): void {
  if (equal(actual, expected)) return;
  const show = (v: unknown) => {
    try {
      return JSON.stringify(v);
    } catch {
      return String(v);
    }
  };
  throw new AssertionError(`${msg ? msg + ": " : ""}Values are not equal: actual ${show(actual)}, expected ${show(expected)}`);
}

export function assertExists<T>(actual: T, msg?: string): asserts actual is NonNullable<T> {
  if (actual === undefined || actual === null) {
    throw new AssertionError(msg ?? `actual: "${actual}" expected to not be null or undefined`);
  }
}
