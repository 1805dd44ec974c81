/** What a sign-in leaves behind. */
export interface StoredTokens {
  accessToken: string;
  refreshToken?: string;
  /** When the access token expires, epoch milliseconds. */
  expiresAt: number;
  scope: string;
}

/**
 * Where a client keeps its tokens. `key` names one sign-in (the issuer and client id), so one
 * store may hold several.
 */
export interface TokenStore {
  get(key: string): Promise<StoredTokens | undefined>;
  set(key: string, tokens: StoredTokens): Promise<void>;
  delete(key: string): Promise<void>;
}

/** Keeps tokens for the life of the process. */
export class MemoryTokenStore implements TokenStore {
  private readonly tokens = new Map<string, StoredTokens>();
  async get(key: string) {
    return this.tokens.get(key);
  }
  async set(key: string, tokens: StoredTokens) {
    this.tokens.set(key, { ...tokens });
  }
  async delete(key: string) {
    this.tokens.delete(key);
  }
}
