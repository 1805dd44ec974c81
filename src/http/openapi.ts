import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

const isDocumented = (url: string) => /^\/v[14]\//.test(url) || url === '/.well-known/oauth-authorization-server';

const V1_SIGNATURE = [
  'v1 requests that change something are signed with the key registered for the user:',
  '`Authorization: Basic base64(<user_id>:<hex signature>)`. The signature is over the text, lines',
  'joined by a line feed: the method; `https://` + the host of the service + the path and query',
  'exactly as sent; and, for every method but GET, the raw body (the line is present even when empty).',
  'RSA keys sign PKCS#1 v1.5 over SHA-256 or SHA-1; Ed25519 keys are accepted too. No Authorization',
  'header is 401 (WWW-Authenticate: Basic); a signature that does not verify is 403, whose `details`',
  'holds the text the service expected to be signed.',
].join(' ');

/**
 * v1 routes describe their query and body for the document only (`x-document-query`,
 * `x-document-body`; see src/legacy/openapi.ts): here they become the document's parameters and
 * request body.
 */
// biome-ignore lint/suspicious/noExplicitAny: a JSON Schema of any shape, walked by key
function documentOnly(schema: Record<string, any>): Record<string, any> {
  const { 'x-document-query': query, 'x-document-body': body, ...rest } = schema ?? {};
  return { ...rest, ...(query ? { querystring: query } : {}), ...(body ? { body } : {}) };
}

/**
 * Collects the schema of every route registered after it into an OpenAPI 3.1 document: the
 * same schemas that validate requests. Served at /v4/openapi.json, readable at /v4/docs (the
 * viewer's assets ship with the package; nothing is loaded from elsewhere).
 */
export async function openApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Content service API',
        version: '4',
        description:
          'Version 4: OAuth 2.1 login with PKCE and the generic class operations. Version 1: the signed legacy API of the desktop client. ' +
          'Errors outside the OAuth endpoints are {"code","message","details"?}; the OAuth endpoints answer RFC 6749 {"error","error_description"}.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: app.config.baseUrl }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'An access token from POST /v4/login; X-Service-Token is accepted too.',
          },
          clientSecretBasic: {
            type: 'http',
            scheme: 'basic',
            description:
              'A confidential client: client_id and client_secret, each form-encoded, as HTTP Basic (RFC 6749 §2.3.1); or both in the body.',
          },
          v1Signature: { type: 'http', scheme: 'basic', description: V1_SIGNATURE },
        },
      },
    },
    hiddenTag: 'hidden',
    // The APIs (and the discovery document of the OAuth endpoints) are documented; the pages, /healthz and /metrics are not.
    transform: ({ schema, url }) => ({
      schema: (isDocumented(url) ? documentOnly(schema) : { ...schema, hide: true }) as typeof schema,
      url,
    }),
  });
  await app.register(swaggerUi, {
    routePrefix: '/v4/docs',
    staticCSP: true,
    uiConfig: { docExpansion: 'list', deepLinking: false },
  });
  app.get('/v4/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
