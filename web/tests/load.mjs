// Bounded load test of the report endpoint (docs/benchmarks.md): READERS
// concurrent keep-alive clients, each making REQUESTS sequential GETs of
// PATH on a loopback daemon; prints latency percentiles and throughput.
//   node web/tests/load.mjs http://127.0.0.1:7878 /api/campaigns/1/report [readers] [requests]
import http from "node:http";

const [base, path, readers = "50", requests = "40"] = process.argv.slice(2);
if (!base || !path) throw new Error("usage: load.mjs BASE_URL PATH [READERS] [REQUESTS_EACH]");
const url = new URL(path, base);
if (!["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) throw new Error("loopback only");
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(readers) });
// ACCEPT_ENCODING=gzip asks for what a browser gets (bytes are counted as sent).
const headers = process.env.ACCEPT_ENCODING ? { "accept-encoding": process.env.ACCEPT_ENCODING } : {};

function get() {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    http.get(url, { agent, headers }, (res) => {
      let bytes = 0;
      res.on("data", (c) => { bytes += c.length; });
      res.on("end", () => {
        if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
        else resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, bytes });
      });
    }).on("error", reject);
  });
}

const samples = [];
let bytes = 0;
const t0 = process.hrtime.bigint();
await Promise.all(Array.from({ length: Number(readers) }, async () => {
  for (let i = 0; i < Number(requests); i++) {
    const r = await get();
    samples.push(r.ms);
    bytes = r.bytes;
  }
}));
const wall = Number(process.hrtime.bigint() - t0) / 1e9;
agent.destroy();
samples.sort((a, b) => a - b);
const q = (p) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))];
console.log(JSON.stringify({
  path, readers: Number(readers), requests: samples.length, response_bytes: bytes,
  wall_s: +wall.toFixed(2), req_per_s: +(samples.length / wall).toFixed(1),
  ms: { p50: +q(0.5).toFixed(1), p90: +q(0.9).toFixed(1), p99: +q(0.99).toFixed(1), max: +samples[samples.length - 1].toFixed(1) },
}));
