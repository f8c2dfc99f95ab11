// kv-basic-js: four of kv-basic's workloads (grv, get100, set100, ryw) as a
// JavaScript workload plugin, built with ComponentizeJS (plugins/js/build.mjs).
//
// The key layout, values, params and random draws are kv-basic's
// (plugins/workloads/kv-basic/src/catalog.rs), so the same seed touches the
// same keys in the Rust, Python and JavaScript plugins and a campaign can
// compare them arm against arm. More workloads (`draws`, `throws`, `leaks`,
// `holds`, `calls`, `echo`, `metadata`) check the SDK's promises; blocklab's own tests run them.
import {
  env,
  firstGreaterOrEqual,
  grpc,
  int,
  joinAll,
  randomU64,
  transact,
  Transaction,
  workloads,
} from './blocklab.js';

const KEYS_HELP = 'fixture keys; each transaction picks one with env random_u64 % keys';
const VALUE_HELP = 'bytes per value';
// Most fixture bytes (keys plus values) in one setup transaction, as in
// catalog.rs: well inside FoundationDB's 10 MB limit.
const FIXTURE_TRANSACTION_BYTES = 1000000;
const MAX_KEYS = 500000;
const MAX_VALUE_BYTES = 100000;
const TEST_ONLY = "test-only, for blocklab's tests of the JavaScript SDK: ";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function sized(valueBytes) {
  return [
    ['keys', '1000', KEYS_HELP],
    ['value-bytes', valueBytes, VALUE_HELP],
  ];
}

function prefix(name) {
  return encoder.encode(`kv-basic/${name}/`);
}

function key(prefixBytes, index) {
  const digits = encoder.encode(String(index).padStart(8, '0'));
  const out = new Uint8Array(prefixBytes.length + digits.length);
  out.set(prefixBytes);
  out.set(digits, prefixBytes.length);
  return out;
}

function value(length) {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = 97 + (i % 26);
  return out;
}

function settings(name, params) {
  const keys = int(params, 'keys');
  const valueBytes = int(params, 'value-bytes');
  if (keys < 1 || keys > MAX_KEYS) {
    throw `param \`keys\` = \`${keys}\` is out of range for workload \`${name}\` (give 1 to ${MAX_KEYS})`;
  }
  if (valueBytes > MAX_VALUE_BYTES) {
    throw `param \`value-bytes\` = \`${valueBytes}\` is out of range (give 0 to ${MAX_VALUE_BYTES})`;
  }
  return { keys, valueBytes };
}

function clearFixture(name) {
  const begin = prefix(name);
  const end = encoder.encode(`kv-basic/${name}0`);
  transact((tr) => tr.clearRange(begin, end));
}

function writeFixture(name, keys, data) {
  const p = prefix(name);
  const per = Math.max(1, Math.floor(FIXTURE_TRANSACTION_BYTES / (p.length + 8 + data.length)));
  for (let start = 0; start < keys; start += per) {
    const stop = Math.min(keys, start + per);
    transact((tr) => {
      for (let i = start; i < stop; i++) tr.set(key(p, i), data);
    });
  }
  env.count('fixture-rows', BigInt(keys));
}

function check(k, found, length) {
  if (found === undefined || found === null) {
    throw `key \`${decoder.decode(k)}\` is missing (the fixture was not written or was cleared; run setup again)`;
  }
  if (found.length !== length) {
    throw `key \`${decoder.decode(k)}\` holds ${found.length} bytes, expected ${length} (another run with other params wrote it; run setup again)`;
  }
}

function pick(p, keys) {
  return key(p, Number(randomU64() % BigInt(keys)));
}

