/**
 * A signed-in user's passkeys: adding one (WebAuthn registration with a resident key and user
 * verification), renaming and removing one. Each change is recorded as a security event
 * (passkey_added, passkey_removed). Removing the account's last way to sign in (no password and no
 * other passkey) is refused.
 */
import type { RegistrationResponseJSON, WebAuthnCredential } from '@simplewebauthn/server';
import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import type { Schema } from '../db/schema.ts';
import type { Account } from './accounts.ts';
import { CHALLENGE_TTL_MS, consumeChallenge, issueChallenge } from './passkey-challenges.ts';
import { userHandleOf } from './passkey-sign-in.ts';
import {
  cleanPasskeyName,
  deletePasskey,
  insertPasskey,
  listPasskeys,
  type Passkey,
  renamePasskey,
} from './passkeys.ts';
import type { RelyingParty } from './relying-party.ts';
import { type EventOrigin, recordSecurityEvent } from './security-events.ts';
import { webauthn } from './webauthn.ts';

/** Passkeys one account may hold. */
export const MAX_PASSKEYS = 20;

/** What the account's passkey actions need: the database, who asks, the relying party. */
export interface AccountContext {
  db: Kysely<Schema>;
  origin: EventOrigin;
  rp: RelyingParty;
}

export async function passkeyRegistrationOptions(ctx: AccountContext, account: Account, bindingHash: string) {
  const existing = await listPasskeys(ctx.db, account.userId);
  if (existing.length >= MAX_PASSKEYS) return undefined;
  const challenge = await issueChallenge(ctx.db, { bindingHash, purpose: 'register', userId: account.userId });
  const { generateRegistrationOptions, isoBase64URL } = await webauthn();
  return generateRegistrationOptions({
    rpName: ctx.rp.name,
    rpID: ctx.rp.id,
    userName: account.username,
    userDisplayName: account.username,
    userID: userHandleOf(account.userId),
    challenge: isoBase64URL.toBuffer(challenge),
    timeout: CHALLENGE_TTL_MS,
    attestationType: 'none',
    // The same authenticator is not added twice.
    excludeCredentials: existing.map((passkey) => ({ id: passkey.credentialId, transports: passkey.transports })),
    authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
  });
}

const B64URL = /^[A-Za-z0-9_-]+={0,2}$/;
const isB64 = (value: unknown, max: number): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= max && B64URL.test(value);

function parseRegistrationResponse(body: unknown): RegistrationResponseJSON | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { id, rawId, type, response, clientExtensionResults, authenticatorAttachment } = body as Record<
    string,
    unknown
  >;
  if (!isB64(id, 1400) || rawId !== id || type !== 'public-key') return undefined;
  if (typeof response !== 'object' || response === null || Array.isArray(response)) return undefined;
  const { clientDataJSON, attestationObject, transports } = response as Record<string, unknown>;
  if (!isB64(clientDataJSON, 8192) || !isB64(attestationObject, 65536)) return undefined;
  const hints = Array.isArray(transports)
    ? transports.filter((t): t is string => typeof t === 'string' && /^[a-z-]{1,20}$/.test(t)).slice(0, 8)
    : [];
  return {
    id,
    rawId: id,
    type: 'public-key',
    response: {
      clientDataJSON,
      attestationObject,
      transports: hints as RegistrationResponseJSON['response']['transports'],
    },
    clientExtensionResults:
      typeof clientExtensionResults === 'object' && clientExtensionResults !== null
        ? (clientExtensionResults as RegistrationResponseJSON['clientExtensionResults'])
        : {},
    ...(authenticatorAttachment === 'platform' || authenticatorAttachment === 'cross-platform'
      ? { authenticatorAttachment }
      : {}),
  };
}

export type AddPasskeyOutcome =
  | { kind: 'added'; passkey: Passkey }
  | { kind: 'refused'; message: string; status: number };

