/**
 * Runs Node's `process.nextTick` many times before the server starts, with every argument count
 * Node's own streams and sockets use, so that V8 optimizes it from this feedback and not from
 * whatever the first requests happen to do.
 *
 * Why: Node 20's nextTick builds its tick object as a literal with two computed symbol keys. V8's
 * optimized code defines those keys inline only while their feedback is monomorphic; once the
 * feedback has seen a second map, every tick object is built by a runtime call, for the rest of
 * the process's life. Which of the two states a process ended in depended on what it served
 * first: in processes that had made the bench's data, nextTick cost 7 to 8 times its usual CPU in
 * about half of them (about ten ticks a request, ~4 % of a single GET). After this warm-up it did
 * not happen in any of the runs measured (docs/decisions/0038, "Node's tick queue is warmed up at
 * start").
 */
export async function warmUpTickQueue(rounds = 8, ticksPerRound = 1000): Promise<void> {
  const callback = (_a?: unknown, _b?: unknown, _c?: unknown): void => {};
  for (let round = 0; round < rounds; round++) {
    // Fewer than the queue's 2,048 slots a round, so it never grows (a growth recompiles nextTick).
    for (let i = 0; i < ticksPerRound; i += 4) {
      process.nextTick(callback);
      process.nextTick(callback, i);
      process.nextTick(callback, i, round);
      process.nextTick(callback, i, round, callback);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}
