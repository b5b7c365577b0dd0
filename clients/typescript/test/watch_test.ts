// Tests of SiltClient.watch (POST /v1/watch, issue 36 item 4): the
// events a host reads while silt keeps its cache in sync.

import { type SiltClient, SiltError, type WatchEvent, type WatchOptions } from "../src/mod.ts";
import { assert, equal, rejects, test } from "./harness.ts";
import type { Fixture } from "./fixture.ts";

/** The next event pred accepts, within ms: the event, not the time, synchronises. */
async function next(it: AsyncIterator<WatchEvent>, pred: (e: WatchEvent) => boolean, what: string, ms = 30_000): Promise<WatchEvent> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)));
  try {
    for (;;) {
      const r = await Promise.race([it.next(), late]);
      if (r.done) throw new Error(`the watch ended before ${what}`);
      if (pred(r.value)) return r.value;
    }
  } finally {
    clearTimeout(timer);
  }
}

const quick: WatchOptions = { pollMs: 100, debounceMs: 50, walkMs: -1 };

export function registerWatchTests(fx: Fixture, get: () => { client: SiltClient }): void {
  test("watch pushes a local write and pulls a peer's, then stop() ends it cleanly", async () => {
    const { client } = get();
    const changes: string[] = [];
    const w = client.watch({ ...quick, onChange: (c) => changes.push(c.path) });
    const it = w[Symbol.asyncIterator]();
    const started = await next(it, (e) => e.kind === "started", "started");
    assert(started.notify === true && (started.dirs ?? 0) >= 1, `started ${JSON.stringify(started)}`);

    fx.write(fx.cache, "watched/local.txt", "from the watching cache");
    await next(it, (e) => e.kind === "push" && (e.stats?.files.uploaded ?? 0) >= 1, "the push of the write");
    assert(changes.includes("watched/local.txt"), `changes ${JSON.stringify(changes)}`);
    fx.silt("pull", "--dir", fx.peer);
    equal(fx.read(fx.peer, "watched/local.txt"), "from the watching cache", "the peer's copy");

    fx.write(fx.peer, "watched/remote.txt", "from the peer");
    fx.silt("push", "--dir", fx.peer, "--path", "watched/remote.txt");
    await next(it, (e) => e.kind === "pull" && (e.stats?.files.downloaded ?? 0) >= 1, "the pull of the peer's write");
    equal(fx.read(fx.cache, "watched/remote.txt"), "from the peer", "the watching cache's copy");

    equal((await w.stop()).stopped, true, "stopped");
    equal((await it.next()).done, true, "the iterator ends after stop()");
  });

  test("watch ends when its AbortSignal fires", async () => {
    const { client } = get();
    const ac = new AbortController();
    const w = client.watch(quick, { signal: ac.signal });
    const it = w[Symbol.asyncIterator]();
    await next(it, (e) => e.kind === "started", "started");
    ac.abort();
    equal((await w.done).stopped, true, "done after the abort");
    equal((await it.next()).done, true, "the iterator ends");
  });

  test("watch with bad options rejects with a typed error", async () => {
    const { client } = get();
    const w = client.watch({ debounceMs: -1 });
    await rejects(w.done, (e) => e instanceof SiltError && e.code === "bad_request", "negative debounce");
    await rejects(w[Symbol.asyncIterator]().next(), (e) => e instanceof SiltError, "the iterator rejects too");
  });
}
