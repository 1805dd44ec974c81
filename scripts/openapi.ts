/**
 * `npm run lint:openapi`: writes the OpenAPI document the server serves at /v4/openapi.json (built
 * by buildApp on a throwaway SQLite database; no server listens) to the named file.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';

const out = process.argv[2] ?? 'openapi.json';
mkdirSync(dirname(out), { recursive: true });
const dir = mkdtempSync(join(tmpdir(), 'svc-openapi-'));
try {
  const app = await buildApp({
    config: loadConfig({
      DATABASE_URL: `sqlite:${join(dir, 'openapi.db')}`,
      BASE_URL: process.env.BASE_URL ?? 'https://content-service.invalid',
      LOG_LEVEL: 'silent',
    }),
  });
  await app.ready();
  writeFileSync(out, `${JSON.stringify(app.swagger(), null, 2)}\n`);
  await app.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
