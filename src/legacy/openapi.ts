import { type TSchema, Type } from 'typebox';
import { errorResponses } from '../http/openapi-schemas.ts';

/**
 * OpenAPI descriptions of the v1 routes. v1 reads its own query strings and raw bodies (signed byte
 * for byte), so request schemas would change what it accepts: the query and body are described for
 * the document only (`x-document-query`, `x-document-body`, which the OpenAPI transform turns into
 * parameters and a request body); only the path's id list, always a string, is a real schema.
 */
export interface V1Operation {
  operationId: string;
  summary: string;
  description?: string;
  tag: 'Users' | 'Mods' | 'Engrams' | 'Documents';
  /** Needs a signed request (Authorization: Basic user_id:signature). */
  signed: boolean;
  /** What the path's comma-separated `ids` are, when the path has them. */
  ids?: string;
  query?: Record<string, string>;
  body?: TSchema;
  ok: { status: number; description: string };
  errors: Record<number, string>;
}

const SIGNATURE_ERRORS: Record<number, string> = {
  401: 'No Authorization header (WWW-Authenticate: Basic)',
  403: 'The signature does not verify; details holds the text that should have been signed',
};

export function v1Schema(operation: V1Operation) {
  return {
    tags: [`v1 ${operation.tag}`],
    operationId: operation.operationId,
    summary: operation.summary,
    ...(operation.description ? { description: operation.description } : {}),
    security: operation.signed ? [{ v1Signature: [] }] : [],
    ...(operation.ids ? { params: Type.Object({ ids: Type.String({ description: operation.ids }) }) } : {}),
    ...(operation.query
      ? {
          'x-document-query': Type.Object(
            Object.fromEntries(
              Object.entries(operation.query).map(([name, description]) => [
                name,
                Type.Optional(Type.String({ description })),
              ]),
            ),
          ),
        }
      : {}),
    ...(operation.body ? { 'x-document-body': operation.body } : {}),
    response: {
      // A description only: as a serialization schema it leaves the answer as it is.
      [operation.ok.status]: { description: operation.ok.description },
      ...errorResponses({
        ...(operation.signed ? SIGNATURE_ERRORS : {}),
        429: 'Rate limit (RATE_LIMIT_V1 per IP) exceeded',
        ...operation.errors,
      }),
    },
  };
}

const anyJson = (description: string) => Type.Unknown({ description });

