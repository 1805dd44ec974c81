/**
 * The URL an authorization response sends the browser to: the client's redirect URI with the
 * response parameters added to its query (RFC 6749 §4.1.2) and `iss`, the issuer, on every
 * response, success or error (RFC 9207), so a client can tell which server answered.
 * Parameters that are null or undefined are left out.
 */
export function authorizationResponseUrl(
  redirectUri: string,
  params: Record<string, string | null | undefined>,
  issuer: string,
): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== '') url.searchParams.set(name, value);
  }
  url.searchParams.set('iss', issuer);
  return url.toString();
}
