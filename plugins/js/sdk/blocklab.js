// blocklab's JavaScript SDK: the glue between a workload module and the WIT
// world `workload-plugin` (wit/), for plugins built with ComponentizeJS
// (plugins/js/build.mjs). Import it first: it makes the language's own
// sources of randomness, time and output go through the host.
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
// - transact() is FoundationDB's retry loop, and it disposes the
//   transaction: ComponentizeJS drops a resource only on [Symbol.dispose]().
import * as env from 'blocklab:bench/env@0.1.0';
import { Transaction } from 'blocklab:bench/kv@0.1.0';

export { env, Transaction };

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

/**
 * FoundationDB's retry loop: runs `body(tr)` and commits (unless
 * `commit: false`), retrying on retryable errors. Returns `{ value, retries }`.
 * The transaction is disposed however the loop ends.
 */
export function transact(body, { commit = true } = {}) {
  const tr = new Transaction();
  try {
    let retries = 0;
    for (;;) {
      try {
        const value = body(tr);
        if (commit) tr.commit();
        return { value, retries };
      } catch (e) {
        const kv = kvErrorOf(e);
        if (kv === undefined) throw e;
        try {
          tr.onError(kv);
        } catch (fatal) {
          const detail = kvErrorOf(fatal);
          throw new Error(`kv error ${detail !== undefined ? describeKv(detail) : describe(fatal)}`);
        }
        retries += 1;
      }
    }
  } finally {
    tr[Symbol.dispose]();
  }
}

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
 * setup returns the run function; errors thrown by either reach the user.
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
        current = w.setup(values);
      } catch (e) {
        throw describe(e);
      }
    },
    run(iteration) {
      if (current === null) {
        throw '`run` was called before a successful `setup` (set a workload up first)';
      }
      try {
        return current(iteration) || 0;
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
