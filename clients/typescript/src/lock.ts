// A DistributedLock (the host's lock shape) held through silt serve: the
// service keeps the lock object alive; this side heartbeats the service
// every ttl/3 so that, if this process dies, the service lets the lock go.

import { type Lease, type LockInfo, SiltClient } from "./client.ts";

export interface ServiceLockOptions {
  ttlMs?: number;
  maxWaitMs?: number;
  holder?: string;
}

export class ServiceLock {
  #lease: Lease | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #lost: unknown;

  constructor(readonly client: SiltClient, readonly key: string, readonly opts: ServiceLockOptions = {}) {}

  /** Takes the lock, waiting up to maxWaitMs (default 60 s) for a holder. */
  async acquire(): Promise<void> {
    if (this.#lease) return;
    const ttlMs = this.opts.ttlMs ?? 30_000;
    const lease = await this.client.acquire(this.key, { ttlMs, maxWaitMs: this.opts.maxWaitMs ?? 60_000, holder: this.opts.holder });
    this.#lease = lease;
    this.#lost = undefined;
    this.#timer = setInterval(() => {
      this.client.heartbeat(lease.lease).catch((e) => {
        // Lost or unreachable: the next release or heartbeat reports it.
        this.#lost = e;
        this.#stop();
      });
    }, Math.max(1, Math.floor(ttlMs / 3)));
  }

  /** Frees the lock; idempotent. */
  async release(): Promise<void> {
    const lease = this.#lease;
    this.#stop();
    this.#lease = undefined;
    if (lease && this.#lost === undefined) await this.client.release(lease.lease);
  }

  /** Runs fn under the lock and releases it however fn ends. */
  async withLock<T>(fn: () => Promise<T> | T): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      await this.release();
    }
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

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
