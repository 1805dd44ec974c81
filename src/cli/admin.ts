import { chmodSync, constants, copyFileSync, existsSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import {
  type AccountState,
  type AccountSummary,
  findAccountSummary,
  InvalidListQuery,
  listAccounts,
} from '../accounts/account-directory.ts';
import {
  AccountError,
  createAccount,
  findAccount,
  findAccountByLogin,
  setPassword,
  setTotpSecret,
} from '../accounts/accounts.ts';
import {
  eraseAccount,
  type LifecycleContext,
  type LifecycleOutcome,
  lockAccount,
  makeOperator,
  revokeOperator,
  unlockAccount,
} from '../accounts/lifecycle.ts';
import { listSecurityEvents, recordSecurityEvent } from '../accounts/security-events.ts';
import { isBase32Secret, newTotpSecret, totpUri } from '../accounts/totp.ts';
import { type Config, ConfigError, loadConfig } from '../config.ts';
import { BackupError, type Database, openDatabase } from '../db/connection.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { isUuid, normalizeUuid } from '../http/uuid.ts';
import { lifecyclePorts } from '../lifecycle-ports.ts';
import { createApplication, deleteApplication, InvalidApplicationError, listApplications } from '../oauth/clients.ts';
import { OAuthError } from '../oauth/errors.ts';
import { publishedKeys, readKeyRows, rotateSigningKeys } from '../oauth/signing-keys.ts';
import { restoreApplication, type SuspensionOutcome, suspendApplication } from '../oauth/suspension.ts';
import { Secrets } from '../secrets/sealed.ts';
import { loadSecretsKey, secretsKeyFile } from '../secrets/secrets-key.ts';

/** Runs `action` against the configured database, migrated, and closes it afterwards. */
async function withDatabase<T>(action: (database: Database) => Promise<T>): Promise<T> {
  const database = openDatabase(loadConfig().database);
  try {
    await migrateToLatest(database.db);
    return await action(database);
  } finally {
    await database.close();
  }
}

const print = (value: unknown) =>
  process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value)}\n`);
const collect = (value: string, previous: string[] = []) => [...previous, value];

async function resolveUser(database: Database, who: string) {
  const account = isUuid(who)
    ? await findAccount(database.db, normalizeUuid(who))
    : await findAccountByLogin(database.db, who);
  if (!account) throw new AccountError(`No user ${who}`);
  return account;
}

/** The lifecycle's context for the CLI: via cli, no operator account (whoever runs the shell). */
const cliLifecycle = (database: Database): LifecycleContext => ({
  db: database.db,
  ...lifecyclePorts,
  via: 'cli',
  actorId: null,
});

/** An account as `user list` and `user show` print it. */
const accountJson = (account: AccountSummary) => ({
  user_id: account.userId,
  username: account.username,
  email: account.email,
  created: new Date(account.createdAt).toISOString(),
  locked: account.locked,
  operator: account.operator,
});

async function resolveSummary(database: Database, who: string): Promise<AccountSummary> {
  const account = await findAccountSummary(database.db, who);
  if (!account) throw new AccountError(`No user ${who}`);
  return account;
}

/** Runs a lifecycle action on the account `who` names; what it printed, or an AccountError. */
async function lifecycleAction(
  who: string,
  action: (ctx: LifecycleContext, userId: string) => Promise<LifecycleOutcome>,
  said: { done: string; unchanged: string },
): Promise<void> {
  const message = await withDatabase(async (database) => {
    const account = await resolveSummary(database, who);
    const outcome = await action(cliLifecycle(database), account.userId);
    const name = account.username ?? account.userId;
    if (outcome.kind === 'unknown') throw new AccountError(`No user ${who}`);
    if (outcome.kind === 'last operator')
      throw new AccountError(`${name} is the last operator: make another operator first`);
    return `${outcome.kind === 'done' ? said.done : said.unchanged} ${name}`;
  });
  print(message);
}

const program = new Command('admin')
  .description('Administer the content service: applications, users, security events and backups.')
  .showHelpAfterError();

const app = program.command('app').description('OAuth applications (clients)');
app
  .command('create')
  .description('Register an application; a confidential one gets a secret, shown only now')
  .requiredOption('--name <name>', 'name shown on the consent page')
  .requiredOption('--redirect-uri <uri>', 'an exact redirect URI (repeat for several)', collect)
  .option('--scopes <scopes>', 'space-separated scopes it may ask for', 'common')
  .option('--confidential', 'a confidential client (has a secret)', false)
  .option(
    '--post-logout-redirect-uri <uri>',
    'OpenID Connect: an exact URI logout may return to (repeat for several)',
    collect,
  )
  .option('--backchannel-logout-uri <uri>', 'OpenID Connect: where logout tokens are posted (https, or loopback http)')
  .option('--id-token-alg <alg>', 'OpenID Connect: RS256 (default), ES256 or EdDSA')
  .option('--json', 'print {"client_id","client_secret"} only', false)
  .action(
    async (options: {
      name: string;
      redirectUri: string[];
      scopes: string;
      confidential: boolean;
      postLogoutRedirectUri?: string[];
      backchannelLogoutUri?: string;
      idTokenAlg?: string;
      json: boolean;
    }) => {
      const created = await withDatabase(async (database) => {
        const created = await createApplication(database.db, {
          name: options.name,
          redirectUris: options.redirectUri,
          scopes: options.scopes.split(/\s+/).filter(Boolean),
          confidential: options.confidential,
          postLogoutRedirectUris: options.postLogoutRedirectUri ?? [],
          backchannelLogoutUri: options.backchannelLogoutUri ?? null,
          idTokenAlg: options.idTokenAlg ?? null,
        });
        await recordSecurityEvent(database.db, undefined, {
          kind: 'application_created',
          clientId: created.clientId,
          details: { name: options.name.trim(), confidential: options.confidential, via: 'admin' },
        });
        return created;
      });
      if (options.json) print({ client_id: created.clientId, client_secret: created.clientSecret });
      else {
        print(`client_id: ${created.clientId}`);
        if (created.clientSecret) print(`client_secret: ${created.clientSecret}  (shown once; store it now)`);
      }
    },
  );
app
  .command('list')
  .description('List registered applications')
  .option('--json', 'print a JSON array', false)
  .action(async (options: { json: boolean }) => {
    const apps = await withDatabase((database) => listApplications(database.db));
    const rows = apps.map((a) => ({
      client_id: a.clientId,
      name: a.name,
      redirect_uris: a.redirectUris,
      scopes: a.scopes,
      confidential: a.confidential,
    }));
    if (options.json) print(rows);
    else
      for (const row of rows)
        print(
          `${row.client_id}  ${row.name}  ${row.confidential ? 'confidential' : 'public'}  [${row.scopes.join(' ')}]  ${row.redirect_uris.join(' ')}`,
        );
  });
app
  .command('delete')
  .description('Delete an application and every session and code issued to it')
  .argument('<client_id>')
  .action(async (clientId: string) => {
    const deleted = await withDatabase(async (database) => {
      if (!(await deleteApplication(database.db, clientId))) return false;
      await recordSecurityEvent(database.db, undefined, {
        kind: 'application_deleted',
        clientId: normalizeUuid(clientId),
        details: { via: 'admin' },
      });
      return true;
    });
    if (!deleted) throw new AccountError(`No application ${clientId}`);
    print(`deleted ${clientId}`);
  });

const keys = program.command('keys').description('The keys ID tokens are signed with (OpenID Connect)');
keys
  .command('rotate')
  .description('Publish a new key for every algorithm; it signs after 1 hour (--now: at once, for a compromised key)')
  .option('--now', 'sign with the new keys at once', false)
  .option('--json', 'print the new keys as JSON', false)
  .action(async (options: { now: boolean; json: boolean }) => {
    const config = loadConfig();
    const secrets = new Secrets(loadSecretsKey(config).key);
    const created = await withDatabase((database) => rotateSigningKeys(database.db, secrets, options.now));
    const rows = created.map((key) => ({
      kid: key.kid,
      alg: key.alg,
      signs_from: new Date(key.signs_from).toISOString(),
    }));
    if (options.json) print(rows);
    else for (const row of rows) print(`${row.kid}  ${row.alg}  signs from ${row.signs_from}`);
  });
keys
  .command('list')
  .description('List the published keys: next (not signing yet), current, retired (still published)')
  .option('--json', 'print [{"kid","alg","state","created"}]', false)
  .action(async (options: { json: boolean }) => {
    const now = Date.now();
    const published = await withDatabase(async (database) => publishedKeys(await readKeyRows(database.db), now));
    const rows = published.map((key) => ({
      kid: key.kid,
      alg: key.alg,
      state: key.state,
      created: new Date(key.createdAt).toISOString(),
    }));
    if (options.json) print(rows);
    else for (const row of rows) print(`${row.kid}  ${row.alg}  ${row.state}  created ${row.created}`);
  });
/** Suspends or restores an application; prints what happened. */
async function suspensionAction(
  clientId: string,
  action: typeof suspendApplication,
  said: Record<Exclude<SuspensionOutcome, 'unknown'>, string>,
): Promise<void> {
  const outcome = await withDatabase((database) => action({ db: database.db, via: 'cli', operatorId: null }, clientId));
  if (outcome === 'unknown') throw new AccountError(`No application ${clientId}`);
  print(`${said[outcome]} ${clientId}`);
}
app
  .command('suspend')
  .description('Suspend an application: its sessions end, it can neither sign anyone in nor get tokens until restored')
  .argument('<client_id>')
  .action((clientId: string) =>
    suspensionAction(clientId, suspendApplication, { done: 'suspended', unchanged: 'already suspended' }),
  );
app
  .command('restore')
  .description('Restore a suspended application (its ended sessions stay ended)')
  .argument('<client_id>')
  .action((clientId: string) =>
    suspensionAction(clientId, restoreApplication, { done: 'restored', unchanged: 'not suspended' }),
  );

const user = program.command('user').description('User accounts');
user
  .command('list')
  .description('List accounts, newest first')
  .option('--search <prefix>', 'only accounts whose username or address starts with this (any case)')
  .option('--state <state>', 'active or locked', parseState)
  .option('--limit <n>', 'at most this many accounts', parseLimit, 1000)
  .option('--json', 'print a JSON array', false)
  .action(async (options: { search?: string; state?: AccountState; limit: number; json: boolean }) => {
    const accounts = await withDatabase(async (database) => {
      const found: AccountSummary[] = [];
      let after: string | undefined;
      do {
        const page = await listAccounts(database.db, {
          search: options.search,
          state: options.state,
          after,
          limit: Math.min(1000, options.limit - found.length),
        });
        found.push(...page.accounts);
        after = page.next;
      } while (after !== undefined && found.length < options.limit);
      return found;
    });
    const rows = accounts.map(accountJson);
    if (options.json) print(rows);
    else
      for (const row of rows)
        print(
          `${row.user_id}  ${row.username ?? '-'}  ${row.email ?? '-'}  ${row.created}${row.locked ? '  locked' : ''}${row.operator ? '  operator' : ''}`,
        );
  });
user
  .command('show')
  .description('Show an account with its sessions and the applications it registered')
  .argument('<user>', 'user id, username or email')
  .option('--json', 'print a JSON object', false)
  .action(async (who: string, options: { json: boolean }) => {
    const shown = await withDatabase(async (database) => {
      const account = await resolveSummary(database, who);
      const [sessions, applications] = await Promise.all([
        lifecyclePorts.applicationSessions.listOfUser(database.db, account.userId),
        lifecyclePorts.applicationSessions.applicationsOfUser(database.db, account.userId),
      ]);
      return {
        ...accountJson(account),
        ...(account.locked ? { lock_reason: account.lockReason } : {}),
        two_step: account.twoStep,
        sessions: sessions.map((session) => ({
          session_id: session.sessionId,
          client_id: session.clientId,
          application: session.applicationName,
          scope: session.scope,
          created: new Date(session.createdAt).toISOString(),
          last_used: session.lastUsedAt === null ? null : new Date(session.lastUsedAt).toISOString(),
        })),
        applications: applications.map((application) => ({
          client_id: application.clientId,
          name: application.name,
          confidential: application.confidential,
          created: new Date(application.createdAt).toISOString(),
          suspended: application.suspended,
        })),
      };
    });
    if (options.json) print(shown);
    else print(JSON.stringify(shown, null, 2));
  });
user
  .command('lock')
  .description('Lock an account: every sign-in, session and token of it ends; it cannot sign in until unlocked')
  .argument('<user>', 'user id, username or email')
  .requiredOption('--reason <text>', 'why (for operators; never shown to the person)')
  .action((who: string, options: { reason: string }) => {
    const reason = options.reason.trim();
    if (reason === '' || reason.length > 500) throw new InvalidArgumentError('--reason must be 1 to 500 characters');
    return lifecycleAction(who, (ctx, userId) => lockAccount(ctx, userId, reason), {
      done: 'locked',
      unchanged: 'already locked:',
    });
  });
user
  .command('unlock')
  .description('Unlock an account (the sessions the lock ended stay ended)')
  .argument('<user>', 'user id, username or email')
  .action((who: string) => lifecycleAction(who, unlockAccount, { done: 'unlocked', unchanged: 'not locked:' }));
user
  .command('delete')
  .description('Erase an account and every row about it, with what it published (cannot be undone)')
  .argument('<user>', 'user id, username or email')
  .option('--yes', 'confirm: the account and its data are erased for good', false)
  .action((who: string, options: { yes: boolean }) => {
    if (!options.yes) throw new InvalidArgumentError('erasing an account cannot be undone: add --yes to confirm');
    return lifecycleAction(who, eraseAccount, { done: 'deleted', unchanged: 'deleted' });
  });
user
  .command('operator')
  .description('Make an account an operator (it may use the console at /admin), or with --off end that')
  .argument('<user>', 'user id, username or email')
  .option('--off', 'end the operator role', false)
  .action((who: string, options: { off: boolean }) =>
    options.off
      ? lifecycleAction(who, revokeOperator, { done: 'no longer an operator:', unchanged: 'not an operator:' })
      : lifecycleAction(who, makeOperator, { done: 'operator:', unchanged: 'already an operator:' }),
  );
user
  .command('create')
  .description('Create a user who signs in with a password')
  .requiredOption('--username <username>')
  .requiredOption('--email <email>')
  .requiredOption('--password <password>')
  .option('--totp-secret <base32>', 'turn on two-step verification with this secret')
  .option('--json', 'print {"user_id"} only', false)
  .action(
    async (options: { username: string; email: string; password: string; totpSecret?: string; json: boolean }) => {
      const userId = await withDatabase((database) =>
        createAccount(
          database.db,
          {
            username: options.username,
            email: options.email,
            password: options.password,
            ...(options.totpSecret ? { totpSecret: options.totpSecret } : {}),
          },
          new Secrets(loadSecretsKey(loadConfig()).key),
        ),
      );
      print(options.json ? { user_id: userId } : `user_id: ${userId}`);
    },
  );
user
  .command('set-password')
  .description("Set a user's password")
  .argument('<user>', 'user id, username or email')
  .requiredOption('--password <password>')
  .action(async (who: string, options: { password: string }) => {
    await withDatabase(async (database) => {
      const { userId } = await resolveUser(database, who);
      await setPassword(database.db, userId, options.password);
      await recordSecurityEvent(database.db, undefined, {
        kind: 'password_changed',
        userId,
        details: { via: 'admin' },
      });
    });
    print('password set');
  });
user
  .command('totp')
  .description('Turn on two-step verification (prints the otpauth:// URI to scan), or turn it off')
  .argument('<user>', 'user id, username or email')
  .option('--secret <base32>', 'use this secret instead of a new random one')
  .option('--disable', 'turn two-step verification off', false)
  .action(async (who: string, options: { secret?: string; disable: boolean }) => {
    if (options.secret !== undefined && !isBase32Secret(options.secret))
      throw new InvalidArgumentError('--secret must be base32, at least 16 characters');
    const uri = await withDatabase(async (database) => {
      const account = await resolveUser(database, who);
      if (options.disable) {
        await setTotpSecret(database.db, account.userId, null);
        await recordSecurityEvent(database.db, undefined, {
          kind: 'two_step_disabled',
          userId: account.userId,
          details: { via: 'admin' },
        });
        return undefined;
      }
      const secret = options.secret?.toUpperCase().replace(/=+$/, '') ?? newTotpSecret();
      await setTotpSecret(database.db, account.userId, secret);
      await recordSecurityEvent(database.db, undefined, {
        kind: 'two_step_enabled',
        userId: account.userId,
        details: { via: 'admin' },
      });
      return totpUri(secret, account.username);
    });
    print(uri ?? 'two-step verification turned off');
  });

program
  .command('events')
  .description('List security events (sign-ins, lockouts, token reuse, account and application changes), newest first')
  .option('--user <user>', 'only this user (user id, username or email)')
  .option('--since <iso>', 'only events at or after this ISO 8601 time', parseSince)
  .option('--limit <n>', 'at most this many events', parseLimit, 1000)
  .option('--json', 'print a JSON array', false)
  .action(async (options: { user?: string; since?: number; limit: number; json: boolean }) => {
    const events = await withDatabase(async (database) => {
      // A deleted user's events keep their id: an id is taken as is when no account has it.
      const userId =
        options.user === undefined
          ? undefined
          : isUuid(options.user)
            ? normalizeUuid(options.user)
            : (await resolveUser(database, options.user)).userId;
      return listSecurityEvents(database.db, {
        ...(userId ? { userId } : {}),
        ...(options.since !== undefined ? { since: options.since } : {}),
        limit: options.limit,
      });
    });
    const rows = events.map((event) => ({
      time: new Date(event.createdAt).toISOString(),
      kind: event.kind,
      user_id: event.userId,
      username: event.username,
      client_id: event.clientId,
      ip: event.ip,
      details: event.details,
    }));
    if (options.json) print(rows);
    else {
      for (const row of rows) {
        const who = row.user_id ? ` user=${row.username ?? row.user_id}` : '';
        print(
          `${row.time}  ${row.kind}${who}${row.client_id ? ` client=${row.client_id}` : ''}${row.ip ? ` ip=${row.ip}` : ''}  ${JSON.stringify(row.details)}`,
        );
      }
    }
  });

function parseSince(value: string): number {
  const time = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(time))
    throw new InvalidArgumentError('--since must be an ISO 8601 time, e.g. 2026-01-31 or 2026-01-31T12:00:00Z');
  return time;
}

function parseState(value: string): AccountState {
  if (value !== 'active' && value !== 'locked') throw new InvalidArgumentError('--state must be active or locked');
  return value;
}

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isSafeInteger(limit) || limit < 1) throw new InvalidArgumentError('--limit must be a positive integer');
  return limit;
}

program
  .command('backup')
  .description(
    'Copy the SQLite database to a new file, consistently, while the server runs, with the secrets key beside it (PostgreSQL: use pg_dump)',
  )
  .requiredOption('--to <file>', 'the backup file to create (must not exist)')
  .action(async (options: { to: string }) => {
    const config = loadConfig();
    const target = config.database;
    if (target.kind === 'sqlite' && !existsSync(target.path)) throw new BackupError(`No database at ${target.path}`);
    const database = openDatabase(target);
    try {
      await database.backup(options.to);
    } catch (error) {
      if (error instanceof BackupError && target.kind === 'postgres') {
        throw new BackupError(
          `${error.message}. Keep SECRETS_KEY with the dump: without it no private key in it can be read`,
        );
      }
      throw error;
    } finally {
      await database.close();
    }
    print(`backed up to ${options.to}`);
    print(backUpSecretsKey(config, options.to));
  });

/**
 * The secrets key goes with a backup (without it no private key in the backup can be read): the
 * key file beside a SQLite database is copied beside the backup; SECRETS_KEY is only named.
 */
function backUpSecretsKey(config: Config, backup: string): string {
  if (config.secretsKey)
    return 'secrets key: SECRETS_KEY (not copied): keep it with the backup, without it no private key in the backup can be read';
  if (config.database.kind !== 'sqlite') return '';
  const keyFile = secretsKeyFile(config.database.path);
  if (!existsSync(keyFile)) return `secrets key: none yet at ${keyFile} (the server creates it on its first start)`;
  const copy = `${backup}.secrets.key`;
  try {
    copyFileSync(keyFile, copy, constants.COPYFILE_EXCL);
    chmodSync(copy, 0o600);
  } catch (error) {
    throw new BackupError(
      `the database is backed up, but the secrets key could not be copied to ${copy} (${(error as Error).message}); copy ${keyFile} yourself`,
    );
  }
  return `secrets key copied to ${copy}: restore it as ${keyFile} beside the database, or set SECRETS_KEY to its content`;
}

program.parseAsync().catch((error: unknown) => {
  const known =
    error instanceof AccountError ||
    error instanceof InvalidListQuery ||
    error instanceof BackupError ||
    error instanceof InvalidApplicationError ||
    error instanceof ConfigError ||
    error instanceof OAuthError ||
    error instanceof InvalidArgumentError;
  process.stderr.write(`error: ${known ? (error as Error).message : ((error as Error).stack ?? String(error))}\n`);
  process.exit(1);
});
