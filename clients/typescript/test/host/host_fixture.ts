// Two repositories sharing one bucket, as the host would have them: two
// providers from the module as the host creates them (createProvider on
// the config), the same file:// bucket in a temp dir and namespace, each
// with its own cache directory and sync service (its own silt serve).
// Which module: src/datastore.ts, or with HOST_SUITE_MODULE=dist the
// built dist/src/datastore.js that npm ships.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { siltBin } from "../fixture.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

export async function loadModule(): Promise<Any> {
  const which = Deno.env.get("HOST_SUITE_MODULE") ?? "src";
  const url = which === "dist"
    ? new URL("../../dist/src/datastore.js", import.meta.url)
    : new URL("../../src/datastore.ts", import.meta.url);
  return await import(url.href);
}

export interface Repo {
  provider: Any;
  service: Any;
  cacheDir: string;
  repoDir: string;
}

export interface HostFixture {
  mod: Any;
  root: string;
  url: string;
  namespace: string;
  config: Record<string, unknown>;
  first: Repo;
  second: Repo;
  write(repo: Repo, rel: string, body: string): void;
  read(repo: Repo, rel: string): string | null;
  silt(...args: string[]): string;
  cleanup(): void;
}

export async function hostFixture(namespace = "repo-1"): Promise<HostFixture> {
  const mod = await loadModule();
  // A short root keeps each cache's .silt/serve.sock within the socket path limit.
  const root = mkdtempSync(join(tmpdir(), "shs-"));
  const url = "file://" + join(root, "bucket");
  const config = { url, namespace, siltBin: siltBin(), idleExitMs: 60_000 };
  const repo = (name: string): Repo => {
    const provider = mod.datastore.createProvider(config);
    const repoDir = join(root, name);
    const cacheDir = join(root, `${name}-cache`);
    return { provider, repoDir, cacheDir, service: provider.createSyncService(repoDir, cacheDir) };
  };
  return {
    mod,
    root,
    url,
    namespace,
    config,
    first: repo("a"),
    second: repo("b"),
    write(r, rel, body) {
      const p = join(r.cacheDir, rel);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, body);
    },
    read(r, rel) {
      const p = join(r.cacheDir, rel);
      return existsSync(p) ? readFileSync(p, "utf8") : null;
    },
    silt(...args) {
      const r = new Deno.Command(siltBin(), { args, stdout: "piped", stderr: "piped" }).outputSync();
      if (!r.success) throw new Error(`silt ${args.join(" ")}: ${new TextDecoder().decode(r.stderr)}`);
      return new TextDecoder().decode(r.stdout);
    },
    cleanup() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}
