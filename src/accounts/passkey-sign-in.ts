/**
 * The passkey step of the sign-in service (src/accounts/sign-in.ts): WebAuthn with user
 * verification (DESIGN "Passkeys"). It is a complete sign-in: no password and no two-step code
 * follow, whether two-step is on or not.
 *
 *   passkeySignInOptions(db, rp, bindingHash)               → the options for navigator.credentials.get
 *   passkeyStep(ctx, rp, { response, bindingHash })        → an outcome:
 *     { kind: 'signed_in', account, method: 'passkey', twoStep: 'user_verified' }
 *     { kind: 'refused', reason }                          recorded as passkey_refused
 *     { kind: 'limited', retryAfterMs, accountLimited }    over the password form's limits
 *
 * An attempt counts against the password form's limits (per IP, and per account once the
 * credential names one) before it is checked, and is given back when it succeeds.
 */
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { countAttempt } from '../http/attempt-limits.ts';
import { countPasskeySignIn } from '../http/metrics.ts';
import { findAccount } from './accounts.ts';
import { CHALLENGE_TTL_MS, consumeChallenge, issueChallenge } from './passkey-challenges.ts';
import { findPasskey, recordPasskeyUse } from './passkeys.ts';
import type { RelyingParty } from './relying-party.ts';
import { type EventOrigin, recordSecurityEvent } from './security-events.ts';
import {
  type Limited,
  type Locked,
  refuseLocked,
  type SignInContext,
  type SignInOutcome,
  signInSucceeded,
} from './sign-in.ts';
import { type WebAuthnHelpers, webauthn } from './webauthn.ts';

export type PasskeyRefusal =
  | 'malformed'
  | 'challenge'
  | 'unknown_credential'
  | 'user_mismatch'
  | 'invalid'
  | 'counter_went_back';

export type PasskeySignInOutcome =
  | Extract<SignInOutcome, { kind: 'signed_in' }>
  | { kind: 'refused'; reason: PasskeyRefusal }
  | Limited
  | Locked;

/** The user handle a passkey of `userId` carries (WebAuthn user.id): the user id's UTF-8 bytes. */
export const userHandleOf = (userId: string) => new TextEncoder().encode(userId);

export async function passkeySignInOptions(db: Kysely<Schema>, rp: RelyingParty, bindingHash: string) {
  const challenge = await issueChallenge(db, { bindingHash, purpose: 'sign_in' });
  const { generateAuthenticationOptions, isoBase64URL } = await webauthn();
  // No allowCredentials: the browser offers the passkeys it holds for this site (discoverable).
  return generateAuthenticationOptions({
    rpID: rp.id,
    challenge: isoBase64URL.toBuffer(challenge),
    userVerification: 'required',
    timeout: CHALLENGE_TTL_MS,
  });
}

const B64URL = /^[A-Za-z0-9_-]*={0,2}$/;
const isB64 = (value: unknown, max: number): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= max && B64URL.test(value);

/** The browser's answer, checked for shape and size before the library reads it. */
export function parseAuthenticationResponse(body: unknown): AuthenticationResponseJSON | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { id, rawId, type, response, clientExtensionResults, authenticatorAttachment } = body as Record<
    string,
    unknown
  >;
  if (!isB64(id, 1400) || rawId !== id || type !== 'public-key') return undefined;
  if (typeof response !== 'object' || response === null || Array.isArray(response)) return undefined;
  const { clientDataJSON, authenticatorData, signature, userHandle } = response as Record<string, unknown>;
  // Signatures up to ML-DSA-87's 4,627 bytes (6,170 characters): where the runtime verifies ML-DSA
  // (Node 24 and later) the library offers it, and authenticators may pick it.
  if (!isB64(clientDataJSON, 8192) || !isB64(authenticatorData, 8192) || !isB64(signature, 8192)) return undefined;
  if (userHandle !== undefined && userHandle !== null && !isB64(userHandle, 128)) return undefined;
  return {
    id,
    rawId: id,
    type: 'public-key',
    response: {
      clientDataJSON,
      authenticatorData,
      signature,
      ...(typeof userHandle === 'string' ? { userHandle } : {}),
    },
    clientExtensionResults:
      typeof clientExtensionResults === 'object' && clientExtensionResults !== null
        ? (clientExtensionResults as AuthenticationResponseJSON['clientExtensionResults'])
        : {},
    ...(authenticatorAttachment === 'platform' || authenticatorAttachment === 'cross-platform'
      ? { authenticatorAttachment }
      : {}),
  };
}

