// PORTED, TEST-ONLY: a faithful port of how the host (swamp) discovers,
// bundles, validates, registers and configures an extension datastore,
// reduced to the datastore kind and without the host's zod, logger,
// catalog and bundle cache. Every rule below names the host line it
// ports; where the host uses zod the same checks are written by hand
// (the npm registry has zod, but the CI's node_modules is the package's
// own devDependencies, and the rules are four lines).
//
// Source:  https://github.com/swamp-club/swamp
// Commit:  06b6147274f251d022cddb3778ea88ee2936f8fb
// Ports:   src/domain/extensions/datastore_kind_adapter.ts (UserDatastoreSchema,
//            exportRegex, extractTypeFromSource, normalizeType, formatValidationError)
//          src/domain/extensions/extension_loader.ts (load: discoverFiles,
//            exportRegex gate, bundle, import, primaryExportKey, validate, register)
//          src/domain/models/bundle.ts (bundleExtension: the deno bundle flags)
//          src/domain/datastore/datastore_type_registry.ts (register/get, lower-cased keys)
//          src/cli/resolve_datastore.ts (parseDatastoreEnvVar's custom-type path and
//            the .swamp.yaml path: safeParse, createProvider, resolveDatastorePath,
//            resolveCachePath ?? default, hydrationStrategy read from the config)
// License: AGPL-3.0-only with the Swamp Extension and Definition Exception
//          (the host's code this follows is; see datastore_conformance.ts).

import { isZodSchemaLike } from "./zod_compat.ts";

// datastore_kind_adapter.ts:27
export const USER_DATASTORE_TYPE_PATTERN = /^@?[a-z0-9_-]+\/[a-z0-9_-]+$/;
// datastore_kind_adapter.ts: exportRegex (the loader's source gate)
export const exportRegex = /export\s+const\s+datastore\s*[=:]/;
export const primaryExportKey = "datastore";

export interface Issue {
  path: string[];
  message: string;
}

// datastore_kind_adapter.ts: UserDatastoreSchema = z.object({type: z.string().refine(pattern),
// name: z.string(), description: z.string(), configSchema: z.custom(isZodSchemaLike).optional(),
// createProvider: z.custom(typeof === "function")}). z.object strips unknown keys.
export function validatePrimaryExport(exported: unknown):
  | { success: true; data: Record<string, unknown> }
  | { success: false; error: { issues: Issue[] } } {
  const issues: Issue[] = [];
  if (exported === null || typeof exported !== "object") {
    return { success: false, error: { issues: [{ path: [], message: "Invalid input: expected object" }] } };
  }
  const e = exported as Record<string, unknown>;
  if (typeof e.type !== "string") issues.push({ path: ["type"], message: "Invalid input: expected string" });
  else if (!USER_DATASTORE_TYPE_PATTERN.test(e.type)) {
    issues.push({ path: ["type"], message: "Datastore type must match @collective/name or collective/name" });
  }
  if (typeof e.name !== "string") issues.push({ path: ["name"], message: "Invalid input: expected string" });
  if (typeof e.description !== "string") issues.push({ path: ["description"], message: "Invalid input: expected string" });
  if (e.configSchema !== undefined && !isZodSchemaLike(e.configSchema)) issues.push({ path: ["configSchema"], message: "Invalid input" });
  if (typeof e.createProvider !== "function") issues.push({ path: ["createProvider"], message: "Invalid input" });
  if (issues.length > 0) return { success: false, error: { issues } };
  const { type, name, description, configSchema, createProvider } = e;
  return { success: true, data: { type, name, description, ...(configSchema === undefined ? {} : { configSchema }), createProvider } };
}

// datastore_kind_adapter.ts: formatValidationError
export function formatValidationError(error: { issues: Issue[] }): string {
  return error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
}

// datastore_kind_adapter.ts: normalizeType
export function normalizeType(validated: Record<string, unknown>): string {
  return String(validated.type).toLowerCase();
}

