import { availableParallelism } from 'node:os';
import envSchema from 'env-schema';
import { type Static, Type } from 'typebox';

const EnvSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  BASE_URL: Type.Optional(Type.String({ pattern: '^https?://[^/?#\\s]+(/[^?#\\s]*)?$' })),
  DATABASE_URL: Type.String({ pattern: '^(sqlite:.+|postgres(ql)?://.+)$', default: 'sqlite:./data/service.db' }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://.+' })),
  WORKSHOP_URL: Type.String({
    pattern: '^https?://.*\\{id\\}',
    default: 'https://steamcommunity.com/sharedfiles/filedetails/?id={id}',
  }),
  RATE_LIMIT_V1: Type.Integer({ minimum: 0, default: 300 }),
  RATE_LIMIT_V4: Type.Integer({ minimum: 0, default: 3000 }),
  TRUST_PROXY: Type.Optional(Type.String({ minLength: 1 })),
  WORKERS: Type.String({ pattern: '^(auto|[1-9][0-9]{0,2})$', default: '1' }),
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
  SIGN_UP: Type.Enum(['open', 'invite', 'closed'], { default: 'open' }),
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://[^\\s]+$' })),
  MAIL_FROM: Type.Optional(Type.String({ minLength: 1 })),
  SECRETS_KEY: Type.Optional(Type.String({ minLength: 1 })),
  BACKCHANNEL_LOGOUT_RETRY_DELAYS: Type.Optional(
    Type.String({ pattern: '^[0-9]{1,5}(\\.[0-9]{1,3})?(,[0-9]{1,5}(\\.[0-9]{1,3})?){0,9}$' }),
  ),
});

type Env = Static<typeof EnvSchema>;

export interface Config {
  port: number;
  host: string;
  /** Public base address without a trailing slash; every emitted URL derives from it. */
  baseUrl: string;
  /** Host (and port) of BASE_URL: the v1 signing host. */
  publicHost: string;
  database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };
  redisUrl: string | undefined;
  workshopUrl: string;
  rateLimitV1: number;
  rateLimitV4: number;
  logLevel: string;
  /** Fastify's trustProxy: whether X-Forwarded-For decides the client IP (rate limits). */
  trustProxy: boolean | number | string;
  /** Server processes sharing the port (node:cluster); 1 = this process serves. */
  workers: number;
  /** Bearer token that GET /metrics requires; undefined = no /metrics. */
  metricsToken: string | undefined;
  /**
   * SIGN_UP: who may create an account through the sign-up pages: anyone (open), only people an
   * operator invited (invite), or no one (closed).
   */
  signUp: 'open' | 'invite' | 'closed';
  /** SMTP_URL: outgoing mail server; undefined = every message is written to the log instead. */
  smtpUrl: string | undefined;
  /** MAIL_FROM: the sender of every message (an address, or `Name <address>`). */
  mailFrom: string;
  /** BACKCHANNEL_LOGOUT_RETRY_DELAYS: waits between tries of a back-channel logout, in ms; undefined: the default. */
  backchannelRetryDelaysMs: number[] | undefined;
  /**
   * SECRETS_KEY decoded (32 bytes): encrypts secrets kept at rest. Undefined: generated beside a
   * SQLite database (see src/secrets/secrets-key.ts). Not enumerable, so no log of the
   * configuration can carry it.
   */
  readonly secretsKey: Buffer | undefined;
}

export class ConfigError extends Error {}

