import { InvalidRequest } from './errors.ts';
import { MAX_NONCE_LENGTH } from './id-tokens.ts';
import type { KeyRing } from './key-ring.ts';

/** OpenID Connect Core §3.1.2.1's prompt values; `select_account` is not offered. */
export const PROMPT_VALUES = ['none', 'login', 'consent'] as const;
export type Prompt = (typeof PROMPT_VALUES)[number];

/** OpenID Connect's parameters of an authorization request, checked. */
export interface OidcRequest {
  nonce: string | null;
  prompts: ReadonlySet<Prompt>;
  /** The oldest sign-in the request accepts (prompt=login: none before it; max_age); null: any. */
  minAuthTime: number | null;
  loginHint: string | null;
  /** The user the id_token_hint names (its sub), when one was given. */
  hintedUserId: string | null;
}

const MAX_LOGIN_HINT_LENGTH = 320;

/**
 * Checks nonce, prompt, max_age, login_hint and id_token_hint; a bad one is invalid_request. An
 * id_token_hint must be an ID token this server signed for this client; an expired one is
 * accepted (OpenID Connect Core §3.1.2.1: it only says who is expected).
 */
export async function readOidcRequest(
  params: Record<string, string | undefined>,
  context: { clientId: string; issuer: string; keys: KeyRing; now: number },
): Promise<OidcRequest> {
  const { nonce, prompt, max_age: maxAge, login_hint: loginHint, id_token_hint: idTokenHint } = params;
  if (nonce !== undefined && nonce.length > MAX_NONCE_LENGTH)
    throw new InvalidRequest(`nonce must be at most ${MAX_NONCE_LENGTH} characters`);
  const prompts = new Set<Prompt>();
  for (const value of (prompt ?? '').split(' ').filter(Boolean)) {
    if (!(PROMPT_VALUES as readonly string[]).includes(value))
      throw new InvalidRequest(`prompt ${value} is not supported (use ${PROMPT_VALUES.join(', ')})`);
    prompts.add(value as Prompt);
  }
  if (prompts.has('none') && prompts.size > 1)
    throw new InvalidRequest('prompt=none cannot be combined with another prompt value');
  let minAuthTime: number | null = prompts.has('login') ? context.now : null;
  if (maxAge !== undefined) {
    if (!/^\d{1,9}$/.test(maxAge)) throw new InvalidRequest('max_age must be a whole number of seconds');
    minAuthTime = Math.max(minAuthTime ?? 0, context.now - Number(maxAge) * 1000);
  }
  if (loginHint !== undefined && loginHint.length > MAX_LOGIN_HINT_LENGTH)
    throw new InvalidRequest(`login_hint must be at most ${MAX_LOGIN_HINT_LENGTH} characters`);
  let hintedUserId: string | null = null;
  if (idTokenHint !== undefined) {
    const claims = await context.keys.verifyOwn(idTokenHint, context.issuer, context.now);
    const audience = claims && (Array.isArray(claims.aud) ? claims.aud : [claims.aud]);
    if (!claims || typeof claims.sub !== 'string' || !audience?.includes(context.clientId))
      throw new InvalidRequest('id_token_hint is not an ID token this server issued to this application');
    hintedUserId = claims.sub;
  }
  return {
    nonce: nonce === undefined || nonce === '' ? null : nonce,
    prompts,
    minAuthTime,
    loginHint: loginHint === undefined || loginHint === '' ? null : loginHint,
    hintedUserId,
  };
}
