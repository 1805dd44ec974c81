import { readFile, writeFile } from 'node:fs/promises';
import { Command, CommanderError, Option } from 'commander';
import QRCode from 'qrcode';
import { ContentServiceClient } from '../client.ts';
import { ContentServiceError } from '../errors.ts';
import { FileTokenStore } from '../file-token-store.ts';
import { type SignatureHash, V1Client, V1Signer } from '../v1.ts';
import type { Project } from '../v4.ts';
import { tokensFile } from './config.ts';

const DEFAULT_SCOPE = 'common users:read';

interface Common {
  issuer?: string;
  clientId?: string;
  json?: boolean;
}

interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

/** A failure to report as one line and exit 1. */
class Failure extends Error {}

const commonOptions = (command: Command, needs: { clientId?: boolean } = { clientId: true }) => {
  command
    .addOption(new Option('--issuer <url>', 'the service address').env('CONTENT_SERVICE_ISSUER'))
    .option('--json', 'print JSON for scripts');
  if (needs.clientId)
    command.addOption(new Option('--client-id <id>', "the application's client id").env('CONTENT_SERVICE_CLIENT_ID'));
  return command;
};

function issuerOf(options: Common): string {
  if (!options.issuer) throw new Failure('No service address: give --issuer URL or set CONTENT_SERVICE_ISSUER.');
  return options.issuer;
}

async function connect(options: Common): Promise<ContentServiceClient> {
  const issuer = issuerOf(options);
  if (!options.clientId) throw new Failure('No application: give --client-id ID or set CONTENT_SERVICE_CLIENT_ID.');
  return ContentServiceClient.discover({
    issuer,
    clientId: options.clientId,
    tokenStore: new FileTokenStore(tokensFile()),
    scope: DEFAULT_SCOPE,
  });
}

async function signedInClient(options: Common): Promise<ContentServiceClient> {
  const client = await connect(options);
  if (!(await client.isSignedIn())) throw new Failure('Not signed in: run `content-service login` first.');
  return client;
}

const projectLine = (project: Project) =>
  `${project.projectId}  ${project.title}${project.gameId ? `  (${project.gameId})` : ''}`;

