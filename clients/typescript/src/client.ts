// Typed calls for silt serve's API v1 (serve/API.md in the repository).

import { EventStream, type ProgressEvent, type RemoteChangeEvent } from "./events.ts";
import { type Endpoint, send, sendLines } from "./transport.ts";

/** Files by outcome, as the library's Stats reports them (syncer.FileStats). */
export interface FileStats {
  downloaded: number;
  uploaded: number;
  /** Pushed files whose bytes the store already held: nothing was sent. */
  deduplicated: number;
  /** Remote deletions. */
  deleted: number;
  /** Local removals. */
  removed: number;
  unchanged: number;
  conflicts: number;
  /** Paths an exclude rule kept out (services with excludes). */
  excluded?: number;
}

/** A path where the local and remote copies both changed; silt kept the local copy. */
export interface Conflict {
  path: string;
  reason: string;
}

/** What happened to one file (syncer.Change). */
export interface Change {
  path: string;
  action: string;
  bytes?: number;
  reason?: string;
  dry_run?: boolean;
}

/** The commit that carried a push (syncer.CommitStats). */
export interface CommitStats {
  /** Compare-and-swaps of the manifest sent (0 when nothing needed writing). */
  attempts: number;
  /** Pushes merged into that one commit. */
  batch: number;
  /** Built on another commit of the cache while that one's log entry was in flight (format 4). */
  pipelined?: boolean;
}

/** What one operation did (syncer.Stats, FORMAT.md "Operation statistics"). */
export interface Stats {
  op: string;
  /** The manifest sequence seen (or written). */
  seq: number;
  files: FileStats;
  bytes: { down: number; up: number };
  requests: { get: number; put: number; list: number; delete: number; stat: number };
  local: { examined: number };
  phases: { name: string; ms: number }[];
  ms: number;
  /** The paths counted in files.conflicts, each kept as the local copy has it. */
  conflicts?: Conflict[];
  /** Each file's outcome in completion order, up to the service's bound. */
  changes?: Change[];
  changes_omitted?: number;
  /** The commit of a push; absent when it committed nothing. */
  commit?: CommitStats;
}

/** The lock a commit is made under (fencing). */
export interface Fence {
  key: string;
  token: number;
}

export interface PullOptions {
  scope?: string[];
  metadataOnly?: boolean;
  /** gitignore-syntax rules kept out of this pull (sent as the wire option "exclude"). */
  exclude?: string[];
}

