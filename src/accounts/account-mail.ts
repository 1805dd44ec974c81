import type { MailData, MailKind } from '../mail/index.ts';

/**
 * The messages of self-service accounts and how a service sends one. The transport (and its
 * retries) is the mail module's; a service is handed a SendAccountMail and learns only whether the
 * message went out.
 */
export type AccountMail = { [Kind in MailKind]: { kind: Kind; data: MailData[Kind] } }[MailKind];

export type MailOutcome = 'sent' | 'failed';

export type SendAccountMail = (to: string, mail: AccountMail) => Promise<MailOutcome>;
