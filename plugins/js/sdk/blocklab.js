// blocklab's JavaScript SDK: the glue between a workload module and the WIT
// world `workload-plugin` of wit/v0.5.0 (0.5.0's grpc client, 0.3.0's kv
// and env, and 0.4.0's workload with its teardown), for plugins built with
// ComponentizeJS (plugins/js/build.mjs). Import it first: it makes the
// language's own sources of randomness, time and output go through the host.
//
// - Math.random, crypto.getRandomValues, Date.now, new Date() and
//   performance.now draw from env.random and env.now-ns, so the plan's seed
//   decides every draw and time is the run's clock. ComponentizeJS builds
//   with its `random` and `clocks` features off otherwise return the same
//   sequence whatever the seed and a time frozen at build time.
// - console.* writes to env.log, which the host shows with a trap.
// - An exception thrown by a workload's setup or run returns to the host as
//   the WIT error string, with the error's name, message and stack, instead
//   of a bare `unreachable` trap.
// - Transaction wraps the kv transaction: range reads come back as rows,
//   futures answer plain values, and transact() is FoundationDB's retry
//   loop, which keeps up to four transactions (reset, not dropped) for the
//   next call. ComponentizeJS drops a resource only on [Symbol.dispose]().
// - grpc.unary, grpc.call and grpc.openStream take call options (metadata,
//   deadlineMs, gzip) and throw a GrpcError that names the status and the
//   method, in the host's words; grpc.call returns headers and trailers too.
import * as env from 'blocklab:bench/env@0.3.0';
import * as kv from 'blocklab:bench/kv@0.3.0';
import * as rawGrpc from 'blocklab:bench/grpc@0.5.0';

export { env };

// ---- determinism -------------------------------------------------------

/** A uniform u64 (BigInt) from the run's seeded generator. */
export function randomU64() {
  const bytes = env.random(8);
  return new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
}

/** Milliseconds on the run's clock (env.now-ns; the origin is the run's). */
function nowMs() {
  return Number(env.nowNs() / 1000000n);
}

Math.random = function random() {
  // 53 random bits, as a double in [0, 1).
  const bytes = env.random(8);
  const view = new DataView(bytes.buffer, bytes.byteOffset, 8);
  const high = view.getUint32(0, true) >>> 5; // 27 bits
  const low = view.getUint32(4, true) >>> 6; // 26 bits
  return (high * 67108864 + low) / 9007199254740992;
};

const BuildDate = Date;
class RunDate extends BuildDate {
  constructor(...args) {
    if (args.length === 0) {
      super(nowMs());
    } else {
      super(...args);
    }
  }
  static now() {
    return nowMs();
  }
}
globalThis.Date = RunDate;

try {
  if (globalThis.performance) {
    globalThis.performance.now = () => Number(env.nowNs()) / 1e6;
  }
} catch {
  // a read-only performance object: nothing else reads the build's clock
}
try {
  if (globalThis.crypto) {
    globalThis.crypto.getRandomValues = (array) => {
      const bytes = env.random(array.byteLength);
      new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(bytes);
      return array;
    };
  }
} catch {
  // a read-only crypto object
}

// ---- output --------------------------------------------------------------

