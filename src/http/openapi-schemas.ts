import { type TSchema, Type } from 'typebox';

/**
 * The error body of every non-OAuth endpoint, for route schemas' 4xx answers. Extra properties are
 * allowed so that, as a serialization schema, it never drops a field of an error body.
 */
const errorBody = (description: string) =>
  Type.Object(
    {
      code: Type.String({ description: 'e.g. notFound, badRequest' }),
      message: Type.String(),
      details: Type.Optional(Type.Unknown()),
    },
    { additionalProperties: true, description },
  );

/** Route-schema `response` entries for the error answers a route documents, by status. */
export function errorResponses(answers: Record<number, string>): Record<number, TSchema> {
  return Object.fromEntries(Object.entries(answers).map(([status, description]) => [status, errorBody(description)]));
}
