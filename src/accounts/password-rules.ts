import { Worker } from 'node:worker_threads';
import type { StrengthAnswer, StrengthRequest } from './password-strength-worker.ts';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './passwords.ts';

/**
 * The rules for a password being set (sign-up, reset, change, admin user create and
 * set-password): 10 to 1024 characters, and not a commonly used password or one too easy to guess
 * (zxcvbn-ts with its common and English dictionaries, score below 3 refused). The person's
 * username and e-mail address count as known words. Existing passwords are never checked again.
 *
 * zxcvbn-ts runs in a worker thread, started on the first check (not at start: the dictionaries
 * are several MiB) and ended after a minute without checks, so a server where passwords are set now
 * and then does not keep the dictionaries' memory; should the worker fail, the check runs in this
 * thread instead.
 */
export const MIN_SCORE = 3;

/** The rules in words, shown beside a new password's input before anything is submitted. */
export const PASSWORD_RULE = `${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters, and not a commonly used password or one that is easy to guess: a few words that do not belong together work well.`;

/** Why the password may not be set (a sentence without its final period), or undefined when it may. */
export async function passwordRefusal(
  password: string,
  userInputs: readonly (string | null | undefined)[] = [],
): Promise<string | undefined> {
  if (typeof password !== 'string' || password.length < MIN_PASSWORD_LENGTH)
    return `The password must have at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `The password must have at most ${MAX_PASSWORD_LENGTH} characters`;
  // zxcvbn's cost grows with the length; past 100 characters a password that passes the first 100 is long enough.
  const inputs = userInputs.flatMap((input) =>
    input ? [input, ...input.split(/[@._+-]/).filter((part) => part.length >= 3)] : [],
  );
  const strength = await score(password.slice(0, 100), inputs);
  if (strength.score >= MIN_SCORE) return undefined;
  const warning = strength.warning?.trim().replace(/([^.!?])$/, '$1.');
  return warning
    ? `${warning} Choose a password that is harder to guess`
    : 'This password is too easy to guess. Add another word or two that are not common';
}

const IDLE_MS = 60_000;

let worker: Worker | undefined;
let idleTimer: NodeJS.Timeout | undefined;
let nextId = 0;
const pending = new Map<number, { resolve: (answer: StrengthAnswer) => void; reject: (error: Error) => void }>();
let inThread: ReturnType<typeof import('./password-strength-worker.ts').createScorer> | undefined;

async function score(password: string, userInputs: string[]): Promise<Omit<StrengthAnswer, 'id'>> {
  if (!inThread) {
    try {
      return await inWorker(password, userInputs);
    } catch {
      // The worker could not start or died: score here (slower for this thread, but still right).
    }
  }
  // (A computed specifier: a bundler must not pull the dictionaries into the server's start.)
  const module: typeof import('./password-strength-worker.ts') = await import(workerUrl().href);
  inThread ??= module.createScorer();
  return inThread(password, userInputs);
}

function inWorker(password: string, userInputs: string[]): Promise<StrengthAnswer> {
  const running = worker ?? startWorker();
  clearTimeout(idleTimer);
  const id = ++nextId;
  return new Promise<StrengthAnswer>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    running.ref();
    running.postMessage({ id, password, userInputs } satisfies StrengthRequest);
  });
}

/** Beside this module: password-strength-worker.ts when run from source, .js once compiled. */
function workerUrl(): URL {
  const extension = new URL(import.meta.url).pathname.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./password-strength-worker${extension}`, import.meta.url);
}

function startWorker(): Worker {
  const started = new Worker(workerUrl());
  const failAll = (error: Error) => {
    if (worker === started) worker = undefined;
    for (const [id, waiting] of pending) {
      pending.delete(id);
      waiting.reject(error);
    }
  };
  started.on('message', (answer: StrengthAnswer) => {
    pending.get(answer.id)?.resolve(answer);
    pending.delete(answer.id);
    if (pending.size > 0) return;
    // An idle worker does not keep the process alive, and ends after a while.
    started.unref();
    idleTimer = setTimeout(() => {
      if (worker !== started || pending.size > 0) return;
      worker = undefined;
      void started.terminate();
    }, IDLE_MS).unref();
  });
  started.on('error', failAll);
  started.on('exit', (code) => failAll(new Error(`the password strength worker exited (${code})`)));
  worker = started;
  return started;
}
