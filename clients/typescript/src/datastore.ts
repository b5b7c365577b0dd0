// The host datastore module: the `datastore` export a host loads by
// configuration ({type, name, description, configSchema, createProvider}),
// whose provider gives the host's lock, verifier, datastore path, sync
// service and namespace registration, all through silt serve: a bucket
// service for locks, health and namespaces, and a cache service for the
// sync service (both started on demand, exiting with this process).

import { join } from "node:path";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { type Health, type LockInfo, SiltClient } from "./client.ts";
import { type AdapterOptions, hostLayout, SiltSyncService } from "./adapter.ts";
import { openBucket, openDir, type ServiceOptions } from "./lifecycle.ts";
import { ServiceLock } from "./lock.ts";

/**
 * The files that never cross the sync boundary (host-contract.md §2.5), as
 * gitignore-syntax rules: the host's own bookkeeping in the cache.
 */
export const hostInternalExcludes: readonly string[] = [
  "/.datastore-index.json",
  "/.push-queue.json",
  ".datastore.lock",
  "/.datastore-sync-state.json",
  "/_index/",
  "/_control/",
  ".lock",
  ".namespace.json",
  "_catalog.db*",
];

/** The module's configuration. */
export interface SiltDatastoreConfig {
  /** The bucket URL (file:///abs, s3://bucket/prefix, gs://bucket, ...). */
  url: string;
  /** The namespace this repository syncs ("" or absent: the whole bucket). */
  namespace?: string;
  /** The cache directory; absent: the host's default (resolveCachePath returns undefined). */
  cachePath?: string;
  /** The silt binary (default $SILT_BIN, else silt on PATH). */
  siltBin?: string;
  /** More exclude rules, on top of the host's internal files. */
  exclude?: string[];
  /** Adopt a cache directory that already holds files (default true). */
  adopt?: boolean;
  /** Services exit after this long idle (default 10 min). */
  idleExitMs?: number;
  /**
   * Where the passphrase of an encrypted bucket comes from: a file holding
   * it (silt --password-file). Absent: $SILT_PASSWORD in the host's
   * environment, or none for a plain bucket. Never the passphrase itself.
   */
  passwordFile?: string;
  /** Encrypt the bucket when the first cache binds it (silt init --encrypt); it must hold no index yet. */
  encrypt?: boolean;
  /**
   * The host's own key, read by the host from this config (swamp's
   * resolve_datastore.ts: `config.hydrationStrategy`, "lazy" makes its
   * pulls metadata-only); accepted so the host's config passes, unused here.
   */
  hydrationStrategy?: "full" | "lazy";
}

/** The result of configSchema.safeParse, in the shape hosts read (zod's). */
export type SafeParse<T> =
  | { success: true; data: T }
  | { success: false; error: { issues: { path: string[]; message: string }[]; message: string } };

/**
 * A schema with safeParse and parse, without a runtime dependency. `_def`
 * is there because the host's loader accepts a configSchema only when it
 * is zod-like: `_def` present and parse and safeParse callable (swamp's
 * isZodSchemaLike, src/domain/zod_compat.ts); without it the whole module
 * fails to load ("configSchema: Invalid input").
 */
export interface ConfigSchema<T> {
  readonly _def: { readonly typeName: string; readonly description: string };
  safeParse(v: unknown): SafeParse<T>;
  parse(v: unknown): T;
}

const nsPattern = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export const configSchema: ConfigSchema<SiltDatastoreConfig> = {
  _def: { typeName: "SiltDatastoreConfig", description: "silt datastore config (hand-written, zod-compatible safeParse/parse)" },
  safeParse(v: unknown): SafeParse<SiltDatastoreConfig> {
    const issues: { path: string[]; message: string }[] = [];
    const bad = (path: string, message: string) => issues.push({ path: [path], message });
    if (v === null || typeof v !== "object" || Array.isArray(v)) {
      bad("", "expected an object");
    } else {
      const o = v as Record<string, unknown>;
      const known = new Set(["url", "namespace", "cachePath", "siltBin", "exclude", "adopt", "idleExitMs", "hydrationStrategy", "passwordFile", "encrypt"]);
      for (const k of Object.keys(o)) if (!known.has(k)) bad(k, "unknown key");
      if (typeof o.url !== "string" || !/^[a-z][a-z0-9+.-]*:\/\/./i.test(o.url)) bad("url", "expected a bucket URL (scheme://...)");
      if (o.namespace !== undefined && (typeof o.namespace !== "string" || (o.namespace !== "" && !nsPattern.test(o.namespace)))) {
        bad("namespace", "expected a namespace name (letters, digits, . _ -)");
      }
      for (const k of ["cachePath", "siltBin", "passwordFile"]) {
        if (o[k] !== undefined && (typeof o[k] !== "string" || o[k] === "")) bad(k, "expected a non-empty string");
      }
      if (o.exclude !== undefined && (!Array.isArray(o.exclude) || o.exclude.some((p) => typeof p !== "string" || p === ""))) {
        bad("exclude", "expected a list of patterns");
      }
      if (o.adopt !== undefined && typeof o.adopt !== "boolean") bad("adopt", "expected a boolean");
      if (o.encrypt !== undefined && typeof o.encrypt !== "boolean") bad("encrypt", "expected a boolean");
      if (o.idleExitMs !== undefined && (typeof o.idleExitMs !== "number" || !(o.idleExitMs >= 0))) bad("idleExitMs", "expected a number >= 0");
      if (o.hydrationStrategy !== undefined && o.hydrationStrategy !== "full" && o.hydrationStrategy !== "lazy") {
        bad("hydrationStrategy", 'expected "full" or "lazy"');
      }
    }
    if (issues.length > 0) {
      return { success: false, error: { issues, message: issues.map((i) => `${i.path.join(".") || "config"}: ${i.message}`).join("; ") } };
    }
    return { success: true, data: v as SiltDatastoreConfig };
  },
  parse(v: unknown): SiltDatastoreConfig {
    const r = configSchema.safeParse(v);
    if (!r.success) throw new TypeError(`silt datastore config: ${r.error.message}`);
    return r.data;
  },
};

