// The host's own datastore conformance suite (vendored from swamp,
// ./vendor/datastore_conformance.ts) run on the module as shipped: every
// exported assert*Conformance function, on providers made the way the
// host makes them, over two caches sharing one file:// bucket.
//
//   deno run -A --import-map test/host/import_map.json test/host/run_host_suite.ts

import process from "node:process";
import * as suite from "./vendor/datastore_conformance.ts";
import { assert, run, test } from "../harness.ts";
import { type HostFixture, hostFixture } from "./host_fixture.ts";

let fx!: HostFixture;

// Every export of the suite is run below; a new one upstream fails here
// until it is wired in, rather than being silently skipped.
const wired = ["assertDatastoreExportConformance", "assertLockConformance", "assertVerifierConformance", "assertSyncServiceConformance"];
test("host suite: every assert*Conformance export of the vendored suite is run", () => {
  const exported = Object.keys(suite).filter((k) => /^assert\w*Conformance$/.test(k)).sort();
  assert(JSON.stringify(exported) === JSON.stringify([...wired].sort()), `suite exports ${exported}, runner wires ${wired}`);
});

test("host suite: assertDatastoreExportConformance", () => {
  suite.assertDatastoreExportConformance(fx.mod.datastore, {
    validConfigs: [fx.config, { url: "s3://bucket/prefix" }, { url: "gs://b", namespace: "", exclude: ["*.tmp"], hydrationStrategy: "lazy" }],
    invalidConfigs: [{}, { url: "not a url" }, { url: "s3://b", namespace: "a/b" }, { url: "s3://b", bogus: 1 }, { url: "s3://b", hydrationStrategy: "eager" }],
  });
});

test("host suite: assertLockConformance on the global lock of each repository", async () => {
  await suite.assertLockConformance(fx.first.provider.createLock(fx.first.repoDir + "/.swamp"));
  await suite.assertLockConformance(fx.second.provider.createLock(fx.second.repoDir + "/.swamp"));
});

test("host suite: assertLockConformance on a per-model lock key in the namespace", async () => {
  await suite.assertLockConformance(
    fx.first.provider.createLock(fx.first.repoDir + "/.swamp", { lockKey: `${fx.namespace}/data/aws/ec2/vpc/m1/.lock`, ttlMs: 5_000 }),
  );
});

test("host suite: assertLockConformance on the host's namespaced global lock key (.locks/{ns}.lock)", async () => {
  // swamp's repo_context.ts datastoreGlobalLockOptions: a namespaced repository's global lock.
  await suite.assertLockConformance(fx.second.provider.createLock(fx.second.repoDir + "/.swamp", { lockKey: `.locks/${fx.namespace}.lock` }));
});

test("host suite: assertVerifierConformance, healthy", async () => {
  const v = fx.first.provider.createVerifier();
  await suite.assertVerifierConformance(v);
  const r = await v.verify();
  assert(r.healthy, `unhealthy: ${r.message}`);
});

test("host suite: assertVerifierConformance on an unreachable service (a result, not an exception)", async () => {
  const dead = fx.mod.datastore.createProvider({ ...fx.config, siltBin: "/nonexistent/silt", namespace: "unreachable" });
  const v = dead.createVerifier();
  await suite.assertVerifierConformance(v);
  assert((await v.verify()).healthy === false, "an unreachable service reported healthy");
});

test("host suite: assertSyncServiceConformance on both caches, scoped sync expected", async () => {
  await suite.assertSyncServiceConformance(fx.first.service, { expectScopedSync: true });
  await suite.assertSyncServiceConformance(fx.second.service, { expectScopedSync: true });
});

let failed = 1;
try {
  fx = await hostFixture();
  failed = await run(Deno.env.get("TS_TEST_FILTER"));
} finally {
  fx?.cleanup();
}
process.exit(failed === 0 ? 0 : 1);
