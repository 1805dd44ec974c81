/**
 * What the database stores in place of tokens, codes and engram paths is a fixed function of them:
 * databases written by earlier versions must still match. Pinned to known digests (SHA-256 and MD5
 * of "abc", FIPS 180-2 and RFC 1321), so a change of algorithm or encoding fails here.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { engramUid } from '../../src/legacy/engrams/store.ts';
import { challengeOf } from '../../src/oauth/pkce.ts';
import { hashSecret } from '../../src/secrets/random-secrets.ts';

test('a secret is stored as its SHA-256 in base64url, without padding', () => {
  assert.equal(hashSecret('abc'), 'ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0');
});

test('the S256 challenge of the RFC 7636 appendix B verifier', () => {
  assert.equal(
    challengeOf('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'),
    'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  );
});

test("an engram's uid is the MD5 of its lowercased path, in hex", () => {
  assert.equal(engramUid('ABC'), '900150983cd24fb0d6963f7d28e17f72');
});
