import type { FastifyReply } from 'fastify';
import { renderPage } from './render.ts';

/** Sends a server-rendered page; pages are never cached (they carry CSRF tokens). */
export function sendPage(reply: FastifyReply, template: string, data: Record<string, unknown>, status = 200): FastifyReply {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(renderPage(template, { ...data, csrfToken: reply.generateCsrf() }));
}

export function sendMessage(reply: FastifyReply, title: string, message: string, status = 200): FastifyReply {
  return sendPage(reply, 'message', { title, message, error: status >= 400 }, status);
}

export const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));
