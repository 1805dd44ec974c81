// The Redis peer: the layout of the maintainers' Redis example adapter (example/adapters/redis.js)
// on ioredis. A key per record (`<model>:<id>`): a hash for the single-use models, so consume is one
// HSET, a JSON string for the others; a list per grant (`grant:<grantId>`) naming its records, for
// revokeByGrantId; `userCode:`/`uid:` keys pointing at ids; EXPIRE on each. Every key carries this
// run's own prefix, and close deletes them all.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { PeerStorage } from './storage.ts';

const grantable = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
]);
const consumable = new Set(['AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest']);

export async function openRedis(url: string): Promise<PeerStorage> {
  const prefix = `bench-peer-${randomBytes(4).toString('hex')}:`;
  const client = new Redis(url, { keyPrefix: prefix });
  // What this Redis keeps across a restart (CONFIG may be disabled on a managed server).
  const config = (await client.config('GET', 'appendonly', 'appendfsync', 'save').catch(() => [])) as string[];

  const adapter = (model: string): Adapter => {
    const key = (id: string) => `${model}:${id}`;
    const hashed = consumable.has(model);
    const find = async (id: string | null): Promise<AdapterPayload | undefined> => {
      if (!id) return undefined;
      if (!hashed) {
        const data = await client.get(key(id));
        return data ? JSON.parse(data) : undefined;
      }
      const { payload, ...rest } = await client.hgetall(key(id));
      return payload === undefined ? undefined : { ...rest, ...JSON.parse(payload) };
    };
    return {
      async upsert(id, payload, expiresIn) {
        const multi = client.multi();
        if (hashed) multi.hset(key(id), { payload: JSON.stringify(payload) });
        else multi.set(key(id), JSON.stringify(payload));
        if (expiresIn) multi.expire(key(id), expiresIn);
        if (grantable.has(model) && payload.grantId) {
          const grantKey = `grant:${payload.grantId}`;
          multi.rpush(grantKey, key(id));
          const ttl = await client.ttl(grantKey);
          if (expiresIn && expiresIn > ttl) multi.expire(grantKey, expiresIn);
        }
        for (const lookup of [
          payload.userCode && `userCode:${payload.userCode}`,
          payload.uid && `uid:${payload.uid}`,
        ]) {
          if (!lookup) continue;
          multi.set(lookup, id);
          if (expiresIn) multi.expire(lookup, expiresIn);
        }
        await multi.exec();
      },
      find,
      findByUid: async (uid) => find(await client.get(`uid:${uid}`)),
      findByUserCode: async (userCode) => find(await client.get(`userCode:${userCode}`)),
      async consume(id) {
        await client.hset(key(id), 'consumed', Math.floor(Date.now() / 1000));
      },
      async destroy(id) {
        await client.del(key(id));
      },
      async revokeByGrantId(grantId) {
        const grantKey = `grant:${grantId}`;
        const tokens = await client.lrange(grantKey, 0, -1);
        const multi = client.multi();
        for (const token of tokens) multi.del(token);
        multi.del(grantKey);
        await multi.exec();
      },
    };
  };

  return {
    adapter,
    describe: `ioredis to ${new URL(url).host}, ${[...pairs(config)].map(([name, value]) => `${name}=${value === '' ? '""' : value}`).join(', ') || 'persistence settings not readable'}`,
    async close() {
      // keyPrefix does not apply to SCAN's pattern: scan and delete with a client without it.
      const plain = new Redis(url);
      let cursor = '0';
      do {
        const [next, keys] = await plain.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await plain.unlink(...keys);
        cursor = next;
      } while (cursor !== '0');
      await plain.quit();
      await client.quit();
    },
  };
}

function* pairs(flat: string[]): Generator<[string, string]> {
  for (let i = 0; i + 1 < flat.length; i += 2) yield [flat[i]!, flat[i + 1]!];
}
