import { connect } from 'node:net';

export interface StreamedReply {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  body: any;
  /** How many body bytes the client wrote before the server stopped taking them. */
  written: number;
  /** The error writing the rest of the body met (EPIPE, ECONNRESET), if any: expected once the answer is read. */
  writeError?: string;
}

const CHUNK = Buffer.alloc(64 * 1024, 'x');

/**
 * A request through a plain TCP socket whose body of `size` bytes is streamed after the head, as
 * a naive client does: it keeps writing (waiting for the socket to drain) whatever the server
 * answers. `readAfterWriting`: it reads nothing until its whole body is written (or writing
 * failed), as a blocking client does; else it reads the answer meanwhile. Resolves with the answer
 * once it is read in full; rejects when the connection ends before a whole answer arrived.
 */
export function streamBody(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  size: number,
  readAfterWriting = false,
): Promise<StreamedReply> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    if (readAfterWriting) socket.pause();
    let received = Buffer.alloc(0);
    let written = 0;
    let writeError: string | undefined;
    let settled = false;
    const finish = (error?: Error) => {
      if (settled) return;
      const reply = error ? undefined : parse(received);
      if (!error && !reply) return;
      settled = true;
      socket.destroy();
      if (reply) resolve({ ...reply, written, writeError });
      else
        reject(
          new Error(
            `${method} ${path}: ${error!.message} after ${written} body bytes, ${received.length} answer bytes`,
          ),
        );
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      finish();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      writeError ??= error.code ?? error.message;
      finish(error);
    });
    const readAnswer = () => socket.resume();
    socket.on('close', () => finish(new Error(`connection closed (${writeError ?? 'no error'})`)));
    const head = Object.entries({ host: `${hostname}:${port}`, 'content-length': String(size), ...headers })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(`${method} ${path} HTTP/1.1\r\n${head}\r\n`);
    const pump = () => {
      while (written < size && !socket.destroyed && !socket.writableEnded) {
        const piece = CHUNK.subarray(0, Math.min(CHUNK.length, size - written));
        written += piece.length;
        const last = written === size;
        if (!socket.write(piece, last ? readAnswer : undefined)) {
          socket.once('drain', pump);
          return;
        }
      }
    };
    pump();
  });
}

/** The answer in `bytes` when it is complete (head and Content-Length bytes of body), else undefined. */
function parse(bytes: Buffer): Omit<StreamedReply, 'written' | 'writeError'> | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  if (bytes.length < end + 4 + length) return undefined;
  const text = bytes.subarray(end + 4, end + 4 + length).toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, text, body };
}
