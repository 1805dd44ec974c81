/** GET / (DESIGN "Operations"): a page saying what the service is, linking to the docs, the device page and the account page. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { parse } from 'node-html-parser';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.close());

test('GET / is an HTML page in the look of the login pages, with links to the docs, the device page and the account page', async () => {
  const reply = await server.request('GET', '/');
  assert.equal(reply.status, 200);
  assert.match(reply.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
  assert.match(reply.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  const page = parse(reply.text);
  assert.equal(page.querySelector('link[rel=stylesheet]')?.getAttribute('href'), '/assets/site.css');
  assert.match(page.querySelector('h1')?.text ?? '', /Content Service/);
  assert.match(page.querySelector('main p')?.text ?? '', /API/);
  const links = page.querySelectorAll('a').map((a) => a.getAttribute('href'));
  // Sign-up is open by default (SIGN_UP): the page links it.
  assert.deepEqual(links, ['/v4/docs', '/device', '/account/sign-up', '/account']);
  // Every link leads somewhere (the account page may send a signed-out visitor to sign in).
  for (const link of ['/v4/docs', '/device', '/account/sign-up'])
    assert.ok([200, 302].includes((await server.request('GET', link)).status), link);
});

test('HEAD / answers the headers without a body', async () => {
  const reply = await server.request('HEAD', '/');
  assert.equal(reply.status, 200);
  assert.equal(reply.text, '');
});
