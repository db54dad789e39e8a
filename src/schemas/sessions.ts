/** Web UI sessions (src/gateway/sessions.ts, docs/ui.md "Sign-in and the session"). */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from './common.ts';

export const SignInRequest = Type.Object(
  // Optional in the schema: a missing or empty token is 401 (no credentials), a wrong one 403.
  { token: Type.Optional(Type.String({ maxLength: 512, description: 'The access token (AUTH_TOKEN or DATA_DIR/auth-token)' })) },
  { title: 'SignInRequest' },
);

export const RedeemRequest = Type.Object(
  { code: Type.String({ minLength: 16, maxLength: 128, description: "The one-time code of `memex serve`'s sign-in link" }) },
  { title: 'RedeemRequest' },
);

export const SignInLink = Type.Object(
  {
    url: Type.String({ description: 'Open it in a browser: signs in once; the code is in the fragment, never sent to a server' }),
    expires_at: Type.String({ description: 'When the link stops working unless used before' }),
  },
  { title: 'SignInLink' },
);
export type SignInLinkT = Static<typeof SignInLink>;

export const CurrentSession = Type.Object(
  {
    signed_in: Type.Boolean(),
    version: Type.String(),
    session_id: Nullable(Type.String({ description: 'The web session answering, null for a bearer-token client' })),
    csrf_token: Nullable(
      Type.String({ description: 'Send as X-CSRF-Token on every POST, PUT, PATCH and DELETE made with the session cookie' }),
    ),
  },
  { title: 'CurrentSession' },
);
export type CurrentSessionT = Static<typeof CurrentSession>;

export const SessionInfo = Type.Object(
  {
    session_id: Type.String(),
    created_at: Type.String(),
    last_seen_at: Type.String({ description: 'Last use, to within five minutes' }),
    expires_at: Type.String({ description: 'When it ends unless used before then' }),
    user_agent: Nullable(Type.String()),
    browser: Type.String({ description: 'The user agent in a few words ("Chrome on Linux")' }),
    current: Type.Boolean({ description: 'The session that asks' }),
  },
  { title: 'SessionInfo' },
);
export type SessionInfoT = Static<typeof SessionInfo>;

export const SessionList = Type.Object({ sessions: Type.Array(SessionInfo) }, { title: 'SessionList' });
export type SessionListT = Static<typeof SessionList>;

export const SessionIdParams = Type.Object({ session_id: Type.String({ format: 'uuid' }) });

export const RevokedSessions = Type.Object({ revoked: Type.Integer() }, { title: 'RevokedSessions' });
export type RevokedSessionsT = Static<typeof RevokedSessions>;
