// swamp's own tests of its S3 datastore's lock and sync, and of the sync
// coordinator that drives any extension datastore, ported to the module:
// each test names the swamp test (file @ commit) whose behaviour it checks.
// Not ported: "S3Lock - times out when stale lock cannot be deleted" (silt
// takes over an expired lease in one conditional write inside silt serve;
// there is no delete step that could fail on its own), and the S3Lock mock's
// storage assertions (replaced by what a second repository observes).
// Where silt differs on purpose, README.md's "Differences from
// @swamp/s3-datastore" has the row.
//
//   deno run -A --import-map test/host/import_map.json test/host/ported_test.ts
//
// S3LOCK = src/infrastructure/persistence/s3_lock_test.ts @ af544d840b7b
//          (the last commit before swamp moved S3 out to @swamp/s3-datastore)
// COORD  = src/infrastructure/persistence/datastore_sync_coordinator_test.ts @ 06b6147274f2
// S3SYNC = src/infrastructure/persistence/s3_cache_sync.ts @ af544d840b7b (no tests of its own;
//          the behaviours below are its documented ones)

import process from "node:process";
import { assert, equal, rejects, run, test } from "../harness.ts";
import { type HostFixture, hostFixture } from "./host_fixture.ts";

let fx!: HostFixture;
const ds = () => fx.first.repoDir + "/.swamp";
const isTimeout = (key: string) => (e: unknown) => {
  const t = e as { name?: string; code?: string; lockKey?: string; waitedMs?: number };
  return t.name === "SiltLockTimeoutError" && t.code === "lock_timeout" && t.lockKey === key && typeof t.waitedMs === "number";
};

// --- locks -----------------------------------------------------------------

test("S3LOCK 'S3Lock - acquire and release': the holder is this process, free after release", async () => {
  const lock = fx.first.provider.createLock(ds(), { ttlMs: 5_000 });
  await lock.acquire();
  const info = await fx.second.provider.createLock(ds()).inspect(); // seen from the other repository
  assert(info !== null, "not held after acquire");
  equal([info.pid, info.ttlMs], [process.pid, 5_000], "pid, ttlMs");
  await lock.release();
  equal(await fx.second.provider.createLock(ds()).inspect(), null, "free after release");
});

test("S3LOCK 'S3Lock - release is idempotent': before acquire and twice after", async () => {
  const lock = fx.first.provider.createLock(ds());
  await lock.release();
  await lock.acquire();
  await lock.release();
  await lock.release();
  equal(await lock.inspect(), null, "free");
});

test("S3LOCK 'S3Lock - withLock executes callback and releases'", async () => {
  const lock = fx.first.provider.createLock(ds());
  let heldInside = false;
  const r = await lock.withLock(async () => {
    heldInside = (await fx.second.provider.createLock(ds()).inspect()) !== null;
    return "done";
  });
  equal([r, heldInside], ["done", true], "result, held inside");
  equal(await lock.inspect(), null, "free after");
});

test("S3LOCK 'S3Lock - withLock releases on error': the callback's error, then free", async () => {
  const lock = fx.first.provider.createLock(ds());
  const boom = new Error("boom");
  await rejects(lock.withLock(() => Promise.reject(boom)), (e) => e === boom, "withLock");
  equal(await fx.second.provider.createLock(ds()).inspect(), null, "free after the error");
});

test("S3LOCK 'S3Lock - second acquire times out when lock is held': the other repository waits maxWaitMs, then a lock_timeout", async () => {
  const a = fx.first.provider.createLock(ds(), { ttlMs: 60_000 });
  await a.acquire();
  try {
    const b = fx.second.provider.createLock(ds(), { ttlMs: 60_000, retryIntervalMs: 50, maxWaitMs: 300 });
    await rejects(b.acquire(), isTimeout(".datastore.lock"), "second acquire");
    assert((await a.inspect()) !== null, "the first holder lost the lock to a timed-out waiter");
  } finally {
    await a.release();
  }
});

test("S3LOCK 'S3Lock - timeout check fires even during stale lock retry loop': maxWaitMs bounds the wait", async () => {
  const a = fx.first.provider.createLock(ds());
  await a.acquire();
  try {
    const start = Date.now();
    await rejects(fx.second.provider.createLock(ds(), { maxWaitMs: 200 }).acquire(), isTimeout(".datastore.lock"), "waiter");
    const elapsed = Date.now() - start;
    assert(elapsed < 1_000, `expected the timeout within 1 s, took ${elapsed} ms`);
  } finally {
    await a.release();
  }
});

