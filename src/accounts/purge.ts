import type { ExpiringRows } from '../db/purge.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The rows of accounts/' tables that expire, for the purge (combined with the other features' in src/app.ts). */
export const ACCOUNTS_EXPIRING_ROWS: readonly ExpiringRows[] = [
  { table: 'web_sessions', key: 'session_hash', column: 'expires_at' },
  // A device is trusted for 30 days (DESIGN).
  { table: 'trusted_devices', key: 'device_hash', column: 'created_at', keepMs: 30 * DAY_MS },
  // A passkey challenge lives 5 minutes (an answered one is deleted at once).
  { table: 'passkey_challenges', key: 'challenge', column: 'expires_at' },
  // One-time codes and links of sign-up, reset and e-mail change.
  { table: 'verification_requests', key: 'request_id', column: 'expires_at' },
  // The answers kept for repeated submits of a form (submit-tokens.ts).
  { table: 'submit_tokens', key: 'token_hash', column: 'expires_at' },
  // Invitations to sign up, pending, revoked or used, when their 7 days are over.
  { table: 'invitations', key: 'invitation_id', column: 'expires_at' },
  // Security events are kept for 90 days (DESIGN "Operations").
  { table: 'security_events', key: 'event_id', column: 'created_at', keepMs: 90 * DAY_MS },
];
