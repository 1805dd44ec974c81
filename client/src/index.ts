export { ContentServiceClient, type ClientOptions, type DeviceCode, type DeviceSignInOptions, type SignInResult } from './client.ts';
export type { BrowserSignInOptions } from './loopback.ts';
export { ContentServiceError } from './errors.ts';
export { MemoryTokenStore, type StoredTokens, type TokenStore } from './token-store.ts';
export { FileTokenStore } from './file-token-store.ts';
export { Resource, type ListPage, type ListQuery, type Project, type ProjectCreate, type ProjectWrite, type Session, type User, type UserWrite, type WriteResult } from './v4.ts';
export {
  V1Client,
  V1Signer,
  type Deleted,
  type DocumentContent,
  type DocumentMetadata,
  type DocumentQuery,
  type Engram,
  type EngramWrite,
  type Environment,
  type Mod,
  type SignatureHash,
  type V1Options,
  type V1User,
} from './v1.ts';
