/** Forward-only schema versions for SQLite. Never edit an applied migration: add the next one. */
export const SQLITE_MIGRATIONS: ReadonlyArray<{ version: number, name: string, sql: string }> = [
  {
    version: 1,
    name: 'initial',
    sql: `
      CREATE TABLE pets (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        category_id INTEGER NOT NULL,
        status TEXT CHECK (status IN ('available', 'pending', 'sold')),
        created_at INTEGER NOT NULL
      );
      -- Keeps GET /pets?status=S&cursor=C O(limit): a seek on (status, id), then a range scan.
      CREATE INDEX pets_status_id ON pets (status, id);

      CREATE TABLE accounts (
        id INTEGER PRIMARY KEY,
        email TEXT NOT NULL UNIQUE,
        name TEXT,
        created_at INTEGER NOT NULL
      );

      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        account_id INTEGER NOT NULL REFERENCES accounts (id),
        label TEXT,
        prefix TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL,
        last_used_at INTEGER,
        revoked_at INTEGER
      );
      CREATE INDEX api_keys_account_id ON api_keys (account_id);

      CREATE TABLE settings (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );

      CREATE TABLE counters (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL
      );
      INSERT INTO counters (name, value) VALUES ('key_revocations', 0);
    `
  },
  {
    version: 2,
    name: 'idempotency_keys',
    sql: `
      CREATE TABLE idempotency_keys (
        api_key_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        pet_id INTEGER,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (api_key_id, idempotency_key)
      );
      CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
    `
  },
  {
    version: 3,
    name: 'developer_portal',
    sql: `
      -- NULL for accounts created by the CLI until an operator sets a password.
      ALTER TABLE accounts ADD COLUMN password_hash TEXT;

      -- Only the SHA-256 digest of a session's cookie token is stored.
      CREATE TABLE sessions (
        token_hash TEXT PRIMARY KEY,
        account_id INTEGER NOT NULL REFERENCES accounts (id),
        csrf_token TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX sessions_account_id ON sessions (account_id);
      CREATE INDEX sessions_expires_at ON sessions (expires_at);

      -- Log-in throttling shared by every instance; subjects are digests of an email or an address.
      CREATE TABLE login_attempts (
        subject TEXT PRIMARY KEY,
        attempts INTEGER NOT NULL,
        window_started_at INTEGER NOT NULL
      );
      CREATE INDEX login_attempts_window_started_at ON login_attempts (window_started_at);
    `
  },
  {
    version: 4,
    name: 'pets_index_per_status',
    sql: `
      -- One index of ids per status instead of one on (status, id): a new animal's id is the largest
      -- in its status, so it is appended at the right edge of its index. On (status, id) the newest
      -- ids of 'available' and 'pending' land mid-index, and every batch of creates rebalanced leaves
      -- there and wrote them and the root to the log again.
      CREATE INDEX pets_available_id ON pets (id) WHERE status = 'available';
      CREATE INDEX pets_pending_id ON pets (id) WHERE status = 'pending';
      CREATE INDEX pets_sold_id ON pets (id) WHERE status = 'sold';
      DROP INDEX pets_status_id;
    `
  },
  {
    version: 5,
    name: 'hardening',
    sql: `
      -- A progressive lock (src/core/login-throttle.ts): until when a subject is refused; 0 when it is not.
      ALTER TABLE login_attempts ADD COLUMN locked_until INTEGER NOT NULL DEFAULT 0;

      -- Keys whose verification no longer holds (revoked), numbered from the counter key_revocations in the
      -- revoking transaction: instances read the ids after the last number they saw and forget only those.
      CREATE TABLE key_invalidations (
        seq INTEGER PRIMARY KEY,
        key_id TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX key_invalidations_created_at ON key_invalidations (created_at);

      -- Counting an account's live keys (the cap) and paging its revoked ones read this index alone.
      CREATE INDEX api_keys_account_revoked ON api_keys (account_id, revoked_at);
      DROP INDEX api_keys_account_id;
    `
  },
  {
    version: 6,
    name: 'key_lifecycle',
    sql: `
      -- Keys made before scopes keep both.
      ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT 'animals:read animals:write';
      ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;
      ALTER TABLE api_keys ADD COLUMN rolled_to TEXT;

      -- Requests per key, hour, operation and outcome; every instance adds its counts to the row.
      CREATE TABLE key_usage (
        key_id TEXT NOT NULL,
        hour INTEGER NOT NULL,
        operation TEXT NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('2xx', '4xx', '5xx')),
        count INTEGER NOT NULL,
        PRIMARY KEY (key_id, hour, operation, outcome)
      ) WITHOUT ROWID;
      CREATE INDEX key_usage_hour ON key_usage (hour);

      -- Account and key events. Append-only: the triggers refuse to change or delete one.
      CREATE TABLE audit_events (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        event TEXT NOT NULL,
        actor TEXT NOT NULL CHECK (actor IN ('cli', 'portal', 'api')),
        account_id INTEGER,
        key_id TEXT,
        address TEXT,
        detail TEXT,
        once TEXT UNIQUE
      );
      CREATE INDEX audit_events_account_id ON audit_events (account_id, id);
      CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
      CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
    `
  },
  {
    version: 7,
    name: 'mail',
    sql: `
      -- When the account's email was shown to be its owner's; accounts that exist already were vouched for.
      ALTER TABLE accounts ADD COLUMN email_verified_at INTEGER;
      UPDATE accounts SET email_verified_at = created_at;

      -- Single-use links (email verification, password reset), kept by the SHA-256 digest of their token only.
      CREATE TABLE account_tokens (
        token_hash TEXT PRIMARY KEY,
        account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
        purpose TEXT NOT NULL CHECK (purpose IN ('verify', 'reset')),
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER
      ) WITHOUT ROWID;
      CREATE INDEX account_tokens_account_id ON account_tokens (account_id, purpose);

      -- Messages to send, written in the transaction of the event that causes them; the sender claims due rows.
      CREATE TABLE mail_outbox (
        id INTEGER PRIMARY KEY,
        recipient TEXT NOT NULL,
        subject TEXT NOT NULL,
        text_body TEXT NOT NULL,
        html_body TEXT NOT NULL,
        link TEXT NOT NULL,
        kind TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed')) DEFAULT 'pending',
        created_at INTEGER NOT NULL,
        next_attempt_at INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        finished_at INTEGER
      );
      CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) WHERE status = 'pending';

      -- When the key's owner was told it expires soon: one reminder per key, whichever instance finds it.
      ALTER TABLE api_keys ADD COLUMN expiry_reminded_at INTEGER;
    `
  },
  {
    version: 8,
    name: 'two_step_and_sessions',
    sql: `
      -- An account's TOTP secret, sealed (src/core/two-step.ts); enabled_at NULL while a setup awaits its first code.
      -- last_step: the last time step a code was accepted for, so no code is accepted twice.
      CREATE TABLE two_step (
        account_id INTEGER PRIMARY KEY REFERENCES accounts (id),
        secret_sealed TEXT NOT NULL,
        enabled_at INTEGER,
        last_step INTEGER NOT NULL DEFAULT 0
      );
      -- Only the SHA-256 digest of each recovery code; used_at is set once, when it is used.
      CREATE TABLE recovery_codes (
        account_id INTEGER NOT NULL REFERENCES accounts (id),
        code_hash TEXT NOT NULL,
        used_at INTEGER,
        PRIMARY KEY (account_id, code_hash)
      ) WITHOUT ROWID;

      -- What the sessions page shows; NULL for sessions started before.
      ALTER TABLE sessions ADD COLUMN last_seen_at INTEGER;
      ALTER TABLE sessions ADD COLUMN client_address TEXT;
      ALTER TABLE sessions ADD COLUMN user_agent TEXT;
    `
  }
]
