import { ContentServiceError, errorFromResponse, fromOAuthFailure } from './errors.ts';

export type SignatureHash = 'sha256' | 'sha1';

export interface V1Options {
  /** The service's base URL (BASE_URL); its host is part of every signed text. */
  baseUrl: string;
  /** Your v1 user id and private key (PEM; PKCS#8 anywhere, any PEM Node reads on Node). Needed for signed calls only. */
  userId?: string;
  privateKey?: string;
  /** Digest for RSA keys; default sha256 (sha1 for the existing desktop client). Ed25519 has its own. */
  hash?: SignatureHash;
  /** The host signed for when requests go to another address than BASE_URL's; default BASE_URL's host. */
  signingHost?: string;
  fetch?: typeof fetch;
}

export interface V1User {
  user_id: string;
  public_key: string;
}

export interface Mod {
  mod_id: string;
  name: string;
  workshop_url: string;
  confirmed: boolean;
  confirmation_code: string;
  resource_url: string;
  confirm_url: string;
  engrams_url: string;
  spawncodes_url: string;
  pull_url: string | null;
}

export type Environment = 'Island' | 'Scorched' | 'Center' | 'Ragnarok' | 'Abberation';

export interface Engram {
  path: string;
  class: string;
  label: string;
  environments: Environment[];
  can_blueprint: boolean;
  spawn: string;
  uid: string;
  resource_url: string;
  mod_id: number | null;
  mod_name: string | null;
}

/** An engram write: `path` names it; a new one needs label, mod_id, availability (or environments) and can_blueprint. */
export interface EngramWrite {
  path: string;
  label?: string;
  mod_id?: string | number;
  availability?: number | Environment[];
  environments?: Environment[];
  can_blueprint?: boolean;
}

export interface DocumentMetadata {
  document_id: string;
  user_id: string;
  name: string;
  description: string;
  revision: number;
  download_count: number;
  last_updated: string;
  resource_url: string;
}

/** The document content shape (its format belongs to the desktop application). */
export interface DocumentContent {
  Identifier: string;
  Title: string;
  Description: string;
  Version?: number;
  LootSources: unknown[];
  [key: string]: unknown;
}

export interface DocumentQuery {
  user_id?: string;
  sort?: 'last_updated' | 'download_count';
  direction?: 'asc' | 'desc';
  count?: number;
  offset?: number;
}

export interface Deleted {
  deleted: string[];
}

const ED25519_OID = [0x06, 0x03, 0x2b, 0x65, 0x70];

