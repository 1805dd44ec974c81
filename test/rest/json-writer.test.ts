import assert from 'node:assert/strict';
import { test } from 'node:test';
import fastJson from 'fast-json-stringify';
import { Type } from 'typebox';
import { Project } from '../../src/classes/project.ts';
import { User } from '../../src/classes/user.ts';
import type { Caller, ClassDefinition } from '../../src/rest/definition.ts';
import { instanceWriter, jsonString } from '../../src/rest/json-writer.ts';
import { integerProperty, nullableTextProperty, textProperty, timestampProperty } from '../../src/rest/properties.ts';
import { rowMapper } from '../../src/rest/row-mapper.ts';
import { instanceSchema } from '../../src/rest/schemas.ts';

const owner = '0a000000-0000-4000-8000-000000000001';
const callerWith = (scopes: string[], userId = owner): Caller => ({
  userId,
  clientId: 'c',
  sessionId: 's',
  scopes: new Set(scopes),
});

// Every kind of property the writer treats apart: strings, unions, integers, conversions (one
// reading the row), and the conditional ones.
const Thing: ClassDefinition = {
  name: 'Thing',
  path: '/things',
  table: 'things',
  id: { property: 'thingId', column: 'thing_id' },
  properties: {
    name: textProperty('name'),
    note: nullableTextProperty('note'),
    count: integerProperty('count'),
    tags: { column: 'tags', schema: Type.Array(Type.String()), toJson: (value: string) => value.split(' ') },
    label: { column: 'label', schema: Type.String(), toJson: (value: string, row) => `${value}/${String(row.count)}` },
    secret: nullableTextProperty('secret', { readScope: 'things.secret:read' }),
    mine: textProperty('mine', { shownWhen: (row, caller) => row.owner_id === caller.userId }),
    ownerId: textProperty('owner_id'),
    createdAt: timestampProperty('created_at'),
  },
  sortable: [],
  defaultSort: 'createdAt',
};

const awkward = [
  '',
  'plain',
  'a "quoted" \\ back\\slash',
  'line\nbreak\ttab\u0001',
  'lone \ud800 surrogate',
  'pair 😀 é ü 中文',
  'x'.repeat(5000),
  `${'"'.repeat(50)}`,
  '\u2028\u2029',
  '</script>',
  '-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n+/=\n-----END PUBLIC KEY-----\n',
  '\n',
  '\n\n',
  'lf\nand cr\r\n',
  'lf\nand "quote"',
  'lf\nand \\',
  'lf\nand \ud800',
  'lf\nand \u001f',
];

test('an instance written from its column values is the text the response schema serialises the mapped object to', () => {
  for (const definition of [Thing, Project, User]) {
    const serialize = fastJson(instanceSchema(definition) as never);
    const map = rowMapper(definition);
    const write = instanceWriter(definition);
    const width = 1 + Object.keys(definition.properties).length;
    for (const caller of [
      callerWith([]),
      callerWith(['things.secret:read']),
      callerWith(['things.secret:read'], 'someone else'),
    ]) {
      for (const [index, text] of awkward.entries()) {
        // Each column gets a value of its kind, some of them null or of another type than declared.
        const values: unknown[] = Array.from({ length: width }, (_, column) => {
          const name = column === 0 ? definition.id.property : Object.keys(definition.properties)[column - 1]!;
          if (name === 'count' || name === 'revision') return [3, 0, -7, 2.9, null, 12345678901][index % 6];
          if (name === 'createdAt' || name === 'updatedAt')
            return index === 5 ? null : 1_732_550_000_123 + index * 86_399_999;
          if (name === 'tags') return `${text} b`;
          if (name === 'ownerId' || name === 'userId') return index % 2 === 0 ? owner : text;
          if (['note', 'secret', 'username', 'publicKey', 'privateKey'].includes(name))
            return index % 3 === 0 ? null : text;
          if (name === 'name' && index === 4) return null;
          return text;
        });
        assert.equal(write(values, caller), serialize(map(values, caller)), `${definition.name}, value ${index}`);
      }
    }
  }
});

test('jsonString is JSON.stringify for every string', () => {
  for (const text of awkward) assert.equal(jsonString(text), JSON.stringify(text));
});
