/**
 * Whether `address` may be a recipient: one plain address (local@domain), nothing a mail header
 * could be split or extended with. CR, LF and NUL would start a new header; commas, semicolons,
 * angle brackets, quotes, parentheses and spaces would make the address parser find several
 * recipients or a display name.
 */
export function isMailableAddress(address: unknown): address is string {
  return (
    typeof address === 'string' &&
    address.length <= 254 &&
    /^[^\s@<>()",;:\\[\]\u0000-\u001f\u007f]{1,64}@[A-Za-z0-9\u00a1-\uffff](?:[A-Za-z0-9.\u00a1-\uffff-]{0,251}[A-Za-z0-9\u00a1-\uffff])?$/.test(
      address,
    ) &&
    !address.includes('..')
  );
}

/** A value that goes into a header (the subject): refused with any control character. */
export const isHeaderSafe = (value: string) => !/[\u0000-\u001f\u007f]/.test(value);

/** An address as a notice may show it to someone else: `a•••@example.com`. */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 1) return '•••';
  return `${address.slice(0, 1)}•••${address.slice(at)}`;
}
