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

/**
 * Sends one request whose reply is streamed (application/x-ndjson) and
 * yields its lines as they arrive. A reply that is not 200 is read whole
 * and returned as the generator's value with no line yielded, so the
 * caller reports its error as for any call. Aborting signal ends the
 * request, and with it the generator (with the abort's error).
 */
export async function* sendLines(
  ep: Endpoint,
  method: string,
  path: string,
  body: unknown,
  signal?: AbortSignal,
): AsyncGenerator<string, RawReply | undefined> {
  const payload = body === undefined ? "" : JSON.stringify(body);
  let chunks: AsyncIterable<Uint8Array>;
  let status: number;
  if ("address" in ep) {
    const res = await fetch(`http://${ep.address}${path}`, {
      method,
      headers: { "content-type": "application/json", authorization: `Bearer ${ep.token}` },
      body: payload,
      signal,
    });
    if (res.status !== 200 || !res.body) return { status: res.status, body: await res.text() };
    status = res.status;
    chunks = readerChunks(res.body.getReader());
  } else if (deno !== undefined) {
    const raw = await streamDeno(ep.socketPath, method, path, payload, signal);
    status = raw.status;
    if (status !== 200) return { status, body: new TextDecoder().decode(concat(await collect(raw.body))) };
    chunks = raw.body;
  } else {
    const http = await import("node:http");
    // deno-lint-ignore no-explicit-any
    const res: any = await new Promise((resolve, reject) => {
      const data = new TextEncoder().encode(payload);
      const req = http.request({
        socketPath: ep.socketPath,
        method,
        path,
        headers: { "content-type": "application/json", "content-length": String(data.byteLength) },
        signal,
      }, resolve);
      req.on("error", reject);
      req.end(data);
    });
    status = res.statusCode ?? 0;
    if (status !== 200) return { status, body: new TextDecoder().decode(concat(await collect(res))) };
    chunks = res;
  }
  const dec = new TextDecoder();
  let rest = "";
  for await (const c of chunks) {
    rest += dec.decode(c, { stream: true });
    let nl: number;
    while ((nl = rest.indexOf("\n")) >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      if (line.trim() !== "") yield line;
    }
  }
  if (rest.trim() !== "") yield rest;
  return undefined;
}

async function* readerChunks(r: ReadableStreamDefaultReader<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    for (;;) {
      const { done, value } = await r.read();
      if (done) return;
      yield value;
    }
  } finally {
    r.releaseLock();
  }
}

async function collect(it: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const c of it) out.push(c);
  return out;
}

// streamDeno is sendDeno for a streamed reply: the status, then the body
// as it arrives, chunked transfer coding removed (a reply without
// Content-Length is chunked).
async function streamDeno(
  socketPath: string,
  method: string,
  path: string,
  payload: string,
  signal?: AbortSignal,
): Promise<{ status: number; body: AsyncGenerator<Uint8Array> }> {
  signal?.throwIfAborted();
  const conn = await deno.connect({ transport: "unix", path: socketPath });
  const onAbort = () => {
    try {
      conn.close();
    } catch { /* closed already */ }
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  const data = new TextEncoder().encode(payload);
  const head = `${method} ${path} HTTP/1.1\r\nHost: silt\r\nConnection: close\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${data.byteLength}\r\n\r\n`;
  await writeAll(conn, concat([new TextEncoder().encode(head), data]));
  const buf = new Uint8Array(64 * 1024);
  let pending: Uint8Array = new Uint8Array(0);
  const read = async (): Promise<boolean> => {
    let n: number | null;
    try {
      n = await conn.read(buf);
    } catch (e) {
      signal?.throwIfAborted();
      throw e;
    }
    if (n === null) return false;
    pending = concat([pending, buf.slice(0, n)]);
    return true;
  };
  const find = (from = 0) => {
    for (let i = from; i + 1 < pending.byteLength; i++) if (pending[i] === 13 && pending[i + 1] === 10) return i;
    return -1;
  };
  let end = -1;
  for (;;) {
    for (let i = 0; i + 3 < pending.byteLength; i++) {
      if (pending[i] === 13 && pending[i + 1] === 10 && pending[i + 2] === 13 && pending[i + 3] === 10) {
        end = i;
        break;
      }
    }
    if (end >= 0) break;
    if (!(await read())) throw new Error("silt: truncated HTTP reply (no header end)");
  }
  const headText = new TextDecoder().decode(pending.subarray(0, end));
  pending = pending.slice(end + 4);
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(headText);
  if (!m) throw new Error(`silt: bad HTTP status line: ${headText.split("\r\n")[0]}`);
  const chunked = /\r\ntransfer-encoding:\s*chunked/i.test(headText);
  async function* body(): AsyncGenerator<Uint8Array> {
    try {
      if (!chunked) {
        if (pending.byteLength > 0) yield pending;
        pending = new Uint8Array(0);
        while (await read()) {
          yield pending;
          pending = new Uint8Array(0);
        }
        return;
      }
      for (;;) {
        let nl: number;
        while ((nl = find()) < 0) if (!(await read())) return;
        const size = parseInt(new TextDecoder().decode(pending.subarray(0, nl)), 16);
        if (!(size > 0)) return; // the last chunk
        while (pending.byteLength < nl + 2 + size + 2) if (!(await read())) return;
        yield pending.slice(nl + 2, nl + 2 + size);
        pending = pending.slice(nl + 2 + size + 2);
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      onAbort();
    }
  }
  return { status: Number(m[1]), body: body() };
}
