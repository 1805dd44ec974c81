import { createPublicKey, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';

// Parsing a PEM costs far more than verifying one signature; keys are looked up by their
// stored text, so a changed key in the database is simply a new cache entry.
const parsedKeys = new LRUCache<string, KeyObject>({ max: 10_000 });

export function keyObjectFor(storedPem: string): KeyObject {
  let key = parsedKeys.get(storedPem);
  if (!key) {
    key = createPublicKey(storedPem);
    parsedKeys.set(storedPem, key);
  }
  return key;
}
