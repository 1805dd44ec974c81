import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import type { FastifySchemaCompiler } from 'fastify';
import { Compile } from 'typebox/compile';

type Schema = Record<string, unknown>;

/** Keywords of a string property that Value.Convert leaves alone: a string stays the same string. */
const PLAIN_STRING_KEYWORDS = new Set([
  'type',
  'description',
  'pattern',
  'format',
  'minLength',
  'maxLength',
  'examples',
  'default',
  'title',
]);

/**
 * Whether Value.Convert returns every value this schema accepts unchanged: an object whose
 * properties are all plain strings, with no schema for additional properties (TypeBox converts
 * only the properties it knows, and a string into a string is the identity).
 */
export function convertsToItself(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  const { type, properties, additionalProperties } = schema as Schema;
  if (type !== 'object' || typeof properties !== 'object' || properties === null) return false;
  if (typeof additionalProperties === 'object') return false;
  if (Object.getOwnPropertySymbols(schema).length > 0) return false;
  return Object.values(properties as Record<string, unknown>).every(
    (property) =>
      typeof property === 'object' &&
      property !== null &&
      (property as Schema).type === 'string' &&
      Object.getOwnPropertySymbols(property).length === 0 &&
      Object.keys(property).every((key) => PLAIN_STRING_KEYWORDS.has(key)),
  );
}

/**
 * The TypeBox validator compiler, without the cost of Value.Convert on every request where it
 * cannot change anything: for a path, query or header schema of plain strings (the v1 routes'
 * `ids`), a value that already passes is answered as is; anything else, or a value that fails,
 * goes through TypeBoxValidatorCompiler exactly as before (conversion, then the same errors).
 */
// biome-ignore lint/suspicious/noExplicitAny: Fastify's compiler type is generic over every route schema
export const validatorCompiler: FastifySchemaCompiler<any> = (route) => {
  if (route.httpPart === 'body' || !convertsToItself(route.schema)) return TypeBoxValidatorCompiler(route);
  const check = Compile(route.schema);
  // Compiled when first needed: most of these routes never see an invalid value.
  let standard: ReturnType<typeof TypeBoxValidatorCompiler> | undefined;
  return (value: unknown) => {
    if (check.Check(value)) return { value };
    standard ??= TypeBoxValidatorCompiler(route);
    return standard(value);
  };
};