/** The challenge the answer signed, or undefined when its client data cannot be read. */
function answeredChallenge(
  { decodeClientDataJSON }: WebAuthnHelpers,
  response: AuthenticationResponseJSON,
): string | undefined {
  try {
    const clientData = decodeClientDataJSON(response.response.clientDataJSON);
    return typeof clientData.challenge === 'string' ? clientData.challenge : undefined;
  } catch {
    return undefined;
  }
}

/** The counter the authenticator reported, when its data can be read. */
function reportedCounter(
  { parseAuthenticatorData, isoBase64URL }: WebAuthnHelpers,
  response: AuthenticationResponseJSON,
): number | undefined {
  try {
    return parseAuthenticatorData(isoBase64URL.toBuffer(response.response.authenticatorData)).counter;
  } catch {
    return undefined;
  }
}

/** Checks a passkey sign-in (see the top of this module). */
export async function passkeyStep(
  ctx: SignInContext,
  rp: RelyingParty,
  input: { response: unknown; bindingHash: string },
): Promise<PasskeySignInOutcome> {
  const { db } = ctx;
  const { passwordByIp, passwordByAccount } = ctx.limits;
  const origin: EventOrigin = { ip: ctx.ip, ...(ctx.log ? { log: ctx.log } : {}) };
  const response = parseAuthenticationResponse(input.response);
  const passkey = response ? await findPasskey(db, response.id) : undefined;
  const eventBase = { clientId: ctx.clientId };
  const attempt = await countAttempt([
    passwordByIp.of(ctx.ip),
    ...(passkey ? [passwordByAccount.of(`user:${passkey.userId}`)] : []),
  ]);
  if (attempt.refusedBy.length > 0) {
    countPasskeySignIn('limited');
    await recordSecurityEvent(db, origin, {
      kind: 'sign_in_locked_out',
      userId: passkey?.userId,
      ...eventBase,
      details: { step: 'passkey', page: ctx.page, retry_after_s: Math.ceil(attempt.retryAfterMs / 1000) },
    });
    return {
      kind: 'limited',
      retryAfterMs: attempt.retryAfterMs,
      accountLimited: attempt.refusedBy.includes(passwordByAccount),
    };
  }
  const refuse = async (reason: PasskeyRefusal, userId?: string): Promise<PasskeySignInOutcome> => {
    countPasskeySignIn('refused', reason);
    await recordSecurityEvent(db, origin, {
      kind: 'passkey_refused',
      userId,
      ...eventBase,
      details: { reason, page: ctx.page, ...(passkey && userId ? { passkey: passkey.name } : {}) },
    });
    return { kind: 'refused', reason };
  };
  if (!response) return refuse('malformed');
  const library = await webauthn();
  const { isoBase64URL } = library;
  // The challenge is used up whatever follows: one answer per challenge.
  const challenge = answeredChallenge(library, response);
  if (!challenge || !(await consumeChallenge(db, challenge, { bindingHash: input.bindingHash, purpose: 'sign_in' })))
    return refuse('challenge', passkey?.userId);
  if (!passkey) return refuse('unknown_credential');
  // A discoverable credential names its user; it must be the one the credential was added for.
  const handle = response.response.userHandle;
  if (handle !== undefined && handle !== isoBase64URL.fromBuffer(userHandleOf(passkey.userId)))
    return refuse('user_mismatch', passkey.userId);
  const account = await findAccount(db, passkey.userId);
  if (!account) return refuse('unknown_credential');

  let newCounter: number;
  try {
    const verified = await library.verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: {
        id: passkey.credentialId,
        publicKey: isoBase64URL.toBuffer(passkey.publicKey),
        counter: passkey.counter,
        transports: passkey.transports,
      },
      requireUserVerification: true,
    });
    if (!verified.verified || !verified.authenticationInfo.userVerified) return refuse('invalid', passkey.userId);
    newCounter = verified.authenticationInfo.newCounter;
  } catch {
    const counter = reportedCounter(library, response);
    const wentBack = counter !== undefined && (counter > 0 || passkey.counter > 0) && counter <= passkey.counter;
    return refuse(wentBack ? 'counter_went_back' : 'invalid', passkey.userId);
  }
  // Another sign-in with this passkey may have moved the counter meanwhile.
  if (!(await recordPasskeyUse(db, passkey.credentialId, newCounter)))
    return refuse('counter_went_back', passkey.userId);
  await attempt.succeeded();
  if (account.locked) return refuseLocked(ctx, account, 'passkey');
  countPasskeySignIn('succeeded');
  // Complete: user verification is the second factor, so no two-step code follows.
  return (await signInSucceeded(ctx, account, 'passkey', 'user_verified')) as Extract<
    SignInOutcome,
    { kind: 'signed_in' }
  >;
}
