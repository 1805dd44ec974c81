const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

/** UUIDs are case-insensitive everywhere; this is the one stored and emitted form. */
export function normalizeUuid(value: string): string {
  return value.toLowerCase();
}
