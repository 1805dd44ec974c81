/**
 * The validator compiler skips TypeBox's conversion only where it cannot change a value (an
 * object of plain strings): the answers are the same as TypeBoxValidatorCompiler's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { convertsToItself, validatorCompiler } from '../../src/http/validation.ts';

const route = (schema: unknown, httpPart = 'params') => ({ schema, httpPart, method: 'GET', url: '/x' }) as any;

describe('validatorCompiler', () => {
  test('only objects of plain string properties convert to themselves', () => {
    assert.equal(convertsToItself(Type.Object({ ids: Type.String({ description: 'ids' }) })), true);
    assert.equal(
      convertsToItself(Type.Object({ a: Type.Optional(Type.String()), b: Type.String({ pattern: '^x' }) })),
      true,
    );
    assert.equal(convertsToItself(Type.Object({ n: Type.Integer() })), false);
    assert.equal(convertsToItself(Type.Object({ u: Type.Union([Type.Number(), Type.String()]) })), false);
    assert.equal(convertsToItself(Type.Object({ s: Type.String() }, { additionalProperties: Type.Number() })), false);
    assert.equal(convertsToItself(Type.String()), false);
  });

  test('answers what TypeBoxValidatorCompiler answers, valid or not', () => {
    const schemas = [
      Type.Object({ ids: Type.String() }),
      Type.Object({ a: Type.Optional(Type.String()) }, { additionalProperties: false }),
      Type.Object({ n: Type.Integer(), u: Type.Union([Type.Number(), Type.String()]) }),
    ];
    const values = [
      { ids: 'abc' },
      { ids: '' },
      {},
      { a: 'x' },
      { a: 'x', b: 'y' },
      { a: ['x', 'y'] },
      { n: '12', u: '3' },
      { n: 'x', u: 'y' },
      { ids: 5 },
    ];
    for (const schema of schemas) {
      for (const part of ['params', 'querystring', 'headers', 'body']) {
        const ours = validatorCompiler(route(schema, part));
        const theirs = TypeBoxValidatorCompiler(route(schema, part));
        for (const value of values) {
          const a = ours(structuredClone(value)) as { value?: unknown; error?: unknown };
          const b = theirs(structuredClone(value)) as { value?: unknown; error?: unknown };
          assert.deepEqual(a.value, b.value, `${part} ${JSON.stringify(schema)} ${JSON.stringify(value)}`);
          assert.deepEqual(
            a.error === undefined ? undefined : [...(a.error as Iterable<unknown>)],
            b.error === undefined ? undefined : [...(b.error as Iterable<unknown>)],
          );
        }
      }
    }
  });
});
