/**
 * A path of this service to send the browser back to (after a re-authentication): a path alone,
 * never a scheme or a host (`//host`, `/\host` would leave the site), of plain characters only.
 */
export function safeReturnPath(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 512) return undefined;
  return /^\/(?![/\\])[A-Za-z0-9\-._~/%?=&]*$/.test(value) ? value : undefined;
}