function show(args) {
  return args
    .map((a) => {
      if (typeof a === 'string') return a;
      if (a instanceof Error) return describe(a);
      try {
        return JSON.stringify(a, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
      } catch {
        return String(a);
      }
    })
    .join(' ');
}

globalThis.console = {
  error: (...args) => env.log(0, show(args)),
  warn: (...args) => env.log(1, show(args)),
  info: (...args) => env.log(2, show(args)),
  log: (...args) => env.log(2, show(args)),
  debug: (...args) => env.log(3, show(args)),
  trace: (...args) => env.log(3, show(args)),
};

// ---- errors --------------------------------------------------------------

/**
 * An exception in the plugin's own words: `Name: message (at frame)` on the
 * first line (the line results group errors by), the whole stack after it.
 */
export function describe(e) {
  if (typeof e === 'string') return e;
  if (e instanceof Error) {
    const frames = (e.stack || '').trim().split('\n').filter((l) => l.length > 0);
    const head = `${e.name}: ${e.message}`;
    if (frames.length === 0) return head;
    return `${head} (at ${frames[0]})\n${frames.join('\n')}`;
  }
  const kv = kvErrorOf(e);
  if (kv !== undefined) return `kv error ${describeKv(kv)}`;
  try {
    return `uncaught ${JSON.stringify(e)}`;
  } catch {
    return `uncaught ${String(e)}`;
  }
}

/** The kv `error` variant a failed kv call threw, if it was one. */
function kvErrorOf(e) {
  const payload = e && typeof e === 'object' && 'payload' in e ? e.payload : e;
  if (payload && typeof payload === 'object' && typeof payload.tag === 'string') {
    return payload;
  }
  return undefined;
}

/** kv errors in the host's words, so a failed run reads the same. */
function describeKv(error) {
  if (error.tag === 'other') return `${error.val.message} (${error.val.code})`;
  return error.tag;
}

// ---- kv ------------------------------------------------------------------

/** Rows of a `packed-rows` buffer: per row, u32 LE key length, key, u32 LE value length, value. */
function unpack(packed) {
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  const rows = [];
  let at = 0;
  while (at < packed.length) {
    const keyLength = view.getUint32(at, true);
    const key = packed.subarray(at + 4, at + 4 + keyLength);
    at += 4 + keyLength;
    const valueLength = view.getUint32(at, true);
    const value = packed.subarray(at + 4, at + 4 + valueLength);
    at += 4 + valueLength;
    rows.push({ key, value });
  }
  return rows;
}

/** A future's answer as a plain value: BigInt versions and sizes, bytes, rows. */
function answer(a) {
  switch (a.tag) {
    case 'range':
      return { rows: unpack(a.val.rows), more: a.val.more };
    default:
      return a.val;
  }
}

/**
 * A kv call issued now and waited for later (WIT `future`): issue several,
 * then wait; their round trips overlap. `wait()` returns the answer and
 * releases the host's resource, so a future needs no dispose once waited.
 */
export class Future {
  constructor(raw) {
    this.raw = raw;
    this.done = undefined;
  }
  isReady() {
    return this.done !== undefined || this.raw.isReady();
  }
  wait() {
    if (this.done === undefined) {
      try {
        this.done = { value: answer(this.raw.wait()) };
      } catch (e) {
        this.done = { error: e };
      }
      this.raw[Symbol.dispose]();
    }
    if ('error' in this.done) throw this.done.error;
    return this.done.value;
  }
  [Symbol.dispose]() {
    if (this.done === undefined) {
      this.done = { error: new Error('the future was disposed before it was waited for') };
      this.raw[Symbol.dispose]();
    }
  }
}

/** Waits for every future (one crossing) and returns their answers in order. */
export function joinAll(futures) {
  kv.waitAll(futures.filter((f) => f.done === undefined).map((f) => f.raw));
  return futures.map((f) => f.wait());
}

/** Waits until one future is ready; its index. */
export function waitAny(futures) {
  const ready = futures.findIndex((f) => f.done !== undefined);
  if (ready >= 0) return ready;
  return kv.waitAny(futures.map((f) => f.raw));
}

/**
 * A watch (WIT `watch`): fires once the key's value differs from the one its
 * transaction saw. Only the transaction's own writes fire it before commit;
 * any changing commit after. Dispose it (or let it fire) to stop counting
 * toward the 10,000 a database allows.
 */
export class Watch {
  constructor(raw) {
    this.raw = raw;
  }
  isReady() {
    return this.raw.isReady();
  }
  /** Blocks until it fires; throws its error if it failed. */
  wait() {
    this.raw.wait();
  }
  /** Blocks at most `ms` milliseconds: true if it fired. */
  waitFor(ms) {
    return this.raw.waitFor(ms);
  }
  [Symbol.dispose]() {
    this.raw[Symbol.dispose]();
  }
}

/** FoundationDB's key selectors: `{ key, orEqual, offset }`, moved by `plus(selector, n)`. */
export const firstGreaterOrEqual = (key) => ({ key, orEqual: false, offset: 1 });
export const firstGreaterThan = (key) => ({ key, orEqual: true, offset: 1 });
export const lastLessOrEqual = (key) => ({ key, orEqual: true, offset: 0 });
export const lastLessThan = (key) => ({ key, orEqual: false, offset: 0 });
export const plus = (selector, n) => ({ ...selector, offset: selector.offset + n });

/**
 * Transaction options (WIT `transaction-option`), e.g.
 * `tr.setOption(TransactionOption.timeout(100))` or
 * `tr.setOption(TransactionOption.readYourWritesDisable)`.
 */
export const TransactionOption = {
  timeout: (ms) => ({ tag: 'timeout', val: ms }),
  retryLimit: (n) => ({ tag: 'retry-limit', val: n }),
  maxRetryDelay: (ms) => ({ tag: 'max-retry-delay', val: ms }),
  sizeLimit: (bytes) => ({ tag: 'size-limit', val: bytes }),
  /** 'default', 'batch' or 'system-immediate'. */
  priority: (p) => ({ tag: 'priority', val: p }),
  readYourWritesDisable: { tag: 'read-your-writes-disable' },
  snapshotRywEnable: { tag: 'snapshot-ryw-enable' },
  snapshotRywDisable: { tag: 'snapshot-ryw-disable' },
  causalReadRisky: { tag: 'causal-read-risky' },
  lockAware: { tag: 'lock-aware' },
};

/**
 * One kv transaction, as wit/v0.3.0/kv.wit specifies each call. Reads throw
 * the WIT `error` variant (transact() retries it); range reads return
 * `[{ key, value }]` rows. Dispose it, or use transact(), which does.
 */
export class Transaction {
  constructor(raw) {
    this.raw = raw === undefined ? new kv.Transaction() : raw;
  }
  getReadVersion() {
    return this.raw.getReadVersion();
  }
  get(key, snapshot = false) {
    return this.raw.get(key, snapshot);
  }
  /** Rows in [begin, end): `limit` 0 means all; `reverse`; `snapshot`. */
  getRange(begin, end, { limit = 0, reverse = false, snapshot = false } = {}) {
    return unpack(this.raw.getRange(begin, end, limit, reverse, snapshot));
  }
  set(key, value) {
    this.raw.set(key, value);
  }
  clear(key) {
    this.raw.clear(key);
  }
  clearRange(begin, end) {
    this.raw.clearRange(begin, end);
  }
  commit() {
    return this.raw.commit();
  }
  onError(error) {
    this.raw.onError(error);
  }
  cancel() {
    this.raw.cancel();
  }
  reset() {
    this.raw.reset();
  }
  // Futures: each start* call is issued now; wait() (or joinAll) answers it.
  startGetReadVersion() {
    return new Future(this.raw.startGetReadVersion());
  }
  startGet(key, snapshot = false) {
    return new Future(this.raw.startGet(key, snapshot));
  }
  startGetKey(selector, snapshot = false) {
    return new Future(this.raw.startGetKey(selector, snapshot));
  }
  getKey(selector, snapshot = false) {
    return this.startGetKey(selector, snapshot).wait();
  }
  /**
   * One batch between two selectors: `{ rows, more }`. Options: `limit`,
   * `targetBytes` (0: none), `mode` ('want-all', 'iterator', 'exact',
   * 'small', 'medium', 'large', 'serial'), `iteration` (from 1), `reverse`,
   * `snapshot`.
   */
  startGetRange(begin, end, options = {}) {
    const o = {
      limit: 0,
      targetBytes: 0,
      mode: 'iterator',
      iteration: 1,
      reverse: false,
      snapshot: false,
      ...options,
    };
    return new Future(this.raw.startGetRange(begin, end, o));
  }
  startCommit() {
    return new Future(this.raw.startCommit());
  }
  startGetEstimatedRangeSizeBytes(begin, end) {
    return new Future(this.raw.startGetEstimatedRangeSizeBytes(begin, end));
  }
  /** `op`: 'add', 'bit-and', 'bit-or', 'bit-xor', 'max', 'min', 'byte-max', 'byte-min', 'compare-and-clear', 'append-if-fits'. */
  atomicOp(op, key, operand) {
    this.raw.atomicOp(op, key, operand);
  }
  /** Adds `delta` (a BigInt or a safe integer) to a little-endian 64-bit counter. */
  add(key, delta) {
    const operand = new Uint8Array(8);
    new DataView(operand.buffer).setBigInt64(0, BigInt(delta), true);
    this.raw.atomicOp('add', key, operand);
  }
  setVersionstampedKey(key, offset, value) {
    this.raw.setVersionstampedKey(key, offset, value);
  }
  setVersionstampedValue(key, value, offset) {
    this.raw.setVersionstampedValue(key, value, offset);
  }
  /** The commit's versionstamp: ask before commit, wait after. */
  getVersionstamp() {
    return new Future(this.raw.getVersionstamp());
  }
  addReadConflictRange(begin, end) {
    this.raw.addConflictRange('read', begin, end);
  }
  addReadConflictKey(key) {
    this.raw.addConflictRange('read', key, keyAfter(key));
  }
  addWriteConflictRange(begin, end) {
    this.raw.addConflictRange('write', begin, end);
  }
  addWriteConflictKey(key) {
    this.raw.addConflictRange('write', key, keyAfter(key));
  }
  setReadVersion(version) {
    this.raw.setReadVersion(BigInt(version));
  }
  getCommittedVersion() {
    return this.raw.getCommittedVersion();
  }
  getApproximateSize() {
    return this.raw.getApproximateSize();
  }
  setOption(option) {
    this.raw.setOption(option);
  }
  watch(key) {
    return new Watch(this.raw.watch(key));
  }
  [Symbol.dispose]() {
    this.raw[Symbol.dispose]();
  }
}

function keyAfter(key) {
  const next = new Uint8Array(key.length + 1);
  next.set(key);
  return next;
}

/** Transactions transact() reset and keeps, so a call costs a reset, not a constructor and a drop. */
const kept = [];
const KEEP = 4;

/**
 * FoundationDB's retry loop: runs `body(tr)` and commits (unless
 * `commit: false`), retrying on retryable errors. Returns `{ value, retries }`.
 * The transaction is reset and kept for the next call however the loop ends.
 */
export function transact(body, { commit = true } = {}) {
  const tr = kept.pop() || new Transaction();
  try {
    let retries = 0;
    for (;;) {
      try {
        const value = body(tr);
        if (commit) tr.commit();
        return { value, retries };
      } catch (e) {
        const kvError = kvErrorOf(e);
        if (kvError === undefined) throw e;
        try {
          tr.onError(kvError);
        } catch (fatal) {
          const detail = kvErrorOf(fatal);
          throw new Error(`kv error ${detail !== undefined ? describeKv(detail) : describe(fatal)}`);
        }
        retries += 1;
      }
    }
  } finally {
    if (kept.length < KEEP) {
      tr.reset();
      kept.push(tr);
    } else {
      tr[Symbol.dispose]();
    }
  }
}

// ---- grpc ----------------------------------------------------------------

const STATUS_NAMES = [
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND',
  'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION',
  'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS',
  'UNAUTHENTICATED',
];

/**
 * A gRPC status other than OK, with the call's method: its message reads
 * `UNIMPLEMENTED (12) on /pkg.Service/Method: the server's message`, as the
 * host and the Rust SDK say it.
 */
export class GrpcError extends Error {
  constructor(status, method) {
    const name = STATUS_NAMES[status.code] || 'UNKNOWN_CODE';
    const said = status.message ? `: ${status.message}` : ' (the server sent no message)';
    super(`${name} (${status.code}) on ${method}${said}`);
    this.name = 'GrpcError';
    this.code = status.code;
    this.method = method;
    this.serverMessage = status.message;
    /** The [key, Uint8Array] pairs that came with the status. */
    this.metadata = pairs(status.metadata || []);
  }
}

function grpcCall(method, call) {
  try {
    return call();
  } catch (e) {
    const status = e && typeof e === 'object' && 'payload' in e ? e.payload : e;
    if (status && typeof status === 'object' && typeof status.code === 'number') {
      throw new GrpcError(status, method);
    }
    throw e;
  }
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

function pairs(entries) {
  return entries.map((e) => [e.key, e.value]);
}

/**
 * The WIT call options from `{ metadata, deadlineMs, gzip }`: metadata an
 * object or [key, value] pairs, values strings (ASCII) or Uint8Arrays
 * (under keys ending in `-bin`).
 */
function callOptions(options = {}) {
  const given = options.metadata || [];
  const items = Array.isArray(given) ? given : Object.entries(given);
  return {
    metadata: items.map(([key, value]) => ({
      key,
      value: typeof value === 'string' ? textEncoder.encode(value) : value,
    })),
    deadlineMs: options.deadlineMs,
    compression: options.gzip ? 'gzip' : 'identity',
  };
}

/** A unary call's answer: `message`, and `headers` and `trailers` as [key, Uint8Array] pairs. */
export class Reply {
  constructor(raw) {
    this.message = raw.message;
    this.headers = pairs(raw.headers);
    this.trailers = pairs(raw.trailers);
  }
  /** The first value under `key`, headers then trailers, as text; undefined if absent. */
  get(key) {
    const found = this.headers.concat(this.trailers).find(([k]) => k === key);
    return found ? textDecoder.decode(found[1]) : undefined;
  }
}

/** One bidirectional stream, bound to one connection when opened. Dispose it when done. */
export class Stream {
  constructor(raw, method) {
    this.raw = raw;
    this.method = method;
  }
  send(message) {
    grpcCall(this.method, () => this.raw.send(message));
  }
  /** The next message, or undefined once the server ended the stream with OK. */
  recv() {
    return grpcCall(this.method, () => this.raw.recv());
  }
  closeSend() {
    this.raw.closeSend();
  }
  /** The response headers as [key, Uint8Array] pairs; waits for them. */
  headers() {
    return pairs(grpcCall(this.method, () => this.raw.headers()));
  }
  /** The trailers once recv() returned undefined, else undefined. */
  trailers() {
    const t = this.raw.trailers();
    return t === undefined ? undefined : pairs(t);
  }
  [Symbol.dispose]() {
    this.raw[Symbol.dispose]();
  }
}

/**
 * The byte-level gRPC client: the plugin encodes its messages, the arm
 * picks the endpoint. `options`: `{ metadata, deadlineMs, gzip }`.
 */
export const grpc = {
  /** Calls unary `method` (e.g. '/ingest.v1.Echo/Echo') with an encoded request; the encoded response. */
  unary(method, request, options) {
    return grpc.call(method, request, options).message;
  },
  /** Calls unary `method`; a Reply with the response's headers and trailers. */
  call(method, request, options) {
    const o = callOptions(options);
    return new Reply(grpcCall(method, () => rawGrpc.unary(method, request, o)));
  },
  /** Opens a bidirectional stream on `method`; the options hold for the whole stream. */
  openStream(method, options) {
    const o = callOptions(options);
    return new Stream(grpcCall(method, () => rawGrpc.openStream(method, o)), method);
  },
};

// ---- the workload export -------------------------------------------------

/**
 * The `workload` export for a table of workloads:
 *
 *   export const workload = workloads({
 *     get: {
 *       description: '...',
 *       params: [['keys', '1000', 'fixture rows']],
 *       uses: ['kv'],
 *       setup(params) { ...; return (iteration) => retries; },
 *     },
 *   });
 *
 * `params` given to setup maps every declared name to its text (defaults
 * filled in; unknown names were refused); `int(params, name)` and `float(params, name)` parse one.
 * setup returns the run function, or `{ run, teardown }`: teardown is
 * called once after the measured window, untimed, to release what the
 * workload holds (dispose a stream) and check its final state (throw to
 * fail the run). Errors thrown by any of them reach the user.
 */
export function workloads(table) {
  let current = null;
  return {
    list() {
      return Object.entries(table).map(([name, w]) => ({
        name,
        description: w.description,
        params: (w.params || []).map(([n, d, help]) => ({ name: n, default: d, help })),
        uses: w.uses || [],
      }));
    },
    setup(name, given) {
      current = null;
      try {
        const w = table[name];
        if (w === undefined) {
          throw `unknown workload \`${name}\` (known: ${Object.keys(table).join(', ')})`;
        }
        const values = Object.fromEntries((w.params || []).map(([n, d]) => [n, d]));
        for (const [n, text] of given) {
          if (!(n in values)) {
            const known = Object.keys(values).join(', ') || 'it takes none';
            throw `workload \`${name}\` has no param \`${n}\` (known: ${known})`;
          }
          values[n] = text;
        }
        const made = w.setup(values);
        current = typeof made === 'function' ? { run: made } : made;
      } catch (e) {
        throw describe(e);
      }
    },
    run(iteration) {
      if (current === null) {
        throw '`run` was called before a successful `setup` (set a workload up first)';
      }
      try {
        return current.run(iteration) || 0;
      } catch (e) {
        throw describe(e);
      }
    },
    teardown() {
      if (current === null) {
        throw '`teardown` was called without a set-up workload (the host calls it once per setup)';
      }
      const done = current;
      current = null;
      try {
        if (typeof done.teardown === 'function') done.teardown();
      } catch (e) {
        throw describe(e);
      }
    },
  };
}

/** Param `name` as a whole number, with the host's wording when it is not. */
export function int(params, name) {
  const text = String(params[name]).trim();
  if (!/^[0-9]+$/.test(text)) {
    throw `param \`${name}\` = \`${params[name]}\` is not a whole number (give digits only, e.g. \`1000\`)`;
  }
  return Number(text);
}

/** Param `name` as a finite decimal number, with the host's wording when it is not. */
export function float(params, name) {
  const text = String(params[name]).trim();
  // Number('') is 0 and Number('0x10') is 16: only decimal notation, as the host's f64.
  const value = /^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/.test(text) ? Number(text) : NaN;
  if (!Number.isFinite(value)) {
    throw `param \`${name}\` = \`${params[name]}\` is not a finite number (give a decimal, e.g. \`0.99\`)`;
  }
  return value;
}
