// The client's tests, against a real silt serve. Run on Node (compiled by
// tsc: node dist/test/run.js) or Deno (deno run -A test/run.ts).

import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import {
  checkType,
  hostLayout,
  parseReply,
  ServiceLock,
  SiltClient,
  SiltError,
  SiltSyncService,
  socketPathFor,
} from "../src/mod.ts";
import { assert, equal, rejects, run, test } from "./harness.ts";
import { Fixture } from "./fixture.ts";
import { registerHostTests } from "./host_test.ts";
import { registerDatastoreTests } from "./datastore_test.ts";
import { registerWatchTests } from "./watch_test.ts";

const code = (c: string) => (e: unknown) => e instanceof SiltError && e.code === c;

const fx = new Fixture();
let client: SiltClient;
let svc: SiltSyncService;

const m1 = { modelType: "aws/ec2/vpc", modelId: "11111111-aaaa" };
const m2 = { modelType: "command/shell", modelId: "22222222-bbbb" };

test("layout maps a model to explicit prefixes, whatever the type's depth", () => {
  equal(hostLayout.scopes(m1), ["data/aws/ec2/vpc/11111111-aaaa", "outputs/aws/ec2/vpc", "definitions-evaluated/aws/ec2/vpc"], "m1");
  equal(hostLayout.scopes({ modelType: "@test/t", modelId: "207333" }), [
    "data/@test/t/207333",
    "outputs/@test/t",
    "definitions-evaluated/@test/t",
  ], "numeric id");
  for (const bad of ["", "a//b", "../x", "a/./b", "a\\b"]) {
    let threw = false;
    try {
      checkType(bad);
    } catch {
      threw = true;
    }
    assert(threw, `type ${JSON.stringify(bad)} accepted`);
  }
  let threw = false;
  try {
    hostLayout.scopes({ modelType: "t", modelId: "a/b" });
  } catch {
    threw = true;
  }
  assert(threw, "an id with a slash accepted");
});

test("parseReply reads a Content-Length reply", () => {
  const r = parseReply(new TextEncoder().encode("HTTP/1.1 409 Conflict\r\nContent-Length: 2\r\nX: y\r\n\r\n{}extra"));
  equal(r, { status: 409, body: "{}" }, "reply");
});

test("socketPathFor finds the service's socket", async () => {
  const p = await socketPathFor(fx.cache);
  assert(existsSync(p), `no socket at ${p}`);
  const info = await (await SiltClient.forDir(fx.cache)).info();
  equal(info.api, 1, "api version");
});

test("capabilities advertise every optional part", () => {
  equal(svc.capabilities(), {
    scopedSync: true,
    lazyHydration: true,
    namespacedSync: true,
    twoPhaseSync: true,
    previewPush: true,
    controlPlane: true,
  }, "capabilities");
});

test("pullChanged scoped to one model brings only that model", async () => {
  fx.write(fx.peer, "data/aws/ec2/vpc/11111111-aaaa/state/1/raw", "m1-raw");
  fx.write(fx.peer, "data/aws/ec2/vpc/11111111-aaaa/state/latest", "1");
  fx.write(fx.peer, "outputs/aws/ec2/vpc/create/11111111-aaaa-20260101.yaml", "out: 1");
  fx.write(fx.peer, "data/command/shell/22222222-bbbb/result/1/raw", "m2-raw");
  fx.silt("push", "--dir", fx.peer);
  const n = await svc.pullChanged({ context: { models: [m1] } });
  equal(n, 3, "files pulled for m1");
  equal(fx.read(fx.cache, "data/aws/ec2/vpc/11111111-aaaa/state/latest"), "1", "m1's latest marker");
  equal(fx.read(fx.cache, "outputs/aws/ec2/vpc/create/11111111-aaaa-20260101.yaml"), "out: 1", "m1's output");
  equal(fx.read(fx.cache, "data/command/shell/22222222-bbbb/result/1/raw"), null, "m2 must not be pulled");
  equal(await svc.pullChanged({ context: { models: [m1] } }), 0, "a second scoped pull is a no-op");
});

test("markDirty then pushChanged sends the write; a peer sees it", async () => {
  await svc.markDirty({ relPath: "data/command/shell/22222222-bbbb/result" });
  fx.write(fx.cache, "data/command/shell/22222222-bbbb/result/2/raw", "from-service");
  equal(await svc.pushChanged(), 1, "files pushed");
  equal(await svc.pushChanged(), 0, "nothing left to push");
  fx.silt("pull", "--dir", fx.peer);
  equal(fx.read(fx.peer, "data/command/shell/22222222-bbbb/result/2/raw"), "from-service", "peer copy");
});