/** Reads and validates the environment; throws ConfigError naming the variable on a bad value. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const data = Object.fromEntries(
    Object.keys(EnvSchema.properties).map((key) => [key, env[key] === '' ? undefined : env[key]]),
  );
  let parsed: Env;
  try {
    parsed = envSchema<Env>({ schema: EnvSchema, data });
  } catch (error) {
    throw new ConfigError(describeEnvError(error));
  }
  const baseUrl = (parsed.BASE_URL ?? `http://localhost:${parsed.PORT}`).replace(/\/+$/, '');
  const url = new URL(baseUrl);
  const config: Omit<Config, 'secretsKey'> = {
    port: parsed.PORT,
    host: parsed.HOST,
    baseUrl,
    publicHost: url.host,
    database: parsed.DATABASE_URL.startsWith('sqlite:')
      ? { kind: 'sqlite', path: parsed.DATABASE_URL.slice('sqlite:'.length) }
      : { kind: 'postgres', url: parsed.DATABASE_URL },
    redisUrl: parsed.REDIS_URL,
    workshopUrl: parsed.WORKSHOP_URL,
    rateLimitV1: parsed.RATE_LIMIT_V1,
    rateLimitV4: parsed.RATE_LIMIT_V4,
    logLevel: parsed.LOG_LEVEL,
    trustProxy: parseTrustProxy(parsed.TRUST_PROXY),
    workers: parsed.WORKERS === 'auto' ? availableParallelism() : Number(parsed.WORKERS),
    metricsToken: parsed.METRICS_TOKEN,
    signUp: parsed.SIGN_UP as Config['signUp'],
    smtpUrl: parsed.SMTP_URL,
    mailFrom: parseMailFrom(parsed.MAIL_FROM, url.hostname),
    backchannelRetryDelaysMs: parsed.BACKCHANNEL_LOGOUT_RETRY_DELAYS?.split(',').map((s) =>
      Math.round(Number(s) * 1000),
    ),
  };
  const secretsKey = parsed.SECRETS_KEY === undefined ? undefined : parseSecretsKey(parsed.SECRETS_KEY, 'SECRETS_KEY');
  return Object.defineProperty(config, 'secretsKey', { value: secretsKey, enumerable: false }) as Config;
}

/** 32 bytes in standard or URL-safe base64 (padding optional), e.g. from `openssl rand -base64 32`. */
export function parseSecretsKey(text: string, source: string): Buffer {
  const trimmed = text.trim();
  const key = /^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)
    ? Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
    : undefined;
  if (key?.length !== 32)
    throw new ConfigError(`${source} must be 32 random bytes in base64 (e.g. the output of: openssl rand -base64 32)`);
  return key;
}

const ADDRESS = /^[^\s@<>()",;:\\[\]]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/;

/** MAIL_FROM: `address` or `Display Name <address>`; never a line break (it becomes a header). */
function parseMailFrom(value: string | undefined, host: string): string {
  if (value === undefined) return `no-reply@${host.replace(/^\[|\]$/g, '')}`;
  const named = /^([^<>"\\]*?)\s*<([^<>]+)>$/.exec(value);
  const address = named ? named[2]! : value;
  if (/[\r\n\u0000]/.test(value) || !ADDRESS.test(address)) {
    throw new ConfigError(
      'MAIL_FROM has an invalid value (expected an address such as no-reply@example.com, or Name <no-reply@example.com>)',
    );
  }
  return value;
}

/** "true"/"false", a hop count, or a comma-separated list of proxy addresses or CIDRs. */
function parseTrustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value;
}

function describeEnvError(error: unknown): string {
  const errors = (
    error as { errors?: Array<{ instancePath?: string; params?: Record<string, unknown>; message?: string }> }
  ).errors;
  const first = errors?.[0];
  if (!first) return String((error as Error).message ?? error);
  const variable = first.instancePath?.replace(/^\//, '') || String(first.params?.missingProperty ?? 'environment');
  if (first.params?.allowedValues)
    return `${variable} must be one of ${(first.params.allowedValues as string[]).join(', ')}`;
  if (first.params?.pattern) return `${variable} has an invalid value (${describePattern(variable)})`;
  return `${variable} ${first.message ?? 'is invalid'}`;
}

function describePattern(variable: string): string {
  switch (variable) {
    case 'BASE_URL':
      return 'expected an http(s) URL such as https://api.example.com';
    case 'DATABASE_URL':
      return 'expected sqlite:PATH or postgres://…';
    case 'REDIS_URL':
      return 'expected redis://…';
    case 'WORKERS':
      return 'expected a number of processes from 1 to 999, or auto (one per core)';
    case 'SMTP_URL':
      return 'expected smtp://user:pass@host:587 or smtps://user:pass@host:465';
    case 'WORKSHOP_URL':
      return 'expected an http(s) URL containing {id}';
    default:
      return 'see the configuration table in README.md';
  }
}
