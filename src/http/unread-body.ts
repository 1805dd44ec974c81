import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/*
 * An answer sent before the request's body has arrived (a body over the limit, refused from its
 * Content-Length before a byte of it is read; a bad token refused in preParsing) must still reach
 * the client. Closing a socket with unread bytes in its receive buffer makes the kernel reset the
 * connection, and a reset makes the client's kernel drop our answer if the client had not read it
 * yet: a client that writes its whole body before reading saw EPIPE or ECONNRESET instead of the
 * 413. So such a connection closes in stages, a lingering close: the answer, then a half-close
 * (FIN), then what the client still sends is read and dropped until it stops or a bound is
 * reached, and only then the socket is destroyed. (docs/decisions/0088.)
 */

/** The longest a connection lingers after its answer. */
const LINGER_MAX_MS = 10_000;
/** A client that sends nothing for this long is not sending a body any more. */
const LINGER_IDLE_MS = 2_000;
/** The most bytes read and dropped per connection: past it, a reset no longer costs the client the answer. */
const LINGER_MAX_BYTES = 64 * 1024 * 1024;
const CHECK_EVERY_MS = 200;

const lingering = new WeakSet<Socket>();

/** Whether the socket is closing in stages, so what still arrives on it is no new request. */
export function isLingering(socket: Socket): boolean {
  return lingering.has(socket);
}

/**
 * Half-closes the socket once what is queued on it is written, drops what the client still sends
 * (Node's HTTP parser reads it, and a dumped request discards its body), and destroys the socket
 * when the client closes its side, goes quiet, or a bound is reached.
 */
export function closeLingering(socket: Socket): void {
  if (lingering.has(socket)) return;
  lingering.add(socket);
  if (!socket.writableEnded) socket.end();
  if (socket.destroyed) return;
  const started = Date.now();
  const bytesAtStart = socket.bytesRead;
  let lastBytes = bytesAtStart;
  let lastHeardAt = started;
  // One timer for the three bounds: the parser reads the socket in C++, without a data event per chunk.
  const timer = setInterval(() => {
    const now = Date.now();
    const read = socket.bytesRead;
    if (read !== lastBytes) {
      lastBytes = read;
      lastHeardAt = now;
    }
    if (
      now - started >= LINGER_MAX_MS ||
      now - lastHeardAt >= LINGER_IDLE_MS ||
      read - bytesAtStart >= LINGER_MAX_BYTES
    )
      socket.destroy();
  }, CHECK_EVERY_MS);
  timer.unref();
  socket.once('close', () => clearInterval(timer));
  socket.resume();
}

/**
 * For the answer path (answer-headers.ts's onSend): when the request's body is still arriving, the
 * answer says `Connection: close`, and the close Node makes after it (socket.destroySoon, which
 * would reset the connection over the unread body) becomes a lingering close.
 */
export function lingerOverUnreadBody(request: IncomingMessage, setHeader: (name: string, value: string) => void): void {
  if (request.complete || !hasBody(request)) return;
  setHeader('connection', 'close');
  const socket = request.socket;
  socket.destroySoon = () => closeLingering(socket);
}

function hasBody(request: IncomingMessage): boolean {
  const { headers } = request;
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length']) > 0;
}
