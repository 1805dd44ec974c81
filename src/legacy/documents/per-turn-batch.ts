/**
 * Calls for the same key made in one turn of the event loop, run together: `run(key, count)` runs
 * once per key and turn (after the turn, from setImmediate) with the number of calls, and every
 * call resolves to its answer, or rejects with its error. A call made after the batch has started
 * joins the next one. Keys are compared as Map keys.
 *
 * For a write that every request makes and that can add up (a download counter: one `+ N`
 * statement for a burst instead of one statement per request), while each caller still gets its
 * answer only after its own part is stored.
 */
export function batchPerTurn<K, R>(run: (key: K, count: number) => Promise<R>): (key: K) => Promise<R> {
  const pending = new Map<K, { count: number; waiters: Array<{ resolve: (answer: R) => void; reject: (error: unknown) => void }> }>();

  function start(key: K) {
    const batch = { count: 0, waiters: [] as Array<{ resolve: (answer: R) => void; reject: (error: unknown) => void }> };
    pending.set(key, batch);
    setImmediate(() => {
      pending.delete(key);
      let ran: Promise<R>;
      try {
        ran = run(key, batch.count);
      } catch (error) {
        ran = Promise.reject(error);
      }
      ran.then(
        (answer) => {
          for (const waiter of batch.waiters) waiter.resolve(answer);
        },
        (error: unknown) => {
          for (const waiter of batch.waiters) waiter.reject(error);
        },
      );
    });
    return batch;
  }

  return function call(key: K): Promise<R> {
    const batch = pending.get(key) ?? start(key);
    batch.count++;
    return new Promise((resolve, reject) => batch.waiters.push({ resolve, reject }));
  };
}
