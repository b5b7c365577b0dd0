// The module loaded as the host loads it: the host's discovery, bundling,
// export validation, registry and config resolution (a port of swamp's
// code, ./vendor/host_loader_port.ts) run on an extension file that uses
// the module the way README.md tells users to. Each test names the host
// rule it checks; the ones marked "regression" failed before the fix in
// src/datastore.ts they name.
//
//   deno run -A --import-map test/host/import_map.json test/host/loader_test.ts

import process from "node:process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { isZodSchemaLike } from "./vendor/zod_compat.ts";
import { summarizeSyncError } from "./vendor/sync_error_diagnostic.ts";
import {
  DatastoreTypeRegistry,
  extractTypeFromSource,
  loadDatastores,
  resolveCustomDatastore,
  validatePrimaryExport,
} from "./vendor/host_loader_port.ts";
import { assert, equal, run, test } from "../harness.ts";
import { loadModule } from "./host_fixture.ts";
import { siltBin } from "../fixture.ts";

// deno-lint-ignore no-explicit-any
let mod: any;
const root = mkdtempSync(join(tmpdir(), "shl-"));
const moduleFile = () =>
  fileURLToPath(new URL(Deno.env.get("HOST_SUITE_MODULE") === "dist" ? "../../dist/src/datastore.js" : "../../src/datastore.ts", import.meta.url));

// The extension file README.md documents: the host's source gate wants
// `export const datastore =`, and its catalog wants `type: "..."` in it.
const wrapper = (spec: string) =>
  `import { datastore as silt } from ${JSON.stringify(spec)};\nexport const datastore = { ...silt, type: "@siltsync/silt" };\n`;

function extensionsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(root, "ext-"));
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(join(dir, rel, ".."), { recursive: true });
    writeFileSync(join(dir, rel), body);
  }
  return dir;
}

test("loader: configSchema is zod-like to the host (_def, parse, safeParse) (regression: no _def, the module failed to load)", () => {
  assert(isZodSchemaLike(mod.datastore.configSchema), "the host's isZodSchemaLike rejects configSchema");
  const v = validatePrimaryExport(mod.datastore);
  assert(v.success, `the host's UserDatastoreSchema rejects the export: ${JSON.stringify(!v.success && v.error)}`);
});

test("loader: the documented extension file is discovered, bundled, imported from a data: URL and registered", async () => {
  const dir = extensionsDir({
    "silt.ts": wrapper(moduleFile()),
    "silt_test.ts": "export const datastore = 1;\n", // the host skips _test.ts
    "_lib/helper.ts": "export const datastore = 1;\n", // and _ directories
  });
  const registry = new DatastoreTypeRegistry();
  const r = await loadDatastores(dir, registry, Deno.execPath());
  equal(r.failed, [], "failed");
  equal(r.loaded, ["silt.ts"], "loaded");
  const info = registry.get("@SiltSync/Silt"); // the host's registry keys are lower-cased
  assert(info !== undefined, "@siltsync/silt not registered");
  equal([info.name, typeof info.createProvider, typeof info.configSchema?.safeParse], ["silt", "function", "function"], "registered");
});

test("loader: the host's catalog reads the type from the module's source and from the documented file (regression: type was an identifier)", () => {
  equal(extractTypeFromSource(readFileSync(fileURLToPath(new URL("../../src/datastore.ts", import.meta.url)), "utf8"))?.typeNormalized, "@siltsync/silt", "src/datastore.ts");
  equal(extractTypeFromSource(wrapper("npm:@siltsync/client/datastore"))?.typeNormalized, "@siltsync/silt", "README's extension file");
  equal(mod.datastore.type, mod.DATASTORE_TYPE, "the literal and DATASTORE_TYPE agree");
});

test("loader: a bare re-export is skipped by the host's source gate, which is why README gives the const form", async () => {
  const dir = extensionsDir({ "silt.ts": `export { datastore } from ${JSON.stringify(moduleFile())};\n` });
  const r = await loadDatastores(dir, new DatastoreTypeRegistry(), Deno.execPath());
  equal([r.loaded, r.skipped], [[], ["silt.ts"]], "loaded, skipped");
});

