import type { IncomingMessage, ServerResponse } from 'node:http';
import * as oauth from 'oauth4webapi';
import type { ContentServiceClient } from './client.ts';
import { ContentServiceError } from './errors.ts';

export interface BrowserSignInOptions {
  /** Opens the authorization URL; default: the system browser (the `open` package). */
  openBrowser?: (url: string) => unknown;
  scope?: string;
  /** The path of the redirect URI registered for the app (http://127.0.0.1<path>); default /callback. */
  redirectPath?: string;
  /** Give up after this long without an answer; default 5 minutes. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

const page = (title: string, text: string) =>
  `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${title}</title></head>` +
  `<body style="font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem"><h1>${title}</h1><p>${text}</p></body></html>`;

/**
 * The front channel of the RFC 8252 flow: a one-shot HTTP server on 127.0.0.1 (a port the OS
 * picks; the service does not compare loopback ports) receives the redirect; `state` and `iss`
 * are checked by oauth4webapi. Answers the callback parameters for the code exchange.
 */
export async function browserSignIn(client: ContentServiceClient, options: BrowserSignInOptions) {
  const { createServer } = await import('node:http');
  const redirectPath = options.redirectPath ?? '/callback';
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();

  let settle!: { resolve: (params: URLSearchParams) => void; reject: (error: unknown) => void };
  const callback = new Promise<URLSearchParams>((resolve, reject) => (settle = { resolve, reject }));
  callback.catch(() => {}); // it may settle while the browser is still being opened; awaited below
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', `http://127.0.0.1`);
    if (request.method !== 'GET' || url.pathname !== redirectPath) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
      return;
    }
    const send = (status: number, title: string, text: string) =>
      response
        .writeHead(status, {
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
          connection: 'close',
        })
        .end(page(title, text));
    try {
      const params = oauth.validateAuthResponse(client.as, client.client, url, state);
      send(200, 'Signed in', 'You are signed in. You can close this window and go back to the application.');
      settle.resolve(params);
    } catch (error) {
      const denied = error instanceof oauth.AuthorizationResponseError && error.error === 'access_denied';
      send(
        400,
        denied ? 'Sign-in denied' : 'Sign-in failed',
        denied
          ? 'You chose not to sign in. You can close this window.'
          : 'The sign-in could not be completed. You can close this window and try again.',
      );
      settle.reject(
        denied
          ? new ContentServiceError({
              status: 400,
              code: 'access_denied',
              message: 'The sign-in was denied.',
              error: 'access_denied',
              cause: error,
            })
          : error,
      );
    }
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const redirectUri = `http://127.0.0.1:${port}${redirectPath}`;

  const timeoutMs = options.timeoutMs ?? 5 * 60_000;
  const timer = setTimeout(
    () =>
      settle.reject(
        new ContentServiceError({
          status: 0,
          code: 'timeout',
          message: `No answer from the browser within ${Math.round(timeoutMs / 1000)} s; sign in again.`,
        }),
      ),
    timeoutMs,
  );
  const onAbort = () => settle.reject(options.signal!.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const url = new URL(client.as.authorization_endpoint!);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', client.client.client_id);
    url.searchParams.set('redirect_uri', redirectUri);
    url.searchParams.set('scope', options.scope ?? client.options.scope ?? 'common');
    url.searchParams.set('state', state);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    url.searchParams.set('code_challenge_method', 'S256');
    const openBrowser = options.openBrowser ?? (async (target: string) => (await import('open')).default(target));
    await openBrowser(url.href);
    const params = await callback;
    return { params, redirectUri, verifier };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    server.close();
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 1000).unref(); // a browser's spare keep-alive sockets
  }
}
