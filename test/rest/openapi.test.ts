/**
 * GET /v4/openapi.json: an OpenAPI 3 document listing every v4 class path and method with the
 * schemas that validate requests, and describing real answers; /v4/docs serves the viewer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { startServer, TEST_HOST, type TestServer } from '../helpers/server.ts';
import { type SignedIn, signIn } from './fixtures/clients.ts';

// ajv-formats is CommonJS; its function is the default export or its `default` property.
const addFormats = ((addFormatsModule as any).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

let server: TestServer;
let doc: any;
before(async () => {
  server = await startServer();
  const reply = await server.request('GET', '/v4/openapi.json');
  assert.equal(reply.status, 200, reply.text);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
  doc = reply.body;
});
after(() => server.close());

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every v4 class path with exactly the methods it serves. */
const CLASS_PATHS: Record<string, string[]> = {
  '/v4/projects': ['delete', 'get', 'post'],
  '/v4/projects/{id}': ['delete', 'get', 'patch', 'put'],
  '/v4/sessions': ['delete', 'get'],
  '/v4/sessions/{id}': ['delete', 'get'],
  '/v4/session': ['delete', 'get'],
  '/v4/users': ['get', 'post'],
  '/v4/users/{id}': ['get', 'patch', 'put'],
  '/v4/user': ['get', 'patch', 'put'],
};

function operations(): Array<{ path: string; method: string; operation: any }> {
  return Object.entries(doc.paths).flatMap(([path, item]: [string, any]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, operation]) => ({ path, method, operation })),
  );
}

/** Every JSON schema in the document: parameters, request bodies and responses. */
function schemas(): Array<{ where: string; schema: any }> {
  const found: Array<{ where: string; schema: any }> = [];
  for (const { path, method, operation } of operations()) {
    for (const parameter of operation.parameters ?? [])
      found.push({ where: `${method} ${path} parameter ${parameter.name}`, schema: parameter.schema });
    for (const [type, media] of Object.entries<any>(operation.requestBody?.content ?? {}))
      found.push({ where: `${method} ${path} body ${type}`, schema: media.schema });
    for (const [status, response] of Object.entries<any>(operation.responses)) {
      for (const [type, media] of Object.entries<any>(response.content ?? {}))
        found.push({ where: `${method} ${path} ${status} ${type}`, schema: media.schema });
    }
  }
  return found;
}

function responseSchema(path: string, method: string, status: string) {
  const schema = doc.paths[path]?.[method]?.responses?.[status]?.content?.['application/json']?.schema;
  assert.ok(schema, `no ${status} JSON schema for ${method} ${path}`);
  return schema;
}

function newAjv() {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  return ajv;
}

