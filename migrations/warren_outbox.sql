-- warren transactional outbox: the table warren.outbox.publish writes and the relay drains.
-- The same DDL as outbox.createTable() (createWarren runs it unless outbox.createTable is false).
-- For another name or schema, replace warren_outbox (also the LISTEN/NOTIFY channel, with . as _).
CREATE TABLE IF NOT EXISTS "warren_outbox" (
  id bigserial PRIMARY KEY,
  job_id text NOT NULL UNIQUE,
  job_name text NOT NULL,
  payload json NOT NULL,
  options jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now()
);
