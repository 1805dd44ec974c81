import type { Generated } from 'kysely';

/** Times are stored as integer milliseconds since the epoch on both databases. */
export interface UsersTable {
  user_id: string;
  public_key: string | null;
  created_at: number;
  /** Display form; unique case-insensitively. Null for v1-only users. */
  username: string | null;
  /** Lowercased; unique. */
  email: string | null;
  /** argon2id PHC string; null: no password sign-in. */
  password_hash: string | null;
  /** Base32 TOTP secret; null: no two-step verification. */
  totp_secret: string | null;
  private_key: string | null;
  /** The last TOTP time step accepted (RFC 6238 §5.2); only a later one is accepted next. */
  totp_last_step: number | null;
  /** 1: an operator, who governs accounts and applications (migration 022). */
  operator: Generated<number>;
  /** When the account was locked; null: not locked. A locked account signs in nowhere. */
  locked_at: number | null;
  /** Why, for operators only (never shown to the person). */
  lock_reason: string | null;
}

export interface BackupCodesTable {
  user_id: string;
  /** SHA-256 of user id and the code (normalized: lowercase, no hyphen). */
  code_hash: string;
  created_at: number;
}

export interface TrustedDevicesTable {
  /** SHA-256 of device id and user id. */
  device_hash: string;
  user_id: string;
  /** When the trust was given (or renewed); it lasts 30 days from then. */
  created_at: number;
}

export interface ApplicationsTable {
  client_id: string;
  name: string;
  /** JSON array of exact redirect URIs. */
  redirect_uris: string;
  /** Space-separated scopes the application may ask for. */
  scopes: string;
  /** SHA-256 of the secret (base64url); null for a public client. */
  secret_hash: string | null;
  created_at: number;
  /** The user who registered it on /account/apps; null for the operator's (migration 013). */
  owner_id: string | null;
  /** An https URL the consent page links to; null when none was given. */
  website: string | null;
  /** JSON array of exact URIs RP-initiated logout may return to; null: none (migration 021). */
  post_logout_redirect_uris: string | null;
  /** Where back-channel logout tokens are posted (https, or loopback http); null: none. */
  backchannel_logout_uri: string | null;
  /** 'RS256' | 'ES256' | 'EdDSA'; null: RS256. */
  id_token_signed_response_alg: string | null;
  /** When an operator suspended it; null: not suspended (migration 022). */
  suspended_at: number | null;
}

export interface WebSessionsTable {
  session_hash: string;
  user_id: string;
  mfa_pending: number;
  created_at: number;
  expires_at: number;
  /** Base32 two-step secret shown on the account page, not yet confirmed by a code. */
  pending_totp_secret: string | null;
  /** A new set of backup codes to show once, encrypted under a key derived from the session token. */
  backup_codes_to_show: string | null;
  /** How the person proved who they are: JSON array of RFC 8176 values; null: ["pwd"]. */
  auth_methods: string | null;
  /** The id the account page names this sign-in by, never its hash (migration 023). */
  public_id: string;
  /** The browser's User-Agent, bounded and without control characters. */
  user_agent: string | null;
  /** The address the browser was last seen at. */
  ip: string | null;
  /** When a page was last loaded with this sign-in (written at most once a minute). */
  last_seen_at: number;
}

/** A form's single-use submit token and the answer to its first submit (migration 020). */
export interface SubmitTokensTable {
  /** SHA-256 of the route's path and the token. */
  token_hash: string;
  /** The first submit's answer, sealed under a key derived from the token; null while it is at work. */
  answer: string | null;
  expires_at: number;
}

export interface InteractionsTable {
  interaction_hash: string;
  client_id: string;
  scope: string;
  redirect_uri: string | null;
  state: string | null;
  code_challenge: string | null;
  device_id: string | null;
  device_code: string | null;
  expires_at: number;
  /** OpenID Connect: the request's nonce, login_hint, and the oldest sign-in it accepts. */
  nonce: string | null;
  login_hint: string | null;
  min_auth_time: number | null;
}

export interface SessionsTable {
  session_id: string;
  user_id: string;
  client_id: string;
  scope: string;
  access_token_hash: string;
  access_expires_at: number;
  refresh_token_hash: string;
  refresh_expires_at: number;
  created_at: number;
  /** Last access-token use (updated at most once a minute) or refresh; null before either. */
  last_used_at: number | null;
  /** OpenID Connect: the request's nonce, the sign-in's time and methods (JSON), and its browser sign-in's session_hash. */
  nonce: string | null;
  auth_time: number | null;
  auth_methods: string | null;
  web_session_hash: string | null;
}

/** A back-channel logout to send: the outbox (src/oauth/logout-outbox.ts, migration 024). */
export interface BackchannelLogoutsTable {
  /** The ended session (the logout token's sid); one notice per session. */
  session_id: string;
  client_id: string;
  user_id: string;
  created_at: number;
  /** Tries started so far. */
  attempts: number;
  /** When the next try is due; while a try is under way, the end of its sender's lease. */
  next_attempt_at: number;
  expires_at: number;
}

/** A key ID tokens are signed with (src/oauth/signing-keys.ts). */
export interface SigningKeysTable {
  kid: string;
  alg: string;
  /** The public JWK, JSON. */
  public_jwk: string;
  /** PKCS#8 PEM sealed under SECRETS_KEY. */
  private_key: string;
  created_at: number;
  signs_from: number;
}

