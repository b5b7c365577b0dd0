// Opening a cache directory or a bucket from the client: bind the
// directory (silt init), then reuse the service that owns it or start one
// (silt serve) that exits with this process (its stdin is a pipe from
// here, and it watches this pid) or after an idle timeout.

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { type CallOptions, SiltClient, SiltError } from "./client.ts";
import { type Endpoint } from "./transport.ts";
import { socketPathFor } from "./client.ts";

/** How to find and start silt. */
export interface ServiceOptions {
  /** The silt binary (default: $SILT_BIN, else "silt" on PATH). */
  siltBin?: string;
  /** The started service exits after this long idle (default 10 min; 0: never). */
  idleExitMs?: number;
  /** How long to wait for a started service to answer (default 15 s). */
  startTimeoutMs?: number;
  /** Extra arguments for silt serve (e.g. ["--lazy", "data/**\/raw"]). */
  serveArgs?: string[];
  /**
   * A file holding the passphrase of an encrypted bucket, handed to silt
   * as --password-file (default: $SILT_PASSWORD, which the started silt
   * inherits). The passphrase itself never passes through an argument.
   */
  passwordFile?: string;
}

/** A cache directory to open. */
export interface OpenDirOptions extends ServiceOptions {
  dir: string;
  /** The bucket URL; needed when the directory is not bound yet. */
  url?: string;
  namespace?: string;
  /** Bind a directory that already holds files, taking them as the cache's state (silt init --adopt). */
  adopt?: boolean;
  /** Encrypt the bucket when binding (silt init --encrypt): it must hold no index yet; an encrypted one is only unlocked. */
  encrypt?: boolean;
  signal?: AbortSignal;
}

/** A bucket (namespace) to serve without a cache directory. */
export interface OpenBucketOptions extends ServiceOptions {
  url: string;
  namespace?: string;
  /** The socket (default: a private per-user runtime directory, named by url and namespace). */
  socketPath?: string;
  signal?: AbortSignal;
}

function bin(o: ServiceOptions): string {
  return o.siltBin ?? process.env.SILT_BIN ?? "silt";
}

// keyArgs are the arguments that name where the passphrase comes from.
function keyArgs(o: ServiceOptions): string[] {
  return o.passwordFile ? ["--password-file", o.passwordFile] : [];
}

function run(file: string, args: string[], signal?: AbortSignal): Promise<string> {
  return new Promise((res, rej) => {
    execFile(file, args, { encoding: "utf8", signal }, (err, stdout, stderr) => {
      if (err) {
        const msg = String(stderr || err.message).trim();
        rej(signal?.aborted ? signal.reason : new SiltError("bad_request", `silt ${args[0]}: ${msg}`, 0));
      } else res(stdout);
    });
  });
}

/**
 * Binds dir to url (when it is not bound yet) and returns a client of its
 * service, started now if none runs. A directory bound to another bucket
 * or namespace is refused. The client starts the service again if it
 * exited (idle, or its starter died) before a later call.
 */
export async function openDir(o: OpenDirOptions): Promise<SiltClient> {
  const dir = resolve(o.dir);
  await bind(dir, o);
  const client = new SiltClient((co?: CallOptions) => ensureDirService(dir, o, co?.signal ?? o.signal));
  await client.info({ signal: o.signal });
  return client;
}

async function bind(dir: string, o: OpenDirOptions): Promise<void> {
  o.signal?.throwIfAborted();
  const cfgPath = join(dir, ".silt", "config.json");
  if (existsSync(cfgPath)) {
    const cur = JSON.parse(readFileSync(cfgPath, "utf8")) as { url: string; namespace?: string };
    if ((o.url !== undefined && cur.url !== o.url) || (o.namespace !== undefined && (cur.namespace ?? "") !== o.namespace)) {
      throw new SiltError(
        "bad_request",
        `${dir} is bound to ${cur.url} (namespace ${JSON.stringify(cur.namespace ?? "")}), not ${o.url} (namespace ${JSON.stringify(o.namespace ?? "")})`,
        0,
      );
    }
    return;
  }
  if (!o.url) throw new SiltError("bad_request", `${dir} is not a silt cache and no url was given to bind it`, 0);
  mkdirSync(dir, { recursive: true });
  const args = ["init", "--dir", dir];
  if (o.namespace) args.push("--namespace", o.namespace);
  if (o.adopt) args.push("--adopt");
  if (o.encrypt) args.push("--encrypt");
  args.push(...keyArgs(o), o.url);
  await run(bin(o), args, o.signal);
}