export interface PushOptions {
  paths?: string[];
  all?: boolean;
  maxDelete?: number;
  dryRun?: boolean;
  fence?: Fence;
  /** gitignore-syntax rules kept out of this push (sent as the wire option "exclude"). */
  exclude?: string[];
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

/** A local copy silt replaced and kept (resolve keep "remote", a pull's conflict); restore puts it back. */
export interface BackupRecord {
  path: string;
  /** The kept copy, relative to the cache directory (under .silt/kept/). */
  copy: string;
  reason: string;
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
  /** A pull failed since the last whole pull that succeeded: what it installed stays, but the cache may not hold the snapshot. */
  pull_incomplete?: boolean;
  conflicts?: ConflictRecord[] | null;
  lazy?: number;
  backups?: BackupRecord[] | null;
}

/** How resolve settles a conflict: the local copy wins (pushed next), or the committed one replaces it. */
export type Keep = "local" | "remote";

export interface ResolveOptions {
  keep: Keep;
  /** Files or directories; a directory settles every conflict under it. */
  paths?: string[];
  /** Every conflict status lists. */
  all?: boolean;
  /**
   * With keep "remote": replace a path that has unpushed edits and no
   * remembered conflict too (refused otherwise); a backup is kept.
   */
  force?: boolean;
}

export interface RestoreOptions {
  /** Files whose newest kept copy (status lists them under backups) goes back in place, in order. */
  paths: string[];
}

export interface Preview {
  new: number;
  changed: number;
  deleted: number;
  total: number;
}

export interface Info {
  api: number;
  dir?: string;
  root?: string;
  namespace?: string;
  pid: number;
  /** "bucket" for a bucket service (no cache directory). */
  mode?: string;
}

/** GET /v1/health: the host's DatastoreHealthResult, from one read and no write. */
export interface Health {
  healthy: boolean;
  message: string;
  latencyMs: number;
  datastoreType: string;
  details: Record<string, string>;
  requests: { get: number; put: number; list: number; stat: number; total: number };
}

/** One entry of the service's event stream (POST /v1/events). */
export interface SiltEvent {
  seq: number;
  type: "progress" | "op" | "remote";
  at: string;
  op?: string;
  job?: string;
  phase?: string;
  path?: string;
  bytes?: number;
  done?: number;
  total?: number;
  doneBytes?: number;
  totalBytes?: number;
  state?: string;
  remoteSeq?: number;
  seenSeq?: number;
  foreign?: boolean;
}

export interface EventsReply {
  events: SiltEvent[];
  next: number;
  dropped?: number;
}

/** A namespace's registration in the bucket. */
export interface NamespaceInfo {
  namespace: string;
  owner: string;
  registered_at: string;
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
  /** The holder's last heartbeat (acquiredAt until the first); acquiredAt never moves. */
  heartbeatAt?: string;
  ttlMs?: number;
  nonce?: string;
  token?: number;
}

export interface AcquireOptions {
  ttlMs?: number;
  /** 0 (default): try once; -1: the library's default wait. */
  maxWaitMs?: number;
  holder?: string;
  /** The holder's process and machine, recorded in the lock (default: the service's). */
  pid?: number;
  hostname?: string;
}

/** Stable error codes of the API. */
export type ErrorCode =
  | "bad_request" | "unauthorized" | "not_found" | "no_backup" | "invalid_path" | "too_many_deletes"
  | "stale_push" | "conflict" | "fenced" | "contention" | "busy" | "lock_timeout"
  | "lock_lost" | "not_supported" | "newer_format" | "older_format" | "migrate_required" | "corrupt_index" | "namespace_taken"
  | "canceled" | "timeout" | "unavailable" | "internal";

/** An error the service answered with; branch on code, never on message. */
export class SiltError extends Error {
  constructor(readonly code: ErrorCode | string, message: string, readonly status: number) {
    super(message);
    this.name = "SiltError";
  }
}

/**
 * A push or pull kept conflicts: both copies of each path changed, silt
 * kept the local one and committed nothing for it. The stats are the
 * operation's; settle with client.resolve, then push again.
 */
export class SiltConflictError extends SiltError {
  readonly conflicts: Conflict[];
  constructor(readonly stats: Stats) {
    const list = stats.conflicts ?? [];
    const shown = list.slice(0, 5).map((c) => `${c.path} (${c.reason})`).join(", ");
    super("conflict", `silt ${stats.op}: ${stats.files.conflicts} conflict(s): ${shown}${list.length > 5 ? ", ..." : ""}`, 409);
    this.name = "SiltConflictError";
    this.conflicts = list;
  }
}

/** Throws SiltConflictError when st counts a conflict; returns st otherwise. */
export function checkConflicts(st: Stats): Stats {
  if (st.files.conflicts > 0 || (st.conflicts?.length ?? 0) > 0) throw new SiltConflictError(st);
  return st;
}

/** What a watch does (POST /v1/watch, serve.WatchRequest); every field optional, 0 the default. */
export interface WatchOptions {
  /** How often the remote is read (one conditional request when nothing moved); default 1000, negative never. */
  pollMs?: number;
  /** How long the cache must be quiet after a write before it is pushed; default 200. */
  debounceMs?: number;
  /** Bounds how long writes that never pause delay a push; default 25 debounces. */
  maxWaitMs?: number;
  /** How often the whole cache is walked, in case file-system events were lost; default 60000, negative never. */
  walkMs?: number;
  /** Caps the backoff before a failed step is tried again; default 30000. */
  maxBackoffMs?: number;
  /** Find local changes by walks only (a file system without events). */
  noNotify?: boolean;
  /** Each push's maxDelete (0: no limit). */
  maxDelete?: number;
  exclude?: string[];
  include?: string[];
  /** Also stream the steps that changed nothing (an idle poll a second). */
  idle?: boolean;
  /** Called for every file the watch's pulls and pushes move. */
  onChange?: (c: Change) => void;
}

/** What a watch event reports (watch.Kind). */
export type WatchEventKind = "started" | "pull" | "push" | "error" | "recovered" | "stopped";

/** One step of a watch, or a change of its state (watch.Event). */
export interface WatchEvent {
  kind: WatchEventKind;
  at: string;
  /** What started the step: "start", "events", "poll", "walk" or "overflow". */
  trigger?: string;
  stats?: Stats;
  /** How many of stats.conflicts an earlier event of this watch reported already. */
  reported?: number;
  /** Why the step failed; the watch retries in retryMs. */
  error?: string;
  retryMs?: number;
  failures?: number;
  /** started: directories watched for events, and whether the file system gives them. */
  dirs?: number;
  notify?: boolean;
}

/** How a watch ended: its job's id, and whether it stopped cleanly. */
export interface WatchResult {
  job?: string;
  stopped: boolean;
}

/**
 * A running watch of the served cache: its events as an async iterator
 * (one consumer), stop() to end it, done for how it ended. The watch
 * runs in the service for as long as this stream is open.
 */
export class SiltWatch implements AsyncIterable<WatchEvent> {
  readonly #abort = new AbortController();
  readonly #queue: WatchEvent[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  #stopped = false;
  #failure: unknown;
  /** Resolves when the watch ended: stopped, aborted or (rejecting) failed. */
  readonly done: Promise<WatchResult>;

