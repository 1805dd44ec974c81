import { changeProfile, type ProfileChange } from '../accounts/accounts.ts';
import { openAccountPrivateKey } from '../accounts/key-pair.ts';
import { InvalidPublicKeyError, normalizePublicKey } from '../accounts/public-key.ts';
import { badRequest } from '../http/errors.ts';
import { defineClass, type Row } from '../rest/definition.ts';
import { nullableTextProperty, timestampProperty } from '../rest/properties.ts';
import { UserInputs as inputs, UserProperties as schemas } from './schemas.ts';

function publicKeyFromJson(value: string): string {
  try {
    return normalizePublicKey(value);
  } catch (error) {
    if (error instanceof InvalidPublicKeyError) throw badRequest(`publicKey: ${error.message}`);
    throw error;
  }
}

/** The written columns (username, public_key) as the change accounts/ makes. */
function profileChange(values: Row): ProfileChange {
  return {
    ...('username' in values ? { username: values.username as string | null } : {}),
    ...('public_key' in values ? { publicKey: values.public_key as string | null } : {}),
  };
}

/**
 * Users: readable with users:read; a user changes only its own username and public key
 * (users:update). The private key is shown only to its owner, with users.private_key:read.
 */
export const User = defineClass({
  name: 'User',
  path: '/users',
  table: 'users',
  id: { property: 'userId', column: 'user_id' },
  properties: {
    username: nullableTextProperty('username', {
      writable: true,
      required: true,
      schema: schemas.username,
      input: inputs.username,
    }),
    publicKey: nullableTextProperty('public_key', {
      writable: true,
      schema: schemas.publicKey,
      input: inputs.publicKey,
      fromJson: publicKeyFromJson,
    }),
    privateKey: nullableTextProperty('private_key', {
      schema: schemas.privateKey,
      readScope: 'users.private_key:read',
      shownWhen: (row, caller) => row.user_id === caller.userId,
      // Stored sealed; it opens only while publicKey is the key it was made with (accounts/key-pair.ts).
      toJson: (sealed: string | null, row) => openAccountPrivateKey(sealed, row.user_id, row.public_key),
    }),
    createdAt: timestampProperty('created_at', { schema: schemas.createdAt }),
  },
  sortable: ['username', 'createdAt'],
  defaultSort: 'createdAt',
  filters: { username: 'substring' },
  scopes: { read: ['users:read'], write: ['users:update'] },
  changeable: (eb, caller) => eb('user_id', '=', caller.userId),
  operations: { create: false, update: true, delete: false },
  aliases: [{ path: '/user', id: (caller) => caller.userId, methods: ['GET', 'PUT', 'PATCH'] }],
  // users belongs to accounts/: a change goes through it.
  writes: { update: ({ db }, userId, values) => changeProfile(db, userId, profileChange(values)) },
});
