import { Type } from 'typebox';
import type { PropertyDefinition } from './definition.ts';

/** Property helpers, so a class file reads as a list of fields. */

export const uuidProperty = <Column extends string>(column: Column, options: Partial<Omit<PropertyDefinition, 'column'>> = {}): PropertyDefinition<Column> => ({
  column,
  schema: Type.String({ format: 'uuid' }),
  fromJson: (value: string) => value.toLowerCase(),
  ...options,
});

export const textProperty = <Column extends string>(column: Column, options: Partial<Omit<PropertyDefinition, 'column'>> & { minLength?: number; maxLength?: number } = {}): PropertyDefinition<Column> => {
  const { minLength, maxLength = 10_000, ...rest } = options;
  return { column, schema: Type.String({ ...(minLength !== undefined && { minLength }), maxLength }), ...rest };
};

export const nullableTextProperty = <Column extends string>(column: Column, options: Partial<Omit<PropertyDefinition, 'column'>> = {}): PropertyDefinition<Column> => ({
  column,
  schema: Type.Union([Type.String(), Type.Null()]),
  ...options,
});

export const integerProperty = <Column extends string>(column: Column, options: Partial<Omit<PropertyDefinition, 'column'>> = {}): PropertyDefinition<Column> => ({
  column,
  schema: Type.Integer(),
  ...options,
});

/** Stored as epoch milliseconds; shown as an ISO 8601 UTC string. Never writable. */
export const timestampProperty = <Column extends string>(column: Column, options: Partial<Omit<PropertyDefinition, 'column'>> = {}): PropertyDefinition<Column> => ({
  column,
  schema: Type.String({ format: 'date-time' }),
  toJson: (value: number | null) => (value === null ? null : new Date(Number(value)).toISOString()),
  ...options,
  writable: false,
});
