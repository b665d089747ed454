// Package postgres is a tenure.Coordinator on PostgreSQL (13 or newer), and
// the SQL fence guard that protects a user's tables with fencing tokens.
//
// # Leadership table
//
// Leases live in one table, by default public.cluster_leadership
// (WithSchema, WithTable), one row per key, created on first use. The table
// is always named with its schema, never found through the search_path, so
// two roles with different search paths cannot use two different tables:
//
//	CREATE TABLE public.cluster_leadership (
//	    resource      text PRIMARY KEY,
//	    holder_id     text,
//	    fencing_token bigint NOT NULL DEFAULT 0,
//	    acquired_at   timestamptz,
//	    expires_at    timestamptz NOT NULL DEFAULT '-infinity'
//	);
//
// A key's first acquisition inserts its row; rows are never deleted, so a
// key's fencing_token only grows, across server restarts too. An existing
// table of another shape is refused with an error naming the table and the
// column (ErrTableShape); timestamp columns without a time zone are refused
// because their meaning would depend on each session's time zone setting,
// and so is a table whose fencing_token or expires_at may be NULL (a row
// without an expiry is neither live nor free), one where a key could have two rows (its resource column's
// unique index invalid or deferrable, or child tables that inherit from
// it), where two holders could compare equal (a nondeterministic collation
// on holder_id), whose expires_at rounds (timestamptz(0) ends a lease up to
// half a second early), or whose owner is a role other than this one, the schema's
// owner, the database's owner or a superuser.
//
// The table is checked when New makes the coordinator, and again on each
// connection after it prepares a statement that grants, renews, releases or
// reads a key. Those statements return expires_at and holder_id, so that
// PostgreSQL refuses them ("cached plan must not change result type") once
// either column's type, precision or collation was altered in place: the
// coordinator then runs the statement once more on a new connection, which
// checks the table first, and returns ErrTableShape if it is refused. Pools
// whose DefaultQueryExecMode is not pgx.QueryExecModeCacheStatement prepare
// nothing, and see such a change only in New (see docs/postgresql.md).
//
// # The statements
//
// Acquisition is a single atomic statement, with the TTL passed as
// a parameter (microseconds), never spliced into the SQL text:
//
//	UPDATE public.cluster_leadership
//	SET holder_id = $holder, fencing_token = fencing_token + 1,
//	    acquired_at = CURRENT_TIMESTAMP,
//	    expires_at = CURRENT_TIMESTAMP + $ttl_us * interval '1 microsecond'
//	WHERE resource = $key AND (expires_at <= CURRENT_TIMESTAMP OR holder_id = $holder
//	    AND expires_at <= CURRENT_TIMESTAMP + interval '1 day')
//	RETURNING fencing_token
//
// Zero rows means another holder has a live lease: Acquire then reads it and
// returns a *tenure.HeldError. The usual "expires_at < CURRENT_TIMESTAMP"
// becomes "<=", so that "live" (expires_at > CURRENT_TIMESTAMP, used by
// renewal and Leader) and "free" are exact complements.
//
// Renewal extends only a live grant of the same holder and token, with one
// UPDATE.
// Release sets expires_at to '-infinity' (keeping holder_id and the token
// for the record), so the key is free at once, and sends pg_notify on one
// channel (WithChannel, default "tenure_leadership") with the key as payload;
// acquisitions notify too. By default (NotifyWatched) both notify only while
// some Coordinator watches the key, which it announces with a shared
// advisory lock: PostgreSQL serializes every notifying commit on one global
// lock, so unwatched keys never pay for it (WithNotify(NotifyAll) always
// notifies).
//
// # Clocks
//
// The database's clock is the only one that decides expiry: every statement
// compares and computes with CURRENT_TIMESTAMP; the node's clock never
// reaches the database. CURRENT_TIMESTAMP is the start of the transaction,
// and each statement here runs alone in its own (implicit) transaction, so
// it is the moment the server began executing the request, which is no
// earlier than when the node sent it; a lease therefore never ends sooner
// than the node's local deadline assumes. Session and server time zone
// settings do not matter: the columns are timestamptz (absolute instants).
//
// # Watching
//
// Watch shares one dedicated connection per Coordinator that LISTENs on the
// channel, fanning notifications out by key, and another that holds the
// watched keys' shared advisory locks; every watcher also re-reads
// its key at the poll interval (WithPollInterval, default 1s) and when its
// lease is due to expire (the time left is read from the database, not
// computed from the node's clock), so correctness never depends on a
// notification arriving.
//
// # Names
//
// Every function, operator, type and collation in tenure's SQL is named
// with its schema, pg_catalog ("pg_catalog.unnest(…)",
// "resource OPERATOR(pg_catalog.=) $1", "COLLATE pg_catalog.\"C\""), and
// every table with its own: nothing is found through the search_path. A
// role that may create objects in a schema on the search_path (public, on
// PostgreSQL 13 and 14, for every role) cannot make tenure run a function
// or operator of its own, even one whose argument types match more closely
// than pg_catalog's (which PostgreSQL would otherwise prefer: a
// public.unnest(text[]) over pg_catalog.unnest(anyarray)), and the
// connection's search_path, whatever it is, changes nothing. The package
// doc's SQL below omits the qualification for reading.
//
// Tables are another matter: the group tables (the leadership table's name
// with "_members" and "_partitions") can be made by such a role before
// tenure makes them, or again after an admin dropped tenure's, and their
// triggers, column defaults, rules and row security policies would run as
// tenure's role. So every group operation, and every Acquire of a key that
// can name a partition, first looks at their owner, with a statement of its
// own: tables owned by a role that is neither the connecting one nor the
// leadership table's owner are never read or written, and the operation
// fails with ErrTableShape naming them. The same statement refuses group
// tables whose columns naming a group, a member or a partition are not
// text or varchar under a deterministic collation, or that have a unique
// index under a nondeterministic one (under a case-insensitive collation,
// groups "G" and "g" would be one), whose members' epoch has no unique
// index of its own, or whose other columns are missing, of another type,
// or may be NULL where tenure never writes NULL.
//
// # Refusals
//
// An error that PostgreSQL refused for good also matches tenure.ErrRefused,
// with the *pgconn.PgError still beneath it: a privilege the role lacks
// (SQLSTATE 42501, as for a role that may SELECT but not INSERT or
// UPDATE), a login refused (class 28: no such role, a wrong password, no
// pg_hba.conf entry), and, when connecting, a connection parameter the
// server does not know (42704) or whose value it refuses (22023). An
// Elector and a partition group stop on it instead of retrying.
// Timeouts, serialization failures, deadlocks and a server shutting down
// or starting do not match it.
//
// # Fencing a table
//
// FenceUpdate and FenceGuard run the resource-side pattern in the
// caller's transaction:
//
//	UPDATE shard_assignment
//	SET assignment = $1, fencing_token = $token
//	WHERE shard_id = $id AND fencing_token <= $token
//
// (the = and <= are pg_catalog's, named with OPERATOR(pg_catalog.…), so the
// comparison of tokens cannot be replaced through the search_path; the table
// is found through it when its name has no schema), and report zero rows
// affected as a *fence.StaleError (matching
// tenure.ErrStaleToken) carrying the presented and required tokens, or
// ErrRowNotFound. AddFencingColumn adds the fencing_token column to a table.
package postgres
