// The host adapter: silt serve behind the shape of the host's datastore
// sync service (pullChanged, pushChanged, markDirty, preparePush,
// commitPush, previewPush, hydrateFile, controlPlaneStore, capabilities).

import { checkConflicts, type Fence, SiltClient, SiltError, type Stats } from "./client.ts";

/** A model as the host names it: the normalized type and the id. */
export interface ModelRef {
  modelType: string;
  modelId: string;
}

/** What the host passes to every sync call. */
export interface SyncOptions {
  signal?: AbortSignal;
  relPath?: string;
  context?: { models?: readonly ModelRef[] };
  namespace?: string;
  metadataOnly?: boolean;
  /** The lock the commit is made under (fencing): a stale token is refused ("fenced"). */
  fence?: Fence;
}

export interface SyncCapabilities {
  scopedSync: boolean;
  lazyHydration: boolean;
  namespacedSync: boolean;
  twoPhaseSync: boolean;
  previewPush: boolean;
  controlPlane: boolean;
}

export interface PushPreviewSummary {
  total: number;
  new: number;
  changed: number;
  deleted: number;
}

/** Opaque to the host: what preparePush returns and commitPush takes. */
export interface PushManifest {
  readonly silt: unknown;
  /** Files the manifest would commit (written plus removed); what commitPush returns is what it did commit. */
  readonly files: number;
}

export interface ControlPlaneStore {
  put(key: string, bytes: Uint8Array): Promise<void>;
  putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean>;
  get(key: string): Promise<Uint8Array | null>;
  delete(key: string): Promise<void>;
  list(prefix: string): Promise<string[]>;
}

/**
 * Maps a model to the silt scopes (cache-relative file or directory
 * paths) that hold its files. It is written from the host's directory
 * layout, never derived by counting path segments: types have a variable
 * number of segments and data names can be numeric.
 */
export interface ModelLayout {
  scopes(model: ModelRef): string[];
}

/**
 * The host's layout (host-contract.md §2.2): data/{type}/{id}/ holds the
 * model's versions and its latest markers. outputs/{type}/{method}/{id}-{ts}.yaml
 * and definitions-evaluated/{type}/{name}.yaml are keyed below the type by
 * method or by name, not by id, so the tightest explicit prefix that holds
 * all of a model's files there is the type's directory: the pull brings in
 * the type's other models' outputs too, never less than the model's own.
 */
export const hostLayout: ModelLayout = {
  scopes(m: ModelRef): string[] {
    const type = checkType(m.modelType);
    const id = checkSegment(m.modelId, "modelId");
    return [`data/${type}/${id}`, `outputs/${type}`, `definitions-evaluated/${type}`];
  },
};

/** Only the model's data directory, for hosts that keep nothing else per model. */
export const dataOnlyLayout: ModelLayout = {
  scopes(m: ModelRef): string[] {
    return [`data/${checkType(m.modelType)}/${checkSegment(m.modelId, "modelId")}`];
  },
};

/** A normalized type: one or more segments, each a checked segment. */
export function checkType(t: string): string {
  if (typeof t !== "string" || t === "") throw new TypeError("modelType is empty");
  return t.split("/").map((s) => checkSegment(s, `modelType ${JSON.stringify(t)}`)).join("/");
}

/** One path segment: not empty, not . or .., no slash, backslash or NUL. */
export function checkSegment(s: string, what: string): string {
  if (typeof s !== "string" || s === "" || s === "." || s === ".." || /[/\\\0]/.test(s)) {
    throw new TypeError(`${what}: ${JSON.stringify(s)} is not a valid path segment`);
  }
  return s;
}

export interface AdapterOptions {
  /** How models map to scopes; hostLayout by default. */
  layout?: ModelLayout;
  /** gitignore-syntax rules passed to every pull and push (the wire option "exclude"). */
  exclude?: string[];
  /** Reads other namespaces' files (default: the sync service's own client). */
  foreign?: SiltClient;
  /** Called with every operation's Stats (the counts the methods return come from them). */
  onStats?: (st: Stats) => void;
}

/** The host's DatastoreSyncService over one silt serve. */
export class SiltSyncService {
  readonly #client: SiltClient;
  readonly #layout: ModelLayout;
  readonly #opts: AdapterOptions;
  #namespace: Promise<string> | undefined;
  /** The Stats of the last pull, push, prepare or commit. */
  lastStats: Stats | undefined;

  constructor(client: SiltClient, opts: AdapterOptions = {}) {
    this.#client = client;
    this.#layout = opts.layout ?? hostLayout;
    this.#opts = opts;
  }

