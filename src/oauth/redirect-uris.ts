/**
 * A loopback IP literal redirect URI with its port, if any: RFC 8252 §7.3 lets a native app
 * listen on whatever port the system gives it, so the port of such a URI is not compared.
 * `localhost` is not included: it may resolve elsewhere (RFC 8252 §8.3).
 */
const LOOPBACK_IP = /^(http:\/\/(?:127\.0\.0\.1|\[::1\]))(?::(\d{1,5}))?([/?].*)?$/;

/** The URI without its port when it is a loopback IP literal with a valid (or no) port. */
function loopbackWithoutPort(uri: string): string | undefined {
  const match = LOOPBACK_IP.exec(uri);
  if (!match) return undefined;
  const port = match[2];
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return undefined;
  return match[1]! + (match[3] ?? '');
}

/**
 * Whether `requested` is one of `registered`: exactly equal, or, for a registered loopback IP
 * literal, equal except for the port. The rest of the URI (path and query) must be identical.
 */
export function isRegisteredRedirectUri(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  const requestedLoopback = loopbackWithoutPort(requested);
  if (requestedLoopback === undefined) return false;
  return registered.some((uri) => loopbackWithoutPort(uri) === requestedLoopback);
}
