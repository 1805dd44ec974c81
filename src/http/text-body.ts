/**
 * Texts up to this many UTF-16 units are sent to Node as strings, longer ones as one Buffer.
 *
 * A string is joined to the head and written with it. In a process that has also served other
 * answers (Buffers, streams, empty 304s), a single-object GET sent as a Buffer cost ~6 % more CPU
 * than as a string, while in a fresh process the two were even (docs/decisions/0037). A long text (a 250-item page) Node measured, encoded and wrote in
 * pieces; as a Buffer its length is known and the socket writes it as it is.
 */
export const STRING_BODY_LIMIT = 16 * 1024;

/** `text` as the body of an answer: itself when short, else its UTF-8 bytes. */
export function textBody(text: string): string | Buffer {
  return text.length <= STRING_BODY_LIMIT ? text : Buffer.from(text);
}