test("S3LOCK 'S3Lock - stale lock is force-acquired': a dead holder's lease is taken over, with a higher fencing token", async () => {
  // A holder that cannot heartbeat: silt lock acquire exits at once, its
  // lease lives 1 s. The host's S3 lock judged staleness from the object's
  // age; silt's lease expires in the bucket and the next acquire takes it.
  const dead = JSON.parse(fx.silt("lock", "acquire", "--json", "--url", fx.url, "--namespace", fx.namespace, "--ttl", "1s", "--holder", "dead@host", ".datastore.lock"));
  const lock = fx.first.provider.createLock(ds(), { maxWaitMs: 15_000 });
  equal((await lock.inspect())?.holder, "dead@host", "the dead holder, before");
  await lock.acquire();
  try {
    const info = await lock.inspect();
    equal([info?.pid, info?.holder === "dead@host"], [process.pid, false], "the new holder");
    assert(lock.fence.token > dead.token, `fencing token ${lock.fence.token} not above the dead holder's ${dead.token}`);
    // Fencing (silt's, beyond the S3 lock): once a commit is made under the
    // new token, a commit under the dead holder's lower token is refused
    // (silt refuses a token below the highest committed under that key).
    const w = async (id: string) => {
      fx.write(fx.first, `${fx.namespace}/data/t/${id}/state/latest`, id);
      await fx.first.service.markDirty({ relPath: `${fx.namespace}/data/t/${id}` });
    };
    await w("live");
    equal(await fx.first.service.pushChanged({ fence: lock.fence }), 1, "push under the live token");
    await w("late");
    await rejects(
      fx.first.service.pushChanged({ fence: { key: lock.fence.key, token: dead.token } }),
      (e) => (e as { code?: string }).code === "fenced",
      "push under the dead holder's token",
    );
    equal(await fx.first.service.pushChanged({ fence: lock.fence }), 1, "the refused write kept its mark for the live holder");
  } finally {
    await lock.release();
  }
});

test("S3LOCK 'S3Lock - inspect returns null when no lock exists'", async () => {
  equal(await fx.first.provider.createLock(ds(), { lockKey: "never-taken.lock" }).inspect(), null, "inspect");
});

test("S3LOCK 'S3Lock - forceRelease deletes lock when nonce matches': the other repository sees it free", async () => {
  const lock = fx.first.provider.createLock(ds());
  await lock.acquire();
  const info = await lock.inspect();
  equal(await fx.second.provider.createLock(ds()).forceRelease(info.nonce), true, "forceRelease by the other repository");
  equal(await lock.inspect(), null, "free");
  await lock.release(); // quiet after a take-over (see README)
});

test("S3LOCK 'S3Lock - forceRelease returns false when nonce does not match': still held", async () => {
  const lock = fx.first.provider.createLock(ds());
  await lock.acquire();
  try {
    equal(await fx.second.provider.createLock(ds()).forceRelease("wrong-nonce"), false, "forceRelease");
    assert((await lock.inspect()) !== null, "released by a wrong nonce");
  } finally {
    await lock.release();
  }
});

test("S3LOCK 'S3Lock - forceRelease returns false when no lock exists'", async () => {
  equal(await fx.first.provider.createLock(ds(), { lockKey: "never-taken.lock" }).forceRelease("some-nonce"), false, "forceRelease");
});

test("S3LOCK 'S3Lock - custom lock key': only that key is held, in the bucket", async () => {
  const lock = fx.first.provider.createLock(ds(), { lockKey: "custom.lock", ttlMs: 5_000 });
  await lock.acquire();
  try {
    assert((await fx.second.provider.createLock(ds(), { lockKey: "custom.lock" }).inspect()) !== null, "custom.lock not held");
    equal(await fx.second.provider.createLock(ds()).inspect(), null, "the global lock");
    const cli = JSON.parse(fx.silt("lock", "inspect", "--json", "--url", fx.url, "--namespace", fx.namespace, "custom.lock"));
    equal(cli.held, true, "custom.lock in the bucket, per silt lock inspect");
  } finally {
    await lock.release();
  }
});

// --- sync --------------------------------------------------------------------

const m = (id: string) => ({ modelType: "aws/ec2/vpc", modelId: id });
const data = (id: string, rest: string) => `${fx.namespace}/data/aws/ec2/vpc/${id}/${rest}`;

test("COORD 'registerDatastoreSyncNamed: namespace is passed to pullChanged' / 'flushDatastoreSyncNamed: ... pushChanged': a write crosses between the repositories", async () => {
  await fx.second.service.pullChanged({ namespace: fx.namespace }); // binds the second cache first
  await fx.first.service.markDirty({ relPath: data("ns1", "state"), namespace: fx.namespace });
  fx.write(fx.first, data("ns1", "state/latest"), "1");
  equal(await fx.first.service.pushChanged({ namespace: fx.namespace }), 1, "pushed");
  equal(await fx.second.service.pullChanged({ namespace: fx.namespace }), 1, "pulled");
  equal(fx.read(fx.second, data("ns1", "state/latest")), "1", "bytes");
});

test("COORD 'registerDatastoreSyncNamed: no namespace means pull/push omit it': the provider's namespace applies", async () => {
  await fx.first.service.markDirty({ relPath: data("ns2", "state") });
  fx.write(fx.first, data("ns2", "state/latest"), "2");
  equal(await fx.first.service.pushChanged(), 1, "pushed");
  equal(await fx.second.service.pullChanged(), 1, "pulled");
  equal(fx.read(fx.second, data("ns2", "state/latest")), "2", "bytes");
});

