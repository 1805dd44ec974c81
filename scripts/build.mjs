// `npm run build` (run by `npm ci` through `prepare`): compiles src/ to dist/ with tsc, then copies
// the page templates and the stylesheet beside the compiled modules, which find them through
// import.meta.url. dist/ is emptied first so a deleted source file leaves no stale module behind.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

// (Another output directory may be named: the tests build into a temporary one.)
const out = process.argv[2] ?? 'dist';
rmSync(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', out], { stdio: 'inherit' });
for (const dir of ['web/templates', 'web/assets']) cpSync(`src/${dir}`, `${out}/${dir}`, { recursive: true });
