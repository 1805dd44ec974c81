import type { FastifyInstance } from 'fastify';
import { attemptLimit, countAttempt } from '../http/attempt-limits.ts';
import { startDeviceInteraction } from '../oauth/device-authorizations.ts';
import { sendPage, tooManyAttempts } from './pages.ts';

/**
 * The device page (verification_uri): the person types the code their device shows, then signs
 * in and approves on the login pages. Wrong codes are limited per browser and per IP, so the
 * code space cannot be searched.
 */
export async function devicePages(web: FastifyInstance): Promise<void> {
  const wrongCodesByIp = attemptLimit(web, { name: 'user-code-ip', max: 5, windowMs: 60_000 });
  const wrongCodesByBrowser = attemptLimit(web, { name: 'user-code-browser', max: 5, windowMs: 60_000 });

  web.get<{ Querystring: { user_code?: string } }>('/device', async (request, reply) =>
    sendPage(reply, 'device', {
      userCode: typeof request.query.user_code === 'string' ? request.query.user_code.slice(0, 12) : '',
    }),
  );

  web.post<{ Body: Record<string, string | undefined> }>(
    '/device',
    { preHandler: web.csrfProtection },
    async (request, reply) => {
      const typed = String(request.body?.user_code ?? '').slice(0, 32);
      const again = (error: string, status: number) => sendPage(reply, 'device', { userCode: typed, error }, status);
      // Counted before the lookup, given back when the code is found (attempt-limits.ts).
      const attempt = await countAttempt([
        wrongCodesByIp.of(request.ip),
        wrongCodesByBrowser.of(request.cookies._csrf ?? request.ip),
      ]);
      if (attempt.refusedBy.length > 0) return again(tooManyAttempts(reply, 'wrong codes', attempt.retryAfterMs), 429);
      const interactionId = await startDeviceInteraction(web.database.db, typed);
      if (!interactionId) return again('That code is not valid or has expired. Check the code on your device.', 400);
      await attempt.succeeded();
      return reply.code(303).header('location', `/login/${interactionId}`).send();
    },
  );
}
