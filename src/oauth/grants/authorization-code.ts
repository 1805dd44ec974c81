import { InvalidGrant } from '../errors.ts';
import { verifierMatches } from '../pkce.ts';
import { hashSecret } from '../secrets.ts';
import { createSession, revokeSession, type IssuedTokens } from '../sessions.ts';
import { required, type GrantContext } from './context.ts';

/** grant_type=authorization_code: a single-use code, bound to client, redirect URI and PKCE challenge. */
export async function authorizationCodeGrant({ db, params, client, now }: GrantContext): Promise<IssuedTokens> {
  const codeHash = hashSecret(required(params, 'code'));
  const redirectUri = required(params, 'redirect_uri');
  const verifier = required(params, 'code_verifier');
  const code = await db.selectFrom('authorization_codes').selectAll().where('code_hash', '=', codeHash).executeTakeFirst();
  if (!code || code.client_id !== client.clientId) throw new InvalidGrant('Unknown authorization code');
  if (code.used_at !== null) {
    if (code.session_id) await revokeSession(db, code.session_id);
    throw new InvalidGrant('This authorization code was already used; the tokens issued for it are revoked');
  }
  if (code.expires_at <= now) throw new InvalidGrant('The authorization code has expired');
  if (code.redirect_uri !== redirectUri) throw new InvalidGrant('redirect_uri differs from the one of the authorization request');
  if (!verifierMatches(verifier, code.code_challenge)) throw new InvalidGrant('code_verifier does not match the code_challenge');
  if (params.device_id !== undefined && code.device_id !== null && params.device_id !== code.device_id) {
    throw new InvalidGrant('device_id differs from the one of the authorization request');
  }
  return db.transaction().execute(async (trx) => {
    const claimed = await trx
      .updateTable('authorization_codes')
      .set({ used_at: now })
      .where('code_hash', '=', codeHash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    if (claimed.numUpdatedRows === 0n) throw new InvalidGrant('This authorization code was already used');
    const tokens = await createSession(trx, { userId: code.user_id, clientId: client.clientId, scope: code.scope }, now);
    await trx.updateTable('authorization_codes').set({ session_id: tokens.sessionId }).where('code_hash', '=', codeHash).execute();
    return tokens;
  });
}
