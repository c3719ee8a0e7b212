-- Runs once as the postgres superuser when the db volume is created.
-- Replace the passwords (or use ALTER ROLE afterwards) to match docker/.env.
CREATE ROLE cairn_owner LOGIN PASSWORD 'change-me-owner' NOSUPERUSER NOBYPASSRLS NOCREATEROLE;
CREATE ROLE cairn_app LOGIN PASSWORD 'change-me-app' NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB;
ALTER DATABASE cairn OWNER TO cairn_owner;
\connect cairn
CREATE EXTENSION IF NOT EXISTS vector;
ALTER SCHEMA public OWNER TO cairn_owner;
GRANT USAGE ON SCHEMA public TO cairn_app;
ALTER DEFAULT PRIVILEGES FOR ROLE cairn_owner IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO cairn_app;
ALTER DEFAULT PRIVILEGES FOR ROLE cairn_owner IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO cairn_app;
