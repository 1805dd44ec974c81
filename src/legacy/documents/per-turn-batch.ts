/**
 * Calls for the same key run together: `run(key, count)` runs with the number of calls gathered,
 * and every call resolves to its answer, or rejects with its error. Calls of one turn of the event
 * loop join one batch (started after the turn, from setImmediate); while a key's batch runs, its
 * new calls wait and run together once it has settled, so a key has at most one run at a time.
 * Keys are compared as Map keys.
 *
 * For a write that every request makes and that can add up (a download counter: one `+ N`
 * statement for a burst instead of one statement per request), while each caller still gets its
 * answer only after its own part is stored. Waiting for the run in flight matters on PostgreSQL,
 * where each statement is a commit: requests of a busy document arrive spread over many turns, and
 * one batch per turn still committed once for nearly every request.
 */
export function batchPerTurn<K, R>(run: (key: K, count: number) => Promise<R>): (key: K) => Promise<R> {
  type Waiter = { resolve: (answer: R) => void; reject: (error: unknown) => void };
  /** The batch of each key still gathering calls. */
  const gathering = new Map<K, { count: number; waiters: Waiter[] }>();
  /** Keys whose batch is running. */
  const running = new Set<K>();

  // Scheduled once per gathering batch: by its first call when the key is idle, else when the
  // key's running batch settles.
  function startAfterTurn(key: K) {
    setImmediate(() => {
      const batch = gathering.get(key)!;
      gathering.delete(key);
      running.add(key);
      let ran: Promise<R>;
      try {
        ran = run(key, batch.count);
      } catch (error) {
        ran = Promise.reject(error);
      }
      const settle = () => {
        running.delete(key);
        if (gathering.has(key)) startAfterTurn(key);
      };
      ran.then(
        (answer) => {
          settle();
          for (const waiter of batch.waiters) waiter.resolve(answer);
        },
        (error: unknown) => {
          settle();
          for (const waiter of batch.waiters) waiter.reject(error);
        },
      );
    });
  }

  return function call(key: K): Promise<R> {
    let batch = gathering.get(key);
    if (!batch) {
      batch = { count: 0, waiters: [] };
      gathering.set(key, batch);
      if (!running.has(key)) startAfterTurn(key);
    }
    batch.count++;
    const waiters = batch.waiters;
    return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
  };
}
