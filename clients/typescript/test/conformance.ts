// The host's datastore conformance checks (host-contract.md §4: E1-E11,
// L1-L9, V1-V5, S1-S6), ported as functions over the module's export, so
// the package runs them as its own tests.

import { assert, equal } from "./harness.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const typePattern = /^@?[a-z][a-z0-9_-]*\/[a-z0-9][a-z0-9_-]*$/;

/** E1-E11 over the export, with configs that must pass and fail the schema. */
export function assertExportConformance(exp: Any, o: { validConfigs: unknown[]; invalidConfigs?: unknown[]; repoDir: string }): Any {
  assert(typeof exp.type === "string" && typePattern.test(exp.type), `E1: type ${exp.type}`);
  assert(typeof exp.name === "string" && exp.name !== "", "E2: name");
  assert(typeof exp.description === "string" && exp.description !== "", "E3: description");
  assert(exp.configSchema && typeof exp.configSchema.safeParse === "function", "E4: configSchema.safeParse");
  assert(o.validConfigs.length > 0, "E5: validConfigs");
  for (const c of o.validConfigs) assert(exp.configSchema.safeParse(c).success === true, `E5: ${JSON.stringify(c)} must parse`);
  for (const c of o.invalidConfigs ?? []) assert(exp.configSchema.safeParse(c).success === false, `E6: ${JSON.stringify(c)} must not parse`);
  assert(typeof exp.createProvider === "function", "E7: createProvider");
  const p = exp.createProvider(o.validConfigs[0]);
  assert(p !== null && typeof p === "object", "E7: a provider");
  for (const f of ["createLock", "createVerifier", "resolveDatastorePath"]) assert(typeof p[f] === "function", `E8: provider.${f}`);
  const dsPath = p.resolveDatastorePath(o.repoDir);
  assert(typeof dsPath === "string" && dsPath !== "", "E9: resolveDatastorePath");
  const lock = p.createLock(dsPath);
  for (const f of ["acquire", "release", "withLock", "inspect", "forceRelease"]) assert(typeof lock[f] === "function", `E10: lock.${f}`);
  assert(typeof p.createVerifier().verify === "function", "E11: verifier.verify");
  return p;
}

/** L1-L9, in sequence on one lock instance. */
export async function assertLockConformance(lock: Any): Promise<void> {
  equal(await lock.inspect(), null, "L1: inspect before acquire");
  await lock.acquire();
  const i = await lock.inspect();
  assert(i !== null && typeof i.holder === "string" && typeof i.pid === "number" && typeof i.acquiredAt === "string" && typeof i.ttlMs === "number",
    `L2: inspect after acquire ${JSON.stringify(i)}`);
  await lock.release();
  equal(await lock.inspect(), null, "L3: inspect after release");
  await lock.release(); // L4: idempotent
  equal(await lock.withLock(() => 42), 42, "L5: withLock result");
  equal(await lock.inspect(), null, "L6: released after withLock");
  let threw = false;
  try {
    await lock.withLock(() => Promise.reject(new Error("boom")));
  } catch {
    threw = true;
  }
  assert(threw, "L7: withLock rejects with fn");
  equal(await lock.inspect(), null, "L7: released after a rejecting fn");
  await lock.acquire();
  const held = await lock.inspect();
  assert(typeof held?.nonce === "string", "L8: nonce");
  equal(await lock.forceRelease(held.nonce), true, "L8: forceRelease(nonce)");
  equal(await lock.inspect(), null, "L8: free after forceRelease");
  await lock.release(); // force-released: quiet, as the host's locks (L4)
  await lock.acquire();
  equal(await lock.forceRelease("wrong-nonce-value"), false, "L9: forceRelease(wrong)");
  assert((await lock.inspect()) !== null, "L9: still held");
  await lock.release();
}

/** V1-V5. */
export async function assertVerifierConformance(v: Any): Promise<Any> {
  const r = await v.verify();
  assert(r !== undefined && r !== null, "V1: a result");
  assert(typeof r.healthy === "boolean", "V2: healthy");
  assert(typeof r.message === "string", "V3: message");
  assert(typeof r.latencyMs === "number" && r.latencyMs >= 0, "V4: latencyMs");
  assert(typeof r.datastoreType === "string", "V5: datastoreType");
  return r;
}

/** S1-S6. */
export async function assertSyncServiceConformance(svc: Any, o: { expectScopedSync?: boolean } = {}): Promise<void> {
  for (const f of ["pullChanged", "pushChanged", "markDirty"]) assert(typeof svc[f] === "function", `S1: ${f}`);
  await svc.markDirty(); // S2
  const pulled = await svc.pullChanged();
  assert(pulled === undefined || typeof pulled === "number", `S3: pullChanged returned ${pulled}`);
  const pushed = await svc.pushChanged();
  assert(pushed === undefined || typeof pushed === "number", `S4: pushChanged returned ${pushed}`);
  if (svc.capabilities !== undefined) {
    assert(typeof svc.capabilities === "function", "S5: capabilities is a function");
    const caps = svc.capabilities();
    assert(caps !== undefined && (caps.scopedSync === undefined || typeof caps.scopedSync === "boolean"), "S5: scopedSync");
    if (o.expectScopedSync) equal(caps.scopedSync, true, "S6: scopedSync");
  }
}