function contains(bytes: Uint8Array, pattern: number[]): boolean {
  outer: for (let i = 0; i + pattern.length <= bytes.length; i++) {
    for (let j = 0; j < pattern.length; j++) if (bytes[i + j] !== pattern[j]) continue outer;
    return true;
  }
  return false;
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

const toHex = (bytes: ArrayBuffer) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');

/** A PEM private key as PKCS#8 DER: directly when it is PKCS#8, through node:crypto otherwise. */
async function pkcs8(pem: string): Promise<Uint8Array<ArrayBuffer>> {
  const match = /-----BEGIN PRIVATE KEY-----([\s\S]+?)-----END PRIVATE KEY-----/.exec(pem);
  if (match) return fromBase64(match[1]!.replace(/\s+/g, ''));
  if (typeof process === 'undefined' || !process.versions?.node) {
    throw new ContentServiceError({
      status: 0,
      code: 'invalidKey',
      message: 'In a browser the private key must be PKCS#8 PEM ("BEGIN PRIVATE KEY")',
    });
  }
  const { createPrivateKey } = await import('node:crypto');
  try {
    return new Uint8Array(createPrivateKey(pem).export({ format: 'der', type: 'pkcs8' }));
  } catch (error) {
    throw new ContentServiceError({
      status: 0,
      code: 'invalidKey',
      message: `The private key could not be read: ${(error as Error).message}`,
      cause: error,
    });
  }
}

/**
 * Signs v1 requests (RSA PKCS#1 v1.5 over SHA-256 or SHA-1, or Ed25519) with WebCrypto, so it
 * works in Node and in browsers. The signed text is the method, the URL `https://<host><path and
 * query>`, and for every method but GET the raw body, joined by line feeds.
 */
export class V1Signer {
  private key: Promise<{ key: CryptoKey; algorithm: AlgorithmIdentifier }> | undefined;

  constructor(
    readonly userId: string,
    private readonly privateKeyPem: string,
    readonly hash: SignatureHash = 'sha256',
  ) {}

  private loadKey() {
    this.key ??= (async () => {
      const der = await pkcs8(this.privateKeyPem);
      try {
        if (contains(der, ED25519_OID)) {
          return {
            key: await crypto.subtle.importKey('pkcs8', der, { name: 'Ed25519' }, false, ['sign']),
            algorithm: { name: 'Ed25519' },
          };
        }
        const key = await crypto.subtle.importKey(
          'pkcs8',
          der,
          { name: 'RSASSA-PKCS1-v1_5', hash: this.hash === 'sha1' ? 'SHA-1' : 'SHA-256' },
          false,
          ['sign'],
        );
        return { key, algorithm: { name: 'RSASSA-PKCS1-v1_5' } };
      } catch (error) {
        throw new ContentServiceError({
          status: 0,
          code: 'invalidKey',
          message: `The private key is neither RSA nor Ed25519 or could not be read: ${(error as Error).message}`,
          cause: error,
        });
      }
    })();
    return this.key;
  }

  /** The text the service expects signed. */
  static signedText(method: string, host: string, pathAndQuery: string, body: string): string {
    const url = `https://${host}${pathAndQuery}`;
    return method.toUpperCase() === 'GET' ? `GET\n${url}` : `${method.toUpperCase()}\n${url}\n${body}`;
  }

  /** The Authorization header value for one request. */
  async authorization(method: string, host: string, pathAndQuery: string, body = ''): Promise<string> {
    const { key, algorithm } = await this.loadKey();
    const signature = await crypto.subtle.sign(
      algorithm,
      key,
      new TextEncoder().encode(V1Signer.signedText(method, host, pathAndQuery, body)),
    );
    return `Basic ${btoa(`${this.userId}:${toHex(signature)}`)}`;
  }
}

const ids = (list: string | string[]) => (Array.isArray(list) ? list : [list]).map(encodeURIComponent).join(',');
const asArray = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** The v1 API: users, mods, engrams and documents, signed where the service asks for it. */
export class V1Client {
  readonly signer: V1Signer | undefined;
  private readonly base: URL;

  constructor(readonly options: V1Options) {
    this.base = new URL(options.baseUrl);
    this.signer =
      options.userId && options.privateKey ? new V1Signer(options.userId, options.privateKey, options.hash) : undefined;
  }

  /** A v1 request; `signed` adds the signature. Answers the parsed JSON (or the text, `raw`). */
  async request<T>(
    method: string,
    path: string,
    options: { body?: string; contentType?: string; signed?: boolean; raw?: boolean } = {},
  ): Promise<T> {
    const url = new URL(this.base.pathname.replace(/\/+$/, '') + path, this.base);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    if (options.signed) {
      if (!this.signer)
        throw new ContentServiceError({
          status: 0,
          code: 'notSignedIn',
          message: 'This call is signed: give userId and privateKey',
        });
      headers.authorization = await this.signer.authorization(
        method,
        this.options.signingHost ?? this.base.host,
        url.pathname + url.search,
        options.body ?? '',
      );
    }
    let response: Response;
    try {
      response = await (this.options.fetch ?? fetch)(url, {
        method,
        headers,
        ...(options.body !== undefined && { body: options.body }),
      });
    } catch (error) {
      throw fromOAuthFailure(error);
    }
    if (!response.ok) throw await errorFromResponse(response);
    const text = await response.text();
    if (options.raw) return text as T;
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }

  readonly users = {
    /** One user (public; no signature needed). */
    get: (userId: string) => this.request<V1User>('GET', `/v1/user.php/${ids(userId)}`),
    /** Those of `userIds` that exist. */
    getMany: async (userIds: string[]) => {
      try {
        return asArray(await this.request<V1User | V1User[]>('GET', `/v1/user.php/${ids(userIds)}`));
      } catch (error) {
        if (error instanceof ContentServiceError && error.status === 404) return [];
        throw error;
      }
    },
    /** Registers a user (or several) with a public key (PEM or hex DER); no signature needed. */
    create: <U extends V1User | V1User[]>(users: U) =>
      this.request<U extends V1User[] ? V1User[] : V1User>('POST', '/v1/user.php', { body: JSON.stringify(users) }),
    /** Deletes the signing user, with all their documents, mods and engrams. */
    delete: (userId = this.options.userId!) =>
      this.request<Deleted>('DELETE', `/v1/user.php/${ids(userId)}`, { signed: true }),
  };

  readonly mods = {
    /** The signing user's mods. */
    list: () => this.request<Mod[]>('GET', '/v1/mod.php', { signed: true }),
    get: (modId: string) => this.request<Mod>('GET', `/v1/mod.php/${ids(modId)}`, { signed: true }),
    /** Registers workshop mods; answers the registrations with their confirmation codes. */
    register: <M extends string | string[]>(modIds: M) =>
      this.request<M extends string[] ? Mod[] : Mod>('POST', '/v1/mod.php', {
        body: JSON.stringify(Array.isArray(modIds) ? modIds.map((mod_id) => ({ mod_id })) : { mod_id: modIds }),
        signed: true,
      }),
    /** Checks the workshop page for the confirmation code (412 while it is not there). */
    confirm: (modId: string) => this.request<Mod>('GET', `/v1/mod.php/${ids(modId)}?action=confirm`, { signed: true }),
    /** Deletes mods and all their engrams. */
    delete: (modIds: string | string[]) =>
      this.request<Deleted>('DELETE', `/v1/mod.php/${ids(modIds)}`, { signed: true }),
  };

  readonly engrams = {
    /** Every engram, or those of the given mods (public). */
    list: (options: { modIds?: string[] } = {}) =>
      this.request<Engram[]>(
        'GET',
        options.modIds?.length ? `/v1/engram.php?mod_id=${ids(options.modIds)}` : '/v1/engram.php',
      ),
    /** One engram by uid (or class string: an array when several share it). */
    get: (uidOrClass: string) => this.request<Engram | Engram[]>('GET', `/v1/engram.php/${ids(uidOrClass)}`),
    /** Adds or updates engrams of your confirmed mods. */
    save: <E extends EngramWrite | EngramWrite[]>(engrams: E) =>
      this.request<E extends EngramWrite[] ? Engram[] : Engram>('POST', '/v1/engram.php', {
        body: JSON.stringify(engrams),
        signed: true,
      }),
    delete: (uids: string | string[]) =>
      this.request<Deleted>('DELETE', `/v1/engram.php/${ids(uids)}`, { signed: true }),
  };

  readonly documents = {
    list: (query: DocumentQuery = {}) => {
      const search = new URLSearchParams();
      for (const [name, value] of Object.entries(query)) if (value !== undefined) search.set(name, String(value));
      const text = search.toString();
      return this.request<DocumentMetadata[]>('GET', `/v1/document.php${text ? `?${text}` : ''}`);
    },
    /** The metadata of one document. */
    metadata: (documentId: string) =>
      this.request<DocumentMetadata>('GET', `/v1/document.php/${ids(documentId)}?simple`),
    /** The metadata of those of `documentIds` that exist. */
    metadataMany: async (documentIds: string[]) => {
      try {
        return asArray(
          await this.request<DocumentMetadata | DocumentMetadata[]>('GET', `/v1/document.php/${ids(documentIds)},`),
        );
      } catch (error) {
        if (error instanceof ContentServiceError && error.status === 404) return [];
        throw error;
      }
    },
    /** The content (counts as a download). */
    download: (documentId: string) => this.request<string>('GET', `/v1/document.php/${ids(documentId)}`, { raw: true }),
    /** Whether a document is published. */
    exists: async (documentId: string) => {
      try {
        await this.request('HEAD', `/v1/document.php/${ids(documentId)}`, { raw: true });
        return true;
      } catch (error) {
        if (error instanceof ContentServiceError && error.status === 404) return false;
        throw error;
      }
    },
    /** Publishes (or updates) documents; a string is sent as is. */
    publish: <D extends DocumentContent | DocumentContent[] | string>(documents: D) =>
      this.request<D extends DocumentContent[] ? DocumentMetadata[] : DocumentMetadata>('POST', '/v1/document.php', {
        body: typeof documents === 'string' ? documents : JSON.stringify(documents),
        signed: true,
      }),
    delete: (documentIds: string | string[]) =>
      this.request<Deleted>('DELETE', `/v1/document.php/${ids(documentIds)}`, { signed: true }),
  };
}
