// Prints the Authorization header for a signed v1 request.
//   npm run -s sign -- --user <uuid> --key private.pem --method POST --path /v1/mod.php --body '{"mod_id":"123"}'
// The host signed for is that of BASE_URL (default http://localhost:8080), whatever host you send to.
import { createPrivateKey, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { signedText } from '../src/legacy/signature.ts';

const { values } = parseArgs({
  options: {
    user: { type: 'string' },
    key: { type: 'string' },
    method: { type: 'string', default: 'GET' },
    path: { type: 'string' },
    body: { type: 'string', default: '' },
    hash: { type: 'string', default: 'sha256' },
    'base-url': { type: 'string', default: process.env.BASE_URL ?? 'http://localhost:8080' },
  },
});
if (!values.user || !values.key || !values.path) {
  process.stderr.write('usage: npm run -s sign -- --user UUID --key PRIVATE.pem [--method GET] --path /v1/… [--body TEXT] [--hash sha256|sha1]\n');
  process.exit(2);
}
const key = createPrivateKey(readFileSync(values.key));
const text = signedText(values.method!, new URL(values['base-url']!).host, values.path, Buffer.from(values.body!));
const signature = sign(key.asymmetricKeyType === 'ed25519' ? null : values.hash!, text, key).toString('hex');
process.stdout.write(`Authorization: Basic ${Buffer.from(`${values.user}:${signature}`).toString('base64')}\n`);
