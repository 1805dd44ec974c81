/**
 * The rules of e-mail addresses and usernames, and the checks of what a person types as one on the
 * self-service pages (each answers the value to use, or the reason to show next to the input).
 * Imports nothing: src/classes/schemas.ts, which the client library compiles, takes the username
 * rule from here.
 */

export type Checked = { ok: true; value: string } | { ok: false; reason: string };

export const MAX_EMAIL_LENGTH = 254;
// One @, a local part of printable ASCII without spaces, a dotted domain. Control characters (CR, LF,
// NUL: header injection, PostgreSQL's NUL refusal) and every space are refused before this.
const EMAIL =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

/** A deliverable-looking address, lowercased; leading and trailing spaces are forgiven (pasted text). */
export function checkEmailAddress(input: string): Checked {
  if (/[\u0000-\u001f\u007f]/.test(input))
    return { ok: false, reason: 'An e-mail address cannot contain line breaks or control characters.' };
  const value = input.replace(/^ +| +$/g, '');
  if (value === '') return { ok: false, reason: 'Enter your e-mail address.' };
  if (value.length > MAX_EMAIL_LENGTH)
    return { ok: false, reason: `An e-mail address has at most ${MAX_EMAIL_LENGTH} characters.` };
  if (/\s/.test(value)) return { ok: false, reason: 'An e-mail address cannot contain spaces.' };
  if (!EMAIL.test(value) || value.includes('..') || value.startsWith('.') || value.includes('.@')) {
    return { ok: false, reason: 'That is not a valid e-mail address (like name@example.com).' };
  }
  return { ok: true, value: value.toLowerCase() };
}

export const USERNAME_MIN_LENGTH = 3;
export const USERNAME_MAX_LENGTH = 32;
/**
 * The username rule, as a JSON Schema pattern (the REST User class) and as USERNAME: ASCII only, so
 * look-alike letters of other scripts cannot be used; a letter or digit first.
 */
export const USERNAME_PATTERN = `^[A-Za-z0-9][A-Za-z0-9_.-]{${USERNAME_MIN_LENGTH - 1},${USERNAME_MAX_LENGTH - 1}}$`;
export const USERNAME = new RegExp(USERNAME_PATTERN);

/** The username rule in words, shown beside the input before anything is submitted (the same limits as checkUsername). */
export const USERNAME_RULE = `${USERNAME_MIN_LENGTH} to ${USERNAME_MAX_LENGTH} characters: the letters A–Z, digits, dots, dashes and underscores, starting with a letter or digit.`;

/** The address rule in words, shown beside an e-mail input (a longer address is refused, never cut). */
export const EMAIL_RULE = `At most ${MAX_EMAIL_LENGTH} characters.`;

/**
 * A username a person may choose. Letters of other alphabets (Cyrillic 'а' for Latin 'a'),
 * fullwidth forms and accents are refused with a clear reason: names stay ASCII, and are unique
 * regardless of case (checked by the database's index on lower(username)).
 */
export function checkUsername(input: string): Checked {
  const value = input.trim();
  if (value === '') return { ok: false, reason: 'Choose a username.' };
  if (/[^\x20-\x7e]/.test(value)) {
    const folded = value.normalize('NFKC');
    const hint = folded !== value && !/[^\x20-\x7e]/.test(folded) ? ` (did you mean "${folded}"?)` : '';
    return {
      ok: false,
      reason: `A username uses only the plain letters A–Z, digits, dots, dashes and underscores: letters from other alphabets, accented or fullwidth letters look like others and are not allowed${hint}.`,
    };
  }
  if (value.length < USERNAME_MIN_LENGTH || value.length > USERNAME_MAX_LENGTH)
    return { ok: false, reason: `A username has ${USERNAME_MIN_LENGTH} to ${USERNAME_MAX_LENGTH} characters.` };
  if (!USERNAME.test(value))
    return {
      ok: false,
      reason: 'A username uses only letters, digits, dots, dashes and underscores, and starts with a letter or digit.',
    };
  return { ok: true, value };
}

/** An address shown in a notice to the old address: enough to recognise it, not to read it. */
export function maskEmailAddress(address: string): string {
  const [local = '', domain = ''] = address.split('@');
  const visible = local.length <= 2 ? local.slice(0, 1) : local.slice(0, 2);
  return `${visible}${'*'.repeat(Math.max(3, local.length - visible.length))}@${domain}`;
}