function program(io: Io): Command {
  const cli = new Command('content-service')
    .description('Sign in to content-service and use its API from the terminal.')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .showHelpAfterError()
    // The common options work before the command too (`content-service --issuer URL whoami`).
    .option('--issuer <url>', 'the service address (env: CONTENT_SERVICE_ISSUER)')
    .option('--client-id <id>', "the application's client id (env: CONTENT_SERVICE_CLIENT_ID)")
    .option('--json', 'print JSON for scripts')
    .hook('preAction', (root, command) => {
      for (const name of ['issuer', 'clientId', 'json']) {
        const given = root.getOptionValue(name);
        if (given !== undefined && command.getOptionValueSource(name) !== 'cli') command.setOptionValue(name, given);
      }
    });

  commonOptions(
    cli.command('login').description('sign in with a code shown here and approved in a browser (device flow)'),
  )
    .option('--scope <scopes>', `scopes to ask for (default "${DEFAULT_SCOPE}")`)
    .action(async (options: Common & { scope?: string }) => {
      const client = await connect(options);
      const showCode = async (code: {
        user_code: string;
        verification_uri: string;
        verification_uri_complete?: string;
      }) => {
        if (options.json) {
          io.out(
            `${JSON.stringify({ user_code: code.user_code, verification_uri: code.verification_uri, verification_uri_complete: code.verification_uri_complete })}\n`,
          );
          return;
        }
        io.out(`To sign in, open ${code.verification_uri} and enter the code below, or scan the QR code.\n`);
        io.out(`Code: ${code.user_code}\n\n`);
        io.out(
          await QRCode.toString(code.verification_uri_complete ?? code.verification_uri, {
            type: 'terminal',
            small: true,
          }),
        );
        io.out('\nWaiting for you to approve the sign-in…\n');
      };
      let result: Awaited<ReturnType<typeof client.signInWithDevice>>;
      try {
        result = await client.signInWithDevice({ scope: options.scope ?? DEFAULT_SCOPE, onCode: showCode });
      } catch (error) {
        // An app registered with fewer scopes than the default still lets you sign in.
        if (options.scope || !(error instanceof ContentServiceError) || error.error !== 'invalid_scope') throw error;
        result = await client.signInWithDevice({ scope: 'common', onCode: showCode });
      }
      let username: string | null | undefined;
      try {
        username = (await client.user.get()).username;
      } catch {
        username = undefined; // without users:read the name is not ours to read
      }
      if (options.json)
        io.out(`${JSON.stringify({ signedIn: true, scope: result.scope, username: username ?? null })}\n`);
      else io.out(username ? `Signed in as ${username}.\n` : 'Signed in.\n');
    });

  commonOptions(cli.command('logout').description('end the session at the service and forget its tokens')).action(
    async (options: Common) => {
      const client = await connect(options);
      const wasSignedIn = await client.isSignedIn();
      await client.signOut();
      if (options.json) io.out(`${JSON.stringify({ signedOut: wasSignedIn })}\n`);
      else io.out(wasSignedIn ? 'Signed out.\n' : 'Not signed in.\n');
    },
  );

  commonOptions(cli.command('whoami').description('show the signed-in user')).action(async (options: Common) => {
    const user = await (await signedInClient(options)).user.get();
    io.out(
      options.json
        ? `${JSON.stringify({ userId: user.userId, username: user.username })}\n`
        : `${user.username} (${user.userId})\n`,
    );
  });

  const projects = cli.command('projects').description('your projects');
  commonOptions(projects.command('list').description('list every project (all pages)'))
    .option('--title <text>', 'only titles containing this text')
    .option('--game-id <id>', 'only this game')
    .action(async (options: Common & { title?: string; gameId?: string }) => {
      const client = await signedInClient(options);
      const all: Project[] = [];
      for await (const project of client.projects.list({ title: options.title, gameId: options.gameId })) {
        if (options.json) all.push(project);
        else io.out(`${projectLine(project)}\n`);
      }
      if (options.json) io.out(`${JSON.stringify(all)}\n`);
    });
  commonOptions(projects.command('get').description('show one project').argument('<projectId>')).action(
    async (projectId: string, options: Common) => {
      const project = await (await signedInClient(options)).projects.get(projectId);
      io.out(
        options.json
          ? `${JSON.stringify(project)}\n`
          : `${projectLine(project)}\n${project.description ? `${project.description}\n` : ''}`,
      );
    },
  );
  commonOptions(projects.command('create').description('create a project'))
    .requiredOption('--title <title>')
    .option('--description <text>')
    .option('--game-id <id>')
    .action(async (options: Common & { title: string; description?: string; gameId?: string }) => {
      const client = await signedInClient(options);
      const project = await client.projects.create({
        title: options.title,
        ...(options.description !== undefined && { description: options.description }),
        ...(options.gameId !== undefined && { gameId: options.gameId }),
      });
      io.out(options.json ? `${JSON.stringify(project)}\n` : `Created ${projectLine(project)}\n`);
    });
  commonOptions(projects.command('delete').description('delete a project').argument('<projectId>')).action(
    async (projectId: string, options: Common) => {
      await (await signedInClient(options)).projects.delete(projectId);
      io.out(options.json ? `${JSON.stringify({ deleted: [projectId] })}\n` : `Deleted ${projectId}\n`);
    },
  );

  commonOptions(cli.command('sign').description('print the Authorization header of a signed v1 request'), {
    clientId: false,
  })
    .requiredOption('--user <uuid>', 'your v1 user id')
    .requiredOption('--key <file>', 'your private key (PEM)')
    .option('--method <method>', 'HTTP method', 'GET')
    .requiredOption('--path <path>', 'path and query exactly as sent, e.g. /v1/mod.php')
    .option('--body <text>', 'the raw body', '')
    .addOption(new Option('--hash <hash>', 'digest for RSA keys').choices(['sha256', 'sha1']).default('sha256'))
    .addOption(new Option('--base-url <url>', 'the service BASE_URL whose host is signed for').env('BASE_URL'))
    .action(
      async (
        options: Common & {
          user: string;
          key: string;
          method: string;
          path: string;
          body: string;
          hash: SignatureHash;
          baseUrl?: string;
        },
      ) => {
        const base = options.baseUrl ?? options.issuer ?? 'http://localhost:8080';
        const signer = new V1Signer(options.user, await readFile(options.key, 'utf8'), options.hash);
        const header = await signer.authorization(options.method, new URL(base).host, options.path, options.body);
        io.out(options.json ? `${JSON.stringify({ authorization: header })}\n` : `Authorization: ${header}\n`);
      },
    );

  const engrams = cli.command('engrams').description('v1 engrams');
  commonOptions(engrams.command('pull').description("download a mod's engrams as JSON"), { clientId: false })
    .requiredOption('--mod <id>', 'the workshop mod id')
    .option('--out <file>', 'write them to this file instead of printing them')
    .action(async (options: Common & { mod: string; out?: string }) => {
      const list = await new V1Client({ baseUrl: issuerOf(options) }).engrams.list({ modIds: [options.mod] });
      if (!options.out) return io.out(`${JSON.stringify(list, null, options.json ? undefined : 2)}\n`);
      await writeFile(options.out, `${JSON.stringify(list, null, 2)}\n`);
      io.out(
        options.json
          ? `${JSON.stringify({ file: options.out, count: list.length })}\n`
          : `Wrote ${list.length} engrams of mod ${options.mod} to ${options.out}\n`,
      );
    });

  return cli;
}

/** Runs the CLI; answers the exit code. */
export async function main(
  argv: string[],
  io: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) },
): Promise<number> {
  try {
    await program(io).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof Failure || error instanceof ContentServiceError) {
      io.err(`content-service: ${describe(error)}\n`);
      return 1;
    }
    io.err(`content-service: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

function describe(error: Error): string {
  if (!(error instanceof ContentServiceError)) return error.message;
  if (error.code === 'access_denied') return 'The sign-in was denied.';
  if (error.code === 'expired_token')
    return 'The code expired before the sign-in was approved; run `content-service login` again.';
  if (error.code === 'sessionEnded')
    return 'The session has ended (signed out or revoked); run `content-service login` again.';
  if (error.status === 403) return `Not allowed: ${error.message}`;
  return error.message;
}
