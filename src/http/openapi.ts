import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

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
        description: 'Version 4: OAuth 2.1 login with PKCE and the generic class operations. Errors outside the OAuth endpoints are {"code","message","details"?}.',
      },
      servers: [{ url: app.config.baseUrl }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'An access token from POST /v4/login; X-Service-Token is accepted too.' },
        },
      },
    },
    hiddenTag: 'hidden',
    // Only v4 is documented; v1 is the legacy interface.
    transform: ({ schema, url }) => ({ schema: (url.startsWith('/v4/') ? schema : { ...schema, hide: true }) as typeof schema, url }),
  });
  await app.register(swaggerUi, { routePrefix: '/v4/docs', staticCSP: true, uiConfig: { docExpansion: 'list', deepLinking: false } });
  app.get('/v4/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