async function ensureDirService(dir: string, o: OpenDirOptions, signal?: AbortSignal): Promise<Endpoint> {
  const socketPath = await socketPathFor(dir);
  const args = ["serve", "--dir", dir, ...keyArgs(o), ...(o.serveArgs ?? [])];
  return await ensureService(socketPath, args, join(dir, ".silt", "serve.log"), o, signal);
}

/**
 * Returns a client of a bucket service for url (and namespace): locks,
 * control plane, health, namespaces and reads, without a cache directory.
 * The service is started now if none answers on the socket.
 */
export async function openBucket(o: OpenBucketOptions): Promise<SiltClient> {
  const socketPath = o.socketPath ?? await bucketSocketPath(o.url, o.namespace ?? "");
  const args = ["serve", "--bucket", o.url, "--socket", socketPath, ...(o.namespace ? ["--namespace", o.namespace] : []), ...keyArgs(o), ...(o.serveArgs ?? [])];
  const client = new SiltClient((co?: CallOptions) => ensureService(socketPath, args, `${socketPath}.log`, o, co?.signal ?? o.signal));
  await client.info({ signal: o.signal });
  return client;
}

/** A private per-user directory for sockets: $XDG_RUNTIME_DIR/silt, else $TMPDIR/silt-UID (0700). */
export function runtimeDir(): string {
  const xdg = process.env.XDG_RUNTIME_DIR;
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  const d = xdg ? join(xdg, "silt") : join(tmpdir(), `silt-${uid}`);
  mkdirSync(d, { recursive: true, mode: 0o700 });
  const st = statSync(d);
  if ((st.mode & 0o077) !== 0 || (typeof process.getuid === "function" && st.uid !== uid)) {
    throw new SiltError("bad_request", `silt: socket directory ${d} is not private to this user`, 0);
  }
  return d;
}

async function bucketSocketPath(url: string, ns: string): Promise<string> {
  const sum = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${url}\n${ns}`)));
  const hex = Array.from(sum.subarray(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
  return join(runtimeDir(), `bucket-${hex}.sock`);
}

// ensureService reuses the service answering on socketPath or starts one
// with args, then waits until it answers. Two starters racing is fine: the
// second silt serve finds the first's socket and exits, and both clients
// use the first.
async function ensureService(socketPath: string, args: string[], logPath: string, o: ServiceOptions, signal?: AbortSignal): Promise<Endpoint> {
  const ep: Endpoint = { socketPath };
  const probe = new SiltClient(ep);
  try {
    await probe.info({ signal });
    return ep;
  } catch (e) {
    signal?.throwIfAborted();
    if (e instanceof SiltError) throw e; // something answers, but not as a silt serve should
  }
  const idle = o.idleExitMs ?? 600_000;
  const full = [...args, "--parent-pid", String(process.pid), "--exit-on-stdin-close"];
  if (idle > 0) full.push("--idle-exit", `${idle}ms`);
  const log = openSync(logPath, "a", 0o600);
  let child: ChildProcess;
  try {
    child = spawn(bin(o), full, { stdio: ["pipe", "ignore", log] });
  } finally {
    closeSync(log);
  }
  let exited: number | null | undefined;
  child.on("exit", (code) => (exited = code ?? -1));
  child.on("error", () => (exited = -1));
  // Neither the child nor its stdin pipe keeps this process alive; the
  // pipe closes when this process dies, however it dies, and the service
  // then exits.
  child.unref();
  (child.stdin as unknown as { unref?: () => void })?.unref?.();
  const deadline = Date.now() + (o.startTimeoutMs ?? 15_000);
  for (;;) {
    signal?.throwIfAborted();
    try {
      await probe.info({ signal });
      return ep;
    } catch (e) {
      signal?.throwIfAborted();
      if (e instanceof SiltError) throw e;
    }
    // Exit code 3: another starter's service owns it; keep probing for it.
    if (exited !== undefined && exited !== 3) {
      let tail = "";
      try {
        tail = readFileSync(logPath, "utf8").trim().split("\n").slice(-3).join("; ");
      } catch { /* no log */ }
      throw new SiltError("unavailable", `silt serve exited with ${exited}: ${tail}`, 0);
    }
    if (Date.now() > deadline) throw new SiltError("unavailable", `silt serve did not answer on ${socketPath} in time`, 0);
    await new Promise((r) => setTimeout(r, 25));
  }
}
