// Builds one JavaScript workload plugin into a component with ComponentizeJS's
// JS API (its `jco componentize` CLI fails here with "failed to get path
// metadata"):
//
//   node plugins/js/build.mjs SOURCE.js WIT_DIR OUT.wasm
//
// The toolchain is pinned in plugins/js/package.json and installed by
// `make deps-js` (npm ci). `blocklab plugin build` runs this same script.
//
// The plugin imports the SDK as `./blocklab.js`: the build stages the
// plugin's directory with plugins/js/sdk/blocklab.js beside SOURCE (one home
// for the SDK, in and out of the tree), because ComponentizeJS resolves
// imports only below the directory it builds in.
import { componentize } from '@bytecodealliance/componentize-js';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

// The host provides wasi:cli, wasi:io, wasi:clocks and wasi:random but not
// wasi:http, so `http` and `fetch-event` go. `random` and `clocks` go too:
// the SDK (sdk/blocklab.js) draws randomness from env.random (the run's
// seeded source) and time from env.now-ns, so nothing may read them
// anywhere else. `stdio` goes as well: it imports wasi:filesystem, which
// needs a grant; the SDK sends console.* to env.log and returns uncaught
// errors as the WIT error string instead.
const DISABLED = ['http', 'fetch-event', 'random', 'clocks', 'stdio'];

const args = process.argv.slice(2);
if (args.length !== 3) {
  console.error('usage: node build.mjs SOURCE.js WIT_DIR OUT.wasm');
  process.exit(2);
}
// Absolute before the chdir below.
const [source, wit, out] = args.map((a) => resolve(a));
const sdk = join(dirname(fileURLToPath(import.meta.url)), 'sdk', 'blocklab.js');
const outDir = dirname(out);
await mkdir(outDir, { recursive: true });
// Outside the plugin's directory: the output may lie inside it.
const stage = await mkdtemp(join(tmpdir(), 'blocklab-js-build-'));
try {
  const skip = new Set(['node_modules', 'target', '.git']);
  await cp(dirname(source), stage, {
    recursive: true,
    filter: (path) => !skip.has(basename(path)) && !path.endsWith('.wasm'),
  });
  await cp(sdk, join(stage, 'blocklab.js'));
  // Inside the working directory, ComponentizeJS maps it as the root.
  process.chdir(stage);
  const { component } = await componentize({
    sourcePath: join(stage, basename(source)),
    witPath: wit,
    worldName: 'workload-plugin',
    disableFeatures: DISABLED,
  });
  await writeFile(out, component);
  console.log(out);
} catch (e) {
  console.error(`error: cannot componentize \`${source}\`: ${e && e.stack ? e.stack : e}`);
  process.exitCode = 1;
} finally {
  await rm(stage, { recursive: true, force: true });
}
