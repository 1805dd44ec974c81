/**
 * The content coding to answer with, from Accept-Encoding (RFC 9110 §12.5.3): the acceptable
 * coding of `available` with the highest q-value (ties: the order of `available`), or undefined
 * for none (send the body as it is). A coding not named is acceptable only through `*`.
 */
export function chooseEncoding<T extends string>(
  header: string | string[] | undefined,
  available: readonly T[],
): T | undefined {
  if (header === undefined) return undefined;
  const weights = new Map<string, number>();
  for (const item of (Array.isArray(header) ? header.join(',') : header).split(',')) {
    const [name, ...params] = item.split(';').map((part) => part.trim());
    if (!name) continue;
    let q = 1;
    for (const param of params) {
      const match = /^q\s*=\s*([0-9.]+)$/i.exec(param);
      if (match) q = Number(match[1]);
    }
    if (!Number.isFinite(q) || q < 0 || q > 1) q = 0;
    weights.set(name.toLowerCase(), q);
  }
  let best: T | undefined;
  let bestWeight = 0;
  for (const coding of available) {
    const weight = weights.get(coding) ?? weights.get('*') ?? 0;
    if (weight > bestWeight) {
      best = coding;
      bestWeight = weight;
    }
  }
  return best;
}

/**
 * chooseEncoding for a fixed `available`, remembering the answer for the Accept-Encoding values
 * seen last (clients send a handful of distinct ones), so a hot route does not parse it per request.
 */
export function encodingChooser<T extends string>(
  available: readonly T[],
  remember = 64,
): (header: string | string[] | undefined) => T | undefined {
  const answers = new Map<string, T | undefined>();
  return (header) => {
    if (typeof header !== 'string') return chooseEncoding(header, available);
    if (answers.has(header)) return answers.get(header);
    const answer = chooseEncoding(header, available);
    if (answers.size >= remember) answers.clear();
    answers.set(header, answer);
    return answer;
  };
}

/**
 * Whether If-None-Match names any of `tags` (quoted entity tags) or is `*`: weak comparison, as
 * RFC 9110 §13.1.2 asks for this header, so `W/"x"` matches `"x"`.
 */
export function noneMatchHits(header: string | string[] | undefined, tags: readonly string[]): boolean {
  if (header === undefined) return false;
  // The usual revalidation: the tag last answered, exactly.
  if (typeof header === 'string' && tags.includes(header)) return true;
  const value = Array.isArray(header) ? header.join(',') : header;
  if (value.trim() === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  const wanted = new Set(tags.map(opaque));
  return (value.match(/(?:W\/)?"[^"]*"/g) ?? []).some((tag) => wanted.has(opaque(tag)));
}
