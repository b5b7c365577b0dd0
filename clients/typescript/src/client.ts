// Typed calls for silt serve's API v1 (serve/API.md in the repository).

import { type Endpoint, send } from "./transport.ts";

/** Files by outcome, as the library's Stats reports them. */
export interface FileStats {
  downloaded: number;
  uploaded: number;
  deleted: number;
  removed: number;
  unchanged: number;
  conflicts: number;
}

/** What one operation did. */
export interface Stats {
  op: string;
  seq: number;
  files: FileStats;
  bytes: { down: number; up: number };
  requests: { get: number; put: number; list: number; delete: number; stat: number };
  local: { examined: number };
  phases: { name: string; ms: number }[];
  ms: number;
  conflicts?: { path: string; reason: string }[];
}

/** The lock a commit is made under (fencing). */
export interface Fence {
  key: string;
  token: number;
}

export interface PullOptions {
  scope?: string[];
  metadataOnly?: boolean;
}

export interface PushOptions {
  paths?: string[];
  all?: boolean;
  maxDelete?: number;
  dryRun?: boolean;
  fence?: Fence;
}

export interface Prepared {
  /** The prepared push; opaque, pass it to commit. */
  manifest: unknown;
  files: number;
  stats: Stats;
}

/** A conflict the cache remembers until a sync or resolve settles it. */
export interface ConflictRecord {
  path: string;
  reason: string;
  seq: number;
  op: string;
  at: string;
}

export interface Status {
  dirty: string[];
  overflow: boolean;
  bulk: boolean;
  seen_seq: number;
  remote_seq: number;
  remote_moved: boolean;
  conflicts?: ConflictRecord[] | null;
  lazy?: number;
}

/** How resolve settles a conflict: the local copy wins (pushed next), or the committed one replaces it. */
export type Keep = "local" | "remote";

export interface ResolveOptions {
  keep: Keep;
  /** Files or directories; a directory settles every conflict under it. */
  paths?: string[];
  /** Every conflict status lists. */
  all?: boolean;
}

export interface Preview {
  new: number;
  changed: number;
  deleted: number;
  total: number;
}

export interface Info {
  api: number;
  dir: string;
  root: string;
  namespace?: string;
  pid: number;
}

export type JobState = "running" | "succeeded" | "failed" | "canceled";

export interface Job {
  id: string;
  op: string;
  state: JobState;
  startedAt: string;
  finishedAt?: string;
  progress: { files: number; totalFiles: number; bytes: number };
  result?: unknown;
  error?: { code: string; message: string };
}

export interface Lease {
  lease: string;
  key: string;
  token: number;
  nonce: string;
  ttlMs: number;
  held: boolean;
}

export interface LockInfo {
  held: boolean;
  holder?: string;
  hostname?: string;
  pid?: number;
  acquiredAt?: string;
  ttlMs?: number;
  nonce?: string;
  token?: number;
}

export interface AcquireOptions {
  ttlMs?: number;
  /** 0 (default): try once; -1: the library's default wait. */
  maxWaitMs?: number;
  holder?: string;
}

/** Stable error codes of the API. */
export type ErrorCode =
  | "bad_request" | "unauthorized" | "not_found" | "invalid_path" | "too_many_deletes"
  | "stale_push" | "conflict" | "fenced" | "contention" | "busy" | "lock_timeout"
  | "lock_lost" | "not_supported" | "newer_format" | "corrupt_index" | "namespace_taken"
  | "canceled" | "timeout" | "unavailable" | "internal";

/** An error the service answered with; branch on code, never on message. */
export class SiltError extends Error {
  constructor(readonly code: ErrorCode | string, message: string, readonly status: number) {
    super(message);
    this.name = "SiltError";
  }
}

/** Options every call takes. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** A client of one silt serve. */
export class SiltClient {
  constructor(readonly endpoint: Endpoint) {}

  /** A client for the service on a Unix socket. */
  static unix(socketPath: string): SiltClient {
    return new SiltClient({ socketPath });
  }

  /** A client for the service on 127.0.0.1:PORT with a bearer token. */
  static tcp(address: string, token: string): SiltClient {
    return new SiltClient({ address, token });
  }

  /** A client for the service owning dir (its socket, DIR/.silt/serve.sock). */
  static async forDir(dir: string): Promise<SiltClient> {
    return SiltClient.unix(await socketPathFor(dir));
  }

  async call<T>(method: string, path: string, body?: unknown, opts?: CallOptions): Promise<T> {
    const r = await send(this.endpoint, method, path, body, opts?.signal);
    let v: unknown;
    try {
      v = r.body === "" ? {} : JSON.parse(r.body);
    } catch {
      throw new SiltError("internal", `silt: ${path}: HTTP ${r.status}: ${r.body.trim()}`, r.status);
    }
    if (r.status >= 300) {
      const e = (v as { error?: { code: string; message: string } }).error;
      if (!e) throw new SiltError("internal", `silt: ${path}: HTTP ${r.status}`, r.status);
      throw new SiltError(e.code, e.message, r.status);
    }
    return v as T;
  }

