import { Type } from 'typebox';
import type { PropertyDefinition } from './definition.ts';

/** Property helpers, so a class file reads as a list of fields. */

export const uuidProperty = <Column extends string>(
  column: Column,
  options: Partial<Omit<PropertyDefinition, 'column'>> = {},
): PropertyDefinition<Column> => ({
  column,
  schema: Type.String({ format: 'uuid' }),
  fromJson: (value: string) => value.toLowerCase(),
  ...options,
});

export const textProperty = <Column extends string>(
  column: Column,
  options: Partial<Omit<PropertyDefinition, 'column'>> & { minLength?: number; maxLength?: number } = {},
): PropertyDefinition<Column> => {
  const { minLength, maxLength = 10_000, ...rest } = options;
  return { column, schema: Type.String({ ...(minLength !== undefined && { minLength }), maxLength }), ...rest };
};

export const nullableTextProperty = <Column extends string>(
  column: Column,
  options: Partial<Omit<PropertyDefinition, 'column'>> = {},
): PropertyDefinition<Column> => ({
  column,
  schema: Type.Union([Type.String(), Type.Null()]),
  ...options,
});

export const integerProperty = <Column extends string>(
  column: Column,
  options: Partial<Omit<PropertyDefinition, 'column'>> = {},
): PropertyDefinition<Column> => ({
  column,
  schema: Type.Integer(),
  ...options,
});

const DAY = 86_400_000;
const TWO_DIGITS = Array.from({ length: 60 }, (_, n) => String(n).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, '0'));
let cachedDay = NaN;
let cachedDate = '';
let lastQuotedMillis = NaN;
let lastQuoted = '';

/**
 * Date.prototype.toISOString of epoch milliseconds, without a Date per value: the date part is
 * kept for the last day seen (a page of rows mostly shares a few days) and the time of day is
 * assembled from tables. A list page shows two timestamps per row, and toISOString was the
 * largest single cost of serialising one.
 */
export function isoFromMillis(ms: number): string {
  if (!Number.isInteger(ms)) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY);
  if (day !== cachedDay) {
    const iso = new Date(day * DAY).toISOString();
    cachedDate = iso.slice(0, iso.indexOf('T') + 1);
    cachedDay = day;
  }
  let rest = ms - day * DAY;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  return `${cachedDate}${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${THREE_DIGITS[rest - seconds * 1000]}Z`;
}

/**
 * isoFromMillis as a JSON string. The last one is kept: rows written together share their time (a
 * bulk POST's 250, each twice), and their answer is written from this text.
 */
function isoJsonText(ms: number): string {
  if (ms !== lastQuotedMillis) {
    lastQuoted = `"${isoFromMillis(ms)}"`;
    lastQuotedMillis = ms;
  }
  return lastQuoted;
}

/** Stored as epoch milliseconds; shown as an ISO 8601 UTC string. Never writable. */
export const timestampProperty = <Column extends string>(
  column: Column,
  options: Partial<Omit<PropertyDefinition, 'column'>> = {},
): PropertyDefinition<Column> => ({
  column,
  schema: Type.String({ format: 'date-time' }),
  toJson: (value: number | null) => (value === null ? null : isoFromMillis(Number(value))),
  // The serializer writes a date-time string's null as "", and an ISO string needs no escaping.
  toJsonText: (value: number | null) => (value === null ? '""' : isoJsonText(Number(value))),
  ...options,
  // A conversion or a schema of the class's own makes this text wrong: the writer then uses those.
  ...((options.toJson || (options.schema && (options.schema as { type?: unknown }).type !== 'string')) &&
  !options.toJsonText
    ? { toJsonText: undefined }
    : {}),
  writable: false,
});
