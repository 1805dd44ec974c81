export {
  type ClientOptions,
  ContentServiceClient,
  type DeviceCode,
  type DeviceSignInOptions,
  type SignInResult,
} from './client.ts';
export { ContentServiceError } from './errors.ts';
export { FileTokenStore } from './file-token-store.ts';
export type { BrowserSignInOptions } from './loopback.ts';
export { MemoryTokenStore, type StoredTokens, type TokenStore } from './token-store.ts';
export {
  type Deleted,
  type DocumentContent,
  type DocumentMetadata,
  type DocumentQuery,
  type Engram,
  type EngramWrite,
  type Environment,
  type Mod,
  type SignatureHash,
  V1Client,
  type V1Options,
  V1Signer,
  type V1User,
} from './v1.ts';
export {
  type ListPage,
  type ListQuery,
  type Project,
  type ProjectCreate,
  type ProjectWrite,
  Resource,
  type Session,
  type User,
  type UserWrite,
  type WriteResult,
} from './v4.ts';
