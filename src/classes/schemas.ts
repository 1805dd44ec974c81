/**
 * The JSON shapes of the v4 classes' properties: the server validates and documents with these
 * (src/classes/*.ts) and the client library (client/) derives its types from them. Only TypeBox
 * and the import-free rules of src/accounts/account-names.ts may be imported here, so the client
 * can compile this file without the server.
 */
import { Type } from 'typebox';
import { USERNAME_PATTERN } from '../accounts/account-names.ts';

const uuid = () => Type.String({ format: 'uuid' });
const timestamp = () => Type.String({ format: 'date-time' });
const nullableText = () => Type.Union([Type.String(), Type.Null()]);

export const ProjectProperties = {
  projectId: uuid(),
  userId: uuid(),
  title: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.String({ maxLength: 10_000 }),
  gameId: Type.String({ minLength: 1, maxLength: 50 }),
  revision: Type.Integer(),
  createdAt: timestamp(),
  updatedAt: timestamp(),
};

export const SessionProperties = {
  sessionId: uuid(),
  applicationId: uuid(),
  scopes: Type.Array(Type.String()),
  createdAt: timestamp(),
  accessTokenExpiration: timestamp(),
  refreshTokenExpiration: timestamp(),
};

export const UserProperties = {
  userId: uuid(),
  username: nullableText(),
  publicKey: nullableText(),
  /** Shown only on the caller's own user, with users.private_key:read. */
  privateKey: nullableText(),
  createdAt: timestamp(),
};

/** Write shapes where they differ from the read shapes. */
export const UserInputs = {
  username: Type.String({ pattern: USERNAME_PATTERN }),
  // null clears the key (as a PUT without it does), so a user read without a key can be PUT back.
  publicKey: Type.Union([Type.String({ minLength: 1, maxLength: 20_000 }), Type.Null()]),
};
