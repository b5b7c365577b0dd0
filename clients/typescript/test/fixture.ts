// A real silt serve for the tests: silt built with go build into a temp
// dir (or SILT_BIN), a file:// bucket, the served cache and a peer cache
// that talks to the bucket through the plain CLI.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import process from "node:process";

let built: string | undefined;

function repoRoot(): string {
  for (let d = resolve(process.cwd()); ; d = dirname(d)) {
    if (existsSync(join(d, "go.mod")) && existsSync(join(d, "cmd", "silt"))) return d;
    if (dirname(d) === d) throw new Error("silt repository not found above " + process.cwd());
  }
}

/** The silt binary: SILT_BIN, or built once with go build. */
export function siltBin(): string {
  if (process.env.SILT_BIN) return process.env.SILT_BIN;
  if (!built) {
    const out = mkdtempSync(join(tmpdir(), "silt-ts-bin-"));
    built = join(out, "silt");
    execFileSync("go", ["build", "-o", built, "./cmd/silt"], { cwd: repoRoot(), stdio: "inherit" });
  }
  return built;
}

export class Fixture {
  readonly root: string;
  readonly bucket: string;
  readonly cache: string;
  readonly peer: string;
  // At least 128 bits: silt serve refuses a shorter token.
  readonly token = "t0ken-" + Array.from(crypto.getRandomValues(new Uint8Array(24)), (b) => b.toString(16).padStart(2, "0")).join("");
  tcpAddress = "";
  #proc: ChildProcess | undefined;

  constructor() {
    // A short root keeps DIR/.silt/serve.sock within the socket path limit.
    this.root = mkdtempSync(join(tmpdir(), "sts-"));
    this.bucket = join(this.root, "bucket");
    this.cache = join(this.root, "cache");
    this.peer = join(this.root, "peer");
  }

  silt(...args: string[]): string {
    return execFileSync(siltBin(), args, { encoding: "utf8" });
  }

  /** silt with an exit code, for commands expected to fail. */
  siltStatus(...args: string[]): { code: number; stderr: string } {
    try {
      execFileSync(siltBin(), args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      return { code: 0, stderr: "" };
    } catch (e) {
      const err = e as { status: number; stderr: string };
      return { code: err.status, stderr: String(err.stderr) };
    }
  }

  write(dir: string, rel: string, body: string): void {
    const p = join(dir, rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, body);
  }

  read(dir: string, rel: string): string | null {
    const p = join(dir, rel);
    return existsSync(p) ? readFileSync(p, "utf8") : null;
  }

  /** Binds both caches to the bucket and starts silt serve on the cache. */
  async start(): Promise<void> {
    const url = "file://" + this.bucket;
    this.silt("init", "--dir", this.cache, url);
    this.silt("init", "--dir", this.peer, url);
    const tokenFile = join(this.root, "token");
    writeFileSync(tokenFile, this.token + "\n", { mode: 0o600 }); // silt serve refuses a token others can read
    const p = spawn(siltBin(), ["serve", "--dir", this.cache, "--listen", "127.0.0.1:0", "--token-file", tokenFile], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.#proc = p;
    let stderr = "";
    p.stderr!.on("data", (c) => (stderr += String(c)));
    const line = await new Promise<string>((res, rej) => {
      let out = "";
      p.stdout!.on("data", (c) => {
        out += String(c);
        const nl = out.indexOf("\n");
        if (nl >= 0) res(out.slice(0, nl));
      });
      p.on("exit", (code) => rej(new Error(`silt serve exited ${code}: ${stderr}`)));
    });
    const m = /tcp:(127\.0\.0\.1:\d+)/.exec(line);
    if (!line.startsWith("serving ") || !m) throw new Error(`silt serve: unexpected first line ${line}`);
    this.tcpAddress = m[1];
  }

  /** Stops silt serve with SIGTERM and returns its exit code. */
  async stop(): Promise<number | string | null> {
    const p = this.#proc;
    if (!p) return null;
    this.#proc = undefined;
    if (p.exitCode !== null) return p.exitCode;
    const exited = new Promise<number | string | null>((res) => p.on("exit", (code, sig) => res(code ?? sig)));
    p.kill("SIGTERM");
    return await exited;
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.root, { recursive: true, force: true });
  }
}
