// A DistributedLock (the host's lock shape) held through silt serve: the
// service keeps the lock object alive; this side heartbeats the service
// every ttl/3 so that, if this process dies, the service lets the lock go.

import { hostname } from "node:os";
import process from "node:process";
import { type Lease, type LockInfo, SiltClient, SiltError } from "./client.ts";

export interface ServiceLockOptions {
  ttlMs?: number;
  /** How long acquire waits for a holder (default 60 s; 0 tries once). */
  maxWaitMs?: number;
  holder?: string;
  /** The holder's process and machine recorded in the lock; default this process's. */
  pid?: number;
  hostname?: string;
  /**
   * Make release() (and so withLock) throw SiltLockLostError when the
   * lease was lost while held. Default false: release returns quietly, as
   * the host's own locks do (a finished step stays finished), and the loss
   * is observable through signal, lost and inspect().
   */
  throwOnLoss?: boolean;
}

/** The lease was lost (force-released, or taken over after missed heartbeats) while held. */
export class SiltLockLostError extends SiltError {
  constructor(readonly key: string, cause?: unknown) {
    super("lock_lost", `silt: lock ${JSON.stringify(key)} was lost while held${cause instanceof Error ? `: ${cause.message}` : ""}`, 409);
    this.name = "SiltLockLostError";
  }
}

/**
 * acquire() waited maxWaitMs and another holder kept the lock: code
 * "lock_timeout", with the lockKey and waitedMs a host's lock-timeout
 * handling reads (its lock conformance checks the three by name).
 */
export class SiltLockTimeoutError extends SiltError {
  constructor(readonly lockKey: string, readonly waitedMs: number, cause?: unknown) {
    super("lock_timeout", cause instanceof Error ? cause.message : `silt: lock ${JSON.stringify(lockKey)} is held by another holder (waited ${waitedMs} ms)`, 409);
    this.name = "SiltLockTimeoutError";
  }
}

export class ServiceLock {
  #lease: Lease | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #lost: unknown;
  #hold: AbortController | undefined;
  #lastLoss: SiltLockLostError | undefined;

  constructor(readonly client: SiltClient, readonly key: string, readonly opts: ServiceLockOptions = {}) {}

  /**
   * Takes the lock, waiting up to maxWaitMs (default 60 s) for a holder.
   * The signal ends the wait (connecting included): the service gives up
   * its attempt and the call rejects with the signal's reason.
   */
  async acquire(o: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.#lease) return;
    const ttlMs = this.opts.ttlMs ?? 30_000;
    const start = Date.now();
    let lease: Lease;
    try {
      lease = await this.client.acquire(this.key, {
        ttlMs,
        maxWaitMs: this.opts.maxWaitMs ?? 60_000,
        holder: this.opts.holder,
        pid: this.opts.pid ?? process.pid,
        hostname: this.opts.hostname ?? hostname(),
      }, { signal: o.signal });
    } catch (e) {
      if (e instanceof SiltError && e.code === "lock_timeout" && !(e instanceof SiltLockTimeoutError)) {
        throw new SiltLockTimeoutError(this.key, Date.now() - start, e);
      }
      throw e;
    }
    this.#lease = lease;
    this.#lost = undefined;
    this.#lastLoss = undefined;
    this.#hold = new AbortController();
    const hold = this.#hold;
    this.#timer = setInterval(() => {
      this.client.heartbeat(lease.lease).catch((e) => {
        // Lost or unreachable: the holder's signal says so now, release
        // reports it.
        if (this.#lease !== lease) return;
        this.#lost = e;
        this.#stop();
        hold.abort(new SiltLockLostError(this.key, e));
      });
    }, Math.max(1, Math.floor(ttlMs / 3)));
    unrefTimer(this.#timer);
  }

  /**
   * Aborted when the lease is lost while held (the reason is a
   * SiltLockLostError); undefined when not held.
   */
  get signal(): AbortSignal | undefined {
    return this.#hold?.signal;
  }

  /**
   * The loss of the last hold (force-released, or taken over after missed
   * heartbeats) as a SiltLockLostError, kept after release() until the
   * next acquire; undefined when the hold was kept to its end.
   */
  get lost(): SiltLockLostError | undefined {
    return this.#lastLoss;
  }

  /**
   * Frees the lock; idempotent. After a take-over it frees nothing (the
   * new holder keeps the lock) and returns quietly, as the host's own
   * locks do; the loss shows in signal (aborted), lost and inspect(). With
   * throwOnLoss it throws SiltLockLostError instead: the critical section
   * was not protected to its end.
   */
  async release(): Promise<void> {
    const lease = this.#lease;
    const lost = this.#lost;
    this.#stop();
    this.#lease = undefined;
    this.#lost = undefined;
    if (!lease) return;
    let loss: SiltLockLostError | undefined;
    if (lost !== undefined) {
      loss = new SiltLockLostError(this.key, lost);
    } else {
      try {
        await this.client.release(lease.lease);
      } catch (e) {
        if (!(e instanceof SiltError && e.code === "lock_lost")) throw e;
        loss = new SiltLockLostError(this.key, e);
      }
    }
    if (loss === undefined) return;
    this.#lastLoss = loss;
    this.#hold?.abort(loss);
    if (this.opts.throwOnLoss) throw loss;
  }

  /**
   * Runs fn under the lock and releases it however fn ends, returning fn's
   * result. fn gets a signal that aborts if the lease is lost meanwhile
   * (lost says so afterwards); with throwOnLoss a lost lease makes
   * withLock reject with SiltLockLostError even if fn completed.
   */
  async withLock<T>(fn: (signal: AbortSignal) => Promise<T> | T, o: { signal?: AbortSignal } = {}): Promise<T> {
    await this.acquire(o);
    let out: T;
    try {
      out = await fn(this.#hold!.signal);
    } catch (e) {
      try {
        await this.release();
      } catch (re) {
        if (re instanceof SiltLockLostError) throw re;
      }
      throw e;
    }
    await this.release();
    return out;
  }

  /** The current holder, or null when the lock is free. */
  async inspect(): Promise<LockInfo | null> {
    const i = await this.client.inspect(this.key);
    return i.held ? i : null;
  }

  /** Frees the lock only if it is held under nonce. */
  forceRelease(nonce: string): Promise<boolean> {
    return this.client.forceRelease(this.key, nonce);
  }

  /** The fencing token of the current hold, for commits. */
  get token(): number | undefined {
    return this.#lease?.token;
  }

  /** The fence of the current hold (pass it to a push or commit); undefined when not held. */
  get fence(): { key: string; token: number } | undefined {
    return this.#lease ? { key: this.#lease.key, token: this.#lease.token } : undefined;
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

// A heartbeat must not keep a host's process alive on its own.
function unrefTimer(t: unknown): void {
  const deno = (globalThis as { Deno?: { unrefTimer?: (id: number) => void } }).Deno;
  if (typeof t === "number") deno?.unrefTimer?.(t);
  else (t as { unref?: () => void })?.unref?.();
}