export interface RotatedRefreshTokensTable {
  refresh_token_hash: string;
  session_id: string;
  expires_at: number;
}

export interface AuthorizationCodesTable {
  code_hash: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  scope: string;
  code_challenge: string;
  device_id: string | null;
  expires_at: number;
  used_at: number | null;
  session_id: string | null;
  /** OpenID Connect: the request's nonce, the sign-in's time and methods (JSON), and its browser sign-in's session_hash. */
  nonce: string | null;
  auth_time: number | null;
  auth_methods: string | null;
  web_session_hash: string | null;
}

export interface DeviceAuthorizationsTable {
  device_code: string;
  /** Eight characters without the hyphen, uppercase. */
  user_code: string;
  client_id: string;
  scope: string;
  code_challenge: string;
  status: 'pending' | 'approved' | 'denied' | 'consumed';
  user_id: string | null;
  interval_seconds: number;
  last_polled_at: number | null;
  expires_at: number;
}

/** A user's registration of a workshop mod; booleans are stored as 0/1. */
export interface ModsTable {
  mod_id: string;
  user_id: string;
  name: string;
  confirmed: number;
  confirmation_code: string;
  pull_url: string | null;
  created_at: number;
}

export interface EngramsTable {
  /** MD5 of the lowercase path, hexadecimal. */
  uid: string;
  path: string;
  class: string;
  label: string;
  /** Bitmask: Island 1, Scorched 2, Center 4, Ragnarok 8, Abberation 16. */
  availability: number;
  can_blueprint: number;
  mod_id: string | null;
  /** The registrant of mod_id; (mod_id, user_id) references mods. */
  user_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface DocumentsTable {
  document_id: string;
  user_id: string;
  name: string;
  description: string;
  revision: number;
  download_count: number;
  /** The document exactly as posted. */
  content: string;
  created_at: number;
  last_updated: number;
}

export interface ProjectsTable {
  project_id: string;
  user_id: string;
  title: string;
  description: string;
  game_id: string;
  revision: number;
  created_at: number;
  updated_at: number;
}

export interface SecurityEventsTable {
  event_id: string;
  kind: string;
  user_id: string | null;
  client_id: string | null;
  ip: string | null;
  /** JSON object, never a secret. */
  details: string;
  created_at: number;
}

/** A one-time code and link of sign-up, password reset or e-mail change (migration 012). */
export interface VerificationRequestsTable {
  request_id: string;
  /** 'sign_up' | 'reset' | 'email_change' */
  purpose: string;
  /** The lowercased address the message went to (for an e-mail change, the new one). */
  address: string;
  user_id: string | null;
  /** 'sent' | 'verified' */
  stage: string;
  code_hash: string | null;
  link_hash: string | null;
  /** The browser that proved the request continues with this (a cookie), hashed. */
  flow_hash: string | null;
  code_attempts: number;
  /** Where the person goes once done (a same-origin path of a known shape). */
  return_to: string | null;
  created_at: number;
  expires_at: number;
}

/** A change counter per kind of cached content (migration 009). */
export interface ContentVersionsTable {
  name: string;
  version: number;
}

/** A user's passkey (WebAuthn credential), migration 014. */
export interface PasskeysTable {
  /** base64url, as the browser names the credential. */
  credential_id: string;
  user_id: string;
  /** base64url of the COSE public key. */
  public_key: string;
  /** The signature counter last seen; 0 when the authenticator keeps none. */
  counter: number;
  /** JSON array of transport hints. */
  transports: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

/** A WebAuthn challenge waiting for its answer (single use, 5 minutes), migration 014. */
export interface PasskeyChallengesTable {
  challenge: string;
  /** SHA-256 of the browser's binding cookie. */
  binding_hash: string;
  purpose: 'sign_in' | 'register';
  /** The signed-in user adding a passkey; null for a sign-in. */
  user_id: string | null;
  expires_at: number;
}

/** An address an operator invited to sign up (SIGN_UP=invite), migration 026. */
export interface InvitationsTable {
  invitation_id: string;
  /** Lowercased. */
  email: string;
  /** SHA-256 of the link's token (the token itself is only in the mail). */
  token_hash: string;
  invited_by: string | null;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  used_at: number | null;
}

export interface Schema {
  users: UsersTable;
  mods: ModsTable;
  engrams: EngramsTable;
  documents: DocumentsTable;
  trusted_devices: TrustedDevicesTable;
  backup_codes: BackupCodesTable;
  applications: ApplicationsTable;
  web_sessions: WebSessionsTable;
  submit_tokens: SubmitTokensTable;
  interactions: InteractionsTable;
  sessions: SessionsTable;
  rotated_refresh_tokens: RotatedRefreshTokensTable;
  signing_keys: SigningKeysTable;
  backchannel_logouts: BackchannelLogoutsTable;
  authorization_codes: AuthorizationCodesTable;
  device_authorizations: DeviceAuthorizationsTable;
  projects: ProjectsTable;
  security_events: SecurityEventsTable;
  content_versions: ContentVersionsTable;
  passkeys: PasskeysTable;
  passkey_challenges: PasskeyChallengesTable;
  verification_requests: VerificationRequestsTable;
  invitations: InvitationsTable;
}
