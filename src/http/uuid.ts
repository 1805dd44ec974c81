import { randomFillSync } from 'node:crypto';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

/** UUIDs are case-insensitive everywhere; this is the one stored and emitted form. */
export function normalizeUuid(value: string): string {
  return value.toLowerCase();
}

/** Random bytes per id: two to seed the counter, eight for the rest (62 bits used). */
const DRAW = 10;
/** Drawn in batches: one system call per 256 ids instead of one each. */
const POOL_SIZE = DRAW * 256;
const pool = Buffer.alloc(POOL_SIZE);
let poolOffset = POOL_SIZE;

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));
let lastMillis = -1;
let counter = 0;

/**
 * A new UUID version 7 (RFC 9562): the 48-bit Unix time in milliseconds, then a 12-bit counter
 * (rand_a, RFC 9562 section 6.2 method 1) and 62 random bits. Ids made one after another sort in
 * the order they were made, even within a millisecond or when the clock steps back, so each new
 * row lands at the end of its primary-key index instead of on a random page of it.
 * The counter starts each millisecond at a random value below 2^11, leaving room to count up; when
 * it runs out, the timestamp moves on by one millisecond.
 */
export function uuidv7(now = Date.now()): string {
  if (poolOffset === POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += DRAW;
  if (now > lastMillis) {
    lastMillis = now;
    counter = ((pool[at]! << 8) | pool[at + 1]!) & 0x7ff;
  } else if (++counter > 0xfff) {
    lastMillis++;
    counter = ((pool[at]! << 8) | pool[at + 1]!) & 0x7ff;
  }
  const ms = lastMillis;
  const high = Math.floor(ms / 0x1000000);
  const low = ms % 0x1000000;
  return (
    HEX[(high >>> 16) & 0xff]! +
    HEX[(high >>> 8) & 0xff]! +
    HEX[high & 0xff]! +
    HEX[(low >>> 16) & 0xff]! +
    '-' +
    HEX[(low >>> 8) & 0xff]! +
    HEX[low & 0xff]! +
    '-' +
    HEX[0x70 | (counter >>> 8)]! +
    HEX[counter & 0xff]! +
    '-' +
    HEX[0x80 | (pool[at + 2]! & 0x3f)]! +
    HEX[pool[at + 3]!]! +
    '-' +
    HEX[pool[at + 4]!]! +
    HEX[pool[at + 5]!]! +
    HEX[pool[at + 6]!]! +
    HEX[pool[at + 7]!]! +
    HEX[pool[at + 8]!]! +
    HEX[pool[at + 9]!]!
  );
}
