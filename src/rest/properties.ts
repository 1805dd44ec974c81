import { Type } from 'typebox';
import type { PropertyDefinition } from './definition.ts';

/** Property helpers, so a class file reads as a list of fields. */

export const uuidProperty = (column: string, options: Partial<PropertyDefinition> = {}): PropertyDefinition => ({
  column,
  schema: Type.String({ format: 'uuid' }),
  fromJson: (value: string) => value.toLowerCase(),
  ...options,
});

export const textProperty = (column: string, options: Partial<PropertyDefinition> & { minLength?: number; maxLength?: number } = {}): PropertyDefinition => {
  const { minLength, maxLength = 10_000, ...rest } = options;
  return { column, schema: Type.String({ ...(minLength !== undefined && { minLength }), maxLength }), ...rest };
};

export const nullableTextProperty = (column: string, options: Partial<PropertyDefinition> = {}): PropertyDefinition => ({
  column,
  schema: Type.Union([Type.String(), Type.Null()]),
  ...options,
});

export const integerProperty = (column: string, options: Partial<PropertyDefinition> = {}): PropertyDefinition => ({
  column,
  schema: Type.Integer(),
  ...options,
});

/** Stored as epoch milliseconds; shown as an ISO 8601 UTC string. Never writable. */
export const timestampProperty = (column: string, options: Partial<PropertyDefinition> = {}): PropertyDefinition => ({
  column,
  schema: Type.String({ format: 'date-time' }),
  toJson: (value: number | null) => (value === null ? null : new Date(Number(value)).toISOString()),
  ...options,
  writable: false,
});