test("previewPush, preparePush and commitPush run the two phases", async () => {
  await svc.markDirty({ relPath: "data/aws/ec2/vpc/11111111-aaaa" });
  fx.write(fx.cache, "data/aws/ec2/vpc/11111111-aaaa/state/2/raw", "v2");
  const preview = await svc.previewPush();
  equal(preview, { total: 1, new: 1, changed: 0, deleted: 0 }, "preview");
  const before = JSON.parse(fx.silt("ls", "--json", "file://" + fx.bucket)).count;
  const manifest = await svc.preparePush();
  equal(JSON.parse(fx.silt("ls", "--json", "file://" + fx.bucket)).count, before, "prepare committed nothing");
  equal(await svc.commitPush(manifest), 1, "entries committed");
  equal(JSON.parse(fx.silt("ls", "--json", "file://" + fx.bucket)).count, before + 1, "after commit");
  equal((await client.status()).dirty, [], "marks settled by the commit");
});

test("a metadata-only pull leaves raw files for hydrateFile", async () => {
  fx.write(fx.peer, "data/command/shell/33333333-cccc/big/1/raw", "big-payload");
  fx.write(fx.peer, "data/command/shell/33333333-cccc/big/latest", "1");
  fx.silt("push", "--dir", fx.peer);
  const m3 = { modelType: "command/shell", modelId: "33333333-cccc" };
  await svc.pullChanged({ context: { models: [m3] }, metadataOnly: true });
  equal(fx.read(fx.cache, "data/command/shell/33333333-cccc/big/latest"), "1", "metadata pulled");
  equal(fx.read(fx.cache, "data/command/shell/33333333-cccc/big/1/raw"), null, "raw left out");
  equal(await svc.hydrateFile("data/command/shell/33333333-cccc/big/1/raw"), true, "hydrated");
  equal(fx.read(fx.cache, "data/command/shell/33333333-cccc/big/1/raw"), "big-payload", "hydrated bytes");
  equal(await svc.hydrateFile("data/command/shell/33333333-cccc/big/9/raw"), false, "missing remotely");
});

test("library errors arrive as stable codes", async () => {
  await rejects(client.pull({ scope: ["../escape"] }), code("invalid_path"), "pull ../escape");
  await rejects(svc.markDirty({ relPath: ".silt/state.db" }), code("invalid_path"), "mark .silt");
  await rejects(client.push({ all: true, maxDelete: -1 }), code("bad_request"), "negative maxDelete");
  await rejects(client.call("POST", "/v1/pull", { scopes: [] }), code("bad_request"), "unknown field");
  await rejects(svc.pullChanged({ namespace: "other" }), code("bad_request"), "foreign namespace");
});

test("an async pull is a job with a result", async () => {
  const j = await client.start("pull", { scope: ["data/command/shell"] });
  assert(j.id !== "" && j.op === "pull", `job ${JSON.stringify(j)}`);
  const done = await client.wait(j.id, 5);
  equal(done.state, "succeeded", "state");
  equal((done.result as { op: string }).op, "pull", "result op");
  await rejects(client.job("nope"), code("not_found"), "unknown job");
});

test("the control plane stores small records", async () => {
  const cp = svc.controlPlaneStore();
  equal(await cp.get("runs/1"), null, "missing");
  equal(await cp.putIfAbsent("runs/1", new TextEncoder().encode("a")), true, "first claim");
  equal(await cp.putIfAbsent("runs/1", new TextEncoder().encode("b")), false, "second claim");
  await cp.put("runs/2", new Uint8Array([0, 255, 7]));
  equal(new TextDecoder().decode((await cp.get("runs/1"))!), "a", "claim kept");
  equal(Array.from((await cp.get("runs/2"))!), [0, 255, 7], "binary bytes");
  equal(await cp.list("runs/"), ["runs/1", "runs/2"], "list");
  await cp.delete("runs/1");
  equal(await cp.list("runs/"), ["runs/2"], "list after delete");
});

