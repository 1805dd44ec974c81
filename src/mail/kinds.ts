/**
 * Every kind of message the service sends: its data and its subject. Adding a kind is one entry
 * here and one template, templates/<kind>.eta (see templates/sign-up-code.eta).
 *
 * A message carries nothing secret but the one-time code or link it exists for.
 */
export interface MailData {
  /** Sign-up: the code and the link that verify the address (either works). */
  'sign-up-code': { code: string; link: string };
  /** Sign-up with an address that already has an account: no code, a way to reset instead. */
  'account-exists': { resetLink: string };
  /** After the account is created. */
  welcome: { username: string; accountLink: string };
  /** Password reset: the code and the link (either works). */
  'password-reset-code': { code: string; link: string };
  /**
   * Password reset for an address without an account, so both answers take as long. The sign-up
   * link only while anyone may sign up (SIGN_UP=open).
   */
  'password-reset-unknown': { signUpLink: string | null };
  /** The password was changed (reset, account page or operator). */
  'password-changed': { username: string };
  /** E-mail change: the link, sent to the new address. */
  'email-change-link': { link: string };
  /** E-mail change: the notice sent to the old address. */
  'email-change-notice': { newEmailMasked: string };
  /** An operator's invitation to sign up (SIGN_UP=invite): the single-use link (7 days). */
  invitation: { link: string };
}

export type MailKind = keyof MailData;

export const MAIL_KINDS: { [Kind in MailKind]: { subject: string } } = {
  'sign-up-code': { subject: 'Your sign-up code' },
  'account-exists': { subject: 'You already have an account' },
  welcome: { subject: 'Welcome to Content Service' },
  'password-reset-code': { subject: 'Your password reset code' },
  'password-reset-unknown': { subject: 'Password reset requested' },
  'password-changed': { subject: 'Your password was changed' },
  'email-change-link': { subject: 'Confirm your new e-mail address' },
  'email-change-notice': { subject: 'Your e-mail address is being changed' },
  invitation: { subject: 'You are invited to create an account' },
};

const _isMailKind = (value: string): value is MailKind => Object.hasOwn(MAIL_KINDS, value);
