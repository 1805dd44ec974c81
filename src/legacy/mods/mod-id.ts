const MAX_WORKSHOP_ID = 2n ** 64n - 1n;

/**
 * Workshop ids are unsigned 64-bit integers (up to 20 digits), kept as strings of digits end to
 * end. Accepted as a string of digits, or as a JSON number only while it is exact
 * (Number.isSafeInteger): a larger number already lost digits when the body was parsed.
 */
export function parseModId(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return String(value);
  if (typeof value !== 'string' || !/^\d{1,20}$/.test(value.trim())) return undefined;
  const digits = value.trim().replace(/^0+(?=\d)/, '');
  return digits !== '0' && BigInt(digits) <= MAX_WORKSHOP_ID ? digits : undefined;
}

/** The 400 message for a mod_id parseModId refused. */
export function modIdProblem(value: unknown): string {
  if (typeof value === 'number' && Number.isInteger(value) && value > Number.MAX_SAFE_INTEGER) {
    return `mod_id ${value} is too large for a JSON number to hold exactly: send it as a string of digits`;
  }
  return 'mod_id must be a workshop mod id: an integer from 1 to 18446744073709551615, as a number or a string of digits';
}