export const v1Docs = {
  getUsers: v1Schema({
    tag: 'Users',
    operationId: 'v1GetUsers',
    summary: 'Get users by id',
    signed: false,
    description: 'One id answers the user object; several (comma-separated) answer an array of those found.',
    ids: 'One user UUID, or several separated by commas',
    ok: { status: 200, description: 'A user {user_id, public_key, …} or an array of them' },
    errors: { 400: 'An id is not a UUID', 404: 'No such user (one id)' },
  }),
  saveUsers: v1Schema({
    tag: 'Users',
    operationId: 'v1SaveUsers',
    summary: 'Create or update users',
    signed: false,
    description: 'One user structure or an array; an existing user is changed only by a request signed with its key.',
    body: anyJson('{user_id, public_key (PEM or hex DER), …} or an array of them'),
    ok: { status: 200, description: 'The saved user(s)' },
    errors: { 400: 'Invalid structure or key', 403: 'Changing another user, or the signature does not verify' },
  }),
  saveUser: v1Schema({
    tag: 'Users',
    operationId: 'v1SaveUser',
    summary: 'Create or update the user of the path',
    signed: false,
    ids: 'The user UUID, equal to the body’s user_id',
    body: anyJson('{user_id, public_key, …}'),
    ok: { status: 200, description: 'The saved user' },
    errors: {
      400: 'Invalid structure, or the id does not match the body',
      403: 'Changing another user, or the signature does not verify',
    },
  }),
  deleteUser: v1Schema({
    tag: 'Users',
    operationId: 'v1DeleteUser',
    summary: 'Delete your user',
    signed: true,
    ids: 'Your user UUID',
    ok: { status: 200, description: 'Deleted' },
    errors: { 400: 'Not a UUID', 404: 'No such user' },
  }),
  listMods: v1Schema({
    tag: 'Mods',
    operationId: 'v1ListMods',
    summary: 'List your mods',
    signed: true,
    ok: { status: 200, description: 'An array of mods {mod_id, name, confirmed, confirmation_code, pull_url, …}' },
    errors: {},
  }),
  getMods: v1Schema({
    tag: 'Mods',
    operationId: 'v1GetMods',
    summary: 'Get your mods by id, or confirm one (action=confirm)',
    signed: true,
    description:
      'With action=confirm the mod’s workshop page must contain its confirmation_code; 412 when it does not yet.',
    ids: 'Workshop mod id(s), comma-separated',
    query: { action: 'confirm: confirm ownership of the mod' },
    ok: { status: 200, description: 'The mod(s)' },
    errors: {
      400: 'Invalid id or action, or confirmed by someone else',
      404: 'Not your mod',
      412: 'The confirmation code is not on the workshop page yet',
    },
  }),
  registerMod: v1Schema({
    tag: 'Mods',
    operationId: 'v1RegisterMod',
    summary: 'Register a workshop mod (answers its confirmation code)',
    signed: true,
    body: anyJson('{mod_id}'),
    ok: { status: 200, description: 'The registered mod with its confirmation_code' },
    errors: { 400: 'Not a workshop item of the game, or already registered' },
  }),
  deleteModsInPath: v1Schema({
    tag: 'Mods',
    operationId: 'v1DeleteModsInPath',
    summary: 'Delete your mods named in the path',
    signed: true,
    ids: 'Workshop mod id(s), comma-separated',
    ok: { status: 200, description: 'Deleted' },
    errors: { 400: 'Invalid id', 404: 'Not your mod' },
  }),
  deleteMods: v1Schema({
    tag: 'Mods',
    operationId: 'v1DeleteMods',
    summary: 'Delete your mods listed in the body',
    signed: true,
    body: anyJson('Mod ids, one per line or as a JSON array'),
    ok: { status: 200, description: 'Deleted' },
    errors: { 400: 'Invalid id', 404: 'Not your mod' },
  }),
  listEngrams: v1Schema({
    tag: 'Engrams',
    operationId: 'v1ListEngrams',
    summary: 'List engrams, of every mod or of some',
    signed: false,
    query: { mod_id: 'Comma-separated mod ids' },
    ok: { status: 200, description: 'An array of engrams (ETag; 304 to a matching If-None-Match)' },
    errors: { 400: 'Invalid mod id' },
  }),
  getEngrams: v1Schema({
    tag: 'Engrams',
    operationId: 'v1GetEngrams',
    summary: 'Get engrams by path',
    signed: false,
    ids: 'Engram path(s), comma-separated',
    ok: { status: 200, description: 'The engram(s)' },
    errors: { 400: 'Invalid path', 404: 'No such engram' },
  }),
  saveEngrams: v1Schema({
    tag: 'Engrams',
    operationId: 'v1SaveEngrams',
    summary: 'Create or update engrams of your confirmed mods',
    signed: true,
    body: anyJson('An engram {path, mod_id, label, availability or environments, …} or an array'),
    ok: { status: 200, description: 'Saved' },
    errors: { 400: 'Invalid engram, or its path is held by another mod', 403: 'The mod is not your confirmed mod' },
  }),
  deleteEngramsInPath: v1Schema({
    tag: 'Engrams',
    operationId: 'v1DeleteEngramsInPath',
    summary: 'Delete engrams named in the path',
    signed: true,
    ids: 'Engram path(s), comma-separated',
    ok: { status: 200, description: 'Deleted' },
    errors: { 400: 'Invalid path', 403: 'Not an engram of your mods' },
  }),
  deleteEngrams: v1Schema({
    tag: 'Engrams',
    operationId: 'v1DeleteEngrams',
    summary: 'Delete engrams listed in the body',
    signed: true,
    body: anyJson('Engram paths, one per line or as a JSON array'),
    ok: { status: 200, description: 'Deleted' },
    errors: { 400: 'Invalid path', 403: 'Not an engram of your mods' },
  }),
  documentExists: v1Schema({
    tag: 'Documents',
    operationId: 'v1DocumentExists',
    summary: 'Is a document published?',
    signed: false,
    ids: 'One document UUID',
    ok: { status: 200, description: 'Published (no body)' },
    errors: { 404: 'Not published', 405: 'Not a single UUID' },
  }),
  listDocuments: v1Schema({
    tag: 'Documents',
    operationId: 'v1ListDocuments',
    summary: 'Search published documents',
    signed: false,
    query: {
      user_id: 'Documents of this user (UUID)',
      sort: 'last_updated (default) or download_count',
      direction: 'desc (default) or asc',
      count: 'At most this many (positive integer)',
      offset: 'Skip this many (integer >= 0)',
    },
    ok: { status: 200, description: 'An array of document metadata' },
    errors: { 400: 'Invalid parameter' },
  }),
  getDocuments: v1Schema({
    tag: 'Documents',
    operationId: 'v1GetDocuments',
    summary: 'Download a document, or the metadata of several',
    signed: false,
    description:
      'One id answers the document content (counted as a download; simple=true answers its metadata); several answer metadata.',
    ids: 'One document UUID, or several separated by commas',
    query: { simple: 'true: metadata instead of content' },
    ok: { status: 200, description: 'The document content or metadata' },
    errors: { 400: 'Invalid id or parameter', 404: 'Not published' },
  }),
  saveDocuments: v1Schema({
    tag: 'Documents',
    operationId: 'v1SaveDocuments',
    summary: 'Publish or update your documents',
    signed: true,
    description: 'The body is kept byte for byte; Identifier (UUID), Title, Description and LootSources are required.',
    body: anyJson('A document or an array of documents'),
    ok: { status: 200, description: 'Saved' },
    errors: { 400: 'Invalid document', 403: 'The document belongs to another user' },
  }),
  deleteDocumentsInPath: v1Schema({
    tag: 'Documents',
    operationId: 'v1DeleteDocumentsInPath',
    summary: 'Delete your documents named in the path',
    signed: true,
    ids: 'Document UUID(s), comma-separated',
    ok: { status: 200, description: 'Deleted' },
    errors: { 400: 'Invalid id', 403: 'A document belongs to another user', 404: 'Not published' },
  }),
  deleteDocuments: v1Schema({
    tag: 'Documents',
    operationId: 'v1DeleteDocuments',
    summary: 'Delete your documents listed in the body',
    signed: true,
    body: anyJson('Document UUIDs, one per line or as a JSON array'),
    ok: { status: 200, description: 'Deleted' },
    errors: { 400: 'Invalid id', 403: 'A document belongs to another user', 404: 'Not published' },
  }),
};