/** The host's LockOptions. */
export interface LockOptions {
  lockKey?: string;
  ttlMs?: number;
  retryIntervalMs?: number;
  maxWaitMs?: number;
}

/** The host's LockInfo; acquiredAt is the holder's last sign of life (see HostLock.inspect). */
export interface HostLockInfo {
  holder: string;
  hostname: string;
  pid: number;
  acquiredAt: string;
  ttlMs: number;
  nonce?: string;
  /** When the lock was first taken (acquiredAt is the last heartbeat). */
  firstAcquiredAt?: string;
  heartbeatAt?: string;
  token?: number;
}

/** The host's DistributedLock over a ServiceLock. */
export class HostLock {
  readonly #lock: ServiceLock;
  constructor(lock: ServiceLock) {
    this.#lock = lock;
  }
  acquire(o: { signal?: AbortSignal } = {}): Promise<void> {
    return this.#lock.acquire(o);
  }
  release(): Promise<void> {
    return this.#lock.release();
  }
  withLock<T>(fn: (signal: AbortSignal) => Promise<T> | T, o: { signal?: AbortSignal } = {}): Promise<T> {
    return this.#lock.withLock(fn, o);
  }
  /**
   * The holder, or null. The host judges a lock stale when `acquiredAt`
   * is older than its TTL; silt's acquiredAt never moves, so a holder past
   * its TTL would look dead while heartbeating. acquiredAt here is the
   * last heartbeat, and firstAcquiredAt the acquisition.
   */
  async inspect(): Promise<HostLockInfo | null> {
    const i: LockInfo | null = await this.#lock.inspect();
    if (!i) return null;
    return {
      holder: i.holder ?? "",
      hostname: i.hostname ?? "",
      pid: i.pid ?? 0,
      acquiredAt: i.heartbeatAt ?? i.acquiredAt ?? "",
      ttlMs: i.ttlMs ?? 0,
      nonce: i.nonce,
      firstAcquiredAt: i.acquiredAt,
      heartbeatAt: i.heartbeatAt,
      token: i.token,
    };
  }
  forceRelease(expectedNonce: string): Promise<boolean> {
    return this.#lock.forceRelease(expectedNonce);
  }
  /** The loss of the last hold (see ServiceLock.lost): release() itself is quiet. */
  get lost(): Error | undefined {
    return this.#lock.lost;
  }
  /** The signal of the current hold: aborted when the lease is lost. */
  get signal(): AbortSignal | undefined {
    return this.#lock.signal;
  }
  /** The fence of the current hold, for pushChanged({fence}). */
  get fence(): { key: string; token: number } | undefined {
    return this.#lock.fence;
  }
}

/** The host's DatastoreHealthResult. */
export interface HealthResult {
  healthy: boolean;
  message: string;
  latencyMs: number;
  datastoreType: string;
  details?: Record<string, string>;
}

export const DATASTORE_TYPE = "@siltsync/silt";

/** The provider createProvider returns (host-contract.md §1.1). */
export class SiltDatastoreProvider {
  readonly config: SiltDatastoreConfig;
  #bucket: Promise<SiltClient> | undefined;

  constructor(config: SiltDatastoreConfig) {
    this.config = configSchema.parse(config);
  }

