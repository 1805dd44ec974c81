import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.ts';
import { findApplication } from './clients.ts';
import type { KeyRing } from './key-ring.ts';
import { type ClaimedLogout, claimDueLogouts, onLogoutsQueued, removeLogout, retryLogoutAt } from './logout-outbox.ts';

/** Back-Channel Logout 1.0 §2.4: the event a logout token carries. */
const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** Waits between tries: 4 tries over about 6 minutes. */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [10_000, 60_000, 300_000];
/** How long a receiver has to answer. */
const TIMEOUT_MS = 5_000;
/** How often each instance looks for due notices (a queue left by a stopped instance, a retry). */
const POLL_INTERVAL_MS = 5_000;
/** A claimed notice is due again after this, should its sender die mid-try. */
const LEASE_MS = TIMEOUT_MS + 10_000;
/** Notices one instance sends at once. */
const MAX_IN_FLIGHT = 50;
/** How long a logout token is valid: long enough for a receiver's clock to differ a little. */
const TOKEN_LIFETIME_S = 120;

export interface BackchannelDeliveryOptions {
  retryDelaysMs?: readonly number[];
  pollIntervalMs?: number;
}

/**
 * Sends the queued back-channel logouts (logout-outbox.ts): after the ending committed, from any
 * instance, each to its application's back-channel URI as a logout token signed like its ID
 * tokens. Receivers get 5 s; a failure is tried again after each of the retry delays; every
 * outcome is logged. Nothing here is awaited by a request, so a slow receiver slows no one.
 */
export class BackchannelDelivery {
  readonly #db: Kysely<Schema>;
  readonly #keys: KeyRing;
  readonly #issuer: string;
  readonly #log: FastifyBaseLogger;
  readonly #retryDelaysMs: readonly number[];
  readonly #pollIntervalMs: number;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #stop = new AbortController();
  #claiming: Promise<void> | undefined;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #unregister: (() => void) | undefined;

  constructor(
    db: Kysely<Schema>,
    keys: KeyRing,
    issuer: string,
    log: FastifyBaseLogger,
    options: BackchannelDeliveryOptions = {},
  ) {
    this.#db = db;
    this.#keys = keys;
    this.#issuer = issuer;
    this.#log = log;
    this.#retryDelaysMs = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.#pollIntervalMs = options.pollIntervalMs ?? POLL_INTERVAL_MS;
  }

  /** Starts looking for due notices: now, whenever some are queued here, and every poll interval. */
  start(): void {
    this.#unregister = onLogoutsQueued(() => this.wake());
    this.#timer = setInterval(() => this.wake(), this.#pollIntervalMs);
    this.#timer.unref();
    this.wake();
  }

  /** Stops: tries under way are abandoned (their notices are due again once their lease ends). */
  async stop(): Promise<void> {
    this.#stop.abort();
    clearInterval(this.#timer);
    this.#unregister?.();
    await this.#claiming;
    await Promise.allSettled([...this.#inFlight]);
  }

  /** Claims what is due and starts sending it; a wake during a claim claims again after it. */
  wake(): void {
    if (this.#stop.signal.aborted) return;
    if (this.#claiming) {
      this.#again = true;
      return;
    }
    this.#claiming = this.#claim().finally(() => {
      this.#claiming = undefined;
      if (this.#again) {
        this.#again = false;
        this.wake();
      }
    });
  }

  async #claim(): Promise<void> {
    const room = MAX_IN_FLIGHT - this.#inFlight.size;
    if (room <= 0) return;
    let claimed: ClaimedLogout[];
    try {
      claimed = await claimDueLogouts(this.#db, Date.now(), LEASE_MS, room);
    } catch (err) {
      if (!this.#stop.signal.aborted)
        this.#log.warn({ err }, 'could not read the back-channel logout queue; looking again at the next poll');
      return;
    }
    for (const notice of claimed) {
      const sending: Promise<void> = this.#send(notice).finally(() => {
        this.#inFlight.delete(sending);
        // The claim stopped at the limit: there may be more due.
        if (claimed.length === room) this.wake();
      });
      this.#inFlight.add(sending);
    }
  }

  async #send(notice: ClaimedLogout): Promise<void> {
    const about = { clientId: notice.clientId, sessionId: notice.sessionId, attempt: notice.attempt };
    try {
      const application = await findApplication(this.#db, notice.clientId);
      if (!application?.backchannelLogoutUri) {
        await removeLogout(this.#db, notice.sessionId);
        this.#log.info(
          about,
          'back-channel logout dropped: the application is gone or no longer has a back-channel URI',
        );
        return;
      }
      const now = Date.now();
      const iat = Math.floor(now / 1000);
      const token = await this.#keys.sign(
        {
          iss: this.#issuer,
          aud: notice.clientId,
          iat,
          exp: iat + TOKEN_LIFETIME_S,
          jti: randomUUID(),
          sub: notice.userId,
          sid: notice.sessionId,
          events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
        },
        application.idTokenAlg,
        'logout+jwt',
        now,
      );
      const failure = await this.#post(application.backchannelLogoutUri, token);
      if (this.#stop.signal.aborted) return;
      const ms = Date.now() - now;
      if (failure === undefined) {
        await removeLogout(this.#db, notice.sessionId);
        this.#log.info({ ...about, ms }, 'back-channel logout delivered');
        return;
      }
      await this.#failed(notice, about, failure, ms);
    } catch (err) {
      if (this.#stop.signal.aborted) return;
      await this.#failed(notice, about, (err as Error)?.message ?? String(err), 0).catch((error: unknown) =>
        this.#log.error({ ...about, err: error }, 'could not record a failed back-channel logout'),
      );
    }
  }

  /** POSTs the token; answers why it failed, or undefined when the receiver accepted it (2xx). */
  async #post(uri: string, token: string): Promise<string | undefined> {
    try {
      const response = await fetch(uri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'cache-control': 'no-store' },
        body: new URLSearchParams({ logout_token: token }).toString(),
        redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(TIMEOUT_MS), this.#stop.signal]),
      });
      await response.body?.cancel().catch(() => {});
      return response.ok ? undefined : `the receiver answered ${response.status}`;
    } catch (error) {
      const { name, cause, message } = error as { name?: string; cause?: { code?: string }; message?: string };
      if (name === 'TimeoutError') return `no answer within ${TIMEOUT_MS / 1000} s`;
      return cause?.code ?? message ?? String(error);
    }
  }

  async #failed(notice: ClaimedLogout, about: object, reason: string, ms: number): Promise<void> {
    const delay = this.#retryDelaysMs[notice.attempt - 1];
    if (delay === undefined) {
      await removeLogout(this.#db, notice.sessionId);
      this.#log.error({ ...about, reason, ms }, 'back-channel logout failed; no more tries');
      return;
    }
    const at = Date.now() + delay;
    await retryLogoutAt(this.#db, notice, at);
    this.#log.warn(
      { ...about, reason, ms, retryAt: new Date(at).toISOString() },
      'back-channel logout failed; trying again later',
    );
    // Woken by a timer too when the delay is shorter than the poll (tests' short delays).
    if (delay < this.#pollIntervalMs) setTimeout(() => this.wake(), delay + 10).unref();
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Sends the queued back-channel logouts of every instance's ended sessions. */
    backchannelLogouts: BackchannelDelivery;
  }
}
