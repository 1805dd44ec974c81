import fastJson from 'fast-json-stringify';
import type { Caller, ClassDefinition, PropertyDefinition } from './definition.ts';
import { selectedColumns } from './row-mapper.ts';

/** Writes the instance of one row (its column values in the order of selectedColumns) as JSON. */
export type InstanceWriter = (values: readonly unknown[], caller: Caller) => string;

/** A character that JSON must escape in a string (or a lone surrogate, which JSON.stringify escapes). */
const NEEDS_ESCAPING = /[\u0000-\u001f"\\\ud800-\udfff]/;
/** The same but for the line feed. */
const NEEDS_ESCAPING_BESIDES_LF = /[\u0000-\u0009\u000b-\u001f"\\\ud800-\udfff]/;

/**
 * JSON.stringify(text), without its cost for the common strings: one that needs no escaping, and
 * one whose only escapes are line feeds (a PEM public key: V8 escapes such a string character by
 * character, 12,000 instructions for a 450-character key).
 */
export function jsonString(text: string): string {
  if (!NEEDS_ESCAPING.test(text)) return `"${text}"`;
  if (!NEEDS_ESCAPING_BESIDES_LF.test(text)) return `"${text.replaceAll('\n', '\\n')}"`;
  return JSON.stringify(text);
}

/**
 * The instance writer of a class, generated once: the text Fastify's serializer of the instance
 * schema (fast-json-stringify) makes of the object the row mapper builds, written from the column
 * values directly. Long answers (a 250-item page, a bulk POST's answer) spent more on building
 * those objects, walking them and joining their pieces than on reading the rows.
 *
 * A property's own toJsonText writes it when it has one (timestamps); otherwise a string
 * property's string and an integer property's integer are written here, and any other value
 * (null, a union, an array) goes to fast-json-stringify compiled for that property's schema, so
 * the text stays the serializer's in every case. Names enter the code as JSON string literals and
 * values by their index, as in the row mapper.
 */
export function instanceWriter(definition: ClassDefinition): InstanceWriter {
  const columns = selectedColumns(definition);
  const entries = Object.entries(definition.properties);
  const key = (name: string) => JSON.stringify(JSON.stringify(name));
  const value = (property: PropertyDefinition, index: number) =>
    property.toJson
      ? `convert[${index}](values[${index + 1}]${property.toJson.length > 1 ? ', asRow(values)' : ''})`
      : `values[${index + 1}]`;
  const written = (kind: string | undefined, index: number, expression: string) => {
    if (kind === 'string') return `(typeof (v = ${expression}) === 'string' ? jsonString(v) : fallback[${index}](v))`;
    // The serializer tries a union's members one by one with a validator: a plain check here.
    if (kind === 'string or null')
      return `(typeof (v = ${expression}) === 'string' ? jsonString(v) : v === null ? 'null' : fallback[${index}](v))`;
    if (kind === 'integer') return `(Number.isInteger(v = ${expression}) ? '' + v : fallback[${index}](v))`;
    return `fallback[${index}](${expression})`;
  };
  const kindOf = (schema: unknown): string | undefined => {
    const { type, anyOf } = schema as { type?: unknown; anyOf?: Array<{ type?: unknown }> };
    if (
      anyOf?.length === 2 &&
      anyOf.some((member) => member.type === 'string') &&
      anyOf.some((member) => member.type === 'null')
    )
      return 'string or null';
    return type as string | undefined;
  };
  const idSchema = { type: 'string' } as const;
  const statements = [
    `let v; let out = '{' + ${key(definition.id.property)} + ':' + ${written('string', entries.length, 'values[0]')};`,
  ];
  const conditional: string[] = [];
  for (const [index, [name, property]] of entries.entries()) {
    const text = property.toJsonText
      ? `toJsonText[${index}](values[${index + 1}])`
      : written(kindOf(property.schema), index, value(property, index));
    const part = `out += ',' + ${key(name)} + ':' + ${text};`;
    const conditions = [
      ...(property.readScope !== undefined ? [`caller.scopes.has(readScope[${index}])`] : []),
      ...(property.shownWhen !== undefined ? [`shownWhen[${index}](asRow(values), caller)`] : []),
    ];
    if (conditions.length === 0) statements.push(part);
    else conditional.push(`if (${conditions.join(' && ')}) { ${part} }`);
  }
  // The serializer writes the properties an instance always has first (the schema's required ones), then the others.
  statements.push(...conditional);
  const code = `return function writeInstance(values, caller) { ${statements.join(' ')} return out + '}'; };`;
  const make = new Function('convert', 'toJsonText', 'readScope', 'shownWhen', 'asRow', 'fallback', 'jsonString', code);
  const asRow = (values: readonly unknown[]) =>
    Object.fromEntries(columns.map((column, index) => [column, values[index]]));
  // The serializer of each property's own schema, and last the id's.
  const fallback = [...entries.map(([, property]) => fastJson(property.schema as never)), fastJson(idSchema)];
  return make(
    entries.map(([, property]) => property.toJson),
    entries.map(([, property]) => property.toJsonText),
    entries.map(([, property]) => property.readScope),
    entries.map(([, property]) => property.shownWhen),
    asRow,
    fallback,
    jsonString,
  );
}
