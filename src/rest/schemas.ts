import { type TSchema, Type } from 'typebox';
import type { ClassDefinition } from './definition.ts';

export const MAX_PAGE_SIZE = 250;
/** The highest page whose offset, (page - 1) × pageSize, is still an exact integer the databases accept. */
export const MAX_PAGE = Math.floor(Number.MAX_SAFE_INTEGER / MAX_PAGE_SIZE);

const idSchema = () => Type.String({ format: 'uuid' });

/** An instance as the API shows it. Properties that depend on scopes or ownership are optional. */
export function instanceSchema(definition: ClassDefinition) {
  const properties: Record<string, TSchema> = { [definition.id.property]: idSchema() };
  for (const [name, property] of Object.entries(definition.properties)) {
    properties[name] = property.readScope || property.shownWhen ? Type.Optional(property.schema) : property.schema;
  }
  return Type.Object(properties, { title: definition.name });
}

/**
 * The body of a write. Writable properties must fit their schema; read-only ones (as found in
 * an instance the client read) are accepted and ignored; anything else is 400.
 * `full`: a PUT, which must give every required property.
 */
export function writeSchema(definition: ClassDefinition, full: boolean) {
  const properties: Record<string, TSchema> = { [definition.id.property]: Type.Optional(idSchema()) };
  for (const [name, property] of Object.entries(definition.properties)) {
    if (!property.writable) properties[name] = Type.Optional(Type.Unknown({ readOnly: true }));
    else if (full && property.required && !property.default) properties[name] = property.input ?? property.schema;
    else properties[name] = Type.Optional(property.input ?? property.schema);
  }
  return Type.Object(properties, { additionalProperties: false, title: `${definition.name}Write` });
}

/** The body of a POST: one instance or an array of them. */
export function postSchema(definition: ClassDefinition) {
  const item = writeSchema(definition, false);
  return Type.Union([item, Type.Array(item, { minItems: 1, maxItems: 1000 })]);
}

/** The body of a bulk DELETE: objects holding the identifier; other properties are ignored. */
export function bulkDeleteSchema(definition: ClassDefinition) {
  return Type.Array(Type.Object({ [definition.id.property]: idSchema() }), { minItems: 1, maxItems: 1000 });
}

export function listQuerySchema(definition: ClassDefinition) {
  const filters: Record<string, TSchema> = {};
  for (const name of Object.keys(definition.filters ?? {}))
    filters[name] = Type.Optional(Type.String({ maxLength: 200 }));
  return Type.Object(
    {
      pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: MAX_PAGE_SIZE })),
      page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1 })),
      sortDirection: Type.Optional(Type.Enum(['ascending', 'descending'])),
      sortedColumn: Type.Optional(Type.Enum(definition.sortable)),
      ...filters,
    },
    { additionalProperties: false },
  );
}

export function listSchema(definition: ClassDefinition) {
  return Type.Object({
    totalResults: Type.Integer(),
    pageSize: Type.Integer(),
    pages: Type.Integer(),
    page: Type.Integer(),
    results: Type.Array(instanceSchema(definition)),
  });
}

export function writeResultSchema(definition: ClassDefinition) {
  return Type.Object({
    created: Type.Array(instanceSchema(definition)),
    updated: Type.Array(instanceSchema(definition)),
  });
}

export const idParamsSchema = Type.Object({ id: Type.String() });
