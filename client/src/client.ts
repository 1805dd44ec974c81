import * as oauth from 'oauth4webapi';
import { ContentServiceError, errorFromResponse, fromOAuthFailure, oauthError } from './errors.ts';
import { MemoryTokenStore, type StoredTokens, type TokenStore } from './token-store.ts';
import { projectsApi, sessionsApi, userApi, usersApi } from './v4.ts';

export interface ClientOptions {
  /** The service's issuer (its base URL), e.g. https://api.example.com. */
  issuer: string | URL;
  clientId: string;
  /** Only for confidential clients; a desktop or CLI app is public and has none. */
  clientSecret?: string;
  /** Scopes to ask for at sign-in (space-separated); default "common". */
  scope?: string;
  /** Default: a MemoryTokenStore. */
  tokenStore?: TokenStore;
  /** Refresh the access token when it has less than this many seconds left; default 60. */
  refreshMarginSeconds?: number;
  /** Plain http is refused except to loopback addresses unless this is true. */
  allowInsecureRequests?: boolean;
  /** For tests: the clock (epoch ms) and fetch the client uses. */
  now?: () => number;
  fetch?: typeof fetch;
}

export interface DeviceCode {
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  interval: number;
}

export interface DeviceSignInOptions {
  /** Called once with the code to show the user (and the URL to put in a QR code). */
  onCode: (code: DeviceCode) => void | Promise<void>;
  scope?: string;
  signal?: AbortSignal;
}

export interface SignInResult {
  scope: string;
  /** When the access token expires (it is refreshed by itself). */
  expiresAt: Date;
}

const isLoopback = (url: URL) =>
  ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) || url.hostname.endsWith('.localhost');

/**
 * One application's access to the service: sign-in (device or desktop browser flow), tokens kept
 * in a TokenStore and refreshed shortly before they expire, sign-out, and the v4 classes.
 * Create it with `await ContentServiceClient.discover({ issuer, clientId })`.
 */
export class ContentServiceClient {
  readonly as: oauth.AuthorizationServer;
  readonly client: oauth.Client;
  readonly options: ClientOptions;
  readonly tokenStore: TokenStore;
  /** The TokenStore key of this issuer and client. */
  readonly storeKey: string;
  private readonly clientAuth: oauth.ClientAuth;
  private refreshing: Promise<StoredTokens> | undefined;

  readonly projects = projectsApi(this);
  readonly sessions = sessionsApi(this);
  readonly users = usersApi(this);
  /** The signed-in user. */
  readonly user = userApi(this);

