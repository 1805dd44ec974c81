// Starts a worker thread's TypeScript module under tsx (the tests), where Node 20 does not apply
// tsx's loader inside worker threads: registers it, then imports workerData.entry. The built
// server never uses this (its workers are bundled JavaScript, see scripts/build.mjs).
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
