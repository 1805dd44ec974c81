import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startServer, type TestServer } from '../helpers/server.ts';
import { fuzzSeed, problemsOf, Random, sendRaw } from './harness.ts';

/**
 * Requests that Node refuses or treats specially before Fastify routes them (malformed request
 * lines, oversized headers and URLs, Expect, a missing Host, broken framing), sent on raw sockets:
 * each must answer in the error body shape, with X-Request-Id and nosniff, without a body for
 * HEAD, and without hanging.
 */

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.close());

const seed = fuzzSeed();

function head(lines: string[]): Buffer {
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}

const big = (size: number) => 'a'.repeat(size);

/** Fixed cases: [name, bytes, method, status expected (or undefined: any 4xx)]. */
const CASES: Array<[string, Buffer, string, number | undefined]> = [
  ['garbage request line', head(['GARBAGE']), 'GET', 400],
  ['unknown HTTP version', head(['GET /healthz HTTP/9.9', 'Host: x']), 'GET', 400],
  ['space in the target', head(['GET /a b HTTP/1.1', 'Host: x']), 'GET', 400],
  [
    'NUL in the target',
    Buffer.concat([Buffer.from('GET /v1/engram.php?mod_id=1'), Buffer.from([0]), head([' HTTP/1.1', 'Host: x'])]),
    'GET',
    400,
  ],
  [
    'raw UTF-8 in the target',
    Buffer.concat([Buffer.from('GET /v1/engram.php/'), Buffer.from('é€', 'utf8'), head([' HTTP/1.1', 'Host: x'])]),
    'GET',
    undefined,
  ],
  ['invalid header name', head(['GET /healthz HTTP/1.1', 'Host: x', 'Bad Header: 1']), 'GET', 400],
  [
    'NUL in a header value',
    Buffer.concat([
      Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a'),
      Buffer.from([0]),
      Buffer.from('b\r\n\r\n'),
    ]),
    'GET',
    400,
  ],
  ['headers over the limit', head(['GET /healthz HTTP/1.1', 'Host: x', `X-Big: ${big(20_000)}`]), 'GET', 431],
  ['headers over the limit, HEAD', head(['HEAD /healthz HTTP/1.1', 'Host: x', `X-Big: ${big(20_000)}`]), 'HEAD', 431],
  ['URL over the limit', head([`GET /v1/engram.php?mod_id=${big(20_000)} HTTP/1.1`, 'Host: x']), 'GET', 431],
  [
    "path parameter over the router's limit",
    head([`GET /v1/engram.php/${big(20_000)} HTTP/1.1`, 'Host: x']),
    'GET',
    414,
  ],
  ['URL over the limit, HEAD', head([`HEAD /v4/projects?title=${big(20_000)} HTTP/1.1`, 'Host: x']), 'HEAD', 431],
  [
    "headers over Node's 64 KiB limit, HEAD",
    head(['HEAD /healthz HTTP/1.1', 'Host: x', `X-Big: ${big(100_000)}`]),
    'HEAD',
    431,
  ],
  [
    "URL over Node's 64 KiB limit, HEAD",
    head([`HEAD /v1/engram.php/${big(100_000)} HTTP/1.1`, 'Host: x']),
    'HEAD',
    431,
  ],
  [
    'many headers',
    head(['GET /healthz HTTP/1.1', 'Host: x', ...Array.from({ length: 3000 }, (_, i) => `X-H${i}: 1`)]),
    'GET',
    431,
  ],
  ['missing Host', head(['GET /healthz HTTP/1.1']), 'GET', 400],
  ['missing Host, HEAD', head(['HEAD /v4/projects HTTP/1.1']), 'HEAD', 400],
  ['unknown Expect', head(['GET /healthz HTTP/1.1', 'Host: x', 'Expect: bogus']), 'GET', 417],
  ['unknown Expect, HEAD', head(['HEAD /healthz HTTP/1.1', 'Host: x', 'Expect: bogus']), 'HEAD', 417],
  [
    'unknown Expect on a POST',
    head([
      'POST /v4/projects HTTP/1.1',
      'Host: x',
      'Expect: 200-ok',
      'Content-Length: 2',
      'Content-Type: application/json',
    ]),
    'POST',
    417,
  ],
  ['bad Content-Length', head(['POST /v4/projects HTTP/1.1', 'Host: x', 'Content-Length: abc']), 'POST', 400],
  [
    'two Content-Lengths',
    head(['POST /v4/projects HTTP/1.1', 'Host: x', 'Content-Length: 1', 'Content-Length: 2']),
    'POST',
    400,
  ],
  [
    'Content-Length and chunked',
    head(['POST /v1/user.php HTTP/1.1', 'Host: x', 'Content-Length: 5', 'Transfer-Encoding: chunked']),
    'POST',
    400,
  ],
  [
    'bad chunk size',
    Buffer.concat([
      head(['POST /v1/user.php HTTP/1.1', 'Host: x', 'Transfer-Encoding: chunked', 'Content-Type: application/json']),
      Buffer.from('zz\r\n{}\r\n0\r\n\r\n'),
    ]),
    'POST',
    400,
  ],
  [
    'unknown transfer coding',
    head(['POST /v1/user.php HTTP/1.1', 'Host: x', 'Transfer-Encoding: gzip, chunked, foo']),
    'POST',
    400,
  ],
  ['CONNECT', head(['CONNECT 127.0.0.1:22 HTTP/1.1', 'Host: 127.0.0.1:22']), 'CONNECT', undefined],
  ['absolute-form target', head(['GET http://evil.example/v4/projects HTTP/1.1', 'Host: x']), 'GET', undefined],
  ['asterisk target', head(['OPTIONS * HTTP/1.1', 'Host: x']), 'OPTIONS', undefined],
];