  // Every count the host sees comes from the operation's Stats, and a
  // conflict is a SiltConflictError, never a number claiming a commit.
  #settle(st: Stats): Stats {
    this.lastStats = st;
    this.#opts.onStats?.(st);
    return checkConflicts(st);
  }

  get client(): SiltClient {
    return this.#client;
  }

  capabilities(): SyncCapabilities {
    return {
      scopedSync: true,
      lazyHydration: true,
      namespacedSync: true,
      twoPhaseSync: true,
      previewPush: true,
      controlPlane: true,
    };
  }

  /** Pulls remote changes, scoped to context.models when given; returns files transferred. */
  async pullChanged(opts: SyncOptions = {}): Promise<number> {
    await this.#checkNamespace(opts.namespace);
    const scope = this.scopeOf(opts.context?.models);
    const st = await this.#client.pull({ scope, metadataOnly: opts.metadataOnly, exclude: this.#opts.exclude }, { signal: opts.signal });
    return downloaded(this.#settle(st));
  }

  /**
   * Pushes the marked changes (under opts.fence when given); returns the
   * files committed. Conflicts reject with SiltConflictError.
   */
  async pushChanged(opts: SyncOptions = {}): Promise<number> {
    await this.#checkNamespace(opts.namespace);
    const st = await this.#client.push({ fence: opts.fence, exclude: this.#opts.exclude }, { signal: opts.signal });
    return transferred(this.#settle(st));
  }

  /** Marks relPath (a file or directory) dirty, or everything without one. */
  async markDirty(opts: SyncOptions = {}): Promise<void> {
    const ns = await this.#checkNamespace(opts.namespace);
    if (opts.relPath === undefined) {
      await this.#client.markAllDirty({ signal: opts.signal });
      return;
    }
    await this.#client.markDirty([this.#rel(opts.relPath, ns)], { signal: opts.signal });
  }

  /** Downloads one file atomically; false when it has no committed entry. */
  async hydrateFile(relPath: string, opts: SyncOptions = {}): Promise<boolean> {
    const ns = await this.#checkNamespace(opts.namespace);
    const r = await this.#client.hydrate([this.#rel(relPath, ns)], { signal: opts.signal });
    return r.found[0] === true;
  }

  async previewPush(opts: SyncOptions = {}): Promise<PushPreviewSummary> {
    await this.#checkNamespace(opts.namespace);
    const p = await this.#client.preview({ signal: opts.signal });
    return { total: p.total, new: p.new, changed: p.changed, deleted: p.deleted };
  }

  /** Phase 1: uploads, writes no index, clears no mark. */
  async preparePush(opts: SyncOptions = {}): Promise<PushManifest> {
    await this.#checkNamespace(opts.namespace);
    const r = await this.#client.prepare({ exclude: this.#opts.exclude }, { signal: opts.signal });
    this.#settle(r.stats);
    return { silt: r.manifest, files: r.files };
  }

  /**
   * Phase 2: merges onto the current index; returns the entries it
   * committed, from the commit's Stats. A path that moved since prepare
   * rejects with SiltConflictError.
   */
  async commitPush(manifest: PushManifest, opts: SyncOptions = {}): Promise<number> {
    await this.#checkNamespace(opts.namespace);
    if (manifest === null || typeof manifest !== "object" || !("silt" in manifest)) {
      throw new TypeError("commitPush: not a manifest from this service's preparePush");
    }
    const st = this.#settle(await this.#client.commit(manifest.silt, opts.fence, { signal: opts.signal }));
    // The files were counted as uploaded by prepare; the commit's Stats say
    // whether it committed (commit present) and which paths it could not.
    return st.commit ? manifest.files : 0;
  }

  /**
   * One committed file of another namespace (the host's catalog reads),
   * read from the bucket's index without touching this cache; null when
   * it has none.
   */
  fetchForeignContent(namespace: string, relPath: string, opts: { signal?: AbortSignal } = {}): Promise<Uint8Array | null> {
    return (this.#opts.foreign ?? this.#client).readFile(relPath, namespace, { signal: opts.signal });
  }

  controlPlaneStore(): ControlPlaneStore {
    const c = this.#client;
    return {
      put: (k, b) => c.controlPut(k, b),
      putIfAbsent: (k, b) => c.controlPutIfAbsent(k, b),
      get: (k) => c.controlGet(k),
      delete: (k) => c.controlDelete(k),
      list: (p) => c.controlList(p),
    };
  }

  /** The silt scope of a model list: undefined (everything) when none. */
  scopeOf(models: readonly ModelRef[] | undefined): string[] | undefined {
    if (!models || models.length === 0) return undefined;
    const out = new Set<string>();
    for (const m of models) for (const s of this.#layout.scopes(m)) out.add(s);
    return [...out].sort();
  }

  // The service is bound to one namespace (silt init --namespace); a call
  // for another one is refused rather than served from the wrong tree.
  async #checkNamespace(ns: string | undefined): Promise<string> {
    this.#namespace ??= this.#client.info().then((i) => i.namespace ?? "");
    const served = await this.#namespace;
    if (ns !== undefined && ns !== served) {
      throw new SiltError("bad_request", `namespace ${JSON.stringify(ns)}: this service syncs namespace ${JSON.stringify(served)}`, 400);
    }
    return served;
  }

  // Host paths are cache-relative; with a namespace the cache holds
  // {ns}/..., while silt's paths are relative to the namespace root.
  #rel(p: string, ns: string): string {
    let r = p.replace(/^\.\//, "");
    if (ns !== "" && r.startsWith(`${ns}/`)) r = r.slice(ns.length + 1);
    return r;
  }
}

// The files a push or commit committed: uploaded, deduplicated (committed
// without sending bytes) and deleted.
function transferred(st: Stats): number {
  return st.files.uploaded + (st.files.deduplicated ?? 0) + st.files.deleted;
}

function downloaded(st: Stats): number {
  return st.files.downloaded + st.files.removed;
}
