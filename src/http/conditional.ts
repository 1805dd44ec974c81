/**
 * The content coding to answer with, from Accept-Encoding (RFC 9110 §12.5.3): the acceptable
 * coding of `available` with the highest q-value (ties: the order of `available`), or undefined
 * for none (send the body as it is). A coding not named is acceptable only through `*`.
 */
export function chooseEncoding<T extends string>(header: string | string[] | undefined, available: readonly T[]): T | undefined {
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
 * Whether If-None-Match names any of `tags` (quoted entity tags) or is `*`: weak comparison, as
 * RFC 9110 §13.1.2 asks for this header, so `W/"x"` matches `"x"`.
 */
export function noneMatchHits(header: string | string[] | undefined, tags: readonly string[]): boolean {
  if (header === undefined) return false;
  const value = Array.isArray(header) ? header.join(',') : header;
  if (value.trim() === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  const wanted = new Set(tags.map(opaque));
  return (value.match(/(?:W\/)?"[^"]*"/g) ?? []).some((tag) => wanted.has(opaque(tag)));
}