export const workload = workloads({
  grv: {
    description: 'read version only: one round trip to the GRV proxy, no commit',
    uses: ['kv'],
    setup() {
      return () => transact((tr) => tr.getReadVersion(), { commit: false }).retries;
    },
  },
  get100: {
    description:
      'one point read of a 100 B value in a transaction that commits (read-only, so the commit is local)',
    params: sized('100'),
    uses: ['kv'],
    setup(params) {
      const { keys, valueBytes } = settings('get100', params);
      const data = value(valueBytes);
      clearFixture('get100');
      writeFixture('get100', keys, data);
      const p = prefix('get100');
      return () => {
        const k = pick(p, keys);
        const { value: found, retries } = transact((tr) => tr.get(k, false));
        check(k, found, valueBytes);
        return retries;
      };
    },
  },
  set100: {
    description: 'one 100 B write and commit',
    params: sized('100'),
    uses: ['kv'],
    setup(params) {
      const { keys, valueBytes } = settings('set100', params);
      const data = value(valueBytes);
      clearFixture('set100');
      const p = prefix('set100');
      return () => {
        const k = pick(p, keys);
        return transact((tr) => tr.set(k, data)).retries;
      };
    },
  },
  ryw: {
    description:
      'write then read the same 100 B key and cancel: read-your-writes, no commit, no server round trip',
    params: sized('100'),
    uses: ['kv'],
    setup(params) {
      const { keys, valueBytes } = settings('ryw', params);
      const data = value(valueBytes);
      const p = prefix('ryw');
      return () => {
        const k = pick(p, keys);
        const { value: found, retries } = transact(
          (tr) => {
            tr.set(k, data);
            const read = tr.get(k, false);
            tr.cancel();
            return read;
          },
          { commit: false },
        );
        check(k, found, valueBytes);
        return retries;
      };
    },
  },
  draws: {
    description: `${TEST_ONLY}counts a hash of Math.random and crypto draws (\`draw-hash\`), and whether Date.now is the run's clock (\`clock-is-env\`)`,
    uses: ['kv'],
    setup() {
      return () => {
        let hash = 0;
        for (let i = 0; i < 4; i++) {
          hash = (Math.imul(hash, 31) + Math.floor(Math.random() * 4294967296)) >>> 0;
        }
        if (globalThis.crypto && globalThis.crypto.getRandomValues) {
          const bytes = globalThis.crypto.getRandomValues(new Uint8Array(4));
          hash = (Math.imul(hash, 31) + new DataView(bytes.buffer).getUint32(0, true)) >>> 0;
        }
        env.count('draw-hash', BigInt(hash % 1000003));
        const envMs = Number(env.nowNs() / 1000000n);
        const dateMs = Date.now();
        const fromEnv = dateMs >= envMs && dateMs - envMs < 1000 && new Date().getTime() - envMs < 1000;
        env.count('clock-is-env', fromEnv ? 1n : 0n);
        return 0;
      };
    },
  },
  throws: {
    description: `${TEST_ONLY}throws an Error from run (param \`in\` = \`run\`) or setup (\`setup\`)`,
    params: [['in', 'run', 'where to throw: `run` or `setup`']],
    uses: ['kv'],
    setup(params) {
      if (params.in === 'setup') {
        throw new RangeError('kv-basic-js/throws: setup throws on purpose');
      }
      return function throwingRun(iteration) {
        console.error(`kv-basic-js/throws: about to throw at iteration ${iteration}`);
        throw new TypeError(`kv-basic-js/throws: run throws on purpose at iteration ${iteration}`);
      };
    },
  },
  calls: {
    description: `${TEST_ONLY}one transaction through WIT 0.3.0's calls: futures joined, an atomic add, a key selector, a versionstamp and a watch, each checked`,
    uses: ['kv'],
    setup() {
      const p = prefix('calls');
      clearFixture('calls');
      transact((tr) => {
        for (let i = 0; i < 3; i++) tr.set(key(p, i), value(4));
      });
      const counter = encoder.encode('kv-basic/calls/counter');
      return () => {
        const before = transact((tr) => tr.get(counter, false)).value;
        const { value: got } = transact((tr) => {
          const reads = [0, 1, 2].map((i) => tr.startGet(key(p, i)));
          const values = joinAll(reads);
          const watch = tr.watch(counter);
          tr.add(counter, 1);
          const first = tr.getKey(firstGreaterOrEqual(p));
          const stamp = tr.getVersionstamp();
          return { values, first, stamp, watch };
        });
        if (got.values.some((v) => v === undefined || v.length !== 4)) {
          throw `joined reads answered ${JSON.stringify(got.values)}, expected three 4-byte values`;
        }
        if (decoder.decode(got.first) !== decoder.decode(key(p, 0))) {
          throw `firstGreaterOrEqual(prefix) resolved to \`${decoder.decode(got.first)}\``;
        }
        if (got.stamp.wait().length !== 10) throw 'a versionstamp is not 10 bytes';
        const after = transact((tr) => tr.get(counter, false)).value;
        const count = (v) => (v === undefined ? 0n : new DataView(v.buffer, v.byteOffset, 8).getBigInt64(0, true));
        if (count(after) !== count(before) + 1n) {
          throw `the atomic add went from ${count(before)} to ${count(after)}`;
        }
        // The add in the watch's own transaction fired it before commit.
        if (!got.watch.waitFor(1000)) throw 'a watch did not fire on its own atomic add';
        got.watch[Symbol.dispose]();
        return 0;
      };
    },
  },
  echo: {
    description: `${TEST_ONLY}one unary call of ingest.v1.Echo with a 16-byte payload (param \`method\` names another to see its error)`,
    params: [['method', '/ingest.v1.Echo/Echo', 'the unary method to call']],
    uses: ['grpc'],
    setup(params) {
      // EchoRequest { payload = 1 }: tag 0x0a, the length, the bytes.
      const request = new Uint8Array([0x0a, 16, ...value(16)]);
      return () => {
        const response = grpc.unary(params.method, request);
        if (response.length !== request.length) {
          throw `the echo answered ${response.length} bytes, expected ${request.length}`;
        }
        return 0;
      };
    },
  },
  metadata: {
    description: `${TEST_ONLY}a unary call and a stream of grpc.testing.TestService with echoed metadata, a deadline and gzip, each checked`,
    params: [
      ['deadline_ms', '5000', "each call's deadline"],
      ['delay_ms', '0', 'asks the server to wait this long first (x-delay-ms)'],
    ],
    uses: ['grpc'],
    setup(params) {
      // SimpleRequest { response_size: 100 }, StreamingOutputCallRequest {
      // response_parameters: [{ size: 100 }] } of grpc.testing.TestService.
      const unaryCall = new Uint8Array([0x10, 0x64]);
      const duplexCall = new Uint8Array([0x12, 0x02, 0x08, 0x64]);
      const metadata = [
        ['x-grpc-test-echo-initial', 'hi'],
        ['x-grpc-test-echo-trailing-bin', new Uint8Array([0, 255])],
      ];
      const delay = int(params, 'delay_ms');
      if (delay) metadata.push(['x-delay-ms', String(delay)]);
      const options = { metadata, deadlineMs: int(params, 'deadline_ms'), gzip: true };
      const expect = (what, got, want) => {
        if (got !== want) throw new Error(`${what} is ${got}, expected ${want}`);
      };
      const bytes = (pairs, key) => {
        const found = (pairs || []).find(([k]) => k === key);
        return found ? Array.from(found[1]).join(',') : undefined;
      };
      return () => {
        const reply = grpc.call('/grpc.testing.TestService/UnaryCall', unaryCall, options);
        expect("the reply's size", reply.message.length, 104);
        expect('header x-grpc-test-echo-initial', reply.get('x-grpc-test-echo-initial'), 'hi');
        expect('trailer x-grpc-test-echo-trailing-bin', bytes(reply.trailers, 'x-grpc-test-echo-trailing-bin'), '0,255');
        if (reply.get('x-deadline-ms') === undefined) throw new Error('the server saw no deadline');
        const stream = grpc.openStream('/grpc.testing.TestService/FullDuplexCall', options);
        try {
          expect("the stream's header", bytes(stream.headers(), 'x-grpc-test-echo-initial'), '104,105');
          stream.send(duplexCall);
          expect("the stream's answer size", stream.recv().length, 104);
          stream.closeSend();
          expect("the stream's end", stream.recv(), undefined);
          expect("the stream's trailer", bytes(stream.trailers(), 'x-grpc-test-echo-trailing-bin'), '0,255');
        } finally {
          stream[Symbol.dispose]();
        }
        return 0;
      };
    },
  },
  holds: {
    description: `${TEST_ONLY}holds one transaction from setup to teardown, which disposes it (param \`fail\` = \`yes\`: the teardown's final check throws)`,
    params: [['fail', 'no', '`yes` to fail the teardown']],
    uses: ['kv'],
    setup(params) {
      const tr = new Transaction();
      return {
        run() {
          tr.getReadVersion();
          return 0;
        },
        teardown() {
          tr[Symbol.dispose]();
          if (params.fail === 'yes') throw new Error('kv-basic-js/holds: the final check fails on purpose');
        },
      };
    },
  },
  leaks: {
    description: `${TEST_ONLY}opens a transaction in every run and never disposes it`,
    uses: ['kv'],
    setup() {
      return () => {
        const tr = new Transaction();
        tr.getReadVersion();
        return 0;
      };
    },
  },
});