for (const [name, bytes, method, status] of CASES) {
  test(`before routing: ${name} answers in the error shape`, async () => {
    const answer = await sendRaw(server.url, bytes, method === 'HEAD');
    assert.deepEqual(
      problemsOf(method, '/-', answer, bytes.length),
      [],
      `${answer.status} ${answer.body.toString('utf8').slice(0, 300)}`,
    );
    if (status !== undefined) assert.equal(answer.status, status, answer.body.toString('utf8'));
    else assert.ok(answer.status >= 400 && answer.status < 500, `status ${answer.status}`);
  });
}

test("a GET over Node's 64 KiB limit is 431, in the error shape when it has a body", async () => {
  const answer = await sendRaw(server.url, head([`GET /v4/projects?title=${big(100_000)} HTTP/1.1`, 'Host: x']));
  assert.equal(answer.status, 431);
  assert.deepEqual(problemsOf('GET', '/-', answer, 100_000), []);
});

test('HTTP/1.0 without Host is served', async () => {
  const answer = await sendRaw(server.url, head(['GET /healthz HTTP/1.0']));
  assert.equal(answer.status, 200, answer.body.toString('utf8'));
});

test('Expect: 100-continue still works', async () => {
  const answer = await sendRaw(
    server.url,
    Buffer.concat([
      head([
        'POST /v1/user.php HTTP/1.1',
        'Host: x',
        'Expect: 100-continue',
        'Content-Type: application/json',
        'Content-Length: 2',
      ]),
      Buffer.from('{}'),
    ]),
  );
  // After the interim 100 the body is read and judged: here, a v1 user without a key.
  assert.equal(answer.status, 400, answer.body.toString('utf8'));
  assert.deepEqual(problemsOf('POST', '/v1/user.php', answer), []);
});

test(`random raw request heads never get a 5xx or a foreign shape (seed ${seed})`, { timeout: 120_000 }, async () => {
  const random = new Random(seed);
  const methods = ['GET', 'HEAD', 'POST', 'DELETE', 'G\u00e9T', 'get', '', 'PRI'];
  const targets = [
    '/healthz',
    '/v4/projects',
    '/v1/engram.php',
    '/login/x/switch',
    '/',
    '',
    '*',
    '//',
    '/%',
    '/\u00ff',
    '/%00',
    `/${big(9000)}`,
  ];
  const versions = ['HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 extra', 'http/1.1', ''];
  const headers = [
    'Host: x',
    'Host:',
    'Host: a, b',
    'Host: x\r\nHost: y',
    'Expect: 100-continue',
    'Expect: x',
    'Content-Length: -1',
    'Content-Length: 99999999999999999999',
    'Transfer-Encoding: chunked',
    'X: \u00ff',
    'X:\tspaced',
    ': empty-name',
    'Connection: close',
    'Authorization: Bearer \u00e9',
    `Cookie: ${big(9000)}`,
    'Content-Type: application/json',
  ];
  const failures: string[] = [];
  for (let i = 0; i < 150; i++) {
    const method = random.pick(methods);
    const target = random.pick(targets);
    const lines = [`${method} ${target} ${random.pick(versions)}`.trim()];
    for (let n = random.int(4); n > 0; n--) lines.push(random.pick(headers));
    if (!lines.some((line) => line.startsWith('Connection'))) lines.push('Connection: close');
    // A chunked body is ended (a request still sending its body is no hang of the server);
    // a JSON text in its place is a framing error to answer.
    const ending = lines.includes('Transfer-Encoding: chunked') ? '0\r\n\r\n' : '';
    const bytes = Buffer.concat([head(lines), Buffer.from(random.chance(0.3) ? '{"a":1}' : ending)]);
    try {
      const answer = await sendRaw(server.url, bytes, method === 'HEAD');
      // 100 Continue is an interim answer, and a 2xx/3xx to a valid request is no finding.
      if (answer.status === 100 || answer.status < 400) continue;
      const problems = problemsOf(
        method === 'HEAD' ? 'HEAD' : 'GET',
        target.startsWith('/') ? target : '/-',
        answer,
        bytes.length,
      );
      if (problems.length > 0)
        failures.push(
          `${JSON.stringify(lines.join(' | ').slice(0, 200))}: ${problems.join('; ')} -> ${answer.status} ${answer.body.toString('utf8').slice(0, 200)}`,
        );
    } catch (error) {
      failures.push(`${JSON.stringify(lines.join(' | ').slice(0, 200))}: ${(error as Error).message}`);
    }
  }
  assert.deepEqual(failures, [], `raw fuzz seed ${seed}`);
});