test("resolve: SWAMP_DATASTORE's JSON with the host's hydrationStrategy passes, and the host reads it (regression: unknown key)", () => {
  const registry = new DatastoreTypeRegistry();
  registry.register({ ...mod.datastore, isBuiltIn: false });
  const cfg = { url: "file://" + join(root, "bucket"), namespace: "repo-1", siltBin: siltBin(), hydrationStrategy: "lazy" };
  const r = resolveCustomDatastore(registry, "@siltsync/silt", cfg, "/repo", "/home/u/.swamp/repos/id");
  equal([r.hydrationStrategy, r.datastorePath, r.cachePath], ["lazy", "/repo/.swamp", "/home/u/.swamp/repos/id"], "resolved");
  const withCache = resolveCustomDatastore(registry, "@siltsync/silt", { ...cfg, cachePath: "/c" }, "/repo", "/default");
  equal(withCache.cachePath, "/c", "config.cachePath wins over the host's default");
});

test("resolve: a bad config is the host's 'Invalid config' error naming the field, not a throw from createProvider", () => {
  const registry = new DatastoreTypeRegistry();
  registry.register({ ...mod.datastore, isBuiltIn: false });
  for (const [cfg, field] of [[{}, "url"], [{ url: "s3://b", hydrationStrategy: "eager" }, "hydrationStrategy"]] as const) {
    let msg = "";
    try {
      resolveCustomDatastore(registry, "@siltsync/silt", cfg as Record<string, unknown>, "/repo", "/d");
    } catch (e) {
      msg = String(e);
    }
    assert(msg.includes('Invalid config for datastore type "@siltsync/silt"') && msg.includes(field), `config ${JSON.stringify(cfg)}: ${msg || "accepted"}`);
  }
});

test("provider: the methods the host calls without await return values, not promises", () => {
  // resolve_datastore.ts and repo_context.ts use these results directly.
  const p = mod.datastore.createProvider({ url: "s3://b/p", namespace: "n" });
  const isThenable = (v: unknown) => typeof (v as { then?: unknown })?.then === "function";
  const results = {
    resolveDatastorePath: p.resolveDatastorePath("/r"),
    resolveCachePath: p.resolveCachePath("/r"),
    createLock: p.createLock("/r/.swamp"),
    createVerifier: p.createVerifier(),
    createSyncService: p.createSyncService("/r", join(root, "never-bound")),
  };
  for (const [k, v] of Object.entries(results)) assert(!isThenable(v), `${k} returned a promise`);
  equal(typeof results.resolveDatastorePath, "string", "datastore path");
});

test("errors: the host's summarizeSyncError reads the module's conflict and lock-timeout errors by code, name and message", () => {
  // repo_context.ts wraps every failed prepare/commit/pull/push in this summary.
  const conflict = new mod.SiltConflictError({ op: "push", files: { conflicts: 1 }, conflicts: [{ path: "data/t/m/state/latest", reason: "changed remotely" }] });
  const s = summarizeSyncError("push", "@siltsync/silt", conflict);
  assert(s.summary.startsWith("@siltsync/silt push failed (code=conflict): silt push: 1 conflict(s): data/t/m/state/latest"), s.summary);
  equal([s.fields.code, s.fields.name], ["conflict", "SiltConflictError"], "fields");
  const t = summarizeSyncError("push", "@siltsync/silt", new mod.SiltLockTimeoutError(".locks/repo-1.lock", 300));
  equal([t.fields.code, t.fields.name], ["lock_timeout", "SiltLockTimeoutError"], "lock timeout fields");
});

let failed = 1;
try {
  mod = await loadModule();
  failed = await run(Deno.env.get("TS_TEST_FILTER"));
} finally {
  rmSync(root, { recursive: true, force: true });
}
process.exit(failed === 0 ? 0 : 1);
