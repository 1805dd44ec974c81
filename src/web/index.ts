import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import formbody from '@fastify/formbody';
import helmet from '@fastify/helmet';
import type { FastifyError, FastifyInstance } from 'fastify';
import { apiErrorForThrown, sendError } from '../http/error-handler.ts';
import { accountPages } from './account-pages.ts';
import { adminConsole } from './admin/index.ts';
import { appsPages } from './apps-pages.ts';
import { assetRoutes } from './assets.ts';
import { devicePages } from './device-pages.ts';
import { homePage } from './home-page.ts';
import { loginPages } from './login-pages.ts';
import { logoutPages } from './logout-pages.ts';
import { notFoundPages } from './not-found-pages.ts';
import { ownDataPages } from './own-data-pages.ts';
import { sendMessage } from './pages.ts';
import { passkeySignInRoutes } from './passkey-pages.ts';
import { reauthRoutes } from './recent-sign-in.ts';
import { selfServicePages } from './self-service-pages.ts';
import { registerSelfServiceLimits } from './self-service-support.ts';
import { registerSignInLimits } from './sign-in.ts';
import { keepFirstAnswers } from './single-use-submit.ts';
import { spawnCodeRoutes } from './spawn-codes.ts';

/** The server-rendered pages: home, sign-in, two-step, consent, device code entry, the account page, spawn codes. */
export async function webPages(web: FastifyInstance): Promise<void> {
  const secure = web.config.baseUrl.startsWith('https:');
  await web.register(cookie);
  keepFirstAnswers(web);
  await web.register(formbody);
  await web.register(csrf, { cookieOpts: { path: '/', sameSite: 'lax', httpOnly: true, secure } });
  await web.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      // No form-action: after the consent form the browser is redirected to the client's
      // redirect URI, which form-action would block.
      // Scripts are files the service serves (the passkey script), and they only call the service.
      directives: {
        defaultSrc: ["'none'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        scriptSrc: ["'self'"],
        connectSrc: ["'self'"],
        baseUri: ["'none'"],
        frameAncestors: ["'none'"],
      },
    },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    hsts: secure,
  });
  registerSignInLimits(web);
  registerSelfServiceLimits(web);

  web.setErrorHandler((error: FastifyError, request, reply) => {
    const apiError = apiErrorForThrown(error, request);
    // Only an origin-form target (/path) is a page; `GET *` reaches the home page's route but is
    // no page request (asterisk-form is for OPTIONS alone): it gets the API's error body.
    if (!request.url.startsWith('/')) return sendError(reply, apiError);
    if (error.code === 'FST_CSRF_INVALID_TOKEN' || error.code === 'FST_CSRF_MISSING_SECRET') {
      return sendMessage(
        reply,
        'Please try again',
        'This form was open too long or came from another site. Go back, reload the page and submit it again.',
        403,
      );
    }
    for (const [name, value] of Object.entries(apiError.headers)) reply.header(name, value);
    let title = apiError.statusCode >= 500 ? 'Something went wrong' : 'That did not work';
    if (apiError.statusCode === 503) title = 'Try again in a moment';
    return sendMessage(reply, title, apiError.message, apiError.statusCode);
  });

  await web.register(assetRoutes);
  await web.register(homePage);
  await web.register(spawnCodeRoutes);
  await web.register(loginPages);
  await web.register(devicePages);
  await web.register(logoutPages);
  await web.register(accountPages);
  await web.register(ownDataPages);
  await web.register(appsPages);
  await web.register(reauthRoutes);
  await web.register(passkeySignInRoutes);
  await web.register(selfServicePages);
  await web.register(adminConsole);
  await web.register(notFoundPages);
}
