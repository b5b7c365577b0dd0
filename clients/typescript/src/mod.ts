// silt serve's TypeScript client: typed API calls and the host adapter.
export * from "./client.ts";
export * from "./adapter.ts";
export * from "./lock.ts";
export { type Endpoint, parseReply } from "./transport.ts";
