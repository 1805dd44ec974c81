import type { AccountEraser } from './accounts/erasure.ts';
import { ACCOUNTS_ERASER } from './accounts/erasure.ts';
import { CLASSES_ERASER } from './classes/erase.ts';
import { LEGACY_ERASER } from './legacy/erase.ts';
import { applicationSessions, OAUTH_ERASER } from './oauth/account-ports.ts';

// Wiring of the account lifecycle, apart from app.ts so the admin CLI gets it without loading the
// whole server: what accounts/ asks of the features it may not import.

/**
 * Every feature's part of erasing an account, as each lists it; run in this order in one
 * transaction. accounts/' is last: it removes the users row the others' rows point at.
 */
export const ACCOUNT_ERASERS: readonly AccountEraser[] = [OAUTH_ERASER, LEGACY_ERASER, CLASSES_ERASER, ACCOUNTS_ERASER];

/** What the account lifecycle needs from other features (app.ts decorates the same for the pages). */
export const lifecyclePorts = { applicationSessions, erasers: ACCOUNT_ERASERS } as const;
