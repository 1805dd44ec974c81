import { isIP } from 'node:net';

/**
 * The WebAuthn relying party the service is: its id is BASE_URL's host name and its origin
 * BASE_URL's origin. Browsers refuse an IP address as relying-party id, and WebAuthn needs a secure
 * context (https, or http on localhost), so with any other BASE_URL passkeys are not offered.
 */
export interface RelyingParty {
  id: string;
  origin: string;
  name: string;
}

export type RelyingPartyCheck = { ok: true; rp: RelyingParty } | { ok: false; reason: string };

export function relyingPartyFor(baseUrl: string, name = 'Content Service'): RelyingPartyCheck {
  const url = new URL(baseUrl);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0) {
    return {
      ok: false,
      reason: `Passkeys are not available here: this server's address (BASE_URL ${url.origin}) is an IP address, and browsers only allow passkeys on a domain name.`,
    };
  }
  const local = host === 'localhost' || host.endsWith('.localhost');
  if (url.protocol !== 'https:' && !local) {
    return {
      ok: false,
      reason: `Passkeys are not available here: browsers only allow them on https addresses (or localhost), and this server's address is ${url.origin}.`,
    };
  }
  return { ok: true, rp: { id: host, origin: url.origin, name } };
}
