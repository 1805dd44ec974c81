/** WORKERS and METRICS_TOKEN (DESIGN "Operational contract"): accepted values and clear errors. */
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';

test('WORKERS is a process count or auto (one per core), 1 by default', () => {
  assert.equal(loadConfig({}).workers, 1);
  assert.equal(loadConfig({ WORKERS: '4' }).workers, 4);
  assert.equal(loadConfig({ WORKERS: 'auto' }).workers, availableParallelism());
  for (const bad of ['0', '-1', '1.5', 'many', '1000', ' 2']) {
    assert.throws(
      () => loadConfig({ WORKERS: bad }),
      (error: Error) => error instanceof ConfigError && /WORKERS/.test(error.message),
      bad,
    );
  }
});

test('METRICS_TOKEN is unset by default and taken as given', () => {
  assert.equal(loadConfig({}).metricsToken, undefined);
  assert.equal(loadConfig({ METRICS_TOKEN: '' }).metricsToken, undefined);
  assert.equal(loadConfig({ METRICS_TOKEN: 's3cret-token' }).metricsToken, 's3cret-token');
});
