// A minimal test runner that behaves the same on Node and Deno, so the
// suite needs nothing but the runtime. It prints one closing line that CI
// reads: "ts: N passed, M failed".

import process from "node:process";

type Fn = () => Promise<void> | void;
const tests: { name: string; fn: Fn }[] = [];

export function test(name: string, fn: Fn): void {
  tests.push({ name, fn });
}

export function assert(cond: unknown, msg: string): asserts cond {
  if (!cond) throw new Error(`assertion failed: ${msg}`);
}

export function equal<T>(got: T, want: T, what: string): void {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`);
}

export async function rejects(p: Promise<unknown>, check: (e: unknown) => boolean, what: string): Promise<void> {
  try {
    await p;
  } catch (e) {
    if (!check(e)) throw new Error(`${what}: wrong error: ${e}`);
    return;
  }
  throw new Error(`${what}: did not fail`);
}

export async function run(filter?: string): Promise<number> {
  const runtime = (globalThis as { Deno?: { version: { deno: string } } }).Deno
    ? `deno ${(globalThis as unknown as { Deno: { version: { deno: string } } }).Deno.version.deno}`
    : `node ${process.version}`;
  console.log(`# silt TypeScript client tests on ${runtime}`);
  let passed = 0, failed = 0;
  for (const t of tests) {
    if (filter && !t.name.includes(filter)) continue;
    const start = performance.now();
    try {
      await t.fn();
      passed++;
      console.log(`ok - ${t.name} (${(performance.now() - start).toFixed(0)} ms)`);
    } catch (e) {
      failed++;
      console.log(`not ok - ${t.name}\n  ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
    }
  }
  console.log(`ts: ${passed} passed, ${failed} failed`);
  return failed;
}
