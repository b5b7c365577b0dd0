// silt serve's TypeScript client: typed API calls, the host adapter, the
// lifecycle (open a directory or bucket, start its service), events, and
// the host datastore module (./datastore.ts, also the package's
// "./datastore" export).
export * from "./client.ts";
export * from "./adapter.ts";
export * from "./lock.ts";
export * from "./events.ts";
export * from "./lifecycle.ts";
export { type Endpoint, parseReply } from "./transport.ts";
