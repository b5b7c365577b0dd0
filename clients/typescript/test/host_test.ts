// Tests of what a host needs from the client (issue 20): each failure
// found driving it as a host has a named regression test here.

import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import {
  openBucket,
  openDir,
  ServiceLock,
  SiltClient,
  SiltConflictError,
  SiltError,
  SiltLockLostError,
  SiltSyncService,
} from "../src/mod.ts";
import { assert, equal, rejects, test } from "./harness.ts";
import { type Fixture, siltBin } from "./fixture.ts";

const code = (c: string) => (e: unknown) => e instanceof SiltError && e.code === c;

/** Waits (bounded) until cond holds; the condition, not the time, synchronises. */
export async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function registerHostTests(fx: Fixture, get: () => { client: SiltClient; svc: SiltSyncService }): void {
  // Makes p conflict: the peer commits its copy after this cache last synced p.
  const conflict = async (p: string, mine: string, theirs: string) => {
    const { client } = get();
    fx.write(fx.cache, p, "base-" + p);
    await client.push({ paths: [p] });
    fx.silt("pull", "--dir", fx.peer);
    fx.write(fx.peer, p, theirs);
    fx.silt("push", "--dir", fx.peer, "--path", p);
    fx.write(fx.cache, p, mine);
  };

  test("regression: a conflicting pushChanged rejects with SiltConflictError (returned 0, no error)", async () => {
    const { client, svc } = get();
    const p = "files/host-conflict-1.txt";
    await conflict(p, "mine", "theirs");
    await svc.markDirty({ relPath: p });
    let err: unknown;
    try {
      await svc.pushChanged();
    } catch (e) {
      err = e;
    }
    assert(err instanceof SiltConflictError, `pushChanged: ${err}`);
    equal(err.conflicts.map((c) => c.path), [p], "conflict paths");
    assert(err.conflicts[0].reason !== "", "a reason");
    equal(err.stats.files.conflicts, 1, "stats carried");
    await client.resolve({ paths: [p], keep: "remote" });
  });

  test("regression: a conflicting commitPush rejects with SiltConflictError (returned the manifest's 1)", async () => {
    const { client, svc } = get();
    const p = "files/host-conflict-2.txt";
    fx.write(fx.cache, p, "base");
    await client.push({ paths: [p] });
    fx.silt("pull", "--dir", fx.peer);
    fx.write(fx.cache, p, "mine");
    await svc.markDirty({ relPath: p });
    const manifest = await svc.preparePush();
    equal(manifest.files, 1, "prepared one file");
    fx.write(fx.peer, p, "theirs");
    fx.silt("push", "--dir", fx.peer, "--path", p);
    await rejects(svc.commitPush(manifest), (e) => e instanceof SiltConflictError && e.conflicts[0]?.path === p, "commitPush");
    fx.silt("pull", "--dir", fx.peer);
    equal(fx.read(fx.peer, p), "theirs", "nothing of ours committed");
    // The lost race is remembered as a plain push's conflict: listed with
    // its reason, still dirty, and taking the remote copy needs no force.
    const st = await client.status();
    equal((st.conflicts ?? []).map((c) => c.path), [p], "status lists the conflict");
    assert((st.conflicts ?? [])[0].reason !== "", "with its reason");
    assert(st.dirty.includes(p), "the path stays dirty");
    await client.resolve({ paths: [p], keep: "remote" });
    equal(fx.read(fx.cache, p), "theirs", "took the remote copy");
    const after = await client.status();
    equal((after.conflicts ?? []).length, 0, "settled");
    assert((after.backups ?? []).some((b) => b.path === p), "the local edit kept as a backup");
  });

  test("regression: keeping the local copy of a lost commitPush pushes it (the conflict was not remembered)", async () => {
    const { client, svc } = get();
    const p = "files/host-conflict-3.txt";
    fx.write(fx.cache, p, "base");
    await client.push({ paths: [p] });
    fx.silt("pull", "--dir", fx.peer);
    fx.write(fx.cache, p, "mine");
    await svc.markDirty({ relPath: p });
    const manifest = await svc.preparePush();
    fx.write(fx.peer, p, "theirs");
    fx.silt("push", "--dir", fx.peer, "--path", p);
    await rejects(svc.commitPush(manifest), (e) => e instanceof SiltConflictError, "commitPush");
    equal(((await client.status()).conflicts ?? []).map((c) => c.path), [p], "remembered");
    await client.resolve({ paths: [p], keep: "local" });
    const pushed = await client.push({ paths: [p] });
    equal(pushed.files.uploaded, 1, "pushed the local copy");
    fx.silt("pull", "--dir", fx.peer);
    equal(fx.read(fx.peer, p), "mine", "the peer has the kept local copy");
  });

  test("restore puts back the copy keep remote kept, marked dirty; nothing kept is no_backup", async () => {
    const { client } = get();
    const p = "files/host-restore.txt";
    await conflict(p, "mine", "theirs");
    equal((await client.push({ paths: [p] })).files.conflicts, 1, "push conflicts");
    await client.resolve({ paths: [p], keep: "remote" });
    equal(fx.read(fx.cache, p), "theirs", "took the remote copy");
    const st = await client.restore({ paths: [p] });
    equal(st.op, "restore", "restore stats");
    equal(fx.read(fx.cache, p), "mine", "the kept copy is back");
    assert((await client.status()).dirty.includes(p), "marked dirty");
    await rejects(client.restore({ paths: ["files/never-kept.txt"] }), code("no_backup"), "nothing kept");
    await rejects(client.restore({ paths: [] }), code("bad_request"), "no paths");
    equal((await client.push({ paths: [p] })).files.uploaded, 1, "the next push sends the restored copy");
    fx.silt("pull", "--dir", fx.peer);
    equal(fx.read(fx.peer, p), "mine", "the peer has it");
  });

  test("commitPush returns the files its commit's Stats counts", async () => {
    const { svc } = get();
    const p = "files/host-commit.txt";
    await svc.markDirty({ relPath: p });
    fx.write(fx.cache, p, "one");
    const m = await svc.preparePush();
    equal(await svc.commitPush(m), 1, "committed");
    equal(svc.lastStats?.op, "commit", "last stats");
    const again = await svc.preparePush();
    equal(await svc.commitPush(again), 0, "nothing left");
  });

  test("regression: an abort while connecting sends nothing (the commit ran, then AbortError)", async () => {
    const { client } = get();
    const p = "files/abort-connect.txt";
    fx.write(fx.cache, p, "must not be pushed");
    const ac = new AbortController();
    const pending = client.push({ paths: [p] }, { signal: ac.signal });
    ac.abort(); // the connect is under way: the request must not go out
    await rejects(pending, (e) => (e as Error).name === "AbortError" || e === ac.signal.reason, "aborted push");
    // silt ls of a path the bucket does not hold exits 1 saying so (issue 37).
    const ls = fx.siltStatus("ls", "--json", "file://" + fx.bucket, p);
    equal(ls.code, 1, "silt ls exit code");
    assert(ls.stderr.includes("no file under " + p), "not in the bucket: " + ls.stderr);
  });

  test("regression: ServiceLock.acquire honours its signal while it waits", async () => {
    const { client } = get();
    const a = new ServiceLock(client, "locks/signal", { ttlMs: 30_000 });
    await a.acquire();
    const b = new ServiceLock(client, "locks/signal", { maxWaitMs: 60_000 });
    const ac = new AbortController();
    const started = Date.now();
    const waiting = b.acquire({ signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    await rejects(waiting, () => true, "aborted acquire");
    assert(Date.now() - started < 10_000, `acquire returned after ${Date.now() - started} ms`);
    await a.release();
    // The service gave its attempt up: the lock is free for a third holder.
    const c = new ServiceLock(client, "locks/signal", { maxWaitMs: 5_000 });
    equal(await c.withLock(() => "ok"), "ok", "free after the abandoned wait");
  });

  test("regression: inspect reports the host's pid and hostname, not the service's", async () => {
    const { client } = get();
    const l = new ServiceLock(client, "locks/pid", { pid: 4321, hostname: "host-z" });
    await l.acquire();
    const i = await l.inspect();
    equal([i?.pid, i?.hostname], [4321, "host-z"], "given holder");
    await l.release();
    const d = new ServiceLock(client, "locks/pid");
    await d.acquire();
    const info = await client.info();
    const j = await d.inspect();
    assert(j?.pid === process.pid && j.pid !== info.pid, `default pid ${j?.pid}, host ${process.pid}, service ${info.pid}`);
    await d.release();
  });

  test("regression: inspect lacks heartbeatAt, so the host's TTL rule broke a live lock", async () => {
    const { client } = get();
    const ttlMs = 600;
    const l = new ServiceLock(client, "locks/live", { ttlMs });
    await l.acquire();
    const first = await l.inspect();
    // Hold it past its TTL: the heartbeat keeps it alive.
    await until(async () => Date.now() - Date.parse(first!.acquiredAt!) > 2 * ttlMs, "the lock to outlive its TTL");
    const cur = await l.inspect();
    assert(cur?.heartbeatAt !== undefined, "heartbeatAt reported");
    assert(Date.now() - Date.parse(cur!.heartbeatAt!) < ttlMs, `heartbeatAt ${cur?.heartbeatAt} is older than the TTL`);
    equal(cur?.acquiredAt, first?.acquiredAt, "acquiredAt never moves");
    await l.release();
  });

  test("a lost lease aborts withLock's signal; withLock returns fn's result, lost says what happened", async () => {
    const { client } = get();
    const l = new ServiceLock(client, "locks/lost-quiet", { ttlMs: 600 });
    const breaker = new ServiceLock(client, "locks/lost-quiet");
    const out = await l.withLock(async (signal) => {
      const held = await breaker.inspect();
      equal(await breaker.forceRelease(held!.nonce!), true, "force-release");
      await until(() => signal.aborted, "the hold's signal to abort");
      return 7;
    });
    equal(out, 7, "withLock returns fn's result after a loss");
    assert(l.lost instanceof SiltLockLostError, "lost reports the loss");
  });

  test("regression (throwOnLoss): a lost lease aborts withLock's signal, and withLock rejects (ran to the end quietly)", async () => {
    const { client } = get();
    const l = new ServiceLock(client, "locks/lost", { ttlMs: 600, throwOnLoss: true });
    const breaker = new ServiceLock(client, "locks/lost");
    let sawAbort = false;
    await rejects(
      l.withLock(async (signal) => {
        const held = await breaker.inspect();
        equal(await breaker.forceRelease(held!.nonce!), true, "force-release");
        await until(() => signal.aborted, "the hold's signal to abort");
        sawAbort = signal.reason instanceof SiltLockLostError;
      }),
      (e) => e instanceof SiltLockLostError,
      "withLock after a force-release",
    );
    assert(sawAbort, "the callback's signal carried SiltLockLostError");
  });

  test("release after a take-over is quiet and frees nothing; signal, lost and inspect show the loss (issue 36)", async () => {
    const { client } = get();
    const l = new ServiceLock(client, "locks/quiet", { ttlMs: 60_000 });
    await l.acquire();
    const signal = l.signal!;
    const held = await l.inspect();
    equal(await client.forceRelease("locks/quiet", held!.nonce!), true, "force-release");
    const other = new ServiceLock(client, "locks/quiet", { holder: "the-new-holder" });
    await other.acquire();
    await l.release(); // quiet, as the host's S3 and GCS locks
    assert(signal.aborted && signal.reason instanceof SiltLockLostError, "the hold's signal carries the loss");
    assert(l.lost instanceof SiltLockLostError, "lost reports it");
    equal((await l.inspect())?.holder, "the-new-holder", "the new holder keeps the lock");
    await l.release(); // idempotent afterwards
    await other.release();
    equal(other.lost, undefined, "a hold kept to its end reports no loss");
    equal(await l.inspect(), null, "free after the new holder's release");
    await l.acquire();
    equal(l.lost, undefined, "acquire clears the last loss");
    await l.release();
  });

  test("regression (throwOnLoss): release after a force-release throws (returned quietly)", async () => {
    const { client } = get();
    const l = new ServiceLock(client, "locks/quiet-strict", { ttlMs: 60_000, throwOnLoss: true });
    await l.acquire();
    const held = await l.inspect();
    equal(await client.forceRelease("locks/quiet-strict", held!.nonce!), true, "force-release");
    await rejects(l.release(), (e) => e instanceof SiltLockLostError, "release");
    await l.release(); // idempotent afterwards
  });

  test("pushChanged carries a fence: a stale token is refused", async () => {
    const { client, svc } = get();
    const a = new ServiceLock(client, "locks/fence");
    await a.acquire();
    const stale = a.fence!;
    await a.release();
    const b = new ServiceLock(client, "locks/fence");
    await b.acquire();
    await svc.markDirty({ relPath: "files/fenced-1.txt" });
    fx.write(fx.cache, "files/fenced-1.txt", "b");
    equal(await svc.pushChanged({ fence: b.fence }), 1, "push under the current token");
    await b.release();
    await svc.markDirty({ relPath: "files/fenced-2.txt" });
    fx.write(fx.cache, "files/fenced-2.txt", "a");
    await rejects(svc.pushChanged({ fence: stale }), code("fenced"), "push under the stale token");
    equal(await svc.pushChanged(), 1, "the refused change goes up without the stale fence");
  });

  test("regression: the health check costs one request and writes nothing (silt verify wrote, 0.6-0.8 s)", async () => {
    const { client } = get();
    const h = await client.health();
    assert(h.healthy, h.message);
    equal([h.requests.total, h.requests.get, h.requests.put], [1, 1, 0], "requests");
    assert(h.latencyMs >= 0 && h.latencyMs < 500, `latency ${h.latencyMs}`);
  });

  test("onProgress reports each file of a push; onRemoteChange a peer's commit", async () => {
    const { client, svc } = get();
    const seen: string[] = [];
    const offP = client.onProgress((e) => e.op === "push" && seen.push(e.path));
    const moves: number[] = [];
    const offR = client.onRemoteChange((e) => moves.push(e.remoteSeq));
    try {
      await client.eventStream.ready();
      await svc.markDirty({ relPath: "files/progress" });
      fx.write(fx.cache, "files/progress/a.txt", "a");
      fx.write(fx.cache, "files/progress/b.txt", "b");
      equal(await svc.pushChanged(), 2, "pushed");
      await until(() => seen.length >= 2, "two progress events");
      equal(seen.sort(), ["files/progress/a.txt", "files/progress/b.txt"], "progress paths");
      fx.silt("pull", "--dir", fx.peer);
      fx.write(fx.peer, "files/progress/peer.txt", "p");
      fx.silt("push", "--dir", fx.peer, "--path", "files/progress/peer.txt");
      const want = (await client.status(true)).remote_seq;
      await until(() => moves.includes(want), `a remote change to seq ${want}`);
    } finally {
      offP();
      offR();
      client.close();
    }
  });

  test("namespaces are registered and listed; another namespace's files are readable", async () => {
    const { client } = get();
    await client.registerNamespace("team-a", "repo-a");
    await client.registerNamespace("team-a", "repo-a"); // idempotent
    await rejects(client.registerNamespace("team-a", "repo-b"), code("namespace_taken"), "second owner");
    equal((await client.namespaces()).map((n) => [n.namespace, n.owner]), [["team-a", "repo-a"]], "list");
    const other = join(fx.root, "ns-a");
    fx.silt("init", "--dir", other, "--namespace", "team-a", "file://" + fx.bucket);
    fx.write(join(other, "team-a"), ".catalog-export.json", '{"models":1}');
    fx.silt("push", "--dir", other);
    const data = await client.readFile(".catalog-export.json", "team-a");
    equal(new TextDecoder().decode(data!), '{"models":1}', "foreign catalog");
    equal(await client.readFile("nothing-here", "team-a"), null, "absent");
  });

  test("openDir binds a directory and starts its service; a second open reuses it", async () => {
    const dir = join(fx.root, "opened");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "kept.txt"), "already here");
    const c1 = await openDir({ dir, url: "file://" + fx.bucket, adopt: true, siltBin: siltBin(), idleExitMs: 0 });
    const c2 = await openDir({ dir, siltBin: siltBin() });
    const [i1, i2] = [await c1.info(), await c2.info()];
    equal(i1.pid, i2.pid, "one service");
    const st = await c1.push({ all: true });
    equal(st.files.uploaded, 1, "adopted file pushed");
    await rejects(openDir({ dir, url: "file:///elsewhere", siltBin: siltBin() }), code("bad_request"), "bound elsewhere");
    process.kill(i1.pid, "SIGTERM");
    await until(() => !alive(i1.pid), "the service to stop");
  });

  test("regression: a service exits when the host that started it is SIGKILLed", async () => {
    const dir = join(fx.root, "orphan");
    const onDeno = "Deno" in globalThis;
    const args = onDeno
      ? ["run", "-A", join(process.cwd(), "test", "child_open.ts"), dir, "file://" + fx.bucket]
      : [join(process.cwd(), "dist", "test", "child_open.js"), dir, "file://" + fx.bucket];
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, SILT_BIN: siltBin() } });
    let out = "";
    child.stdout!.on("data", (c) => (out += String(c)));
    await until(() => /service (\d+)/.test(out), "the child to start its service", 30_000);
    const pid = Number(/service (\d+)/.exec(out)![1]);
    assert(alive(pid), "service running");
    child.kill("SIGKILL");
    await until(() => !alive(pid), "the service to exit with its parent");
  });

  test("a bucket service gives locks and health without a cache directory", async () => {
    const c = await openBucket({ url: "file://" + fx.bucket, siltBin: siltBin(), idleExitMs: 0 });
    const info = await c.info();
    equal(info.mode, "bucket", "mode");
    const l = new ServiceLock(c, ".datastore.lock");
    equal(await l.withLock(() => 7), 7, "withLock");
    // The first check reads the head cold: the hint (a checkpoint root), its
    // pages and the deltas since, fewer than a checkpoint interval (64), all
    // reads; the next one, of an unchanged bucket, is one conditional read.
    const cold = await c.health();
    assert(cold.healthy && cold.requests.total <= 2 + 64 + 4 && cold.requests.put === 0, `cold health ${JSON.stringify(cold.requests)}`);
    const h = await c.health();
    equal([h.healthy, h.requests.total], [true, 1], "health");
    await rejects(c.pull(), code("not_found"), "no cache operations");
    process.kill(info.pid, "SIGTERM");
    await until(() => !alive(info.pid), "the bucket service to stop");
  });
}