// datastore_kind_adapter.ts: extractTypeFromSource (the lazy catalog's index
// of a source file, without importing it; verbatim regexes)
export function extractTypeFromSource(source: string): { typeNormalized: string; kind: "datastore" } | null {
  if (!/export\s+const\s+datastore\s*[=:]/.test(source)) return null;
  const typeMatch = source.match(
    /export\s+const\s+datastore\b[\s\S]*?=\s*\{[\s\S]*?type\s*:\s*["']([^"']+)["']/,
  );
  if (!typeMatch) return null;
  return { typeNormalized: typeMatch[1].toLowerCase(), kind: "datastore" };
}

// datastore_type_registry.ts: a Map keyed by the lower-cased type; register throws on a duplicate.
export interface DatastoreTypeInfo {
  type: string;
  name: string;
  description: string;
  configSchema?: { safeParse(v: unknown): { success: boolean; error?: { message: string } } };
  createProvider?: (config: Record<string, unknown>) => Record<string, unknown>;
  isBuiltIn: boolean;
}
export class DatastoreTypeRegistry {
  readonly #types = new Map<string, DatastoreTypeInfo>();
  register(info: DatastoreTypeInfo): void {
    const key = info.type.toLowerCase();
    if (this.#types.has(key)) throw new Error(`Datastore type '${info.type}' is already registered.`);
    this.#types.set(key, info);
  }
  get(type: string): DatastoreTypeInfo | undefined {
    return this.#types.get(type.toLowerCase());
  }
}

// extension_loader.ts: discoverFiles (.ts files, not _test.ts, not in _dirs)
export async function discoverFiles(dir: string, prefix = ""): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory) {
      if (entry.name.startsWith("_")) continue;
      files.push(...await discoverFiles(`${dir}/${entry.name}`, rel));
    } else if (entry.isFile && entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) {
      files.push(rel);
    }
  }
  return files.sort();
}

// bundle.ts: bundleExtension with neither deno.json nor package.json beside
// the extension (the default branch), zod externalised.
export async function bundleExtension(absolutePath: string, denoPath: string): Promise<string> {
  const out = await Deno.makeTempFile({ prefix: "swamp_bundle_", suffix: ".js" });
  try {
    const args = ["bundle", "--no-lock", "--node-modules-dir=none", "--external", "npm:zod@4", "--external", "npm:zod", "--platform", "deno", "-o", out, absolutePath];
    const r = await new Deno.Command(denoPath, { args, stdout: "piped", stderr: "piped", env: { DENO_NO_UPDATE_CHECK: "1" } }).output();
    if (!r.success) throw new Error(`deno bundle failed: ${new TextDecoder().decode(r.stderr)}`);
    return await Deno.readTextFile(out);
  } finally {
    await Deno.remove(out).catch(() => {});
  }
}

export interface LoadResult {
  loaded: string[];
  skipped: string[];
  failed: { file: string; error: string }[];
}

// extension_loader.ts: load(dir) for the datastore kind. The host imports
// the bundle from its bundle cache by file URL, else as a data: URL; the
// data: URL is the stricter of the two (nothing relative resolves), and
// the one used here.
export async function loadDatastores(dir: string, registry: DatastoreTypeRegistry, denoPath: string): Promise<LoadResult> {
  const result: LoadResult = { loaded: [], skipped: [], failed: [] };
  for (const file of await discoverFiles(dir)) {
    const abs = `${dir}/${file}`;
    try {
      const source = await Deno.readTextFile(abs);
      if (!exportRegex.test(source)) {
        result.skipped.push(file); // the host logs this at debug level only
        continue;
      }
      const js = await bundleExtension(abs, denoPath);
      const b64 = btoa(Array.from(new TextEncoder().encode(js), (c) => String.fromCharCode(c)).join(""));
      const module = await import(`data:application/javascript;base64,${b64}`) as Record<string, unknown>;
      if (!module[primaryExportKey]) {
        result.skipped.push(file);
        continue;
      }
      const parsed = validatePrimaryExport(module[primaryExportKey]);
      if (!parsed.success) {
        result.failed.push({ file, error: formatValidationError(parsed.error) });
        continue;
      }
      const v = parsed.data as unknown as DatastoreTypeInfo;
      registry.register({ type: v.type, name: v.name, description: v.description, configSchema: v.configSchema, createProvider: v.createProvider, isBuiltIn: false });
      result.loaded.push(file);
    } catch (e) {
      result.failed.push({ file, error: String(e) });
    }
  }
  return result;
}

// resolve_datastore.ts: parseDatastoreEnvVar for "@scope/type:{json}" and
// the .swamp.yaml path (config = ds.config ?? {}): the same steps.
export function resolveCustomDatastore(registry: DatastoreTypeRegistry, type: string, config: Record<string, unknown>, repoDir: string, defaultCache: string) {
  const typeInfo = registry.get(type);
  if (!typeInfo) throw new Error(`Unknown datastore type: "${type}"`);
  if (!typeInfo.createProvider) throw new Error(`Datastore type "${type}" is a built-in type without a provider.`);
  if (typeInfo.configSchema) {
    const result = typeInfo.configSchema.safeParse(config);
    if (!result.success) throw new Error(`Invalid config for datastore type "${type}": ${result.error!.message}`);
  }
  const provider = typeInfo.createProvider(config) as {
    resolveDatastorePath(r: string): string;
    resolveCachePath?(r: string): string | undefined;
  };
  const datastorePath = provider.resolveDatastorePath(repoDir);
  const cachePath = provider.resolveCachePath?.(repoDir) ?? defaultCache;
  return { type, config, datastorePath, cachePath, hydrationStrategy: config.hydrationStrategy as "full" | "lazy" | undefined, provider };
}
