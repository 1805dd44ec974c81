import { Secret, TOTP } from 'otpauth';

/** RFC 6238 as authenticator apps use it: SHA-1, 6 digits, 30-second steps. */
function totp(secret: string, label = 'account') {
  return new TOTP({
    issuer: 'Content Service',
    label,
    algorithm: 'SHA1',
    digits: 6,
    period: 30,
    secret: Secret.fromBase32(secret),
  });
}

export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

export function isBase32Secret(value: string): boolean {
  return /^[A-Z2-7]+=*$/i.test(value) && value.replace(/=+$/, '').length >= 16;
}

const PERIOD_MS = 30_000;

/** Accepts the code of the current step or of one step either side (clock drift). */
export function verifyTotp(secret: string, code: string, timestamp = Date.now()): boolean {
  return totpStep(secret, code, timestamp) !== undefined;
}

/**
 * The time step (30-second counter since the epoch) whose code `code` is, within one step of
 * `timestamp`; undefined when it is none of them.
 */
export function totpStep(secret: string, code: string, timestamp = Date.now()): number | undefined {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return undefined;
  const delta = totp(secret).validate({ token, timestamp, window: 1 });
  return delta === null ? undefined : Math.floor(timestamp / PERIOD_MS) + delta;
}

export function totpCode(secret: string, timestamp = Date.now()): string {
  return totp(secret).generate({ timestamp });
}

/** The otpauth:// URI an authenticator app scans. */
export function totpUri(secret: string, label: string): string {
  return totp(secret, label).toString();
}
