import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import { MAIL_KINDS, type MailData, type MailKind } from './kinds.ts';

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

const views = fileURLToPath(new URL('./templates', import.meta.url));
const cache = process.env.NODE_ENV !== 'development';
// One template per kind renders both parts: once as HTML (escaped), once as plain text.
const htmlViews = new Eta({ views, cache, autoEscape: true, autoTrim: false });
const textViews = new Eta({ views, cache, autoEscape: false, autoTrim: false });

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * What a template writes with: each helper gives its block in the part being rendered, escaped for
 * HTML there, so a template is written once for both parts.
 */
function helpers(part: 'text' | 'html') {
  if (part === 'text') {
    return {
      part,
      paragraph: (text: string) => `${text}\n\n`,
      code: (code: string) => `    ${code}\n\n`,
      link: (href: string, _label?: string) => `${href}\n\n`,
      button: (href: string, label: string) => `${label}:\n${href}\n\n`,
    };
  }
  return {
    part,
    paragraph: (text: string) => `<p style="margin:0 0 16px">${escapeHtml(text)}</p>\n`,
    code: (code: string) =>
      `<p style="margin:0 0 16px;font-size:28px;font-weight:bold;letter-spacing:6px;font-family:ui-monospace,Menlo,Consolas,monospace">${escapeHtml(code)}</p>\n`,
    link: (href: string, label?: string) =>
      `<p style="margin:0 0 16px"><a href="${escapeHtml(href)}">${escapeHtml(label ?? href)}</a></p>\n`,
    button: (href: string, label: string) =>
      `<p style="margin:0 0 16px"><a href="${escapeHtml(href)}" style="display:inline-block;padding:10px 18px;background:#2457c5;color:#ffffff;border-radius:6px;text-decoration:none">${escapeHtml(label)}</a></p>\n<p style="margin:0 0 16px;font-size:13px;color:#555555;word-break:break-all">${escapeHtml(href)}</p>\n`,
  };
}

/** The subject and both parts of a message of `kind`. */
export function renderMail<Kind extends MailKind>(
  kind: Kind,
  data: MailData[Kind],
  context: { baseUrl: string },
): RenderedMail {
  const { subject } = MAIL_KINDS[kind];
  const render = (part: 'text' | 'html') =>
    (part === 'html' ? htmlViews : textViews).render(`./${kind}`, {
      ...helpers(part),
      data,
      subject,
      baseUrl: context.baseUrl,
    });
  return {
    subject,
    text: `${render('text')
      .replace(/\n{3,}/g, '\n\n')
      .trim()}\n`,
    html: render('html'),
  };
}
