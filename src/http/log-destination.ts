import { writeSync } from 'node:fs';
import pino, { type DestinationStream } from 'pino';

export interface BatchedLogOptions {
  /** The file descriptor written to (1: standard output). */
  fd: number;
  /** Lines are handed on once this many characters are waiting, */
  batchChars: number;
  /** or once the oldest waiting line is this old. */
  flushMs: number;
}

/**
 * pino's destination for the server's log: lines wait in an array and go to pino's asynchronous
 * writer (sonic-boom) joined, `batchChars` at a time or every `flushMs`, so a busy server makes
 * one thread-pool write per batch rather than one per line.
 *
 * Why not sonic-boom's own `minLength`: it keeps the waiting lines as one string and measures that
 * string's UTF-8 length before appending each line, and measuring a string built by `+=` flattens
 * it, so every line logged copied all the lines waiting before it (issue 21: ~2.4 KB allocated and
 * copied per request at 4 KiB batches, the largest single allocation of a v1 GET). Here a line is
 * measured by its length in UTF-16 units, which is all a threshold needs, and the batch is joined
 * once.
 */
export function batchedLogDestination(options: BatchedLogOptions): DestinationStream {
  const writer = pino.destination({ dest: options.fd, sync: false });
  let waiting: string[] = [];
  let chars = 0;
  let timer: NodeJS.Timeout | undefined;

  const handOn = (): void => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (waiting.length === 0) return;
    const batch = waiting.join('');
    waiting = [];
    chars = 0;
    writer.write(batch);
  };

  // Registered after pino.destination has registered its own exit flush, so this runs after it:
  // what sonic-boom still held is written first, then the lines that were waiting here, in order.
  process.once('exit', () => {
    if (waiting.length === 0) return;
    try {
      writeSync(options.fd, waiting.join(''));
    } catch {
      // (Standard output closed: nothing can be done at exit.)
    }
    waiting = [];
  });

  return {
    write(line: string): void {
      waiting.push(line);
      chars += line.length;
      if (chars >= options.batchChars) handOn();
      else if (timer === undefined) timer = setTimeout(handOn, options.flushMs).unref();
    },
  };
}