  constructor(client: SiltClient, opts: WatchOptions, signal?: AbortSignal) {
    if (signal?.aborted) this.#abort.abort(signal.reason);
    else signal?.addEventListener("abort", () => this.stop(), { once: true });
    this.done = this.#pump(client, opts);
    this.done.catch(() => {}); // the failure also reaches the iterator; done need not be awaited
  }

  async #pump(client: SiltClient, opts: WatchOptions): Promise<WatchResult> {
    const { onChange, ...body } = opts;
    let result: WatchResult = { stopped: true };
    try {
      const ep = await client.endpointFor({ signal: this.#abort.signal });
      const lines = sendLines(ep, "POST", "/v1/watch", body, this.#abort.signal);
      for (;;) {
        const n = await lines.next();
        if (n.done) {
          if (n.value) throw replyError("/v1/watch", n.value.status, n.value.body);
          break;
        }
        const v = JSON.parse(n.value) as { watch?: WatchEvent; change?: Change; result?: WatchResult; error?: { code: string; message: string } };
        if (v.watch) this.#push(v.watch);
        else if (v.change) onChange?.(v.change);
        else if (v.result) result = v.result;
        else if (v.error) throw new SiltError(v.error.code, v.error.message, 200);
      }
      return result;
    } catch (e) {
      if (this.#stopped) return { job: result.job, stopped: true }; // the abort of stop() ends the stream
      this.#failure = e;
      throw e;
    } finally {
      this.#ended = true;
      this.#wake?.();
    }
  }

  #push(e: WatchEvent): void {
    this.#queue.push(e);
    this.#wake?.();
  }

  /** Ends the watch (the service stops it cleanly) and resolves once the stream closed. */
  async stop(): Promise<WatchResult> {
    if (!this.#ended) {
      this.#stopped = true;
      this.#abort.abort();
    }
    return await this.done.catch(() => ({ stopped: true }));
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    for (;;) {
      const e = this.#queue.shift();
      if (e) {
        yield e;
        continue;
      }
      if (this.#ended) {
        if (this.#failure !== undefined) throw this.#failure;
        return;
      }
      await new Promise<void>((r) => (this.#wake = r));
      this.#wake = undefined;
    }
  }
}

function replyError(path: string, status: number, body: string): SiltError {
  try {
    const e = (JSON.parse(body) as { error?: { code: string; message: string } }).error;
    if (e) return new SiltError(e.code, e.message, status);
  } catch { /* not JSON: reported below */ }
  return new SiltError("internal", `silt: ${path}: HTTP ${status}: ${body.trim()}`, status);
}

/** Options every call takes. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Where a client finds its service: an endpoint, or a function that (re)starts one. */
export type EndpointSource = Endpoint | ((o?: CallOptions) => Promise<Endpoint>);

/** A client of one silt serve. */
export class SiltClient {
  #source: EndpointSource;
  #endpoint: Endpoint | undefined;
  #pending: Promise<Endpoint> | undefined;
  /** Whether the service takes the wire option "exclude" (unknown until a call carried one). */
  excludeSupported: boolean | undefined;

  constructor(source: EndpointSource) {
    this.#source = source;
    if (typeof source !== "function") this.#endpoint = source;
  }

  /** The endpoint once known (a lazily started service has none before its first call). */
  get endpoint(): Endpoint {
    if (!this.#endpoint) throw new Error("silt: the service has not been started yet");
    return this.#endpoint;
  }

  async #resolve(o?: CallOptions, again = false): Promise<Endpoint> {
    if (this.#endpoint && !again) return this.#endpoint;
    const src = this.#source;
    if (typeof src !== "function") return src;
    this.#pending ??= src(o).finally(() => (this.#pending = undefined));
    this.#endpoint = await this.#pending;
    return this.#endpoint;
  }

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
    let ep = await this.#resolve(opts);
    let r;
    try {
      r = await send(ep, method, path, body, opts?.signal);
    } catch (e) {
      // Nothing was sent when the connect failed: a service that exited
      // (idle, or its starter's gone) is started again and the call retried.
      if (typeof this.#source !== "function" || !isConnectError(e)) throw e;
      ep = await this.#resolve(opts, true);
      r = await send(ep, method, path, body, opts?.signal);
    }
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
    return this.#withExclude("/v1/pull", opts, o);
  }
  push(opts: PushOptions = {}, o?: CallOptions): Promise<Stats> {
    return this.#withExclude("/v1/push", opts, o);
  }
  prepare(opts: PushOptions = {}, o?: CallOptions): Promise<Prepared> {
    return this.#withExclude("/v1/prepare", opts, o);
  }

  // A service built before excludes refuses the unknown field "exclude";
  // the call is then made without it (the cache's .siltignore, read by
  // services with excludes, is the other way in) and excludeSupported
  // says so.
  async #withExclude<T>(path: string, opts: { exclude?: string[] }, o?: CallOptions): Promise<T> {
    if (!opts.exclude || opts.exclude.length === 0) return this.call("POST", path, stripExclude(opts), o);
    if (this.excludeSupported === false) return this.call("POST", path, stripExclude(opts), o);
    try {
      const r = await this.call<T>("POST", path, opts, o);
      this.excludeSupported = true;
      return r;
    } catch (e) {
      if (!(e instanceof SiltError && e.code === "bad_request" && /unknown field "exclude"/.test(e.message))) throw e;
      this.excludeSupported = false;
      return this.call("POST", path, stripExclude(opts), o);
    }
  }

  #events: EventStream | undefined;
  /** The service's event stream (progress, operations, remote moves). */
  get eventStream(): EventStream {
    return (this.#events ??= new EventStream(this));
  }
  /** Calls fn for every file any operation of the service transfers; returns the unsubscribe. */
  onProgress(fn: (e: ProgressEvent) => void): () => void {
    return this.eventStream.onProgress(fn);
  }
  /** Calls fn when another writer's commit moved the remote; returns the unsubscribe. */
  onRemoteChange(fn: (e: RemoteChangeEvent) => void, o: { all?: boolean } = {}): () => void {
    return this.eventStream.onRemoteChange(fn, o);
  }
  /** Stops the event stream. */
  close(): void {
    this.#events?.close();
  }

  /** The read-only health check: one read of the manifest, no write. */
  health(o?: CallOptions): Promise<Health> {
    return this.call("GET", "/v1/health", undefined, o);
  }
  /**
   * Starts a watch of the served cache (POST /v1/watch): local writes are
   * pushed once quiet for debounceMs, the remote polled every pollMs. The
   * handle's async iterator yields its events; stop() or o.signal ends it.
   */
  watch(opts: WatchOptions = {}, o?: CallOptions): SiltWatch {
    return new SiltWatch(this, opts, o?.signal);
  }
  /** The service's endpoint, started first if the client starts its service lazily. */
  endpointFor(o?: CallOptions): Promise<Endpoint> {
    return this.#resolve(o);
  }
  /** One long poll of the event stream: events after `after`, waiting up to waitMs. */
  events(req: { after: number; waitMs?: number; remote?: boolean; tail?: boolean }, o?: CallOptions): Promise<EventsReply> {
    return this.call("POST", "/v1/events", req, o);
  }
  /** The bucket's registered namespaces. */
  async namespaces(o?: CallOptions): Promise<NamespaceInfo[]> {
    return (await this.call<{ namespaces: NamespaceInfo[] }>("POST", "/v1/namespaces", {}, o)).namespaces;
  }
  /** Claims namespace for owner (first writer wins; the same owner again is a no-op). */
  async registerNamespace(namespace: string, owner: string, o?: CallOptions): Promise<void> {
    await this.call("POST", "/v1/namespaces/register", { namespace, owner }, o);
  }
  /**
   * Reads one committed file of another namespace (undefined: the served
   * one; "": the bucket root) from the index, verified; null when absent.
   */
  async readFile(path: string, namespace?: string, o?: CallOptions): Promise<Uint8Array | null> {
    const r = await this.call<{ found: boolean; data?: string }>("POST", "/v1/read", { path, namespace }, o);
    return r.found ? fromBase64(r.data ?? "") : null;
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

  /**
   * Puts each path's newest kept copy back in place (POST /v1/restore),
   * keeping what it replaces as a backup, and marks it dirty: push next.
   * A path with nothing kept rejects with code "no_backup".
   */
  restore(opts: RestoreOptions, o?: CallOptions): Promise<Stats> {
    return this.call("POST", "/v1/restore", opts, o);
  }

  /** Starts an operation ("pull", "push", "prepare", "commit", "status", "preview", "hydrate", "resolve", "restore", "lock/acquire") as a job. */
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

function stripExclude<T extends { exclude?: string[] }>(o: T): Omit<T, "exclude"> {
  const { exclude: _, ...rest } = o;
  return rest;
}

/** Whether e is a failure to reach the socket at all (nothing was sent). */
export function isConnectError(e: unknown): boolean {
  const err = e as { code?: string; name?: string; cause?: { code?: string } };
  const code = err?.code ?? err?.cause?.code;
  return code === "ENOENT" || code === "ECONNREFUSED" || err?.name === "NotFound" || err?.name === "ConnectionRefused";
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