test("COORD 'flushDatastoreSync: signal-compliant extension aborts cooperatively': an aborted push rejects and keeps its mark", async () => {
  await fx.first.service.markDirty({ relPath: data("ab", "state") });
  fx.write(fx.first, data("ab", "state/latest"), "1");
  const ac = new AbortController();
  const reason = new Error("sync timeout");
  ac.abort(reason);
  // The host aborts with its SyncTimeoutError as the reason (and reports that
  // itself); the push rejects with the signal's reason, as fetch does.
  await rejects(fx.first.service.pushChanged({ signal: ac.signal }), (e) => e === reason, "aborted push");
  equal(await fx.second.service.pullChanged({ context: { models: [m("ab")] } }), 0, "nothing reached the bucket");
  equal(await fx.first.service.pushChanged(), 1, "the next push sends the kept mark");
});

test("S3SYNC pullChangedForModel: a pull scoped to one model brings only that model", async () => {
  for (const id of ["sc1", "sc2"]) {
    await fx.first.service.markDirty({ relPath: data(id, "state") });
    fx.write(fx.first, data(id, "state/latest"), id);
  }
  equal(await fx.first.service.pushChanged(), 2, "pushed");
  equal(await fx.second.service.pullChanged({ context: { models: [m("sc1")] } }), 1, "scoped pull");
  equal([fx.read(fx.second, data("sc1", "state/latest")), fx.read(fx.second, data("sc2", "state/latest"))], ["sc1", null], "sc1 only");
});

test("S3SYNC pullFile (lazy hydration, hydrationStrategy lazy): a metadata-only pull leaves raw data for hydrateFile", async () => {
  await fx.first.service.markDirty({ relPath: data("hy", "state") });
  fx.write(fx.first, data("hy", "state/1/raw"), "payload");
  fx.write(fx.first, data("hy", "state/latest"), "1");
  await fx.first.service.pushChanged();
  await fx.second.service.pullChanged({ context: { models: [m("hy")] }, metadataOnly: true });
  equal([fx.read(fx.second, data("hy", "state/latest")), fx.read(fx.second, data("hy", "state/1/raw"))], ["1", null], "metadata only");
  equal(await fx.second.service.hydrateFile(data("hy", "state/1/raw")), true, "hydrated");
  equal(fx.read(fx.second, data("hy", "state/1/raw")), "payload", "bytes");
});

test("S3SYNC pushChanged skips .datastore-index.json, .push-queue.json, .datastore.lock: the other repository never receives them", async () => {
  const internal = [".datastore-index.json", ".push-queue.json", ".datastore.lock", ".datastore-sync-state.json", "data/aws/ec2/vpc/ex/.lock"];
  for (const f of internal) fx.write(fx.first, `${fx.namespace}/${f}`, "internal");
  fx.write(fx.first, data("ex", "state/latest"), "1");
  await fx.first.service.markDirty();
  await fx.first.service.pushChanged();
  await fx.second.service.pullChanged();
  equal(fx.read(fx.second, data("ex", "state/latest")), "1", "the data crossed");
  for (const f of internal) equal(fx.read(fx.second, `${fx.namespace}/${f}`), null, `${f} crossed`);
});

test("S3SYNC loadPushQueue (the push queue survives a restart): a mark made through one provider is pushed by a new one on the same cache", async () => {
  await fx.first.service.markDirty({ relPath: data("rs", "state") });
  fx.write(fx.first, data("rs", "state/latest"), "1");
  // The host after a restart: a fresh provider from the same config, a fresh sync service on the same cache.
  const again = fx.mod.datastore.createProvider(fx.config).createSyncService(fx.first.repoDir, fx.first.cacheDir);
  equal(await again.pushChanged(), 1, "pushed by the new provider");
  equal(await fx.second.service.pullChanged({ context: { models: [m("rs")] } }), 1, "pulled by the other repository");
});

test("two-phase push (preparePush/commitPush, host SyncCapabilities twoPhaseSync): a commit behind the other repository's is a SiltConflictError", async () => {
  const rel = data("tp", "state/latest");
  await fx.first.service.markDirty({ relPath: data("tp", "state") });
  fx.write(fx.first, rel, "base");
  await fx.first.service.pushChanged();
  await fx.second.service.pullChanged({ context: { models: [m("tp")] } });
  const manifest = await (async () => {
    await fx.first.service.markDirty({ relPath: rel });
    fx.write(fx.first, rel, "from-first");
    return await fx.first.service.preparePush();
  })();
  await fx.second.service.markDirty({ relPath: rel });
  fx.write(fx.second, rel, "from-second");
  equal(await fx.second.service.pushChanged(), 1, "the second repository commits first");
  await rejects(fx.first.service.commitPush(manifest), (e) => e instanceof fx.mod.SiltConflictError, "the first's commit");
});

let failed = 1;
try {
  fx = await hostFixture();
  failed = await run(Deno.env.get("TS_TEST_FILTER"));
} finally {
  fx?.cleanup();
}
process.exit(failed === 0 ? 0 : 1);
