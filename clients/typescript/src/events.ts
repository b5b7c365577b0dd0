// The service's event stream as callbacks: progress of every operation
// and "the remote moved", read by long polls of POST /v1/events (one
// request open at a time; the service reads the remote manifest, with
// If-None-Match, once per watch interval while someone listens for it).

import type { SiltClient, SiltEvent } from "./client.ts";

/** One transferred file of a running operation. */
export interface ProgressEvent {
  op: string;
  job?: string;
  phase: string;
  path: string;
  bytes: number;
  done: number;
  total: number;
  doneBytes: number;
  totalBytes: number;
}

/** The remote manifest moved: remoteSeq is its sequence now, seenSeq this cache's. */
export interface RemoteChangeEvent {
  remoteSeq: number;
  seenSeq: number;
  /** Another writer's commit (not one of this cache's). */
  foreign: boolean;
}

type Listener<T> = (e: T) => void;

/** Fans the service's events out to listeners while any is registered. */
export class EventStream {
  readonly #client: SiltClient;
  readonly #progress = new Set<Listener<ProgressEvent>>();
  readonly #remote = new Set<Listener<RemoteChangeEvent>>();
  readonly #ops = new Set<Listener<SiltEvent>>();
  #loop: Promise<void> | undefined;
  #stop: AbortController | undefined;
  #after = 0;
  #started = false;
  #ready: Promise<void>;
  #markReady!: () => void;
  /** How long one poll waits; the service answers as soon as there is an event. */
  waitMs = 20_000;

  constructor(client: SiltClient) {
    this.#client = client;
    this.#ready = new Promise((r) => (this.#markReady = r));
  }

  /** Resolves once the stream is established: events from then on reach the listeners. */
  ready(): Promise<void> {
    return this.#ready;
  }

  /** Calls fn for every file an operation transfers; returns the unsubscribe function. */
  onProgress(fn: Listener<ProgressEvent>): () => void {
    return this.#add(this.#progress, fn);
  }

  /**
   * Calls fn when the remote moved under another writer's commit (all
   * moves with {all: true}); returns the unsubscribe function.
   */
  onRemoteChange(fn: Listener<RemoteChangeEvent>, o: { all?: boolean } = {}): () => void {
    const wrapped: Listener<RemoteChangeEvent> = o.all ? fn : (e) => e.foreign && fn(e);
    return this.#add(this.#remote, wrapped);
  }

  /** Calls fn with each operation's start and end ({type: "op", op, state}). */
  onOperation(fn: Listener<SiltEvent>): () => void {
    return this.#add(this.#ops, fn);
  }

  /** Stops polling and drops every listener. */
  close(): void {
    this.#progress.clear();
    this.#remote.clear();
    this.#ops.clear();
    this.#stop?.abort();
  }

  #add<T>(set: Set<Listener<T>>, fn: Listener<T>): () => void {
    set.add(fn);
    this.#ensure();
    return () => {
      set.delete(fn);
      if (this.#listeners() === 0) this.#stop?.abort();
    };
  }

  #listeners(): number {
    return this.#progress.size + this.#remote.size + this.#ops.size;
  }

  #ensure(): void {
    if (this.#loop) return;
    const stop = new AbortController();
    this.#stop = stop;
    this.#loop = this.#run(stop.signal).finally(() => {
      this.#loop = undefined;
      if (this.#listeners() > 0 && !stop.signal.aborted) this.#ensure();
    });
  }

  async #run(signal: AbortSignal): Promise<void> {
    let backoff = 100;
    while (!signal.aborted && this.#listeners() > 0) {
      let r;
      try {
        // The first poll starts the stream at "now": listeners hear what
        // happens after they subscribed, not the service's backlog.
        const tail = !this.#started;
        r = await this.#client.events({ after: this.#after, waitMs: this.waitMs, remote: this.#remote.size > 0, tail }, { signal });
        if (tail) {
          this.#started = true;
          this.#markReady();
        }
        backoff = 100;
      } catch {
        if (signal.aborted) return;
        await new Promise((res) => setTimeout(res, backoff));
        backoff = Math.min(backoff * 2, 5_000);
        continue;
      }
      this.#after = r.next;
      for (const e of r.events) this.#dispatch(e);
    }
  }

  #dispatch(e: SiltEvent): void {
    const call = <T>(set: Set<Listener<T>>, v: T) => {
      for (const fn of [...set]) {
        try {
          fn(v);
        } catch { /* a listener's failure is its own */ }
      }
    };
    if (e.type === "progress") {
      call(this.#progress, {
        op: e.op ?? "", job: e.job, phase: e.phase ?? "", path: e.path ?? "", bytes: e.bytes ?? 0,
        done: e.done ?? 0, total: e.total ?? 0, doneBytes: e.doneBytes ?? 0, totalBytes: e.totalBytes ?? 0,
      });
    } else if (e.type === "remote") {
      call(this.#remote, { remoteSeq: e.remoteSeq ?? 0, seenSeq: e.seenSeq ?? 0, foreign: e.foreign === true });
    } else if (e.type === "op") {
      call(this.#ops, e);
    }
  }
}