describe('the OpenAPI document', () => {
  test('is an OpenAPI 3 document with info, the server at BASE_URL and a bearer security scheme', () => {
    assert.match(doc.openapi, /^3\.\d+\.\d+$/);
    assert.equal(typeof doc.info.title, 'string');
    assert.equal(typeof doc.info.version, 'string');
    assert.deepEqual(doc.servers, [{ url: `https://${TEST_HOST}` }]);
    assert.deepEqual(doc.components.securitySchemes.bearer, {
      ...doc.components.securitySchemes.bearer,
      type: 'http',
      scheme: 'bearer',
    });
    assert.equal(typeof doc.paths, 'object');
  });

  test('is structurally valid: path parameters match the templates, every operation has described responses, security names a scheme', () => {
    const operationIds = new Set<string>();
    for (const { path, method, operation } of operations()) {
      const where = `${method} ${path}`;
      assert.ok(path.startsWith('/'), where);
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]).sort();
      const declared = (operation.parameters ?? [])
        .filter((p: any) => p.in === 'path')
        .map((p: any) => p.name)
        .sort();
      assert.deepEqual(declared, templated, `${where}: path parameters`);
      for (const parameter of operation.parameters ?? []) {
        assert.ok(
          ['query', 'header', 'path', 'cookie'].includes(parameter.in),
          `${where}: parameter ${parameter.name} in ${parameter.in}`,
        );
        assert.equal(typeof parameter.name, 'string');
        if (parameter.in === 'path')
          assert.equal(parameter.required, true, `${where}: path parameter ${parameter.name} must be required`);
        assert.ok(parameter.schema || parameter.content, `${where}: parameter ${parameter.name} has no schema`);
      }
      const names = (operation.parameters ?? []).map((p: any) => `${p.in}:${p.name}`);
      assert.equal(new Set(names).size, names.length, `${where}: a parameter is listed twice`);
      const responses = Object.entries<any>(operation.responses ?? {});
      assert.ok(responses.length > 0, `${where}: no responses`);
      for (const [status, response] of responses) {
        assert.match(status, /^([1-5]\d\d|[1-5]XX|default)$/, `${where}: status ${status}`);
        assert.equal(typeof response.description, 'string', `${where} ${status}: a response needs a description`);
      }
      if (operation.requestBody)
        assert.ok(Object.keys(operation.requestBody.content ?? {}).length > 0, `${where}: requestBody without content`);
      for (const requirement of operation.security ?? []) {
        for (const name of Object.keys(requirement))
          assert.ok(doc.components.securitySchemes[name], `${where}: unknown security scheme ${name}`);
      }
      if (operation.operationId) {
        assert.ok(!operationIds.has(operation.operationId), `duplicate operationId ${operation.operationId}`);
        operationIds.add(operation.operationId);
      }
    }
  });

  test('every $ref resolves within the document', () => {
    const refs: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === '$ref' && typeof value === 'string') refs.push(value);
          else walk(value);
        }
      }
    };
    walk(doc);
    for (const ref of refs) {
      assert.ok(ref.startsWith('#/'), `external or relative $ref ${ref}`);
      const target = ref
        .slice(2)
        .split('/')
        .reduce((node: any, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
      assert.ok(target !== undefined, `unresolved $ref ${ref}`);
    }
  });

  test('every schema is a valid JSON Schema 2020-12 (the dialect of OpenAPI 3.1)', () => {
    const all = schemas();
    assert.ok(all.length > 30, `only ${all.length} schemas`);
    const ajv = newAjv();
    for (const { where, schema } of all) {
      assert.ok(ajv.validateSchema(schema), `${where}: ${ajv.errorsText(ajv.errors)}`);
      assert.doesNotThrow(() => ajv.compile(schema), where);
    }
  });

  test('lists every class path with exactly the methods it serves, each behind the bearer scheme', () => {
    for (const [path, methods] of Object.entries(CLASS_PATHS)) {
      assert.ok(doc.paths[path], `${path} is missing`);
      assert.deepEqual(
        Object.keys(doc.paths[path])
          .filter((m) => HTTP_METHODS.includes(m))
          .sort(),
        methods,
        path,
      );
      for (const method of methods) {
        assert.deepEqual(doc.paths[path][method].security, [{ bearer: [] }], `${method} ${path}`);
        assert.ok(
          Array.isArray(doc.paths[path][method].tags) && doc.paths[path][method].tags.length > 0,
          `${method} ${path} has no tag`,
        );
      }
    }
  });

  test('documents the standard OAuth endpoints: discovery, revocation and introspection, with their error bodies', () => {
    const discovery = responseSchema('/.well-known/oauth-authorization-server', 'get', '200');
    for (const field of [
      'issuer',
      'revocation_endpoint',
      'introspection_endpoint',
      'scopes_supported',
      'authorization_response_iss_parameter_supported',
    ]) {
      assert.ok(discovery.properties[field], field);
    }
    for (const path of ['/v4/revoke', '/v4/introspect']) {
      const post = doc.paths[path]?.post;
      assert.ok(post, `${path} is missing`);
      const body = post.requestBody.content['application/x-www-form-urlencoded'].schema;
      assert.ok(body.properties.token && body.properties.token_type_hint && body.properties.client_id, path);
      assert.deepEqual(Object.keys(post.responses).sort(), ['200', '400', '401'], path);
      assert.deepEqual(
        Object.keys(post.responses['401'].content['application/json'].schema.properties).sort(),
        ['error', 'error_description'],
        path,
      );
    }
    const introspection = responseSchema('/v4/introspect', 'post', '200');
    assert.deepEqual(Object.keys(introspection.properties).sort(), [
      'active',
      'client_id',
      'exp',
      'iat',
      'scope',
      'sub',
      'token_type',
      'username',
    ]);
    assert.deepEqual(introspection.required, ['active']);
  });

  test('documents v4, v1 and the OAuth discovery document, and neither the document nor the viewer lists itself', () => {
    const paths = Object.keys(doc.paths);
    assert.ok(
      paths.every(
        (path) =>
          path.startsWith('/v4/') || path.startsWith('/v1/') || path === '/.well-known/oauth-authorization-server',
      ),
      paths.join(' '),
    );
    for (const path of ['/v1/user.php/{ids}', '/v1/mod.php', '/v1/engram.php', '/v1/document.php/{ids}'])
      assert.ok(paths.includes(path), path);
    assert.ok(!paths.some((path) => path.startsWith('/v4/docs') || path === '/v4/openapi.json'), paths.join(' '));
  });

  test('every operation has a unique operationId, tags, its security and a documented 4xx answer in the error shape', () => {
    const ids = new Set<string>();
    const schemes = Object.keys(doc.components.securitySchemes);
    assert.deepEqual(schemes.sort(), ['bearer', 'clientSecretBasic', 'v1Signature']);
    assert.match(doc.components.securitySchemes.v1Signature.description, /signature/);
    for (const [path, operations] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        const where = `${method} ${path}`;
        assert.ok(
          operation.operationId && !ids.has(operation.operationId),
          `${where}: operationId ${operation.operationId}`,
        );
        ids.add(operation.operationId);
        assert.ok(operation.tags?.length > 0, where);
        assert.ok(Array.isArray(operation.security), `${where} declares no security`);
        for (const requirement of operation.security)
          for (const scheme of Object.keys(requirement)) assert.ok(schemes.includes(scheme), `${where}: ${scheme}`);
        const errors = Object.keys(operation.responses).filter((status) => status.startsWith('4'));
        assert.ok(errors.length > 0, `${where} documents no 4xx answer`);
        // The OAuth endpoints answer RFC 6749 error bodies.
        if (
          [
            '/v4/login',
            '/v4/device',
            '/v4/revoke',
            '/v4/introspect',
            '/v4/jwks',
            '/v4/userinfo',
            '/.well-known/oauth-authorization-server',
          ].includes(path)
        )
          continue;
        // RP-initiated logout is a browser page: its errors are pages.
        if (path === '/v4/logout') {
          for (const status of errors)
            assert.ok(operation.responses[status].content['text/html'], `${where} ${status}`);
          continue;
        }
        for (const status of errors) {
          const schema = operation.responses[status].content['application/json'].schema;
          assert.deepEqual(schema.required, ['code', 'message'], `${where} ${status}`);
        }
      }
    }
    assert.deepEqual(doc.paths['/v1/mod.php'].get.security, [{ v1Signature: [] }]);
    assert.deepEqual(doc.paths['/v1/engram.php'].get.security, []);
  });

  test('the instance schemas name the DESIGN fields of each class', () => {
    const project = responseSchema('/v4/projects/{id}', 'get', '200');
    assert.deepEqual(Object.keys(project.properties).sort(), [
      'createdAt',
      'description',
      'gameId',
      'projectId',
      'revision',
      'title',
      'updatedAt',
      'userId',
    ]);
    assert.deepEqual([...project.required].sort(), Object.keys(project.properties).sort());
    assert.equal(project.properties.createdAt.format, 'date-time');
    assert.equal(project.properties.projectId.format, 'uuid');
    const session = responseSchema('/v4/sessions/{id}', 'get', '200');
    assert.deepEqual(Object.keys(session.properties).sort(), [
      'accessTokenExpiration',
      'applicationId',
      'createdAt',
      'refreshTokenExpiration',
      'scopes',
      'sessionId',
    ]);
    assert.equal(session.properties.scopes.type, 'array');
    assert.deepEqual(responseSchema('/v4/session', 'get', '200'), session);
    const user = responseSchema('/v4/users/{id}', 'get', '200');
    assert.deepEqual(Object.keys(user.properties).sort(), [
      'createdAt',
      'privateKey',
      'publicKey',
      'userId',
      'username',
    ]);
    assert.ok(!user.required.includes('privateKey'), 'privateKey is shown only with its scope');
    assert.deepEqual(responseSchema('/v4/user', 'get', '200'), user);
  });

  test('the list operations document the envelope, the paging limits, the sortable columns and the filters', () => {
    const expected: Record<string, { sortable: string[]; filters: string[]; item: string }> = {
      '/v4/projects': {
        sortable: ['title', 'createdAt', 'updatedAt'],
        filters: ['title', 'gameId'],
        item: 'projectId',
      },
      '/v4/sessions': {
        sortable: ['createdAt', 'accessTokenExpiration', 'refreshTokenExpiration'],
        filters: ['applicationId'],
        item: 'sessionId',
      },
      '/v4/users': { sortable: ['username', 'createdAt'], filters: ['username'], item: 'userId' },
    };
    for (const [path, { sortable, filters, item }] of Object.entries(expected)) {
      const parameters = Object.fromEntries(doc.paths[path].get.parameters.map((p: any) => [p.name, p]));
      assert.deepEqual(
        Object.keys(parameters).sort(),
        ['page', 'pageSize', 'sortDirection', 'sortedColumn', ...filters].sort(),
        path,
      );
      for (const parameter of Object.values<any>(parameters)) assert.equal(parameter.in, 'query');
      assert.deepEqual({ ...parameters.pageSize.schema }, { type: 'integer', minimum: 1, maximum: 250, default: 250 });
      assert.equal(parameters.page.schema.type, 'integer');
      assert.equal(parameters.page.schema.minimum, 1);
      assert.deepEqual(parameters.sortDirection.schema.enum, ['ascending', 'descending']);
      assert.deepEqual(parameters.sortedColumn.schema.enum, sortable, path);
      const envelope = responseSchema(path, 'get', '200');
      assert.deepEqual([...envelope.required].sort(), ['page', 'pageSize', 'pages', 'results', 'totalResults']);
      assert.ok(envelope.properties.results.items.properties[item], `${path}: results hold ${item}`);
    }
  });

  test('the write operations document their bodies: one object or an array for POST, closed objects, the id array for bulk DELETE', () => {
    const post = doc.paths['/v4/projects'].post.requestBody.content['application/json'].schema;
    const [one, many] = post.anyOf;
    assert.equal(one.type, 'object');
    assert.equal(one.additionalProperties, false);
    assert.equal(many.type, 'array');
    assert.equal(many.maxItems, 1000);
    assert.deepEqual(many.items, one);
    for (const name of ['userId', 'revision', 'createdAt', 'updatedAt'])
      assert.equal(one.properties[name].readOnly, true, name);
    const put = doc.paths['/v4/projects/{id}'].put.requestBody.content['application/json'].schema;
    assert.deepEqual(put.required, ['title']);
    assert.equal(put.additionalProperties, false);
    const patch = doc.paths['/v4/projects/{id}'].patch.requestBody.content['application/json'].schema;
    assert.equal(patch.required, undefined);
    const bulkDelete = doc.paths['/v4/projects'].delete.requestBody.content['application/json'].schema;
    assert.equal(bulkDelete.type, 'array');
    assert.deepEqual(bulkDelete.items.required, ['projectId']);
    const result = responseSchema('/v4/projects', 'post', '200');
    assert.deepEqual([...result.required].sort(), ['created', 'updated']);
    assert.deepEqual(Object.keys(doc.paths['/v4/projects/{id}'].put.responses).sort(), [
      '200',
      '201',
      '400',
      '401',
      '403',
      '404',
      '429',
    ]);
    assert.deepEqual(Object.keys(doc.paths['/v4/projects/{id}'].delete.responses).sort(), [
      '204',
      '401',
      '403',
      '404',
      '429',
    ]);
  });
});

