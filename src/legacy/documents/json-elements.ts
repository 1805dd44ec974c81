/** JSON's insignificant whitespace (RFC 8259 §2); JavaScript's trim() strips more than this. */
const isJsonWhitespace = (char: string | undefined) => char === ' ' || char === '\t' || char === '\n' || char === '\r';

function trimJsonWhitespace(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isJsonWhitespace(text[start])) start++;
  while (end > start && isJsonWhitespace(text[end - 1])) end--;
  return text.slice(start, end);
}

export class NotAJsonArrayError extends Error {}

/**
 * The text of each element of a top-level JSON array, exactly as written between the commas
 * (without the whitespace around it): `[ {"a": 1} ,"x,]"]` gives `{"a": 1}` and `"x,]"`.
 *
 * It scans once, tracking strings (with their backslash escapes) and nesting depth, so commas
 * and brackets inside strings or nested values do not split. The text is expected to be valid
 * JSON (parse it first); anything that is not a well-formed array throws NotAJsonArrayError.
 * A leading byte order mark is skipped.
 */
export function splitJsonArray(text: string): string[] {
  let index = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  while (isJsonWhitespace(text[index])) index++;
  if (text[index] !== '[') throw new NotAJsonArrayError('The text is not a JSON array');
  index++;

  const elements: string[] = [];
  let start = index;
  let depth = 0;
  let inString = false;
  for (; index < text.length; index++) {
    const char = text[index];
    if (inString) {
      if (char === '\\')
        index++; // the escaped character cannot end the string
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === '[' || char === '{') depth++;
    else if (char === ']' || char === '}') {
      if (depth > 0) {
        depth--;
        continue;
      }
      if (char !== ']') throw new NotAJsonArrayError(`Unbalanced "}" at offset ${index}`);
      const last = trimJsonWhitespace(text.slice(start, index));
      if (last !== '') elements.push(last);
      else if (elements.length > 0) throw new NotAJsonArrayError(`Empty element before offset ${index}`);
      if (trimJsonWhitespace(text.slice(index + 1)) !== '')
        throw new NotAJsonArrayError(`Text after the array at offset ${index + 1}`);
      return elements;
    } else if (char === ',' && depth === 0) {
      const element = trimJsonWhitespace(text.slice(start, index));
      if (element === '') throw new NotAJsonArrayError(`Empty element before offset ${index}`);
      elements.push(element);
      start = index + 1;
    }
  }
  throw new NotAJsonArrayError('The array is not closed');
}
