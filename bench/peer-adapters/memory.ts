// The in-memory peer (information only: nobody keeps tokens in a Map in production). An unbounded
// Map per model; the provider's own development adapter is an LRU of 1,000 entries, which would
// drop most of the pre-minted codes. Consume marks, grant revocation removes the grant's tokens.
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { PeerStorage } from './storage.ts';

export function openMemory(): PeerStorage {
  const stores = new Map<string, Map<string, AdapterPayload>>();
  const grants = new Map<string, Set<string>>();
  const adapter = (model: string): Adapter => {
    const records = stores.get(model) ?? new Map<string, AdapterPayload>();
    stores.set(model, records);
    const findBy = (field: 'userCode' | 'uid', value: string) => {
      for (const payload of records.values()) if (payload[field] === value) return payload;
      return undefined;
    };
    return {
      async upsert(id, payload) {
        records.set(id, payload);
        if (payload.grantId) {
          const members = grants.get(payload.grantId) ?? new Set<string>();
          grants.set(payload.grantId, members);
          members.add(`${model}:${id}`);
        }
      },
      find: async (id) => records.get(id),
      findByUserCode: async (userCode) => findBy('userCode', userCode),
      findByUid: async (uid) => findBy('uid', uid),
      async consume(id) {
        const payload = records.get(id);
        if (payload) payload.consumed = Math.floor(Date.now() / 1000);
      },
      async destroy(id) {
        records.delete(id);
      },
      async revokeByGrantId(grantId) {
        for (const key of grants.get(grantId) ?? []) {
          const colon = key.indexOf(':');
          stores.get(key.slice(0, colon))?.delete(key.slice(colon + 1));
        }
        grants.delete(grantId);
      },
    };
  };
  return { adapter, describe: 'in memory: an unbounded Map per model', close: async () => {} };
}