describe('the documented schemas describe real answers', () => {
  let client: SignedIn;
  before(async () => {
    client = await signIn(server, 'common users:read users.private_key:read');
  });

  test('projects, sessions and users as served validate against their documented response schemas', async () => {
    const ajv = newAjv();
    const check = (path: string, method: string, status: string, body: unknown) => {
      const validate = ajv.compile(responseSchema(path, method, status));
      assert.ok(validate(body), `${method} ${path} ${status}: ${ajv.errorsText(validate.errors)}`);
    };
    const posted = await client.call('POST', '/v4/projects', {
      body: [{ title: 'one' }, { title: 'two', description: 'd', gameId: 'ArkSA' }],
    });
    check('/v4/projects', 'post', '200', posted.body);
    const id = posted.body.created[0].projectId;
    check('/v4/projects', 'get', '200', (await client.call('GET', '/v4/projects')).body);
    check('/v4/projects/{id}', 'get', '200', (await client.call('GET', `/v4/projects/${id}`)).body);
    check(
      '/v4/projects/{id}',
      'patch',
      '200',
      (await client.call('PATCH', `/v4/projects/${id}`, { body: { title: 'patched' } })).body,
    );
    check('/v4/sessions', 'get', '200', (await client.call('GET', '/v4/sessions')).body);
    check('/v4/session', 'get', '200', (await client.call('GET', '/v4/session')).body);
    const me = await client.call('GET', '/v4/user');
    assert.ok('privateKey' in me.body);
    check('/v4/user', 'get', '200', me.body);
    check('/v4/users', 'get', '200', (await client.call('GET', '/v4/users')).body);
    check(
      '/.well-known/oauth-authorization-server',
      'get',
      '200',
      (await server.request('GET', '/.well-known/oauth-authorization-server')).body,
    );
  });
});

describe('/v4/docs', () => {
  test('serves the viewer page, whose scripts and styles are all served by the service itself', async () => {
    const page = await server.request('GET', '/v4/docs');
    assert.equal(page.status, 200, page.text);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.text, /<title>Swagger UI<\/title>/);
    assert.match(page.text, /id="swagger-ui"/);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    assert.ok(
      assets.some((asset) => asset.endsWith('.js')) && assets.some((asset) => asset.endsWith('.css')),
      assets.join(' '),
    );
    for (const asset of assets) {
      assert.ok(asset.startsWith('/v4/docs/'), `${asset} is loaded from elsewhere`);
      const reply = await server.request('GET', asset);
      assert.equal(reply.status, 200, asset);
    }
  });

  test('the viewer reads the same document as /v4/openapi.json', async () => {
    const initializer = await server.request('GET', '/v4/docs/static/swagger-initializer.js');
    assert.equal(initializer.status, 200);
    assert.match(initializer.text, /\.\/json/);
    const viewerDoc = await server.request('GET', '/v4/docs/json');
    assert.equal(viewerDoc.status, 200, viewerDoc.text);
    assert.deepEqual(viewerDoc.body, doc);
  });
});