  /** Reads the service's metadata (RFC 8414) from the issuer and answers a client for it. */
  static async discover(options: ClientOptions): Promise<ContentServiceClient> {
    const issuer = new URL(options.issuer);
    const settings = requestSettings(options, issuer);
    let as: oauth.AuthorizationServer;
    try {
      const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...settings });
      as = await oauth.processDiscoveryResponse(issuer, response);
    } catch (error) {
      const failure = fromOAuthFailure(error);
      throw new ContentServiceError({
        status: failure.status,
        code: 'discoveryFailed',
        message: `Could not read the service's OAuth metadata from ${issuer.origin}: ${failure.message}`,
        cause: error,
      });
    }
    return new ContentServiceClient(as, options);
  }

  constructor(as: oauth.AuthorizationServer, options: ClientOptions) {
    this.as = as;
    this.options = options;
    this.client = {
      client_id: options.clientId,
      token_endpoint_auth_method: options.clientSecret ? 'client_secret_basic' : 'none',
    };
    this.clientAuth = options.clientSecret ? oauth.ClientSecretBasic(options.clientSecret) : oauth.None();
    this.tokenStore = options.tokenStore ?? new MemoryTokenStore();
    this.storeKey = `${new URL(as.issuer).href} ${options.clientId}`;
  }

  /** The base URL of the API (the issuer, without a trailing slash). */
  get baseUrl(): string {
    return this.as.issuer.replace(/\/+$/, '');
  }

  /** oauth4webapi options: custom fetch, and plain http where allowed. */
  get settings() {
    return requestSettings(this.options, new URL(this.as.issuer));
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /**
   * Device sign-in (RFC 8628, with PKCE): hands the code to `onCode`, then polls the token
   * endpoint every `interval` seconds (5 s more after each slow_down) until the user approves
   * (resolves), denies (access_denied) or the code expires (expired_token).
   */
  async signInWithDevice(options: DeviceSignInOptions): Promise<SignInResult> {
    try {
      const verifier = oauth.generateRandomCodeVerifier();
      const parameters = {
        scope: options.scope ?? this.options.scope ?? 'common',
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      };
      const started = await oauth.deviceAuthorizationRequest(this.as, this.client, this.clientAuth, parameters, {
        ...this.settings,
        signal: options.signal,
      });
      // The service answers 201 as its interface requires; RFC 8628 (and oauth4webapi) expect 200.
      const response =
        started.status === 201
          ? new Response(await started.text(), { status: 200, headers: started.headers })
          : started;
      const device = await oauth.processDeviceAuthorizationResponse(this.as, this.client, response);
      let interval = device.interval ?? 5;
      const deadline = Date.now() + device.expires_in * 1000;
      await options.onCode({
        user_code: device.user_code,
        verification_uri: device.verification_uri,
        ...(device.verification_uri_complete && { verification_uri_complete: device.verification_uri_complete }),
        expires_in: device.expires_in,
        interval,
      });
      for (;;) {
        await sleep(interval * 1000, options.signal);
        if (Date.now() > deadline)
          throw oauthError(400, 'expired_token', 'The code expired before the sign-in was approved; start again.');
        try {
          const polled = await oauth.deviceCodeGrantRequest(this.as, this.client, this.clientAuth, device.device_code, {
            ...this.settings,
            signal: options.signal,
            additionalParameters: { code_verifier: verifier },
          });
          return await this.keep(await oauth.processDeviceCodeResponse(this.as, this.client, polled));
        } catch (error) {
          if (!(error instanceof oauth.ResponseBodyError)) throw error;
          if (error.error === 'authorization_pending') continue;
          if (error.error === 'slow_down') {
            interval += 5;
            continue;
          }
          if (error.error === 'access_denied')
            throw oauthError(error.status, 'access_denied', 'The sign-in was denied.', error);
          if (error.error === 'expired_token')
            throw oauthError(
              error.status,
              'expired_token',
              'The code expired before the sign-in was approved; start again.',
              error,
            );
          throw error;
        }
      }
    } catch (error) {
      throw fromOAuthFailure(error);
    }
  }

  /**
   * Browser sign-in for desktop apps (RFC 8252, Node only): listens on an ephemeral 127.0.0.1
   * port, opens the system browser at the authorization URL (PKCE, state) and takes the code
   * from the redirect after checking `state` and `iss`.
   */
  async signInWithBrowser(options: import('./loopback.ts').BrowserSignInOptions = {}): Promise<SignInResult> {
    const { browserSignIn } = await import('./loopback.ts');
    try {
      const { params, redirectUri, verifier } = await browserSignIn(this, options);
      const response = await oauth.authorizationCodeGrantRequest(
        this.as,
        this.client,
        this.clientAuth,
        params,
        redirectUri,
        verifier,
        this.settings,
      );
      return await this.keep(await oauth.processAuthorizationCodeResponse(this.as, this.client, response));
    } catch (error) {
      throw fromOAuthFailure(error);
    }
  }

  private async keep(response: oauth.TokenEndpointResponse): Promise<SignInResult> {
    const tokens: StoredTokens = {
      accessToken: response.access_token,
      ...(response.refresh_token && { refreshToken: response.refresh_token }),
      expiresAt: this.now() + (response.expires_in ?? 3600) * 1000,
      scope: response.scope ?? '',
    };
    await this.tokenStore.set(this.storeKey, tokens);
    return { scope: tokens.scope, expiresAt: new Date(tokens.expiresAt) };
  }

  /** Whether tokens are stored (they may still turn out to be revoked). */
  async isSignedIn(): Promise<boolean> {
    return (await this.tokenStore.get(this.storeKey)) !== undefined;
  }

  /**
   * A valid access token: the stored one, or, when it expires within the margin, a refreshed one.
   * Concurrent callers share one refresh (a refresh token is single use: a second refresh with
   * the same token would count as reuse and end the session).
   */
  async accessToken(): Promise<string> {
    const tokens = await this.tokenStore.get(this.storeKey);
    if (!tokens) throw notSignedIn();
    const margin = (this.options.refreshMarginSeconds ?? 60) * 1000;
    if (tokens.expiresAt - margin > this.now()) return tokens.accessToken;
    return (await this.refresh()).accessToken;
  }

  /** Refreshes the tokens now (shared with any refresh already running). */
  refresh(): Promise<StoredTokens> {
    this.refreshing ??= this.refreshOnce().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async refreshOnce(): Promise<StoredTokens> {
    const tokens = await this.tokenStore.get(this.storeKey);
    if (!tokens) throw notSignedIn();
    if (!tokens.refreshToken) {
      await this.tokenStore.delete(this.storeKey);
      throw sessionEnded('The access token expired and there is no refresh token; sign in again.');
    }
    try {
      const response = await oauth.refreshTokenGrantRequest(
        this.as,
        this.client,
        this.clientAuth,
        tokens.refreshToken,
        this.settings,
      );
      await this.keep(await oauth.processRefreshTokenResponse(this.as, this.client, response));
    } catch (error) {
      const failure = fromOAuthFailure(error);
      if (failure.error === 'invalid_grant') {
        await this.tokenStore.delete(this.storeKey);
        throw sessionEnded('The session has ended (signed out, revoked or expired); sign in again.', failure);
      }
      throw failure;
    }
    return (await this.tokenStore.get(this.storeKey))!;
  }

  /**
   * Signs out: revokes the session at the service (RFC 7009; either token ends it) and forgets
   * the tokens. The tokens are forgotten even when the service cannot be reached; that error is
   * then thrown.
   */
  async signOut(): Promise<void> {
    const tokens = await this.tokenStore.get(this.storeKey);
    if (!tokens) return;
    try {
      await this.revoke(
        tokens.refreshToken ?? tokens.accessToken,
        tokens.refreshToken ? 'refresh_token' : 'access_token',
      );
    } finally {
      await this.tokenStore.delete(this.storeKey);
    }
  }

  /** Revokes one token (RFC 7009). */
  async revoke(token: string, hint?: 'access_token' | 'refresh_token'): Promise<void> {
    try {
      const response = await oauth.revocationRequest(this.as, this.client, this.clientAuth, token, {
        ...this.settings,
        ...(hint && { additionalParameters: { token_type_hint: hint } }),
      });
      await oauth.processRevocationResponse(response);
    } catch (error) {
      throw fromOAuthFailure(error);
    }
  }

  /**
   * An authenticated v4 request. `body` is sent as JSON. A refused token (401) is refreshed once
   * and the request repeated; a session that has ended is a ContentServiceError code "sessionEnded".
   */
  async request<T>(
    method: string,
    path: string,
    options: { query?: Record<string, string | number | undefined>; body?: unknown } = {},
  ): Promise<T> {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) url.searchParams.set(name, String(value));
    const send = async (token: string) => {
      const headers = new Headers({ accept: 'application/json' });
      let body: string | undefined;
      if (options.body !== undefined) {
        headers.set('content-type', 'application/json');
        body = JSON.stringify(options.body);
      }
      try {
        return await oauth.protectedResourceRequest(token, method, url, headers, body, this.settings);
      } catch (error) {
        if (error instanceof oauth.WWWAuthenticateChallengeError) return error.response;
        throw fromOAuthFailure(error);
      }
    };
    let response = await send(await this.accessToken());
    if (response.status === 401) {
      await response.body?.cancel();
      response = await send((await this.refresh()).accessToken);
    }
    if (!response.ok) throw await errorFromResponse(response);
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }
}

function requestSettings(options: ClientOptions, issuer: URL) {
  const insecure = options.allowInsecureRequests ?? (issuer.protocol === 'http:' && isLoopback(issuer));
  return {
    ...(insecure && { [oauth.allowInsecureRequests]: true as const }),
    // biome-ignore lint/suspicious/noExplicitAny: oauth4webapi's customFetch takes the platform's RequestInit
    ...(options.fetch && { [oauth.customFetch]: options.fetch as (url: string, init: any) => Promise<Response> }),
  };
}

function notSignedIn() {
  return new ContentServiceError({ status: 401, code: 'notSignedIn', message: 'Not signed in; sign in first.' });
}

function sessionEnded(message: string, cause?: ContentServiceError) {
  return new ContentServiceError({
    status: 401,
    code: 'sessionEnded',
    message,
    ...(cause?.error && { error: cause.error }),
    ...(cause?.error_description && { error_description: cause.error_description }),
    cause,
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
