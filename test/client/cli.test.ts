/**
 * The content-service CLI (the workspace's bin, run as `npx content-service` from the repository
 * root) against the real server: `login` in a real terminal (tmux) with the code and the QR code
 * visible, approved on the device page; whoami, projects, logout, sign and engrams pull.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import QRCode from 'qrcode';
import { ContentServiceClient, V1Client } from '../../client/src/index.ts';
import { type Account, LOOPBACK_REDIRECT, signInQuickly } from '../helpers/client.ts';
import { FormClient, newAccount, newApp } from '../helpers/oauth.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { publishMod } from '../helpers/v1.ts';
import { FakeWorkshop } from '../helpers/workshop.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const TMUX_SOCKET = `content-service-cli-test-${process.pid}`;

let server: TestServer;
let workshop: FakeWorkshop;
let clientId: string;
let account: Account;
let configHome: string;

before(async () => {
  workshop = await new FakeWorkshop().start();
  server = await startServer({ baseUrlIsOwnAddress: true, env: { WORKSHOP_URL: workshop.template } });
  clientId = (await newApp(server, { scopes: ['common', 'users:read'], redirectUris: [LOOPBACK_REDIRECT] })).clientId;
  account = await newAccount(server);
  configHome = mkdtempSync(join(tmpdir(), 'cli-config-'));
});
after(async () => {
  try {
    execFileSync('tmux', ['-L', TMUX_SOCKET, 'kill-server'], { stdio: 'ignore' });
  } catch {
    // no tmux server left
  }
  await server.close();
  await workshop.stop();
});

const cliEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  XDG_CONFIG_HOME: configHome,
  CONTENT_SERVICE_ISSUER: server.url,
  CONTENT_SERVICE_CLIENT_ID: clientId,
});

/** Runs `npx content-service …` from the repository root; answers its exit code and output. */
function cli(
  args: string[],
  env: NodeJS.ProcessEnv = cliEnv(),
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('npx', ['content-service', ...args], { cwd: ROOT, env, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const tmux = (...args: string[]) => execFileSync('tmux', ['-L', TMUX_SOCKET, ...args], { encoding: 'utf8' });

/** Starts `command` in a new 120×60 tmux window; its exit code is printed after it as "[exit N]". */
function startInTerminal(name: string, command: string) {
  const env = cliEnv();
  const exports = ['XDG_CONFIG_HOME', 'CONTENT_SERVICE_ISSUER', 'CONTENT_SERVICE_CLIENT_ID', 'PATH']
    .map((key) => `${key}='${env[key]}'`)
    .join(' ');
  tmux(
    'new-session',
    '-d',
    '-s',
    name,
    '-x',
    '120',
    '-y',
    '60',
    '-c',
    ROOT,
    `env ${exports} ${command}; echo "[exit $?]"; sleep 600`,
  );
}

async function waitForScreen(name: string, pattern: RegExp, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let screen = '';
  while (Date.now() < deadline) {
    screen = tmux('capture-pane', '-p', '-t', name);
    if (pattern.test(screen)) return screen;
    await sleep(200);
  }
  assert.fail(`the terminal never showed ${pattern}; it shows:\n${screen}`);
}

/** What a user does on their phone: opens the device page, enters the code, signs in and decides. */
async function decideOnDevicePage(userCode: string, decision: 'approve' | 'deny') {
  const browser = new FormClient(server);
  const entered = await browser.submit(`/device?user_code=${userCode}`, { user_code: userCode });
  assert.equal(entered.status, 303, entered.text);
  const loginPage = new URL(entered.location!, server.url).pathname;
  const signedIn = await browser.submitOn((await browser.fetch(loginPage)).text, {
    username: account.username,
    password: account.password,
  });
  assert.equal(signedIn.status, 303, signedIn.text);
  const decided = await browser.submitOn((await browser.fetch(loginPage)).text, { decision }, /consent$/);
  assert.equal(decided.status, 200, decided.text);
}

describe('content-service CLI', () => {
  test('login in a terminal shows the verification URI, the code and its QR code, and signs in once approved', async () => {
    startInTerminal('login', 'npx content-service login');
    const screen = await waitForScreen('login', /Code: [2-9A-Z]{4}-[2-9A-Z]{4}\n[\s\S]*Waiting/);
    const userCode = /Code: ([2-9A-Z]{4}-[2-9A-Z]{4})/.exec(screen)![1]!;
    assert.match(screen, new RegExp(`open ${server.url}/device and enter the code`));
    // The QR code on screen is exactly that of verification_uri_complete.
    const expected = (
      await QRCode.toString(`${server.url}/device?user_code=${userCode}`, { type: 'terminal', small: true })
    )
      .replace(/\x1b\[[0-9;]*m/g, '')
      .split('\n')
      .map((line) => line.trimEnd())
      .filter((line) => line.length > 0);
    const lines = screen.split('\n').map((line) => line.trimEnd());
    const start = lines.indexOf(expected[0]!);
    assert.ok(start >= 0 && expected.length > 10, `no QR code on screen:\n${screen}`);
    assert.deepEqual(lines.slice(start, start + expected.length), expected);

    await decideOnDevicePage(userCode, 'approve');
    const done = await waitForScreen('login', /\[exit \d+\]/);
    assert.match(done, new RegExp(`Signed in as ${account.username}\\.\\n\\[exit 0\\]`));
    const tokens = join(configHome, 'content-service', 'tokens.json');
    assert.equal(statSync(tokens).mode & 0o777, 0o600);
  });

  test('whoami, projects create|list|get|delete with --json', async () => {
    const whoami = await cli(['whoami', '--json']);
    assert.equal(whoami.code, 0, whoami.stderr);
    assert.deepEqual(JSON.parse(whoami.stdout), { userId: account.userId, username: account.username });

    const created = await cli(['projects', 'create', '--title', 'From the CLI', '--json']);
    assert.equal(created.code, 0, created.stderr);
    const project = JSON.parse(created.stdout);
    assert.equal(project.title, 'From the CLI');
    assert.equal(project.userId, account.userId);

    const listed = await cli(['projects', 'list', '--json']);
    assert.deepEqual(JSON.parse(listed.stdout), [project]);
    const text = await cli(['projects', 'list']);
    assert.match(text.stdout, new RegExp(`^${project.projectId}  From the CLI`, 'm'));
    const got = await cli(['projects', 'get', project.projectId, '--json']);
    assert.deepEqual(JSON.parse(got.stdout), project);
    const deleted = await cli(['projects', 'delete', project.projectId, '--json']);
    assert.equal(deleted.code, 0, deleted.stderr);
    const missing = await cli(['projects', 'get', project.projectId]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /content-service: No project /);
  });

  test('logout revokes the session and forgets it; whoami then fails with a clear message', async () => {
    const logout = await cli(['logout']);
    assert.equal(logout.code, 0, logout.stderr);
    assert.match(logout.stdout, /Signed out/);
    const whoami = await cli(['whoami', '--json']);
    assert.equal(whoami.code, 1);
    assert.equal(whoami.stdout, '');
    assert.match(whoami.stderr, /Not signed in: run `content-service login` first/);
  });

  test('a denied login exits 1 with a clear message', async () => {
    startInTerminal('denied', 'npx content-service login');
    const screen = await waitForScreen('denied', /Code: [2-9A-Z]{4}-[2-9A-Z]{4}/);
    await decideOnDevicePage(/Code: ([2-9A-Z]{4}-[2-9A-Z]{4})/.exec(screen)![1]!, 'deny');
    const done = await waitForScreen('denied', /\[exit \d+\]/);
    assert.match(done, /The sign-in was denied\.\n\[exit 1\]/);
  });

  test('without an issuer or client id the CLI says what is missing', async () => {
    const { CONTENT_SERVICE_ISSUER: _issuer, CONTENT_SERVICE_CLIENT_ID: _client, ...bare } = cliEnv();
    const result = await cli(['whoami'], bare);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /--issuer URL or set CONTENT_SERVICE_ISSUER/);
  });

  test("sign prints an Authorization header the service accepts (also as npm run -s sign), and engrams pull prints a mod's engrams", async () => {
    const userId = randomUUID();
    const pair = generateKeyPairSync('ed25519');
    const keyFile = join(configHome, 'me.pem');
    writeFileSync(keyFile, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const v1 = new V1Client({
      baseUrl: server.url,
      userId,
      privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    });
    await v1.users.create({
      user_id: userId,
      public_key: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    });
    const modId = publishMod(workshop);
    const registered = await v1.mods.register(modId);
    workshop.items.get(modId)!.description = registered.confirmation_code;
    await v1.mods.confirm(modId);
    await v1.engrams.save({
      path: `/Game/Mods/${modId}/Axe.Axe`,
      label: 'Axe',
      mod_id: modId,
      availability: 1,
      can_blueprint: true,
    });

    const signed = await cli([
      'sign',
      '--user',
      userId,
      '--key',
      keyFile,
      '--method',
      'GET',
      '--path',
      '/v1/mod.php',
      '--base-url',
      server.url,
    ]);
    assert.equal(signed.code, 0, signed.stderr);
    const header = /^Authorization: (Basic \S+)\n$/.exec(signed.stdout)?.[1];
    assert.ok(header, signed.stdout);
    const mods = await fetch(`${server.url}/v1/mod.php`, { headers: { authorization: header } });
    assert.equal(mods.status, 200);
    assert.equal(((await mods.json()) as Array<{ mod_id: string }>)[0]!.mod_id, modId);

    const body = JSON.stringify({ mod_id: modId });
    const viaNpm = execFileSync(
      'npm',
      [
        'run',
        '-s',
        'sign',
        '--',
        '--user',
        userId,
        '--key',
        keyFile,
        '--method',
        'DELETE',
        '--path',
        `/v1/engram.php`,
        '--body',
        body,
        '--base-url',
        server.url,
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    assert.match(viaNpm, /^Authorization: Basic \S+\n$/);

    const pulled = await cli(['engrams', 'pull', '--mod', modId]);
    assert.equal(pulled.code, 0, pulled.stderr);
    const engrams = JSON.parse(pulled.stdout);
    assert.deepEqual(
      engrams.map((engram: { label: string }) => engram.label),
      ['Axe'],
    );
  });

  test('examples/list-projects.ts signs in with the device flow and lists the projects', async () => {
    const client = await ContentServiceClient.discover({ issuer: server.url, clientId });
    await signInQuickly(server, client, account);
    const project = await client.projects.create({ title: 'Listed by the example' });
    await client.signOut();

    const child = spawn('npx', ['tsx', 'examples/list-projects.ts'], { cwd: ROOT, env: cliEnv() });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const deadline = Date.now() + 60_000;
    while (!/approve ([2-9A-Z]{4}-[2-9A-Z]{4})/.test(output) && Date.now() < deadline) await sleep(100);
    const userCode = /approve ([2-9A-Z]{4}-[2-9A-Z]{4})/.exec(output)?.[1];
    assert.ok(userCode, output);
    assert.match(output, new RegExp(`Open ${server.url}/device\\?user_code=${userCode}`));
    await decideOnDevicePage(userCode, 'approve');
    assert.equal(await exited, 0, output);
    assert.match(output, new RegExp(`^${project.projectId} Listed by the example$`, 'm'));
  });
});
