import type { ExpiringRows } from '../db/purge.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The rows of oauth/'s tables that expire, for the purge (combined with the other features' in src/app.ts). */
export const OAUTH_EXPIRING_ROWS: readonly ExpiringRows[] = [
  // A used code is kept until it expires too, so a replay is still recognised (and revokes its session).
  { table: 'authorization_codes', key: 'code_hash', column: 'expires_at' },
  { table: 'interactions', key: 'interaction_hash', column: 'expires_at' },
  // A day past expiry, so a device polling late still hears expired_token rather than invalid_grant.
  { table: 'device_authorizations', key: 'device_code', column: 'expires_at', keepMs: DAY_MS },
  { table: 'rotated_refresh_tokens', key: 'refresh_token_hash', column: 'expires_at' },
  // A session is dead once its refresh token has expired; its rotated tokens expired no later (row above).
  { table: 'sessions', key: 'session_id', column: 'refresh_expires_at', scanned: true },
  // A back-channel logout nobody could send for a day (a sent or abandoned one leaves at once).
  { table: 'backchannel_logouts', key: 'session_id', column: 'expires_at' },
];
