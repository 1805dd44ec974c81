import { InvalidRequest } from './errors.ts';

/**
 * The parameters of an OAuth request, from a form or JSON body or a query string: a flat map
 * of strings. A repeated parameter is invalid_request (RFC 6749 §3.1).
 */
export function readParams(source: unknown): Record<string, string | undefined> {
  if (source === undefined || source === null) return {};
  if (typeof source !== 'object' || Array.isArray(source))
    throw new InvalidRequest('The parameters must be a form or a JSON object');
  const params: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(source)) {
    if (Array.isArray(value)) throw new InvalidRequest(`${name} is given more than once`);
    if (typeof value !== 'string') throw new InvalidRequest(`${name} must be a string`);
    params[name] = value;
  }
  return params;
}
