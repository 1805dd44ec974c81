import type { FastifyRequest } from 'fastify';

/**
 * The browser's sign-in as the authorization endpoint needs it (prompt=none, the code's auth_time,
 * amr and browser sign-in). The pages own the cookie (src/web/web-sessions.ts); the wiring
 * (src/app.ts) provides this, so oauth/ never reads the pages' cookie itself.
 */
export interface BrowserSignIn {
  userId: string;
  mfaPending: boolean;
  signedInAt: number;
  authMethods: string[];
  /** The stored hash of the browser sign-in's token (web_sessions.session_hash). */
  sessionHash: string;
}

export type ReadBrowserSignIn = (request: FastifyRequest) => Promise<BrowserSignIn | undefined>;

declare module 'fastify' {
  interface FastifyInstance {
    /** The browser sign-in a request carries (its cookie), read without the pages' cookie plugin. */
    readBrowserSignIn: ReadBrowserSignIn;
  }
}
