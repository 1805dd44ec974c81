import type { FastifyInstance } from 'fastify';
import { notFound } from '../http/errors.ts';
import { requireScopes } from '../http/bearer-auth.ts';

/** GET /v4/user: the signed-in user. */
export async function meRoute(api: FastifyInstance): Promise<void> {
  api.get('/user', { preHandler: requireScopes() }, async (request) => {
    const user = await api.database.db
      .selectFrom('users')
      .select(['user_id', 'username'])
      .where('user_id', '=', request.auth!.userId)
      .executeTakeFirst();
    if (!user) throw notFound('The user of this token no longer exists');
    return { userId: user.user_id, username: user.username };
  });
}
