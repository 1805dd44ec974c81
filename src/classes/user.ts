import { Type } from 'typebox';
import { USERNAME } from '../accounts/accounts.ts';
import { badRequest } from '../http/errors.ts';
import { InvalidPublicKeyError, normalizePublicKey } from '../legacy/public-key.ts';
import type { ClassDefinition } from '../rest/definition.ts';
import { nullableTextProperty, timestampProperty } from '../rest/properties.ts';

function publicKeyFromJson(value: string): string {
  try {
    return normalizePublicKey(value);
  } catch (error) {
    if (error instanceof InvalidPublicKeyError) throw badRequest(`publicKey: ${error.message}`);
    throw error;
  }
}

/**
 * Users: readable with users:read; a user changes only its own username and public key
 * (users:update). The private key is shown only to its owner, with users.private_key:read.
 */
export const User: ClassDefinition = {
  name: 'User',
  path: '/users',
  table: 'users',
  id: { property: 'userId', column: 'user_id' },
  properties: {
    username: nullableTextProperty('username', { writable: true, required: true, input: Type.String({ pattern: USERNAME.source }) }),
    // null clears the key (as a PUT without it does), so a user read without a key can be PUT back.
    publicKey: nullableTextProperty('public_key', { writable: true, input: Type.Union([Type.String({ minLength: 1, maxLength: 20_000 }), Type.Null()]), fromJson: publicKeyFromJson }),
    privateKey: nullableTextProperty('private_key', { readScope: 'users.private_key:read', shownWhen: (row, caller) => row.user_id === caller.userId }),
    createdAt: timestampProperty('created_at'),
  },
  sortable: ['username', 'createdAt'],
  defaultSort: 'createdAt',
  filters: { username: 'substring' },
  scopes: { read: ['users:read'], write: ['users:update'] },
  changeable: (eb, caller) => eb('user_id', '=', caller.userId),
  operations: { create: false, update: true, delete: false },
  aliases: [{ path: '/user', id: (caller) => caller.userId, methods: ['GET', 'PUT', 'PATCH'] }],
};