  info(o?: CallOptions): Promise<Info> {
    return this.call("GET", "/v1/info", undefined, o);
  }
  pull(opts: PullOptions = {}, o?: CallOptions): Promise<Stats> {
    return this.call("POST", "/v1/pull", opts, o);
  }
  push(opts: PushOptions = {}, o?: CallOptions): Promise<Stats> {
    return this.call("POST", "/v1/push", opts, o);
  }
  prepare(opts: PushOptions = {}, o?: CallOptions): Promise<Prepared> {
    return this.call("POST", "/v1/prepare", opts, o);
  }
  commit(manifest: unknown, fence?: Fence, o?: CallOptions): Promise<Stats> {
    return this.call("POST", "/v1/commit", { manifest, fence }, o);
  }
  async markDirty(paths: string[], o?: CallOptions): Promise<void> {
    await this.call("POST", "/v1/dirty", { paths }, o);
  }
  async markAllDirty(o?: CallOptions): Promise<void> {
    await this.call("POST", "/v1/dirty", { all: true }, o);
  }
  status(remote = false, o?: CallOptions): Promise<Status> {
    return this.call("POST", "/v1/status", { remote }, o);
  }
  preview(o?: CallOptions): Promise<Preview> {
    return this.call("POST", "/v1/preview", {}, o);
  }
  hydrate(paths: string[], o?: CallOptions): Promise<{ found: boolean[]; stats: Stats }> {
    return this.call("POST", "/v1/hydrate", { paths }, o);
  }

  /** Settles conflicts (POST /v1/resolve); with keep "local", push the paths next. */
  resolve(opts: ResolveOptions, o?: CallOptions): Promise<Stats> {
    return this.call("POST", "/v1/resolve", opts, o);
  }

  /** Starts an operation ("pull", "push", "prepare", "commit", "status", "preview", "hydrate", "resolve", "lock/acquire") as a job. */
  start(op: string, body: object = {}, o?: CallOptions): Promise<Job> {
    return this.call("POST", `/v1/${op}`, { ...body, async: true }, o);
  }
  job(id: string, o?: CallOptions): Promise<Job> {
    return this.call("GET", `/v1/jobs/${encodeURIComponent(id)}`, undefined, o);
  }
  jobs(o?: CallOptions): Promise<{ jobs: Job[] }> {
    return this.call("GET", "/v1/jobs", undefined, o);
  }
  cancel(id: string, o?: CallOptions): Promise<Job> {
    return this.call("POST", `/v1/jobs/${encodeURIComponent(id)}/cancel`, {}, o);
  }
  /** Polls a job every intervalMs until it is no longer running. */
  async wait(id: string, intervalMs = 50, o?: CallOptions): Promise<Job> {
    for (;;) {
      const j = await this.job(id, o);
      if (j.state !== "running") return j;
      await new Promise((r) => setTimeout(r, intervalMs));
      o?.signal?.throwIfAborted();
    }
  }

  acquire(key: string, opts: AcquireOptions = {}, o?: CallOptions): Promise<Lease> {
    return this.call("POST", "/v1/lock/acquire", { key, ...opts }, o);
  }
  heartbeat(lease: string, o?: CallOptions): Promise<Lease> {
    return this.call("POST", "/v1/lock/heartbeat", { lease }, o);
  }
  async release(lease: string, o?: CallOptions): Promise<void> {
    await this.call("POST", "/v1/lock/release", { lease }, o);
  }
  inspect(key: string, o?: CallOptions): Promise<LockInfo> {
    return this.call("POST", "/v1/lock/inspect", { key }, o);
  }
  async forceRelease(key: string, nonce: string, o?: CallOptions): Promise<boolean> {
    const r = await this.call<{ released: boolean }>("POST", "/v1/lock/force-release", { key, nonce }, o);
    return r.released;
  }

  /** Reads a control-plane record; null when there is none. */
  async controlGet(key: string, o?: CallOptions): Promise<Uint8Array | null> {
    try {
      const r = await this.call<{ data?: string }>("POST", "/v1/control/get", { key }, o);
      return fromBase64(r.data ?? "");
    } catch (e) {
      if (e instanceof SiltError && e.code === "not_found") return null;
      throw e;
    }
  }
  async controlPut(key: string, data: Uint8Array, o?: CallOptions): Promise<void> {
    await this.call("POST", "/v1/control/put", { key, data: toBase64(data) }, o);
  }
  async controlPutIfAbsent(key: string, data: Uint8Array, o?: CallOptions): Promise<boolean> {
    const r = await this.call<{ created?: boolean }>("POST", "/v1/control/put-if-absent", { key, data: toBase64(data) }, o);
    return r.created === true;
  }
  async controlDelete(key: string, o?: CallOptions): Promise<void> {
    await this.call("POST", "/v1/control/delete", { key }, o);
  }
  async controlList(prefix: string, o?: CallOptions): Promise<string[]> {
    const r = await this.call<{ keys?: string[] }>("POST", "/v1/control/list", { prefix }, o);
    return r.keys ?? [];
  }
}

function toBase64(b: Uint8Array): string {
  let s = "";
  for (const c of b) s += String.fromCharCode(c);
  return btoa(s);
}

function fromBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The longest socket path every platform accepts (as the Go side). */
const maxSocketPath = 103;

/**
 * The socket of the service owning dir, computed as the Go side does:
 * DIR/.silt/serve.sock, or, when too long, silt-<hash>.sock in the
 * temporary directory.
 */
export async function socketPathFor(dir: string): Promise<string> {
  const path = await import("node:path");
  const fs = await import("node:fs");
  const os = await import("node:os");
  let abs = path.resolve(dir);
  try {
    abs = fs.realpathSync(abs);
  } catch { /* not there yet: the service would fail to start, the connect reports it */ }
  const p = path.join(abs, ".silt", "serve.sock");
  if (new TextEncoder().encode(p).byteLength <= maxSocketPath) return p;
  const sum = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(abs)));
  const hex = Array.from(sum.subarray(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
  return path.join(os.tmpdir(), `silt-${hex}.sock`);
}
