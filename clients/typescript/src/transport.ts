// Transport: one HTTP/1.1 request to silt serve, over its Unix socket or
// over 127.0.0.1 with a bearer token. No dependencies beyond the runtime:
// Node uses node:http (socketPath), Deno uses Deno.connect on the socket;
// TCP uses fetch on both.

/** Where a service listens. */
export type Endpoint =
  | { socketPath: string }
  | { address: string; token: string };

/** A raw reply: status and body text. */
export interface RawReply {
  status: number;
  body: string;
}

// deno-lint-ignore no-explicit-any
const deno: any = (globalThis as any).Deno;

/** Sends one request and returns the reply. */
export async function send(
  ep: Endpoint,
  method: string,
  path: string,
  body: unknown,
  signal?: AbortSignal,
): Promise<RawReply> {
  const payload = body === undefined ? "" : JSON.stringify(body);
  if ("address" in ep) {
    const res = await fetch(`http://${ep.address}${path}`, {
      method,
      headers: { "content-type": "application/json", authorization: `Bearer ${ep.token}` },
      body: method === "GET" ? undefined : payload,
      signal,
    });
    return { status: res.status, body: await res.text() };
  }
  if (deno !== undefined) return await sendDeno(ep.socketPath, method, path, payload, signal);
  return await sendNode(ep.socketPath, method, path, payload, signal);
}

async function sendNode(
  socketPath: string,
  method: string,
  path: string,
  payload: string,
  signal?: AbortSignal,
): Promise<RawReply> {
  const http = await import("node:http");
  return await new Promise<RawReply>((resolve, reject) => {
    const data = new TextEncoder().encode(payload);
    const req = http.request({
      socketPath,
      method,
      path,
      headers: { "content-type": "application/json", "content-length": String(data.byteLength) },
      signal,
    }, (res) => {
      const chunks: Uint8Array[] = [];
      res.on("data", (c: Uint8Array) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: new TextDecoder().decode(concat(chunks)) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(data);
  });
}

// sendDeno speaks just enough HTTP/1.1 over the socket: one request with
// Connection: close, and a reply read to the end. The server always sends
// Content-Length, never chunked bodies.
async function sendDeno(
  socketPath: string,
  method: string,
  path: string,
  payload: string,
  signal?: AbortSignal,
): Promise<RawReply> {
  signal?.throwIfAborted();
  // The abort listener is in place before the connect starts: an abort
  // while connecting must stop the request from being sent at all.
  // deno-lint-ignore no-explicit-any
  let conn: any;
  let aborted = false;
  const onAbort = () => {
    aborted = true;
    try {
      conn?.close();
    } catch { /* already closed: the read below reports the abort */ }
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    conn = await deno.connect({ transport: "unix", path: socketPath });
    if (aborted) signal!.throwIfAborted(); // aborted while connecting: nothing sent
    const data = new TextEncoder().encode(payload);
    const head = `${method} ${path} HTTP/1.1\r\nHost: silt\r\nConnection: close\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${data.byteLength}\r\n\r\n`;
    try {
      await writeAll(conn, concat([new TextEncoder().encode(head), data]));
    } catch (e) {
      signal?.throwIfAborted();
      throw e;
    }
    const chunks: Uint8Array[] = [];
    const buf = new Uint8Array(64 * 1024);
    for (;;) {
      let n: number | null;
      try {
        n = await conn.read(buf);
      } catch (e) {
        signal?.throwIfAborted();
        throw e;
      }
      if (n === null) break;
      chunks.push(buf.slice(0, n));
    }
    // A reply read to its end is the operation's outcome, even if the
    // signal fired meanwhile: throwing now would hide a commit that landed.
    return parseReply(concat(chunks));
  } finally {
    signal?.removeEventListener("abort", onAbort);
    try {
      conn?.close();
    } catch { /* closed by the abort handler */ }
  }
}

// deno-lint-ignore no-explicit-any
async function writeAll(conn: any, data: Uint8Array): Promise<void> {
  let off = 0;
  while (off < data.byteLength) off += await conn.write(data.subarray(off));
}

/** Parses a whole HTTP/1.1 reply with a Content-Length body. */
export function parseReply(raw: Uint8Array): RawReply {
  let end = -1;
  for (let i = 0; i + 3 < raw.byteLength; i++) {
    if (raw[i] === 13 && raw[i + 1] === 10 && raw[i + 2] === 13 && raw[i + 3] === 10) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new Error("silt: truncated HTTP reply (no header end)");
  const head = new TextDecoder().decode(raw.subarray(0, end));
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
  if (!m) throw new Error(`silt: bad HTTP status line: ${head.split("\r\n")[0]}`);
  const len = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  let body = raw.subarray(end + 4);
  if (len) {
    const n = Number(len[1]);
    if (body.byteLength < n) throw new Error(`silt: truncated HTTP reply (${body.byteLength} of ${n} bytes)`);
    body = body.subarray(0, n);
  }
  return { status: Number(m[1]), body: new TextDecoder().decode(body) };
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.byteLength;
  }
  return out;
}
