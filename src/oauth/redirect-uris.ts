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

/**
 * Why `uri` cannot be registered as a redirect URI, or undefined when it can. Both kinds of
 * application: absolute, without a fragment, never javascript:/data:/file:. An operator's (admin
 * CLI) may use a custom scheme, and http on any loopback name. A developer's (/account/apps,
 * DESIGN) is https, or http on a loopback IP literal for a native app (RFC 8252 §7.3; not
 * `localhost`, which may resolve elsewhere, §8.3).
 */
export function redirectUriProblem(uri: string, registeredBy: 'operator' | 'developer'): string | undefined {
  // URL parsing drops tabs and newlines silently: what is stored must be what is compared.
  if (/[\u0000-\u0020\u007f]/.test(uri))
    return `Redirect URI ${JSON.stringify(uri)} contains spaces or control characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `Redirect URI ${uri} is not an absolute URI`;
  }
  if (url.hash || uri.includes('#')) return `Redirect URI ${uri} must not have a fragment`;
  if (['javascript:', 'data:', 'file:'].includes(url.protocol)) return `Redirect URI ${uri} has a forbidden scheme`;
  if (registeredBy === 'operator') {
    if (url.protocol === 'http:' && !['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)) {
      return `Redirect URI ${uri} must use https (http is allowed for loopback only)`;
    }
    return undefined;
  }
  if (url.username || url.password) return `Redirect URI ${uri} must not hold a user name or password`;
  if (url.protocol === 'https:' && url.hostname !== '') return undefined;
  if (url.protocol === 'http:' && loopbackWithoutPort(uri) !== undefined) return undefined;
  return `Redirect URI ${uri} must use https (or http://127.0.0.1 or http://[::1] for an app on the user's own computer)`;
}

/**
 * Why `uri` cannot be registered as a back-channel logout URI, or undefined when it can
 * (Back-Channel Logout 1.0 §2.2): absolute, no fragment, https, or http on loopback (a test
 * receiver or an app on the same machine).
 */
export function backchannelLogoutUriProblem(uri: string): string | undefined {
  if (/[\u0000-\u0020\u007f]/.test(uri))
    return `Back-channel logout URI ${JSON.stringify(uri)} contains spaces or control characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `Back-channel logout URI ${uri} is not an absolute URI`;
  }
  if (url.hash || uri.includes('#')) return `Back-channel logout URI ${uri} must not have a fragment`;
  if (url.username || url.password) return `Back-channel logout URI ${uri} must not hold a user name or password`;
  if (url.protocol === 'https:' && url.hostname !== '') return undefined;
  if (url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)) return undefined;
  return `Back-channel logout URI ${uri} must use https (http is allowed for loopback only)`;
}
