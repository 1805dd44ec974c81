// One of `npm test`'s worker processes (scripts/test.mjs): asks for a test file, runs it as one
// top-level suite, and asks for the next, until the queue is empty and the parent disconnects.
// The file's top-level test(), describe() and hooks join that suite, because node:test attaches
// them to the suite whose callback is running when the module is evaluated.
import { describe } from 'node:test';
import { pathToFileURL } from 'node:url';

process.on('message', async ({ file }) => {
  // describe() at the top level answers a promise settled once the suite has run, passed or not.
  await describe(file, () => import(pathToFileURL(file).href));
  process.send({ done: file });
});
process.send({ ready: true });
