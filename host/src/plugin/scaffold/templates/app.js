// A blocklab workload plugin in JavaScript, on WIT 0.5.0. Build it with
// `blocklab plugin build .`, run it with
// `blocklab run --plugin target/NAME.wasm --workload get`, or its gRPC
// workload against your server with
// `blocklab run --plugin target/NAME.wasm --workload unary --endpoint http://HOST:PORT`.
//
// `./blocklab.js` is blocklab's JavaScript SDK (plugins/js/sdk/blocklab.js),
// put beside this file by the build. Importing it makes Math.random, crypto
// and Date draw from the run's seeded generator and clock, sends console.*
// to the run's log, and returns an exception thrown by setup or run to the
// host with its message and stack.
import { env, grpc, int, randomU64, transact, workloads } from './blocklab.js';

const encoder = new TextEncoder();

// Row `i`'s key; 8 digits keep key order equal to row order.
function key(i) {
  return encoder.encode(`example/get/${String(i).padStart(8, '0')}`);
}

export const workload = workloads({
  get: {
    description: 'one point read of a fixture row, committed',
    params: [
      ['keys', '1000', 'fixture rows'],
      ['value-bytes', '100', 'bytes per value'],
    ],
    uses: ['kv'],
    setup(params) {
      const keys = int(params, 'keys');
      if (keys === 0) throw 'param `keys` must be at least 1';
      const valueBytes = int(params, 'value-bytes');
      const value = new Uint8Array(valueBytes).fill(120);
      // The fixture, in transactions well under FoundationDB's 10 MB.
      // transact() retries, and keeps the transaction for the next call.
      for (let start = 0; start < keys; start += 1000) {
        const stop = Math.min(keys, start + 1000);
        transact((tr) => {
          for (let i = start; i < stop; i++) tr.set(key(i), value);
        });
      }
      env.count('fixture-rows', BigInt(keys));
      // The run function: one transaction, returns its retries.
      return () => {
        // Keys come from env.random: seeded by the plan, reproducible.
        const k = key(Number(randomU64() % BigInt(keys)));
        const { value: found, retries } = transact((tr) => tr.get(k, false));
        if (found === undefined || found === null) {
          throw new Error(`key \`${new TextDecoder().decode(k)}\` is missing`);
        }
        if (found.length !== valueBytes) {
          throw new Error(`key holds ${found.length} bytes, expected ${valueBytes}`);
        }
        return retries;
      };
    },
  },
  unary: {
    description: 'one unary call of your service: `method` with `request` (hex of the encoded protobuf message)',
    params: [
      // blocklab's own test server (`blocklab target grpc-ingest`) answers
      // this one; name your service's method and message instead.
      ['method', '/ingest.v1.Echo/Echo', 'the full method name, /package.Service/Method'],
      ['request', '0a0568656c6c6f', 'the encoded request, as hex (here EchoRequest { payload: "hello" })'],
    ],
    uses: ['grpc'],
    setup(params) {
      const hex = String(params.request);
      if (!/^([0-9a-fA-F]{2})*$/.test(hex)) {
        throw `param \`request\` = \`${hex}\` is not hex bytes (give pairs of hex digits, e.g. \`0a0568656c6c6f\`)`;
      }
      const request = new Uint8Array(hex.match(/../g)?.map((b) => parseInt(b, 16)) ?? []);
      // A failed call throws a GrpcError that reads, e.g.,
      // `UNIMPLEMENTED (12) on /package.Service/Method: the server's message`.
      return () => {
        grpc.unary(params.method, request);
        return 0;
      };
    },
  },
});
