import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

const stylesheet = readFileSync(new URL('./assets/site.css', import.meta.url));
/** The small script of every page (disabled buttons after a submit, copy and print, show-password buttons): served as written. */
const everyPageScript = readFileSync(new URL('./assets/page.js', import.meta.url));

/** The passkey script as `npm run build` bundled it (dist/web/assets/passkeys.js). */
const builtPageScript = new URL('./assets/passkeys.js', import.meta.url);
let pageScript: Promise<Buffer> | undefined;

/**
 * The pages' script: the built bundle, or, running from the sources (tests, tsx), the same bundle
 * made in memory on first use (esbuild is a development dependency, never loaded by the build).
 */
function loadPageScript(): Promise<Buffer> {
  pageScript ??= (existsSync(builtPageScript) ? readFile(builtPageScript) : bundleFromSources()).catch(
    (error: unknown) => {
      pageScript = undefined;
      throw error;
    },
  );
  return pageScript;
}

async function bundleFromSources(): Promise<Buffer> {
  // A specifier the server's bundler leaves alone (it cannot bundle esbuild itself).
  const specifier = 'esbuild';
  const esbuild = (await import(specifier)) as typeof import('esbuild');
  const result = await esbuild.build({
    entryPoints: [fileURLToPath(new URL('./scripts/passkeys.js', import.meta.url))],
    // The same options as scripts/build.mjs.
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome109', 'firefox115', 'safari16'],
    minify: true,
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  });
  return Buffer.from(result.outputFiles[0]!.contents);
}

/** The pages' assets (stylesheet and scripts), served by the service itself so pages need nothing external. */
export async function assetRoutes(app: FastifyInstance): Promise<void> {
  app.get('/assets/site.css', { logLevel: 'warn' }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(stylesheet),
  );
  app.get('/assets/page.js', { logLevel: 'warn' }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(everyPageScript),
  );
  app.get('/assets/passkeys.js', { logLevel: 'warn' }, async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=3600')
      .send(await loadPageScript()),
  );
}
