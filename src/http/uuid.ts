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

/**
 * Each id's text is written here and read out as one string: concatenating its 20 pieces made a
 * string at each step, ~600 bytes of garbage an id (a bulk POST makes 250).
 */
const text = Buffer.from('00000000-0000-7000-8000-000000000000', 'latin1');
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
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
  // Each byte as two hex digits at its place in the text (the dashes stay).
  writeHex(0, (high >>> 16) & 0xff);
  writeHex(2, (high >>> 8) & 0xff);
  writeHex(4, high & 0xff);
  writeHex(6, (low >>> 16) & 0xff);
  writeHex(9, (low >>> 8) & 0xff);
  writeHex(11, low & 0xff);
  writeHex(14, 0x70 | (counter >>> 8));
  writeHex(16, counter & 0xff);
  writeHex(19, 0x80 | (pool[at + 2]! & 0x3f));
  writeHex(21, pool[at + 3]!);
  for (let index = 0; index < 6; index++) writeHex(24 + 2 * index, pool[at + 4 + index]!);
  return text.toString('latin1', 0, 36);
}

function writeHex(position: number, byte: number): void {
  text[position] = HEX_DIGITS[byte >>> 4]!;
  text[position + 1] = HEX_DIGITS[byte & 0xf]!;
}
