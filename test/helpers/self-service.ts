import assert from 'node:assert/strict';
import { FormClient } from './oauth.ts';
import type { TestServer } from './server.ts';

/** A message as the test reads it: who it went to and its text, with the code and link found in it. */
export interface ReceivedMail {
  to: string;
  text: string;
  code: string | undefined;
  /** The /account/verify link, as a path with its query. */
  link: string | undefined;
}

export interface Inbox {
  /** Waits for the next message to `to` not read yet. */
  next(to: string, timeoutMs?: number): Promise<ReceivedMail>;
}

export function readMail(to: string, text: string): ReceivedMail {
  const link = /https?:\/\/[^\s"'<>]+(\/account\/verify\?token=[A-Za-z0-9_-]{43})/.exec(text)?.[1];
  const code = /(?<![0-9A-Za-z])([0-9]{6})(?![0-9A-Za-z])/.exec(text.replace(/https?:\/\/\S+/g, ''))?.[1];
  return { to: to.toLowerCase(), text, code, link };
}

let addresses = 0;
export const newAddress = (label = 'person') =>
  `${label}${process.pid}x${++addresses}${Math.random().toString(36).slice(2, 8)}@example.com`;

/** Masks what differs between two answers by design: CSRF tokens and cookies' values. */
export const maskTokens = (text: string) => text.replace(/name="_csrf" value="[^"]+"/g, 'name="_csrf" value="…"');

/** The hidden inputs (but the CSRF token) of the form whose action matches, as a browser sends them. */
export function hiddenFields(html: string, actionPattern: RegExp): Record<string, string> {
  const form = [...html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].find(([, action]) =>
    actionPattern.test(action!),
  );
  const fields: Record<string, string> = {};
  for (const [, name, value] of (form?.[2] ?? '').matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    if (name !== '_csrf')
      fields[name!] = value!
        .replace(/&amp;/g, '&')
        .replace(/&#39;/g, "'")
        .replace(/&quot;/g, '"');
  }
  return fields;
}

/** Submits a form as a browser would: its hidden inputs, and `fields`. */
export function submitForm(client: FormClient, html: string, fields: Record<string, string>, actionPattern: RegExp) {
  return client.submitOn(html, { ...hiddenFields(html, actionPattern), ...fields }, actionPattern);
}

/** Walks the sign-up forms: the address, then (with the mail's code) the code; answers the browser and the mail. */
export async function startSignUp(
  server: TestServer,
  inbox: Inbox,
  email: string,
  options: { browser?: FormClient; returnTo?: string } = {},
) {
  const browser = options.browser ?? new OwnIpClient(server);
  const page = await browser.fetch(
    `/account/sign-up${options.returnTo ? `?return_to=${encodeURIComponent(options.returnTo)}` : ''}`,
  );
  assert.equal(page.status, 200, page.text);
  const sent = await submitForm(browser, page.text, { email }, /^\/account\/sign-up$/);
  assert.equal(sent.status, 303, sent.text);
  const mail = await inbox.next(email);
  return { browser, mail };
}

/** From a started sign-up, enters the code and then the username and password. */
export async function finishSignUp(browser: FormClient, code: string, details: { username: string; password: string }) {
  const entered = await browser.submit('/account/sign-up', { code }, /\/code$/);
  assert.equal(entered.status, 303, entered.text);
  return browser.submit('/account/sign-up', details, /\/details$/);
}

export const STRONG_PASSWORD = 'violet-harbor-quietly-57-lanterns';

let ips = 0;
/**
 * A FormClient coming from its own address (X-Forwarded-For; the server runs with TRUST_PROXY=true),
 * so the per-IP limit of code requests (20 an hour) is each test's own.
 */
export class OwnIpClient extends FormClient {
  readonly ip = `198.51.100.${(++ips % 250) + 1}`;
  override fetch(pathOrUrl: string, init: Parameters<FormClient['fetch']>[1] = {}) {
    return super.fetch(pathOrUrl, { ...init, headers: { 'x-forwarded-for': this.ip, ...init.headers } });
  }
}

/** The messages a real SMTP server (test/helpers/mail.ts) received, parsed by mailparser. */
export function smtpInbox(mailbox: {
  next(to: string, timeoutMs?: number): Promise<{ to: string[]; text: string }>;
}): Inbox {
  return {
    async next(to, timeoutMs) {
      const mail = await mailbox.next(to, timeoutMs);
      return readMail(to, mail.text);
    },
  };
}
