// A host process for the lifecycle test: opens a cache directory (which
// starts its silt serve), prints the service's pid, then waits to be
// killed. Run as: child_open DIR URL.

import process from "node:process";
import { openDir } from "../src/mod.ts";

const [dir, url] = process.argv.slice(-2);
const client = await openDir({ dir, url, idleExitMs: 0 });
const info = await client.info();
console.log(`service ${info.pid}`);
setInterval(() => {}, 1 << 30);
