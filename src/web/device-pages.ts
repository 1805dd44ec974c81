import type { FastifyInstance } from 'fastify';
import { failureLimiter } from '../http/rate-limit.ts';
import { normalizeUserCode } from '../oauth/device-authorization.ts';
import { createInteraction } from '../oauth/interactions.ts';
import { sendPage, tooManyAttempts } from './pages.ts';

/**
 * The device page (verification_uri): the person types the code their device shows, then signs
 * in and approves on the login pages. Wrong codes are limited per browser and per IP, so the
 * code space cannot be searched.
 */
export async function devicePages(web: FastifyInstance): Promise<void> {
  const wrongCodesByIp = failureLimiter(web, { name: 'user-code-ip', max: 5, windowMs: 60_000, key: (r) => r.ip });
  const wrongCodesByBrowser = failureLimiter(web, { name: 'user-code-browser', max: 5, windowMs: 60_000, key: (r) => r.cookies._csrf ?? r.ip });

  web.get<{ Querystring: { user_code?: string } }>('/device', async (request, reply) =>
    sendPage(reply, 'device', { userCode: typeof request.query.user_code === 'string' ? request.query.user_code.slice(0, 12) : '' }),
  );

  web.post<{ Body: Record<string, string | undefined> }>('/device', { preHandler: web.csrfProtection }, async (request, reply) => {
    const typed = String(request.body?.user_code ?? '').slice(0, 32);
    const again = (error: string, status: number) => sendPage(reply, 'device', { userCode: typed, error }, status);
    const wait = Math.max(await wrongCodesByIp.retryAfter(request), await wrongCodesByBrowser.retryAfter(request));
    if (wait > 0) return again(tooManyAttempts(reply, 'wrong codes', wait), 429);
    const code = normalizeUserCode(typed);
    const now = Date.now();
    const pending = code
      ? await web.database.db
          .selectFrom('device_authorizations')
          .select(['device_code', 'client_id', 'scope'])
          .where('user_code', '=', code)
          .where('status', '=', 'pending')
          .where('expires_at', '>', now)
          .executeTakeFirst()
      : undefined;
    if (!pending) {
      await Promise.all([wrongCodesByIp.recordFailure(request), wrongCodesByBrowser.recordFailure(request)]);
      return again('That code is not valid or has expired. Check the code on your device.', 400);
    }
    const interactionId = await createInteraction(web.database.db, {
      client_id: pending.client_id,
      scope: pending.scope,
      redirect_uri: null,
      state: null,
      code_challenge: null,
      device_id: null,
      device_code: pending.device_code,
    });
    return reply.code(303).header('location', `/login/${interactionId}`).send();
  });
}
