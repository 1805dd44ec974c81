// `npm run build` (run by `npm ci` through `prepare`): compiles src/ to dist/ with tsc, copies the
// page templates and the stylesheet beside the compiled modules, which find them through
// import.meta.url, then replaces dist/server.js by a bundle of the server and its dependencies.
// dist/ is emptied first so a deleted source file leaves no stale module behind. The SQLite
// thread (batches and checkpoints) is bundled the same way, as its own entry point
// (dist/db/sqlite-thread-worker.js).
//
// Why a bundle (docs/decisions/0016 and 0031): loading ~1,300 ES modules one by one costs start-up
// CPU and memory (each module's source, records and the heap grown while loading them). One file,
// whitespace-minified, starts in about a third of the CPU time and with less memory. Identifiers
// are kept, so a stack trace names the functions even without the source map (dist/server.js.map,
// used with `node --enable-source-maps`, which costs ~11 MiB, so production does not turn it on).
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { relative } from 'node:path';

// (Another output directory may be named: the tests build into a temporary one.)
const out = process.argv[2] ?? 'dist';
rmSync(out, { recursive: true, force: true });
const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', out], { stdio: 'inherit' });
for (const dir of ['web/templates', 'web/assets', 'mail/templates'])
  cpSync(`src/${dir}`, `${out}/${dir}`, { recursive: true });

const { build } = await import('esbuild');
/** A module's import.meta.url inside the bundle is the one it has in dist/, where its files are copied. */
const keepModuleUrls = {
  name: 'keep-module-urls',
  setup(context) {
    context.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, async ({ path }) => {
      let contents = await readFile(path, 'utf8');
      if (contents.includes('import.meta.url')) {
        const compiled = `./${relative('src', path).replaceAll('\\', '/').replace(/\.ts$/, '.js')}`;
        contents = contents.replaceAll('import.meta.url', `new URL(${JSON.stringify(compiled)}, import.meta.url).href`);
      }
      return { contents, loader: 'ts' };
    });
  },
};
const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  // Native addons, and packages that read files beside their own code (swagger-ui's assets), stay
  // in node_modules; pg-native is an optional peer of pg that the service does not use.
  // The password dictionaries (zxcvbn-ts, several MiB) are loaded on the first password set, not
  // parsed with the bundle at every start. So are the modules the service imports only on first
  // use (nodemailer for the first message, ioredis with REDIS_URL, qrcode for a two-step setup):
  // inside the bundle their ~0.65 MB of source was read and kept at every start (RSS at healthy
  // 98-99 -> 96-98 MiB; docs/decisions/0031).
  external: [
    'better-sqlite3',
    '@node-rs/argon2',
    '@fastify/swagger-ui',
    'pg-native',
    '@zxcvbn-ts/*',
    'nodemailer',
    'ioredis',
    'qrcode',
  ],
  // The CommonJS dependencies inside an ES module bundle need require, __filename and __dirname.
  banner: {
    js: [
      "import { createRequire as __createRequire } from 'node:module';",
      "import { fileURLToPath as __fileURLToPath } from 'node:url';",
      'const require = __createRequire(import.meta.url);',
      'const __filename = __fileURLToPath(import.meta.url);',
      "const __dirname = __fileURLToPath(new URL('.', import.meta.url));",
    ].join(' '),
  },
  plugins: [keepModuleUrls],
  logLevel: 'warning',
};
await build({ ...common, entryPoints: ['src/server.ts'], outfile: `${out}/server.js` });
// The SQLite thread is an entry point of its own: started from the file beside its starter's place
// in dist/ (db/), so it is bundled there, over tsc's output.
await build({
  ...common,
  entryPoints: ['src/db/sqlite-thread-worker.ts'],
  outfile: `${out}/db/sqlite-thread-worker.js`,
});

// The pages' passkey script with @simplewebauthn/browser, one file the service serves itself
// (src/web/assets.ts; the same options as its in-memory bundle when running from the sources).
await build({
  entryPoints: ['src/web/scripts/passkeys.js'],
  outfile: `${out}/web/assets/passkeys.js`,
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: ['chrome109', 'firefox115', 'safari16'],
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
