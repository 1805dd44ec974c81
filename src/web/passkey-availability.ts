import type { FastifyInstance } from 'fastify';
import { type RelyingPartyCheck, relyingPartyFor } from '../accounts/relying-party.ts';

/** Whether this service can offer passkeys (BASE_URL's host), and what a sign-in page shows for them. */

const relyingParties = new WeakMap<FastifyInstance['config'], RelyingPartyCheck>();
export function relyingPartyOf(web: FastifyInstance): RelyingPartyCheck {
  let check = relyingParties.get(web.config);
  if (!check) {
    check = relyingPartyFor(web.config.baseUrl);
    relyingParties.set(web.config, check);
  }
  return check;
}

/** What the sign-in template needs to offer a passkey, or nothing when passkeys are not available. */
export function passkeySignInView(
  web: FastifyInstance,
  verifyUrl: string,
): { passkey?: { optionsUrl: string; verifyUrl: string } } {
  return relyingPartyOf(web).ok ? { passkey: { optionsUrl: '/passkeys/sign-in-options', verifyUrl } } : {};
}