test("a lock through the service excludes a second holder", async () => {
  const a = new ServiceLock(client, "data/aws/ec2/vpc/11111111-aaaa/.lock", { ttlMs: 30_000 });
  const b = new ServiceLock(client, "data/aws/ec2/vpc/11111111-aaaa/.lock", { maxWaitMs: 0 });
  await a.acquire();
  assert(a.token !== undefined && a.token >= 1, "fencing token");
  const info = await a.inspect();
  assert(info !== null && info.held, "inspect while held");
  await rejects(b.acquire(), code("lock_timeout"), "second acquire");
  // The shape a host's lock-timeout handling reads (its lock conformance
  // checks code, lockKey and waitedMs by name).
  const waiter = new ServiceLock(client, "data/aws/ec2/vpc/11111111-aaaa/.lock", { maxWaitMs: 200 });
  const t = await waiter.acquire().then(() => undefined, (e) => e as Record<string, unknown>);
  equal(typeof t?.code === "string" ? (t.code as string).toLowerCase() : t?.code, "lock_timeout", "timeout code");
  equal(t?.lockKey, "data/aws/ec2/vpc/11111111-aaaa/.lock", "timeout lockKey");
  assert(typeof t?.waitedMs === "number" && (t.waitedMs as number) >= 150, `timeout waitedMs ${t?.waitedMs}`);
  await a.release();
  await a.release(); // idempotent
  equal(await a.inspect(), null, "free after release");
  equal(await b.withLock(() => 42), 42, "withLock result");
  equal(await b.inspect(), null, "free after withLock");
});

test("resolve settles a conflict both ways through the service", async () => {
  const p = "files/conflict.txt";
  const conflict = async (mine: string, theirs: string) => {
    fx.silt("pull", "--dir", fx.peer);
    fx.write(fx.peer, p, theirs);
    fx.silt("push", "--dir", fx.peer, "--path", p);
    fx.write(fx.cache, p, mine);
    equal((await client.push({ paths: [p] })).files.conflicts, 1, "conflicting push");
    equal(((await client.status()).conflicts ?? []).map((c) => c.path), [p], "status lists the conflict");
  };
  fx.write(fx.cache, p, "base");
  equal((await client.push({ paths: [p] })).files.uploaded, 1, "base pushed");

  await conflict("mine 1", "theirs 1");
  equal((await client.resolve({ paths: [p], keep: "remote" })).op, "resolve", "resolve op");
  equal(fx.read(fx.cache, p), "theirs 1", "keep remote takes the committed copy");
  equal((await client.status()).conflicts ?? [], [], "no conflict left");

  await conflict("mine 2", "theirs 2");
  await client.resolve({ all: true, keep: "local" });
  const pushed = await client.push({ paths: [p] });
  equal([pushed.files.uploaded, pushed.files.conflicts], [1, 0], "push after keep local");
  fx.silt("pull", "--dir", fx.peer);
  equal(fx.read(fx.peer, p), "mine 2", "the peer gets the kept local copy");

  await rejects(client.resolve({ paths: [p], keep: "theirs" as "local" }), code("bad_request"), "unknown keep");
  await rejects(client.resolve({ keep: "local" }), code("bad_request"), "nothing to resolve");
  await rejects(client.resolve({ paths: ["../x"], keep: "remote" }), code("invalid_path"), "escaping path");
});

test("TCP with the bearer token works, without it is refused", async () => {
  const tcp = SiltClient.tcp(fx.tcpAddress, fx.token);
  equal((await tcp.info()).api, 1, "info over TCP");
  await rejects(SiltClient.tcp(fx.tcpAddress, "wrong").info(), code("unauthorized"), "wrong token");
});

test("an aborted call rejects", async () => {
  const ac = new AbortController();
  ac.abort();
  await rejects(client.pull({}, { signal: ac.signal }), () => true, "aborted pull");
});

registerHostTests(fx, () => ({ client, svc }));
registerDatastoreTests(fx);
registerWatchTests(fx, () => ({ client }));

test("the CLI goes through the service while it runs, and silt serve stops cleanly", async () => {
  fx.write(fx.cache, "files/note.txt", "via cli");
  fx.silt("push", "--dir", fx.cache, "--path", "files/note.txt");
  equal(fx.siltStatus("serve", "--dir", fx.cache).code, 3, "a second silt serve");
  const exit = await fx.stop();
  // Deno's node:child_process reports the signal sent rather than the
  // exit code of a child that handled it; the removed socket below shows
  // the shutdown ran.
  const onDeno = "Deno" in globalThis;
  assert(exit === 0 || (onDeno && exit === "SIGTERM"), `silt serve exit after SIGTERM: ${exit}`);
  assert(!existsSync(join(fx.cache, ".silt", "serve.sock")), "socket removed");
  fx.silt("status", "--dir", fx.cache, "--offline");
});

async function main(): Promise<void> {
  let failed = 1;
  try {
    await fx.start();
    client = SiltClient.unix(join(fx.cache, ".silt", "serve.sock"));
    svc = new SiltSyncService(client);
    failed = await run(process.env.TS_TEST_FILTER);
  } finally {
    await fx.close();
  }
  process.exit(failed === 0 ? 0 : 1);
}

await main();
