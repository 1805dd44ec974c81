import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classes } from '../../src/classes/index.ts';
import { defineClass } from '../../src/rest/definition.ts';
import { textProperty, uuidProperty } from '../../src/rest/properties.ts';

// Type-level checks: `npm run typecheck` fails if a @ts-expect-error below stops being an error,
// that is if a class could name a table or column the schema (src/db/schema.ts) does not have.

const base = { name: 'Check', path: '/checks', sortable: [], defaultSort: 'createdAt' };

const valid = defineClass({
  ...base,
  table: 'projects',
  id: { property: 'projectId', column: 'project_id' },
  properties: { title: textProperty('title') },
});

// @ts-expect-error a table that does not exist
defineClass({ ...base, table: 'projectz', id: { property: 'projectId', column: 'project_id' }, properties: {} });

// @ts-expect-error an id column the table does not have
defineClass({ ...base, table: 'projects', id: { property: 'projectId', column: 'projectid' }, properties: {} });

defineClass({
  ...base,
  table: 'projects',
  id: { property: 'projectId', column: 'project_id' },
  // @ts-expect-error a property column the table does not have (a column of another table)
  properties: { owner: uuidProperty('client_id') },
});

defineClass({
  ...base,
  table: 'projects',
  id: { property: 'projectId', column: 'project_id' },
  properties: {},
  // @ts-expect-error a timestamp column the table does not have
  timestamps: { created: 'created' },
});

defineClass({
  ...base,
  table: 'projects',
  id: { property: 'projectId', column: 'project_id' },
  properties: {},
  // @ts-expect-error a row filter on a column the table does not have
  visible: (eb, caller) => eb('owner_id', '=', caller.userId),
});

test('classes are declared on their tables (the checks above are made by typecheck)', () => {
  assert.equal(valid.table, 'projects');
  assert.deepEqual(
    classes.map((definition) => definition.table),
    ['projects', 'sessions', 'users'],
  );
});