/** Checks the browser's answer to the registration options and stores the new passkey. */
export async function addPasskey(
  ctx: AccountContext,
  account: Account,
  input: { response: unknown; name: unknown; bindingHash: string },
): Promise<AddPasskeyOutcome> {
  const refused = (message: string, status = 400): AddPasskeyOutcome => ({ kind: 'refused', message, status });
  const response = parseRegistrationResponse(input.response);
  if (!response) return refused('The passkey could not be read. Try again.');
  let name: string | undefined;
  if (input.name !== undefined && input.name !== '') {
    name = typeof input.name === 'string' ? cleanPasskeyName(input.name) : undefined;
    if (!name) return refused('A passkey name has 1 to 64 characters.');
  }
  const { decodeClientDataJSON, isoBase64URL, verifyRegistrationResponse } = await webauthn();
  let challenge: string;
  try {
    challenge = decodeClientDataJSON(response.response.clientDataJSON).challenge;
  } catch {
    return refused('The passkey could not be read. Try again.');
  }
  if (
    typeof challenge !== 'string' ||
    !(await consumeChallenge(ctx.db, challenge, {
      bindingHash: input.bindingHash,
      purpose: 'register',
      userId: account.userId,
    }))
  ) {
    return refused('This request has expired or was already used. Try again.', 409);
  }
  let credential: WebAuthnCredential;
  try {
    const verified = await verifyRegistrationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: ctx.rp.origin,
      expectedRPID: ctx.rp.id,
      requireUserVerification: true,
    });
    if (!verified.verified || !verified.registrationInfo.userVerified)
      return refused('The passkey could not be verified. Try again.');
    credential = verified.registrationInfo.credential;
  } catch {
    return refused('The passkey could not be verified. Try again.');
  }
  const existing = await listPasskeys(ctx.db, account.userId);
  if (existing.length >= MAX_PASSKEYS)
    return refused(`An account holds at most ${MAX_PASSKEYS} passkeys. Remove one first.`, 409);
  const passkey: Passkey = {
    credentialId: credential.id,
    userId: account.userId,
    publicKey: isoBase64URL.fromBuffer(credential.publicKey),
    counter: credential.counter,
    transports: credential.transports ?? response.response.transports ?? [],
    name: name ?? `Passkey ${existing.length + 1}`,
    createdAt: Date.now(),
    lastUsedAt: null,
  };
  try {
    await insertPasskey(ctx.db, passkey);
  } catch (error) {
    if (isUniqueViolation(error)) return refused('That passkey is added already.', 409);
    throw error;
  }
  await recordSecurityEvent(ctx.db, ctx.origin, {
    kind: 'passkey_added',
    userId: account.userId,
    details: { passkey: passkey.name, page: 'account' },
  });
  return { kind: 'added', passkey };
}

export async function renamePasskeyOf(
  ctx: AccountContext,
  account: Account,
  credentialId: string,
  newName: string,
): Promise<'renamed' | 'bad_name' | 'not_found'> {
  const name = cleanPasskeyName(newName);
  if (!name) return 'bad_name';
  return (await renamePasskey(ctx.db, account.userId, credentialId, name)) ? 'renamed' : 'not_found';
}

/**
 * Removes a passkey of the account, unless it is the account's last way to sign in (no password
 * and no other passkey). The check and the delete run in one transaction that first writes the
 * user's row, so two removals of an account's last two passkeys cannot both pass the check.
 */
export async function removePasskeyOf(
  ctx: AccountContext,
  account: Account,
  credentialId: string,
): Promise<'removed' | 'last_method' | 'not_found'> {
  const outcome = await ctx.db.transaction().execute(async (trx) => {
    // A no-op write: a row lock on PostgreSQL, the write lock on SQLite.
    const user = await trx
      .updateTable('users')
      .set((eb) => ({ user_id: eb.ref('user_id') }))
      .where('user_id', '=', account.userId)
      .returning('password_hash')
      .executeTakeFirst();
    if (!user) return 'not_found' as const;
    const passkeys = await listPasskeys(trx, account.userId);
    const passkey = passkeys.find((p) => p.credentialId === credentialId);
    if (!passkey) return 'not_found' as const;
    if (user.password_hash === null && passkeys.length === 1) return 'last_method' as const;
    await deletePasskey(trx, account.userId, credentialId);
    return passkey;
  });
  if (typeof outcome === 'string') return outcome;
  await recordSecurityEvent(ctx.db, ctx.origin, {
    kind: 'passkey_removed',
    userId: account.userId,
    details: { passkey: outcome.name, page: 'account' },
  });
  return 'removed';
}
