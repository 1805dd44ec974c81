/**
 * Whether the database is out of reach, so that an outage is reported once rather than once per
 * request: `unreachable()` answers true only for the first failure of an outage, and the outage
 * ends when a connection to the database is opened again (or a ping answers), after which the next
 * failure starts a new one.
 */
export class DatabaseOutage {
  #since: number | undefined;
  #onEnd: ((lastedMs: number) => void) | undefined;

  /** Calls `listener` with the outage's length when one ends (to log that the database is back). */
  onEnd(listener: (lastedMs: number) => void): void {
    this.#onEnd = listener;
  }

  /** Since when the database is out of reach (epoch ms); undefined while it is reachable. */
  get since(): number | undefined {
    return this.#since;
  }

  /** Notes a failure to reach the database; true when it starts an outage (report it then). */
  unreachable(now = Date.now()): boolean {
    if (this.#since !== undefined) return false;
    this.#since = now;
    return true;
  }

  /** Notes that the database answered (cheap: called for every connection opened). */
  reachable(now = Date.now()): void {
    if (this.#since === undefined) return;
    const lasted = now - this.#since;
    this.#since = undefined;
    this.#onEnd?.(lasted);
  }
}
