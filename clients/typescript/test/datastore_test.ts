// The host datastore module: the host's conformance checks (E1-E11,
// L1-L9, V1-V5, S1-S6) as the package's own tests, and what the host
// relies on beyond them (round trip, conflicts, lock liveness by the
// host's own staleness rule, internal files kept out).

import { join } from "node:path";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { datastore, hostInternalExcludes, SiltConflictError, type SiltDatastoreConfig } from "../src/datastore.ts";
import { assert, equal, rejects, test } from "./harness.ts";
import { type Fixture, siltBin } from "./fixture.ts";
import { assertExportConformance, assertLockConformance, assertSyncServiceConformance, assertVerifierConformance } from "./conformance.ts";
import { until } from "./host_test.ts";

export function registerDatastoreTests(fx: Fixture): void {
  const cfg = (extra: Partial<SiltDatastoreConfig> = {}): SiltDatastoreConfig => ({
    url: "file://" + join(fx.root, "ds-bucket"),
    namespace: "repo-1",
    siltBin: siltBin(),
    idleExitMs: 60_000,
    ...extra,
  });
  // deno-lint-ignore no-explicit-any
  let provider: any;

  test("datastore module: export conformance (E1-E11)", () => {
    provider = assertExportConformance(datastore, {
      validConfigs: [cfg(), { url: "s3://bucket/prefix" }, { url: "gs://b", namespace: "", exclude: ["*.tmp"], adopt: false }],
      invalidConfigs: [null, {}, { url: "not a url" }, { url: "s3://b", namespace: "a/b" }, { url: "s3://b", bogus: 1 }, { url: "s3://b", exclude: "x" }],
      repoDir: join(fx.root, "repo"),
    });
    equal(provider.resolveDatastorePath("/r"), "/r/.swamp", "datastore path");
    equal(provider.resolveCachePath("/r"), undefined, "the host's default cache path");
  });

  test("datastore module: lock conformance (L1-L9) on the global and a per-model key", async () => {
    await assertLockConformance(provider.createLock("/r/.swamp"));
    await assertLockConformance(provider.createLock("/r/.swamp", { lockKey: "repo-1/data/aws/ec2/vpc/m1/.lock", ttlMs: 5_000 }));
  });

  test("datastore module: verifier conformance (V1-V5), healthy and read-only", async () => {
    const r = await assertVerifierConformance(provider.createVerifier());
    assert(r.healthy, r.message);
    equal(r.datastoreType, datastore.type, "type");
    const dead = datastore.createProvider(cfg({ siltBin: "/nonexistent/silt", namespace: "unreachable" }));
    const bad = await assertVerifierConformance(dead.createVerifier());
    equal(bad.healthy, false, "an unreachable service is unhealthy, not an exception");
  });

  test("datastore module: sync service conformance (S1-S6)", async () => {
    const svc = provider.createSyncService("/r", join(fx.root, "ds-cache-a"));
    await assertSyncServiceConformance(svc, { expectScopedSync: true });
  });

  test("datastore module: a write round-trips between two repositories, scoped to the model", async () => {
    const a = provider.createSyncService("/r", join(fx.root, "ds-cache-a"));
    const b = provider.createSyncService("/r", join(fx.root, "ds-cache-b"));
    const model = { modelType: "aws/ec2/vpc", modelId: "m1" };
    const rel = "repo-1/data/aws/ec2/vpc/m1/state/1/raw";
    await b.pullChanged({ namespace: "repo-1" }); // binds b's cache before a writes
    await a.markDirty({ relPath: "repo-1/data/aws/ec2/vpc/m1/state", namespace: "repo-1" });
    fx.write(join(fx.root, "ds-cache-a"), rel, "v1");
    fx.write(join(fx.root, "ds-cache-a"), "repo-1/data/aws/ec2/vpc/m1/state/latest", "1");
    equal(await a.pushChanged({ namespace: "repo-1" }), 2, "pushed");
    equal(await b.pullChanged({ context: { models: [model] }, namespace: "repo-1" }), 2, "pulled");
    equal(fx.read(join(fx.root, "ds-cache-b"), rel), "v1", "bytes");
  });

  test("datastore module: a conflicting push is a SiltConflictError, never a count", async () => {
    const a = provider.createSyncService("/r", join(fx.root, "ds-cache-a"));
    const b = provider.createSyncService("/r", join(fx.root, "ds-cache-b"));
    const rel = "repo-1/data/aws/ec2/vpc/m1/state/latest";
    await b.markDirty({ relPath: rel });
    fx.write(join(fx.root, "ds-cache-b"), rel, "2-from-b");
    equal(await b.pushChanged(), 1, "b commits");
    await a.markDirty({ relPath: rel });
    fx.write(join(fx.root, "ds-cache-a"), rel, "2-from-a");
    await rejects(a.pushChanged(), (e: unknown) => e instanceof SiltConflictError && e.conflicts[0]?.path === "data/aws/ec2/vpc/m1/state/latest", "a's push");
    await rejects(a.preparePush().then((m: unknown) => a.commitPush(m)), (e) => e instanceof SiltConflictError, "a's two-phase push");
    await a.client.resolve({ all: true, keep: "remote" });
    equal(fx.read(join(fx.root, "ds-cache-a"), rel), "2-from-b", "settled to the committed copy");
  });

  test("datastore module: a lock held past its TTL is live by the host's acquiredAt rule", async () => {
    const ttlMs = 600;
    const lock = provider.createLock("/r/.swamp", { ttlMs });
    await lock.acquire();
    const first = await lock.inspect();
    await until(async () => Date.now() - Date.parse(first.firstAcquiredAt) > 2 * ttlMs, "the lock to outlive its TTL");
    const info = await lock.inspect();
    // The host: stale when now - acquiredAt > ttlMs (repo_context.ts:1056-1101).
    assert(Date.now() - Date.parse(info.acquiredAt) <= ttlMs, `a live lock looks stale: acquiredAt ${info.acquiredAt}`);
    equal(info.pid, (await import("node:process")).default.pid, "the host's pid");
    await lock.release();
  });

  test("datastore module: registers and lists namespaces; reads another namespace's catalog", async () => {
    await provider.registerNamespace("/r/.swamp", "repo-1", "repo-id-1");
    await provider.registerNamespace("/r/.swamp", "repo-1", "repo-id-1");
    equal(await provider.listNamespaces("/r/.swamp"), ["repo-1"], "namespaces");
    const other = datastore.createProvider(cfg({ namespace: "repo-2" }));
    const svc2 = other.createSyncService("/r2", join(fx.root, "ds-cache-2"));
    fx.write(join(fx.root, "ds-cache-2"), "repo-2/.catalog-export.json", "{}");
    await svc2.markDirty({ relPath: "repo-2/.catalog-export.json" });
    await svc2.pushChanged();
    const svc1 = provider.createSyncService("/r", join(fx.root, "ds-cache-a"));
    equal(new TextDecoder().decode((await svc1.fetchForeignContent("repo-2", ".catalog-export.json"))!), "{}", "foreign read");
  });

  test("datastore module: the host's internal files never cross the sync boundary (§2.5)", async () => {
    const a = provider.createSyncService("/r", join(fx.root, "ds-cache-a"));
    const root = join(fx.root, "ds-cache-a", "repo-1");
    for (const f of [".datastore-index.json", ".push-queue.json", ".datastore.lock", "_catalog.db", "_catalog.db-wal", "data/t/m/.lock", ".namespace.json"]) {
      fx.write(root, f, "internal");
    }
    fx.write(root, "data/t/m/state/latest", "1");
    await a.markDirty();
    await a.pushChanged();
    const supported = a.client.excludeSupported;
    const listed = JSON.parse(fx.silt("ls", "--json", "--namespace", "repo-1", "file://" + join(fx.root, "ds-bucket"))).entries
      .map((e: { path: string }) => e.path);
    assert(listed.includes("data/t/m/state/latest"), "data pushed");
    if (supported === false) {
      // This silt serve predates excludes: the rules went to .siltignore
      // and are sent as "exclude" once the service takes them.
      console.log(`  note: silt serve has no excludes yet; ${hostInternalExcludes.length} rules written to .siltignore`);
      assert(fx.read(root, ".siltignore")?.includes(".datastore.lock"), ".siltignore written");
      return;
    }
    for (const f of [".datastore-index.json", ".datastore.lock", "_catalog.db", "data/t/m/.lock", ".namespace.json"]) {
      assert(!listed.includes(f), `${f} was pushed`);
    }
  });

  test("datastore module: an encrypted bucket from config (encrypt, passwordFile): round trip, nothing readable in the bucket", async () => {
    const pw = join(fx.root, "ds-enc-password");
    writeFileSync(pw, "host passphrase\n", { mode: 0o600 });
    const bucket = join(fx.root, "ds-enc-bucket");
    const enc = datastore.createProvider(cfg({ url: "file://" + bucket, namespace: "repo-e", encrypt: true, passwordFile: pw }));
    const a = enc.createSyncService("/re", join(fx.root, "ds-enc-a"));
    const b = enc.createSyncService("/re", join(fx.root, "ds-enc-b"));
    const rel = "repo-e/data/aws/ec2/vpc/secret-model/state/latest";
    await b.pullChanged({ namespace: "repo-e" });
    await a.markDirty({ relPath: rel, namespace: "repo-e" });
    fx.write(join(fx.root, "ds-enc-a"), rel, "secret-bytes");
    equal(await a.pushChanged({ namespace: "repo-e" }), 1, "pushed");
    equal(await b.pullChanged({ namespace: "repo-e" }), 1, "pulled");
    equal(fx.read(join(fx.root, "ds-enc-b"), rel), "secret-bytes", "bytes");
    const walk = (d: string): string[] =>
      readdirSync(d, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]);
    for (const f of walk(bucket)) {
      assert(!/secret|repo-e|aws/.test(f.slice(bucket.length)), `a name shows in the bucket: ${f}`);
      assert(!readFileSync(f, "utf8").includes("secret"), `plain bytes in ${f}`);
    }
    const plain = datastore.createProvider(cfg({ url: "file://" + bucket, namespace: "repo-e" }));
    const c = plain.createSyncService("/re", join(fx.root, "ds-enc-c"));
    const got = await c.pullChanged({ namespace: "repo-e" }).then((n: number) => `pulled ${n}`, (e: unknown) => String(e));
    assert(/encrypted/.test(got), `a pull without the passphrase: ${got}`);
  });
}
