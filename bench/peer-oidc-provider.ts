// The peer the token-endpoint targets are measured against: node-oidc-provider 9, configured as an
// application developer would for what our token endpoint does (a public client with PKCE, plain
// OAuth 2.0 scopes, rotating refresh tokens, opaque tokens) and keeping everything in memory.
// It mints the single-use secrets the cases spend (one authorization code and one refresh token per
// request) before it listens, and writes them to PEER_SECRETS_FILE for the bench to hand out.
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import Provider, { type Adapter, type AdapterPayload } from 'oidc-provider';

export const PEER_CLIENT_ID = 'bench-public-client';
export const PEER_REDIRECT_URI = 'http://127.0.0.1:9/callback';
export const PEER_SCOPE = 'api:read';

/**
 * An unbounded Map per model. (The provider's own development adapter is an LRU of 1,000 entries,
 * which would drop most of the pre-minted codes.) Same semantics otherwise: consume marks, grant
 * revocation removes every token of the grant.
 */
const stores = new Map<string, Map<string, AdapterPayload>>();
const grants = new Map<string, Set<string>>();
class MapAdapter implements Adapter {
  private readonly store: Map<string, AdapterPayload>;
  constructor(private readonly model: string) {
    let store = stores.get(model);
    if (!store) stores.set(model, (store = new Map()));
    this.store = store;
  }
  async upsert(id: string, payload: AdapterPayload): Promise<void> {
    this.store.set(id, payload);
    if (payload.grantId) {
      let members = grants.get(payload.grantId);
      if (!members) grants.set(payload.grantId, (members = new Set()));
      members.add(`${this.model}:${id}`);
    }
  }
  async find(id: string): Promise<AdapterPayload | undefined> {
    return this.store.get(id);
  }
  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    for (const payload of this.store.values()) if (payload.userCode === userCode) return payload;
    return undefined;
  }
  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    for (const payload of this.store.values()) if (payload.uid === uid) return payload;
    return undefined;
  }
  async consume(id: string): Promise<void> {
    const payload = this.store.get(id);
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id: string): Promise<void> {
    this.store.delete(id);
  }
  async revokeByGrantId(grantId: string): Promise<void> {
    for (const key of grants.get(grantId) ?? []) {
      const colon = key.indexOf(':');
      stores.get(key.slice(0, colon))?.delete(key.slice(colon + 1));
    }
    grants.delete(grantId);
  }
}

const port = Number(process.env.PORT ?? 0);
const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  adapter: MapAdapter,
  clients: [
    {
      client_id: PEER_CLIENT_ID,
      token_endpoint_auth_method: 'none',
      redirect_uris: [PEER_REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
  ],
  scopes: [PEER_SCOPE],
  pkce: { required: () => true },
  rotateRefreshToken: true,
  issueRefreshToken: async () => true,
  ttl: { AccessToken: 3600, AuthorizationCode: 600, RefreshToken: 30 * 24 * 3600, Grant: 30 * 24 * 3600 },
  findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub }) }),
  features: { devInteractions: { enabled: false } },
});
provider.proxy = false;

async function mint(count: number) {
  const codeVerifier = randomBytes(32).toString('base64url');
  const codeChallenge = createHash('sha256').update(codeVerifier).digest('base64url');
  const codes: string[] = [];
  const refreshTokens: string[] = [];
  const client = (await provider.Client.find(PEER_CLIENT_ID))!;
  for (let i = 0; i < count; i++) {
    const grant = new provider.Grant({ accountId: `account-${i}`, clientId: PEER_CLIENT_ID });
    grant.addOIDCScope(PEER_SCOPE);
    const grantId = await grant.save();
    const common = { accountId: `account-${i}`, grantId, scope: PEER_SCOPE, client, gty: 'authorization_code' };
    codes.push(await new provider.AuthorizationCode({ ...common, redirectUri: PEER_REDIRECT_URI, codeChallenge, codeChallengeMethod: 'S256' }).save());
    refreshTokens.push(await new provider.RefreshToken(common).save());
  }
  return { clientId: PEER_CLIENT_ID, redirectUri: PEER_REDIRECT_URI, codeVerifier, codes, refreshTokens };
}

const secrets = await mint(Number(process.env.PEER_MINT ?? 1000));
if (process.env.PEER_SECRETS_FILE) writeFileSync(process.env.PEER_SECRETS_FILE, JSON.stringify(secrets));
const server = provider.listen(port, '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
