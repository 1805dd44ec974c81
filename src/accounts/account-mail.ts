/**
 * The messages of self-service accounts and how a service sends one. The transport (and its
 * retries) is the mail module's; a service is handed a SendAccountMail and learns only whether the
 * message went out.
 */
export type AccountMail =
  | { kind: 'sign-up-code'; data: { code: string; link: string } }
  | { kind: 'account-exists'; data: { resetLink: string } }
  | { kind: 'welcome'; data: { username: string; accountLink: string } }
  | { kind: 'password-reset-code'; data: { code: string; link: string } }
  | { kind: 'password-reset-unknown'; data: { signUpLink: string } }
  | { kind: 'password-changed'; data: { username: string } }
  | { kind: 'email-change-link'; data: { link: string } }
  | { kind: 'email-change-notice'; data: { newEmailMasked: string } };

export type MailOutcome = 'sent' | 'failed';

export type SendAccountMail = (to: string, mail: AccountMail) => Promise<MailOutcome>;