  #service(): ServiceOptions {
    return { siltBin: this.config.siltBin, idleExitMs: this.config.idleExitMs, passwordFile: this.config.passwordFile };
  }

  /** The bucket service's client (locks, health, namespaces), started on first use. */
  bucketClient(): SiltClient {
    // A lazily started client: the first call starts (or finds) the service.
    return new SiltClient(async (o) => {
      this.#bucket ??= openBucket({ url: this.config.url, namespace: this.config.namespace || undefined, ...this.#service(), signal: o?.signal })
        .catch((e) => {
          this.#bucket = undefined;
          throw e;
        });
      const c = await this.#bucket;
      return c.endpoint;
    });
  }

  #lockClient: SiltClient | undefined;

  /** A lock on key: the host's keys, relative to the bucket; a leading "{ns}/" is the namespace's own. */
  createLock(_datastorePath: string, options: LockOptions = {}): HostLock {
    this.#lockClient ??= this.bucketClient();
    let key = options.lockKey ?? ".datastore.lock";
    const ns = this.config.namespace ?? "";
    if (ns !== "" && key.startsWith(`${ns}/`)) key = key.slice(ns.length + 1);
    return new HostLock(new ServiceLock(this.#lockClient, key, { ttlMs: options.ttlMs, maxWaitMs: options.maxWaitMs }));
  }

  /** The verifier: the read-only health check (one read of the index, no write). */
  createVerifier(): { verify(): Promise<HealthResult> } {
    this.#lockClient ??= this.bucketClient();
    const c = this.#lockClient;
    return {
      verify: async (): Promise<HealthResult> => {
        const start = performance.now();
        try {
          const h: Health = await c.health();
          return { healthy: h.healthy, message: h.message, latencyMs: Math.max(0, h.latencyMs), datastoreType: DATASTORE_TYPE, details: { ...h.details, store: h.datastoreType } };
        } catch (e) {
          return {
            healthy: false,
            message: `silt service unreachable: ${e instanceof Error ? e.message : String(e)}`,
            latencyMs: Math.max(0, performance.now() - start),
            datastoreType: DATASTORE_TYPE,
          };
        }
      },
    };
  }

  resolveDatastorePath(repoDir: string): string {
    return join(repoDir, ".swamp");
  }

  resolveCachePath(_repoDir: string): string | undefined {
    return this.config.cachePath;
  }

  /**
   * The sync service over the cache at cachePath (bound to the bucket and
   * namespace on first use, its service started then). The host's internal
   * files (hostInternalExcludes) never cross: they are passed as excludes
   * and written to the cache's .siltignore.
   */
  createSyncService(_repoDir: string, cachePath: string, opts: AdapterOptions = {}): SiltSyncService {
    const ns = this.config.namespace ?? "";
    const exclude = [...hostInternalExcludes, ...(this.config.exclude ?? [])];
    let opened: Promise<SiltClient> | undefined;
    const client = new SiltClient(async (o) => {
      opened ??= (async () => {
        writeSiltignore(join(cachePath, ns), exclude);
        return await openDir({ dir: cachePath, url: this.config.url, namespace: ns || undefined, adopt: this.config.adopt ?? true, encrypt: this.config.encrypt, ...this.#service(), signal: o?.signal });
      })().catch((e) => {
        opened = undefined;
        throw e;
      });
      return (await opened).endpoint;
    });
    this.#lockClient ??= this.bucketClient();
    return new SiltSyncService(client, { layout: hostLayout, exclude, foreign: this.#lockClient, ...opts });
  }

  async registerNamespace(_datastorePath: string, namespace: string, repoId: string): Promise<void> {
    this.#lockClient ??= this.bucketClient();
    await this.#lockClient.registerNamespace(namespace, repoId);
  }

  async listNamespaces(_datastorePath: string): Promise<string[]> {
    this.#lockClient ??= this.bucketClient();
    return (await this.#lockClient.namespaces()).map((n) => n.namespace);
  }
}

const siltignoreBegin = "# silt datastore module: the host's internal files (host-contract §2.5)";

// writeSiltignore puts the rules in the cache root's .siltignore, which a
// silt with excludes reads for every walk, whatever the caller passes.
function writeSiltignore(root: string, rules: readonly string[]): void {
  mkdirSync(root, { recursive: true });
  const p = join(root, ".siltignore");
  const cur = existsSync(p) ? readFileSync(p, "utf8") : "";
  if (cur.includes(siltignoreBegin)) return;
  writeFileSync(p, `${cur}${cur === "" || cur.endsWith("\n") ? "" : "\n"}${siltignoreBegin}\n${rules.join("\n")}\n`);
}

/** The module the host loads: `import { datastore } from "@siltsync/client/datastore"`. */
export const datastore = {
  // A string literal, not DATASTORE_TYPE: the host indexes extension files
  // without importing them, reading the type from the source with a regex
  // that takes the first quoted string after the key (swamp's
  // datastore_kind_adapter.ts extractTypeFromSource; so no quoted example
  // of the key in this comment either); an identifier leaves the file out
  // of its catalog.
  type: "@siltsync/silt",
  name: "silt",
  description: "silt: a cache directory kept in sync with an object store (S3, GCS, file://) through silt serve",
  configSchema,
  createProvider(config: SiltDatastoreConfig): SiltDatastoreProvider {
    return new SiltDatastoreProvider(config);
  },
};

export { SiltConflictError, SiltError } from "./client.ts";
// The lock errors a host sees from createLock(...).acquire() and a lost hold, checkable by class.
export { SiltLockLostError, SiltLockTimeoutError } from "./lock.ts";
