import { createHash } from 'node:crypto';
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliCompress, createGzip, constants as zlibConstants } from 'node:zlib';
import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../config.ts';
import { contentVersion } from '../../db/content-versions.ts';
import type { Schema } from '../../db/schema.ts';
import { streamEngrams } from './store.ts';
import { engramJson, engramStructure } from './structure.ts';

/** Bodies smaller than this are sent as they are: compressing them saves nothing worth the work. */
export const COMPRESSION_THRESHOLD = 1024;

/** One engram list as JSON, with its compressed forms, built from one version of the content. */
export interface EngramListBody {
  /** The content version it was built from (src/db/content-versions.ts). */
  version: number;
  /** Strong entity tag of the JSON (quoted); compressed forms append their coding. */
  tag: string;
  /**
   * The JSON in the chunks it was built in, never concatenated: a 5 MB list's concatenation and
   * its parts waiting for a full GC were ~10 MiB of the bench's peak RSS (docs/decisions/0031). Send it with `identityStream`.
   */
  identity: readonly Buffer[];
  /** The identity body's length in bytes. */
  length: number;
  br?: Buffer;
  gzip?: Buffer;
}

/**
 * The engram lists (all, or of a set of mods), serialised and compressed once and served from
 * memory until any engram or mod changes on any instance: each request reads the shared change
 * counter (one primary-key read) and rebuilds only when it moved. Bounded by bytes, least
 * recently used first out.
 */
export class EngramLists {
  private readonly bodies: LRUCache<string, EngramListBody>;
  /** Builds under way, so a burst of requests after a change builds each list once. */
  private readonly building = new Map<string, Promise<EngramListBody>>();

  constructor(
    private readonly db: () => Kysely<Schema>,
    private readonly config: Config,
    maxBytes = 64 * 1024 * 1024,
  ) {
    this.bodies = new LRUCache({
      maxSize: maxBytes,
      sizeCalculation: (body) => body.length + (body.br?.length ?? 0) + (body.gzip?.length ?? 0),
    });
  }

  /** The list of every engram (modIds undefined) or of the engrams of these mods. */
  async list(modIds: readonly string[] | undefined): Promise<EngramListBody> {
    const key = modIds === undefined ? '*' : [...new Set(modIds)].sort().join(',');
    const version = await contentVersion(this.db(), 'engrams');
    const cached = this.bodies.get(key);
    if (cached?.version === version) return cached;
    const buildKey = `${version}:${key}`;
    let pending = this.building.get(buildKey);
    if (!pending) {
      pending = this.build(modIds === undefined ? undefined : key.split(','), version).finally(() =>
        this.building.delete(buildKey),
      );
      this.building.set(buildKey, pending);
    }
    const body = await pending;
    // Another build from a newer version may have landed meanwhile: keep the newer one.
    if ((this.bodies.get(key)?.version ?? -1) < body.version) this.bodies.set(key, body);
    return body;
  }

  private async build(modIds: string[] | undefined, version: number): Promise<EngramListBody> {
    // The version is read before the rows, so the rows are at least as new as it says; a change
    // meanwhile moves the counter past it and the next request rebuilds.
    // Each chunk is encoded as it arrives, so the whole list never exists as a JS string as well
    // (issue 12: a 5 MB string, its flattened copy and the buffer were the peak RSS of the bench).
    const identity: Buffer[] = [];
    const hash = createHash('sha256');
    let length = 0;
    const add = (chunk: Buffer) => {
      identity.push(chunk);
      hash.update(chunk);
      length += chunk.length;
    };
    for await (const rows of streamEngrams(this.db(), modIds))
      add(
        jsonChunk(
          identity.length === 0 ? '[' : ',',
          rows.map((row) => engramJson(this.config, row)),
        ),
      );
    add(Buffer.from(identity.length === 0 ? '[]' : ']'));
    const tag = hash.digest('base64url').slice(0, 27);
    if (length < COMPRESSION_THRESHOLD) return { version, tag, identity, length };
    const [br, gz] = await Promise.all([
      // Quality 5 of 11: about as small as gzip's best at a fraction of brotli's top-quality time,
      // so the first request after a change is not kept waiting. A 64 KiB window instead of the
      // default 4 MiB: the list's repetition is local (each engram's path, spawn code and URL), so
      // the 10,000-engram list came out no larger (401,726 bytes against 403,946) and building it
      // peaked ~6 MiB lower (docs/decisions/0051).
      compressed(
        identity,
        createBrotliCompress({
          params: {
            [zlibConstants.BROTLI_PARAM_QUALITY]: 5,
            [zlibConstants.BROTLI_PARAM_LGWIN]: 16,
            [zlibConstants.BROTLI_PARAM_SIZE_HINT]: length,
          },
        }),
      ),
      compressed(identity, createGzip({ level: 6 })),
    ]);
    return { version, tag, identity, length, br, gzip: gz };
  }
}

/**
 * `prefix` and the items joined by commas, written straight into one buffer: joining them first
 * made a string of the chunk's size, which V8 keeps in its large-object space until a full GC.
 */
function jsonChunk(prefix: string, items: readonly string[]): Buffer {
  let length = prefix.length + items.length - 1;
  for (const item of items) length += Buffer.byteLength(item);
  const chunk = Buffer.allocUnsafeSlow(length);
  let at = chunk.write(prefix, 0, 'latin1');
  for (let i = 0; i < items.length; i++) {
    if (i > 0) chunk[at++] = 0x2c; // ','
    at += chunk.write(items[i]!, at);
  }
  return chunk;
}

/** A list's identity body as a stream of its chunks, which share the cached buffers (no copy). */
export function identityStream(body: EngramListBody): Readable {
  return Readable.from(body.identity, { objectMode: false });
}

/** The chunks run through a compressor, its output in one buffer. */
async function compressed(chunks: readonly Buffer[], compressor: Transform): Promise<Buffer> {
  const output: Buffer[] = [];
  await pipeline(Readable.from(chunks, { objectMode: false }), compressor, async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) output.push(chunk);
  });
  return Buffer.concat(output);
}

/** The engrams of one mod as structures, by label: what its spawn-code page shows. */
export async function engramsOfMod(db: Kysely<Schema>, config: Config, modId: string) {
  const engrams = [];
  for await (const rows of streamEngrams(db, [modId])) engrams.push(...rows.map((row) => engramStructure(config, row)));
  return engrams.sort((a, b) => a.label.localeCompare(b.label));
}
