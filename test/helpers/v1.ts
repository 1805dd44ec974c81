import assert from 'node:assert/strict';
import { type Algorithm, newUser, signedHeaders, type TestUser } from './keys.ts';
import type { Reply, TestServer } from './server.ts';
import type { FakeWorkshop } from './workshop.ts';

/** A signed v1 request; a body that is not a string is sent as JSON. */
export function signed(
  server: TestServer,
  user: TestUser,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<Reply> {
  const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return server.request(method, path, { headers: signedHeaders(user, method, path, text, contentType), body: text });
}

/** Creates a v1 user through the API. */
export async function registerUser(server: TestServer, algorithm: Algorithm = 'rsa-sha256'): Promise<TestUser> {
  const user = newUser(algorithm);
  const reply = await server.request('POST', '/v1/user.php', {
    body: { user_id: user.userId, public_key: user.publicPem },
  });
  assert.equal(reply.status, 200, reply.text);
  return user;
}

let nextModId = 7_000_000;

/** Puts a new mod of our game on the fake workshop and returns its id. */
export function publishMod(
  workshop: FakeWorkshop,
  item: { name?: string; description?: string; appId?: string } = {},
): string {
  const modId = String(nextModId++);
  workshop.items.set(modId, { name: `Mod ${modId}`, ...item });
  return modId;
}

/** Registers and confirms a new mod for `user`; answers its Mod structure. */
export async function confirmedMod(
  server: TestServer,
  workshop: FakeWorkshop,
  user: TestUser,
  modId = publishMod(workshop),
) {
  const registered = await signed(server, user, 'POST', '/v1/mod.php', { mod_id: modId });
  assert.equal(registered.status, 200, registered.text);
  workshop.items.get(modId)!.description = `Proof of ownership: ${registered.body.confirmation_code}`;
  const reply = await signed(server, user, 'GET', `/v1/mod.php/${modId}?action=confirm`);
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}
