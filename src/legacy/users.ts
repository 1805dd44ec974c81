import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidPublicKeyError, normalizePublicKey } from '../accounts/public-key.ts';
import {
  createUsers,
  DuplicateUserError,
  deleteUser,
  findUsers,
  type NewUser,
  type StoredUser,
} from '../accounts/user-store.ts';
import { bumpContentVersion } from '../db/content-versions.ts';
import { badRequest, forbidden, notFound } from '../http/errors.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { requireSignature } from './authenticate.ts';
import { readJsonBody, splitList } from './body.ts';
import { v1Docs } from './openapi.ts';

interface IdParams {
  ids: string;
}

const toV1 = (user: StoredUser) => ({ user_id: user.userId, public_key: user.publicKey });

export async function userRoutes(v1: FastifyInstance): Promise<void> {
  v1.get<{ Params: IdParams }>('/user.php/:ids', { schema: v1Docs.getUsers }, async (request) => {
    const ids = splitList(request.params.ids).map(normalizeUuid);
    const found = await findUsers(v1.database.db, ids.filter(isUuid));
    if (found.length === 0)
      throw notFound(ids.length === 1 ? `User ${ids[0]} not found` : 'None of the users was found');
    return ids.length === 1 ? toV1(found[0]!) : found.map(toV1);
  });

  const create = async (request: FastifyRequest<{ Params: Partial<IdParams> }>) => {
    const body = readJsonBody(request);
    const pathId = request.params.ids === undefined ? undefined : normalizeUuid(request.params.ids);
    const items = Array.isArray(body) ? body : [body];
    if (items.length === 0) throw badRequest('The array of users is empty');
    const users = items.map((item, index) => parseNewUser(item, Array.isArray(body) ? index : undefined, pathId));
    const seen = new Set<string>();
    for (const user of users) {
      if (seen.has(user.userId)) throw badRequest(`User ${user.userId} appears twice in the request`);
      seen.add(user.userId);
    }
    try {
      await createUsers(v1.database.db, users);
    } catch (error) {
      if (error instanceof DuplicateUserError) throw badRequest(error.message, { user_id: error.userId });
      throw error;
    }
    const created = users.map((user) => ({ user_id: user.userId, public_key: user.publicKey }));
    return Array.isArray(body) ? created : created[0];
  };
  v1.post('/user.php', { schema: v1Docs.saveUsers }, create);
  v1.post<{ Params: IdParams }>('/user.php/:ids', { schema: v1Docs.saveUser }, create);

  v1.delete<{ Params: IdParams }>(
    '/user.php/:ids',
    { preHandler: requireSignature, schema: v1Docs.deleteUser },
    async (request) => {
      const ids = splitList(request.params.ids).map(normalizeUuid);
      if (ids.some((id) => id !== request.signedBy)) throw forbidden('A user may only delete itself');
      const userId = request.signedBy!;
      await v1.database.db.transaction().execute(async (trx) => {
        // Their mods and engrams went with them: the cached engram lists are stale.
        if (await deleteUser(trx, userId)) await bumpContentVersion(trx, 'engrams');
      });
      return { deleted: [request.signedBy] };
    },
  );
}

function parseNewUser(item: unknown, index: number | undefined, pathId: string | undefined): NewUser {
  const where = index === undefined ? '' : ` (item ${index})`;
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    throw badRequest(`Each user must be an object with user_id and public_key${where}`);
  }
  const { user_id: rawId, public_key: rawKey } = item as Record<string, unknown>;
  if (!isUuid(rawId)) throw badRequest(`user_id must be a UUID${where}`);
  const userId = normalizeUuid(rawId);
  if (pathId !== undefined && pathId !== userId) {
    throw badRequest(`user_id ${userId} does not match the id in the path${where}`);
  }
  if (typeof rawKey !== 'string' || rawKey.trim() === '') throw badRequest(`public_key is required${where}`);
  try {
    return { userId, publicKey: normalizePublicKey(rawKey) };
  } catch (error) {
    if (error instanceof InvalidPublicKeyError) throw badRequest(`${error.message}${where}`, { user_id: userId });
    throw error;
  }
}
