import { type ResourceLimits, Worker } from 'node:worker_threads';

/**
 * Where a worker thread of src/db/ starts: its module, beside this one and compiled the same way.
 * In the built server, dist/db/NAME.js (an esbuild entry point of its own; the bundle gives this
 * module the URL it has in dist/); under tsx (the tests), the .ts source, started through
 * tsx-worker.mjs with the source's URL as workerData.entry.
 */
const UNDER_TSX = import.meta.url.endsWith('.ts');

export function workerModule(name: string): { url: URL; entry: string | undefined } {
  if (!UNDER_TSX) return { url: new URL(`./${name}.js`, import.meta.url), entry: undefined };
  return { url: new URL('./tsx-worker.mjs', import.meta.url), entry: new URL(`./${name}.ts`, import.meta.url).href };
}

/**
 * Starts the worker thread NAME (see workerModule) with `data` as its workerData, its heap held to
 * `limits`, its output discarded, and unref'd: it does not keep the process alive by itself.
 */
export function startDbWorker(name: string, data: object, limits: ResourceLimits): Worker {
  const { url, entry } = workerModule(name);
  const worker = new Worker(url, {
    workerData: { ...data, entry },
    resourceLimits: limits,
    stdout: false,
    stderr: false,
  });
  worker.unref();
  return worker;
}
