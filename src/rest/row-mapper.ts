import type { Caller, ClassDefinition, PropertyDefinition, Row } from './definition.ts';

/** The columns a class's reads select, in this order: the id, then each property's. */
export function selectedColumns(definition: ClassDefinition): string[] {
  return [definition.id.column, ...Object.values(definition.properties).map((property) => property.column)];
}

/** Turns the column values of one row (in the order of selectedColumns) into the instance as JSON. */
export type RowMapper = (values: readonly unknown[], caller: Caller) => Row;

/**
 * The row mapper of a class, generated once: one object literal with the class's property names,
 * so V8 builds every instance with one shape. (A loop assigning names from a list made each
 * assignment a megamorphic store, the largest cost of mapping a 250-row page after the timestamps.)
 * Names enter the code as JSON string literals and values by their index; conversions and
 * conditions are passed in, never inlined. A condition on the row (shownWhen), and a conversion that
 * reads other columns, see it as an object.
 */
export function rowMapper(definition: ClassDefinition): RowMapper {
  const columns = selectedColumns(definition);
  const entries = Object.entries(definition.properties);
  // In an object literal, "__proto__" would set the prototype instead of a property.
  if ([definition.id.property, ...Object.keys(definition.properties)].includes('__proto__'))
    throw new Error(`${definition.name}: no property may be named __proto__`);
  const key = (text: string) => JSON.stringify(text);
  // Property `index` is column `index + 1` (the id is column 0).
  // A conversion that reads the other columns (toJson with a second parameter) gets the row as an object.
  const value = (property: PropertyDefinition, index: number) =>
    property.toJson
      ? `convert[${index}](values[${index + 1}]${property.toJson.length > 1 ? ', asRow(values)' : ''})`
      : `values[${index + 1}]`;
  const literal = [`${key(definition.id.property)}: values[0]`];
  const after: string[] = [];
  for (const [index, [name, property]] of entries.entries()) {
    const conditional = property.readScope !== undefined || property.shownWhen !== undefined;
    if (!conditional && after.length === 0) {
      literal.push(`${key(name)}: ${value(property, index)}`);
      continue;
    }
    const conditions = [
      ...(property.readScope !== undefined ? [`caller.scopes.has(readScope[${index}])`] : []),
      ...(property.shownWhen !== undefined ? [`shownWhen[${index}](asRow(values), caller)`] : []),
    ];
    const assign = `out[${key(name)}] = ${value(property, index)};`;
    after.push(conditions.length > 0 ? `if (${conditions.join(' && ')}) ${assign}` : assign);
  }
  const code = `return function rowToJson(values, caller) { const out = { ${literal.join(', ')} }; ${after.join(' ')} return out; };`;
  const make = new Function('convert', 'readScope', 'shownWhen', 'asRow', code);
  const asRow = (values: readonly unknown[]): Row =>
    Object.fromEntries(columns.map((column, index) => [column, values[index]]));
  return make(
    entries.map(([, property]) => property.toJson),
    entries.map(([, property]) => property.readScope),
    entries.map(([, property]) => property.shownWhen),
    asRow,
  );
}
